"""MAGE-GRU: a GRU over a sequence whose typed edges are split into forward/backward DAGs.

Dhingra, Yang, Cohen & Salakhutdinov, "Linguistic Knowledge as Memory for Recurrent Neural
Networks" (papers/004), §3:

- §3.1: a sequence plus typed edges (sequential, coreference, ...) becomes, with inverse
  edges, a cyclic graph; splitting by direction gives a forward and a backward DAG whose
  topological order is the sequence itself (tasks/graphs/dags.py builds them).
- §3.2, Eq. 1-3: a separate hidden state h^e_t per edge type e (sizes d_e, e.g. 240
  sequential + 16 coreference = 256), updated from the states of all incoming edges; the output
  is their concatenation h_t = h^{e_1}_t || ... || h^{e_|E|}_t (Eq. 3).
- §3.2, Eq. 4: where every token has at most one incoming edge per type (chains), the per-type
  updates combine into ONE GRU update whose recurrent state is g_t = g^{e_1}_t || ... ||
  g^{e_|E|}_t, with g^e_t the type-e slice of the type-e predecessor's output (zero if none).

Input contract: for each edge type, the index of each token's predecessor (-1 = none), as in
the GRAPHS table (tasks/core/schema.py); the forward DAG's predecessors lie before a token, the
backward DAG's after it (the sequential one is t-1 resp. t+1).

Implementation: the outputs of all previous steps are the memory M_t = [h_0; ...; h_{t-1}]
(§3.2, "the collection of all previous output representations ... can be viewed as the
memory"), a preallocated [T + 1, B, H] tensor whose row 0 is the zero state. Each step reads
g_t for all edge types with ONE gather (a per-dimension row index: the dimensions of edge type e
read the row of e's predecessor) and runs one GRU-cell update. A custom autograd Function owns
the loop: its forward writes each h_t in place into the memory, its backward walks the steps
in reverse and scatters each step's gradient into the rows it read. Autograd through in-place
writes into one big memory would copy the whole memory's gradient at every step.

Parameterization as torch.nn.GRU (gates ordered r, z, n; a hidden-side bias b_hn inside the
reset gate; h_t = (1 - z) * n + z * g, i.e. the paper's z is torch's 1 - z), so that with only
sequential edges a MAGEGRU is exactly an nn.GRU with the same weights; Eq. 4 is the case b_hn = 0.
The interpolation term: Eq. 4 prints h_{t-1}, but says the updates are "the usual GRU updates,
but with the recurrent state replaced by g_t"; the authors' code (bdhingra/coref-gru,
model/tflayers.py, CorefGRU._gru_cell: ``h = (1.-z)*prev + z*ht`` with prev the gathered
memory) interpolates with g_t, and so do we.

Variants (Table 1):
- mode="split" (MAGE): Eq. 4 as above; edge_sizes gives d_e per type.
- mode="shared" ("MAGE (shared)", outputs shared for all edge types): no split; every edge type
  carries the full h_{t'} of its predecessor, g_t stacks them (size |E| * H) with typed
  parameters U^{e'} as in Eq. 2; the interpolation term, which the paper does not spell out for
  this variant, is the mean of the present predecessors' states (= h_{t-1} with only
  sequential edges, so the variant reduces to a GRU).
- mode="dagrnn" (DAG-RNN, Shuai et al. 2016, "GA + DAG-RNN"): untyped; the predecessors' states
  are combined into one vector and fed as the recurrent state. Shuai et al. sum the
  predecessors (h = f(U x + sum_j W h_j + b)) in a plain RNN; inside a GRU's interpolation a sum
  would grow the state at every merge, so we average them (the same at single predecessors).

Incoming edges (edge_combine, mode "split" only):
- "concat" (default): g_t = g^{e_1}_t || ... || g^{e_|E|}_t, Eq. 4 -- the paper's update (Eq. 2
  sums U^{e,e'} h^{e'}_{t'} over ALL incoming edges, unweighted; §5 leaves "an attention
  mechanism over the edge types" to future work).
- "attention": the released code's CorefGRU (bdhingra/coref-gru, lambada branch,
  model/tflayers.py, CorefGRU._attention and _hid_prev; its `concat` flag, the unweighted form,
  is marked "(Deprecated)" there): each present incoming edge gets a score from the current
  input and its edge type only, a_{t,e} = w_e . x_t (Watt, one row per relation, N(0, 0.1)
  initial values, no bias), the scores are softmax-normalised over the edges present at t (all
  types together), and each type's slice of g_t is scaled by its weight:
  g_t = alpha_{t,e_1} g^{e_1}_t || ... || alpha_{t,e_|E|} g^{e_|E|}_t. The scaled g_t is the
  recurrent input and the interpolation term (_gru_cell: ``h = (1.-z)*prev + z*ht`` with prev
  the weighted memory). With one predecessor present its weight is 1: the update is Eq. 4's.
  (The released `concat` divides by the number of present edges; Eq. 4, our "concat", does not.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.autograd.function import once_differentiable

MODES = ("split", "shared", "dagrnn")
EDGE_COMBINES = ("concat", "attention")  # how incoming edges form g_t (module docstring)


def split_sizes(hidden_size: int, coref_size: int, num_edge_types: int = 2) -> tuple[int, ...]:
    """Per-edge-type state sizes with the total fixed (§4.2: "We keep the total hidden state
    size ... fixed for all models at 256, but for MAGE models part of this is allocated to
    sequential edges and part of it is allocated to coreference edges"): the first type
    (sequential) gets the rest, every other type coref_size, e.g. 256, 16 -> (240, 16)."""
    rest = hidden_size - coref_size * (num_edge_types - 1)
    if coref_size <= 0 or rest <= 0:
        raise ValueError(
            f"cannot split hidden size {hidden_size} into {num_edge_types} edge types with "
            f"{coref_size} dimensions for each non-sequential type"
        )
    return (rest,) + (coref_size,) * (num_edge_types - 1)


# --------------------------------------------------------------------------- the recurrence


class _ChainGRU(torch.autograd.Function):
    """The GRU-cell loop of Eq. 4 over memory rows, with a hand-written backward.

    Shapes (time-major, in processing order): gates_x [T, B, 3H] = W x_t + b_ih for all steps
    (computed outside, one matmul); weight_hh [3H, K], bias_hh [3H]; K = H (split, dagrnn) or
    |E| * H (shared).
    split:  read [T, B, H] long, the memory row each hidden dimension reads at step t
            (0 = zero state, t' + 1 = output of step t'); mix unused; scale [T, B, H] the
            edge attention's weight of each dimension's edge type (empty: no attention).
    shared, dagrnn: read [T, B * E] long, flat rows (row * B + b) of the memory viewed as
            [(T + 1) * B, H], one per edge type; mix [T, B, E] the mean's weights
            (1 / number of present predecessors, 0 for absent ones).
    prefix (optional) [P, B, H]: rows 1 ... P of the memory hold an earlier segment's outputs,
            which `read` may name (MAGEGRU.run_rows); step t then writes row P + 1 + t, and the
            gradient of what the steps read there flows back to `prefix`.
    Returns the outputs [T, B, H].

    Seeds stacked (models/mage/stacked.py): weight_hh [S, 3H, K] and bias_hh [S, 3H] hold S
    seeds' parameters and the batch is seed-major (B = S * b, seed s in rows s*b ... s*b+b-1);
    each seed's items are multiplied by that seed's U with one batched matmul per step.
    """

    @staticmethod
    @torch.amp.custom_fwd(device_type="cuda", cast_inputs=torch.float32)
    def forward(ctx, gates_x, weight_hh, bias_hh, read, mix, scale, mode, prefix=None):
        steps, batch, three_h = gates_x.shape
        h = three_h // 3
        first = 1 if prefix is None else 1 + prefix.shape[0]  # the memory row of step 0
        memory = gates_x.new_zeros(steps + first, batch, h)  # row 0: the zero state
        if prefix is not None:  # rows 1 ... P: an earlier segment's outputs (run_rows)
            memory[1:first] = prefix
        flat_memory = memory.view(-1, h)
        k = weight_hh.shape[-1]
        g_hh = gates_x.new_empty(steps, batch, k)  # recurrent input of each step
        attend = scale.numel() > 0
        g_raw = gates_x.new_empty(steps, batch, h) if attend else scale  # g_t before weighting
        # interpolation term; the same tensor as g_hh except in shared mode
        g_mix = g_hh if mode != "shared" else gates_x.new_empty(steps, batch, h)
        gh = gates_x.new_empty(steps, batch, three_h)  # U g + b_hh
        rz = gates_x.new_empty(steps, batch, 2 * h)  # reset and update gates
        n = gates_x.new_empty(steps, batch, h)  # candidate state
        seeds = weight_hh.shape[0] if weight_hh.dim() == 3 else 0
        u_t = weight_hh.transpose(-1, -2)
        for t in range(steps):
            if mode == "split" and attend:
                # the edge attention: each type's slice weighted (module docstring)
                torch.gather(memory, 0, read[t : t + 1], out=g_raw[t : t + 1])
                torch.mul(g_raw[t], scale[t], out=g_hh[t])
            elif mode == "split":
                # Eq. 4: g_t = g^{e_1}_t || ... ; one gather over the memory's time axis
                torch.gather(memory, 0, read[t : t + 1], out=g_hh[t : t + 1])
            else:
                rows = flat_memory.index_select(0, read[t]).view(batch, -1, h)  # [B, E, H]
                if mode == "shared":
                    # Eq. 2's sum over e' of U^{e'} h_{t'_{e'}} is U times the stacked states
                    g_hh[t] = rows.view(batch, k)
                    torch.sum(rows * mix[t].unsqueeze(-1), 1, out=g_mix[t])
                else:
                    torch.sum(rows * mix[t].unsqueeze(-1), 1, out=g_hh[t])
            _recurrent(bias_hh, g_hh[t], u_t, gh[t], seeds)
            # r, z = sigmoid(W_{r,z} x + U_{r,z} g + b)
            torch.add(gates_x[t, :, : 2 * h], gh[t, :, : 2 * h], out=rz[t]).sigmoid_()
            # n = tanh(W_n x + b_in + r * (U_n g + b_hn))
            torch.addcmul(gates_x[t, :, 2 * h :], rz[t, :, :h], gh[t, :, 2 * h :], out=n[t])
            n[t].tanh_()
            # h_t = (1 - z) * n + z * g  =  n + z * (g - n), written into memory row t + 1
            torch.addcmul(n[t], rz[t, :, h:], g_mix[t] - n[t], out=memory[t + first])
        ctx.mode = mode
        ctx.first = first
        ctx.save_for_backward(weight_hh, read, mix, scale, g_raw, g_hh, g_mix, gh, rz, n)
        return memory[first:]

    @staticmethod
    @once_differentiable
    @torch.amp.custom_bwd(device_type="cuda")
    def backward(ctx, grad_out):
        weight_hh, read, mix, scale, g_raw, g_hh, g_mix, gh, rz, n = ctx.saved_tensors
        mode = ctx.mode
        attend = scale.numel() > 0
        d_scale = torch.empty_like(scale) if attend else None
        steps, batch, h = n.shape
        seeds = weight_hh.shape[0] if weight_hh.dim() == 3 else 0
        r, z = rz[..., :h], rz[..., h:]
        # Factors of the local derivatives, for all steps at once (none depends on dh_t):
        # dn_pre = dh * (1 - z) * (1 - n^2); dz_pre = dh * (g - n) * z (1 - z);
        # dr_pre = dn_pre * (U_n g + b_hn) * r (1 - r); dg (direct) = dh * z.
        f_n = (1 - z).mul_(1 - n * n)
        f_z = (g_mix - n).mul_(z).mul_(1 - z)
        f_r = (1 - r).mul_(r).mul_(gh[..., 2 * h :])
        # gradient of every memory row: the loss's, plus (below) that of the steps reading it
        first = ctx.first
        grad_memory = torch.cat([grad_out.new_zeros(first, batch, h), grad_out])
        flat_grad_memory = grad_memory.view(-1, h)
        d_gh = grad_out.new_empty(steps, batch, 3 * h)  # d(U g + b_hh)
        d_n_pre = grad_out.new_empty(steps, batch, h)
        for t in range(steps - 1, -1, -1):
            dh = grad_memory[t + first]  # complete: every reader of h_t comes later
            torch.mul(dh, f_n[t], out=d_n_pre[t])
            torch.mul(d_n_pre[t], f_r[t], out=d_gh[t, :, :h])
            torch.mul(dh, f_z[t], out=d_gh[t, :, h : 2 * h])
            torch.mul(d_n_pre[t], r[t], out=d_gh[t, :, 2 * h :])
            if mode == "shared":
                d_rows = _times(d_gh[t], weight_hh, seeds).view(batch, -1, h)
                d_rows.add_((dh * z[t]).unsqueeze(1) * mix[t].unsqueeze(-1))
                flat_grad_memory.index_add_(0, read[t], d_rows.view(-1, h))
                continue
            d_g = _times(d_gh[t], weight_hh, seeds, dh * z[t])  # dh z + dgh U: d g_t
            if mode == "split" and attend:  # g_t = raw * scale
                torch.mul(d_g, g_raw[t], out=d_scale[t])
                grad_memory.scatter_add_(0, read[t : t + 1], (d_g * scale[t]).unsqueeze(0))
            elif mode == "split":
                grad_memory.scatter_add_(0, read[t : t + 1], d_g.unsqueeze(0))
            else:  # dagrnn: g_t is the weighted mean of the rows read
                d_rows = d_g.unsqueeze(1) * mix[t].unsqueeze(-1)
                flat_grad_memory.index_add_(0, read[t], d_rows.view(-1, h))
        if seeds:  # per seed: sum over its own items and steps
            d_gh_s = d_gh.view(steps, seeds, -1, 3 * h)
            g_s = g_hh.view(steps, seeds, -1, g_hh.shape[-1])
            d_weight_hh = torch.stack([
                d_gh_s[:, s].reshape(-1, 3 * h).t() @ g_s[:, s].reshape(-1, g_hh.shape[-1])
                for s in range(seeds)
            ])  # fmt: skip
            d_bias_hh = d_gh_s.sum((0, 2))
        else:
            d_weight_hh = d_gh.view(-1, 3 * h).t() @ g_hh.view(steps * batch, -1)
            d_bias_hh = d_gh.sum((0, 1))
        d_gates_x = torch.cat([d_gh[..., : 2 * h], d_n_pre], dim=-1)
        d_prefix = grad_memory[1:first] if first > 1 else None  # what the steps read there
        return d_gates_x, d_weight_hh, d_bias_hh, None, None, d_scale, None, d_prefix


def _recurrent(bias_hh: Tensor, g: Tensor, u_t: Tensor, out: Tensor, seeds: int) -> None:
    """out = U g + b_hh for one step; with seeds stacked, each seed's rows by its own U (one
    addmm per seed: on CPU torch.bmm is far slower than the BLAS matmul a single seed gets)."""
    if not seeds:
        torch.addmm(bias_hh, g, u_t, out=out)
        return
    rows = g.shape[0] // seeds
    for s in range(seeds):
        part = slice(s * rows, (s + 1) * rows)
        torch.addmm(bias_hh[s], g[part], u_t[s], out=out[part])


def _times(d: Tensor, weight: Tensor, seeds: int, plus: Tensor | None = None) -> Tensor:
    """[plus +] d @ U (the gradient flowing to g); with seeds stacked, each seed's rows by its
    own U."""
    if not seeds:
        return d @ weight if plus is None else torch.addmm(plus, d, weight)
    out = d.new_empty(d.shape[0], weight.shape[-1])
    rows = d.shape[0] // seeds
    for s in range(seeds):
        part = slice(s * rows, (s + 1) * rows)
        if plus is None:
            torch.mm(d[part], weight[s], out=out[part])
        else:
            torch.addmm(plus[part], d[part], weight[s], out=out[part])
    return out


# --------------------------------------------------------------------------- layers


class MAGEGRU(nn.Module):
    """One direction of MAGE-GRU over a batch of chain-decomposed DAGs (§3.2).

    forward(x [B, T, D], preds [B, E, T] long, mask [B, T] bool | None) -> [B, T, H].
    preds[b, e, t] is the index of token t's type-e predecessor (-1 = none); it must lie before
    t (after t when reverse=True, which processes the sequence from its end: the backward DAG).
    Predecessors that are padding (mask False) are ignored, and padding positions output zeros,
    so right padding never changes the outputs of real tokens. edge_combine="attention" weighs
    the incoming edges as the released CorefGRU does (module docstring; mode "split" only).
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_edge_types: int = 2,
        *,
        edge_sizes: Sequence[int] | None = None,
        mode: str = "split",
        reverse: bool = False,
        edge_combine: str = "concat",
    ) -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if edge_combine not in EDGE_COMBINES:
            raise ValueError(f"edge_combine must be one of {EDGE_COMBINES}, not {edge_combine!r}")
        if edge_combine == "attention" and mode != "split":
            raise ValueError(
                f"edge_combine='attention' weighs the per-type slices of g_t (mode 'split', as "
                f"the released CorefGRU); mode {mode!r} has no such slices"
            )
        if num_edge_types < 1:
            raise ValueError("at least one edge type is needed")
        if mode == "split":
            if edge_sizes is None:
                if hidden_size % num_edge_types:
                    raise ValueError(
                        f"hidden size {hidden_size} does not split evenly into {num_edge_types} "
                        "edge types; pass edge_sizes (see split_sizes)"
                    )
                edge_sizes = (hidden_size // num_edge_types,) * num_edge_types
            edge_sizes = tuple(int(s) for s in edge_sizes)
            if len(edge_sizes) != num_edge_types or sum(edge_sizes) != hidden_size:
                raise ValueError(
                    f"edge_sizes {edge_sizes} must give one size per edge type "
                    f"({num_edge_types}) summing to hidden_size {hidden_size}"
                )
            if min(edge_sizes) <= 0:
                raise ValueError(f"edge sizes must be positive, got {edge_sizes}")
        elif edge_sizes is not None:
            raise ValueError(f"edge_sizes only applies to mode='split', not {mode!r}")
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_edge_types = num_edge_types
        self.edge_sizes = edge_sizes
        self.mode = mode
        self.reverse = reverse
        self.edge_combine = edge_combine
        recurrent_size = hidden_size * (num_edge_types if mode == "shared" else 1)
        # stacked W_{r,z,h} (Eq. 4) and U_{r,z,h}, laid out as torch.nn.GRU's weight_ih_l0 ...
        self.weight_ih = nn.Parameter(torch.empty(3 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(3 * hidden_size, recurrent_size))
        self.bias_ih = nn.Parameter(torch.empty(3 * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(3 * hidden_size))
        # Watt of the released CorefGRU: one score vector per edge type, over the input
        self.weight_att = (
            nn.Parameter(torch.empty(num_edge_types, input_size))
            if edge_combine == "attention"
            else None
        )
        if mode == "split":
            # which edge type's predecessor each hidden dimension reads (Eq. 3's slices)
            dim_type = torch.repeat_interleave(
                torch.arange(num_edge_types), torch.tensor(edge_sizes)
            )
        else:
            dim_type = torch.empty(0, dtype=torch.long)
        self.register_buffer("dim_type", dim_type, persistent=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch.nn.GRU's initialization: U(-1/sqrt(H), 1/sqrt(H)) for the GRU's parameters;
        the edge attention's N(0, 0.1), as the released CorefGRU's Watt (tflayers.py)."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in (self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh):
            nn.init.uniform_(p, -bound, bound)
        if self.weight_att is not None:
            nn.init.normal_(self.weight_att, 0.0, 0.1)

    def extra_repr(self) -> str:
        sizes = f", edge_sizes={self.edge_sizes}" if self.mode == "split" else ""
        combine = ", edge_combine='attention'" if self.edge_combine == "attention" else ""
        return (
            f"{self.input_size}, {self.hidden_size}, num_edge_types={self.num_edge_types}"
            f"{sizes}, mode={self.mode!r}, reverse={self.reverse}{combine}"
        )

    def input_gates(self, x: Tensor) -> Tensor:
        """W x_t + b_ih for every step at once (Eq. 4's input terms): [B, T, 3H]."""
        return nn.functional.linear(x, self.weight_ih, self.bias_ih)

    def edge_scores(self, x: Tensor) -> Tensor:
        """The edge attention's score of each edge type at every step, w_e . x_t: [B, T, E]."""
        return nn.functional.linear(x, self.weight_att)

    def edge_weights(self, x: Tensor, present: Tensor) -> Tensor:
        """alpha [B, E, T]: softmax of the scores over the edges present at t (tflayers.py
        CorefGRU._attention), 0 for absent ones and where none is present."""
        scores = self.edge_scores(x).transpose(1, 2)
        scores = scores.to(torch.promote_types(scores.dtype, torch.float32))  # not bf16
        scores = scores.masked_fill(~present, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=1) * present

    def _processing_order(self, x: Tensor, preds: Tensor, mask: Tensor) -> tuple:
        """Flip the backward DAG into a forward one: position t -> T-1-t (§3.1: the backward
        order (T, ..., 1) is a topological order of G_b)."""
        if not self.reverse:
            return x, preds, mask
        steps = x.shape[1]
        flipped = torch.where(preds >= 0, steps - 1 - preds, preds)
        return x.flip(1), flipped.flip(2), mask.flip(1)

    def forward(self, x: Tensor, preds: Tensor, mask: Tensor | None = None) -> Tensor:
        batch, steps, _ = x.shape
        if preds.shape != (batch, self.num_edge_types, steps):
            raise ValueError(
                f"preds must be [B, E, T] = {[batch, self.num_edge_types, steps]}, "
                f"got {list(preds.shape)}"
            )
        if mask is None:
            mask = torch.ones(batch, steps, dtype=torch.bool, device=x.device)
        mask = mask.bool()
        x, preds, mask = self._processing_order(x, preds.long(), mask)
        position = torch.arange(steps, device=x.device)
        if bool(((preds >= position) | (preds < -1)).any()):
            where = "after" if self.reverse else "before"
            raise ValueError(
                f"every predecessor index must lie {where} its token (or be -1): these preds "
                f"do not form a {'backward' if self.reverse else 'forward'} DAG"
            )
        # a predecessor that is padding counts as none, so padding can never leak in
        present = (preds >= 0) & torch.gather(
            mask.unsqueeze(1).expand_as(preds), 2, preds.clamp(min=0)
        )
        row = torch.where(present, preds + 1, 0).permute(2, 0, 1)  # [T, B, E], 0 = zero state
        out = self._recur(x, row, present, None)
        if self.reverse:
            out = out.flip(1)
            mask = mask.flip(1)
        return out * mask.unsqueeze(-1).to(out.dtype)

    def run_rows(
        self, x: Tensor, rows: Tensor, mask: Tensor, prefix: Tensor | None = None
    ) -> Tensor:
        """One segment of a sequence read after an earlier one, whose outputs are the memory's
        first rows (the released code's query read from the document's memory: see
        models/mage/readers.py, separate_query).

        x [B, L, D] and mask [B, L] in processing order (flipped already for a backward
        direction; `reverse` plays no part here); rows [B, E, L] long: the memory row each
        edge type's predecessor of step s is (0 = none, 1 ... P = prefix rows, P + 1 + s' =
        this segment's step s' < s); prefix [P, B, H] or None. Returns [B, L, H] in
        processing order, zero where mask is False."""
        batch, steps, _ = x.shape
        if rows.shape != (batch, self.num_edge_types, steps):
            raise ValueError(
                f"rows must be [B, E, L] = {[batch, self.num_edge_types, steps]}, "
                f"got {list(rows.shape)}"
            )
        first = 1 + (0 if prefix is None else prefix.shape[0])
        own = first + torch.arange(steps, device=x.device)
        if bool(((rows >= own) | (rows < 0)).any()):
            raise ValueError(
                "every memory row a step reads must be written before it (an earlier segment's "
                "or an earlier step's): these rows do not follow the processing order"
            )
        present = rows > 0
        out = self._recur(x, rows.permute(2, 0, 1), present, prefix)
        return out * mask.unsqueeze(-1).to(out.dtype)

    def _recur(self, x: Tensor, row: Tensor, present: Tensor, prefix: Tensor | None) -> Tensor:
        """The recurrence over x [B, T, D] in processing order, reading memory rows `row`
        [T, B, E] (present [B, E, T]: which of them are edges); [B, T, H], unmasked."""
        batch, steps, _ = x.shape
        gates_x = self.input_gates(x).transpose(0, 1)
        # the recurrence runs in the parameters' precision (float32 under autocast: on CUDA the
        # Function's custom_fwd casts, on CPU this does), only the input projection in bf16/fp16
        gates_x = gates_x.to(self.weight_hh.dtype)
        scale = gates_x.new_empty(0)
        if self.mode == "split":
            read = row[:, :, self.dim_type].contiguous()  # [T, B, H]
            mix = gates_x.new_empty(0)
            if self.weight_att is not None:  # each dimension weighted by its type's alpha
                alpha = self.edge_weights(x, present).to(gates_x.dtype)
                scale = alpha[:, self.dim_type].permute(2, 0, 1).contiguous()  # [T, B, H]
        else:
            batch_index = torch.arange(batch, device=x.device).view(1, batch, 1)
            read = (row * batch + batch_index).reshape(steps, -1)  # [T, B * E]
            count = present.sum(1, keepdim=True).clamp(min=1)  # [B, 1, T]
            mix = (present / count).permute(2, 0, 1).to(gates_x.dtype)  # [T, B, E]
        args = (gates_x.contiguous(), self.weight_hh, self.bias_hh, read, mix, scale, self.mode)
        if prefix is not None:
            args += (prefix.to(gates_x.dtype).contiguous(),)
        return _ChainGRU.apply(*args).transpose(0, 1)


class BiMAGEGRU(nn.Module):
    """A bidirectional MAGE layer: forward DAG || backward DAG, lined up per token (§3.2: "we
    can obtain the output of the backward subgraph H_b, and concatenate with H_f").

    forward(x [B, T, D], forward_preds [B, E_f, T], backward_preds [B, E_b, T], mask [B, T])
    -> [B, T, 2H].
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_edge_types: int = 2,
        *,
        edge_sizes: Sequence[int] | None = None,
        mode: str = "split",
        edge_combine: str = "concat",
    ) -> None:
        super().__init__()
        kwargs = dict(edge_sizes=edge_sizes, mode=mode, edge_combine=edge_combine)
        self.forward_rnn = MAGEGRU(input_size, hidden_size, num_edge_types, **kwargs)
        self.backward_rnn = MAGEGRU(input_size, hidden_size, num_edge_types, reverse=True, **kwargs)
        self.hidden_size = hidden_size
        self.output_size = 2 * hidden_size

    def forward(
        self, x: Tensor, forward_preds: Tensor, backward_preds: Tensor, mask: Tensor | None = None
    ) -> Tensor:
        return torch.cat(
            [self.forward_rnn(x, forward_preds, mask), self.backward_rnn(x, backward_preds, mask)],
            dim=-1,
        )
