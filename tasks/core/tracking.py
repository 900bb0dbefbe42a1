"""The one MLflow helper: same experiment names, run names and tags for every stage.

Experiment per DVC stage, named as the stage (train_mage, train_coref, annotate, stats): one
name from dvc.yaml to MLflow to the artifacts/ and metrics/ paths. A run is named as the stage
item and seed (train_mage@bigru-syn2/seed1) and tagged with the paper it reproduces, the
dataset, the git SHA and a hash of the stage's dvc.lock entry (deps + params as DVC records them) so a run can be traced to the
exact inputs that produced it. Tracking store: a real sqlite database by default, or a team's
`mlflow server` (tracking.uri: http://...), which then also stores the artifacts (README "MLflow").
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.core import numerics
from tasks.core.config import REPO_ROOT
from tasks.core.errors import CorefreproError, first_line
from tasks.core.settings import bounded, load_stage_settings
from tasks.core.storage import secondary_process

log = logging.getLogger("corefrepro.tracking")

# the experiments (= stage names) and the paper each reproduces (a tag on every run); a
# family's training stage also passes its Family.paper (tasks/training/stage.py)
PAPERS = {
    "stats": "",
    "annotate": "",
    "train_mage": "Dhingra et al. 2018, MAGE-GRU",
    "train_coref": "Luo & Glass 2018, cross-sentence coreference",
    "compare_coref": "Luo & Glass 2018, cross-sentence coreference (Table 1's ASL - baseline)",
    "train_entitynlm": "Ji et al. 2017, EntityNLM",
    "entity_prediction": "Ji et al. 2017, EntityNLM (§5.3 entity prediction; Modi et al. 2017)",
    "rerank_entitynlm": "Ji et al. 2017, EntityNLM (§5.2 coreference reranking)",
    "train_corelm": "Stylianou & Vlahavas 2021, CoreLM",
    "train_stanza_coref": "Qi et al. 2020 Stanza; its word-level coreference model (Dobrovolskii 2021)",
    "report": "",
}


# The experiment's kind: model training, not GenAI traces. MLflow 3.17's UI labels it but does
# not open on it: which page an experiment opens on follows the view switch (or the URL's
# ?workflowType=machine_learning), checked in a browser; README "MLflow" says how.
EXPERIMENT_TAGS = {"mlflow.experimentKind": "custom_model_development"}


@dataclass
class TrackingSettings:
    """params.yaml tracking."""

    uri: str = "sqlite:///mlflow.db"  # MLFLOW_TRACKING_URI overrides
    artifacts: str = "mlartifacts"
    # checkpoints up to this size are copied into the run's artifacts; larger ones are
    # recorded by their DVC output path and size only (tags checkpoint, checkpoint_bytes)
    max_checkpoint_mb: float = bounded(50.0, ge=0)


def settings() -> TrackingSettings:
    return load_stage_settings(TrackingSettings, "tracking")


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
    """Where a local store's experiments keep their artifacts (tracking.artifacts); a tracking
    server's experiments use the server's own artifact store instead (is_server)."""
    return _at_store_root(settings().artifacts).as_uri()


def is_server(uri: str) -> bool:
    """A tracking server (`mlflow server`): it owns the store, serializes its writers and, run
    with --serve-artifacts, proxies the artifacts (no local file lock, no local artifact root)."""
    return uri.startswith(("http://", "https://"))


# How long a tracking server may take to answer before a stage goes on without it: MLflow's own
# client retries a refused connection for minutes (MLFLOW_HTTP_REQUEST_MAX_RETRIES).
SERVER_TIMEOUT_S = 5.0


class ServerUnreachable(ConnectionError):
    """The tracking server did not answer (its message: one line naming the setting)."""


def check_server(uri: str) -> None:
    """Raise ServerUnreachable when the tracking server at `uri` does not answer within
    SERVER_TIMEOUT_S; any HTTP answer (even a refusal by an auth proxy) or a TLS handshake
    counts as reachable. Local stores are not checked."""
    if not is_server(uri):
        return
    import requests

    try:
        requests.get(f"{uri.rstrip('/')}/health", timeout=SERVER_TIMEOUT_S).close()
    except requests.exceptions.SSLError:
        return  # it answered; MLflow's client has its own certificate settings
    except (requests.ConnectionError, requests.Timeout) as exc:
        setting = "MLFLOW_TRACKING_URI" if os.environ.get("MLFLOW_TRACKING_URI") else "tracking.uri"
        errno = re.search(r"\[Errno -?\d+\] ([^'\")\]]+)", str(exc))
        if isinstance(exc, requests.Timeout):
            reason = f"no answer in {SERVER_TIMEOUT_S:g} s"
        else:
            reason = errno.group(1).strip() if errno else type(exc).__name__
        raise ServerUnreachable(
            f"tracking server {uri} ({setting}) is unreachable: {reason}"
        ) from None


# what a user edits: "-dirty" means a change here, not the tracked outputs (dvc.lock, metrics/,
# reports/) a running pipeline rewrites (issue #59 row 10)
SOURCE_PATHS = ("flows", "tasks", "models", "presets", "params.yaml", "dvc.yaml",
                "pyproject.toml", "uv.lock")  # fmt: skip


def git_sha(root: Path = REPO_ROOT) -> str:
    """HEAD's commit, "-dirty" when the source or settings differ from it."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", *SOURCE_PATHS],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


@functools.cache
def _stage_lock_entry(stage: str) -> dict[str, Any] | None:
    """The stage's deps+params entry as DVC would write it to dvc.lock for this run (None
    when DVC cannot say). DVC hashes deps before running the command but writes dvc.lock only
    after it, so the entry is recomputed here through DVC's API (read-only: no repo lock)."""
    try:
        from dvc.repo import Repo
        from dvc.stage.serialize import to_single_stage_lockfile

        with Repo(str(REPO_ROOT)) as repo:
            (dvc_stage,) = repo.stage.collect(stage)
            dvc_stage.save_deps()
            entry = to_single_stage_lockfile(dvc_stage)
        entry.pop("outs", None)
        return entry
    except Exception as exc:  # noqa: BLE001 - tracking must never fail a stage
        log.warning("could not hash dvc stage %s: %s", stage, exc)
        return None


def stage_lock_hash(stage: str | None) -> str:
    """md5 of the stage's deps+params entry as DVC would write it to dvc.lock for this run."""
    if not stage:
        return "none"
    entry = _stage_lock_entry(stage)
    if entry is None:
        return "unavailable"
    return hashlib.md5(json.dumps(entry, sort_keys=True, default=str).encode()).hexdigest()


# deps under these folders are data a run reads (the rest is code): MLflow's Dataset column
DATA_DEP_ROOTS = ("data/", "artifacts/")


def stage_inputs(stage: str | None) -> list[tuple[str, str]]:
    """(path, DVC md5) of the data the stage reads (its deps under data/ or artifacts/, as
    dvc.lock records them): what `mlflow.log_input` shows as the run's datasets."""
    entry = _stage_lock_entry(stage) if stage else None
    deps = (entry or {}).get("deps", [])
    return [(d["path"], str(d.get("md5") or d.get("hash") or "")) for d in deps
            if str(d.get("path", "")).startswith(DATA_DEP_ROOTS)]  # fmt: skip


def _input_datasets(stage: str | None) -> list[Any]:
    """The stage's inputs as MLflow dataset entities (name = path, digest = DVC's md5)."""
    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset

    with warnings.catch_warnings():  # "can be interpreted in multiple ways": both are local
        warnings.simplefilter("ignore", UserWarning)
        return [MetaDataset(resolve_dataset_source(path), name=path, digest=md5[:36])
                for path, md5 in stage_inputs(stage)]  # fmt: skip


def log_stage_inputs(run_id: str) -> None:
    """Record the DVC stage's input datasets on a run (context "training"); nothing outside
    DVC, where no stage names them."""
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.tracking import MlflowClient

    try:
        datasets = _input_datasets(os.environ.get("DVC_STAGE"))
        if datasets:
            tag = [InputTag("mlflow.data.context", "training")]
            inputs = [DatasetInput(ds._to_mlflow_entity(), tag) for ds in datasets]
            MlflowClient().log_inputs(run_id, datasets=inputs)
    except Exception as exc:  # noqa: BLE001 - a missing Dataset column must not fail a stage
        log.warning("MLflow: could not log the input datasets of run %s: %s", run_id, exc)


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


# Waits between attempts of a tracking call (each attempt may itself wait out sqlite's 5 s
# busy timeout): a store locked by another process for a while still gets the run.
RETRY_DELAYS_S = (2.0, 5.0)


class Terminated(BaseException):
    """SIGTERM inside a tracked run (raised so that the run is closed as KILLED)."""


_tracking_failed = threading.local()


# the loggers of the libraries a tracking call runs (MLflow logs a store error with its whole
# traceback -- 60 lines for a locked sqlite store -- before raising it to the caller)
LIBRARY_LOGGERS = ("mlflow", "sqlalchemy", "alembic", "urllib3")


class _Contained(logging.Filter):
    """Keeps the libraries' records of one thread's tracking call out of the log handlers
    (they are the caller's to report) and remembers them."""

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if record.thread == self.thread and record.name.startswith(LIBRARY_LOGGERS):
            self.records.append(record)
            return False
        return True


@contextlib.contextmanager
def _library_noise_contained() -> Iterator[_Contained]:
    """While a tracking call runs: the libraries' log records of this thread go nowhere but
    to the returned filter's `records` (MLflow's own handler and the root's both filtered:
    MLflow's loggers may or may not propagate)."""
    contained = _Contained()
    loggers = [logging.getLogger(name) for name in LIBRARY_LOGGERS] + [logging.getLogger()]
    handlers = {h for lg in loggers for h in lg.handlers}
    for handler in handlers:
        handler.addFilter(contained)
    try:
        yield contained
    finally:
        for handler in handlers:
            handler.removeFilter(contained)


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"


def _retry(what: str, call: Callable[[], Any]) -> tuple[bool, Any]:
    """(True, result) of `call`, retried over RETRY_DELAYS_S; (False, None) with one warning
    if it keeps failing. Tracking is a record of the work, never a reason to lose it: a
    locked, deleted or unreachable store does not fail a stage. The libraries' own log lines
    and tracebacks of a failed attempt are kept out of the stage's log (DEBUG of this logger);
    a call that succeeds after failing says so in one warning (issue #59 row 9)."""
    started, failures = time.monotonic(), []
    for attempt, delay in enumerate((*RETRY_DELAYS_S, None)):
        with _library_noise_contained() as noise:
            try:
                result = call()
            except Exception as exc:  # noqa: BLE001 - any store failure
                failures.append(exc)
            else:
                if failures:
                    log.warning("MLflow: %s failed %d time(s) (%s) and succeeded on attempt %d "
                                "after %.0f s: recovered, nothing lost", what, len(failures),
                                _short(failures[0]), attempt + 1,
                                time.monotonic() - started)  # fmt: skip
                return True, result
            finally:
                for record in noise.records:
                    text = record.getMessage().strip()
                    log.debug("[%s] %s", record.name, text.splitlines()[0][:200] if text else "")
        if delay is None:
            log.warning("MLflow: could not %s after %d attempts (%s); the stage goes on "
                        "without it", what, attempt + 1, _short(failures[-1]))  # fmt: skip
            return False, None
        time.sleep(delay)
    raise AssertionError("unreachable")


def _tracking_ok() -> bool:
    return not getattr(_tracking_failed, "value", False)


def _mark_stale_runs(experiment_id: str, run_name: str) -> None:
    """Runs of this stage item left RUNNING by a process of this host that no longer exists
    (killed with SIGKILL, or the machine went down) are marked FAILED."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    runs = client.search_runs(
        [experiment_id],
        filter_string=f"attributes.run_name = '{run_name}' and attributes.status = 'RUNNING'",
    )
    for run in runs:
        tags = run.data.tags
        pid, host = tags.get("corefrepro.pid"), tags.get("corefrepro.host")
        if host == socket.gethostname() and pid and pid.isdigit() and not _alive(int(pid)):
            client.set_tag(run.info.run_id, "corefrepro.ended", "stale: process gone; FAILED")
            client.set_terminated(run.info.run_id, "FAILED")
            log.info("MLflow: run %s (%s) was left RUNNING by a killed process; marked FAILED",
                     run.info.run_id, run_name)  # fmt: skip


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _experiment(stage: str) -> str:
    """The experiment `<stage>` (created on first use, tagged as model training); its id."""
    import mlflow
    from mlflow.exceptions import MlflowException

    uri = tracking_uri()
    check_server(uri)
    mlflow.set_tracking_uri(uri)
    # a server's experiments keep their artifacts in its store (mlflow-artifacts:/...)
    location = None if is_server(uri) else f"{artifact_root()}/{stage}"
    with _store_lock(uri):
        experiment = mlflow.get_experiment_by_name(stage)
        if experiment is None:
            try:
                mlflow.create_experiment(stage, artifact_location=location, tags=EXPERIMENT_TAGS)
            except MlflowException as exc:  # another process made it first (a server store)
                if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                    raise
        else:
            if any(experiment.tags.get(k) != v for k, v in EXPERIMENT_TAGS.items()):
                for key, value in EXPERIMENT_TAGS.items():  # a store made before the tag
                    mlflow.MlflowClient().set_experiment_tag(experiment.experiment_id, key, value)
            if location is not None and _own_store(uri):
                _check_artifact_location(uri, stage, experiment.artifact_location, location)
    return mlflow.set_experiment(stage).experiment_id


_moved_warned: set[tuple[str, str]] = set()


def _own_store(uri: str) -> bool:
    """A sqlite store inside this checkout (mlflow.db beside dvc.yaml): its experiments'
    artifacts belong in this checkout's artifact root. A store shared by several checkouts
    (MLFLOW_TRACKING_URI of training lanes) keeps the folder of the one that made it."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        return False
    return store_root() in Path(uri[len(prefix) :]).resolve().parents


def _check_artifact_location(uri: str, stage: str, stored: str, expected: str) -> None:
    """One warning (once per process and experiment) when a local store's experiment keeps
    its artifacts in another folder than this checkout's artifact root: mlflow.db records
    absolute paths, so a copied or moved checkout's store still points at the old folder,
    where the UI looks and this run's artifacts would go (issue #59 row 13)."""
    if stored.rstrip("/") == expected.rstrip("/") or (uri, stage) in _moved_warned:
        return
    _moved_warned.add((uri, stage))
    log.warning("MLflow: experiment %s of %s keeps its artifacts at %s, not in this checkout "
                "(%s): the store was made in another folder (a copied or moved checkout); "
                "this run's artifacts go there too. Fix: `uv run python -m tasks.core.tracking "
                "relocate` points the store at this checkout's %s", stage, uri, stored,
                expected, settings().artifacts)  # fmt: skip


@dataclass
class RelocateReport:
    """What relocate() rewrote: experiments and runs whose artifact paths were elsewhere."""

    experiments: int = 0
    runs: int = 0
    old_roots: tuple[str, ...] = ()


def relocate(uri: str | None = None) -> RelocateReport:
    """Point a local store's experiments (named as stages) and their runs at this checkout's
    artifact root (artifact_root()) where they name another folder's: a copied or moved
    checkout's mlflow.db. Only the paths are rewritten; the artifacts themselves are where
    the copy put them (mlartifacts/ beside mlflow.db)."""
    import sqlite3

    uri = uri or tracking_uri()
    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        raise StoreError(f"{uri}: relocate rewrites a local sqlite store only (a tracking "
                         "server keeps its own artifact store)")  # fmt: skip
    path = uri[len(prefix) :]
    if not Path(path).is_file():
        raise StoreError(f"{path}: no MLflow store there")
    root = artifact_root()
    report = RelocateReport()
    with _store_lock(uri), contextlib.closing(sqlite3.connect(path, timeout=30)) as con, con:
        rows = con.execute("SELECT experiment_id, name, artifact_location FROM experiments")
        old_roots = set()
        for exp_id, name, location in rows.fetchall():
            wanted = f"{root}/{name}"
            if location and location != wanted and location.endswith(f"/{name}"):
                old_roots.add(location[: -len(name) - 1])
                con.execute("UPDATE experiments SET artifact_location = ? WHERE experiment_id = ?",
                            (wanted, exp_id))  # fmt: skip
                report.experiments += 1
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for old in sorted(old_roots):
            if "logged_models" in tables:  # MLflow 3's models keep an artifact path too
                con.execute("UPDATE logged_models SET artifact_location = ? || "
                            "substr(artifact_location, ?) WHERE substr(artifact_location, 1, ?) "
                            "= ?", (root, len(old) + 1, len(old), old))  # fmt: skip
            report.runs += con.execute(
                "UPDATE runs SET artifact_uri = ? || substr(artifact_uri, ?) "
                "WHERE substr(artifact_uri, 1, ?) = ?",
                (root, len(old) + 1, len(old), old),
            ).rowcount
        report.old_roots = tuple(sorted(old_roots))
    return report


def _open(stage: str, run_name: str, tags: Mapping[str, str]) -> Any:
    import mlflow

    experiment_id = _experiment(stage)
    _mark_stale_runs(experiment_id, run_name)
    run = mlflow.start_run(run_name=run_name, tags=dict(tags))
    log_stage_inputs(run.info.run_id)
    return run


def _end(run_id: str, status: str) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    active = mlflow.active_run()
    if active is not None and active.info.run_id == run_id:
        mlflow.end_run(status)  # leaves the run stack first, then writes the status
    else:
        MlflowClient().set_terminated(run_id, status)


@contextlib.contextmanager
def _terminate_as_exception() -> Iterator[None]:
    """SIGTERM raises Terminated while the run is open (main thread only), so the run is
    closed as KILLED instead of staying RUNNING; the old handler comes back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _run_name_tags(stage, item, dataset, seed, tags) -> tuple[str, dict[str, str]]:
    """As the DVC stage (and the Prefect task run): train_mage@bigru-syn2/seed1, report."""
    paper = (tags or {}).get("paper", PAPERS.get(stage))  # a family's stage: its Family.paper
    if paper is None:
        raise KeyError(f"unknown stage '{stage}' for MLflow; known: {sorted(PAPERS)}")
    dvc_stage = os.environ.get("DVC_STAGE")
    run_name = (f"{stage}@{item}" if item else stage) + (f"/seed{seed}" if seed is not None else "")
    all_tags = {
        "paper": paper or "none",
        "item": item,
        "dataset": dataset,
        "seed": str(seed),
        "git_sha": git_sha(),
        "dvc_stage": dvc_stage or "none",
        "dvc_lock_hash": stage_lock_hash(dvc_stage),
        "corefrepro.pid": str(os.getpid()),
        "corefrepro.host": socket.gethostname(),
        "numerics": numerics.describe(),  # portable (pinned kernels) or native
        **experiment_tags(),
        **({"headline": HEADLINES[stage].describe()} if stage in HEADLINES else {}),
        **(tags or {}),
    }
    return run_name, all_tags


# --------------------------------------------------------------------------- which experiment

NO_EXPERIMENT = "none"  # the tags' value for a plain `dvc repro` or a command run by hand


def experiment_tags() -> dict[str, str]:
    """What made this run (issue #59 row 21): `dvc_exp`, the DVC experiment's name (DVC sets
    DVC_EXP_NAME for the stage commands of every `dvc exp run`, workspace, --temp or --queue),
    and `preset`, `scale` and `smoke`, the preset whose overrides params.yaml holds
    (preset_of). Read from the environment and params.yaml only: no stage's deps change."""
    preset, scale, smoke = preset_of()
    return {"dvc_exp": os.environ.get("DVC_EXP_NAME") or NO_EXPERIMENT, "preset": preset,
            "scale": scale, "smoke": smoke}  # fmt: skip


_ABSENT = object()


@functools.cache
def preset_of(params_path: Path | None = None) -> tuple[str, str, str]:
    """(preset, scale, smoke) whose overrides params.yaml holds (`-S key=value` as DVC applies
    them to HEAD's params.yaml; further overrides of one's own allowed), the most specific
    when several do; NO_EXPERIMENT thrice when none does, or when it cannot be said.

    Matching every preset and scale takes seconds; the stages of one experiment share the
    answer through a file in the system's temp folder keyed by what it depends on."""
    import tempfile

    from tasks.core import presets
    from tasks.core.config import PARAMS_FILE, load_yaml

    none = (NO_EXPERIMENT, NO_EXPERIMENT, NO_EXPERIMENT)
    try:
        base_text = presets.committed_params(REPO_ROOT)
        here_text = (params_path or PARAMS_FILE).read_text(encoding="utf-8")
        here = _flatten(load_yaml(here_text))
        base = _flatten(load_yaml(base_text))
        if here == base:
            return none  # the committed settings: no preset's overrides are applied
        key = hashlib.sha256("\0".join(
            [here_text, base_text, Path(__file__).read_text(encoding="utf-8")]
            + [p.read_text(encoding="utf-8") for p in sorted(presets.PRESETS_DIR.glob("*.yaml"))]
        ).encode()).hexdigest()  # fmt: skip
        memo = Path(tempfile.gettempdir()) / f"corefrepro-preset-{key[:32]}.json"
        with contextlib.suppress(OSError, ValueError):
            return tuple(json.loads(memo.read_text(encoding="utf-8")))  # type: ignore[return-value]
        found = _best_preset(here, base, base_text)
        with contextlib.suppress(OSError):
            tmp = memo.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(found), encoding="utf-8")
            os.replace(tmp, memo)
        return found
    except Exception as exc:  # noqa: BLE001 - a tag must never fail a stage
        log.debug("preset of params.yaml: %s", exc)
        return none


def _best_preset(
    here: dict[str, Any], base: dict[str, Any], base_text: str
) -> tuple[str, str, str]:
    """preset_of's match over every preset, scale and smoke overlay."""
    from tasks.core import presets

    none = (NO_EXPERIMENT, NO_EXPERIMENT, NO_EXPERIMENT)
    best: list[tuple[int, str, str, str]] = []
    for name in presets.names():
        preset = presets.load(name)
        for scale in preset.scales:
            for smoke in (False, True):
                wanted = _applied(base_text, preset.overrides_for(scale, smoke))
                keys = {k for k in {*base, *wanted}
                        if base.get(k, _ABSENT) != wanted.get(k, _ABSENT)}  # fmt: skip
                if keys and all(here.get(k, _ABSENT) == wanted.get(k, _ABSENT) for k in keys):
                    best.append((len(keys), name, scale, str(smoke).lower()))
    if not best:
        return none
    top = max(b[0] for b in best)
    found = sorted({b[1:] for b in best if b[0] == top})
    return tuple(",".join(sorted({f[i] for f in found})) for i in range(3))  # type: ignore[return-value]


def _applied(base_text: str, overrides: list[str]) -> dict[str, Any]:
    """HEAD's params.yaml with `overrides` applied as `dvc exp run -S` applies them
    (dvc.utils.hydra.apply_overrides's steps, in memory: no YAML round trip per candidate), flat."""
    from dvc.utils.hydra import to_hydra_overrides, to_omegaconf
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from omegaconf import OmegaConf

    from tasks.core.config import load_yaml

    data = OmegaConf.create(to_omegaconf(_base(base_text)), flags={"allow_objects": True})
    OmegaConf.set_struct(data, True)
    ConfigLoaderImpl._apply_overrides_to_config(to_hydra_overrides(overrides), data)
    return _flatten(load_yaml(yaml_dump(OmegaConf.to_object(data))))


def _base(base_text: str) -> Any:
    import copy

    return copy.deepcopy(_parsed(base_text))


@functools.cache
def _parsed(base_text: str) -> Any:
    from tasks.core.config import load_yaml

    return load_yaml(base_text)


def yaml_dump(obj: Any) -> str:
    import yaml

    return yaml.safe_dump(obj, sort_keys=False)


# --------------------------------------------------------------------------- headline figure


@dataclass(frozen=True)
class Headline:
    """A stage's headline figure: the final metric `key` it logs, times `scale`, in `unit`,
    the report's unit; logged as the run's metric HEADLINE_METRIC (issue #59 row 15)."""

    key: str
    scale: float
    unit: str
    what: str

    def describe(self) -> str:
        return f"{self.what}, {self.unit}"


HEADLINE_METRIC = "headline"
HEADLINES = {
    "train_mage": Headline("test_error", 100.0, "%", "test error rate (report Table 1)"),
    "train_coref": Headline("final_test_conll_f1", 100.0, "%", "test CoNLL F1"),
    "train_entitynlm": Headline("final_test_ppl", 1.0, "ppl", "test perplexity"),
}
_headline_runs: dict[str, Headline] = {}  # run id -> its stage's headline


def _with_headline(run_id: str | None, values: dict[str, float]) -> dict[str, float]:
    spec = _headline_runs.get(run_id or "")
    if spec is not None and spec.key in values:
        return {**values, HEADLINE_METRIC: round(values[spec.key] * spec.scale, 6)}
    return values


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
    experiment `<stage>`.

    Yields the run, or None when the store cannot be reached (after retries, with a warning):
    the stage's work and outputs never depend on tracking. The run ends FINISHED, FAILED on
    an error, KILLED on Ctrl-C or SIGTERM; one left RUNNING by a killed process is marked
    FAILED when the same stage item starts again.
    """
    run_name, all_tags = _run_name_tags(stage, item, dataset, seed, tags)
    _tracking_failed.value = False
    if secondary_process():  # torchrun's RANK 0 tracks the run
        opened, run = False, None
    else:
        opened, run = _retry(f"open run {run_name}", lambda: _open(stage, run_name, all_tags))
    if not opened:
        _tracking_failed.value = True
        try:
            yield None
        finally:
            _tracking_failed.value = False
        return
    if stage in HEADLINES:
        _headline_runs[run.info.run_id] = HEADLINES[stage]
    if run_params:
        flat = {k: str(v)[:6000] for k, v in _flatten(run_params).items()}
        log_params(flat)
    status = "FAILED"
    try:
        with _terminate_as_exception():
            yield run
        status = "FINISHED"
    except (KeyboardInterrupt, Terminated):
        status = "KILLED"
        raise
    finally:
        _retry(f"end run {run_name} as {status}", lambda: _end(run.info.run_id, status))
        _tracking_failed.value = False


@contextlib.contextmanager
def tracked_runs(stage: str, runs: list[Mapping[str, Any]]) -> Iterator[list[str] | None]:
    """Several runs open at once, each as tracked_run would open it (runs: its keyword
    arguments item, dataset, seed, run_params, tags), for models trained together (seeds
    stacked); yields their run ids, to log to with log_metrics(..., run_id=), or None when
    the store cannot be reached (the work goes on without it)."""
    from mlflow.entities import Param
    from mlflow.tracking import MlflowClient

    def open_all() -> list[str]:
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
            log_stage_inputs(run.info.run_id)
            ids.append(run.info.run_id)
            if stage in HEADLINES:
                _headline_runs[run.info.run_id] = HEADLINES[stage]
        return ids

    opened, ids = (
        (False, None)
        if secondary_process()
        else _retry(f"open {len(runs)} runs of {stage}", open_all)
    )
    if not opened:
        yield None
        return
    status = "FAILED"
    try:
        with _terminate_as_exception():
            yield ids
        status = "FINISHED"
    except (KeyboardInterrupt, Terminated):
        status = "KILLED"
        raise
    finally:
        for run_id in ids:
            _retry(f"end run {run_id} as {status}",
                   lambda r=run_id: MlflowClient().set_terminated(r, status))  # fmt: skip


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _log(what: str, call: Callable[[], Any]) -> None:
    """One tracking call into the active run: retried, and a warning (once; later calls of
    the run are skipped) rather than an error when the store stays unreachable."""
    import mlflow

    if not _tracking_ok() or mlflow.active_run() is None:
        return
    ok, _ = _retry(what, call)
    if not ok:
        _tracking_failed.value = True


def _log_to(run_id: str, what: str, call: Callable[[], Any]) -> None:
    """A tracking call into a run that is not the active one (tracked_runs), retried."""
    if _tracking_ok() and run_id is not None:
        _retry(what, call)


def log_metrics(
    metrics: Mapping[str, Any], step: int | None = None, run_id: str | None = None
) -> None:
    """Log the finite numbers of `metrics` to the active run, or to run_id (None, NaN and
    text skipped)."""
    import mlflow

    values = {k: float(v) for k, v in metrics.items() if _finite(v)}
    if run_id is None:
        active = mlflow.active_run()
        values = _with_headline(active.info.run_id if active else None, values)
        _log("log metrics", lambda: mlflow.log_metrics(values, step=step))
        return
    values = _with_headline(run_id, values)
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    now = int(time.time() * 1000)
    batch = [Metric(k, v, now, step or 0) for k, v in values.items()]
    _log_to(run_id, "log metrics", lambda: MlflowClient().log_batch(run_id, metrics=batch))


def log_params(values: Mapping[str, Any], run_id: str | None = None) -> None:
    import mlflow

    if run_id is None:
        _log("log params", lambda: mlflow.log_params(dict(values)))
        return
    from mlflow.entities import Param

    params_ = [Param(k, str(v)) for k, v in values.items()]
    _log_to(run_id, "log params",
            lambda: mlflow.tracking.MlflowClient().log_batch(run_id, params=params_))  # fmt: skip


def log_dict(obj: Any, name: str, run_id: str | None = None) -> None:
    import mlflow

    if run_id is None:
        _log(f"log {name}", lambda: mlflow.log_dict(obj, name))
    else:
        _log_to(run_id, f"log {name}",
                lambda: mlflow.tracking.MlflowClient().log_dict(run_id, obj, name))  # fmt: skip


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
    _log("tag checkpoint", lambda: mlflow.set_tags({"checkpoint": shown,
                                                     "checkpoint_bytes": str(size)}))  # fmt: skip
    if size <= settings().max_checkpoint_mb * 2**20:
        _log(f"log {shown}", lambda: mlflow.log_artifact(str(path), artifact_path="checkpoints"))


def log_file(path: str | os.PathLike[str], artifact_path: str | None = None) -> None:
    """Copy a file (a report, a metrics file) into the active run's artifacts."""
    import mlflow

    _log(
        f"log artifact {path}", lambda: mlflow.log_artifact(str(path), artifact_path=artifact_path)
    )


# --------------------------------------------------------------------------- gathering stores

COPIED_FROM = "corefrepro.copied_from"  # tag of a finished copy: the source run's id
# tag of a copy under way (written first): a copy holding it but not COPIED_FROM was cut short
# (killed mid-copy) and is replaced by the next copy (issue #59 row 1)
COPYING_FROM = "corefrepro.copying_from"
METRICS_PER_BATCH = 1000  # MLflow's log_batch limits (metrics; params below)
PARAMS_PER_BATCH = 100


class StoreError(CorefreproError):
    """A store copy-runs cannot read (not an MLflow store, corrupt, unreachable): one line."""


@dataclass
class CopyReport:
    """What copy_runs did with a source store's runs."""

    copied: int = 0
    already: int = 0  # copied before (or the source is the destination)
    running: int = 0  # not finished: left for a later copy, so that no partial copy sticks
    replaced: int = 0  # partial copies of an interrupted copy-runs, deleted and copied again


def source_uri(source: str) -> str:
    """A store given as a tracking URI, or as the path of an mlflow.db (a lane's workspace
    folder holding one is enough)."""
    if "://" in source:
        return source
    path = Path(source).expanduser().resolve()
    if path.is_dir():
        path = path / "mlflow.db"
    if not path.is_file():
        raise FileNotFoundError(f"{source}: no MLflow store there (a tracking URI, an "
                                "mlflow.db, or a folder holding one)")  # fmt: skip
    return f"sqlite:///{path}"


# tables every MLflow store has, whatever its schema version
STORE_TABLES = {"experiments", "runs", "metrics", "alembic_version"}


@contextlib.contextmanager
def _read_only_source(uri: str) -> Iterator[str]:
    """The URI copy_runs reads `uri` through, the source never written: MLflow's client
    creates and migrates a store it opens (a zero-byte mlflow.db became a 1 MB empty store),
    so a sqlite source is opened read-only (sqlite's mode=ro), checked to be a store, and read
    from a snapshot taken with sqlite's backup API; a server is checked to answer first (the
    stages' check_server: one line in seconds instead of minutes of retries)."""
    import sqlite3
    import tempfile

    prefix = "sqlite:///"
    if not uri.startswith(prefix):
        try:
            check_server(uri)
        except ServerUnreachable as exc:
            raise StoreError(str(exc)) from None
        yield uri
        return
    path = uri[len(prefix) :]
    try:
        con = sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot be opened read-only ({first_line(exc)})") from None
    with contextlib.closing(con), tempfile.TemporaryDirectory(prefix="copy-runs-") as tmp:
        try:
            tables = {
                r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if not tables >= STORE_TABLES:
                size = Path(path).stat().st_size
                raise StoreError(f"{path}: not an MLflow store ({size} bytes, no "
                                 f"{', '.join(sorted(STORE_TABLES - tables))} table); "
                                 "nothing copied, the file is left as it was")  # fmt: skip
            snapshot = Path(tmp) / "mlflow.db"
            with contextlib.closing(sqlite3.connect(snapshot)) as copy:
                con.backup(copy)
        except sqlite3.DatabaseError as exc:  # "file is not a database", "malformed"
            raise StoreError(f"{path}: not a readable MLflow store ({first_line(exc)}); "
                             "nothing copied, the file is left as it was") from None  # fmt: skip
        yield f"{prefix}{snapshot}"


def copy_runs(source: str) -> CopyReport:
    """Copy every finished run of the store `source` into the project's store (tracking_uri()),
    experiment by experiment under the same names: tags, parameters, whole metric histories
    (steps and timestamps), input datasets, artifacts, start and end time and status.

    For runs made in side-by-side workspaces (training lanes, a second machine) that each
    logged to their own mlflow.db. mlflow-export-import 1.2.0, the ecosystem's tool for this,
    fails on MLflow 3.17's stores (its import creates the experiment twice). A copy is tagged
    COPIED_FROM with the source run's id once its metrics, artifacts and status are in, so
    copying again adds only the new runs, and replaces a copy an interrupted copy-runs left
    half done (tagged COPYING_FROM only). The source is only read (_read_only_source).
    """
    from mlflow.tracking import MlflowClient

    report = CopyReport()
    with _read_only_source(source_uri(source)) as uri:
        source_client = MlflowClient(tracking_uri=uri)
        for experiment in source_client.search_experiments():
            runs = _all_runs(source_client, experiment.experiment_id)
            if not runs:
                continue
            dest_experiment = _experiment(experiment.name)
            dest = MlflowClient(tracking_uri=tracking_uri())
            there = _all_runs(dest, dest_experiment)
            present = {r.data.tags.get(COPIED_FROM) for r in there} | {r.info.run_id for r in there}
            partial = {}
            for r in there:
                if COPYING_FROM in r.data.tags and COPIED_FROM not in r.data.tags:
                    partial.setdefault(r.data.tags[COPYING_FROM], []).append(r.info.run_id)
            for run in runs:
                if run.info.status == "RUNNING":
                    report.running += 1
                elif run.info.run_id in present:
                    report.already += 1
                else:
                    for stale in partial.get(run.info.run_id, []):
                        dest.delete_run(stale)
                        report.replaced += 1
                    _copy_run(source_client, dest, run, dest_experiment)
                    report.copied += 1
    return report


def _all_runs(client: Any, experiment_id: str) -> list[Any]:
    """Every run of an experiment, deleted ones aside, oldest first (search_runs pages)."""
    runs, token = [], None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token,
                                  order_by=["attributes.start_time ASC"])  # fmt: skip
        runs.extend(page)
        token = page.token
        if not token:
            return runs


def _copy_run(source: Any, dest: Any, run: Any, experiment_id: str) -> None:
    import tempfile

    from mlflow.entities import Param

    info, data = run.info, run.data
    tags = {k: v for k, v in data.tags.items() if k != COPIED_FROM}
    tags[COPYING_FROM] = info.run_id
    new = dest.create_run(experiment_id, start_time=info.start_time, tags=tags,
                          run_name=info.run_name).info.run_id  # fmt: skip
    params = [Param(k, v) for k, v in data.params.items()]
    for i in range(0, len(params), PARAMS_PER_BATCH):
        dest.log_batch(new, params=params[i : i + PARAMS_PER_BATCH])
    history = [m for key in data.metrics for m in source.get_metric_history(info.run_id, key)]
    for i in range(0, len(history), METRICS_PER_BATCH):
        dest.log_batch(new, metrics=history[i : i + METRICS_PER_BATCH])
    if run.inputs and run.inputs.dataset_inputs:
        dest.log_inputs(new, datasets=run.inputs.dataset_inputs)
    if source.list_artifacts(info.run_id):
        with tempfile.TemporaryDirectory() as tmp:
            local = source.download_artifacts(info.run_id, "", tmp)
            dest.log_artifacts(new, local)
    dest.set_terminated(new, status=info.status, end_time=info.end_time)
    dest.set_tag(new, COPIED_FROM, info.run_id)  # last: the copy is whole


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tasks.core.tracking",
        description="Copy the finished runs of other MLflow stores (training lanes' mlflow.db) "
        "into this project's store (tracking.uri, or MLFLOW_TRACKING_URI); again later, it "
        "copies only the runs added since.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    copy = sub.add_parser("copy-runs", help="copy the runs of one or more stores here")
    copy.add_argument("sources", nargs="+", help="a tracking URI, an mlflow.db, or its folder")
    sub.add_parser("relocate", help="point this checkout's mlflow.db at its own mlartifacts/ "
                   "(after copying or moving the checkout)")  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.command == "relocate":
        try:
            moved = relocate()
        except StoreError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if not moved.experiments:
            log.info("%s: every experiment keeps its artifacts under %s already",
                     tracking_uri(), artifact_root())  # fmt: skip
        else:
            log.info("%s: %d experiments and %d runs now keep their artifacts under %s "
                     "(were under %s)", tracking_uri(), moved.experiments, moved.runs,
                     artifact_root(), ", ".join(moved.old_roots))  # fmt: skip
        return 0
    for source in args.sources:
        try:
            report = copy_runs(source)
        except (FileNotFoundError, CorefreproError, ServerUnreachable) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except Exception as exc:  # noqa: BLE001 - the destination store failing: one line
            print(f"error: copy-runs {source} -> {tracking_uri()}: {type(exc).__name__}: "
                  f"{first_line(exc)}", file=sys.stderr)  # fmt: skip
            return 2
        replaced = f", {report.replaced} partial copies replaced" if report.replaced else ""
        log.info("%s -> %s: %d runs copied, %d there already, %d not finished (RUNNING: "
                 "copied once they end)%s",
                 source, tracking_uri(), report.copied, report.already, report.running,
                 replaced)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
