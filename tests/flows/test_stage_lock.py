"""Two processes of one stage item at once (issue #30.2: two `flows.annotate` of one run:
one rc 0, the other a FileNotFoundError traceback): the second says so and waits."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.conftest import REPO_ROOT


def _start(item: str, log, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "COREFREPRO_ORCHESTRATION": "local", "LOCK_PROBE_SECONDS": str(seconds)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.flows.lock_probe", item, str(log)],
        cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _wait_for(log, lines: int) -> None:
    deadline = time.time() + 60
    while not (log.exists() and len(log.read_text().splitlines()) >= lines):
        assert time.time() < deadline, "the first process never started"
        time.sleep(0.05)


def test_a_second_process_of_the_same_item_waits_and_says_so(tmp_path):
    log = tmp_path / "log"
    first = _start("same", log, 2.0)
    _wait_for(log, 1)
    second = _start("same", log, 0.0)
    outs = [p.communicate(timeout=120) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    events = [line.split()[0] for line in log.read_text().splitlines()]
    assert events == ["start", "end", "start", "end"]  # one after the other, never overlapping
    assert "another process is running it" in outs[1][1]
    assert "another process is running it" not in outs[0][1]


def test_other_items_do_not_wait(tmp_path):
    log = tmp_path / "log"
    first = _start("one", log, 2.0)
    _wait_for(log, 1)
    other = _start("two", log, 0.0)
    outs = [p.communicate(timeout=120) for p in (first, other)]
    events = [" ".join(line.split()[:2]) for line in log.read_text().splitlines()]
    assert events == ["start one", "start two", "end two", "end one"], outs
