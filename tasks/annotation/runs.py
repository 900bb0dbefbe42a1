"""The annotation runs of params.yaml: (corpus, annotator) pairs, each one annotate@<run>
and graphs@<run>; the section `annotate`, parsed here, apart from the annotation stage
(flows/annotate.py), because the graph stages (flows/graphs.py, flows/view_*.py) read its
runs too and should not depend on the annotation code."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

from tasks.core.errors import CorefreproError
from tasks.core.settings import (
    ConfigError,
    Name,
    WritePath,
    bounded,
    load_stage_settings,
)


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
    cache_dir: WritePath = "data/cache/annotate"  # finished shards of an interrupted run
    score_split: Literal["train", "dev", "test"] = "dev"
    annotators: dict[str, dict[str, Any]] = field(default_factory=dict)
    model_runs: dict[Name, RunEntry] = field(default_factory=dict)
    # runs of Stanza with a trained coreference model (settings.coref_model_path):
    # annotate_stanza@<run>, a separate foreach for the same reason as model_runs
    stanza_runs: dict[Name, RunEntry] = field(default_factory=dict)
    runs: dict[Name, RunEntry] = field(default_factory=dict)

    def validate(self, path: str) -> None:
        bad = []
        sections = {"runs": self.runs, "model_runs": self.model_runs,
                    "stanza_runs": self.stanza_runs}  # fmt: skip
        for name in sorted(set().union(*sections.values())):
            where = [k for k, runs in sections.items() if name in runs]
            if len(where) > 1:
                bad.append(f"{path}: run '{name}' is in both annotate.{where[0]} and {where[1]}")
        if self.dask_address is not None and not self.dask_address.strip():
            bad.append(f"{path}.dask_address: empty; null starts a local cluster")
        elif self.dask_address is not None and self.executor != "dask":
            bad.append(
                f"{path}.dask_address: {self.dask_address!r} is a Dask scheduler, but "
                f"{path}.executor is {self.executor!r} (set it to dask, or dask_address: null)"
            )
        if bad:
            raise ConfigError(bad)


def settings() -> AnnotateSettings:
    """The annotate section, parsed strictly."""
    return load_stage_settings(AnnotateSettings, "annotate")


# Dask's own variable for the scheduler to join; annotate.dask_address, when set, wins over it
DASK_ADDRESS_ENV = "DASK_SCHEDULER_ADDRESS"


def dask_address(cfg: AnnotateSettings | None = None) -> tuple[str | None, str]:
    """(the running Dask scheduler the annotate stage joins, the setting that named it), or
    (None, ...) for a LocalCluster. Only with executor dask: annotate.dask_address when set,
    else the environment's DASK_SCHEDULER_ADDRESS (params.yaml is the more specific of the
    two: the variable may be set for other Dask work in the same shell)."""
    cfg = settings() if cfg is None else cfg
    if cfg.executor != "dask":
        return None, ""
    if cfg.dask_address:
        return cfg.dask_address.strip(), "annotate.dask_address"
    env = os.environ.get(DASK_ADDRESS_ENV, "").strip()
    if env:
        return env, f"{DASK_ADDRESS_ENV} (annotate.dask_address is null)"
    return None, ""


# sections of runs whose stage depends on a checkpoint named in the run's settings
CHECKPOINT_SECTIONS = {"model_runs": "checkpoint", "stanza_runs": "coref_model_path"}


def run_names() -> set[str]:
    """Every annotation run's name (annotate.runs, model_runs, stanza_runs)."""
    cfg = settings()
    return {*cfg.runs, *cfg.model_runs, *cfg.stanza_runs}


def run_settings(run: str, cfg: AnnotateSettings | None = None) -> RunEntry:
    """annotate.runs.<run>, annotate.model_runs.<run> (runs of the own coreference model) or
    annotate.stanza_runs.<run> (Stanza with a trained model): the last two are separate DVC
    foreach lists only so that their stage can depend on the checkpoint their settings name.
    `cfg`: the section already parsed (else it is parsed here)."""
    # a run in two sections is refused where the section is parsed (AnnotateSettings.validate)
    cfg = settings() if cfg is None else cfg
    sections = {"runs": cfg.runs, "model_runs": cfg.model_runs, "stanza_runs": cfg.stanza_runs}
    found = [k for k, runs in sections.items() if run in runs]
    if not found:
        known = ", ".join(sorted(name for runs in sections.values() for name in runs))
        raise CorefreproError(
            f"params.yaml: annotate.runs / annotate.model_runs / annotate.stanza_runs have no "
            f"'{run}' (known: {known})"
        )
    section = found[0]
    entry = sections[section][run]
    key = CHECKPOINT_SECTIONS.get(section)
    if key and not entry.settings.get(key):
        example = {"checkpoint": "artifacts/train_coref/asl/seed1/best.pt",
                   "coref_model_path": "artifacts/train_stanza_coref/model.pt"}[key]  # fmt: skip
        stage = {"model_runs": "annotate_model", "stanza_runs": "annotate_stanza"}[section]
        raise CorefreproError(
            f"params.yaml: annotate.{section}.{run} needs settings.{key} (the stage "
            f"{stage} depends on it, e.g. {example})"
        )
    return entry
