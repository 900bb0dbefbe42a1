"""models/sequences.py: `packed_lstm`, the linear-time CPU path for a packed one-layer LSTM,
gives torch's own float bits (issue #57.3)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from models.sequences import packed_lstm, run_recurrent


def _outputs(lstm, x, lengths, state, fn):
    """(padded outputs, h_n, c_n, the gradients of x, the weights and the state) of one
    forward and backward through fn(lstm, packed, state)."""
    lstm.zero_grad(set_to_none=True)
    x = x.detach().requires_grad_()
    if state is not None:
        state = tuple(s.detach().requires_grad_() for s in state)
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, (h_n, c_n) = fn(lstm, packed, state)
    padded, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
    weights = torch.linspace(-1, 1, padded.numel()).view_as(padded)
    loss = (padded * weights).sum() + (h_n * 0.3).sum() - (c_n * 0.7).sum()
    loss.backward()
    grads = [x.grad, *(p.grad for p in lstm.parameters())]
    grads += [s.grad for s in state] if state is not None else []
    return [padded, h_n, c_n, *grads]


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
def test_packed_lstm_is_torchs_lstm_bit_for_bit(bidirectional, with_state):
    torch.manual_seed(0)
    lstm = nn.LSTM(7, 16, batch_first=True, bidirectional=bidirectional)
    lengths = torch.tensor([5, 1, 9, 9, 3, 7, 2, 9, 4])  # ties, unsorted, a one-word row
    x = torch.randn(len(lengths), int(lengths.max()), 7)
    state = None
    if with_state:
        directions = 2 if bidirectional else 1
        state = (
            torch.randn(directions, len(lengths), 16),
            torch.randn(directions, len(lengths), 16),
        )
    expected = _outputs(lstm, x, lengths, state, lambda m, p, s: m(p, s))
    got = _outputs(lstm, x, lengths, state, packed_lstm)
    for e, g in zip(expected, got, strict=True):
        assert torch.equal(e, g)


def test_run_recurrent_takes_the_linear_time_path_for_a_packed_lstm(monkeypatch):
    """run_recurrent (every family's call) routes a packed one-layer CPU LSTM to packed_lstm,
    and leaves padded input and other RNNs to torch."""
    import models.sequences as seq

    calls = []
    monkeypatch.setattr(seq, "packed_lstm", lambda *a: calls.append(a) or "packed")
    lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=True)
    x = torch.randn(2, 5, 3)
    packed = pack_padded_sequence(x, torch.tensor([5, 2]), batch_first=True)
    assert run_recurrent(lstm, packed) == "packed" and len(calls) == 1
    run_recurrent(lstm, x)
    run_recurrent(nn.GRU(3, 4, batch_first=True), packed)
    run_recurrent(nn.LSTM(3, 4, num_layers=2, batch_first=True), packed)
    assert len(calls) == 1


@pytest.mark.parametrize("onednn", [False, True])
@pytest.mark.parametrize("lengths", [[5, 1, 9, 3], [6, 6, 6], [4]])
def test_run_recurrent_keeps_torchs_bits_with_onednn_on_or_off(onednn, lengths):
    """Native mode turns oneDNN on (the pinned path has it off): torch then runs equal-length
    packed batches through oneDNN and the rest through its own kernel; run_recurrent gives
    torch's bits in every case."""
    torch.manual_seed(1)
    lstm = nn.LSTM(5, 8, batch_first=True, bidirectional=True)
    lengths = torch.tensor(lengths)
    x = torch.randn(len(lengths), int(lengths.max()), 5)
    with torch.backends.mkldnn.flags(enabled=onednn):
        expected = _outputs(lstm, x, lengths, None, lambda m, p, s: m(p, s))
        got = _outputs(lstm, x, lengths, None, run_recurrent)
    for e, g in zip(expected, got, strict=True):
        assert torch.equal(e, g)
