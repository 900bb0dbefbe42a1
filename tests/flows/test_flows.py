"""Stage flows in-process: settings, failure modes, scheduling."""

from __future__ import annotations

import pytest

import flows.download as download_flow
from tasks.core import layout
from tasks.core.errors import MissingSourceError
from tasks.corpora import ingest


def test_download_without_network_or_mirror_writes_nothing(tmp_path, monkeypatch):
    settings = {"network": False, "mirror": "", "cache_dir": str(tmp_path / "cache"), "babi": {}}
    monkeypatch.setattr(ingest, "params", lambda section=None: settings)
    monkeypatch.setattr(download_flow, "mirror_setting", lambda: None)
    monkeypatch.setattr(layout, "raw_dir", lambda corpus: tmp_path / "raw" / corpus)
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr(download_flow.fetch_file, "retries", 0)
    with pytest.raises(MissingSourceError) as err:
        download_flow.download("babi")
    message = str(err.value)
    assert (
        "babi: missing" in message
        and "download.mirror" in message
        and "network disabled" in message
    )
    assert not (tmp_path / "raw").exists() or list((tmp_path / "raw").iterdir()) == []


def test_reproduce_can_be_deployed_on_a_cron_schedule():
    from flows.reproduce import reproduce

    deployment = reproduce.deployed.to_deployment(name="nightly", cron="0 3 * * *")
    assert deployment.name == "nightly"
    assert [s.schedule.cron for s in deployment.schedules] == ["0 3 * * *"]


def test_prefect_yaml_deploys_every_stage_module():
    """The worker test (slow, CI) deploys prefect.yaml; this catches a new stage module
    without a deployment in the default run, and an entrypoint that does not import."""
    import importlib

    import yaml

    from tasks.core.config import REPO_ROOT

    deployments = yaml.safe_load((REPO_ROOT / "prefect.yaml").read_text())["deployments"]
    by_name = {d["name"]: d["entrypoint"] for d in deployments}
    stages = {p.stem for p in (REPO_ROOT / "flows").glob("*.py")} - {"__init__", "runtime"}
    assert stages - set(by_name) == set()
    for name, entrypoint in by_name.items():
        module, _, attribute = entrypoint.partition(":")
        stage_flow, _, deployed = attribute.partition(".")
        assert module.startswith("flows.") and deployed == "deployed", entrypoint
        assert hasattr(getattr(importlib.import_module(module), stage_flow), "deployed"), name


def test_process_runner_maps_in_order_with_progress(tmp_path, monkeypatch):
    """Local mode with Runner("processes", 2): spawned workers, results in input order."""
    import hashlib

    from flows.runtime import Runner, flow, task
    from tasks.core.fetch import sha256_of

    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    paths = _small_files(tmp_path, 4)
    hashed = task(sha256_of, name="hash")
    seen: list[int] = []

    @flow(name="hash-all", runner=Runner("processes", 2))
    def hash_all():
        return hashed.map_kwargs([{"path": p} for p in paths], on_done=lambda i, _: seen.append(i))

    assert hash_all() == [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]
    assert sorted(seen) == [0, 1, 2, 3]


def _small_files(folder, n: int) -> list:
    """n files of distinct bytes, f0..f{n-1}: work for the mapped hash tests."""
    paths = [folder / f"f{i}" for i in range(n)]
    for i, path in enumerate(paths):
        path.write_bytes(bytes([i]) * (i + 1))
    return paths


def test_dask_runner_without_an_address_maps_on_a_local_cluster(tmp_path, monkeypatch):
    """executor dask with no scheduler address: a LocalCluster of the runner's workers, with or
    without a Prefect server (one way to run a stage); results in input order."""
    import hashlib
    import os

    pytest.importorskip("distributed")
    from flows.runtime import Runner, flow, task
    from tasks.core.fetch import sha256_of

    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    paths = _small_files(tmp_path, 3)
    hashed = task(sha256_of, name="hash")
    pid = task(os.getpid, name="pid")

    @flow(name="hash-on-dask", runner=Runner("dask", 2))
    def hash_all():
        return hashed.map_kwargs([{"path": p} for p in paths]), pid.map_kwargs([{}, {}])

    digests, pids = hash_all()
    assert digests == [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]
    assert os.getpid() not in pids  # the cluster's worker processes ran them


def test_a_threaded_step_runs_in_the_stage_s_context(monkeypatch):
    """A step on the threads runner sees the context its stage runs in: under Prefect that is
    the flow run's, so the step's log lines reach the stage's run (not a warning that they have
    no run)."""
    import contextvars

    from flows.runtime import Runner, flow, task

    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    current = contextvars.ContextVar("current", default="none")

    @task(name="read-context")
    def read(i: int) -> str:
        return f"{current.get()}{i}"

    @flow(name="context-probe", runner=Runner("threads", 2))
    def probe() -> list[str]:
        current.set("stage")
        return read.map_kwargs([{"i": i} for i in range(3)])

    assert probe() == ["stage0", "stage1", "stage2"]


def test_a_retry_line_names_the_call(caplog, monkeypatch):
    from flows.runtime import task

    attempts = []

    @task(name="flaky", task_run_name="flaky@{corpus}/{n}", retries=1)
    def flaky(corpus: str, n: int) -> int:
        attempts.append(n)
        if len(attempts) == 1:
            raise OSError("connection reset")
        return n

    with caplog.at_level("WARNING", "corefrepro"):
        assert flaky("babi", n=3) == 3
    assert [r.getMessage() for r in caplog.records] == [
        "flaky@babi/3 failed (OSError: connection reset); retry 1/1 in 0s"
    ]


def test_runner_rejects_unknown_kind():
    from flows.runtime import Runner

    with pytest.raises(ValueError, match="threads, processes or dask"):
        Runner("gpu", 2)


def test_every_stage_task_run_is_named_from_its_arguments():
    """Each step's label is a template over the call's arguments (annotate@<run>/shard<k>,
    train_coref@<encoder>/seed<k>, reproduce's task run: the DVC stage): every field of every
    template is a parameter of the step, else naming a retry (or Prefect, reproduce's task
    run) fails."""
    import importlib
    import inspect
    import string

    from flows.runtime import StageTask
    from tests.conftest import REPO_ROOT

    tasks = {}
    for path in sorted((REPO_ROOT / "flows").glob("*.py")):
        module = importlib.import_module(f"flows.{path.stem}")
        for attr, value in vars(module).items():
            if isinstance(value, StageTask):
                tasks[f"{path.stem}.{attr}"] = value
    assert len(tasks) >= 14 and all(t.task_run_name for t in tasks.values()), tasks
    for where, stage_task in tasks.items():
        template = stage_task.task_run_name
        fields = {f[1].split(".")[0] for f in string.Formatter().parse(template) if f[1]}
        params = set(inspect.signature(stage_task.fn).parameters)
        assert fields <= params, (where, template, fields - params)


def test_stage_flow_runs_are_named_as_their_dvc_stage(monkeypatch):
    from flows.annotate import annotate
    from flows.reproduce import reproduce

    monkeypatch.delenv("DVC_STAGE", raising=False)
    assert annotate.run_name("gum-gold") == "annotate@gum-gold"
    assert reproduce.run_name(None, False, 2) == "reproduce"
    assert reproduce.run_name(["a@x", "b@y"]) == "reproduce@a@x,b@y"
    monkeypatch.setenv("DVC_STAGE", "annotate_model@gum-model")  # set by dvc for each stage cmd
    assert annotate.run_name("gum-model") == "annotate_model@gum-model"


def test_forwarded_stage_lines_keep_their_level_and_the_error_line_is_found():
    import logging

    from flows.reproduce import _failure_reason, _level

    lines = [
        "Running stage 'download@synthetic':",
        "ERROR prefect.flow_runs: Finished in state Failed",
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "tasks.core.errors.CorefreproError: bad",
        "WARNING corefrepro.download: slow mirror",
        "error: params.yaml download.synthetic: bad",
        "ERROR: failed to reproduce 'download@synthetic'",
    ]
    levels, level = [], logging.INFO
    for line in lines:
        level = _level(line, level)
        levels.append(logging.getLevelName(level))
    assert levels == ["INFO"] + ["ERROR"] * 4 + ["WARNING", "ERROR", "ERROR"]
    assert _failure_reason(lines) == "error: params.yaml download.synthetic: bad"
    assert _failure_reason(lines[-1:]) == lines[-1]


def test_train_mage_seed_task_runs_are_named_as_their_mlflow_runs():
    """train_mage's task-run name, filled with the task's parameters as Prefect does, is the
    MLflow run's name (tasks/core/tracking.py: <stage>@<item>/seed<k>)."""
    import inspect

    from flows.train_mage import train_seed_task, variant
    from tasks.core.tracking import _run_name_tags

    params = inspect.signature(train_seed_task.fn).bind(
        "bigru", "syn2", 3, None, None, "sha"
    ).arguments  # fmt: skip
    expected, _ = _run_name_tags("train_mage", variant("bigru", "syn2"), "synthetic", 3, {})
    assert train_seed_task.task_run_name.format(**params) == expected


@pytest.mark.parametrize(
    ("value", "expected"), [("", False), ("  ", False), ("local", False), ("Prefect", True)]
)
def test_the_orchestration_switch_reads_empty_as_auto(value, expected, monkeypatch):
    """COREFREPRO_ORCHESTRATION= (set but empty, as `env VAR= cmd` or a CI matrix leaves it) is
    auto: with no Prefect server configured, plain Python."""
    from flows import runtime

    monkeypatch.setenv(runtime.MODE_ENV, value)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setattr(runtime, "_profile_has_api_url", lambda: False)
    runtime.orchestrated.cache_clear()
    try:
        assert runtime.orchestrated() is expected
        monkeypatch.setenv(runtime.MODE_ENV, "sometimes")
        runtime.orchestrated.cache_clear()
        with pytest.raises(SystemExit, match="expected auto, prefect or local"):
            runtime.orchestrated()
    finally:
        runtime.orchestrated.cache_clear()


def test_the_projects_prefect_settings_turn_analytics_off():
    """Issue #59 row 12: prefect.toml at the root, read by Prefect started there."""
    import subprocess
    import sys

    from tasks.core.config import REPO_ROOT

    code = "from prefect.settings import get_current_settings as g; print(g().server.analytics_enabled)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    assert out.strip() == "False"
