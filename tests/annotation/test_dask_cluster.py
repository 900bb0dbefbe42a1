"""Annotation on a running Dask cluster (annotate.dask_address / DASK_SCHEDULER_ADDRESS): a
real `dask scheduler` and two `dask worker` processes on loopback ports, the stage joining
them from a scratch copy of the checkout; the mentions are byte for byte those of the local
(threads) run, also when a worker is killed mid-run; an unreachable scheduler is one line."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from flows.runtime import Runner, run_cli
from tasks.annotation import annotators
from tasks.annotation.annotators.base import Annotator, Doc
from tasks.annotation.runs import AnnotateSettings, dask_address
from tasks.core import config, storage
from tasks.core.errors import CorefreproError
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS, QUERY_MENTIONS
from tasks.core.settings import ConfigError
from tests.conftest import copy_checkout

pytest.importorskip("distributed")

DASK = Path(sys.executable).parent / "dask"
FACTORY = f"{__name__}:slow_gold"
PROBE_RUN = "synthetic-slow-gold"
SHARD_SIZE = 8  # the fixture's 30 documents: 4 shards for 2 workers


class SlowGold(Annotator):
    """The gold annotator, `delay_s` slower per batch, logging "<pid> <first doc_id>" as each
    batch starts: which worker process took which shard, and when."""

    name = "slow-gold"

    def __init__(self, cfg: dict):
        self.gold = annotators.get("gold", {})
        self.delay_s = float(cfg.get("delay_s", 0))
        self.log = cfg.get("log")

    def annotate(self, batch: list[Doc]):
        if self.log:
            with open(self.log, "a") as fh:
                fh.write(f"{os.getpid()} {batch[0].doc_id}\n")
        time.sleep(self.delay_s)
        return self.gold.annotate(batch)


def slow_gold(cfg: dict) -> SlowGold:
    return SlowGold(cfg)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory, synthetic_tables) -> tuple[Path, dict[str, str]]:
    """A copy of the checkout with the synthetic corpus (tests/annotation/conftest.py's) in
    data/docs/synthetic/, and the probe run in params.yaml."""
    repo = tmp_path_factory.mktemp("cluster") / "repo"
    env = copy_checkout(repo)
    env["COREFREPRO_ANNOTATOR_FACTORIES"] = FACTORY
    env["PYTHONPATH"] = str(repo)  # the workers import the checkout's code (docs/operations.md)
    docs = repo / "data" / "docs" / "synthetic"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COREFREPRO_WRITE_ROOTS", str(repo))
        for kind in (DOCUMENTS, ITEMS, MENTIONS):
            storage.write_table(docs / f"{kind}.parquet", kind, synthetic_tables[kind])
    _set_annotate(repo, runs={PROBE_RUN: {"corpus": "synthetic", "annotator": "model"}})
    return repo, env


def _set_annotate(repo: Path, runs: dict | None = None, **annotate) -> None:
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["annotate"]["runs"].update(runs or {})
    params["annotate"].update(annotate)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def _probe(**settings) -> dict:
    return {
        PROBE_RUN: {
            "corpus": "synthetic",
            "annotator": "model",
            "settings": {"factory": FACTORY, "settings": settings},
        }
    }


def _outputs(repo: Path, run: str) -> dict[str, bytes]:
    folder = repo / "data" / "mentions" / run
    return {k: (folder / f"{k}.parquet").read_bytes() for k in (MENTIONS, QUERY_MENTIONS)}


@contextlib.contextmanager
def _cluster(repo: Path, env: dict[str, str]) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """`dask scheduler` and two `dask worker` (1 thread, no nanny: the worker process is the
    one a test kills) on free loopback ports; (address, workers); all stopped at the end."""
    from distributed import Client

    address = f"tcp://127.0.0.1:{_free_port()}"
    common = {"cwd": repo, "env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE}
    procs = [
        subprocess.Popen(
            [str(DASK), "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
             "--no-dashboard"],
            **common,
        )
    ]  # fmt: skip
    try:
        for i in range(2):
            procs.append(
                subprocess.Popen(
                    [str(DASK), "worker", address, "--name", f"w{i}", "--nthreads", "1",
                     "--no-nanny", "--host", "127.0.0.1", "--no-dashboard"],
                    **common,
                )
            )  # fmt: skip
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address, procs[1:]
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stderr.close()


def _annotate(repo: Path, env: dict[str, str], run: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "flows.annotate", "--run", run],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stderr


@pytest.mark.slow
def test_annotation_on_a_running_cluster_matches_the_local_run(scratch):
    repo, env = scratch
    run = "synthetic-entity-id"
    _set_annotate(repo, executor="threads", dask_address=None, shard_size=SHARD_SIZE)
    _annotate(repo, env, run)
    local = _outputs(repo, run)
    with _cluster(repo, env) as (address, _):
        _set_annotate(repo, executor="dask", dask_address=address)
        stderr = _annotate(repo, env, run)
        from distributed import Client

        with Client(address, timeout=30) as client:  # the shards ran on the cluster's workers
            done = client.run_on_scheduler(
                lambda dask_scheduler: dask_scheduler.task_prefixes["annotate-shard"].state_counts
            )
    assert f"(entity-id annotator, dask at {address})" in stderr
    assert done["memory"] == 4  # the 4 shards, each computed on a worker
    assert _outputs(repo, run) == local
    # the same scheduler through DASK_SCHEDULER_ADDRESS, params.yaml's key left null, is
    # refused now that it is gone: the line names the variable
    _set_annotate(repo, dask_address=None)
    proc = subprocess.run(
        [sys.executable, "-m", "flows.annotate", "--run", run],
        cwd=repo, env={**env, "DASK_SCHEDULER_ADDRESS": address}, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith(
            f"error: DASK_SCHEDULER_ADDRESS (annotate.dask_address is null): no Dask scheduler "
            f"answers at {address}"
        )
    )


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_no_shard(scratch, synthetic_tables, tmp_path):
    repo, env = scratch
    _set_annotate(repo, runs=_probe(), executor="threads", dask_address=None,
                  shard_size=SHARD_SIZE)  # fmt: skip
    _annotate(repo, env, PROBE_RUN)
    local = _outputs(repo, PROBE_RUN)
    doc_ids = synthetic_tables[DOCUMENTS].column("doc_id").to_pylist()
    shard_of = {d: i // SHARD_SIZE for i, d in enumerate(doc_ids)}
    log = tmp_path / "starts.log"
    log.touch()
    # each shard takes >= 1.5 s: the kill lands while the worker holds a shard
    _set_annotate(repo, runs=_probe(delay_s=1.5, log=str(log)))
    cache = repo / "data" / "cache" / "annotate" / PROBE_RUN
    with _cluster(repo, env) as (address, workers):
        _set_annotate(repo, executor="dask", dask_address=address)
        stage = subprocess.Popen(
            [sys.executable, "-m", "flows.annotate", "--run", PROBE_RUN],
            cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            pids = {w.pid: w for w in workers}
            deadline = time.monotonic() + 120
            while True:  # a shard is done, and a worker has started one not done yet
                done = {int(p.parent.name[6:]) for p in cache.glob("*/shard-*/report.json")}
                starts = [line.split() for line in log.read_text().splitlines()]
                held = [
                    (int(pid), shard_of[doc])
                    for pid, doc in reversed(starts)  # the latest start: the least done
                    if int(pid) in pids and shard_of[doc] not in done
                ]
                if done and held:
                    break
                assert stage.poll() is None and time.monotonic() < deadline, stage.stderr.read()
                time.sleep(0.02)
            victim, shard = held[0]
            os.kill(victim, signal.SIGKILL)
            pids[victim].wait(timeout=30)
            lost = not list(cache.glob(f"*/shard-{shard:05d}/report.json"))
            _, stderr = stage.communicate(timeout=180)
        finally:
            if stage.poll() is None:
                stage.kill()
                stage.communicate()
    assert stage.returncode == 0, stderr[-3000:]
    assert lost  # the killed worker held the shard unfinished ...
    starts = [line.split() for line in log.read_text().splitlines()]
    redone = [int(pid) for pid, doc in starts if shard_of[doc] == shard]
    assert redone[0] == victim and len(redone) == 2 and redone[1] != victim  # ... redone
    assert {shard_of[doc] for _, doc in starts} == set(range(4))
    assert _outputs(repo, PROBE_RUN) == local


def test_an_unreachable_scheduler_is_one_line_naming_the_setting(monkeypatch, capsys):
    from flows.annotate import annotate

    data = yaml.safe_load(config.PARAMS_FILE.read_text())
    address = f"tcp://127.0.0.1:{_free_port()}"  # nothing listens there
    data["annotate"].update(executor="dask", dask_address=address)
    monkeypatch.setattr(config, "_load", lambda path: data)
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://127.0.0.1:1")  # the key wins over it
    started = time.monotonic()
    with pytest.raises(SystemExit) as exit_:
        run_cli(annotate, "synthetic-gold")
    assert exit_.value.code == 2 and time.monotonic() - started < 5
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(
        f"error: annotate.dask_address: no Dask scheduler answers at {address} ("
    )
    assert "refused" in err[-1].lower()


def test_which_address_the_stage_joins(monkeypatch):
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS", raising=False)
    cfg = AnnotateSettings(executor="dask", dask_address=None)
    assert dask_address(cfg) == (None, "")  # a LocalCluster
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://10.0.0.5:8786")
    assert dask_address(cfg) == (
        "tcp://10.0.0.5:8786",
        "DASK_SCHEDULER_ADDRESS (annotate.dask_address is null)",
    )
    cfg.dask_address = "tcp://10.0.0.6:8786"
    assert dask_address(cfg) == ("tcp://10.0.0.6:8786", "annotate.dask_address")
    # threads and processes run here whatever the environment says
    assert dask_address(AnnotateSettings(executor="processes")) == (None, "")
    runner = Runner("dask", 2, address="tcp://10.0.0.6:8786")
    assert str(runner) == "dask at tcp://10.0.0.6:8786" and str(Runner("dask", 2)) == "dask x2"
    with pytest.raises(ValueError, match="needs dask"):
        Runner("threads", 2, address="tcp://10.0.0.6:8786")


def test_the_address_is_checked_with_the_settings(monkeypatch):
    from tasks.annotation.runs import settings

    data = yaml.safe_load(config.PARAMS_FILE.read_text())
    monkeypatch.setattr(config, "_load", lambda path: data)
    assert settings().dask_address is None  # params.yaml as committed
    data["annotate"].update(executor="threads", dask_address="tcp://10.0.0.6:8786")
    with pytest.raises(ConfigError, match=r"annotate\.dask_address: .* but annotate\.executor"):
        settings()
    data["annotate"].update(executor="dask", dask_address=" ")
    with pytest.raises(ConfigError, match=r"annotate\.dask_address: empty"):
        settings()
    data["annotate"]["dask_addres"] = data["annotate"].pop("dask_address")
    with pytest.raises(ConfigError, match=r"did you mean dask_address\?"):
        settings()


def test_a_cluster_running_another_checkout_is_refused(monkeypatch):
    """Workers of another checkout would annotate with other code and params, and write their
    shards where this stage does not look: refused before any work."""
    from distributed import LocalCluster

    import flows.runtime

    local = {**Runner("dask", 1).dask_cluster_kwargs(), "processes": False, "protocol": "tcp://"}
    with LocalCluster(**local) as cluster:
        runner = Runner("dask", 1, address=cluster.scheduler_address,
                        address_setting="annotate.dask_address")  # fmt: skip
        runner.check_cluster()  # in-process workers: this checkout
        monkeypatch.setattr(flows.runtime, "_checkout_root", lambda: "/elsewhere/repo")
        with pytest.raises(CorefreproError, match=r"annotate\.dask_address: worker .* runs the "
                           r"checkout at /elsewhere/repo, this stage .*must run this checkout"):  # fmt: skip
            runner.check_cluster()


def test_worker_caches_follow_the_files(tmp_path):
    """A cluster's worker outlives the stage: the next run must not get the tables it read
    before the corpus was normalized again."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tasks.annotation import shards

    path = tmp_path / "documents.parquet"
    pq.write_table(pa.table({"doc_id": ["a"]}), path)
    assert shards._table(str(path), shards._stamp(path)).num_rows == 1
    pq.write_table(pa.table({"doc_id": ["a", "b"]}), path)
    assert shards._table(str(path), shards._stamp(path)).num_rows == 2


@contextlib.contextmanager
def _listener(answer: bytes | None) -> Iterator[str]:
    """A 127.0.0.1 listener that is not a Dask scheduler: `answer` None accepts (the kernel
    completes the handshake) and never says a word; bytes are sent to each connection, which
    then stays open."""
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)
            conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True) if answer is not None else None
    if thread:
        thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        if thread:
            thread.join(5)
        for conn in held:
            conn.close()
        server.close()


@pytest.mark.parametrize(
    ("answer", "reason"),
    [(None, "sent no Dask handshake within 1 s"),
     (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "not a Dask scheduler: it "
      "answered b'HTTP/1.1"),
     (b"\xff" * 64, r"not a Dask scheduler: it answered b'\xff\xff"),  # an 18 EB frame length
     (b"\x10\x00\x00\x00\x00\x00\x00\x00" + b"\x00" * 16, "not a Dask scheduler: it answered")],
    ids=["silent", "http", "huge-length", "garbage-frames"],
)  # fmt: skip
def test_a_listener_that_is_not_a_scheduler_is_one_line(answer, reason, monkeypatch):
    """Issue #59 row 8: an address where something listens but no Dask scheduler used to hang
    (distributed's handshake read has no timeout) or die of a MemoryError (a garbage length
    prefix allocated); now one line naming the setting, within the connect timeout."""
    import threading

    import flows.runtime

    monkeypatch.setattr(flows.runtime, "DASK_CONNECT_TIMEOUT_S", 1.0)
    said: dict[str, str] = {}

    def join(address: str) -> None:
        runner = Runner("dask", 1, address=address, address_setting="annotate.dask_address")
        try:
            runner.dask_client().close()
        except CorefreproError as exc:
            said["message"] = str(exc)

    with _listener(answer) as address:
        thread = threading.Thread(target=join, args=(address,), daemon=True)
        thread.start()
        thread.join(60)  # a hang fails the test instead of blocking it
        assert not thread.is_alive(), f"joining {address} hangs"
    message = said["message"]
    assert message.startswith(f"annotate.dask_address: no Dask scheduler answers at {address} (")
    assert reason in message and "\n" not in message
