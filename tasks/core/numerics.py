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
| oneDNN (torch LSTM/GRU) | ONEDNN_MAX_CPU_ISA | AVX2 | JIT kernels capped at that ISA |
| MKL (torch matmul) | MKL_CBWR | COMPATIBLE | Intel's CNR: the same results on Intel and compatible CPUs (the AVX2 branch promises it on Intel CPUs only) |
| OpenBLAS (numpy matmul) | OPENBLAS_CORETYPE | Haswell | one kernel set for every host |
| numpy's own SIMD loops | NPY_DISABLE_CPU_FEATURES | no AVX-512 groups | its AVX2 loops (exp, log, power differ from the AVX-512 ones) |
| numba (EntityNLM draws) | NUMBA_CPU_NAME/FEATURES | haswell, its own features | no 512-bit vectors in fastmath reductions |
| threads | OMP/MKL/OPENBLAS_NUM_THREADS | 1 | a reduction split the same way everywhere; a stage's own `threads` setting still sets torch's count explicitly |

`COREFREPRO_NUMERICS=native` opts out (the host's fastest kernels, the user's own variables):
faster, but outputs then differ from the committed dvc.lock in the last bits on other hosts.
The cost of pinning, per model family, is measured by tests/core/test_bench_numerics.py.

GPU training is not covered: cuDNN/cuBLAS pick algorithms per GPU model and driver, so a GPU
run is reproducible on the same GPU model, software and settings, not across GPU models.
"""

from __future__ import annotations

import functools
import logging
import os
import platform
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

MODE_ENV = "COREFREPRO_NUMERICS"
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
    """COREFREPRO_NUMERICS set to something else than portable or native."""


def mode() -> str:
    """portable (the default) or native, from COREFREPRO_NUMERICS."""
    value = os.environ.get(MODE_ENV, "portable").strip().lower() or "portable"
    if value not in MODES:
        raise NumericsModeError(f"{MODE_ENV}={value!r}: expected one of {', '.join(MODES)}")
    return value


def pin() -> str:
    """Set the switches of PINNED in this process's environment (inherited by its children)
    unless COREFREPRO_NUMERICS=native; returns the mode. Call before torch/numpy load. Either
    way numba caches its compiled code under the project's cache (NUMBA_CACHE_DIR, unless
    the shell sets it), where `heal_jit_cache` can clear it."""
    os.environ.setdefault(NUMBA_CACHE_ENV, str(DEFAULT_JIT_CACHE))
    chosen = mode()
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
    if not host_has_pinned_level():
        log.warning(
            "this host is not x86-64 with AVX2 and FMA: the pinned kernels do not "
            "exist here, so outputs may differ from the committed dvc.lock"
        )
    return chosen


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
        f"portable (ATen {PINNED['ATEN_CPU_CAPABILITY']}, oneDNN "
        f"{PINNED['ONEDNN_MAX_CPU_ISA']}, MKL {PINNED['MKL_CBWR']}, OpenBLAS "
        f"{PINNED['OPENBLAS_CORETYPE']}, numba {PINNED['NUMBA_CPU_NAME']}, threads "
        f"{PINNED['OMP_NUM_THREADS']})"
    )
