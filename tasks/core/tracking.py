"""The one MLflow helper: same experiment names, run names and tags for every stage.

Experiment per DVC stage, named as the stage (train_mage, train_coref, annotate, stats): one
name from dvc.yaml to MLflow to the artifacts/ and metrics/ paths. A run is named as the stage
item and seed (train_mage@bigru-syn2/seed1) and tagged with the paper it reproduces, the
dataset, the git SHA and a hash of the stage's dvc.lock entry (deps + params as DVC records them) so a run can be traced to the
exact inputs that produced it. Tracking store: a real sqlite database by default.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tasks.core.config import REPO_ROOT, params, resolve_path
from tasks.core.settings import parse_settings

log = logging.getLogger("corefrepro.tracking")

# the experiments (= stage names) and the paper each reproduces (a tag on every run)
PAPERS = {
    "stats": "",
    "annotate": "",
    "train_mage": "Dhingra et al. 2018, MAGE-GRU",
    "train_coref": "Luo & Glass 2018, cross-sentence coreference",
    "train_entitynlm": "Ji et al. 2017, EntityNLM",
    "train_corelm": "Stylianou & Vlahavas 2021, CoreLM",
}


@dataclass
class TrackingSettings:
    """params.yaml tracking."""

    uri: str = "sqlite:///mlflow.db"  # MLFLOW_TRACKING_URI overrides
    artifacts: str = "mlartifacts"


def settings() -> TrackingSettings:
    return parse_settings(TrackingSettings, params("tracking"), "tracking")


def tracking_uri() -> str:
    """MLFLOW_TRACKING_URI wins; else params.yaml tracking.uri (relative sqlite paths -> repo root)."""
    uri = os.environ.get("MLFLOW_TRACKING_URI") or settings().uri
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri[len(prefix) :].startswith("/"):
        uri = prefix + str(resolve_path(uri[len(prefix) :]))
    return uri


def artifact_root() -> str:
    return resolve_path(settings().artifacts).as_uri()


def git_sha() -> str:
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def stage_lock_hash(stage: str | None) -> str:
    """md5 of the stage's deps+params entry as DVC would write it to dvc.lock for this run.

    DVC hashes deps before running the command but writes dvc.lock only after it, so the
    entry is recomputed here through DVC's API (read-only: no repo lock is taken).
    """
    if not stage:
        return "none"
    try:
        from dvc.repo import Repo
        from dvc.stage.serialize import to_single_stage_lockfile

        with Repo(str(REPO_ROOT)) as repo:
            (dvc_stage,) = repo.stage.collect(stage)
            dvc_stage.save_deps()
            entry = to_single_stage_lockfile(dvc_stage)
        entry.pop("outs", None)
        return hashlib.md5(json.dumps(entry, sort_keys=True, default=str).encode()).hexdigest()
    except Exception as exc:  # noqa: BLE001 - tracking must never fail a stage
        log.warning("could not hash dvc stage %s: %s", stage, exc)
        return "unavailable"


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _store_lock(uri: str) -> contextlib.AbstractContextManager:
    """An inter-process lock for the first touch of a sqlite store: MLflow creates and
    migrates the database on first use, and two processes doing that at once (two training
    lanes logging to one store) fail with "duplicate column"; creating the experiment is a
    check-then-act race too. Server stores (http://...) serialize on their own."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        return contextlib.nullcontext()
    from filelock import FileLock

    return FileLock(uri[len(prefix) :] + ".lock", timeout=600)


@contextlib.contextmanager
def tracked_run(
    stage: str,
    item: str,
    *,
    dataset: str,
    seed: int | None = None,
    run_params: Mapping[str, Any] | None = None,
    tags: Mapping[str, str] | None = None,
) -> Iterator[Any]:
    """Open the MLflow run `<stage>@<item>[/seed<k>]` in the experiment `<stage>`."""
    import mlflow

    _experiment(stage)
    run_name, all_tags = _run_name_tags(stage, item, dataset, seed, tags)
    with mlflow.start_run(run_name=run_name, tags=all_tags) as run:
        if run_params:
            flat = _flatten(run_params)
            mlflow.log_params({k: str(v)[:6000] for k, v in flat.items()})
        yield run


def _experiment(stage: str) -> str:
    """The experiment `<stage>` (created on first use); its id."""
    import mlflow

    if stage not in PAPERS:
        raise KeyError(f"unknown stage '{stage}' for MLflow; known: {sorted(PAPERS)}")
    uri = tracking_uri()
    mlflow.set_tracking_uri(uri)
    with _store_lock(uri):
        if mlflow.get_experiment_by_name(stage) is None:
            mlflow.create_experiment(stage, artifact_location=f"{artifact_root()}/{stage}")
    return mlflow.set_experiment(stage).experiment_id


def _run_name_tags(stage, item, dataset, seed, tags) -> tuple[str, dict[str, str]]:
    dvc_stage = os.environ.get("DVC_STAGE")
    run_name = f"{stage}@{item}" + (f"/seed{seed}" if seed is not None else "")
    all_tags = {
        "paper": PAPERS[stage] or "none",
        "item": item,
        "dataset": dataset,
        "seed": str(seed),
        "git_sha": git_sha(),
        "dvc_stage": dvc_stage or "none",
        "dvc_lock_hash": stage_lock_hash(dvc_stage),
        **(tags or {}),
    }
    return run_name, all_tags


@contextlib.contextmanager
def tracked_runs(stage: str, runs: list[Mapping[str, Any]]) -> Iterator[list[str]]:
    """Several runs open at once, each as tracked_run would open it (runs: its keyword
    arguments item, dataset, seed, run_params, tags), for models trained together (seeds
    stacked); yields their run ids, to log to with log_metrics(..., run_id=)."""
    from mlflow.entities import Param
    from mlflow.tracking import MlflowClient

    experiment = _experiment(stage)
    client = MlflowClient()
    ids = []
    for spec in runs:
        name, tags = _run_name_tags(stage, spec["item"], spec["dataset"], spec.get("seed"),
                                    spec.get("tags"))  # fmt: skip
        run = client.create_run(experiment, run_name=name, tags=tags)
        flat = _flatten(spec.get("run_params") or {})
        params_ = [Param(k, str(v)[:6000]) for k, v in flat.items()]
        client.log_batch(run.info.run_id, params=params_)
        ids.append(run.info.run_id)
    status = "FAILED"
    try:
        yield ids
        status = "FINISHED"
    finally:
        for run_id in ids:
            client.set_terminated(run_id, status)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def log_metrics(
    metrics: Mapping[str, Any], step: int | None = None, run_id: str | None = None
) -> None:
    """Log the finite numbers of `metrics` to the active run, or to run_id (None, NaN and
    text skipped)."""
    import mlflow

    values = {k: float(v) for k, v in metrics.items() if _finite(v)}
    if run_id is None:
        mlflow.log_metrics(values, step=step)
        return
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    now = int(time.time() * 1000)
    batch = [Metric(k, v, now, step or 0) for k, v in values.items()]
    MlflowClient().log_batch(run_id, metrics=batch)


def log_params(values: Mapping[str, Any]) -> None:
    import mlflow

    mlflow.log_params(dict(values))


def log_dict(obj: Any, name: str, run_id: str | None = None) -> None:
    import mlflow

    if run_id is None:
        mlflow.log_dict(obj, name)
    else:
        mlflow.tracking.MlflowClient().log_dict(run_id, obj, name)
