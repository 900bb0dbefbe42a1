"""Shared fixtures. Real-data tests read the mirror through the project's mirror setting."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

# the numeric path every stage runs on (tasks/core/numerics.py), set before torch/numpy load,
# so what a test computes in this process matches what a stage computes: portable (the
# committed lock's), whatever params.yaml's numerics says after an experiment
from tasks.core.numerics import PINNED, pin  # noqa: E402

pin(params_file=None)

REPO_ROOT = Path(__file__).resolve().parents[1]
# what another host's shell or CPU could pick: each library's oldest kernels, more threads.
# A stage process must compute the same bits under it (tasks/core/numerics.py pins them).
OLDEST_KERNELS = {
    "ATEN_CPU_CAPABILITY": "default",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "MKL_CBWR": "AUTO",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
    "OPENBLAS_CORETYPE": "Prescott",
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    "NUMBA_CPU_NAME": "generic",
    "OMP_NUM_THREADS": "3",
}
DEFAULT_MIRROR = REPO_ROOT.parent / "shared" / "data"


def mirror_dir() -> Path | None:
    """COREFREPRO_MIRROR, else the mirror beside the checkout, read as the stages read it
    (tasks/core/config.py resolve_mirror); a directory, or None."""
    from tasks.core.config import MIRROR_ENV, resolve_mirror

    value = resolve_mirror(os.environ.get(MIRROR_ENV) or DEFAULT_MIRROR)
    return Path(value) if value and "://" not in value and Path(value).is_dir() else None


@pytest.fixture
def mirror() -> Path:
    """The real-corpus mirror; tests using it skip (with the reason) where it is absent."""
    path = mirror_dir()
    if path is None:
        pytest.skip(
            f"real-corpus mirror not found (set COREFREPRO_MIRROR or provide {DEFAULT_MIRROR})"
        )
    return path


@pytest.fixture(scope="session")
def mirror_session() -> Path:
    """Session-scoped `mirror` for module-scoped fixtures that parse a whole corpus once."""
    path = mirror_dir()
    if path is None:
        pytest.skip(
            f"real-corpus mirror not found (set COREFREPRO_MIRROR or provide {DEFAULT_MIRROR})"
        )
    return path


def run_ok(
    args: list[str], cwd: Path, env: dict[str, str], timeout: int = 900, stderr_too: bool = False
) -> str:
    """Run a command; fail the test with its output tail if it exits non-zero. Returns its
    stdout, or with *stderr_too* both streams in order (a DVC stage's logs go to stderr)."""
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, text=True,
                          stderr=subprocess.STDOUT if stderr_too else subprocess.PIPE,
                          timeout=timeout)  # fmt: skip
    assert proc.returncode == 0, (
        f"{' '.join(args)} failed:\n{proc.stdout[-6000:]}\n{(proc.stderr or '')[-3000:]}"
    )
    return proc.stdout


def clean_env() -> dict[str, str]:
    """The environment a fresh clone's commands run in: none of this process's tracking,
    orchestration or numerics settings, the oldest kernels pinned."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PREFECT_API", "MLFLOW_", "COREFREPRO_", "DVC_"))
        and k not in (*PINNED, "NUMBA_CACHE_DIR")  # this process's own pin: the clone's
        # stages must set it themselves
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env["COREFREPRO_ORCHESTRATION"] = "local"
    env.update(OLDEST_KERNELS)  # a clone must reproduce dvc.lock whatever the shell sets
    return env


def copy_checkout(dest: Path) -> dict[str, str]:
    """Copy the files a fresh clone would have into *dest*, commit them; return a clean env."""
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        if (REPO_ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, dest / name)
    env = clean_env()
    for args in (
        ["git", "init", "-q"],
        ["git", "add", "-A"],
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init"],
    ):
        run_ok(args, dest, env)
    return env


def http(url: str, data: dict | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url,
        data=json.dumps(data).encode() if data is not None else None,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, resp.read()


def free_port() -> int:
    """A TCP port free on the loopback interface now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def background(
    args: list[str], env: dict[str, str], log: Path, cwd: Path | None = None
) -> Iterator[subprocess.Popen]:
    """A process started with `args` (in `cwd`, else beside `log`), its output in `log`;
    stopped with its whole process group afterwards (servers and workers start processes)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args, env=env, cwd=cwd or log.parent, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextlib.contextmanager
def serving(
    args: list[str], env: dict[str, str], health: str, log: Path, timeout: float = 180
) -> Iterator[subprocess.Popen]:
    """A server process (background), once `health` answers 200."""
    with background(args, env, log) as proc:
        deadline = time.time() + timeout
        while True:
            try:
                if http(health)[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail(
                    f"{' '.join(args[2:4])} did not start:\n{log.read_text(errors='replace')[-3000:]}"
                )
            time.sleep(0.5)
        yield proc


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A real `prefect server start` on a free loopback port: (base URL, PREFECT_HOME)."""
    home = tmp_path_factory.mktemp("prefect-home")
    port = free_port()
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    env.pop("PREFECT_API_URL", None)
    args = [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
            "--port", str(port)]  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    with serving(args, env, f"{base}/api/health", home / "server.log", timeout=120):
        yield base, home


def once_cron(at: datetime) -> str:
    """A cron firing once a year, at *at* (UTC) to the second: croniter's sixth field is seconds.

    Why seconds: a five-field cron fires on a minute boundary, up to 60 s away.
    """
    return f"{at.minute} {at.hour} {at.day} {at.month} * {at.second}"


def deployment_runs(
    client, deployment: str, timeout: float, running: Callable[[], bool] = lambda: True
) -> list:
    """The flow runs of `deployment` ("flow/name") once one of them is final, or what there is
    after `timeout` seconds or once `running()` is False (what runs them has exited)."""
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
    from prefect.exceptions import ObjectNotFound

    runs: list = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and running():
        try:
            found = client.read_deployment_by_name(deployment)
        except ObjectNotFound:
            found = None
        if found is not None:
            runs = client.read_flow_runs(
                deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[found.id]))
            )
            if any(r.state and r.state.is_final() for r in runs):
                break
        time.sleep(1)
    return runs


def task_runs(client, flow_run_id) -> list:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    return client.read_task_runs(
        flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
    )


def run_logs(client, flow_run_id) -> list[tuple[int, str]]:
    """(level, message) of a flow run's log lines, its task runs' included."""
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    found, page = [], 200
    while True:  # every page: the API returns at most `limit` lines a call
        logs = client.read_logs(
            log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])),
            limit=page, offset=len(found),
        )  # fmt: skip
        found += [(entry.level, entry.message) for entry in logs]
        if len(logs) < page:
            return found


def orchestrated_copy(prefect_server, tmp_path: Path, **extra: str) -> tuple[Path, dict[str, str]]:
    """A copy of the checkout (copy_checkout) whose stages talk to the test's Prefect server,
    with its own MLflow store; *extra* adds environment variables (poll intervals, ...)."""
    base, home = prefect_server
    repo = tmp_path / "repo"
    env = copy_checkout(repo)
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_API_URL=f"{base}/api",
        COREFREPRO_ORCHESTRATION="auto",
        MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlflow.db'}",
        **extra,
    )
    return repo, env


@pytest.fixture
def mlflow_server(tmp_path):
    """A real `mlflow server` on a free loopback port, as a team would run it (docs/operations.md "MLflow"):
    a sqlite backend store and artifacts served by the server. (base URL, its folder: mlflow.db
    and artifacts/)."""
    folder = tmp_path / "mlflow-server"
    folder.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"  # GenAI jobs: 7 more processes, unused
    args = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port),
            "--workers", "2", "--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}",
            "--serve-artifacts", "--artifacts-destination", str(folder / "artifacts")]  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    with serving(args, env, f"{base}/health", folder / "server.log"):
        yield base, folder


@pytest.fixture(scope="module")
def one_torch_thread():
    """torch on one intra-op thread for a test module (use via pytest.mark.usefixtures)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# Modules whose tests work in order on one module fixture they change (a reproduced checkout,
# a scratch cluster): under `pytest -n 2 --dist loadgroup` (.ci/run) each runs on one worker.
ONE_WORKER_MODULES = ("tests/flows/test_pipeline.py", "tests/annotation/test_dask_cluster.py")


class ModuleGroups(LoadScopeScheduling):
    """xdist's scope scheduling with one unit per module of ONE_WORKER_MODULES and per test
    elsewhere."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return module if module in ONE_WORKER_MODULES else nodeid


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`: ModuleGroups. pytest-xdist's own loadgroup finds its groups
    (xdist_group marks) by rewriting node ids, which pytest 9.2 no longer allows: it scattered
    every group (pytest-dev/pytest-xdist#1386)."""
    return ModuleGroups(config, log) if config.getvalue("dist") == "loadgroup" else None


def _left_out(config) -> set[str]:
    """Markers the run leaves out. Benchmarks run only when `-m` names them; slow tests (real
    DVC / Prefect / MLflow round trips, minutes each) run when `-m` names them or when a test
    file or node is named on the command line, so the default `uv run pytest` stays a quick
    loop and CI adds `uv run pytest -m slow` (.ci/run)."""
    expr = config.option.markexpr or ""
    named = any(
        "::" in arg or Path(arg.split("::")[0]).is_file() for arg in config.invocation_params.args
        if not arg.startswith("-")
    )  # fmt: skip
    left = set() if "bench" in expr else {"bench"}
    if "slow" not in expr and not named:
        left.add("slow")
    return left


def pytest_collection_modifyitems(config, items):
    left = _left_out(config)
    out = {item for item in items if any(item.get_closest_marker(m) for m in left)}
    if out:
        config.hook.pytest_deselected(items=[item for item in items if item in out])
        items[:] = [item for item in items if item not in out]


@pytest.fixture(autouse=True, scope="session")
def _write_roots(tmp_path_factory):
    """Tests write their tables and checkpoints under pytest's temporary folders: allow that
    root for writes and for reading checkpoints (the storage layer refuses any target outside
    the repository's data roots, and a checkpoint outside artifacts/, otherwise).
    Session-scoped so that module- and session-scoped fixtures get it too."""
    names = ("COREFREPRO_WRITE_ROOTS", "COREFREPRO_CHECKPOINT_ROOTS")
    old = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ[name] = str(tmp_path_factory.getbasetemp())
    yield
    for name, value in old.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
