"""Two processes of one stage item at once (issue #30.2: two `flows.annotate` of one run:
one rc 0, the other a FileNotFoundError traceback): the second says so and waits."""

from __future__ import annotations

import os
import subprocess
import sys
import time

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
