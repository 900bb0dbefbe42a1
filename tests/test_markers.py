"""The default run leaves the benchmarks and the slow tests out; `-m bench` / `-m slow` run
them, and so does naming a slow test's file."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

BENCH = "tests/models/mage/test_bench_mage.py"


def _collected(*args: str) -> str:
    cmd = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", *args]
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120).stdout


@pytest.mark.parametrize("args", [(), ("-m", "not slow")], ids=["default", "not-slow"])
def test_benchmarks_are_left_out_unless_asked_for(args):
    out = _collected(*args, BENCH)
    assert "::" not in out and "deselected" in out


def test_dash_m_bench_collects_them():
    assert "test_bench_mage.py::" in _collected("-m", "bench", BENCH)


SLOW = "tests/flows/test_prefect_server.py"


def test_default_run_leaves_slow_tests_out_of_a_directory_but_not_of_a_named_file():
    quick = _collected("tests/flows")
    assert "test_flows.py::" in quick and "test_prefect_server.py::" not in quick
    assert "test_prefect_server.py::" in _collected(SLOW)
    assert "test_prefect_server.py::" in _collected("-m", "slow", "tests/flows")
    assert "test_prefect_server.py::" not in _collected("-m", "not slow", SLOW)


def test_loadgroup_keeps_each_one_worker_module_together_and_spreads_the_rest():
    """.ci/run's slow run: a module whose tests change one module fixture in order stays on one
    worker (its node ids share one scope); any other test is a scope of its own."""
    from tests.conftest import ONE_WORKER_MODULES, ModuleGroups

    scheduler = object.__new__(ModuleGroups)  # _split_scope reads no scheduler state
    for module in ONE_WORKER_MODULES:
        assert (REPO_ROOT / module).is_file(), f"{module}: renamed? ONE_WORKER_MODULES names it"
        scopes = {scheduler._split_scope(f"{module}::test_{i}") for i in range(3)}
        assert scopes == {module}
    other = "tests/flows/test_presets_smoke.py::test_every_preset[corelm]"
    assert scheduler._split_scope(other) == other
