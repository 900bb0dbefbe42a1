"""Benchmark (issues #30.1, #57.2-3): what pinning the numeric path costs, per model family,
and how close each family's training comes to the machine's matmul speed.

    uv run pytest -m bench -s tests/core/test_bench_numerics.py

Each family's training step (tests/core/numerics_bench_probe.py: the families' own benchmark
steps, one thread) runs in stage-like processes, pinned (the default) and native
(COREFREPRO_NUMERICS=native), alternating ROUNDS times so that load from other work hits both
alike; the median step of each process, then the median over rounds. Printed as pinned ÷
native (above 1: pinning is slower); then, per mode, the step's FLOP/s (torch.utils.flop_counter:
matrix products and convolutions, forward and backward) ÷ the limit (each of the step's matrix
products timed alone at its shape, tests/core/numerics_bench_probe.py `matmul_limit`), times in
CPU seconds. Never asserted. Most of the cost is MKL's COMPATIBLE branch (MKL_CBWR), and for
EntityNLM oneDNN off (its step-at-a-time LSTMs); docs/experiments/numerics.md 2026-12-08.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.core.numerics_bench_probe import FAMILIES
from tests.core.test_numerics import SWITCHES

pytestmark = pytest.mark.bench

ROUNDS, REPEATS = 3, 5


def _probe(family: str, mode: str) -> tuple[float, float, float]:
    """(median step s, counted GFLOP a step, matmul limit GFLOP/s) of one probe process."""
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env["COREFREPRO_NUMERICS"] = mode
    proc = subprocess.run(
        [sys.executable, "-m", "tests.core.numerics_bench_probe", family, str(REPEATS), "--flops"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    step, gflop, limit = (float(v) for v in proc.stdout.split()[-3:])
    return step, gflop, limit


def test_bench_pinned_vs_native_step_per_family():
    """Issue #57.2-3: per family, pinned ÷ native step time, and in each mode the training
    FLOP/s (torch's counted matmul and convolution FLOPs of a step ÷ its median time) ÷ the
    same process's 1-thread matmul GFLOP/s at the family's own shapes."""
    rows = []
    for family in FAMILIES:
        runs: dict[str, list[tuple[float, float, float]]] = {"portable": [], "native": []}
        for _ in range(ROUNDS):
            for mode in runs:
                runs[mode].append(_probe(family, mode))
        medians = {m: [statistics.median(c) for c in zip(*r, strict=True)] for m, r in runs.items()}
        rows.append((family, medians))
    print(f"\nCPU step time, 1 thread, median of {ROUNDS} rounds x {REPEATS} steps")
    print("| family | pinned (s) | native (s) | pinned / native |\n|---|---|---|---|")
    for family, m in rows:
        pinned, native = m["portable"][0], m["native"][0]
        print(f"| {family} | {pinned:.3f} | {native:.3f} | {pinned / native:.2f} |")
    print("\n| family | mode | GFLOP a step | GFLOP/s | limit GFLOP/s | FLOP/s / limit |")
    print("|---|---|---|---|---|---|")
    for family, m in rows:
        for mode, (step, gflop, limit) in m.items():
            print(f"| {family} | {mode} | {gflop:.2f} | {gflop / step:.2f} | {limit:.2f} "
                  f"| {gflop / step / limit:.2f} |")  # fmt: skip
    assert all(v > 0 for _, m in rows for r in m.values() for v in r)
