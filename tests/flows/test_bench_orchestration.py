"""Benchmark: orchestration overhead per stage, measured side by side in one run.

    uv run pytest -m bench -s tests/test_bench_orchestration.py

Times the embedded default's stage commands (python -m flows.<stage> ...) in three modes:
local (no server: plain Python), Prefect with a running server, and Prefect's ephemeral
server. Overhead = median(mode) - median(local). Prints a table; never asserts a time.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import pytest

from tests.conftest import copy_checkout, run_ok

pytestmark = pytest.mark.bench

STAGES = [
    ("download", ["-m", "flows.download", "--corpus", "synthetic"]),
    ("normalize", ["-m", "flows.normalize", "--corpus", "synthetic"]),
    ("stats", ["-m", "flows.stats", "--corpus", "synthetic"]),
]
REPEATS = 5


def _time(args, cwd, env) -> float:
    t0 = time.perf_counter()
    run_ok([sys.executable, *args], cwd, env)
    return time.perf_counter() - t0


def test_orchestration_overhead_per_stage(tmp_path, prefect_server):
    base, home = prefect_server
    repo = tmp_path / "repo"
    env = copy_checkout(repo)
    run_ok([sys.executable, "-m", "dvc", "repro"], repo, env)  # data + warm MLflow db
    modes = {
        "local": {**env, "COREFREPRO_ORCHESTRATION": "local"},
        "prefect-server": {
            **env,
            "COREFREPRO_ORCHESTRATION": "auto",
            "PREFECT_HOME": str(home),
            "PREFECT_API_URL": f"{base}/api",
        },
        "prefect-ephemeral": {
            **env,
            "COREFREPRO_ORCHESTRATION": "prefect",
            "PREFECT_HOME": str(tmp_path / "ephemeral-home"),
        },
    }
    repeats = {"local": REPEATS, "prefect-server": REPEATS, "prefect-ephemeral": 2}
    results: dict[str, dict[str, float]] = {}
    for stage, args in STAGES:
        for mode, mode_env in modes.items():
            # interleave modes so machine noise hits all of them alike
            times = [_time(args, repo, mode_env) for _ in range(repeats[mode])]
            results.setdefault(stage, {})[mode] = statistics.median(times)
    print("\nstage       local s  server s  overhead s  ephemeral s  overhead s")
    for stage, r in results.items():
        print(
            f"{stage:<10} {r['local']:8.2f} {r['prefect-server']:9.2f} "
            f"{r['prefect-server'] - r['local']:11.2f} {r['prefect-ephemeral']:12.2f} "
            f"{r['prefect-ephemeral'] - r['local']:11.2f}"
        )
    print(json.dumps(results, indent=1))
    assert all(set(r) == set(modes) for r in results.values())
