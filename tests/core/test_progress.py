"""Progress on long stages: rate and ETA, a bar on a terminal, spaced log lines otherwise."""

from __future__ import annotations

import logging

from tasks.core import progress as progress_module
from tasks.core.progress import Progress, track


def test_log_lines_carry_rate_and_eta_and_end_with_the_total_time(caplog, monkeypatch):
    clock = iter(float(t) for t in range(100))
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: next(clock))
    with (
        caplog.at_level(logging.INFO, logger="corefrepro.progress"),
        Progress("annotate@x", total=4, unit="docs", every_s=0, bar=False) as p,
    ):
        p.update(1)
        p.update(1, " [shard 1 reused]")
        p.update(2)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "annotate@x: 1/4 docs (1.0 docs/s, ETA 3 s)"
    assert lines[1] == "annotate@x: 2/4 docs (1.0 docs/s, ETA 2 s) [shard 1 reused]"
    assert len(lines) == 3 and lines[2].startswith("annotate@x: 4/4 docs (") and " in " in lines[2]


def test_lines_are_spaced_by_every_s(caplog):
    with caplog.at_level(logging.INFO, logger="corefrepro.progress"):
        assert list(track(range(50), "kbest@y", 50, "docs", every_s=3600, bar=False)) == list(
            range(50)
        )
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == ["kbest@y: 50/50 docs"]


def test_terminal_gets_a_bar_not_log_lines(caplog):
    with (
        caplog.at_level(logging.INFO, logger="corefrepro.progress"),
        Progress("train", total=3, unit="batches", every_s=0, bar=True) as p,
    ):
        assert p._bar is not None
        p.update(3)
    assert len(caplog.records) == 1  # only the closing line


def test_the_stage_clock_gives_an_eta_for_every_planned_epoch(monkeypatch):
    """Issue #59 row 20: a training stage logged per-epoch lines but no ETA for all its epochs
    and seeds. The stage plans them; early stopping and resumed epochs leave the total."""
    clock = progress_module.StageClock()
    now = iter([0.0])
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: next(now))
    clock.plan(2 * 3)  # two seeds of three epochs
    clock.run_started(3)
    assert clock.line() == ""  # nothing done yet: no rate
    clock.tick()
    assert clock.line(now=60.0) == "stage 1/6 epochs, ETA 5 min 00 s"
    clock.tick()
    clock.run_ended(3, 2)  # patience stopped the first seed after two epochs
    clock.run_started(3, resumed=1)  # the second resumes after its first epoch
    clock.tick()
    assert clock.line(now=180.0) == "stage 3/4 epochs, ETA 1 min 00 s"
    clock.tick()
    assert clock.line(now=240.0) == "stage 4/4 epochs"


def test_without_a_plan_the_clock_counts_the_runs_as_they_start():
    clock = progress_module.StageClock()
    clock.run_started(4)
    clock.tick()
    assert clock.line().startswith("stage 1/4 epochs, ETA ")
