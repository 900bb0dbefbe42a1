"""Corpus registry: one module per corpus (see tasks/corpora/base.py for the contract)."""

from __future__ import annotations

import importlib
from types import ModuleType

from tasks.core.errors import CorefreproError

# name -> module under tasks.corpora (shared parsers live in conll.py, wikitext.py)
REGISTRY: dict[str, str] = {
    # embedded default: made by the project, no network needed
    "synthetic": "synthetic",
    "handmade": "handmade",
    # real corpora
    "babi": "babi",
    "lambada": "lambada",
    "cbt": "cbt",
    "wikitext2": "wikitext2",
    "wikitext103": "wikitext103",
    "cnn": "cnn",
    "inscript": "inscript",
    "gum": "gum",
    "litbank": "litbank",
    "amalgum": "amalgum",
    "ontonotes": "ontonotes",
}


def get(name: str) -> ModuleType:
    """The corpus module for *name*."""
    if name not in REGISTRY:
        raise CorefreproError(
            f"unknown corpus '{name}' (params.yaml 'corpora'); known: {', '.join(sorted(REGISTRY))}"
        )
    return importlib.import_module(f"tasks.corpora.{REGISTRY[name]}")
