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
