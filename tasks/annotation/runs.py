"""The annotation runs of params.yaml: (corpus, annotator) pairs, each one annotate@<run>
and graphs@<run>; read here, apart from the annotation stage, because the graph stages read
them too and should not depend on the annotation code."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

from tasks.core.config import params
from tasks.core.errors import CorefreproError
from tasks.core.settings import ConfigError, Name, bounded, parse_settings, settings_to_dict


@dataclass
class RunEntry:
    """One annotation run: a corpus, an annotator, and settings over the annotator's own."""

    corpus: Name
    annotator: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass
class AnnotateSettings:
    """params.yaml annotate, checked whole before any work (each annotator module checks its
    own settings, annotators.<name> and a run's `settings`, when it is built)."""

    shard_size: int = bounded(100, ge=1)  # documents per shard: the unit of parallelism
    # and of resume
    batch_size: int = bounded(16, ge=1)  # documents per annotator call
    executor: Literal["threads", "processes", "dask"] = "threads"
    workers: int = bounded(2, ge=1)
    # a running Dask scheduler (tcp://host:port) to join instead of starting a LocalCluster;
    # executor dask only. null: DASK_SCHEDULER_ADDRESS if set, else a local cluster
    dask_address: str | None = None
    cache_dir: str = "data/cache/annotate"  # finished shards of an interrupted run
    score_split: Literal["train", "dev", "test"] = "dev"
    annotators: dict[str, dict[str, Any]] = field(default_factory=dict)
    model_runs: dict[Name, RunEntry] = field(default_factory=dict)
    runs: dict[Name, RunEntry] = field(default_factory=dict)

    def validate(self, path: str) -> None:
        bad = []
        for name in set(self.runs) & set(self.model_runs):
            bad.append(f"{path}: run '{name}' is in both annotate.runs and model_runs")
        if self.dask_address is not None and not self.dask_address.strip():
            bad.append(f"{path}.dask_address: empty; null starts a local cluster")
        elif self.dask_address is not None and self.executor != "dask":
            bad.append(
                f"{path}.dask_address: {self.dask_address!r} is a Dask scheduler, but "
                f"{path}.executor is {self.executor!r} (set it to dask, or dask_address: null)"
            )
        if bad:
            raise ConfigError(bad)


def settings() -> dict[str, Any]:
    """The annotate section, parsed strictly, as plain values."""
    return settings_to_dict(parse_settings(AnnotateSettings, params("annotate"), "annotate"))


# Dask's own variable for the scheduler to join; annotate.dask_address, when set, wins over it
DASK_ADDRESS_ENV = "DASK_SCHEDULER_ADDRESS"


def dask_address(cfg: dict[str, Any] | None = None) -> tuple[str | None, str]:
    """(the running Dask scheduler the annotate stage joins, the setting that named it), or
    (None, ...) for a LocalCluster. Only with executor dask: annotate.dask_address when set,
    else the environment's DASK_SCHEDULER_ADDRESS (params.yaml is the more specific of the
    two: the variable may be set for other Dask work in the same shell)."""
    cfg = settings() if cfg is None else cfg
    if cfg.get("executor") != "dask":
        return None, ""
    if cfg.get("dask_address"):
        return str(cfg["dask_address"]).strip(), "annotate.dask_address"
    env = os.environ.get(DASK_ADDRESS_ENV, "").strip()
    if env:
        return env, f"{DASK_ADDRESS_ENV} (annotate.dask_address is null)"
    return None, ""


def run_settings(run: str) -> dict[str, Any]:
    """annotate.runs.<run> or annotate.model_runs.<run> (runs of the own coreference model,
    a separate DVC foreach only so that their stage can depend on settings.checkpoint)."""
    cfg = settings()
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
