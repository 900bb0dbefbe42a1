"""How a stage runs: one way, with Prefect around the whole stage (docs/operations.md
"What Prefect wraps").

Prefect wraps whole DVC stages: a stage item's call is one Prefect flow run named as its DVC
stage (annotate@gum-gold), `flows.reproduce` makes one task run per DVC stage, and prefect.yaml
deploys every stage flow on the work pool. Nothing inside a stage is a Prefect object: a step
(`task`) is a plain call with its retries, and `map_kwargs` fans calls out on the stage's Runner
(threads, spawned processes, or Dask), the same code with or without a Prefect server.

- A Prefect API is configured (PREFECT_API_URL in the environment or the active profile): the
  stage's call is a flow run on it, with the stage's log lines.
- None (the default): the call is plain Python and Prefect is not imported (its ephemeral
  server would cost 6-11 s per stage process on this class of machine).
- COREFREPRO_ORCHESTRATION=prefect|local|auto (default auto) forces one; "prefect" without a
  server uses Prefect's ephemeral server.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import logging
import multiprocessing as mp
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

MODE_ENV = "COREFREPRO_ORCHESTRATION"
# the interface every server the project starts listens on (the Dask scheduler and dashboard)
BIND_HOST_ENV = "COREFREPRO_BIND_HOST"
log = logging.getLogger("corefrepro")


def _profile_has_api_url() -> bool:
    """PREFECT_API_URL set in the active profile (prefect config set ...), read without prefect."""
    home = os.environ.get("PREFECT_HOME", os.path.expanduser("~/.prefect"))
    path = os.environ.get("PREFECT_PROFILES_PATH", os.path.join(home, "profiles.toml"))
    if not os.path.exists(path):
        return False
    import tomllib

    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    active = os.environ.get("PREFECT_PROFILE") or data.get("active", "ephemeral")
    return bool(data.get("profiles", {}).get(active, {}).get("PREFECT_API_URL"))


@functools.cache
def orchestrated() -> bool:
    mode = os.environ.get(MODE_ENV, "").strip().lower() or "auto"  # set but empty: auto
    if mode not in {"auto", "prefect", "local"}:
        raise SystemExit(f"{MODE_ENV}={mode!r}: expected auto, prefect or local")
    if mode != "auto":
        return mode == "prefect"
    return bool(os.environ.get("PREFECT_API_URL")) or _profile_has_api_url()


def setup_logging() -> None:
    """Stage logs go to stderr in local mode; Prefect captures the 'corefrepro' logger too."""
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=logging.INFO,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            datefmt="%H:%M:%S",
            stream=sys.stderr,
        )
    os.environ.setdefault("PREFECT_LOGGING_EXTRA_LOGGERS", "corefrepro")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per Prefect API call
    if not sys.stderr.isatty():
        quiet_library_bars()


def quiet_library_bars() -> None:
    """No library progress bars in a log (`dvc repro > log`, Prefect, CI): Hugging Face's tqdm
    bars are carriage-return lines there. The project's own progress writes log lines
    (tasks/core/progress.py). Set for libraries imported later (and child processes) through
    the environment, for those already imported through their switches."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


def _log_to_run() -> None:
    """The stage's own log lines (the corefrepro loggers) in the flow run's log, in a process
    where Prefect set up its logging first (a worker's engine): PREFECT_LOGGING_EXTRA_LOGGERS
    comes too late there, and Prefect leaves the root logger at WARNING."""
    from prefect.logging.handlers import APILogHandler

    if not any(isinstance(h, APILogHandler) for h in log.handlers):
        log.addHandler(APILogHandler())
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)


class StageTask:
    """One step of a stage: a plain call with retries, labelled in its log lines by
    `task_run_name`, a template over the call's arguments (annotate@{run}/shard{shard})."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        retries: int = 0,
        retry_delay_seconds: float = 0.0,
        task_run_name: str | None = None,
        retry_if: Callable[[BaseException], bool] | None = None,
    ):
        self.fn = fn
        self.name = name or fn.__name__
        self.task_run_name = task_run_name
        self.retries = retries
        self.retry_delay_seconds = retry_delay_seconds
        # which failures a retry may fix (None: all); a checksum mismatch or an absent file
        # will not fix itself, and retrying it only delays the error line
        self.retry_if = retry_if
        functools.update_wrapper(self, fn)

    def label(self, *args: Any, **kwargs: Any) -> str:
        """The call's name: task_run_name filled with its arguments, else the step's name."""
        if not self.task_run_name:
            return self.name
        arguments = inspect.signature(self.fn).bind(*args, **kwargs).arguments
        return self.task_run_name.format(**arguments)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for attempt in range(self.retries + 1):
            try:
                return self.fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - retried as declared, else raised
                if attempt == self.retries or (self.retry_if and not self.retry_if(exc)):
                    raise
                log.warning(
                    "%s failed (%s: %s); retry %d/%d in %.0fs",
                    self.label(*args, **kwargs),
                    type(exc).__name__,
                    exc,
                    attempt + 1,
                    self.retries,
                    self.retry_delay_seconds,
                )
                time.sleep(self.retry_delay_seconds)
        raise AssertionError("unreachable")

    def map_kwargs(
        self,
        calls: Iterable[dict[str, Any]],
        max_workers: int | None = None,
        on_done: Callable[[int, Any], None] | None = None,
        on_abort: Callable[[], None] | None = None,
    ) -> list[Any]:
        """Run one call per kwargs dict on the stage's Runner; results in input order.

        threads: a thread pool (I/O, GIL-releasing work); processes: spawned interpreters
        (CPU-bound Python); dask: the Dask cluster (a LocalCluster of the runner's workers, or
        the scheduler at its address). The first failure ends the map; calls not yet started
        never run, and on_abort() is called first, before the map waits for the calls
        still running: a way to make them stop (threads cannot be killed). on_done(index, result) is called as results arrive (progress reporting).
        """
        calls = list(calls)
        results: list[Any] = [None] * len(calls)
        spec = CURRENT_RUNNER.get()
        if spec.address:
            return self._map_on_dask(spec, calls, results, on_done)
        workers = max_workers or spec.workers
        if workers <= 1 or len(calls) <= 1:  # no pool or cluster to start for one at a time
            for i, kw in enumerate(calls):
                results[i] = self(**kw)
                if on_done:
                    on_done(i, results[i])
            return results
        if spec.kind == "dask":
            return self._map_on_dask(spec, calls, results, on_done, workers)
        if spec.kind == "threads":
            pool: Executor = ThreadPoolExecutor(max_workers=workers)
        else:  # separate interpreters, so CPU-bound Python scales
            jobs = min(workers, len(calls))  # each process's share of the cores: numerics.cores
            pool = ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"),
                                       initializer=_start_worker, initargs=(jobs,))  # fmt: skip
        with pool:
            # a thread runs its call in a copy of this context (under Prefect, its log lines
            # then reach the stage's flow run); a process gets the step pickled
            threads = spec.kind == "threads"
            futures = {(pool.submit(contextvars.copy_context().run, _call, self, kw) if threads
                        else pool.submit(_call, self, kw)): i for i, kw in enumerate(calls)}  # fmt: skip
            try:
                for fut in as_completed(futures):
                    i = futures[fut]
                    results[i] = fut.result()
                    if on_done:
                        on_done(i, results[i])
            except BaseException:
                # fail fast: the first error (or Ctrl-C while waiting) ends the map; calls not
                # yet started never run, running ones are asked to stop first
                if on_abort is not None:
                    on_abort()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
        return results

    def _map_on_dask(
        self,
        spec: Runner,
        calls: list[dict[str, Any]],
        results: list[Any],
        on_done: Callable[[int, Any], None] | None,
        workers: int | None = None,
    ) -> list[Any]:
        """map_kwargs on Dask (the scheduler at spec.address, or a LocalCluster of `workers`).
        A worker that dies takes its running calls with it; the scheduler gives them to
        another worker."""
        from distributed import as_completed as dask_completed

        run_id = uuid.uuid4().hex[:8]
        with spec.dask(workers) as client:
            futures = {
                client.submit(
                    _call,
                    self,
                    kw,
                    key=f"{self.name}-{run_id}-{i}",  # named on the dashboard
                    pure=False,
                ): i
                for i, kw in enumerate(calls)
            }
            for fut in dask_completed(list(futures), loop=client.loop):
                i = futures[fut]
                try:
                    results[i] = fut.result()
                except BaseException:
                    client.cancel(list(futures))  # fail fast, as on the local pools
                    raise
                if on_done:
                    on_done(i, results[i])
        return results


def _start_worker(jobs: int) -> None:
    """A pool process: the stage's log lines, and its share of the cores (`jobs` processes
    run at once: tasks/core/numerics.py cores, what `threads: auto` gives each)."""
    from tasks.core.numerics import JOBS_ENV

    os.environ[JOBS_ENV] = str(jobs)
    setup_logging()


def _call(step: StageTask, kwargs: dict[str, Any]) -> Any:
    """A step's call in a pool or on Dask: its arguments as one dict (Dask's submit keeps
    names such as `workers` and `retries` for itself)."""
    return step(**kwargs)


def _checkout_root() -> str:
    """On a Dask worker: the checkout it imports the project from."""
    from tasks.core.config import REPO_ROOT

    return str(REPO_ROOT)


def _tcp_problem(address: str | None) -> str | None:
    """Why a tcp:// (or schemeless host:port) address is not a Dask scheduler, found within
    DASK_CONNECT_TIMEOUT_S: a refused port or an unknown host at once; a listener that is
    not a scheduler by its first bytes (issue #59 row 8: distributed's own handshake waits
    forever on a silent listener and allocates whatever length a garbage one announces)."""
    import socket

    scheme, _, location = str(address).rpartition("://")
    if scheme not in ("", "tcp"):
        return None  # tls, ucx, inproc: Dask's own connect says
    host, sep, port = location.rpartition(":")
    if not sep or not port.isdigit():
        return "expected tcp://host:port"
    deadline = time.monotonic() + DASK_CONNECT_TIMEOUT_S
    try:
        with socket.create_connection((host.strip("[]"), int(port)), DASK_CONNECT_TIMEOUT_S) as s:
            return _dask_greeting_problem(s, deadline)
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


# a Dask comm's handshake (compression, python, pickle-protocol) is a few dozen bytes
DASK_HANDSHAKE_MAX_BYTES = 1 << 16


def _dask_greeting_problem(sock: Any, deadline: float) -> str | None:
    """None when the peer greets as a Dask scheduler does on accepting a connection: an
    8-byte length, then msgpack frames of a dict with its `python` version; else why not."""
    import struct

    def read(n: int) -> bytes:
        data = b""
        while len(data) < n:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            try:
                chunk = sock.recv(n - len(data))
            except TimeoutError:
                raise _NotDask(
                    f"the listener there sent no Dask handshake within {DASK_CONNECT_TIMEOUT_S:g} s"
                ) from None
            if not chunk:
                raise _NotDask("the listener there closed the connection without a Dask handshake")
            data += chunk
        return data

    try:
        head = read(8)
        (size,) = struct.unpack("<Q", head)
        if not 0 < size <= DASK_HANDSHAKE_MAX_BYTES:
            sock.setblocking(False)
            with contextlib.suppress(OSError):  # what else it said at once, for the message
                head += sock.recv(16)
            raise _NotDask(f"the listener there is not a Dask scheduler: it answered {head[:24]!r}")
        body = read(size)
        try:
            from distributed.protocol.core import loads
            from distributed.protocol.utils import unpack_frames

            frames, rest = unpack_frames(body, partial=True)
            greeting = loads(frames) if not rest else None
        except Exception:  # noqa: BLE001 - anything that is not Dask's framing
            greeting = None
        if not isinstance(greeting, dict) or "python" not in greeting:
            raise _NotDask(
                f"the listener there is not a Dask scheduler: it answered {(head + body)[:24]!r}"
            )
    except _NotDask as exc:
        return str(exc)
    return None


class _NotDask(Exception):
    pass


def task(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Decorator: `@task` or `@task(retries=3, retry_delay_seconds=5)`."""
    if fn is None:
        return lambda f: StageTask(f, **options)
    return StageTask(fn, **options)


# How long joining a running Dask scheduler may take before the stage says it is unreachable.
DASK_CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Runner:
    """Where a stage's mapped steps run: threads (I/O, GIL-releasing work), processes (local
    CPU-bound Python) or dask (a LocalCluster of `workers` processes).

    dask with an `address`: the running Dask scheduler there (its workers set the parallelism;
    `workers` is not used). `address_setting` names where the address came from, for the error
    when the scheduler does not answer."""

    kind: str = "threads"
    workers: int = 4
    address: str | None = None
    address_setting: str = "dask address"

    def __post_init__(self) -> None:
        if self.kind not in {"threads", "processes", "dask"}:
            raise ValueError(f"task runner {self.kind!r}: expected threads, processes or dask")
        if self.workers < 1:
            raise ValueError(f"task runner workers must be >= 1, got {self.workers}")
        if self.address is not None and self.kind != "dask":
            raise ValueError(f"task runner {self.kind!r}: a scheduler address needs dask")

    def __str__(self) -> str:
        """How the stage logs it: `processes x2`, `dask at tcp://10.0.0.5:8786`."""
        return f"dask at {self.address}" if self.address else f"{self.kind} x{self.workers}"

    @contextlib.contextmanager
    def dask(self, workers: int | None = None) -> Iterator[Any]:
        """A distributed.Client of the cluster the steps run on: the scheduler at `address`, or
        a LocalCluster of `workers` (default the runner's) started for this map, closed after."""
        if self.address:
            with self.dask_client() as client:
                yield client
            return
        from distributed import Client, LocalCluster

        with (
            LocalCluster(
                **{**self.dask_cluster_kwargs(), "n_workers": workers or self.workers}
            ) as cluster,
            Client(cluster, set_as_default=False) as client,
        ):
            yield client

    def dask_client(self) -> Any:
        """A distributed.Client of the scheduler at `address`, or CorefreproError naming
        `address_setting` and the address: one line, within DASK_CONNECT_TIMEOUT_S (a refused
        or unresolvable address at once)."""
        from distributed import Client

        from tasks.core.errors import CorefreproError

        problem = _tcp_problem(self.address)
        if problem is None:
            try:
                return Client(self.address, timeout=DASK_CONNECT_TIMEOUT_S, set_as_default=False)
            except (OSError, TimeoutError, ValueError, TypeError) as exc:
                problem = str(exc) or type(exc).__name__
        raise CorefreproError(
            f"{self.address_setting}: no Dask scheduler answers at {self.address} ({problem})"
        )

    def check_cluster(self) -> None:
        """Before any work: the scheduler answers, and its workers run this checkout (they
        import the project's code and read and write its data/ -- the same path on a shared
        filesystem). A worker that joins later is not checked."""
        from tasks.core.config import REPO_ROOT
        from tasks.core.errors import CorefreproError

        with self.dask_client() as client:
            try:
                roots = client.run(_checkout_root)
            except Exception as exc:  # noqa: BLE001 - a worker that cannot import the project
                raise CorefreproError(
                    f"{self.address_setting}: the workers of {self.address} cannot run this "
                    f"project's code ({exc}); start them in the checkout "
                    f"with it on the path: cd {REPO_ROOT} && PYTHONPATH=. dask worker "
                    f"{self.address}"
                ) from None
        if not roots:
            log.warning("%s: the scheduler has no workers yet; tasks wait for one", self.address)
        other = {w: r for w, r in roots.items() if r != str(REPO_ROOT)}
        if other:
            worker, root = sorted(other.items())[0]
            raise CorefreproError(
                f"{self.address_setting}: worker {worker} of {self.address} runs the checkout "
                f"at {root}, this stage {REPO_ROOT} ({len(other)} of {len(roots)} workers); "
                "workers must run this checkout (its code, params.yaml and data/)"
            )

    def dask_cluster_kwargs(self) -> dict[str, Any]:
        """LocalCluster settings: the scheduler and its dashboard on the loopback interface
        (distributed's dashboard default ":8787" listens on every interface once bokeh is
        installed); COREFREPRO_BIND_HOST=0.0.0.0 opts in to exposing them."""
        host = os.environ.get(BIND_HOST_ENV, "127.0.0.1")
        return {
            "n_workers": self.workers,
            "processes": True,
            "threads_per_worker": 1,
            "host": host,
            "dashboard_address": f"{host}:0",  # a free port: lanes never collide
        }


CURRENT_RUNNER: contextvars.ContextVar[Runner] = contextvars.ContextVar(
    "corefrepro_runner",
    default=Runner(),  # noqa: B039 - Runner is frozen
)


class StageFlow:
    """A stage entry point: one Prefect flow run named as its DVC stage when orchestrated, a
    plain call otherwise; the same function and steps either way.

    runner: a Runner, or a callable taking the flow's arguments and returning one (so a stage
    can read where its steps run from params.yaml).
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        runner: Runner | Callable[..., Runner] | None = None,
    ):
        self.fn = fn
        self.name = name or fn.__name__.replace("_", "-")
        self.runner = runner or Runner()
        functools.update_wrapper(self, fn)

    @functools.cached_property
    def deployed(self):
        """The stage as a Prefect flow: what a deployment runs (prefect.yaml's
        `flows.<stage>:<flow>.deployed`, `flows.reproduce --serve`) and what a stage command
        runs when orchestrated. The stage's setup (its Runner, lock, logging) happens inside
        the flow run, named as the stage item (download@synthetic), or as its DVC stage. A
        training stage trains in this one process: train.nproc > 1 is the stage command's
        torchrun re-launch (flows.reproduce's stages run that command)."""
        from prefect import flow

        @functools.wraps(self.fn)  # the stage's parameters: the deployment's schema
        def run(*args: Any, **kwargs: Any) -> Any:
            _log_to_run()
            with self._stage(*args, **kwargs):
                return self.fn(*args, **kwargs)

        # the deployment's description in the UI: the flow's docstring, else its stage's line
        stage_line = (sys.modules[self.fn.__module__].__doc__ or "").strip().partition("\n")[0]
        return flow(run, name=self.name, log_prints=True, validate_parameters=False,
                    flow_run_name=self._deployment_run_name,
                    description=inspect.getdoc(self.fn) or stage_line or None)  # fmt: skip

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        setup_logging()  # before Prefect sets up its logging: the stage's lines keep their format
        if orchestrated():
            return self._run_prefect(*args, **kwargs)
        with self._stage(*args, **kwargs):
            return self.fn(*args, **kwargs)

    @contextlib.contextmanager
    def _stage(self, *args: Any, **kwargs: Any) -> Iterator[Runner]:
        """What every run of the stage sets up around its function: logging, its Runner (where
        its steps map; an unreachable Dask scheduler is one line, before any work) and its
        item's lock."""
        setup_logging()
        spec = self.runner if isinstance(self.runner, Runner) else self.runner(*args, **kwargs)
        if spec.address:
            spec.check_cluster()
        token = CURRENT_RUNNER.set(spec)
        try:
            with one_at_a_time(self._item_name(*args, **kwargs)):
                yield spec
        finally:
            CURRENT_RUNNER.reset(token)

    def run_name(self, *args: Any, **kwargs: Any) -> str:
        """The flow run's name: the DVC stage that runs it (DVC sets DVC_STAGE for every stage
        command, e.g. annotate@gum-gold), else the flow and its arguments (annotate@gum-gold)."""
        return os.environ.get("DVC_STAGE") or self._item_name(*args, **kwargs)

    def _item_name(self, *args: Any, **kwargs: Any) -> str:
        """The flow and its string arguments (annotate@gum-gold): what two runs share when
        they write the same outputs."""

        parts = []
        for value in (*args, *kwargs.values()):
            if isinstance(value, str):
                parts.append(value)
            elif (
                isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value)
            ):
                parts.append(",".join(value))
        return self.name + (f"@{'-'.join(parts)}" if parts else "")

    def _deployment_run_name(self) -> str:
        """Name of a run a deployment starts (a worker's, flows.reproduce --serve's): from its
        parameters."""
        from prefect.runtime import flow_run

        return self.run_name(**(flow_run.parameters or {}))

    def _run_prefect(self, *args: Any, **kwargs: Any) -> Any:
        from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

        name = self.run_name(*args, **kwargs)
        # a callable: a stage name is not a format template
        flow_obj = self.deployed.with_options(flow_run_name=lambda: name)
        # Heartbeats detect crashed long runs but cost up to 1 s at exit (thread join): keep
        # them for long stages only (COREFREPRO_HEARTBEATS=1).
        if os.environ.get("COREFREPRO_HEARTBEATS") == "1":
            return _call_flow(flow_obj, name, args, kwargs)
        with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            return _call_flow(flow_obj, name, args, kwargs)


# The Prefect task run that started this process (flows.reproduce's task for one DVC stage):
# the flow run is created as its subflow, so it nests under the reproduce run in the UI.
PARENT_TASK_RUN_ENV = "COREFREPRO_PREFECT_PARENT_TASK_RUN"


def _call_flow(flow_obj: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """Run a Prefect flow; a subflow of PARENT_TASK_RUN_ENV's task run when that is set.

    Why not Prefect's own nesting: it needs the parent flow run in-process, and a DVC stage
    runs in its own process (`dvc repro` runs the stage command). So the flow run is created
    through the API with parent_task_run_id -- what Prefect records for an in-process subflow
    -- and the engine then runs that flow run.
    """
    parent = os.environ.get(PARENT_TASK_RUN_ENV)
    if not parent:
        return flow_obj(*args, **kwargs)
    from uuid import UUID

    from prefect.client.orchestration import get_client
    from prefect.flow_engine import run_flow
    from prefect.states import Pending
    from prefect.utilities.callables import get_call_parameters

    parameters = get_call_parameters(flow_obj.fn, args, kwargs)
    try:
        with get_client(sync_client=True) as client:
            flow_run = client.create_flow_run(
                flow=flow_obj,
                name=name,
                parameters=flow_obj.serialize_parameters(parameters),
                parent_task_run_id=UUID(parent),
                state=Pending(),
            )
    except Exception as exc:  # noqa: BLE001 - an unlinked run beats no run
        log.warning("%s: not linked to task run %s (%s); a top-level run", name, parent, exc)
        return flow_obj(*args, **kwargs)
    return run_flow(flow_obj, flow_run=flow_run, parameters=parameters)


@contextlib.contextmanager
def one_at_a_time(item: str) -> Iterator[None]:
    """Hold the lock of one stage item (data/.tmp/locks/<item>.lock) while it runs: a second
    process of the same item (two `flows.annotate --run x` at once) says so in one line and
    waits, instead of removing or reading the first one's half-made files. Locks of other
    items, and of other stages, do not wait for each other. torchrun's other processes of
    the same run take no lock (waiting for RANK 0's would deadlock its first all-reduce)."""
    from filelock import FileLock, Timeout

    from tasks.core.config import resolve_path
    from tasks.core.errors import CorefreproError
    from tasks.core.layout import TEMP_DIR
    from tasks.core.storage import secondary_process

    if secondary_process():  # torchrun's RANK 0 holds it for the processes of its run
        yield
        return
    folder = resolve_path("data") / TEMP_DIR / "locks"
    lock = FileLock(folder / f"{item.replace(os.sep, '_')}.lock")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock.acquire(timeout=0)
    except Timeout:
        log.info("%s: another process is running it (lock %s); waiting for it to finish",
                 item, lock.lock_file)  # fmt: skip
        lock.acquire()
    except OSError as exc:  # a read-only checkout, a full disk: before any work, one line
        raise CorefreproError(
            f"{exc.filename or folder}: cannot write the lock of {item} here "
            f"({exc.strerror or exc}); a stage writes under data/, artifacts/, metrics/, ... "
            "of its checkout: run it in a writable copy"
        ) from None
    try:
        yield
    finally:
        lock.release()


def flow(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Decorator: `@flow` or `@flow(name="download", runner=Runner("threads", 4))`."""
    if fn is None:
        return lambda f: StageFlow(f, **options)
    return StageFlow(fn, **options)


def run_cli(entry: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run a stage from its command line: a pipeline error ends it with one clear line.

    Errors the pipeline raises on purpose (tasks.core.errors) name the file, line or setting to fix;
    a traceback would only bury that line. Anything else is a bug and keeps its traceback.
    """
    from tasks.core.errors import CorefreproError

    try:
        return entry(*args, **kwargs)
    except CorefreproError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("interrupted: no output was left half-written; run it again (or `dvc repro`) to "
              "continue "
              "(partial downloads, finished annotation shards and, with train.resume, "
              "last.pt are kept in data/cache/)", file=sys.stderr)  # fmt: skip
        raise SystemExit(130) from None


def torchrun(module: str, nproc_setting: Callable[[], int], argv: list[str] | None = None) -> bool:
    """Run training stage `module` as torchrun's processes on this machine when its
    train.nproc (`nproc_setting()`, read here so a bad setting fails as one line) is > 1
    (data-parallel: tasks/training/distributed.py), and return True once they have finished; False where this process trains itself (nproc 1, or it already is one of
    torchrun's: several machines start `torchrun --nnodes N --node-rank K --rdzv-endpoint
    HOST:PORT -m flows.train_<family> ...` themselves, README). The processes run their flow
    as plain Python (COREFREPRO_ORCHESTRATION=local): one Prefect flow run per process would
    show N runs of one stage."""
    if "LOCAL_RANK" in os.environ:
        return False
    nproc = int(nproc_setting())
    if nproc <= 1:
        return False
    import subprocess

    from tasks.core.errors import CorefreproError

    setup_logging()  # this line comes before the stage's own logging is set up
    args = sys.argv[1:] if argv is None else list(argv)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", str(nproc), "-m", module, *args]  # fmt: skip
    log.info("%s: %d data-parallel processes: %s", module, nproc, " ".join(command[1:]))
    code = subprocess.run(command, env={**os.environ, MODE_ENV: "local"}).returncode
    if code:
        raise CorefreproError(f"{module}: torchrun's {nproc} processes failed (exit {code}; "
                              "the first failing process's error is above)")  # fmt: skip
    return True
