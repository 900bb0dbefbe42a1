"""Tensor helpers shared by the model families (readers, e2e coreference)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
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
        return _call(rnn, inputs, state)
    with torch.autocast("cpu", enabled=False):
        return _call(rnn, _as_float32(inputs), _as_float32(state))


USE_PACKED_LSTM = True  # False: torch's own packed kernel (the benchmarks' "before")


def _call(rnn, inputs, state):
    if USE_PACKED_LSTM and isinstance(inputs, PackedSequence) and _packed_lstm_applies(rnn, inputs):
        return packed_lstm(rnn, inputs, state)
    return rnn(inputs, state)


def _packed_lstm_applies(rnn, inputs: PackedSequence) -> bool:
    """Where torch runs its own packed kernel (ATen's PackedLayer): a one-layer CPU LSTM, unless
    oneDNN is on and every sequence has the same length (torch then calls oneDNN's LSTM,
    faster, with its own bits; tests/models/test_sequences.py checks both cases)."""
    sizes = inputs.batch_sizes
    onednn = (torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled
              and bool(sizes[0] == sizes[-1]))  # fmt: skip
    return (type(rnn) is nn.LSTM and rnn.num_layers == 1 and rnn.bias and rnn.proj_size == 0
            and inputs.data.device.type == "cpu" and not onednn)  # fmt: skip


def packed_lstm(lstm: nn.LSTM, inputs: PackedSequence, state=None):
    """`lstm(inputs, state)` for a one-layer nn.LSTM on packed sequences on the CPU, the same
    float bits forward and backward (tests/models/test_sequences.py), in time linear in the
    sequence length.

    torch's CPU kernel for packed input (ATen RNN.cpp, PackedLayer / ReversedPackedLayer, the
    same with oneDNN on or off) projects the packed inputs once and then narrows the
    projection step by step; the backward of each narrow is a zero tensor the size of the
    whole projection, so its backward grows with steps x words (issue #57.3: most of
    EntityNLM's bidirectional proposal's step, and the superlinear packed GRU of
    models/mage/readers.py). This runs the same cell operations in the same order (the
    projection, per step the hidden projection added to it, the gates, the state update;
    the reverse direction from the last step, growing its batch) and splits the projection
    once, so its backward is one concatenation."""
    data, batch_sizes, sorted_indices, unsorted_indices = inputs
    sizes = batch_sizes.tolist()
    directions = 2 if lstm.bidirectional else 1
    if state is None:
        zeros = data.new_zeros(directions, sizes[0], lstm.hidden_size)
        state = (zeros, zeros.clone())
    elif sorted_indices is not None:
        state = tuple(s.index_select(1, sorted_indices) for s in state)
    h0, c0 = state[0].unbind(0), state[1].unbind(0)
    outputs, finals = [], []
    for d in range(directions):
        suffix = "_reverse" if d else ""
        w_ih, w_hh, b_ih, b_hh = (getattr(lstm, f"{name}_l0{suffix}")
                                  for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))  # fmt: skip
        steps = F.linear(data, w_ih, b_ih).split(sizes)
        run = _reverse_layer if d else _forward_layer
        out, final = run(steps, sizes, (h0[d], c0[d]), w_hh, b_hh)
        outputs.append(out)
        finals.append(final)
    out = outputs[0] if directions == 1 else torch.cat(outputs, -1)
    h_n = torch.stack([f[0] for f in finals])
    c_n = torch.stack([f[1] for f in finals])
    if unsorted_indices is not None:
        h_n, c_n = h_n.index_select(1, unsorted_indices), c_n.index_select(1, unsorted_indices)
    return PackedSequence(out, batch_sizes, sorted_indices, unsorted_indices), (h_n, c_n)


def _lstm_cell(step_input, hidden, w_hh, b_hh):
    """ATen's CPU LSTMCell with its input projection precomputed (same ops, same order)."""
    hx, cx = hidden
    gates = F.linear(hx, w_hh, b_hh).add_(step_input)
    ingate, forgetgate, cellgate, outgate = gates.unsafe_chunk(4, 1)
    ingate, forgetgate = ingate.sigmoid_(), forgetgate.sigmoid_()
    cellgate, outgate = cellgate.tanh_(), outgate.sigmoid_()
    cy = (forgetgate * cx).add_(ingate * cellgate)
    return outgate * cy.tanh(), cy


def _forward_layer(steps, sizes, hidden, w_hh, b_hh):
    """Left to right; a sequence that ends leaves the batch (its final state kept)."""
    outputs, ended = [], []
    last = sizes[0]
    for step_input, size in zip(steps, sizes, strict=True):
        if size < last:
            ended.append(tuple(t.narrow(0, size, last - size) for t in hidden))
            hidden = tuple(t.narrow(0, 0, size) for t in hidden)
        last = size
        hidden = _lstm_cell(step_input, hidden, w_hh, b_hh)
        outputs.append(hidden[0])
    ended.append(hidden)
    ended.reverse()
    final = tuple(torch.cat([e[i] for e in ended]) for i in range(2))
    return torch.cat(outputs), final


def _reverse_layer(steps, sizes, initial, w_hh, b_hh):
    """Right to left from the last step; a sequence joins the batch at its last word."""
    outputs = []
    last = sizes[-1]
    hidden = tuple(t.narrow(0, 0, last) for t in initial)
    for step_input, size in zip(reversed(steps), reversed(sizes), strict=True):
        if size > last:
            hidden = tuple(torch.cat([h, t.narrow(0, last, size - last)])
                           for h, t in zip(hidden, initial, strict=True))  # fmt: skip
        last = size
        hidden = _lstm_cell(step_input, hidden, w_hh, b_hh)
        outputs.append(hidden[0])
    outputs.reverse()
    return torch.cat(outputs), hidden


def _as_float32(x):
    if x is None:
        return None
    if isinstance(x, PackedSequence):  # a namedtuple: before the tuple case
        return x._replace(data=x.data.float())
    if isinstance(x, tuple):
        return tuple(t.float() for t in x)
    return x.float()
