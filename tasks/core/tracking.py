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
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.core.config import REPO_ROOT, params
from tasks.core.settings import ConfigError, key_path, parse_settings

log = logging.getLogger("corefrepro.tracking")

# the experiments (= stage names) and the paper each reproduces (a tag on every run)
PAPERS = {
    "stats": "",
    "annotate": "",
    "train_mage": "Dhingra et al. 2018, MAGE-GRU",
    "train_coref": "Luo & Glass 2018, cross-sentence coreference",
    "train_entitynlm": "Ji et al. 2017, EntityNLM",
    "entity_prediction": "Ji et al. 2017, EntityNLM (§5.3 entity prediction; Modi et al. 2017)",
    "rerank_entitynlm": "Ji et al. 2017, EntityNLM (§5.2 coreference reranking)",
    "train_corelm": "Stylianou & Vlahavas 2021, CoreLM",
    "report": "",
}


# MLflow 3's UI opens an experiment in its GenAI view (traces) unless the experiment says it
# holds model training: then its runs table (metrics, params, charts) is what opens.
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}


@dataclass
class TrackingSettings:
    """params.yaml tracking."""

    uri: str = "sqlite:///mlflow.db"  # MLFLOW_TRACKING_URI overrides
    artifacts: str = "mlartifacts"
    # checkpoints up to this size are copied into the run's artifacts; larger ones are
    # recorded by their DVC output path and size only (tags checkpoint, checkpoint_bytes)
    max_checkpoint_mb: float = 50.0

    def validate(self, path: str) -> None:
        if self.max_checkpoint_mb < 0:
            value = self.max_checkpoint_mb
            raise ConfigError(f"{key_path(path, 'max_checkpoint_mb')}: must be >= 0, got {value}")


def settings() -> TrackingSettings:
    return parse_settings(TrackingSettings, params("tracking"), "tracking")


def store_root() -> Path:
    """Where relative tracking paths (mlflow.db, mlartifacts/) live: the main repository.

    Why not the code's directory: `dvc exp run --queue` / `--temp` run each experiment in a
    temporary copy (.dvc/tmp/exps/...), which would get its own mlflow.db, deleted with it.
    DVC sets DVC_ROOT for every stage command to the repository the experiment was queued
    from (DVC >= 3), so every experiment logs to the one store beside dvc.yaml.
    """
    root = os.environ.get("DVC_ROOT")
    if root and Path(root).is_dir():
        return Path(root).resolve()
    return REPO_ROOT


def _at_store_root(relpath: str) -> Path:
    path = Path(relpath)
    return path if path.is_absolute() else store_root() / path


def tracking_uri() -> str:
    """MLFLOW_TRACKING_URI wins; else params.yaml tracking.uri, a relative sqlite path resolved
    against store_root() (the main repository, also from a queued experiment's copy)."""
    uri = os.environ.get("MLFLOW_TRACKING_URI") or settings().uri
    prefix = "sqlite:///"
    if uri.startswith(prefix) and not uri[len(prefix) :].startswith("/"):
        uri = prefix + str(_at_store_root(uri[len(prefix) :]))
    return uri


def artifact_root() -> str:
    return _at_store_root(settings().artifacts).as_uri()


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
    """Open the MLflow run `<stage>@<item>[/seed<k>]` (`<stage>` without an item) in the
    experiment `<stage>`."""
    import mlflow

    if stage not in PAPERS:
        raise KeyError(f"unknown stage '{stage}' for MLflow; known: {sorted(PAPERS)}")
    uri = tracking_uri()
    mlflow.set_tracking_uri(uri)
    with _store_lock(uri):
        experiment = mlflow.get_experiment_by_name(stage)
        if experiment is None:
            mlflow.create_experiment(
                stage, artifact_location=f"{artifact_root()}/{stage}", tags=EXPERIMENT_TAGS
            )
        elif any(experiment.tags.get(k) != v for k, v in EXPERIMENT_TAGS.items()):
            for key, value in EXPERIMENT_TAGS.items():  # a store made before the tag
                mlflow.MlflowClient().set_experiment_tag(experiment.experiment_id, key, value)
    mlflow.set_experiment(stage)
    dvc_stage = os.environ.get("DVC_STAGE")
    # as the DVC stage (and the Prefect task run): train_mage@bigru-syn2/seed1, report
    run_name = (f"{stage}@{item}" if item else stage) + (f"/seed{seed}" if seed is not None else "")
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
    with mlflow.start_run(run_name=run_name, tags=all_tags) as run:
        if run_params:
            flat = _flatten(run_params)
            mlflow.log_params({k: str(v)[:6000] for k, v in flat.items()})
        yield run


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def log_metrics(metrics: Mapping[str, Any], step: int | None = None) -> None:
    """Log the finite numbers of `metrics` to the active run (None, NaN and text skipped)."""
    import mlflow

    mlflow.log_metrics({k: float(v) for k, v in metrics.items() if _finite(v)}, step=step)


def log_params(values: Mapping[str, Any]) -> None:
    import mlflow

    mlflow.log_params(dict(values))


def log_dict(obj: Any, name: str) -> None:
    import mlflow

    mlflow.log_dict(obj, name)


def log_checkpoint(path: str | Path) -> None:
    """Record a checkpoint in the active run: its DVC output path (tag `checkpoint`, relative
    to the repository) always, the file itself under artifacts `checkpoints/` when it is at
    most tracking.max_checkpoint_mb (larger files stay in DVC's cache: `dvc pull <path>`)."""
    if "mlflow" not in sys.modules:  # not imported: no run can be active
        return
    import mlflow

    path = Path(path)
    if mlflow.active_run() is None or not path.is_file():
        return
    size = path.stat().st_size
    try:
        shown = str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        shown = str(path)
    mlflow.set_tags({"checkpoint": shown, "checkpoint_bytes": str(size)})
    if size <= settings().max_checkpoint_mb * 2**20:
        mlflow.log_artifact(str(path), artifact_path="checkpoints")


def log_file(path: str | Path, artifact_path: str | None = None) -> None:
    """Copy a file (a report, a metrics file) into the active run's artifacts."""
    import mlflow

    mlflow.log_artifact(str(path), artifact_path=artifact_path)
