"""Failures of the download stage are loud and short (issues #14.5, #17.7): a checksum
mismatch or an absent file is not retried (it was 3 x 5 s per file), a missing mirror folder
is said once, and the first required file that no origin has ends the stage."""

from __future__ import annotations

import copy
import logging

import pytest

from flows import download as download_flow
from flows.runtime import StageTask
from tasks.core import config, fetch
from tasks.core.errors import ChecksumError, MissingSourceError


@pytest.mark.parametrize(
    ("error", "calls"),
    [
        (ChecksumError("x: sha256 differs"), 1),
        (MissingSourceError("x: missing"), 1),
        (MissingSourceError("x: timed out", transient=True), 4),
        (OSError("connection reset"), 4),
    ],
)
def test_only_transient_fetch_failures_are_retried(error, calls, monkeypatch):
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    made = []

    def fail():
        made.append(1)
        raise error

    task = StageTask(fail, retries=3, retry_delay_seconds=0, retry_if=fetch.retryable)
    with pytest.raises(type(error)):
        task()
    assert len(made) == calls


@pytest.fixture
def no_mirror(monkeypatch, tmp_path):
    """params.yaml with network off, the mirror pointing at a folder that does not exist."""
    data = copy.deepcopy(config.params())
    data["download"]["network"] = False
    monkeypatch.setattr(config, "_load", lambda path: data)
    monkeypatch.setenv("COREFREPRO_MIRROR", str(tmp_path / "no-mirror"))
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr(download_flow.layout, "raw_dir", lambda corpus: tmp_path / "raw" / corpus)
    fetched = []
    monkeypatch.setattr(download_flow.fetch_file, "fn", lambda **kw: fetched.append(kw))
    return fetched


@pytest.mark.parametrize("corpus", ["babi", "gum"])
def test_a_missing_mirror_is_one_error_before_any_fetch(no_mirror, tmp_path, corpus, capsys):
    with pytest.raises(SystemExit) as stop:
        download_flow.main(["--corpus", corpus])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"error: {corpus}: mirror {tmp_path / 'no-mirror'} does not exist")
    assert "download.network is off" in err[-1]
    assert no_mirror == [] and not (tmp_path / "raw" / corpus).exists()


def test_with_the_network_on_the_missing_mirror_is_said_once(no_mirror, caplog, tmp_path):
    config.params("download")["network"] = True
    with caplog.at_level(logging.INFO, "corefrepro"):
        download_flow.download("babi")
    said = [r.getMessage() for r in caplog.records if "no-mirror" in r.getMessage()]
    assert len(said) == 1 and "not consulted" in said[0]
    assert no_mirror and all(kw["mirror"] is None for kw in no_mirror)


def test_a_failed_download_stops_its_own_transfers_only(no_mirror, monkeypatch):
    """A download whose first file fails stops the transfers still running (on_abort), and
    only those: a later download in the same process (a Prefect worker, the test session)
    fetched nothing once the stop had been left set."""
    config.params("download")["network"] = True

    def fail(**kw):
        raise MissingSourceError(f"{kw['source'].relpath}: missing")

    monkeypatch.setattr(download_flow.fetch_file, "fn", fail)
    with pytest.raises(MissingSourceError):
        download_flow.download("babi")
    fetch._check_stop("a later transfer")  # raises TransferStopped while the stop is set


def test_ctrl_c_in_a_threaded_map_asks_the_running_calls_to_stop(monkeypatch, request):
    """Issue #59 row 19: Ctrl-C while the download's threads fetched waited for every running
    file (~28 s from a slow mirror); the map now calls on_abort (fetch.stop_transfers) first."""
    import os
    import signal
    import threading
    import time

    from flows.runtime import CURRENT_RUNNER, Runner

    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    stop, started = threading.Event(), []

    def transfer(i):
        started.append(i)
        return "stopped" if stop.wait(120) else "ran to its end"

    def interrupt():
        deadline = time.time() + 60
        while len(started) < 2 and time.time() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    # Ctrl-C's default handler (a shell without job control starts background commands with
    # SIGINT ignored)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, old))
    token = CURRENT_RUNNER.set(Runner("threads", 2))
    threading.Thread(target=interrupt, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            StageTask(transfer).map_kwargs([{"i": 0}, {"i": 1}], on_abort=stop.set)
    finally:
        CURRENT_RUNNER.reset(token)
    assert stop.is_set() and sorted(started) == [0, 1]


def test_ctrl_c_of_a_stage_command_is_one_line(capsys):
    from flows.runtime import run_cli

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as stop:
        run_cli(interrupted)
    assert stop.value.code == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interrupted: no output was left half-written")
