"""MAGE-GRU's attention over incoming edge types (edge_combine="attention", models/mage/mage_gru.py)
against an independent step-by-step transcription of the released CorefGRU
(bdhingra/coref-gru lambada, model/tflayers.py: _attention, _hid_prev, _gru_cell)."""

from __future__ import annotations

import pytest
import torch

from models.mage.mage_gru import MAGEGRU, BiMAGEGRU
from models.mage.stacked import StackedMAGEGRU
from tests.models.mage.test_mage_gru import chain_preds, sequential

SIZES = (4, 2)  # sequential, coreference slices of the state


pytestmark = pytest.mark.usefixtures("float64")


def _preds(chains: list[list[int]]) -> torch.Tensor:
    batch, steps = len(chains), len(chains[0])
    return torch.stack([sequential(batch, steps), chain_preds(chains)], dim=1)


def _pair(d_in: int = 3) -> tuple[MAGEGRU, MAGEGRU]:
    torch.manual_seed(0)
    concat = MAGEGRU(d_in, sum(SIZES), 2, edge_sizes=SIZES)
    attention = MAGEGRU(d_in, sum(SIZES), 2, edge_sizes=SIZES, edge_combine="attention")
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(attention, name).copy_(getattr(concat, name))
    return concat, attention


def reference(cell: MAGEGRU, x: torch.Tensor, preds: torch.Tensor) -> torch.Tensor:
    """tflayers.py CorefGRU, one item, one step at a time: alpha = softmax over the present
    incoming edges of Watt[type] . x_t (_attention); prev = each type's slice of its
    predecessor's output times its alpha (_hid_prev); h = (1 - z) * prev + z * ht in torch's
    gate layout (z here = 1 - z there), with the hidden-side bias b_hn inside the reset gate."""
    steps, h = x.shape[0], cell.hidden_size
    out: list[torch.Tensor] = []
    w_r, w_z, w_n = cell.weight_ih.chunk(3)
    u_r, u_z, u_n = cell.weight_hh.chunk(3)
    b_r, b_z, b_n = cell.bias_ih.chunk(3)
    c_r, c_z, c_n = cell.bias_hh.chunk(3)
    bounds = [0, SIZES[0], h]
    for t in range(steps):
        present = [int(preds[e, t]) for e in range(2)]
        score = torch.stack([cell.weight_att[e] @ x[t] for e in range(2)])
        mask = torch.tensor([p >= 0 for p in present])
        alpha = torch.zeros(2)
        if mask.any():
            alpha[mask] = torch.softmax(score[mask], 0)
        g = torch.cat([
            alpha[e] * out[present[e]][bounds[e] : bounds[e + 1]]
            if present[e] >= 0
            else torch.zeros(bounds[e + 1] - bounds[e])
            for e in range(2)
        ])  # fmt: skip
        r = torch.sigmoid(w_r @ x[t] + b_r + u_r @ g + c_r)
        z = torch.sigmoid(w_z @ x[t] + b_z + u_z @ g + c_z)
        n = torch.tanh(w_n @ x[t] + b_n + r * (u_n @ g + c_n))
        out.append((1 - z) * n + z * g)
    return torch.stack(out)


def test_attention_matches_a_step_by_step_transcription_of_the_released_corefgru():
    _, cell = _pair()
    chains = [[0, -1, 1, 0, -1, 1, 0, -1], [-1, 2, -1, 2, 2, -1, -1, 2]]
    preds = _preds(chains)
    x = torch.randn(2, 8, 3)
    got = cell(x, preds)
    for b in range(2):
        torch.testing.assert_close(got[b], reference(cell, x[b], preds[b]), rtol=0, atol=1e-12)


def test_one_incoming_edge_type_present_is_eq4_exactly():
    """alpha = 1 for a lone predecessor: with no coreference edge in the item, the attention
    cell is the concatenation cell; they part at the first token with two incoming edges."""
    concat, attention = _pair()
    x = torch.randn(1, 7, 3)
    alone = _preds([[-1] * 7])
    torch.testing.assert_close(attention(x, alone), concat(x, alone), rtol=0, atol=0)
    linked = _preds([[0, -1, -1, 0, -1, -1, -1]])  # token 3 reads tokens 2 (seq) and 0 (coref)
    a, c = attention(x, linked), concat(x, linked)
    torch.testing.assert_close(a[:, :3], c[:, :3], rtol=0, atol=0)
    assert not torch.allclose(a[:, 3], c[:, 3])


def test_shapes_padding_and_both_directions():
    torch.manual_seed(1)
    layer = BiMAGEGRU(3, 6, 2, edge_sizes=SIZES, edge_combine="attention")
    chains = [[0, -1, 0, 1, 1, -1], [1, 1, -1, 1, -1, -1]]
    x = torch.randn(2, 6, 3)
    fwd = _preds(chains)
    bwd = torch.stack([sequential(2, 6, backward=True), chain_preds(chains, backward=True)], 1)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    out = layer(x, fwd, bwd, mask)
    assert out.shape == (2, 6, 12)
    assert torch.all(out[1, 4:] == 0)  # padding outputs zeros
    cut = bwd[1:, :, :4]
    short = layer(x[1:, :4], fwd[1:, :, :4], torch.where(cut > 3, -1, cut))
    torch.testing.assert_close(out[1:, :4], short, rtol=0, atol=1e-12)
    assert layer.forward_rnn.weight_att.shape == (2, 3)
    assert layer.forward_rnn.weight_att is not layer.backward_rnn.weight_att


def test_gradients_flow_to_the_attention_weights_inputs_and_memory():
    """The hand-written backward (d scale, d memory) against finite differences."""
    _, cell = _pair()
    preds = _preds([[0, -1, 0, -1, 0]])
    x = torch.randn(1, 5, 3, requires_grad=True)
    names = ("weight_att", "weight_hh", "bias_hh")
    params = tuple(getattr(cell, n).detach().clone().requires_grad_() for n in names)

    def f(x, *values):
        return torch.func.functional_call(cell, dict(zip(names, values, strict=True)), (x, preds))

    assert torch.autograd.gradcheck(f, (x, *params), atol=1e-8)
    f(x, *params).sum().backward()
    for p in (x, *params):
        assert p.grad is not None and p.grad.abs().sum() > 0


def test_attention_is_refused_where_the_state_has_no_per_type_slices():
    for mode in ("shared", "dagrnn"):
        with pytest.raises(ValueError, match="attention"):
            MAGEGRU(3, 6, 2, mode=mode, edge_combine="attention")
    with pytest.raises(ValueError, match="edge_combine"):
        MAGEGRU(3, 6, 2, edge_combine="sum")


def test_stacked_seeds_with_attention_match_their_single_layers():
    torch.manual_seed(2)
    singles = [MAGEGRU(3, 6, 2, edge_sizes=SIZES, edge_combine="attention") for _ in range(2)]
    stacked = StackedMAGEGRU(singles)
    preds = _preds([[0, -1, 0, 1, -1, 1], [-1, 1, 1, -1, 1, -1]]).repeat(2, 1, 1)
    x = torch.randn(4, 6, 3, requires_grad=True)
    out = stacked(x, preds)
    out.pow(2).sum().backward()
    for k, single in enumerate(singles):
        ref = single(x.detach()[2 * k : 2 * k + 2], preds[:2])
        torch.testing.assert_close(out[2 * k : 2 * k + 2], ref, rtol=1e-10, atol=1e-12)
        ref.pow(2).sum().backward()
        torch.testing.assert_close(stacked.weight_att.grad[k], single.weight_att.grad)
