"""MAGE-GRU (models/mage/mage_gru.py) against torch.nn.GRU, a hand-computed case, and an independent
per-edge-type implementation of Dhingra et al. Eq. 2 (the paper's un-combined form)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from models.mage.mage_gru import MAGEGRU, BiMAGEGRU, split_sizes

pytestmark = pytest.mark.usefixtures("float64")


def sequential(batch: int, steps: int, *, backward: bool = False) -> torch.Tensor:
    """[B, T] sequential predecessors: t-1 (forward DAG) or t+1 (backward DAG), -1 at the end."""
    t = torch.arange(steps)
    pred = t + 1 if backward else t - 1
    pred = torch.where((pred >= 0) & (pred < steps), pred, -1)
    return pred.expand(batch, steps).clone()


def chain_preds(chains: list[list[int]], *, backward: bool = False) -> torch.Tensor:
    """Coreference predecessors from per-token chain ids (-1 none): the previous (forward) or
    next (backward) token of the same chain, single-token mentions."""
    out = []
    for row in chains:
        pred = [-1] * len(row)
        order = range(len(row) - 1, -1, -1) if backward else range(len(row))
        last: dict[int, int] = {}
        for t in order:
            c = row[t]
            if c >= 0:
                pred[t] = last.get(c, -1)
                last[c] = t
        out.append(pred)
    return torch.tensor(out)


def copy_gru_weights(mage: MAGEGRU, gru: nn.GRU, suffix: str = "_l0") -> None:
    with torch.no_grad():
        mage.weight_ih.copy_(getattr(gru, "weight_ih" + suffix))
        mage.weight_hh.copy_(getattr(gru, "weight_hh" + suffix))
        mage.bias_ih.copy_(getattr(gru, "bias_ih" + suffix))
        mage.bias_hh.copy_(getattr(gru, "bias_hh" + suffix))


# --------------------------------------------------------------------------- nn.GRU equivalence


def test_single_sequential_edge_type_is_exactly_nn_gru_outputs_and_gradients():
    torch.manual_seed(0)
    batch, steps, d_in, hidden = 3, 9, 5, 8
    gru = nn.GRU(d_in, hidden, batch_first=True)
    mage = MAGEGRU(d_in, hidden, num_edge_types=1)
    copy_gru_weights(mage, gru)
    x = torch.randn(batch, steps, d_in, requires_grad=True)
    expected, _ = gru(x)
    got = mage(x, sequential(batch, steps).unsqueeze(1))
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12)

    grads_gru = torch.autograd.grad(expected.sin().sum(), [x, *gru.parameters()])
    params = [mage.weight_ih, mage.weight_hh, mage.bias_ih, mage.bias_hh]
    grads_mage = torch.autograd.grad(got.sin().sum(), [x, *params])
    for g_mage, g_gru in zip(grads_mage, grads_gru, strict=True):
        torch.testing.assert_close(g_mage, g_gru, rtol=0, atol=1e-12)


def test_split_state_with_every_edge_from_t_minus_1_is_one_full_gru():
    """With the coreference predecessor also t-1, g_t = h^seq_{t-1} || h^coref_{t-1} = h_{t-1}:
    Eq. 4 is the plain GRU of the total size (240 + 16 = 256 in the paper; 6 + 2 here)."""
    torch.manual_seed(1)
    batch, steps, d_in = 2, 7, 4
    gru = nn.GRU(d_in, 8, batch_first=True)
    mage = MAGEGRU(d_in, 8, 2, edge_sizes=split_sizes(8, 2))
    assert mage.edge_sizes == (6, 2)
    copy_gru_weights(mage, gru)
    x = torch.randn(batch, steps, d_in)
    seq = sequential(batch, steps)
    torch.testing.assert_close(mage(x, torch.stack([seq, seq], 1)), gru(x)[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("mode", ["shared", "dagrnn"])
def test_shared_and_dagrnn_reduce_to_gru_with_only_sequential_edges(mode):
    torch.manual_seed(2)
    batch, steps, d_in, hidden = 2, 6, 3, 5
    gru = nn.GRU(d_in, hidden, batch_first=True)
    mage = MAGEGRU(d_in, hidden, 2, mode=mode)
    with torch.no_grad():
        mage.weight_ih.copy_(gru.weight_ih_l0)
        mage.bias_ih.copy_(gru.bias_ih_l0)
        mage.bias_hh.copy_(gru.bias_hh_l0)
        if mode == "shared":  # U = [U^seq | U^coref]; no coreference predecessor ever
            assert mage.weight_hh.shape == (3 * hidden, 2 * hidden)
            mage.weight_hh[:, :hidden] = gru.weight_hh_l0
        else:
            mage.weight_hh.copy_(gru.weight_hh_l0)
    x = torch.randn(batch, steps, d_in)
    preds = torch.stack([sequential(batch, steps), torch.full((batch, steps), -1)], 1)
    torch.testing.assert_close(mage(x, preds), gru(x)[0], rtol=0, atol=1e-12)


def test_bidirectional_sequential_mage_matches_packed_bidirectional_gru_with_padding():
    torch.manual_seed(3)
    d_in, hidden, steps = 4, 6, 8
    lengths = torch.tensor([8, 5, 2])
    batch = len(lengths)
    gru = nn.GRU(d_in, hidden, batch_first=True, bidirectional=True)
    bi = BiMAGEGRU(d_in, hidden, num_edge_types=1)
    copy_gru_weights(bi.forward_rnn, gru, "_l0")
    copy_gru_weights(bi.backward_rnn, gru, "_l0_reverse")
    mask = torch.arange(steps) < lengths.unsqueeze(1)
    x = torch.randn(batch, steps, d_in)
    fwd = torch.where(mask, sequential(batch, steps), -1).unsqueeze(1)
    # a graph's last token has no backward sequential predecessor
    bwd = torch.where(mask, sequential(batch, steps, backward=True), -1)
    bwd = torch.where(torch.arange(steps) == lengths.unsqueeze(1) - 1, -1, bwd).unsqueeze(1)
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
    expected, _ = nn.utils.rnn.pad_packed_sequence(gru(packed)[0], batch_first=True)
    torch.testing.assert_close(bi(x, fwd, bwd, mask), expected, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- coreference edges


def test_hand_computed_coreference_edge():
    """T = 3, x = (1, 2, 3), states (sequential 1 | coreference 1), coreference edge 0 -> 2.

    Weights: W_r = W_z = U_r = U_z = 0 and all biases 0, so r = z = 1/2; W_n = 1, U_n = I.
    Hence n_t = tanh(x_t + g_t / 2) and h_t = (n_t + g_t) / 2 per dimension, where g_t's
    sequential dimension is h_{t-1}'s and its coreference dimension is the coreference
    predecessor's (Eq. 4), zero where there is none.
    """
    mage = MAGEGRU(1, 2, 2, edge_sizes=(1, 1))
    with torch.no_grad():
        for p in mage.parameters():
            p.zero_()
        mage.weight_ih[4:, 0] = 1.0  # W_n
        mage.weight_hh[4:] = torch.eye(2)  # U_n
    x = torch.tensor([[[1.0], [2.0], [3.0]]])
    preds = torch.tensor([[[-1, 0, 1], [-1, -1, 0]]])
    out = mage(x, preds)[0]

    def step(x_t, g):
        return [(math.tanh(x_t + gi / 2) + gi) / 2 for gi in g]

    h0 = step(1.0, [0.0, 0.0])
    h1 = step(2.0, [h0[0], 0.0])  # no coreference predecessor: that half starts from zero
    h2 = step(3.0, [h1[0], h0[1]])  # the coreference half reads token 0, not token 1
    expected = torch.tensor([h0, h1, h2])
    torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)
    assert abs(h0[1] - h1[1]) > 0.1  # so reading token 1 instead would have been caught


def eq2_reference(mage: MAGEGRU, x: torch.Tensor, preds: torch.Tensor) -> torch.Tensor:
    """Dhingra et al. Eq. 2 written out for ONE sequence, per token and per edge type, with
    U^{e,e'} the blocks of the stacked U; independent of the fused Eq. 4 loop.

    preds [E, T] in original positions; for reverse layers the order of updates is T-1 .. 0.
    split: h^e_t = (1 - z^e) n^e + z^e g^e with g^e = h^e of the type-e predecessor (or 0).
    shared: every type carries the whole h; U^{e'} multiplies h_{t'_{e'}}; the interpolation
    term is the mean of the present predecessors' states. dagrnn: g = that mean, untyped.
    """
    steps = x.shape[0]
    hidden, types = mage.hidden_size, mage.num_edge_types
    w_ih, w_hh, b_ih, b_hh = mage.weight_ih, mage.weight_hh, mage.bias_ih, mage.bias_hh
    gate = {name: slice(i * hidden, (i + 1) * hidden) for i, name in enumerate("rzn")}
    out: dict[int, torch.Tensor] = {}
    order = range(steps - 1, -1, -1) if mage.reverse else range(steps)
    if mage.mode == "split":
        bounds = torch.tensor([0, *mage.edge_sizes]).cumsum(0).tolist()
        dims = [slice(bounds[e], bounds[e + 1]) for e in range(types)]
    for t in order:
        incoming = [(int(preds[e, t]), e) for e in range(types) if preds[e, t] >= 0]
        if mage.mode == "split":
            h_t = torch.zeros(hidden)
            for e in range(types):
                rows = dims[e]

                wx = {name: (w_ih[gate[name]] @ x[t] + b_ih[gate[name]])[rows] for name in "rzn"}
                hh = {
                    # sum over incoming (t', e') of U^{e,e'} h^{e'}_{t'}, plus b_hh
                    name: b_hh[gate[name]][rows]
                    + sum(
                        w_hh[gate[name]][rows][:, dims[e_src]] @ out[t_src][dims[e_src]]
                        for t_src, e_src in incoming
                    )
                    for name in "rzn"
                }
                r = torch.sigmoid(wx["r"] + hh["r"])
                z = torch.sigmoid(wx["z"] + hh["z"])
                n = torch.tanh(wx["n"] + r * hh["n"])
                g = dict((e_src, t_src) for t_src, e_src in incoming)
                g_e = out[g[e]][rows] if e in g else torch.zeros(rows.stop - rows.start)
                h_t[rows] = (1 - z) * n + z * g_e
            out[t] = h_t
            continue
        states = [out[t_src] for t_src, _ in incoming]
        mean = torch.stack(states).mean(0) if states else torch.zeros(hidden)
        if mage.mode == "shared":
            g_hh = torch.zeros(types * hidden)
            for t_src, e_src in incoming:
                g_hh[e_src * hidden : (e_src + 1) * hidden] = out[t_src]
        else:
            g_hh = mean
        gx = w_ih @ x[t] + b_ih
        gh = w_hh @ g_hh + b_hh
        r = torch.sigmoid(gx[gate["r"]] + gh[gate["r"]])
        z = torch.sigmoid(gx[gate["z"]] + gh[gate["z"]])
        n = torch.tanh(gx[gate["n"]] + r * gh[gate["n"]])
        out[t] = (1 - z) * n + z * mean
    return torch.stack([out[t] for t in range(steps)])


CHAINS = [
    [0, -1, 1, 0, -1, 1, 0, 2, -1, 2],
    [-1, 3, 3, -1, 3, 4, -1, 4, -1, -1],
    [5, -1, -1, -1, -1, 5, -1, -1, -1, -1],
]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("mode", ["split", "shared", "dagrnn"])
def test_batched_layer_matches_eq2_per_token_reference(mode, reverse):
    torch.manual_seed(4)
    batch, steps, d_in, hidden = len(CHAINS), len(CHAINS[0]), 3, 7
    kwargs = {"edge_sizes": (5, 2)} if mode == "split" else {}
    mage = MAGEGRU(d_in, hidden, 2, mode=mode, reverse=reverse, **kwargs)
    x = torch.randn(batch, steps, d_in)
    preds = torch.stack(
        [sequential(batch, steps, backward=reverse), chain_preds(CHAINS, backward=reverse)], 1
    )
    got = mage(x, preds)
    for b in range(batch):
        torch.testing.assert_close(got[b], eq2_reference(mage, x[b], preds[b]), rtol=0, atol=1e-12)


# --------------------------------------------------------------------------- backward pass


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("mode", ["split", "shared", "dagrnn"])
def test_hand_written_backward_passes_gradcheck(mode, reverse):
    torch.manual_seed(5)
    chains = [[0, 1, 0, -1, 1, 0], [2, -1, 2, 2, -1, -1]]
    batch, steps = 2, 6
    mage = MAGEGRU(2, 4, 2, mode=mode, reverse=reverse)
    preds = torch.stack(
        [sequential(batch, steps, backward=reverse), chain_preds(chains, backward=reverse)], 1
    )
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    preds = torch.where(mask.unsqueeze(1), preds, -1)
    names = [name for name, _ in mage.named_parameters()]
    params = [p.detach().clone().requires_grad_() for p in mage.parameters()]
    x = torch.randn(batch, steps, 2, requires_grad=True)

    def run(x, *weights):
        return torch.func.functional_call(
            mage, dict(zip(names, weights, strict=True)), (x, preds, mask)
        )

    assert torch.autograd.gradcheck(run, (x, *params))


def test_gradient_reaches_a_distant_token_through_the_coreference_edge_only():
    """Token 0 -> token 9 by coreference; with the sequential path cut (no sequential edge
    into token 5), the output at 9 still depends on x_0 through the coreference state."""
    torch.manual_seed(6)
    mage = MAGEGRU(2, 4, 2, edge_sizes=(2, 2))
    steps = 10
    seq = sequential(1, steps)
    seq[0, 5] = -1
    coref = torch.full((1, steps), -1)
    coref[0, 9] = 0
    x = torch.randn(1, steps, 2, requires_grad=True)
    out = mage(x, torch.stack([seq, coref], 1))
    (grad,) = torch.autograd.grad(out[0, 9].sum(), x)
    assert grad[0, 0].abs().sum() > 0
    assert grad[0, 1:5].abs().sum() == 0  # only token 0 itself is linked by coreference
    out_cut = mage(x, torch.stack([seq, torch.full((1, steps), -1)], 1))
    (grad_cut,) = torch.autograd.grad(out_cut[0, 9].sum(), x)
    assert grad_cut[0, :5].abs().sum() == 0


# --------------------------------------------------------------------------- padding, errors


@pytest.mark.parametrize("mode", ["split", "shared", "dagrnn"])
def test_padding_never_changes_real_tokens_and_padding_outputs_zero(mode):
    torch.manual_seed(7)
    bi = BiMAGEGRU(3, 6, 2, mode=mode)
    chains = [[0, -1, 0, 1, 1], [2, 2, -1]]
    lengths = [5, 3]

    def padded(steps):
        batch = len(lengths)
        mask = torch.arange(steps) < torch.tensor(lengths).unsqueeze(1)
        fwd = torch.full((batch, 2, steps), -1)
        bwd = torch.full((batch, 2, steps), -1)
        for b, (n, row) in enumerate(zip(lengths, chains, strict=True)):
            fwd[b, 0, :n] = sequential(1, n)[0]
            fwd[b, 1, :n] = chain_preds([row])[0]
            bwd[b, 0, :n] = sequential(1, n, backward=True)[0]
            bwd[b, 1, :n] = chain_preds([row], backward=True)[0]
        return fwd, bwd, mask

    x_long = torch.randn(2, 9, 3)
    out_long = bi(x_long, *padded(9))
    out_short = bi(x_long[:, :5].clone(), *padded(5))
    for b, n in enumerate(lengths):
        torch.testing.assert_close(out_long[b, :n], out_short[b, :n], rtol=0, atol=1e-12)
        assert out_long[b, n:].abs().sum() == 0
        alone = bi(x_long[b : b + 1, :n], *(t[b : b + 1, ..., :n] for t in padded(9)))
        torch.testing.assert_close(out_long[b, :n], alone[0], rtol=0, atol=1e-12)
    # garbage in padded inputs and a backward sequential edge into padding change nothing
    fwd, bwd, mask = padded(9)
    bwd[1, 0, 2] = 3  # token 2 (last real) "reads" padding position 3
    x_noisy = x_long.clone()
    x_noisy[1, 3:] = 100.0
    torch.testing.assert_close(
        bi(x_noisy, fwd, bwd, mask)[1, :3], out_long[1, :3], rtol=0, atol=1e-12
    )


def test_runs_under_autocast_with_a_float32_recurrence():
    torch.manual_seed(8)
    mage = MAGEGRU(4, 6, 2).float()
    x = torch.randn(2, 5, 4, dtype=torch.float32, requires_grad=True)
    preds = torch.stack([sequential(2, 5), chain_preds([[0, -1, 0, 0, -1], [-1] * 5])], 1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = mage(x, preds)
    assert out.dtype == torch.float32
    # only the input projection ran in bfloat16
    torch.testing.assert_close(out, mage(x, preds), rtol=0, atol=0.05)
    out.sum().backward()
    assert mage.weight_hh.grad.dtype == torch.float32 and torch.isfinite(x.grad).all()


def test_predecessors_in_the_wrong_direction_are_rejected():
    mage = MAGEGRU(2, 4, 1)
    x = torch.randn(1, 4, 2)
    with pytest.raises(ValueError, match="before its token"):
        mage(x, sequential(1, 4, backward=True).unsqueeze(1))
    with pytest.raises(ValueError, match="after its token"):
        MAGEGRU(2, 4, 1, reverse=True)(x, sequential(1, 4).unsqueeze(1))
    with pytest.raises(ValueError, match="preds must be"):
        mage(x, torch.full((1, 2, 4), -1))


def test_constructor_validation_and_split_sizes():
    assert split_sizes(256, 16) == (240, 16)
    assert split_sizes(256, 48) == (208, 48)
    assert split_sizes(256, 16, 3) == (224, 16, 16)
    with pytest.raises(ValueError):
        split_sizes(16, 16)
    with pytest.raises(ValueError, match="summing"):
        MAGEGRU(3, 8, 2, edge_sizes=(4, 3))
    with pytest.raises(ValueError, match="evenly"):
        MAGEGRU(3, 7, 2)
    with pytest.raises(ValueError, match="mode"):
        MAGEGRU(3, 8, 2, mode="tied")
    with pytest.raises(ValueError, match="only applies"):
        MAGEGRU(3, 8, 2, edge_sizes=(4, 4), mode="shared")
    # the total hidden size, hence the per-direction output, is fixed whatever the split
    for coref in (16, 32, 48, 64):
        layer = MAGEGRU(10, 256, 2, edge_sizes=split_sizes(256, coref))
        assert layer.weight_hh.shape == (768, 256)
