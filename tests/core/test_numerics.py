"""tasks/core/numerics.py: a stage process computes the same bits whatever the user's shell
sets for the libraries' kernel switches (issue #30.1), and opting out restores them."""

from __future__ import annotations

import os
import shutil
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
    assert numerics.describe().startswith("portable (ATen avx2, oneDNN off, MKL COMPATIBLE")

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


# ---------------------------------------------------------------- the kernels MKL's VML serves


def test_the_pinned_sqrt_family_is_numpys_on_every_layout_and_dtype():
    """torch's CPU sqrt (Adam's exp_avg_sq.sqrt()), atan, asin, acos, log2 and log10 come from
    numpy in a pinned process (numerics.exact_kernels): MKL's COMPATIBLE sqrt is not correctly
    rounded and its last bits depend on the CPU. Without the kernels, sqrt differs from the
    IEEE square root in a few of these 100,000 values (seen on Intel and on an emulated AMD)."""
    import numpy as np
    import torch

    x = torch.rand(100_003, generator=torch.Generator().manual_seed(0)) * 0.98 + 0.01
    for op, name in numerics.EXACT_KERNELS.items():
        expected = torch.from_numpy(getattr(np, name)(x.numpy()))
        assert torch.equal(getattr(torch, op)(x), expected), op
        assert torch.equal(getattr(x.clone(), f"{op}_")(), expected), f"{op}_"
        out = torch.empty(0)
        assert torch.equal(getattr(torch, op)(x, out=out), expected) and out.shape == x.shape
    strided = x[:100_000].view(100, 1000).t()  # not contiguous
    assert torch.equal(strided.sqrt(), torch.from_numpy(np.sqrt(strided.numpy())))
    assert torch.sqrt(torch.tensor([4, 9])).tolist() == [2.0, 3.0]  # ints promote, as torch does
    assert torch.sqrt(x[:8].bfloat16()).dtype == torch.bfloat16
    assert torch.sqrt(x[:8].double()).dtype == torch.float64
    leaf = x[:16].clone().requires_grad_()
    leaf.sqrt().sum().backward()  # torch's own derivative formula still applies
    assert torch.allclose(leaf.grad, 0.5 / leaf.detach().sqrt())


QEMU = shutil.which("qemu-x86_64")


@pytest.mark.slow
@pytest.mark.skipif(QEMU is None, reason="qemu-x86_64 (Debian qemu-user) is not installed")
def test_the_probe_writes_the_same_bytes_on_an_emulated_cpu(tmp_path, cpu="EPYC-Milan"):
    """Another vendor's CPU (AMD Zen 3; this host is whatever CI gives), emulated (qemu-user: its own CPUID, exact IEEE arithmetic, its own
    results for the approximate instructions): the stage-process probe writes the bytes it
    writes on this host. This is how MKL's sqrt was found (the first differing op of a training
    step, Adam's), and what a fresh clone on another host relies on."""
    host = _probe(tmp_path, "host", {})
    env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    out = tmp_path / f"{cpu}.bin"
    proc = subprocess.run(
        [QEMU, "-cpu", cpu, os.path.realpath(sys.executable), "-m", "tests.core.numerics_probe",
         str(out)], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1500,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert out.read_bytes() == host
