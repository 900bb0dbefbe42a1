"""A real Prefect server: its API and UI answer, and stage flows run and retry under it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import REPO_ROOT, http

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
    import json, sys
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
    base, _ = prefect_server
    proc = _run_under_server(PROBE, prefect_server)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"result": 2 + 6, "orchestrated": True, "attempts": 2}
    status, body = http(
        f"{base}/api/flow_runs/filter", {"flows": {"name": {"any_": ["probe-flow"]}}, "limit": 5}
    )
    runs = json.loads(body)
    assert status == 200 and runs and runs[0]["state_type"] == "COMPLETED"
    status, body = http(
        f"{base}/api/task_runs/filter",
        {"flow_runs": {"id": {"any_": [runs[0]["id"]]}}, "limit": 20},
    )
    tasks = json.loads(body)
    flaky = [t for t in tasks if t["name"].startswith("flaky")]
    assert len(tasks) == 4 and flaky and flaky[0]["run_count"] == 2


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
    assert "Creating a new Dask cluster" in proc.stderr  # prefect-dask ran the tasks
    status, body = http(
        f"{base}/api/flow_runs/filter", {"flows": {"name": {"any_": ["dask-probe"]}}}
    )
    assert json.loads(body)[0]["state_type"] == "COMPLETED"
