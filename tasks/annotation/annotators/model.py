"""`model`: the slot for the project's own coreference model (trained by a later stage).

Plug-in contract. params.yaml annotate.annotators.model:

    factory: "package.module:callable"   # required
    checkpoint: artifacts/train_coref/.../model.pt   # optional; must exist when given
    settings: {...}                      # optional, passed on

The factory is called once per worker as `callable({"checkpoint": ..., **settings})` and
returns an annotator: any object with a `name` (str, the mentions table's annotator column)
and `annotate(batch: list[Doc]) -> list[Annotation]` (tasks/annotation/annotators/base.py). The factory
loads the checkpoint itself, so this module knows nothing of model classes (imports point
down: tasks -> models). Everything else -- query linking (base.link_queries is there to use),
validation, renumbering -- is the stage's, as for every other annotator.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from tasks.annotation.annotators.base import Annotator, check_settings
from tasks.core.errors import CorefreproError
from tasks.core.layout import check_checkpoint_path
from tasks.core.settings import ConfigError

NAME = "model"
# the project's registry of model annotators (factories this module may import)
PROJECT_FACTORIES = ("models.coref.annotator:load_annotator",)
FACTORIES_ENV = "COREFREPRO_ANNOTATOR_FACTORIES"
SETTINGS: dict[str, Any] = {"factory": None, "checkpoint": None, "settings": {}}
NOT_TRAINED = (
    "train it with `dvc repro train_coref@asl` (the coreference-model training stage), or use "
    "annotator entity-id or stanza"
)


def allowed_factories() -> list[str]:
    """The factories this annotator may import: the project's own, plus those the user
    lists in COREFREPRO_ANNOTATOR_FACTORIES (comma-separated). Not a params.yaml setting:
    params can arrive from elsewhere (`dvc exp run -S`, a shared experiment), and importing
    a module named there would run its code."""
    extra = os.environ.get(FACTORIES_ENV, "")
    return [*PROJECT_FACTORIES, *(s.strip() for s in extra.split(",") if s.strip())]


def check(cfg: dict[str, Any]) -> None:
    """Refuse a factory outside allowed_factories() before anything is imported, and a
    checkpoint outside the project's artifacts (tasks.core.layout.check_checkpoint_path)."""
    if cfg.get("checkpoint") is not None:
        check_checkpoint_path(cfg["checkpoint"], f"annotate.annotators.{NAME}.checkpoint")
    spec = cfg.get("factory")
    if spec and spec not in allowed_factories():
        raise ConfigError(
            f"annotate.annotators.{NAME}.factory: {spec!r} is not an allowed factory "
            f"(allowed: {', '.join(allowed_factories())}; add yours to {FACTORIES_ENV})"
        )


def load_factory(spec: str) -> Any:
    """'package.module:callable' -> the callable (clear errors for each way it can fail).
    Only allowed factories are imported (check)."""
    check({"factory": spec})
    module_name, sep, attr = str(spec).partition(":")
    if not sep or not module_name or not attr:
        raise CorefreproError(
            f"annotator '{NAME}': factory {spec!r} must look like 'package.module:callable'"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CorefreproError(
            f"annotator '{NAME}': cannot import {module_name!r} for factory {spec!r}: {exc}"
        ) from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise CorefreproError(f"annotator '{NAME}': {module_name} has no {attr!r} ({spec})")
    if not callable(target):
        raise CorefreproError(f"annotator '{NAME}': {spec} is not callable")
    return target


def build(cfg: dict[str, Any]) -> Annotator:
    cfg = {**SETTINGS, **check_settings(NAME, cfg, SETTINGS)}
    if not cfg["factory"]:
        raise CorefreproError(
            f"annotator '{NAME}': no coreference model is configured "
            f"(annotate.annotators.model.factory is empty); {NOT_TRAINED}"
        )
    check(cfg)
    checkpoint = cfg["checkpoint"]
    if checkpoint is not None and not Path(checkpoint).exists():
        raise CorefreproError(
            f"annotator '{NAME}': checkpoint {checkpoint} does not exist; {NOT_TRAINED}"
        )
    settings = cfg["settings"] or {}
    if not isinstance(settings, dict):
        raise CorefreproError(f"annotator '{NAME}': settings must be a mapping, not {settings!r}")
    factory = load_factory(cfg["factory"])
    annotator = factory({"checkpoint": checkpoint, **settings})
    name = getattr(annotator, "name", None)
    if not callable(getattr(annotator, "annotate", None)) or not isinstance(name, str) or not name:
        raise CorefreproError(
            f"annotator '{NAME}': {cfg['factory']} returned {type(annotator).__name__}, which "
            "lacks a non-empty str `name` or an `annotate(batch)` method (see "
            "tasks/annotation/annotators/base.py Annotator)"
        )
    return annotator
