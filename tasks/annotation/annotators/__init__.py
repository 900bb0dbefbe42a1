"""Annotator registry: name -> module (imported on first use: stanza and torch load slowly).

    gold       the corpus's own mentions (tasks/annotation/annotators/gold.py)
    entity-id  rule-based entity chains, MAGE's bAbI/CNN links (tasks/annotation/annotators/entity_id.py)
    stanza     Stanza's neural coreference model (tasks/annotation/annotators/stanza_coref.py)
    model      the project's own coreference model, as a plug-in (tasks/annotation/annotators/model.py)

cfg is the annotator's settings (params.yaml annotate.annotators.<name>, with a run's own
settings merged over them); each module rejects keys it does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any

from tasks.annotation.annotators.base import (
    Annotation,
    Annotator,
    Doc,
    Query,
    Span,
    check_settings,
    link_queries,
)
from tasks.core.registry import Registry

MODULES: Registry[ModuleType] = Registry(
    "annotator",
    {
        "gold": "tasks.annotation.annotators.gold",
        "entity-id": "tasks.annotation.annotators.entity_id",
        "stanza": "tasks.annotation.annotators.stanza_coref",
        "model": "tasks.annotation.annotators.model",
    },
    setting="params.yaml annotate.runs.<run>.annotator",
)


def names() -> list[str]:
    return MODULES.names()


def check(name: str, cfg: Mapping[str, Any] | None = None) -> None:
    """Refuse unknown or mistyped settings of annotator `name` before any work (the module's
    SETTINGS, parsed strictly; the model annotator also checks its factory allow-list)."""
    module = MODULES[name]
    cfg = check_settings(name, dict(cfg or {}), module.SETTINGS)
    if hasattr(module, "check"):
        module.check(cfg)


def get(name: str, cfg: Mapping[str, Any] | None = None) -> Annotator:
    """Build the annotator `name` with settings cfg (each module's `build(cfg)`)."""
    return MODULES[name].build(dict(cfg or {}))


__all__ = [
    "MODULES",
    "Annotation",
    "Annotator",
    "Doc",
    "Query",
    "Span",
    "check",
    "get",
    "link_queries",
    "names",
]
