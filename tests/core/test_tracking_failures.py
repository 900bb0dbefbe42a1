"""Tracking never loses finished work, and runs never stay RUNNING (issue #14.5).

A locked (> 5 s) or deleted MLflow sqlite store used to raise out of the stage after the
work was done; a killed stage left its run RUNNING forever."""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("mlflow")

from tasks.core import tracking  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A store with its schema and the experiment made once (migrations take seconds)."""
    db = tmp_path_factory.mktemp("store") / "mlflow.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
        with tracking.tracked_run("stats", "warmup", dataset="x"):
            pass
    return db


@pytest.fixture
def store(template, tmp_path, monkeypatch) -> Path:
    """A fresh copy of the template store and short retry waits."""
    db = tmp_path / "mlflow.db"
    shutil.copyfile(template, db)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{db}")
    monkeypatch.setattr(tracking, "RETRY_DELAYS_S", ())
    return db


def _runs(db: Path, name: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("stats")
    return client.search_runs([exp.experiment_id], f"attributes.run_name = '{name}'")


def test_a_locked_store_does_not_fail_a_finished_stage(store, tmp_path, caplog):
    lock = sqlite3.connect(store, isolation_level=None)
    lock.execute("BEGIN EXCLUSIVE")  # another process holds the store past the busy timeout
    out = tmp_path / "metrics.json"
    try:
        with (
            caplog.at_level(logging.WARNING, "corefrepro.tracking"),
            tracking.tracked_run("stats", "locked", dataset="x") as run,
        ):
            out.write_text("{}")  # the stage's own outputs
            tracking.log_metrics({"f1": 0.5})
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert run is None and out.exists()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "could not open run stats@locked after 1 attempts" in warnings[0]
    assert "the stage goes on without it" in warnings[0]


def test_a_store_locked_for_a_while_still_gets_the_run(store, monkeypatch):
    monkeypatch.setattr(tracking, "RETRY_DELAYS_S", (2.0, 4.0, 4.0))
    lock = sqlite3.connect(store, isolation_level=None, check_same_thread=False)
    lock.execute("BEGIN EXCLUSIVE")
    releaser = threading.Timer(6.0, lambda: (lock.execute("ROLLBACK"), lock.close()))
    releaser.start()
    with tracking.tracked_run("stats", "late", dataset="x") as run:
        tracking.log_metrics({"f1": 0.5})
    releaser.join()
    assert run is not None
    (got,) = _runs(store, "stats@late")
    assert got.info.status == "FINISHED" and got.data.metrics == {"f1": 0.5}


def test_a_deleted_store_does_not_fail_a_finished_stage(store, tmp_path):
    out = tmp_path / "metrics.json"
    with tracking.tracked_run("stats", "deleted", dataset="x"):
        store.unlink()
        store.mkdir()  # not even recreatable as a file
        tracking.log_metrics({"f1": 0.5})
        out.write_text("{}")
    assert out.exists()


SCRIPT = textwrap.dedent(
    """
    import sys, time
    from tasks.core.tracking import tracked_run
    with tracked_run("stats", "victim", dataset="x"):
        print("open", flush=True)
        time.sleep(120)
    """
)


def _start_victim(db: Path) -> subprocess.Popen:
    env = {"MLFLOW_TRACKING_URI": f"sqlite:///{db}", "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "open"
    return proc


def test_a_terminated_stage_marks_its_run_killed(store):
    proc = _start_victim(store)
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
    (got,) = _runs(store, "stats@victim")
    assert got.info.status == "KILLED"


def test_a_run_left_running_by_a_killed_process_is_failed_at_the_next_start(store):
    proc = _start_victim(store)
    proc.kill()  # SIGKILL: no handler runs
    proc.wait(60)
    (got,) = _runs(store, "stats@victim")
    assert got.info.status == "RUNNING"
    with tracking.tracked_run("stats", "victim", dataset="x"):
        pass
    status = {r.info.run_id: r.info.status for r in _runs(store, "stats@victim")}
    assert status[got.info.run_id] == "FAILED"
    assert sorted(status.values()) == ["FAILED", "FINISHED"]


@pytest.mark.parametrize("server", ["refused", "silent"])
def test_an_unreachable_tracking_server_is_one_line_naming_the_setting(
    server, tmp_path, monkeypatch, caplog
):
    """Issue #29.4: tracking.uri http://... and no server answering (none on the port, or one
    that accepts and never answers): one warning naming the server and the setting, in seconds
    (MLflow's client alone retries a refused connection for minutes); the stage goes on."""
    from tests.conftest import free_port

    monkeypatch.setattr(tracking, "RETRY_DELAYS_S", (0.1,))
    monkeypatch.setattr(tracking, "SERVER_TIMEOUT_S", 0.5)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with contextlib.ExitStack() as stack:
        if server == "refused":
            uri = f"http://127.0.0.1:{free_port()}"
            monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
            setting, reason = "MLFLOW_TRACKING_URI", "Connection refused"
        else:
            silent = stack.enter_context(socket.socket())
            silent.bind(("127.0.0.1", 0))
            silent.listen()  # the kernel completes the handshake; nothing ever answers
            uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
            monkeypatch.setattr(tracking, "settings", lambda: tracking.TrackingSettings(uri=uri))
            setting, reason = "tracking.uri", "no answer in 0.5 s"
        out = tmp_path / "metrics.json"
        start = time.monotonic()
        with (
            caplog.at_level(logging.WARNING, "corefrepro.tracking"),
            tracking.tracked_run("stats", "offline", dataset="x") as run,
        ):
            out.write_text("{}")
            tracking.log_metrics({"f1": 0.5})
        elapsed = time.monotonic() - start
    assert run is None and out.exists() and elapsed < 20
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"tracking server {uri} ({setting}) is unreachable: {reason}" in warning
    assert "\n" not in warning


def test_a_store_locked_mid_run_is_one_warning_of_ours_and_no_library_traceback(
    store, monkeypatch, caplog, capfd
):
    """Issue #59 row 9: a store locked past sqlite's busy timeout mid-run; MLflow logs its own
    60-line traceback for the failed attempt, then the retry succeeds. The stage's stderr gets
    one warning of ours saying it recovered, and none of the library's lines."""
    import types

    import mlflow.store.db.utils as db_utils

    real = db_utils.sql  # MLflow's 20 s busy timeout made short: the test waits seconds
    short = types.SimpleNamespace(text=lambda q: real.text(q.replace("= 20000;", "= 200;")))
    monkeypatch.setattr(db_utils, "sql", short)
    monkeypatch.setattr(tracking, "RETRY_DELAYS_S", (1.5, 1.5))
    with tracking.tracked_run("stats", "locked-mid-run", dataset="x") as run:
        assert run is not None
        capfd.readouterr()
        lock = sqlite3.connect(store, isolation_level=None, check_same_thread=False)
        lock.execute("BEGIN EXCLUSIVE")
        releaser = threading.Timer(1.0, lambda: (lock.execute("ROLLBACK"), lock.close()))
        releaser.start()
        with caplog.at_level(logging.WARNING, "corefrepro.tracking"):
            tracking.log_metrics({"f1": 0.5})
        releaser.join()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "SQLAlchemy database error" not in err, err
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "MLflow: log metrics failed 1 time(s)" in warnings[0]
    assert "database is locked" in warnings[0] and "recovered, nothing lost" in warnings[0]
    assert all(r.name == "corefrepro.tracking" for r in caplog.records
               if r.levelno >= logging.WARNING)  # fmt: skip
    (got,) = _runs(store, "stats@locked-mid-run")
    assert got.info.status == "FINISHED" and got.data.metrics == {"f1": 0.5}
