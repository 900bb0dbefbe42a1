"""Benchmark (issue #30.1): what pinning the numeric path costs, per model family.

    uv run pytest -m bench -s tests/core/test_bench_numerics.py

Each family's training step (tests/core/numerics_bench_probe.py: the families' own benchmark
steps, one thread) runs in stage-like processes, pinned (the default) and native
(COREFREPRO_NUMERICS=native), alternating ROUNDS times so that load from other work hits both
alike; the median step of each process, then the median over rounds. Printed as pinned ÷
native (above 1: pinning is slower). Never asserted. Nearly all of the cost is MKL's
COMPATIBLE branch (MKL_CBWR): the ATen and oneDNN AVX2 caps cost next to nothing on CPUs that
have AVX-512, and nothing on those that do not.
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


def _median_step(family: str, mode: str) -> float:
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env["COREFREPRO_NUMERICS"] = mode
    proc = subprocess.run(
        [sys.executable, "-m", "tests.core.numerics_bench_probe", family, str(REPEATS)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return float(proc.stdout.split()[-1])


def test_bench_pinned_vs_native_step_per_family():
    rows = []
    for family in FAMILIES:
        times: dict[str, list[float]] = {"portable": [], "native": []}
        for _ in range(ROUNDS):
            for mode in times:
                times[mode].append(_median_step(family, mode))
        pinned, native = (statistics.median(times[m]) for m in ("portable", "native"))
        rows.append((family, pinned, native))
    print(f"\nCPU step time, 1 thread, median of {ROUNDS} rounds x {REPEATS} steps")
    print("| family | pinned (s) | native (s) | pinned / native |\n|---|---|---|---|")
    for family, pinned, native in rows:
        print(f"| {family} | {pinned:.3f} | {native:.3f} | {pinned / native:.2f} |")
    assert all(p > 0 and n > 0 for _, p, n in rows)
