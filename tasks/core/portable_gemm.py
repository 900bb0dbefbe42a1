"""aten's matrix products on CPU through numpy's OpenBLAS: the portable path's GEMM (#57.2).

Why: MKL's `COMPATIBLE` branch (MKL_CBWR), the only MKL setting that promises the same bits
on Intel and AMD, runs torch's matmuls 1.4-2.6x slower than the host's own branch. MKL's AVX2
branch is faster but not portable: a probe training run gave one set of bytes on this AMD host
and an emulated AMD (qemu EPYC-Milan) and another on an emulated Intel Haswell. OpenBLAS with
its kernel set pinned (OPENBLAS_CORETYPE=Haswell, tasks/core/numerics.py) runs the same code on
every x86-64-v3 host, and FMA rounds the same everywhere, so numpy's matmul gives the same bits
on every such host (tests/core/test_numerics.py's emulated CPUs) at about native speed.

`install(torch)` registers numpy-backed CPU kernels for GEMM_OPS, with their out= and in-place
variants, below autograd: torch's derivative formulas stay and call these kernels for their own
products. What is not listed (convolutions, attention's fused kernel, `addbmm`) keeps MKL's
`COMPATIBLE` branch, slower but also portable. float16 and bfloat16 multiply in float32 and
round once, as torch's CPU kernels accumulate them.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

# op -> (dims of its two matrix operands); the addX ops add `self` (beta * self + alpha * AB)
GEMM_OPS = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1)}
ADD_OPS = {"addmm": "mm", "baddbmm": "bmm", "addmv": "mv"}
_LIBRARIES: list[Any] = []  # the torch.library registrations, kept alive


def install(torch: Any) -> None:
    """Register the kernels in this process (functional, out= and in-place). Idempotent."""
    if _LIBRARIES:
        return
    library = torch.library.Library("aten", "IMPL")
    kernels = {op: functools.partial(_product, torch, op) for op in GEMM_OPS}
    kernels |= {op: functools.partial(_added, torch, base) for op, base in ADD_OPS.items()}
    with warnings.catch_warnings():  # "overriding a previously registered kernel": the point
        warnings.simplefilter("ignore", UserWarning)
        for op, kernel in kernels.items():
            library.impl(op, kernel, "CPU")
            library.impl(f"{op}.out", functools.partial(_into_out, kernel), "CPU")
            if op in ADD_OPS:
                library.impl(f"{op}_", functools.partial(_in_place, kernel), "CPU")
    _LIBRARIES.append(library)


def _product(torch: Any, op: str, a: Any, b: Any) -> Any:
    """`a @ b` as torch's `op` defines it (its operand dims and one dtype), computed by numpy."""
    import numpy as np

    dims = GEMM_OPS[op]
    if (a.dim(), b.dim()) != dims:
        raise RuntimeError(f"{op}: expected {dims[0]}-D and {dims[1]}-D tensors, "
                           f"got {a.dim()}-D and {b.dim()}-D")  # fmt: skip
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: expected both operands to have the same dtype, "
                           f"got {a.dtype} and {b.dtype}")  # fmt: skip
    dtype = a.dtype
    low = dtype in (torch.float16, torch.bfloat16)
    x, y = (_array(t.float() if low else t) for t in (a, b))
    try:
        out = np.asarray(np.matmul(x, y) if op != "dot" else np.dot(x, y))
    except ValueError as exc:  # numpy's shape error, as torch's own RuntimeError
        raise RuntimeError(f"{op}: {exc}") from None
    result = torch.from_numpy(out)  # numpy's new array (0-d for dot, as torch's)
    return result.to(dtype) if low else result


def _array(t: Any) -> Any:
    return t.detach().resolve_conj().resolve_neg().numpy()


def _added(torch: Any, base: str, self: Any, a: Any, b: Any, *, beta: Any = 1,
           alpha: Any = 1) -> Any:  # fmt: skip
    """beta * self + alpha * (a @ b), torch's addmm/baddbmm/addmv; beta 0 ignores self
    (NaN included), as torch does."""
    product = _product(torch, base, a, b)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product
    return (self if beta == 1 else self * beta) + product


def _into_out(kernel: Any, *args: Any, out: Any, **kwargs: Any) -> Any:
    result = kernel(*args, **kwargs)
    if out.shape != result.shape:
        out.resize_(result.shape)
    return out.copy_(result)


def _in_place(kernel: Any, self: Any, *args: Any, **kwargs: Any) -> Any:
    return self.copy_(kernel(self, *args, **kwargs))
