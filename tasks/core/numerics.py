"""The numeric path of every stage process: the same float bits on any x86-64 host with AVX2.

Why: PyTorch, oneDNN, MKL, OpenBLAS, numpy and numba each pick their kernels by the CPU they
run on (AVX-512 here, AVX2 there, a vendor-specific BLAS path elsewhere) and split reductions
by the thread count. Every one of those choices changes the last bits of a sum, and training
turns last bits into other weights: on another host a fresh clone's `dvc repro` rewrote the
trained models, their metrics and everything built from them (issue #30.1). The same 30-step
LSTM training gave four weight hashes on one machine under four ATEN/oneDNN settings.

`pin()` runs first in every stage process (flows/__init__.py, before anything imports torch or
numpy) and sets each library's own switch to a level every x86-64-v3 host (AVX2 + FMA: Intel
since Haswell, AMD since Zen) has, overriding whatever the user's shell says:

| library | switch | pinned to | promise it rests on |
| --- | --- | --- | --- |
| ATen (torch CPU ops) | ATEN_CPU_CAPABILITY | avx2 | one compiled kernel per level, vendor-neutral code |
| oneDNN (torch's LSTM, conv) | torch.backends.mkldnn.enabled | off (torch's own kernels on MKL's gemm) | none needed; ONEDNN_MAX_CPU_ISA stays capped at AVX2 for any library that calls it anyway |
| MKL (torch matmul) | MKL_CBWR | COMPATIBLE | Intel's CNR: the same results on Intel and compatible CPUs (the AVX2 branch promises it on Intel CPUs only) |
| OpenBLAS (numpy matmul) | OPENBLAS_CORETYPE | Haswell | one kernel set for every host |
| numpy's own SIMD loops | NPY_DISABLE_CPU_FEATURES | no AVX-512 groups | its AVX2 loops (exp, log, power differ from the AVX-512 ones) |
| numba (EntityNLM draws) | NUMBA_CPU_NAME/FEATURES | haswell, its own features | no 512-bit vectors in fastmath reductions |
| threads | OMP/MKL/OPENBLAS_NUM_THREADS | 1 | a reduction split the same way everywhere; a stage's own `threads` setting still sets torch's count explicitly |
| MKL VML, libm (torch's sqrt, atan, asin, acos, log2, log10 on CPU) | aten kernels replaced (`exact_kernels`) | numpy's loops | IEEE sqrt (correctly rounded everywhere); numpy's own AVX2 loops for the others |

MKL's `COMPATIBLE` branch does not cover everything: torch computes `sqrt` (every Adam,
AdaGrad and RAdam step: exp_avg_sq.sqrt()) and atan/asin/acos with MKL's vector math (VML),
whose `COMPATIBLE` sqrt is not correctly rounded and gives other last bits on another CPU
(issue #30 follow-up: an Intel Sapphire Rapids host rewrote every trained output of a lock
made on AMD EPYC; an emulated CPU (qemu-user) shows the same, 8 against 6 of 320 square roots
one ulp off; the first differing op of a coreference training step is Adam's sqrt). The
replaced kernels compute them with numpy, whose sqrt is the IEEE instruction. log2 and log10
(not MKL's) differed under the emulated CPU too and go the same way. exp, log, erf, tan and
the others agree between the host and the emulated CPU, so they stay. Left: `x.pow(0.5)`
calls VML's sqrt inside torch's pow kernel (no project code does; use sqrt).

oneDNN is off because nothing here can check it across CPUs: its JIT code (the LSTM's gemm)
crashes under the emulator, so a difference of its kernels between CPUs would go unseen.
With both, tests/core/numerics_probe.py (LSTM, conv, linear, Adam, numpy, OpenBLAS, numba)
writes the same bytes on this host and on an emulated AMD EPYC and Intel Haswell
(tests/core/test_numerics.py).

Where the promise holds (issue #57.1): the pin costs 1.4-5.5x in training step time, and it
pays only where bytes are committed -- the embedded default, its dvc.lock, CI. The mode is
params.yaml's top-level `numerics` (portable | native), a param every stage of dvc.yaml
tracks, so a changed mode reruns every stage and dvc.lock records the mode each output was
made in; params.yaml says portable (the committed default), the presets set native
(tasks/core/presets.py), and `-S numerics=portable` puts a preset back on the pinned path.
tests/core/test_numerics.py fails when the committed dvc.lock records any other mode than
portable. Under DVC (DVC_STAGE set) the tracked setting decides: COREFREPRO_NUMERICS, when the
shell sets it, must agree, so no lock can record portable for outputs made natively. Outside
DVC (a probe, a benchmark, a stage module run by hand) COREFREPRO_NUMERICS=native|portable
overrides params.yaml. Native is the host's fastest kernels and the user's own variables:
reproducible on that host only. The cost of pinning, per model family, is measured by
tests/core/test_bench_numerics.py.

Threads (issue #57.4): the bytes depend on the thread count too (the embedded default's
MAGE-GRU item trained with 2 torch threads wrote another best.pt than with 1, portable mode).
So a portable run keeps the count its settings give (`threads: 1` in params.yaml, recorded in
each run's MLflow tags), and the cores beyond one are used by running a stage's independent
seeds as parallel processes of one thread each (a training stage's `workers`: the same bytes
as one after the other). `threads: auto` -- this process's share of the cores, `cores()` -- is
refused in portable mode and allowed in native mode, where bytes are the host's anyway.

GPU training is not covered: cuDNN/cuBLAS pick algorithms per GPU model and driver, so a GPU
run is reproducible on the same GPU model, software and settings, not across GPU models.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import logging
import os
import platform
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tasks.core.config import PARAMS_FILE, read_yaml  # yaml only: no numeric library loads
from tasks.core.errors import CorefreproError

T = TypeVar("T")

MODE_ENV = "COREFREPRO_NUMERICS"
PARAM = "numerics"  # params.yaml's top-level setting, tracked by every stage of dvc.yaml
STAGE_ENV = "DVC_STAGE"  # DVC sets it for every stage command it runs
# how many processes of one stage run at once on this machine, each with its share of the
# cores: set in the workers of a stage's process pool (flows/runtime.py); torchrun sets
# LOCAL_WORLD_SIZE for its data-parallel processes
JOBS_ENV = "COREFREPRO_JOBS"
NUMBA_CACHE_ENV = "NUMBA_CACHE_DIR"
# numba's compiled-code cache: the project's own (gitignored), not __pycache__ beside the code
DEFAULT_JIT_CACHE = Path(__file__).resolve().parents[2] / "data" / "cache" / "numba"
MODES = ("portable", "native")

# the library switches and the level each is pinned to (the table above)
PINNED: dict[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "DNNL_MAX_CPU_ISA": "AVX2",  # oneDNN's older name for the same switch
    "MKL_CBWR": "COMPATIBLE",
    "OPENBLAS_CORETYPE": "Haswell",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
    "NUMBA_CPU_NAME": "haswell",
    "NUMBA_CPU_FEATURES": "",  # empty: the CPU name's own features, not the host's
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}
# switches that would contradict the pinned ones if the user's shell set them
CLEARED = ("MKL_ENABLE_INSTRUCTIONS", "NPY_ENABLE_CPU_FEATURES", "MKL_DEBUG_CPU_TYPE")
# libraries that read their switch once, when they load: pinning after them comes too late
_EARLY = ("torch", "numpy", "numba")

log = logging.getLogger("corefrepro")


class NumericsModeError(SystemExit):
    """A numerics mode other than portable or native, or a shell that contradicts the mode a
    DVC stage tracks."""


_PINNED: list[str] = []  # the mode pin() chose in this process


def _checked(value: str, where: str) -> str:
    """*value* if it is a mode, else the one-line error naming *where* it was set."""
    if value not in MODES:
        raise NumericsModeError(f"{where}: expected one of {', '.join(MODES)}")
    return value


def _shell() -> str | None:
    """COREFREPRO_NUMERICS as the shell sets it (None when unset or empty)."""
    value = os.environ.get(MODE_ENV, "").strip().lower()
    return _checked(value, f"{MODE_ENV}={value!r}") if value else None


def configured(params_file: Path | None = PARAMS_FILE) -> str | None:
    """params.yaml's `numerics` (portable or native); None without the file or the key."""
    if params_file is None or not Path(params_file).is_file():
        return None
    data = read_yaml(params_file)
    value = data.get(PARAM) if isinstance(data, dict) else None
    if value is None:
        return None
    value = str(value).strip().lower()
    return _checked(value, f"{params_file}: {PARAM}: {value!r}")


def mode(params_file: Path | None = PARAMS_FILE) -> str:
    """The mode of this process: COREFREPRO_NUMERICS when set, else the one pin() chose, else
    params.yaml's `numerics`, else portable."""
    return _shell() or (_PINNED[-1] if _PINNED else None) or configured(params_file) or "portable"


def stage_mode(params_file: Path | None = PARAMS_FILE) -> str:
    """The mode of a stage DVC runs: params.yaml's `numerics`, the value dvc.lock records.
    COREFREPRO_NUMERICS may only agree with it: a shell's `native` under a lock that says
    portable would commit native bytes as portable ones (issue #57.1)."""
    tracked = configured(params_file) or "portable"
    shell = _shell()
    if shell is not None and shell != tracked:
        raise NumericsModeError(
            f"{MODE_ENV}={shell} but {params_file} says {PARAM}: {tracked}, the mode DVC "
            f"records for this stage ({os.environ.get(STAGE_ENV)}): set it there "
            f"(`dvc exp run -S {PARAM}={shell}`; the presets run native) and unset {MODE_ENV}"
        )
    return tracked


def pin(params_file: Path | None = PARAMS_FILE) -> str:
    """Set the switches of PINNED in this process's environment (inherited by its children)
    unless the mode is native; returns the mode. The mode: a DVC stage's tracked setting
    (stage_mode), else mode(); *params_file* None ignores params.yaml (the tests: portable
    unless COREFREPRO_NUMERICS says otherwise). Call before torch/numpy load. Either way numba
    caches its compiled code under the project's cache (NUMBA_CACHE_DIR, unless the shell sets
    it), where `heal_jit_cache` can clear it."""
    os.environ.setdefault(NUMBA_CACHE_ENV, str(DEFAULT_JIT_CACHE))
    if os.environ.get(STAGE_ENV):
        chosen = stage_mode(params_file)
        os.environ[MODE_ENV] = chosen  # the stage's children run the same mode
    else:
        chosen = _shell() or configured(params_file) or "portable"
    _PINNED.append(chosen)
    if chosen == "native":
        return chosen
    already = all(os.environ.get(k) == v for k, v in PINNED.items())
    late = [name for name in _EARLY if name in sys.modules]
    for name in CLEARED:
        os.environ.pop(name, None)
    os.environ.update(PINNED)
    if late and not already:  # an embedding program loaded them first; children get the pin
        log.warning(
            "numerics pinned after %s loaded: this process may keep their native "
            "kernels (call tasks.core.numerics.pin() first)",
            ", ".join(late),
        )
    _after_import("torch", portable_torch)
    if not host_has_pinned_level():
        log.warning(
            "this host is not x86-64 with AVX2 and FMA: the pinned kernels do not "
            "exist here, so outputs may differ from the committed dvc.lock"
        )
    return chosen


class ThreadsError(CorefreproError):
    """`threads: auto` in portable mode, where the bytes depend on the thread count."""


def cores() -> int:
    """The cores this process may use: the CPUs it may run on (its affinity, which a
    container's or taskset's limit narrows) divided among the stage's processes running at
    once (JOBS_ENV, torchrun's LOCAL_WORLD_SIZE); at least 1."""
    try:
        available = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        available = os.cpu_count() or 1
    jobs = max(int(os.environ.get(JOBS_ENV) or 1), int(os.environ.get("LOCAL_WORLD_SIZE") or 1))
    return max(1, available // jobs)


def threads(value: int | str | None, setting: str) -> int | None:
    """The torch thread count a `threads` setting asks for: a number as it is; `auto` this
    process's share of the cores (`cores()`), in native mode only (portable bytes depend on
    the count, so portable keeps a fixed one); None: torch's own default (None)."""
    if value != "auto":
        return None if value is None else int(value)
    if mode() != "native":
        raise ThreadsError(
            f"{setting}: auto needs numerics: native (portable results depend on the thread "
            "count, so a portable run fixes it: give a number, e.g. 1, and use the other cores "
            "with the stage's workers)"
        )
    return cores()


# aten ops whose CPU kernel (MKL VML) depends on the host, and the numpy function computing
# them the same way everywhere (see the module docstring)
EXACT_KERNELS = {
    "sqrt": "sqrt",
    "atan": "arctan",
    "asin": "arcsin",
    "acos": "arccos",
    "log2": "log2",
    "log10": "log10",
}
_LIBRARIES: list[Any] = []  # the torch.library registrations, kept alive


def portable_torch(torch: Any) -> None:
    """What a pinned process sets in torch once it is loaded: oneDNN off (torch's own
    convolution and LSTM kernels, on MKL's gemm: see the module docstring) and the exact
    kernels. Idempotent."""
    torch.backends.mkldnn.enabled = False
    exact_kernels(torch)


def exact_kernels(torch: Any) -> None:
    """Register numpy-backed CPU kernels for EXACT_KERNELS (functional, in-place and out=
    variants) in this process; autograd keeps torch's own derivative formulas. Idempotent."""
    if _LIBRARIES:
        return
    import warnings

    import numpy as np

    library = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():  # "overriding a previously registered kernel": the point
        warnings.simplefilter("ignore", UserWarning)
        for op, name in EXACT_KERNELS.items():
            fn = getattr(np, name)
            library.impl(op, functools.partial(_exact, torch, fn), "CPU")
            library.impl(f"{op}_", functools.partial(_exact_inplace, torch, fn), "CPU")
            library.impl(f"{op}.out", functools.partial(_exact_out, torch, fn), "CPU")
    _LIBRARIES.append(library)


def _exact(torch: Any, fn: Callable, x: Any) -> Any:
    """fn(x) computed by numpy: float16/32/64 and complex as they are, bfloat16 through
    float32, integers and bool promoted to torch's default float dtype (as torch.sqrt does)."""
    import numpy as np

    dtype = x.dtype
    if dtype == torch.bfloat16:
        return _exact(torch, fn, x.float()).to(dtype)
    if not (dtype.is_floating_point or dtype.is_complex):
        x, dtype = x.to(torch.get_default_dtype()), torch.get_default_dtype()
    out = np.asarray(fn(x.detach().contiguous().numpy()))  # a 0-d input gives a numpy scalar
    return torch.from_numpy(out.reshape(x.shape)).to(dtype)


def _exact_inplace(torch: Any, fn: Callable, x: Any) -> Any:
    return x.copy_(_exact(torch, fn, x))


def _exact_out(torch: Any, fn: Callable, x: Any, *, out: Any) -> Any:
    result = _exact(torch, fn, x)
    out.resize_(result.shape)
    return out.copy_(result)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `then(module)` right after `name` is first imported (a finder ahead of the others
    that wraps the real loader's exec_module), so that a process that pins before torch loads
    gets the exact kernels whichever module imports torch first."""

    def __init__(self, name: str, then: Callable[[Any], None]) -> None:
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def run(module: Any) -> None:
            exec_module(module)
            self.then(module)

        spec.loader.exec_module = run  # type: ignore[method-assign]
        return spec


def _after_import(name: str, then: Callable[[Any], None]) -> None:
    """then(module) now if `name` is loaded, else right after it loads (once)."""
    if name in sys.modules:
        then(sys.modules[name])
    elif not any(isinstance(f, _AfterImport) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(name, then))


@functools.cache
def host_has_pinned_level() -> bool:
    """x86-64 with AVX2 and FMA (x86-64-v3), the level PINNED names; unknown counts as yes."""
    if platform.machine().lower() not in {"x86_64", "amd64"}:
        return False
    try:
        with open("/proc/cpuinfo") as fh:
            flags = next(
                (line.split(":", 1)[1].split() for line in fh if line.startswith("flags")), None
            )
    except OSError:
        return True
    return flags is None or {"avx2", "fma"} <= set(flags)


def heal_jit_cache(entry: Callable[..., T]) -> Callable[..., T]:
    """Wrap a Python function that runs numba-compiled code: when numba fails to read its
    cache (a damaged index or data file: UnpicklingError, ValueError, EOFError on every run
    until the files go), clear the cache folder, say so, and call again -- numba then
    compiles afresh and rewrites the cache."""

    @functools.wraps(entry)
    def healed(*args: Any, **kwargs: Any) -> T:
        restore = _random_states(args, kwargs)
        try:
            return entry(*args, **kwargs)
        except Exception as exc:
            if not _raised_by_numba_cache(exc):
                raise
            folder = Path(os.environ.get(NUMBA_CACHE_ENV) or DEFAULT_JIT_CACHE)
            log.warning("numba cache under %s is unreadable (%s: %s): cleared, recompiling",
                        folder, type(exc).__name__, str(exc)[:120])  # fmt: skip
            shutil.rmtree(folder, ignore_errors=True)
            restore()  # the retry draws the same random numbers the failed call drew
            return entry(*args, **kwargs)

    return healed


def _random_states(args: tuple, kwargs: dict) -> Callable[[], None]:
    """A function that puts back the random states a call may consume: torch's global one and
    those of the torch.Generator arguments (torch loaded by the caller, never here)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return lambda: None
    generators = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Generator)]
    saved = [(g, g.get_state()) for g in generators]
    global_state = torch.get_rng_state()

    def restore() -> None:
        torch.set_rng_state(global_state)
        for generator, state in saved:
            generator.set_state(state)

    return restore


def _raised_by_numba_cache(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.replace(os.sep, "/").endswith("numba/core/caching.py"):
            return True
        tb = tb.tb_next
    return False


def describe() -> str:
    """One line for run tags and logs: the mode and, when portable, the pinned levels."""
    if mode() == "native":
        return "native"
    return (
        f"portable (ATen {PINNED['ATEN_CPU_CAPABILITY']}, oneDNN off, MKL "
        f"{PINNED['MKL_CBWR']}, OpenBLAS "
        f"{PINNED['OPENBLAS_CORETYPE']}, numba {PINNED['NUMBA_CPU_NAME']}, threads "
        f"{PINNED['OMP_NUM_THREADS']}, exact {'/'.join(EXACT_KERNELS)})"
    )
