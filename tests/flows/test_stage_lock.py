"""Two processes of one stage item at once (issue #30.2: two `flows.annotate` of one run:
one rc 0, the other a FileNotFoundError traceback): the second says so and waits."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT


def _start(item: str, log, until=None) -> subprocess.Popen:
    env = {**os.environ, "COREFREPRO_ORCHESTRATION": "local"}
    env.pop("LOCK_PROBE_UNTIL", None)
    if until is not None:  # runs until the test creates this file
        env["LOCK_PROBE_UNTIL"] = str(until)
    return subprocess.Popen(
        [sys.executable, "-m", "tests.flows.lock_probe", item, str(log)],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_for(what: str, ready) -> None:
    deadline = time.time() + 120
    while not ready():
        assert time.time() < deadline, what
        time.sleep(0.05)


def _lines(log) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_second_process_of_the_same_item_waits_and_says_so(tmp_path):
    log, release = tmp_path / "log", tmp_path / "release"
    first = _start("same", log, until=release)
    _wait_for("the first process never started", lambda: len(_lines(log)) >= 1)
    second = _start("same", log)
    said = []  # the second's log lines until it reports the held lock
    while not any("another process is running it" in line for line in said):
        line = second.stderr.readline()
        assert line, f"the second process ended without waiting: {said}"
        said.append(line)
    assert len(_lines(log)) == 1  # it waits: the first has not ended, the second not started
    release.touch()
    outs = [p.communicate(timeout=120) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    events = [line.split()[0] for line in _lines(log)]
    assert events == ["start", "end", "start", "end"]  # one after the other, never overlapping
    assert "another process is running it" not in outs[0][1]


def test_other_items_do_not_wait(tmp_path):
    log, release = tmp_path / "log", tmp_path / "release"
    first = _start("one", log, until=release)
    _wait_for("the first process never started", lambda: len(_lines(log)) >= 1)
    other = _start("two", log)
    _wait_for("the other item waited", lambda: len(_lines(log)) >= 3)  # before the release
    release.touch()
    outs = [p.communicate(timeout=120) for p in (first, other)]
    events = [" ".join(line.split()[:2]) for line in _lines(log)]
    assert events == ["start one", "start two", "end two", "end one"], outs


def test_a_lock_that_cannot_be_written_is_one_line_naming_the_path(monkeypatch, capsys):
    """Issue #59 row 18: a read-only checkout gave a raw OSError traceback from the lock."""
    import errno

    from flows import runtime
    from tests.flows.lock_probe import lock_probe

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(REPO_ROOT / "data"))

    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr("pathlib.Path.mkdir", read_only)
    with pytest.raises(SystemExit) as stop:
        runtime.run_cli(lock_probe, "ro", "/nonexistent/never-written")
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {REPO_ROOT / 'data'}: cannot write the lock of lock-probe@ro-"
                   "/nonexistent/never-written here (Read-only file system); a stage writes "
                   "under data/, artifacts/, metrics/, ... of its checkout: run it in a "
                   "writable copy"]  # fmt: skip


def test_a_stage_command_in_a_read_only_checkout(tmp_path):
    """The same on a real read-only mount of this checkout (a private mount namespace; skipped
    where one cannot be made)."""
    import shutil

    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode:
        pytest.skip("no private mount namespace here")
    script = (f"mount --bind -o ro {REPO_ROOT} {REPO_ROOT} && cd {REPO_ROOT} && "
              f"exec {sys.executable} -m tests.flows.lock_probe ro {tmp_path / 'log'}")  # fmt: skip
    env = {**os.environ, "COREFREPRO_ORCHESTRATION": "local"}
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {REPO_ROOT}/data"), lines
    assert "Read-only file system" in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "log").exists()  # no work started
