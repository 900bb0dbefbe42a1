"""The annotation runs of params.yaml: (corpus, annotator) pairs, each one annotate@<run>
and graphs@<run>; read here, apart from the annotation stage, because the graph stages read
them too and should not depend on the annotation code."""

from __future__ import annotations

from typing import Any

from tasks.core.config import params
from tasks.core.errors import CorefreproError


def run_settings(run: str) -> dict[str, Any]:
    """annotate.runs.<run> or annotate.model_runs.<run> (runs of the own coreference model,
    a separate DVC foreach only so that their stage can depend on settings.checkpoint)."""
    cfg = dict(params("annotate"))
    runs, model_runs = cfg.get("runs") or {}, cfg.get("model_runs") or {}
    if run in runs and run in model_runs:
        raise CorefreproError(f"params.yaml: run '{run}' is in both annotate.runs and model_runs")
    section = "model_runs" if run in model_runs else "runs"
    entry = (model_runs if section == "model_runs" else runs).get(run)
    if entry is None:
        known = ", ".join(sorted([*runs, *model_runs]))
        raise CorefreproError(
            f"params.yaml: annotate.runs / annotate.model_runs have no '{run}' (known: {known})"
        )
    entry = dict(entry)
    for key in ("corpus", "annotator"):
        if key not in entry:
            raise CorefreproError(f"params.yaml: annotate.{section}.{run} needs '{key}'")
    if section == "model_runs" and not (entry.get("settings") or {}).get("checkpoint"):
        raise CorefreproError(
            f"params.yaml: annotate.model_runs.{run} needs settings.checkpoint (the stage "
            "annotate_model depends on it, e.g. artifacts/train_coref/asl/seed1/best.pt)"
        )
    return entry
