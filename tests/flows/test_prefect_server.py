"""A real Prefect server: its API and UI answer, and stage flows run and retry under it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta

import pytest

from tests.conftest import (
    REPO_ROOT,
    background,
    deployment_runs,
    http,
    once_cron,
    orchestrated_copy,
)

pytestmark = pytest.mark.slow


def test_api_and_ui_are_served(prefect_server):
    base, _ = prefect_server
    status, body = http(f"{base}/api/health")
    assert status == 200 and body.strip() == b"true"
    status, body = http(f"{base}/")
    assert status == 200 and b"<html" in body.lower() and b"prefect" in body.lower()
    status, body = http(f"{base}/api/admin/version")
    assert status == 200 and json.loads(body).startswith("3.")


PROBE = textwrap.dedent(
    """
    import json, logging, sys
    from flows.runtime import flow, orchestrated, task
    attempts = []

    @task(name="flaky", retries=2, retry_delay_seconds=0)
    def flaky(x):
        attempts.append(x)
        if len(attempts) < 2:
            raise RuntimeError("transient")
        return x * 2

    @task(name="double")
    def double(x):
        logging.getLogger("corefrepro.probe").info("doubled %d", x)  # in a pool thread
        return 2 * x

    @flow(name="probe-flow")
    def probe(n):
        return flaky(1) + sum(double.map_kwargs([{"x": i} for i in range(n)], max_workers=2))

    print(json.dumps({"result": probe(3), "orchestrated": orchestrated(), "attempts": len(attempts)}))
    """
)


def _run_under_server(code: str, prefect_server, timeout: int = 180):
    """Run *code* in a fresh interpreter pointed at the test server (auto orchestration)."""
    base, home = prefect_server
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": f"{base}/api",
        "COREFREPRO_ORCHESTRATION": "auto",
    }
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_stage_flow_runs_with_retries_under_the_server(prefect_server):
    """Prefect wraps the stage whole (docs/operations.md "What Prefect wraps"): one flow run
    named as the stage item, no task runs inside it, the steps retried and mapped as without a
    server, and the log lines of steps on the threads runner in the run's log."""
    base, _ = prefect_server
    proc = _run_under_server(PROBE, prefect_server)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"result": 2 + 6, "orchestrated": True, "attempts": 2}
    assert "without a flow run id" not in proc.stderr
    status, body = http(
        f"{base}/api/flow_runs/filter", {"flows": {"name": {"any_": ["probe-flow"]}}, "limit": 5}
    )
    runs = json.loads(body)
    assert status == 200 and runs and runs[0]["state_type"] == "COMPLETED"
    assert runs[0]["name"] == "probe-flow"
    status, body = http(
        f"{base}/api/task_runs/filter",
        {"flow_runs": {"id": {"any_": [runs[0]["id"]]}}, "limit": 20},
    )
    assert status == 200 and json.loads(body) == []
    messages: list[str] = []
    for _ in range(30):  # the client ships its log lines in batches
        status, body = http(
            f"{base}/api/logs/filter", {"logs": {"flow_run_id": {"any_": [runs[0]["id"]]}}}
        )
        messages = [entry["message"] for entry in json.loads(body)]
        if all(f"doubled {i}" in messages for i in range(3)):
            break
        time.sleep(1)
    assert all(f"doubled {i}" in messages for i in range(3)), messages


def test_local_mode_without_server_needs_no_prefect(tmp_path):
    code = PROBE + "\nprint(json.dumps({'prefect_imported': 'prefect' in sys.modules}))\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_HOME"] = str(tmp_path)  # no profile with an API URL
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, second = (json.loads(line) for line in proc.stdout.strip().splitlines()[-2:])
    assert first == {"result": 8, "orchestrated": False, "attempts": 2}
    assert second == {"prefect_imported": False}


DASK_PROBE = textwrap.dedent(
    """
    import json, os, pathlib, sys, tempfile
    from flows.runtime import Runner, flow, task
    from tasks.core.fetch import sha256_of

    tmp = pathlib.Path(tempfile.mkdtemp())
    paths = []
    for i in range(4):
        paths.append(tmp / f"f{i}")
        paths[-1].write_bytes(bytes([i]) * (i + 1))
    hashed = task(sha256_of, name="hash-on-dask")

    @flow(name="dask-probe", runner=Runner("dask", 2))
    def probe():
        return hashed.map_kwargs([{"path": str(p)} for p in paths])

    print(json.dumps(probe()))
    """
)


def test_mapped_tasks_run_on_dask_under_the_server(prefect_server):
    import hashlib

    base, _ = prefect_server
    proc = _run_under_server(DASK_PROBE, prefect_server, timeout=300)
    digests = json.loads(proc.stdout.strip().splitlines()[-1])
    assert digests == [hashlib.sha256(bytes([i]) * (i + 1)).hexdigest() for i in range(4)]
    status, body = http(
        f"{base}/api/flow_runs/filter", {"flows": {"name": {"any_": ["dask-probe"]}}}
    )
    assert json.loads(body)[0]["state_type"] == "COMPLETED"


def test_reproduce_cron_schedule_fires_and_serve_runs_it(prefect_server, tmp_path):
    """docs/operations.md's `flows.reproduce --serve --cron`: the server's scheduler creates the run (with
    sqlalchemy 2.1 it failed every loop: "Can't evaluate bulk DML statement") and the serve
    process runs it, one cheap stage in a copy of the repository, to COMPLETED."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    base, home = prefect_server
    repo, env = orchestrated_copy(prefect_server, tmp_path, PREFECT_RUNNER_POLL_FREQUENCY="2")
    fire = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=30)
    log = tmp_path / "serve.log"
    serve_args = [sys.executable, "-m", "flows.reproduce", "download@synthetic"]
    with (
        background(
            serve_args + ["--serve", "--cron", once_cron(fire)], env, log, cwd=repo
        ) as serve,
        temporary_settings({PREFECT_API_URL: f"{base}/api"}),
        get_client(sync_client=True) as client,
    ):
        runs = deployment_runs(
            client, "reproduce/corefrepro-reproduce", 30 + 60, lambda: serve.poll() is None
        )
    tail = log.read_text(errors="replace")[-3000:]
    assert runs, f"no scheduled run was created:\n{tail}"
    first = min(runs, key=lambda r: r.expected_start_time)
    assert first.auto_scheduled and first.expected_start_time == fire
    assert first.state.is_completed(), f"{first.state}:\n{tail}"
    assert (repo / "data" / "raw" / "synthetic").is_dir()  # the stage ran in the copy
