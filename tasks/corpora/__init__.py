"""Corpus registry: one module per corpus (see tasks/corpora/base.py for the contract)."""

from __future__ import annotations

from types import ModuleType

from tasks.core.registry import Registry

# name -> its module (shared parsers live in conll.py, wikitext.py)
REGISTRY: Registry[ModuleType] = Registry(
    "corpus",
    {
        # embedded default: made by the project, no network needed
        "synthetic": "tasks.corpora.synthetic",
        "handmade": "tasks.corpora.handmade",
        # real corpora
        "babi": "tasks.corpora.babi",
        "lambada": "tasks.corpora.lambada",
        "cbt": "tasks.corpora.cbt",
        "wikitext2": "tasks.corpora.wikitext2",
        "wikitext103": "tasks.corpora.wikitext103",
        "cnn": "tasks.corpora.cnn",
        "inscript": "tasks.corpora.inscript",
        "gum": "tasks.corpora.gum",
        "litbank": "tasks.corpora.litbank",
        "amalgum": "tasks.corpora.amalgum",
        "ontonotes": "tasks.corpora.ontonotes",
    },
    setting="params.yaml corpora",
)


def get(name: str) -> ModuleType:
    """The corpus module for *name*."""
    return REGISTRY[name]
