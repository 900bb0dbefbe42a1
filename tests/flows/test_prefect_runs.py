"""flows.reproduce under a real Prefect server, read back through the Prefect client: each DVC
stage is a task run named as the stage, the stage's own flow run is its subflow (same name), and
the stage's log lines -- and on failure its error line -- are in the reproduce run's log."""

from __future__ import annotations

import logging
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from tests.conftest import orchestrated_copy, run_logs, run_ok, task_runs

pytestmark = pytest.mark.slow  # a Prefect server, two `dvc repro` of one stage: ~1 min

STAGE = "download@synthetic"  # the cheapest stage: generates a small corpus


def _runs_since(client, since: datetime, flow_name: str):
    from prefect.client.schemas.filters import (
        FlowFilter,
        FlowFilterName,
        FlowRunFilter,
        FlowRunFilterStartTime,
    )
    from prefect.client.schemas.sorting import FlowRunSort

    return client.read_flow_runs(
        flow_filter=FlowFilter(name=FlowFilterName(any_=[flow_name])),
        flow_run_filter=FlowRunFilter(start_time=FlowRunFilterStartTime(after_=since)),
        sort=FlowRunSort.START_TIME_ASC,
    )


def test_reproduce_names_links_and_logs_each_stage(prefect_server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    base, home = prefect_server
    repo, env = orchestrated_copy(prefect_server, tmp_path)
    since = datetime.now(UTC)
    run_ok([sys.executable, "-m", "flows.reproduce", STAGE], repo, env, timeout=300)
    params = repo / "params.yaml"
    text = params.read_text()
    assert "    n_train: 400\n" in text
    params.write_text(text.replace("    n_train: 400\n", "    n_train: many\n"))
    failed = subprocess.run(
        [sys.executable, "-m", "flows.reproduce", STAGE, "--retries", "0"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert failed.returncode != 0
    expected_error = "n_train must be a non-negative integer, got 'many'"

    with temporary_settings({PREFECT_API_URL: f"{base}/api"}), get_client(sync_client=True) as c:
        reproduce_runs = _runs_since(c, since, "reproduce")
        stage_runs = _runs_since(c, since, "download")
        assert [r.state_type.value for r in reproduce_runs] == ["COMPLETED", "FAILED"]
        assert [r.name for r in reproduce_runs] == [f"reproduce@{STAGE}"] * 2
        assert [r.state_type.value for r in stage_runs] == ["COMPLETED", "FAILED"]
        for run, stage_run in zip(reproduce_runs, stage_runs, strict=True):
            (stage_task,) = task_runs(c, run.id)
            # the task run is named as the DVC stage, and the stage's flow run is its subflow
            assert stage_task.name == STAGE and stage_task.state_type == run.state_type
            assert stage_run.name == STAGE and stage_run.parent_task_run_id == stage_task.id
            assert stage_task.flow_run_id == run.id
            # Prefect wraps the stage whole: no task runs inside the stage's flow run
            assert task_runs(c, stage_run.id) == []

        ok_log = run_logs(c, reproduce_runs[0].id)
        messages = [m for _, m in ok_log]
        assert f"$ dvc repro --single-item {STAGE}" in messages
        assert f"Running stage '{STAGE}':" in messages
        assert "> python -m flows.download --corpus synthetic" in messages
        # a line the stage itself logged (corefrepro logger), without its clock
        assert any(m.startswith("INFO corefrepro.download: synthetic:") for m in messages)
        assert not any("httpx" in m for m in messages)

        failed_log = run_logs(c, reproduce_runs[1].id)
        errors = [m for level, m in failed_log if level >= logging.ERROR]
        assert f"error: params.yaml download.synthetic: {expected_error}" in errors
        assert any(
            m.startswith(f"{STAGE} failed (exit ") and m.endswith(expected_error) for m in errors
        )
