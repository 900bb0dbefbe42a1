"""The quick loop (`pytest -m 'not slow'`) and the default run leave the benchmarks out;
`-m bench` runs them."""

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
