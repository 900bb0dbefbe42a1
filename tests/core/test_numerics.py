"""tasks/core/numerics.py: a stage process computes the same bits whatever the user's shell
sets for the libraries' kernel switches (issue #30.1), and opting out restores them; the mode
is params.yaml's numerics, tracked by every stage, portable in the committed lock (#57.1)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from tasks.core import config, numerics
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
    monkeypatch.setattr(numerics, "_PINNED", list(numerics._PINNED))  # this process stays portable
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


# ------------------------------------------------- where the promise holds (issue #57.1)


@pytest.fixture
def stage_process(monkeypatch):
    """This process as a stage DVC runs (DVC_STAGE set, COREFREPRO_NUMERICS unset) whose pin
    record and mode variable are put back afterwards."""
    monkeypatch.setattr(numerics, "_PINNED", list(numerics._PINNED))
    monkeypatch.setenv(numerics.STAGE_ENV, "train_mage@ga-syn2")
    monkeypatch.setenv(numerics.MODE_ENV, "")  # empty: unset (and restored afterwards)
    return monkeypatch


def _params(tmp_path, mode: str):
    path = tmp_path / "params.yaml"
    path.write_text(f"corpora: [synthetic]\nnumerics: {mode}\ntrain_mage: {{seeds: [1]}}\n")
    return path


def test_every_stage_tracks_the_numerics_mode():
    """dvc.yaml: `numerics` is a param of every stage, so a changed mode reruns every stage
    and dvc.lock records the mode each output was made in."""
    stages = config.read_yaml(REPO_ROOT / "dvc.yaml")["stages"]
    untracked = [name for name, stage in stages.items()
                 if numerics.PARAM not in (stage.get("do", stage).get("params") or [])]  # fmt: skip
    assert stages and not untracked


def not_portable(lock: dict, numerics_md5: str) -> dict[str, object]:
    """The stages of a dvc.lock made by this tasks/core/numerics.py (its md5 among their
    deps) that do not record numerics: portable, with what they record. An entry made by
    another version of it is a stale lock, whatever its mode: `dvc status` names it, and the
    next `dvc repro` rewrites it under this rule."""
    other = {}
    for name, entry in (lock.get("stages") or {}).items():
        deps = {d.get("path"): d.get("md5") for d in entry.get("deps") or []}
        if deps.get("tasks/core/numerics.py") != numerics_md5:
            continue
        mode = ((entry.get("params") or {}).get("params.yaml") or {}).get(numerics.PARAM)
        if mode != "portable":
            other[name] = mode
    return other


def test_the_committed_lock_was_made_on_the_portable_path():
    """The bytes in git come from the pinned kernels only: params.yaml says portable, and no
    stage of dvc.lock made by this code records another mode. A lock made with
    `-S numerics=native` (a preset, an experiment) fails here: restore params.yaml and dvc.lock
    from git, or reproduce them in portable mode."""
    assert numerics.configured(REPO_ROOT / "params.yaml") == "portable"
    md5 = hashlib.md5((REPO_ROOT / "tasks/core/numerics.py").read_bytes()).hexdigest()
    other = not_portable(config.read_yaml(REPO_ROOT / "dvc.lock"), md5)
    assert not other, f"dvc.lock stages not made in portable mode: {other}"


def test_the_lock_check_flags_a_native_or_unrecorded_stage_made_by_this_code():
    def entry(md5, mode=None):
        params = {"params.yaml": {"train_mage.seeds": [1], **({"numerics": mode} if mode else {})}}
        return {"deps": [{"path": "flows/x.py", "md5": "a"},
                         {"path": "tasks/core/numerics.py", "md5": md5}], "params": params}  # fmt: skip

    lock = {"stages": {"a": entry("now", "portable"), "b": entry("now", "native"),
                       "c": entry("now"), "d": entry("before", "native")}}  # fmt: skip
    assert not_portable(lock, "now") == {"b": "native", "c": None}


def test_a_dvc_stage_runs_the_mode_params_yaml_tracks(tmp_path, stage_process):
    assert numerics.pin(_params(tmp_path, "native")) == "native"
    assert os.environ[numerics.MODE_ENV] == "native"  # its children run the same mode
    assert numerics.describe() == "native"
    stage_process.setenv(numerics.MODE_ENV, "")
    assert numerics.pin(_params(tmp_path, "portable")) == "portable"
    assert numerics.describe().startswith("portable (ATen avx2")


def test_a_dvc_stage_refuses_a_shell_that_contradicts_the_tracked_mode(tmp_path, stage_process):
    """`COREFREPRO_NUMERICS=native dvc repro` would record portable in dvc.lock for natively
    made bytes: the stage stops with one line naming both settings."""
    params = _params(tmp_path, "portable")
    stage_process.setenv(numerics.MODE_ENV, "native")
    with pytest.raises(numerics.NumericsModeError, match=rf"COREFREPRO_NUMERICS=native but "
                       rf"{params} says numerics: portable, .*-S numerics=native"):  # fmt: skip
        numerics.pin(params)
    stage_process.setenv(numerics.MODE_ENV, "portable")  # agreeing with it is fine
    assert numerics.pin(params) == "portable"


def test_a_stage_process_under_dvc_exits_with_the_one_line():
    env = {**os.environ, numerics.STAGE_ENV: "stats@synthetic", numerics.MODE_ENV: "native"}
    proc = subprocess.run([sys.executable, "-c", "import flows"], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"COREFREPRO_NUMERICS=native but {REPO_ROOT / 'params.yaml'} says numerics: portable, "
        "the mode DVC records for this stage (stats@synthetic): set it there (`dvc exp run -S "
        "numerics=native`; the presets run native) and unset COREFREPRO_NUMERICS"
    ]


def test_outside_dvc_the_shell_overrides_params_yaml(tmp_path, stage_process):
    """A probe, a benchmark or a stage module run by hand: COREFREPRO_NUMERICS wins, else
    params.yaml's numerics; the tests' own process pins portable (params_file=None)."""
    stage_process.delenv(numerics.STAGE_ENV)
    params = _params(tmp_path, "native")
    assert numerics.pin(params) == "native"
    stage_process.setenv(numerics.MODE_ENV, "portable")
    assert numerics.pin(params) == "portable"
    stage_process.setenv(numerics.MODE_ENV, "")
    assert numerics.pin(params_file=None) == "portable"


def test_an_unknown_mode_in_params_yaml_names_the_file_and_key(tmp_path):
    params = _params(tmp_path, "fast")
    with pytest.raises(numerics.NumericsModeError,
                       match=rf"{params}: numerics: 'fast': expected one of portable, native"):  # fmt: skip
        numerics.configured(params)
