"""Tensor helpers shared by the model families (readers, e2e coreference)."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence


def reverse_padded(x: Tensor, lengths: Tensor) -> Tensor:
    """Each right-padded row of x [B, L, ...] reversed within its first lengths[b] steps,
    padding left in place: a backward RNN over padded batches starts at the last real token.
    Applying it twice gives x back."""
    t = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
    n = lengths.to(x.device).unsqueeze(1)
    index = torch.where(t < n, n - 1 - t, t)  # [B, L]
    index = index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, index)


def run_recurrent(rnn: nn.RNNBase, inputs: Tensor | PackedSequence, state=None):
    """rnn(inputs, state), in float32 with autocast off when CPU autocast is on.

    torch's CPU autocast casts nn.LSTM to bf16/fp16, and oneDNN has those LSTM kernels only on
    CPUs with avx512_bf16/AMX: elsewhere (AVX2) the call fails with "could not create a
    primitive descriptor for the LSTM forward propagation primitive". A GRU is not on
    autocast's list and runs in float32 anyway, so the recurrences of every family run in
    float32 on the CPU and the rest of the model (projections, attention, softmax) in bf16.
    On CUDA the call is left to autocast (cuDNN has bf16/fp16 RNNs)."""
    if not (torch.is_autocast_enabled("cpu") and next(rnn.parameters()).device.type == "cpu"):
        return rnn(inputs, state)
    with torch.autocast("cpu", enabled=False):
        return rnn(_as_float32(inputs), _as_float32(state))


def _as_float32(x):
    if x is None:
        return None
    if isinstance(x, PackedSequence):  # a namedtuple: before the tuple case
        return x._replace(data=x.data.float())
    if isinstance(x, tuple):
        return tuple(t.float() for t in x)
    return x.float()
