"""tasks/core/numerics.py: a stage process computes the same bits whatever the user's shell
sets for the libraries' kernel switches (issue #30.1), and opting out restores them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tasks.core import numerics
from tests.conftest import OLDEST_KERNELS, REPO_ROOT

SWITCHES = (*numerics.PINNED, *numerics.CLEARED, numerics.MODE_ENV)
# two outer settings as two hosts would differ: the oldest kernels every library has, with
# more threads, against each library's own pick for this host
OLDEST = OLDEST_KERNELS
HOST_PICK: dict[str, str] = {}


def _probe(tmp_path, name: str, outer: dict[str, str]) -> bytes:
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env.update(outer)
    out = tmp_path / f"{name}.bin"
    proc = subprocess.run(
        [sys.executable, "-m", "tests.core.numerics_probe", str(out)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out.read_bytes()


def test_training_writes_identical_bytes_under_other_outer_settings(tmp_path):
    oldest = _probe(tmp_path, "oldest", OLDEST)
    host = _probe(tmp_path, "host", HOST_PICK)
    assert oldest == host


def test_native_keeps_the_outer_settings_and_they_change_the_bytes(tmp_path):
    """The control: without the pin the same two settings give other bits, so the test above
    can fail (on every x86-64 host: ATen's and oneDNN's oldest kernels are not their AVX2 ones)."""
    native = {numerics.MODE_ENV: "native"}
    oldest = _probe(tmp_path, "oldest", {**OLDEST, **native})
    host = _probe(tmp_path, "host", {**HOST_PICK, **native})
    assert oldest != host


def test_pin_overrides_the_shell_and_native_leaves_it(monkeypatch):
    for key in SWITCHES:
        monkeypatch.delenv(key, raising=False)
    for key, value in OLDEST.items():
        monkeypatch.setenv(key, value)
    assert numerics.pin() == "portable"
    assert {k: os.environ.get(k) for k in numerics.PINNED} == numerics.PINNED
    assert "MKL_ENABLE_INSTRUCTIONS" not in os.environ
    assert numerics.describe().startswith("portable (ATen avx2, oneDNN AVX2, MKL COMPATIBLE")

    for key, value in OLDEST.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv(numerics.MODE_ENV, "native")
    assert numerics.pin() == "native"
    assert {k: os.environ.get(k) for k in OLDEST} == OLDEST
    assert numerics.describe() == "native"


def test_an_unknown_mode_names_the_variable(monkeypatch):
    monkeypatch.setenv(numerics.MODE_ENV, "fastest")
    with pytest.raises(SystemExit, match="COREFREPRO_NUMERICS='fastest': expected one of "
                                         "portable, native"):  # fmt: skip
        numerics.pin()


def test_a_stage_process_is_pinned_before_torch_loads():
    """`python -m flows.<stage>` imports the flows package first: the pin is in place before
    any stage module imports torch, so torch itself runs its AVX2 kernels."""
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env.update(OLDEST)
    code = ("import flows, torch; torch.zeros(8).sum();"
            "print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    capability, threads = proc.stdout.split()
    assert (capability, threads) == ("AVX2", "1") or not numerics.host_has_pinned_level()


def test_a_damaged_numba_cache_is_cleared_and_rebuilt(tmp_path):
    """Issue #30.2: corrupted numba cache files gave an UnpicklingError/ValueError on every run
    until __pycache__ was cleared by hand. The cache lives under NUMBA_CACHE_DIR (the project's
    data/cache/numba by default) and is cleared and rebuilt on such an error."""
    cache = tmp_path / "numba"
    env = {**os.environ, numerics.NUMBA_CACHE_ENV: str(cache)}

    def run() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "tests.core.jit_probe"], cwd=REPO_ROOT,
                              env=env, capture_output=True, text=True, timeout=120)  # fmt: skip

    first = run().stdout.strip()
    assert float(first) > 0
    files = [p for p in cache.rglob("*") if p.suffix in (".nbi", ".nbc")]
    assert files, "numba wrote no cache under NUMBA_CACHE_DIR"
    for path in files:
        path.write_bytes(b"garbage\n")
    healed = run()
    # the same result: the retry draws the random numbers the failed call drew
    assert healed.returncode == 0 and healed.stdout.strip() == first, healed.stderr[-2000:]
    assert "is unreadable" in healed.stderr and "cleared, recompiling" in healed.stderr
    again = run()
    assert again.stdout.strip() == first and "unreadable" not in again.stderr


def test_stage_processes_cache_numba_code_under_the_project():
    env = {k: v for k, v in os.environ.items() if k != numerics.NUMBA_CACHE_ENV}
    code = "import flows, os; print(os.environ['NUMBA_CACHE_DIR'])"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, timeout=60).stdout.strip()  # fmt: skip
    assert out == str(REPO_ROOT / "data" / "cache" / "numba")
