"""docs/operations.md "A Prefect work pool": prefect.yaml's deployments on a process work pool, run by a
`prefect worker` in the checkout its COREFREPRO_CHECKOUT names (a copy of the repository), with
a real server: a stage deployment triggered by hand, and the reproduce deployment on a cron."""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import (
    REPO_ROOT,
    background,
    deployment_runs,
    once_cron,
    orchestrated_copy,
    run_logs,
    run_ok,
    task_runs,
)

pytestmark = pytest.mark.slow  # a server, `prefect deploy --all`, a worker, two runs: ~4 min

POOL = "corefrepro"  # prefect.yaml's work pool
STAGE = "download@synthetic"  # the cheapest stage: generates a small corpus


def test_a_worker_runs_stage_and_scheduled_reproduce_deployments(prefect_server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    base, home = prefect_server
    repo, env = orchestrated_copy(prefect_server, tmp_path, PREFECT_WORKER_QUERY_SECONDS="2")
    env["COREFREPRO_CHECKOUT"] = str(repo)
    prefect = [sys.executable, "-m", "prefect"]
    run_ok([*prefect, "work-pool", "create", POOL, "--type", "process"], repo, env, timeout=120)
    run_ok([*prefect, "--no-prompt", "deploy", "--all"], repo, env, timeout=600)
    worker_log = tmp_path / "worker.log"
    worker = [*prefect, "worker", "start", "--pool", POOL]
    # started outside the checkout: the runs find it through COREFREPRO_CHECKOUT
    with (
        background(worker, env, worker_log, cwd=tmp_path),
        temporary_settings({PREFECT_API_URL: f"{base}/api"}),
        get_client(sync_client=True) as client,
    ):
        # every stage module has a deployment, its flow's parameters as the deployment's
        stages = {p.stem for p in (REPO_ROOT / "flows").glob("*.py")} - {"__init__", "runtime"}
        deployed = {d.name: d for d in client.read_deployments()}
        assert stages <= set(deployed)
        assert all(deployed[s].entrypoint.startswith(f"flows.{s}:") for s in stages)
        assert deployed["download"].parameter_openapi_schema["required"] == ["corpus"]
        assert deployed["download"].work_pool_name == POOL

        run_ok([*prefect, "deployment", "run", "download/download", "-p", "corpus=synthetic"],
               repo, env, timeout=120)  # fmt: skip
        (stage_run,) = deployment_runs(client, "download/download", 300)
        tail = worker_log.read_text(errors="replace")[-3000:]
        assert stage_run.state.is_completed(), f"{stage_run.state}:\n{tail}"
        raw = repo / "data" / "raw" / "synthetic"
        by_worker = (raw / "SHA256SUMS").read_text()  # written by the stage over its files
        assert by_worker and stage_run.name == STAGE
        # Prefect wraps the stage whole (no task runs inside), and its log lines reached it
        assert task_runs(client, stage_run.id) == []

        def stage_line_logged() -> bool:
            return any(m.startswith("synthetic: ") and m.endswith(f"files in {raw}")
                       for _, m in run_logs(client, stage_run.id))  # fmt: skip

        deadline = time.monotonic() + 60  # the worker ships its log lines in batches
        while not stage_line_logged() and time.monotonic() < deadline:
            time.sleep(2)
        assert stage_line_logged(), tail

        # docs/operations.md's cron example through the worker: DVC reruns the stage's command
        fire = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=60)
        params = json.dumps({"targets": [STAGE], "force": True})
        run_ok([*prefect, "--no-prompt", "deploy", "--name", "reproduce", "--cron", once_cron(fire),
                "--params", params], repo, env, timeout=300)  # fmt: skip
        runs = deployment_runs(client, "reproduce/reproduce", 60 + 240)
        tail = worker_log.read_text(errors="replace")[-3000:]
        assert runs, f"no scheduled run was created:\n{tail}"
        (scheduled,) = runs
        assert scheduled.auto_scheduled and scheduled.expected_start_time == fire
        assert scheduled.state.is_completed(), f"{scheduled.state}:\n{tail}"
        messages = [m for _, m in run_logs(client, scheduled.id)]
        assert f"Running stage '{STAGE}':" in messages
        assert "> python -m flows.download --corpus synthetic" in messages
    # the stage command wrote what the worker's stage run wrote
    assert (raw / "SHA256SUMS").read_text() == by_worker
