"""A cached numba function behind `heal_jit_cache` (for tests/core/test_numerics.py):
`python -m tests.core.jit_probe` prints a dot product of seeded random numbers computed by
compiled code (the random numbers drawn before the compiled call, as in the EntityNLM draws)."""

from __future__ import annotations

import flows  # noqa: F401  (a stage process: numba's cache goes to NUMBA_CACHE_DIR)

# isort: split
import numpy as np
import torch
from numba import njit

from tasks.core.numerics import heal_jit_cache


@njit(cache=True)
def _dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@heal_jit_cache
def dot(n: int, generator: torch.Generator) -> float:
    x = torch.rand(n, generator=generator, dtype=torch.float64).numpy()
    return _dot(x, np.ones(n))


if __name__ == "__main__":
    print(repr(dot(10, torch.Generator().manual_seed(0))))
