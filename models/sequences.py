"""Tensor helpers shared by the model families (readers, e2e coreference)."""

from __future__ import annotations

import torch
from torch import Tensor


def reverse_padded(x: Tensor, lengths: Tensor) -> Tensor:
    """Each right-padded row of x [B, L, ...] reversed within its first lengths[b] steps,
    padding left in place: a backward RNN over padded batches starts at the last real token.
    Applying it twice gives x back."""
    t = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
    n = lengths.to(x.device).unsqueeze(1)
    index = torch.where(t < n, n - 1 - t, t)  # [B, L]
    index = index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, index)
