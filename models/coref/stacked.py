"""K seeds of the coreference model trained as one computation (issue #15.1): StackedCoref.

Luo & Glass report averages over seeds, and each seed is a small model that reads one
(cropped) document per step: its sentence encoder is a recurrence over words -- a Python loop
of small kernels for ASL (L&G §3.2.2), a cuDNN LSTM per sentence batch for the baseline and
LSL -- that leaves a GPU mostly idle. Stacking runs that encoder for the K seeds at once: each
seed's crop of its own document is padded into one [K, S, L] batch, every recurrence step is
one batched matmul over the seeds' own weights (stacked on the fly, so each seed keeps its
ordinary CorefModel and state dict), and the outputs are cut back to each seed's shape.

What stays per seed, on purpose:
- embedding, span scoring, pruning and antecedent scoring (CorefModel.score): they are large
  matrix products over thousands of spans already, with shapes that depend on each document;
- dropout: every seed draws from its own stream of the global generator (SeedStreams swaps it
  in around the seed's work), in the order of a separate run, so a stacked seed sees the masks
  it would see alone;
- evaluation (no dropout, whole documents): seed by seed (models/coref/train.py).

The batched recurrences are the same equations as nn.LSTM / nn.LSTMCell (gates i, f, g, o;
outputs zero past a sentence's length and the final state taken at its last word, as packed
sequences give), so a stacked run equals K separate runs to float tolerance
(tests/models/coref/test_stacked.py). A document longer than the model's encode_window is
encoded seed by seed (windows differ per document).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor, nn

from models.coref.model import (
    NEG_INF,
    AttentionalSentenceLinking,
    AttentiveLSTM,
    CorefModel,
    CorefOutput,
    DocTensors,
    LinearSentenceLinking,
    SentenceEncoder,
)
from models.sequences import reverse_padded


class SeedStreams:
    """Each seed's own state of the global torch generator(s), swapped in around its work, so
    that nn.Dropout inside a seed's model draws what it would draw in a separate run."""

    def __init__(self, states: Sequence[tuple[Tensor, list[Tensor] | None]]) -> None:
        self.states = list(states)

    @staticmethod
    def capture() -> tuple[Tensor, list[Tensor] | None]:
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        return torch.get_rng_state(), cuda

    @staticmethod
    def _restore(state: tuple[Tensor, list[Tensor] | None]) -> None:
        torch.set_rng_state(state[0])
        if state[1] is not None:
            torch.cuda.set_rng_state_all(state[1])

    @contextlib.contextmanager
    def of(self, k: int) -> Iterator[None]:
        outer = self.capture()
        self._restore(self.states[k])
        try:
            yield
        finally:
            self.states[k] = self.capture()
            self._restore(outer)


# --------------------------------------------------------------------------- batched pieces


def _stack(modules: Sequence[nn.Module], name: str) -> Tensor:
    return torch.stack([getattr(m, name) for m in modules])


def _linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x [K, ..., D] times seed k's weight [K, O, D] (+ bias [K, O]) -> [K, ..., O]."""
    flat = x.reshape(x.shape[0], -1, x.shape[-1])
    out = torch.bmm(flat, weight.transpose(1, 2))
    if bias is not None:
        out = out + bias.unsqueeze(1)
    return out.view(*x.shape[:-1], weight.shape[1])


def _lstm_step(gates: Tensor, c: Tensor) -> tuple[Tensor, Tensor]:
    """nn.LSTM's update from the summed gate pre-activations (order i, f, g, o)."""
    i, f, g, o = gates.chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def _lstm_scan(
    x: Tensor, lengths: Tensor, weights: Sequence[Tensor], state: tuple[Tensor, Tensor] | None
) -> tuple[Tensor, Tensor]:
    """One direction of K LSTMs over right-padded rows x [K, B, L, I] with lengths [K, B]:
    outputs [K, B, L, H] (zero past each length) and each row's state at its last word."""
    w_ih, w_hh, b_ih, b_hh = weights
    k, b, steps, _ = x.shape
    hidden = w_hh.shape[-1]
    gates_x = _linear(x, w_ih, b_ih)  # [K, B, L, 4H]
    h, c = state if state is not None else (x.new_zeros(k, b, hidden), x.new_zeros(k, b, hidden))
    outputs = []
    for t in range(steps):
        h_new, c_new = _lstm_step(gates_x[:, :, t] + _linear(h, w_hh, b_hh), c)
        live = (t < lengths).unsqueeze(-1)
        h, c = torch.where(live, h_new, h), torch.where(live, c_new, c)
        outputs.append(h_new * live)
    if not outputs:
        return x.new_zeros(k, b, 0, hidden), h
    return torch.stack(outputs, dim=2), h


def _reverse(x: Tensor, lengths: Tensor) -> Tensor:
    """reverse_padded on [K, B, L, ...] with lengths [K, B]."""
    return reverse_padded(x.flatten(0, 1), lengths.flatten()).view_as(x)


def bilstm(
    lstms: Sequence[nn.LSTM], x: Tensor, lengths: Tensor, state: tuple[Tensor, Tensor] | None = None
) -> tuple[Tensor, Tensor]:
    """K one-layer bidirectional batch_first nn.LSTMs: (outputs [K, B, L, 2H], final h
    [2, K, B, H]); state (h0, c0) as nn.LSTM's, [2, K, B, H] each."""
    outs, finals = [], []
    for d, suffix in enumerate(("", "_reverse")):
        names = [f"{n}_l0{suffix}" for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        weights = [_stack(lstms, n) for n in names]
        start = None if state is None else (state[0][d], state[1][d])
        inp = x if d == 0 else _reverse(x, lengths)
        out, h = _lstm_scan(inp, lengths, weights, start)
        outs.append(out if d == 0 else _reverse(out, lengths))
        finals.append(h)
    return torch.cat(outs, dim=-1), torch.stack(finals)


def attentive_lstm(
    cells: Sequence[AttentiveLSTM], x: Tensor, memory: Tensor, memory_mask: Tensor,
    has_memory: Tensor,
) -> Tensor:  # fmt: skip
    """K AttentiveLSTMs (L&G Eq. 1-6, models/coref/model.py) at once: x [K, S, L, E], memory
    [K, S, M, E], memory_mask [K, S, M], has_memory [K, S] -> outputs [K, S, L, H]."""
    w = {name: _stack([getattr(c, name.split(".")[0]) for c in cells], name.split(".")[1])
         for name in ("attend_x.weight", "attend_x.bias", "attend_h.weight",
                      "attend_memory.weight", "attend_out.weight", "attend_out.bias",
                      "gate_x.weight", "gate_x.bias", "gate_h.weight", "gate_v.weight",
                      "gate_out.weight", "gate_out.bias", "cell.weight_ih", "cell.weight_hh",
                      "cell.bias_ih", "cell.bias_hh")}  # fmt: skip
    k, s, steps, _ = x.shape
    hidden = cells[0].hidden_size
    h, c = x.new_zeros(k, s, hidden), x.new_zeros(k, s, hidden)
    attend_x = _linear(x, w["attend_x.weight"], w["attend_x.bias"])
    attend_memory = _linear(memory, w["attend_memory.weight"])
    gate_x = _linear(x, w["gate_x.weight"], w["gate_x.bias"])
    # padded rows of a short document may have an empty memory: attend uniformly over zeros
    # there instead of producing NaN (real rows always have a non-empty or no memory)
    empty = ~memory_mask.any(dim=-1, keepdim=True)
    logits_mask = memory_mask | ~has_memory.unsqueeze(-1) | empty
    keep_v = has_memory.unsqueeze(-1).to(x.dtype)
    outputs = []
    for t in range(steps):
        hidden_a = torch.relu(
            attend_x[:, :, t].unsqueeze(2)
            + _linear(h, w["attend_h.weight"]).unsqueeze(2)
            + attend_memory
        )
        logits = _linear(hidden_a, w["attend_out.weight"], w["attend_out.bias"]).squeeze(-1)
        alpha = torch.softmax(logits.masked_fill(~logits_mask, NEG_INF), dim=-1)  # Eq. 1-2
        v = (alpha.unsqueeze(-2) @ memory).squeeze(-2) * keep_v  # Eq. 3
        gate = torch.sigmoid(_linear(
            torch.relu(gate_x[:, :, t] + _linear(h, w["gate_h.weight"])
                       + _linear(v, w["gate_v.weight"])),
            w["gate_out.weight"], w["gate_out.bias"],
        ))  # Eq. 4  # fmt: skip
        gate = torch.where(has_memory.unsqueeze(-1), gate, torch.ones_like(gate))
        mixed = gate * x[:, :, t] + (1 - gate) * v  # Eq. 5
        gates = (_linear(mixed, w["cell.weight_ih"], w["cell.bias_ih"])
                 + _linear(h, w["cell.weight_hh"], w["cell.bias_hh"]))  # fmt: skip
        h, c = _lstm_step(gates, c)  # Eq. 6
        outputs.append(h)
    if not outputs:
        return x.new_zeros(k, s, 0, hidden)
    return torch.stack(outputs, dim=2)


# --------------------------------------------------------------------------- the encoders


def _encode_baseline(encoders, x, lengths, streams, shapes) -> Tensor:
    return bilstm([e.lstm for e in encoders], x, lengths)[0]


def _encode_lsl(encoders, x, lengths, streams, shapes) -> Tensor:
    """LinearSentenceLinking.forward for K seeds; its dropout between the layers is each
    seed's own, drawn at the shape of the seed's document."""
    out1, h_n = bilstm([e.layer1 for e in encoders], x, lengths)
    finals = torch.cat([h_n[0], h_n[1]], dim=-1)  # [K, S, 2H]
    previous = torch.cat([finals.new_zeros(finals.shape[0], 1, finals.shape[2]),
                          finals[:, :-1]], dim=1)  # fmt: skip
    link = _linear(previous, _stack([e.link for e in encoders], "weight"),
                   _stack([e.link for e in encoders], "bias"))  # fmt: skip
    k, s, _ = link.shape
    hidden = encoders[0].hidden_size
    h0 = link.view(k, s, 2, hidden).permute(2, 0, 1, 3).contiguous()
    cells = torch.stack([e.initial_cell for e in encoders])  # [K, 2, H]
    c0 = cells.permute(1, 0, 2).unsqueeze(2).expand(2, k, s, hidden).contiguous()
    dropped = torch.zeros_like(out1)
    for i, (rows, width) in enumerate(shapes):
        with streams.of(i):
            dropped[i, :rows, :width] = encoders[i].dropout(out1[i, :rows, :width])
    return bilstm([e.layer2 for e in encoders], dropped, lengths, (h0, c0))[0]


def _encode_asl(encoders, x, lengths, streams, shapes) -> Tensor:
    """AttentionalSentenceLinking.forward for K seeds (memory: the previous sentence)."""
    steps = x.shape[2]
    valid = torch.arange(steps, device=x.device) < lengths.unsqueeze(-1)  # [K, S, L]
    memory = torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)
    memory_mask = torch.cat([torch.zeros_like(valid[:, :1]), valid[:, :-1]], dim=1)
    has_memory = (torch.arange(x.shape[1], device=x.device) > 0).expand(x.shape[0], -1)
    fwd = attentive_lstm([e.forward_lstm for e in encoders], x, memory, memory_mask, has_memory)
    bwd = attentive_lstm([e.backward_lstm for e in encoders], _reverse(x, lengths), memory,
                         memory_mask, has_memory)  # fmt: skip
    return torch.cat([fwd, _reverse(bwd, lengths)], dim=-1)


ENCODE = {SentenceEncoder: _encode_baseline, LinearSentenceLinking: _encode_lsl,
          AttentionalSentenceLinking: _encode_asl}  # fmt: skip


# --------------------------------------------------------------------------- the module


class StackedCoref(nn.Module):
    """K CorefModels of one configuration (one per seed) as one module: forward(docs) takes
    seed k's document docs[k] and returns each seed's CorefOutput, its encoder batched over the
    seeds. models[k] is seed k's model itself (its checkpoint is its own state dict)."""

    def __init__(self, models: Sequence[CorefModel], streams: SeedStreams) -> None:
        super().__init__()
        configs = {repr(m.config) for m in models}
        if len(configs) != 1:
            raise ValueError("stacked coreference models must share one configuration")
        if len(streams.states) != len(models):
            raise ValueError("one generator stream per model")
        self.models = nn.ModuleList(models)
        self.streams = streams

    def forward(self, docs: Sequence[DocTensors]) -> list[CorefOutput]:
        embs: list[Tensor | None] = []
        for k, (model, doc) in enumerate(zip(self.models, docs, strict=True)):
            with self.streams.of(k):
                embs.append(model.embed(doc) if doc.num_words else None)
        encoded = self.encode(docs, embs)
        outputs = []
        for k, (model, doc) in enumerate(zip(self.models, docs, strict=True)):
            with self.streams.of(k):
                outputs.append(model.score(doc, embs[k], encoded[k]))
        return outputs

    def encode(self, docs: Sequence[DocTensors], embs: Sequence[Tensor | None]) -> list:
        """Each seed's encoder outputs [S_k, L_k, 2H], computed as one batch over the seeds
        with words (seed by seed when a document exceeds the encode window)."""
        live = [k for k, e in enumerate(embs) if e is not None]
        window = self.models[0].config.encode_window
        out: list[Tensor | None] = [None] * len(embs)
        if any(embs[k].shape[0] > window for k in live) or len(live) < 2:
            for k in live:
                with self.streams.of(k):
                    out[k] = self.models[k].encode(embs[k], docs[k].lengths)
            return out
        x, lengths = _pad([embs[k] for k in live], [docs[k].lengths for k in live])
        encoders = [self.models[k].encoder for k in live]
        streams = SeedStreams([self.streams.states[k] for k in live])
        shapes = [tuple(embs[k].shape[:2]) for k in live]
        encoded = ENCODE[type(encoders[0])](encoders, x, lengths, streams, shapes)
        for i, k in enumerate(live):
            self.streams.states[k] = streams.states[i]
            out[k] = encoded[i, : shapes[i][0], : shapes[i][1]]
        return out


def _pad(embs: Sequence[Tensor], lengths: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
    """[S_k, L_k, E] per seed -> [K, S, L, E] zero-padded, lengths [K, S] (0 = no sentence)."""
    rows = max(e.shape[0] for e in embs)
    width = max(e.shape[1] for e in embs)
    x = embs[0].new_zeros(len(embs), rows, width, embs[0].shape[2])
    n = torch.zeros(len(embs), rows, dtype=torch.long, device=x.device)
    for k, (e, length) in enumerate(zip(embs, lengths, strict=True)):
        x[k, : e.shape[0], : e.shape[1]] = e
        n[k, : e.shape[0]] = length.to(x.device)
    return x, n
