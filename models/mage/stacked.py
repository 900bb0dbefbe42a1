"""K seeds of one reader as one batched module (issue #15.1): StackedReader.

The papers' protocols are many small runs (MAGE Table 1: 10 seeds per reader and task), each
too small to keep a machine busy. Stacking trains the K seeds of one (model, task) together:
every parameter gets a leading seed dimension, and every batch is the K seeds' own batches
folded into one, seed-major (seed s in rows s*b ... s*b+b-1, each seed's batch padded to the
longest of them, and to b items by repeating its first item, which the loss leaves out).

Why not torch.func.vmap: the readers' recurrences are nn.GRU (no batching rule) and MAGE's
_ChainGRU (a custom autograd Function with in-place writes into its memory), neither of which
vmap can map. Instead the parameterized leaves of a reader are swapped for seed-aware ones and
the reader's own forward runs unchanged on the folded batch (everything between the leaves --
attention, spans, gating -- works item by item):

- nn.Embedding -> one gather from the seeds' tables laid end to end;
- nn.Linear (W_C of Eq. 6) -> one bmm per batch;
- MAGEGRU -> the same recurrence with per-seed U (models/mage/mage_gru.py, _ChainGRU's seed
  dimension); nn.GRU -> that recurrence with only the sequential edge (a MAGE-GRU with only
  sequential edges is exactly a GRU, mage_gru.py), so both encoders batch over seeds;
- nn.Dropout -> each seed's own mask, drawn from the seed's own generator at the shape the
  seed's batch has on its own, so that a seed's masks are those of a separate run (CPU; on CUDA
  F.dropout uses a fused kernel with another random stream, so masks are the seed's own but
  not bit-equal to a separate run's).

Each seed is initialised exactly as alone (seed_everything(seed), then build_model), and its
dropout generator starts where the global one stands after that, as in a separate run. Adam is
element-wise and clipping is done per seed (StackedReaderRecipe.clip_gradients), so each seed's
update is the one it would get alone; the shared loop (tasks/training/loop.py, lanes) keeps
each seed's early stopping and best-on-dev checkpoint.

Cost: exactness means each seed keeps its own length-bucketed batch order, so a folded batch
is as long as the longest of the K seeds' batches (about 2x the token positions on bAbI qa2
at K = 10), and on CPU the larger working set is not faster per position either: stacking is
for devices a single seed leaves idle (tests/models/mage/test_bench_stacked.py).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import torch
from torch import Tensor, nn

from models.mage.mage_gru import MAGEGRU, _ChainGRU


class StackedEmbedding(nn.Module):
    """K embedding tables [K, V, E]; rows of seed s look up table s. Padding embeds as zero and
    gets no gradient, as nn.Embedding(padding_idx) (whose padding row is zero and stays so)."""

    def __init__(self, tables: Sequence[nn.Embedding]) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.stack([t.weight.detach() for t in tables]))
        self.padding_idx = tables[0].padding_idx

    def forward(self, tokens: Tensor) -> Tensor:
        seeds, vocab, dim = self.weight.shape
        offset = (
            torch.arange(seeds, device=tokens.device).repeat_interleave(tokens.shape[0] // seeds)
            * vocab
        )
        out = nn.functional.embedding(
            tokens + offset.view(-1, *([1] * (tokens.dim() - 1))), self.weight.view(-1, dim)
        )
        if self.padding_idx is None:
            return out
        return out.masked_fill((tokens == self.padding_idx).unsqueeze(-1), 0.0)


def _per_seed_linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """x [K*b, ..., D] times seed s's weight [K, O, D] (+ bias [K, O]) -> [K*b, ..., O]: one
    matmul per seed (on CPU torch.bmm is far slower than the BLAS matmul of a single seed)."""
    seeds = weight.shape[0]
    flat = x.reshape(seeds, -1, x.shape[-1])
    out = torch.stack([
        nn.functional.linear(flat[s], weight[s], None if bias is None else bias[s])
        for s in range(seeds)
    ])  # fmt: skip
    return out.view(*x.shape[:-1], weight.shape[1])


class StackedLinear(nn.Module):
    def __init__(self, layers: Sequence[nn.Linear]) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.stack([m.weight.detach() for m in layers]))
        biases = [m.bias for m in layers]
        self.bias = (
            nn.Parameter(torch.stack([b.detach() for b in biases]))
            if biases[0] is not None
            else None
        )

    def forward(self, x: Tensor) -> Tensor:
        return _per_seed_linear(x, self.weight, self.bias)


class StackedMAGEGRU(MAGEGRU):
    """K MAGE-GRU directions (same settings) with per-seed parameters; forward as MAGEGRU's."""

    def __init__(self, layers: Sequence[MAGEGRU]) -> None:
        first = layers[0]
        super().__init__(first.input_size, first.hidden_size, first.num_edge_types,
                         edge_sizes=first.edge_sizes, mode=first.mode, reverse=first.reverse,
                         edge_combine=first.edge_combine)  # fmt: skip
        names = ["weight_ih", "weight_hh", "bias_ih", "bias_hh"]
        if first.weight_att is not None:
            names.append("weight_att")
        for name in names:
            stacked = torch.stack([getattr(m, name).detach() for m in layers])
            setattr(self, name, nn.Parameter(stacked))

    def input_gates(self, x: Tensor) -> Tensor:
        return _per_seed_linear(x, self.weight_ih, self.bias_ih)

    def edge_scores(self, x: Tensor) -> Tensor:
        return _per_seed_linear(x, self.weight_att, None)


class StackedGRU(nn.Module):
    """K one-layer, one-way, batch_first nn.GRUs run as _ChainGRU with only the sequential edge
    (the same update, gates r, z, n as nn.GRU). forward(x) -> (outputs, None)."""

    def __init__(self, layers: Sequence[nn.GRU]) -> None:
        super().__init__()
        first = layers[0]
        if first.num_layers != 1 or first.bidirectional or not first.batch_first:
            raise ValueError("StackedGRU stacks one-layer, one-way, batch_first GRUs only")
        for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
            stacked = torch.stack([getattr(m, name).detach() for m in layers])
            setattr(self, name, nn.Parameter(stacked))

    def forward(self, x: Tensor) -> tuple[Tensor, None]:
        batch, steps, _ = x.shape
        hidden = self.weight_hh_l0.shape[-1]
        gates_x = _per_seed_linear(x, self.weight_ih_l0, self.bias_ih_l0).transpose(0, 1)
        # step t reads memory row t: the output of step t - 1 (row 0: the zero state)
        read = torch.arange(steps, device=x.device).view(steps, 1, 1).expand(steps, batch, hidden)
        empty = gates_x.new_empty(0)  # no mix, no edge attention
        out = _ChainGRU.apply(gates_x.contiguous(), self.weight_hh_l0, self.bias_hh_l0,
                              read.contiguous(), empty, empty, "split")  # fmt: skip
        return out.transpose(0, 1), None


class SeedDropout(nn.Module):
    """Dropout with each seed's own generator, its mask drawn at the shape the seed's batch has
    alone (F.dropout on CPU: bernoulli_(1 - p) on a tensor of the input's shape, divided by
    1 - p), so a stacked seed sees the masks of its separate run. The folded input is wider
    than one seed's batch: `widths` ({folded width: [width of each seed]}, set per batch by
    StackedReader) and `items` (real items per seed) say where each seed's part is."""

    def __init__(self, p: float, generators: Sequence[torch.Generator]) -> None:
        super().__init__()
        self.p, self.generators = float(p), list(generators)
        self.widths: dict[int, list[int]] = {}
        self.items: list[int] = []

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0 or x.numel() == 0:
            return x
        seeds = len(self.generators)
        per_seed = x.view(seeds, -1, *x.shape[1:])
        mask = torch.zeros_like(per_seed)
        if x.dim() > 2 and x.shape[1] not in self.widths:
            raise ValueError(f"SeedDropout: no seed widths for a folded width {x.shape[1]}")
        widths = self.widths[x.shape[1]] if x.dim() > 2 else None
        for s, gen in enumerate(self.generators):
            shape = (
                self.items[s],
                *((widths[s],) if widths else ()),
                *x.shape[2 if widths else 1 :],
            )
            noise = torch.empty(shape, dtype=x.dtype).bernoulli_(1 - self.p, generator=gen)
            region = mask[s, : shape[0]]
            if widths:
                region = region[:, : widths[s]]
            region.copy_(noise.div_(1 - self.p))
        return (per_seed * mask).view_as(x)


class StackedReader(nn.Module):
    """K readers of one architecture (models/mage/readers.py) as one module over folded
    batches. Parameter names are the readers' own, with a leading seed dimension:
    seed_state_dict(k) is a state dict the single reader loads."""

    def __init__(self, readers: Sequence[nn.Module], generators: Sequence[torch.Generator]):
        super().__init__()
        if len(readers) != len(generators) or not readers:
            raise ValueError("one generator per reader, at least one reader")
        self.seeds = len(readers)
        self.reader = copy.deepcopy(readers[0])
        self.dropouts: list[SeedDropout] = []
        for name, _ in list(self.reader.named_modules()):
            if name:
                self._swap(name, [r.get_submodule(name) for r in readers], generators)
        left = [n for n, p in self.named_parameters() if p.shape[:1] != (self.seeds,)]
        if left:
            raise TypeError(f"no stacked version for the parameters {left}")

    def _swap(self, name: str, modules: Sequence[nn.Module], generators) -> None:
        kinds = {nn.Embedding: StackedEmbedding, nn.Linear: StackedLinear, nn.GRU: StackedGRU,
                 MAGEGRU: StackedMAGEGRU}  # fmt: skip
        first = modules[0]
        if isinstance(first, nn.Dropout):
            new = SeedDropout(first.p, generators)
            self.dropouts.append(new)
        elif type(first) in kinds:
            new = kinds[type(first)](modules)
        else:
            return
        parent, _, leaf = name.rpartition(".")
        setattr(self.reader.get_submodule(parent) if parent else self.reader, leaf, new)

    def set_layout(self, items: Sequence[int], widths: Mapping[int, Sequence[int]]) -> None:
        """Where each seed's part of the next folded batch is (see SeedDropout)."""
        for d in self.dropouts:
            d.items, d.widths = list(items), {k: list(v) for k, v in widths.items()}

    def forward(self, batch: Mapping[str, Tensor]) -> Tensor:
        return self.reader(batch)

    def seed_state_dict(self, k: int) -> dict[str, Tensor]:
        return {name.removeprefix("reader."): value[k] for name, value in self.state_dict().items()}
