"""End-to-end span-ranking coreference (Lee et al. 2017) with cross-sentence encoders.

Lee, He, Lewis & Zettlemoyer (2017), "End-to-end Neural Coreference Resolution" (arXiv
1707.07045, code github.com/kentonl/e2e-coref), the baseline that Luo & Glass (papers/001,
"Learning Word Representations with Cross-Sentence Dependency for End-to-End Co-reference
Resolution") extend. Equation numbers below are Lee et al.'s unless marked "L&G".

- Every span of at most `max_width` (10) tokens inside one sentence is a candidate.
- Span representation g_i = [x*_START(i); x*_END(i); x^_i; phi(i)] (Eq. 3): the encoder
  outputs at the span's boundaries, a head-finding attention over the span's word embeddings
  (alpha_t = w_alpha . x*_t, a_{i,t} = softmax over the span, x^_i = sum_t a_{i,t} x_t; the
  paper writes FFNN_alpha, the released code uses one linear projection, as here) and a
  learned width embedding.
- Mention score s_m(i) = w_m . FFNN_m(g_i) (Eq. 4); antecedent score
  s_a(i, j) = w_a . FFNN_a([g_i; g_j; g_i o g_j; phi(i, j)]) (Eq. 5) with phi(i, j) the
  same-speaker, genre and bucketed mention-distance embeddings; coreference score
  s(i, j) = s_m(i) + s_m(j) + s_a(i, j), and s(i, eps) = 0 for the dummy antecedent (Eq. 1).
- Pruning (§5): the lambda*T (lambda = 0.4, T = words) highest-scoring candidates, greedily in
  score order, skipping a span that crosses an accepted one (nesting is fine); each kept span
  considers up to K (250) preceding kept spans as antecedents.
- Training (Eq. 6): the marginal log-likelihood of all correct antecedents; a span with no gold
  antecedent among its candidates (not a mention, or first of its cluster) has eps as gold.
- Decoding: every kept span takes its highest-scoring antecedent; clusters are the connected
  components of the chosen links (§3).

Encoders turn a document's sentences (padded, sentence-major) into word representations x*:
- "baseline": one BiLSTM run on each sentence separately (Lee et al. §4).
- "lsl" (L&G §3.1): a two-layer BiLSTM; the second layer's initial states for sentence i are
  built from the first layer's final forward and backward states of sentence i - 1.
- "asl" (L&G §3.2, Eq. 1-6): an LSTM that, before each step, attends over the previous
  sentence's word embeddings and mixes the summary into its input through a context gate.

All three make the representation of sentence i depend on sentences i - 1 and i only, so a
long document is encoded in windows of `encode_window` sentences, each preceded by one
context sentence, with exactly the result of encoding it at once; scoring runs over the whole
document with antecedent scores computed in chunks of span pairs, so memory stays bounded.

Spans are token offsets [start, end) with `end` exclusive, as everywhere in this project.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from models.sequences import reverse_padded, run_recurrent
from tasks.core.settings import bounded

ENCODERS = ("baseline", "lsl", "asl")
DISTANCE_BUCKETS = 10  # 1, 2, 3, 4, 5-7, 8-15, 16-31, 32-63, 64+ (and 0, unused)
SPEAKER_DIFFERENT, SPEAKER_SAME, SPEAKER_UNKNOWN = 0, 1, 2
NEG_INF = float("-inf")
LM_FIELDS = ("lm_features", "lm_layers", "lm_dim")


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class CorefConfig:
    """Architecture hyperparameters; defaults are the papers' (L&G §4.1, Lee et al. §7.1).

    Vocabulary sizes come from the data and are part of the configuration a checkpoint is
    checked against.
    """

    vocab_size: int
    num_chars: int
    num_genres: int
    encoder: str = "baseline"
    embedding_dim: int = bounded(
        300, ge=1
    )  # GloVe 300d (Lee et al.); random initialisation otherwise
    char_embedding_dim: int = bounded(8, ge=1)
    char_filters: int = bounded(50, ge=1)  # per width
    char_filter_widths: tuple[int, ...] = bounded((3, 4, 5), min_items=1)
    lstm_size: int = bounded(200, ge=1)  # per direction (L&G §4.1: "200 output units")
    ffnn_size: int = bounded(150, ge=1)
    ffnn_depth: int = bounded(2, ge=1)
    feature_size: int = bounded(20, ge=1)
    max_width: int = bounded(10, ge=1)
    top_span_ratio: float = bounded(0.4, gt=0, le=1)
    max_antecedents: int = bounded(250, ge=1)
    asl_mlp_size: int = bounded(
        150, ge=1
    )  # L&G §4.1: "one hidden layer consisting of 150 hidden units"
    asl_gate: str = "scalar"  # "scalar" (one g_t per word, Eq. 4 as printed) or "vector"
    dropout: float = bounded(0.2, ge=0, lt=1)
    lexical_dropout: float = bounded(0.5, ge=0, lt=1)
    use_speakers: bool = True
    use_genre: bool = True
    # Not in Lee et al. (0 = their loss): weight of an auxiliary binary cross-entropy of s_m
    # against "is a gold mention", summed over candidates (joint mention detection, Zhang et
    # al. 2018). On small corpora the antecedent loss alone can settle on pruning that keeps
    # no gold mention at all (every kept span then has only the dummy as gold, loss 0).
    mention_loss_weight: float = bounded(0.0, ge=0)
    encode_window: int = bounded(
        64, ge=1
    )  # sentences per encoder window (memory only; results identical)
    # antecedent pairs scored at once: memory, and speed (cache-sized chunks are the fastest on
    # a CPU, issue #57.3); a training step's dropout masks follow the chunks, scores do not
    pair_chunk: int = bounded(2048, ge=1)
    # Frozen pretrained-LM word features (models/coref/features.py): the encoder's name (null:
    # none, the random-embedding model); layers and dim come from the features, like the
    # vocabulary sizes, and a checkpoint records all three.
    lm_features: str | None = None
    lm_layers: tuple[int, ...] = ()
    lm_dim: int = 0

    def __post_init__(self) -> None:
        if self.encoder not in ENCODERS:
            raise ValueError(f"encoder {self.encoder!r}: expected one of {ENCODERS}")
        if self.asl_gate not in ("scalar", "vector"):
            raise ValueError(f"asl_gate {self.asl_gate!r}: expected 'scalar' or 'vector'")
        if self.max_width < 1 or self.max_antecedents < 1 or not 0 < self.top_span_ratio <= 1:
            raise ValueError("max_width and max_antecedents must be >= 1, top_span_ratio in (0, 1]")
        object.__setattr__(self, "char_filter_widths", tuple(self.char_filter_widths))
        object.__setattr__(self, "lm_layers", tuple(self.lm_layers))
        if self.lm_features is not None and (not self.lm_layers or self.lm_dim < 1):
            raise ValueError("lm_features needs lm_layers and lm_dim (from the features)")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> CorefConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown model setting(s) {unknown}; known: {sorted(known)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain values; without the lm_* ones when no features are used, so a
        model without them has the configuration (and checkpoint bytes) it had before them."""
        out = asdict(self)
        out["char_filter_widths"] = list(self.char_filter_widths)
        out["lm_layers"] = list(self.lm_layers)
        if self.lm_features is None:
            for key in LM_FIELDS:
                del out[key]
        return out


@dataclass
class DocTensors:
    """One document (or training crop) as the model reads it.

    word_ids [S, L] and char_ids [S, L, C] are sentence-major and zero-padded (id 0 = padding);
    lengths [S] (on the CPU) are the sentence lengths; speaker_ids [T] hold one id per token
    (-1: the corpus has no speakers); gold_* [G] are the gold mentions (end exclusive) and their
    cluster ids (> 0), empty when unknown; lm_features [T, layers, dim] the frozen LM's states
    per token (models/coref/features.py), None for a model without them.
    """

    word_ids: Tensor
    char_ids: Tensor
    lengths: Tensor
    speaker_ids: Tensor
    genre_id: int = 0
    gold_starts: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    gold_ends: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    gold_clusters: Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.long))
    lm_features: Tensor | None = None  # [T, layers, dim] per token, for a model trained on them

    @property
    def num_words(self) -> int:
        return int(self.lengths.sum())

    def to(self, device: torch.device | str) -> DocTensors:
        moved = {
            f.name: getattr(self, f.name).to(device)
            for f in fields(self)
            if isinstance(getattr(self, f.name), Tensor) and f.name != "lengths"
        }
        return DocTensors(**{**self.__dict__, **moved})


@dataclass
class CorefOutput:
    """Scores of one document. Kept spans are sorted by (start, end); antecedents[i, k] is
    the index (into the kept spans) of span i's k-th candidate antecedent, valid where
    antecedent_mask; scores[:, 0] is the dummy antecedent (0), scores[:, 1:] s(i, j)."""

    candidate_starts: Tensor
    candidate_ends: Tensor
    candidate_scores: Tensor
    starts: Tensor
    ends: Tensor
    mention_scores: Tensor
    antecedents: Tensor
    antecedent_mask: Tensor
    scores: Tensor
    loss: Tensor | None = None

    def predicted_antecedents(self) -> list[int]:
        """Index of each kept span's chosen antecedent, -1 for the dummy (argmax, §3)."""
        if self.scores.shape[0] == 0:
            return []
        best = self.scores.argmax(dim=1).tolist()
        ants = self.antecedents.tolist()
        return [-1 if b == 0 else ants[i][b - 1] for i, b in enumerate(best)]

    def clusters(self) -> list[list[tuple[int, int]]]:
        return clusters_from_antecedents(
            self.starts.tolist(), self.ends.tolist(), self.predicted_antecedents()
        )


# --------------------------------------------------------------------------- span utilities


def enumerate_spans(lengths: Tensor, max_width: int) -> tuple[Tensor, Tensor]:
    """All spans of 1..max_width tokens inside one sentence, sorted by (start, end).

    lengths: sentence lengths [S]; returns (starts, ends) over document token offsets, end
    exclusive.
    """
    lengths = lengths.to("cpu", torch.long)
    num_words = int(lengths.sum())
    if num_words == 0:
        empty = torch.zeros(0, dtype=torch.long)
        return empty, empty
    sentence_end = torch.repeat_interleave(torch.cumsum(lengths, 0), lengths)  # [T]
    starts = torch.arange(num_words).unsqueeze(1).expand(num_words, max_width)
    ends = starts + torch.arange(1, max_width + 1).unsqueeze(0)
    valid = ends <= sentence_end.unsqueeze(1)
    return starts[valid], ends[valid]


def prune_spans(scores: Tensor, starts: Tensor, ends: Tensor, k: int) -> Tensor:
    """Indices of at most k spans, highest score first, skipping any span that crosses an
    already accepted one (Lee et al. §5); returned sorted by (start, end).

    Two spans cross when they overlap without one containing the other:
    s1 < s2 < e1 < e2 (end exclusive). Ties in score go to the earlier span.
    """
    if k <= 0 or scores.numel() == 0:
        return torch.zeros(0, dtype=torch.long)
    order = torch.argsort(scores.detach().float().cpu(), descending=True, stable=True).tolist()
    start_list, end_list = starts.tolist(), ends.tolist()
    size = max(end_list) + 1
    max_end_from = [-1] * size  # largest end of an accepted span starting at p
    min_start_to = [size] * size  # smallest start of an accepted span ending at p
    accepted: list[int] = []
    for index in order:
        s, e = start_list[index], end_list[index]
        crosses = any(max_end_from[p] > e for p in range(s + 1, e)) or any(
            min_start_to[p] < s for p in range(s + 1, e)
        )
        if crosses:
            continue
        accepted.append(index)
        max_end_from[s] = max(max_end_from[s], e)
        min_start_to[e] = min(min_start_to[e], s)
        if len(accepted) == k:
            break
    return torch.tensor(sorted(accepted, key=lambda i: (start_list[i], end_list[i])))


def antecedent_candidates(num_spans: int, max_antecedents: int) -> tuple[Tensor, Tensor]:
    """The up to K preceding kept spans of each kept span, nearest first.

    Returns (antecedents [N, K'], mask [N, K']) with K' = min(K, N - 1): antecedents[i, k] =
    i - 1 - k, valid where >= 0 (invalid entries point at span 0 and are masked).
    """
    width = max(0, min(max_antecedents, num_spans - 1))
    offsets = torch.arange(1, width + 1).unsqueeze(0)  # [1, K']
    raw = torch.arange(num_spans).unsqueeze(1) - offsets  # [N, K']
    mask = raw >= 0
    return raw.clamp(min=0), mask


def bucket_distance(distance: Tensor) -> Tensor:
    """Lee et al.'s distance buckets: 0-4 as is, then [5,7], [8,15], [16,31], [32,63], 64+."""
    log_bucket = torch.floor(torch.log2(distance.clamp(min=1).float())).long() + 3
    bucket = torch.where(distance <= 4, distance, log_bucket)
    return bucket.clamp(0, DISTANCE_BUCKETS - 1)


def clusters_from_antecedents(
    starts: list[int], ends: list[int], antecedents: list[int]
) -> list[list[tuple[int, int]]]:
    """Connected components of the antecedent links; unlinked spans are not output.

    Clusters are ordered by their first mention, mentions by position.
    """
    root = list(range(len(antecedents)))
    for i, a in enumerate(antecedents):
        if a >= 0:
            if a >= i:
                raise ValueError(f"span {i} links to a later span {a}")
            root[i] = root[a]
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(root):
        groups.setdefault(r, []).append(i)
    return [
        [(starts[i], ends[i]) for i in members] for members in groups.values() if len(members) > 1
    ]


# --------------------------------------------------------------------------- building blocks


def ffnn(input_size: int, hidden_size: int, depth: int, dropout: float) -> nn.Sequential:
    """Lee et al.'s FFNN: `depth` ReLU layers with dropout, then a linear scorer."""
    layers: list[nn.Module] = []
    size = input_size
    for _ in range(depth):
        layers += [nn.Linear(size, hidden_size), nn.ReLU(), nn.Dropout(dropout)]
        size = hidden_size
    layers.append(nn.Linear(size, 1))
    return nn.Sequential(*layers)


class CharCNN(nn.Module):
    """Character CNN (Lee et al. §7.1: 8-dim characters, widths 3/4/5, 50 filters each),
    max-pooled over each token's characters."""

    def __init__(self, num_chars: int, dim: int, filters: int, widths: tuple[int, ...]):
        super().__init__()
        self.widths = widths
        self.embedding = nn.Embedding(num_chars, dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(dim, filters, w) for w in widths)
        self.output_size = filters * len(widths)

    def forward(self, char_ids: Tensor) -> Tensor:
        shape = char_ids.shape  # [..., C]
        flat = char_ids.reshape(-1, shape[-1])
        if flat.shape[1] < max(self.widths):  # tokens shorter than the widest filter
            flat = nn.functional.pad(flat, (0, max(self.widths) - flat.shape[1]))
        x = self.embedding(flat).transpose(1, 2)  # [N, dim, C]
        pooled = [torch.relu(conv(x)).max(dim=2).values for conv in self.convs]
        return torch.cat(pooled, dim=1).reshape(*shape[:-1], self.output_size)


def _run_lstm(
    lstm: nn.LSTM, x: Tensor, lengths: Tensor, state: tuple[Tensor, Tensor] | None = None
) -> tuple[Tensor, Tensor]:
    """A packed BiLSTM over padded sentences: (outputs [S, L, 2H], final h [2, S, H])."""
    packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
    out, (h_n, _) = run_recurrent(lstm, packed, state)
    out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    return out, h_n


# --------------------------------------------------------------------------- encoders


class SentenceEncoder(nn.Module):
    """Baseline (Lee et al.): a one-layer BiLSTM on each sentence, sentences as a batch."""

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, batch_first=True, bidirectional=True)
        self.output_size = 2 * hidden_size

    def forward(self, x: Tensor, lengths: Tensor) -> Tensor:
        return _run_lstm(self.lstm, x, lengths)[0]


class LinearSentenceLinking(nn.Module):
    """LSL (L&G §3.1): two BiLSTM layers; layer 2 of sentence i starts from sentence i - 1.

    The initial state of layer 2's forward LSTM for s_i is S_i = [c_0^2; [s->_{i-1}; s<-_{i-1}]]
    and of its backward LSTM [c<-_0^2; [s->_{i-1}; s<-_{i-1}]], where s->_{i-1}, s<-_{i-1} are
    the final outputs of layer 1's forward and backward LSTMs on s_{i-1} and c_0^2 is layer 2's
    initial cell. The concatenation has 2H units and an LSTM state H, so each direction maps it
    to H with its own linear projection (our reading: the paper leaves the size mismatch open);
    c_0^2 is learned. The first sentence, having no predecessor, projects zeros (= the bias).
    Row i of a batch is preceded by row i - 1; row 0 has no predecessor.
    """

    def __init__(self, input_size: int, hidden_size: int, dropout: float):
        super().__init__()
        self.hidden_size = hidden_size
        self.layer1 = nn.LSTM(input_size, hidden_size, batch_first=True, bidirectional=True)
        self.layer2 = nn.LSTM(2 * hidden_size, hidden_size, batch_first=True, bidirectional=True)
        self.link = nn.Linear(2 * hidden_size, 2 * hidden_size)  # both directions' h_0
        self.initial_cell = nn.Parameter(torch.zeros(2, hidden_size))  # c_0^2 per direction
        self.dropout = nn.Dropout(dropout)
        self.output_size = 2 * hidden_size

    def forward(self, x: Tensor, lengths: Tensor) -> Tensor:
        out1, h_n = _run_lstm(self.layer1, x, lengths)
        finals = torch.cat([h_n[0], h_n[1]], dim=1)  # [S, 2H]: [s->_i; s<-_i]
        previous = torch.cat([finals.new_zeros(1, finals.shape[1]), finals[:-1]], dim=0)
        h0 = self.link(previous).view(-1, 2, self.hidden_size).transpose(0, 1).contiguous()
        c0 = self.initial_cell.unsqueeze(1).expand(2, x.shape[0], self.hidden_size).contiguous()
        return _run_lstm(self.layer2, self.dropout(out1), lengths, (h0, c0))[0]


class _MemoryGradients:
    """The (alpha_t, dL/dv_t) pairs of one AttentiveLSTM pass, gathered during backward so
    that the memory's gradient, sum_t alpha_t^T dL/dv_t, is one batched product over the
    steps instead of an [S, M, E] outer product and accumulation per step (the bulk of
    ASL's backward on a CPU). The tap empties it: each backward gathers its own steps."""

    def __init__(self) -> None:
        self.pairs: list[tuple[Tensor, Tensor]] = []


class _MemoryTap(torch.autograd.Function):
    """The memory as the steps read it: backward returns the gathered memory gradient.
    Autograd runs it after every step's _AttendSum.backward (each step reads its output)."""

    @staticmethod
    def forward(ctx, memory: Tensor, store: _MemoryGradients) -> Tensor:
        ctx.store = store
        return memory.view_as(memory)

    @staticmethod
    def backward(ctx, grad: Tensor | None) -> tuple[Tensor | None, None]:
        pairs, ctx.store.pairs = ctx.store.pairs, []
        if not pairs:
            return grad, None
        alphas = torch.stack([a for a, _ in pairs], dim=1)  # [S, T, M]
        grads = torch.stack([g for _, g in pairs], dim=1).to(alphas.dtype)  # [S, T, E]
        total = torch.bmm(alphas.transpose(1, 2), grads)  # [S, M, E]
        return (total if grad is None else grad + total), None


class _AttendSum(torch.autograd.Function):
    """v = sum_m alpha_m memory_m (L&G Eq. 3) over a _MemoryTap'd memory: backward gives
    alpha its gradient and leaves the memory's to the tap."""

    @staticmethod
    def forward(ctx, alpha: Tensor, memory: Tensor, store: _MemoryGradients) -> Tensor:
        alpha = alpha.to(memory.dtype)
        ctx.save_for_backward(alpha, memory)
        ctx.store = store
        return torch.bmm(alpha.unsqueeze(1), memory).squeeze(1)

    @staticmethod
    def backward(ctx, grad_v: Tensor) -> tuple[Tensor | None, None, None]:
        alpha, memory = ctx.saved_tensors
        if ctx.needs_input_grad[1]:
            ctx.store.pairs.append((alpha, grad_v))
        if not ctx.needs_input_grad[0]:
            return None, None, None
        grad_v = grad_v.to(memory.dtype).unsqueeze(1)
        return torch.bmm(grad_v, memory.transpose(1, 2)).squeeze(1), None, None


class AttentiveLSTM(nn.Module):
    """One direction of ASL (L&G §3.2.2): an LSTM whose input is gated with an attention
    summary of the previous sentence's word embeddings.

    For word x_{i,t} with previous state h_{t-1} and memory X_{i-1} = [x_{i-1,1}..x_{i-1,m}]:
      c_k = f_c([x_{i,t}; h_{t-1}; x_{i-1,k}])          (L&G Eq. 2)
      alpha = softmax(c)                                 (L&G Eq. 1)
      v_{i-1} = sum_j alpha_j x_{i-1,j}                  (L&G Eq. 3)
      g_t = sigmoid(f_g([x_{i,t}; h_{t-1}; v_{i-1}]))    (L&G Eq. 4)
      x^_{i,t} = g_t x_{i,t} + (1 - g_t) v_{i-1}         (L&G Eq. 5)
      h_{i,t} = f_lstm(x^_{i,t}, h_{i,t-1}, c_{i,t-1})   (L&G Eq. 6)
    f_c and f_g are MLPs with one hidden layer (150 ReLU units, L&G §4.1). Their first layer
    is a linear map of the concatenation, written as a sum of one map per block so the parts
    that do not depend on h_{t-1} are computed once per sentence rather than once per step.
    A sentence without a predecessor (the first of a document) reads its input unchanged
    (g_t = 1).
    """

    def __init__(self, input_size: int, hidden_size: int, mlp_size: int, gate: str):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = nn.LSTMCell(input_size, hidden_size)
        self.attend_x = nn.Linear(input_size, mlp_size)
        self.attend_h = nn.Linear(hidden_size, mlp_size, bias=False)
        self.attend_memory = nn.Linear(input_size, mlp_size, bias=False)
        self.attend_out = nn.Linear(mlp_size, 1)
        self.gate_x = nn.Linear(input_size, mlp_size)
        self.gate_h = nn.Linear(hidden_size, mlp_size, bias=False)
        self.gate_v = nn.Linear(input_size, mlp_size, bias=False)
        self.gate_out = nn.Linear(mlp_size, 1 if gate == "scalar" else input_size)

    def forward(
        self, x: Tensor, memory: Tensor, memory_mask: Tensor, has_memory: Tensor
    ) -> tuple[Tensor, Tensor]:
        """x [S, L, E] in processing order; memory [S, M, E] with memory_mask [S, M];
        has_memory [S]. Returns outputs [S, L, H] and gates [S, L, 1 or E]."""
        batch, steps, _ = x.shape
        h = x.new_zeros(batch, self.hidden_size)
        c = x.new_zeros(batch, self.hidden_size)
        attend_x = self.attend_x(x)  # [S, L, F]
        attend_memory = self.attend_memory(memory)  # [S, M, F]
        gate_x = self.gate_x(x)
        # a sentence without memory attends uniformly over nothing: v = 0, and g = 1 below
        logits_mask = memory_mask | ~has_memory.unsqueeze(1)
        keep_v = has_memory.unsqueeze(1).to(x.dtype)
        store = _MemoryGradients()
        tapped = _MemoryTap.apply(memory, store)
        outputs, gates = [], []
        # the steps' slices taken once (unbind): a slice per step, x[:, t], would make
        # backward write a zero-filled copy of the whole input per step (O(L^2))
        steps_x, steps_attend, steps_gate = x.unbind(1), attend_x.unbind(1), gate_x.unbind(1)
        for t in range(steps):
            hidden = torch.relu(
                steps_attend[t].unsqueeze(1) + self.attend_h(h).unsqueeze(1) + attend_memory
            )
            logits = self.attend_out(hidden).squeeze(-1).masked_fill(~logits_mask, NEG_INF)
            alpha = torch.softmax(logits, dim=-1)  # Eq. 1-2
            v = _AttendSum.apply(alpha, tapped, store) * keep_v  # Eq. 3
            gate = torch.sigmoid(
                self.gate_out(torch.relu(steps_gate[t] + self.gate_h(h) + self.gate_v(v)))
            )  # Eq. 4
            gate = torch.where(has_memory.unsqueeze(1), gate, torch.ones_like(gate))
            mixed = gate * steps_x[t] + (1 - gate) * v  # Eq. 5
            h, c = self.cell(mixed, (h, c))  # Eq. 6
            outputs.append(h)
            gates.append(gate)
        if steps == 0:
            return x.new_zeros(batch, 0, self.hidden_size), x.new_zeros(batch, 0, 1)
        return torch.stack(outputs, dim=1), torch.stack(gates, dim=1)


class AttentionalSentenceLinking(nn.Module):
    """ASL (L&G §3.2): a bidirectional AttentiveLSTM; both directions attend over the previous
    sentence's word embeddings (the memory, L&G §3.2.2). Row i of a batch is preceded by row
    i - 1; row 0 has no predecessor."""

    def __init__(self, input_size: int, hidden_size: int, mlp_size: int, gate: str):
        super().__init__()
        self.forward_lstm = AttentiveLSTM(input_size, hidden_size, mlp_size, gate)
        self.backward_lstm = AttentiveLSTM(input_size, hidden_size, mlp_size, gate)
        self.output_size = 2 * hidden_size
        self.last_gates: tuple[Tensor, Tensor] | None = None  # for inspection and tests

    def forward(self, x: Tensor, lengths: Tensor) -> Tensor:
        lengths = lengths.to(x.device)
        steps = x.shape[1]
        valid = torch.arange(steps, device=x.device).unsqueeze(0) < lengths.unsqueeze(1)
        memory = torch.cat([x.new_zeros(1, *x.shape[1:]), x[:-1]], dim=0)
        memory_mask = torch.cat([valid.new_zeros(1, steps), valid[:-1]], dim=0)
        has_memory = torch.arange(x.shape[0], device=x.device) > 0
        fwd, fwd_gates = self.forward_lstm(x, memory, memory_mask, has_memory)
        bwd, bwd_gates = self.backward_lstm(
            reverse_padded(x, lengths), memory, memory_mask, has_memory
        )
        self.last_gates = (fwd_gates, reverse_padded(bwd_gates, lengths))
        return torch.cat([fwd, reverse_padded(bwd, lengths)], dim=2)


class ScalarMix(nn.Module):
    """ELMo's task-specific layer mix (Peters et al. 2018, Eq. 1):
    gamma * sum_j softmax(s)_j h_j over the cached layers h_j [..., layers, dim]; s starts
    at 0 (equal weights), gamma at 1."""

    def __init__(self, layers: int):
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(layers))  # s
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, states: Tensor) -> Tensor:
        mix = torch.softmax(self.weights, dim=0).to(states.dtype)
        return self.gamma.to(states.dtype) * (states * mix.unsqueeze(-1)).sum(dim=-2)


# --------------------------------------------------------------------------- the model


class CorefModel(nn.Module):
    """Lee et al. (2017) span ranking over a configurable sentence encoder."""

    def __init__(self, config: CorefConfig):
        super().__init__()
        self.config = config
        c = config
        self.words = nn.Embedding(c.vocab_size, c.embedding_dim, padding_idx=0)
        self.chars = CharCNN(
            c.num_chars, c.char_embedding_dim, c.char_filters, c.char_filter_widths
        )
        self.embedding_size = c.embedding_dim + self.chars.output_size  # [word; char]: heads
        encoder_input = self.embedding_size + c.lm_dim  # + the LM features' mix, if any
        self.lexical_dropout = nn.Dropout(c.lexical_dropout)
        self.dropout = nn.Dropout(c.dropout)
        if c.encoder == "baseline":
            self.encoder: nn.Module = SentenceEncoder(encoder_input, c.lstm_size)
        elif c.encoder == "lsl":
            self.encoder = LinearSentenceLinking(encoder_input, c.lstm_size, c.dropout)
        else:
            self.encoder = AttentionalSentenceLinking(
                encoder_input, c.lstm_size, c.asl_mlp_size, c.asl_gate
            )
        context_size = self.encoder.output_size
        self.head_scorer = nn.Linear(context_size, 1)  # alpha_t = w_alpha . x*_t
        self.width_embeddings = nn.Embedding(c.max_width, c.feature_size)
        self.span_size = 2 * context_size + self.embedding_size + c.feature_size
        self.mention_scorer = ffnn(self.span_size, c.ffnn_size, c.ffnn_depth, c.dropout)
        self.distance_embeddings = nn.Embedding(DISTANCE_BUCKETS, c.feature_size)
        self.genre_embeddings = nn.Embedding(c.num_genres, c.feature_size)
        self.speaker_embeddings = nn.Embedding(3, c.feature_size)
        pair_features = c.feature_size * (1 + int(c.use_genre) + int(c.use_speakers))
        self.pair_scorer = ffnn(
            3 * self.span_size + pair_features, c.ffnn_size, c.ffnn_depth, c.dropout
        )
        # created last and only with features: the model without them keeps its parameters
        # and its draws from the generator
        self.lm_mix = ScalarMix(len(c.lm_layers)) if c.lm_features is not None else None

    # ---- word representations

    def embed(self, doc: DocTensors) -> Tensor:
        """Word embeddings x_t = [word; char CNN] with lexical dropout: [S, L, E]; with LM
        features, [word; char CNN; the layers' learned mix], the sentence encoder's input, as
        in Lee et al. (2018)'s ELMo model (the span heads keep [word; char], see score)."""
        parts = [self.words(doc.word_ids), self.chars(doc.char_ids)]
        if self.lm_mix is not None:
            parts.append(self._lm_embeddings(doc, parts[0]))
        return self.lexical_dropout(torch.cat(parts, dim=-1))

    def _lm_embeddings(self, doc: DocTensors, words: Tensor) -> Tensor:
        """The features' scalar mix per token, laid out sentence-major as words [S, L, ...]."""
        if doc.lm_features is None or doc.lm_features.shape[0] != doc.num_words:
            raise ValueError(
                f"the model reads LM features of {self.config.lm_features} (one row per token): "
                f"the document has {doc.num_words} tokens and "
                f"{'no' if doc.lm_features is None else doc.lm_features.shape[0]} feature rows"
            )
        mixed = self.lm_mix(doc.lm_features.to(words.dtype))  # [T, dim]
        valid = torch.arange(words.shape[1], device=words.device).unsqueeze(0) < doc.lengths.to(
            words.device
        ).unsqueeze(1)
        out = words.new_zeros(*words.shape[:2], mixed.shape[-1])
        out[valid] = mixed.to(out.dtype)
        return out

    def encode(self, emb: Tensor, lengths: Tensor) -> Tensor:
        """Encoder outputs x*_t [S, L, 2H], in windows of encode_window sentences.

        Each window after the first is preceded by its previous sentence as context (encoded
        and then discarded), so the result equals encoding all sentences at once.
        """
        window = self.config.encode_window
        num_sentences = emb.shape[0]
        if num_sentences <= window:
            return self.encoder(emb, lengths)
        parts = []
        for first in range(0, num_sentences, window):
            context = 1 if first > 0 else 0
            rows = slice(first - context, min(first + window, num_sentences))
            sub_lengths = lengths[rows]
            width = int(sub_lengths.max())
            out = self.encoder(emb[rows, :width], sub_lengths)[context:]
            parts.append(nn.functional.pad(out, (0, 0, 0, emb.shape[1] - width)))
        return torch.cat(parts, dim=0)

    # ---- spans

    def span_embeddings(
        self, context: Tensor, emb: Tensor, starts: Tensor, ends: Tensor, head_scores: Tensor
    ) -> Tensor:
        """g_i = [x*_start; x*_end; x^_i; phi(width)] (Eq. 3) for spans [start, end)."""
        widths = ends - starts  # 1..max_width
        offsets = torch.arange(self.config.max_width, device=starts.device)
        index = (starts.unsqueeze(1) + offsets).clamp(max=context.shape[0] - 1)  # [N, W]
        inside = offsets.unsqueeze(0) < widths.unsqueeze(1)
        attention = head_scores[index].masked_fill(~inside, NEG_INF).softmax(dim=1)
        heads = (attention.unsqueeze(2).to(emb.dtype) * emb[index]).sum(dim=1)
        width_emb = self.dropout(self.width_embeddings(widths - 1))
        return torch.cat([context[starts], context[ends - 1], heads, width_emb], dim=1)

    def forward(self, doc: DocTensors) -> CorefOutput:
        """Score one document; with gold mentions in `doc`, also the loss (Eq. 6)."""
        if doc.num_words == 0:
            return self.score(doc, None, None)
        emb = self.embed(doc)
        return self.score(doc, emb, self.encode(emb, doc.lengths))

    def score(self, doc: DocTensors, emb: Tensor | None, encoded: Tensor | None) -> CorefOutput:
        """Everything after the sentence encoder: spans, pruning, antecedents and the loss, from
        the embeddings `emb` [S, L, E] and the encoder's outputs `encoded` [S, L, 2H]. Apart
        from forward so that seeds stacked (models/coref/stacked.py) can batch the encoder."""
        c = self.config
        device = self.words.weight.device
        starts, ends = enumerate_spans(doc.lengths, c.max_width)
        starts, ends = starts.to(device), ends.to(device)
        num_words = doc.num_words
        if num_words == 0 or emb is None or encoded is None:
            return self._empty(starts, ends, device)
        valid = torch.arange(emb.shape[1], device=device).unsqueeze(0) < doc.lengths.to(
            device
        ).unsqueeze(1)
        context = self.dropout(encoded)[valid]  # [T, 2H]
        emb = emb[valid]  # [T, E]
        if self.lm_mix is not None:
            emb = emb[:, : self.embedding_size]  # heads attend over [word; char] (Lee et al. 2018)
        head_scores = self.head_scorer(context).squeeze(1)  # [T]

        candidate_scores = self._candidate_scores(context, emb, starts, ends, head_scores)
        k = min(int(math.floor(num_words * c.top_span_ratio)), starts.shape[0])
        top = prune_spans(candidate_scores, starts, ends, k).to(device)
        if top.numel() == 0:
            out = self._empty(starts, ends, device)
            out.candidate_scores = candidate_scores
            if c.mention_loss_weight and (doc.gold_starts.numel() or self.training):
                out.loss = out.loss + self._mention_loss(candidate_scores, starts, ends, doc)
            return out
        top_starts, top_ends = starts[top], ends[top]
        mention_scores = candidate_scores[top]
        spans = self.span_embeddings(context, emb, top_starts, top_ends, head_scores)

        antecedents, mask = antecedent_candidates(top.shape[0], c.max_antecedents)
        speakers = doc.speaker_ids.to(device)[top_starts]
        genre = self.genre_embeddings(torch.tensor(doc.genre_id, device=device))
        scores = self._antecedent_scores(spans, mention_scores, mask, speakers, genre)
        antecedents, mask = antecedents.to(device), mask.to(device)
        scores = torch.cat([scores.new_zeros(scores.shape[0], 1), scores], dim=1)
        loss = None
        if doc.gold_starts.numel() or self.training:
            labels = gold_antecedent_labels(top_starts, top_ends, antecedents, mask, doc)
            loss = marginal_log_likelihood_loss(scores, labels)
            if c.mention_loss_weight:
                loss = loss + self._mention_loss(candidate_scores, starts, ends, doc)
        return CorefOutput(
            starts, ends, candidate_scores, top_starts, top_ends, mention_scores,
            antecedents, mask, scores, loss,
        )  # fmt: skip

    def _candidate_scores(
        self, context: Tensor, emb: Tensor, starts: Tensor, ends: Tensor, head_scores: Tensor
    ) -> Tensor:
        """s_m(i) (Eq. 4) for every candidate, in chunks (T x max_width candidates)."""
        size = 4096
        parts = [
            self.mention_scorer(
                self.span_embeddings(
                    context, emb, starts[i : i + size], ends[i : i + size], head_scores
                )
            ).squeeze(1)
            for i in range(0, starts.shape[0], size)
        ]
        return torch.cat(parts) if parts else context.new_zeros(0)

    def _mention_loss(
        self, scores: Tensor, starts: Tensor, ends: Tensor, doc: DocTensors
    ) -> Tensor:
        """mention_loss_weight * sum of BCE(s_m(i), [i is a gold mention]) over candidates."""
        gold = set(zip(doc.gold_starts.tolist(), doc.gold_ends.tolist(), strict=True))
        target = torch.tensor(
            [float(span in gold) for span in zip(starts.tolist(), ends.tolist(), strict=True)],
            device=scores.device,
        )
        bce = nn.functional.binary_cross_entropy_with_logits(
            scores.float(), target, reduction="sum"
        )
        return self.config.mention_loss_weight * bce

    def _antecedent_scores(
        self, spans: Tensor, mention_scores: Tensor, mask: Tensor, speakers: Tensor, genre: Tensor
    ) -> Tensor:
        """s(i, j) in antecedent_candidates' layout [N, K'], -inf where mask (on the CPU, where
        the pair list is built) is False; pair_chunk pairs at a time (memory, and speed).

        Only the valid slots are scored: span i has min(i, K) candidates, so scoring all
        N x K' slots and masking after would throw away 40 % of a training crop's pair work
        (docs/experiments/numerics.md, 2026-12-08). The valid pairs go through Eq. 5 as one
        flat list in mask's row-major order and are scattered back into the layout, which the
        loss, the predictions and k-best read as before.
        """
        targets, slots = mask.nonzero(as_tuple=True)  # row-major, antecedents nearest first
        others = targets - 1 - slots  # antecedent_candidates: slot k of span i is i - 1 - k
        targets, others = targets.to(spans.device), others.to(spans.device)
        projections = self._pair_projections(spans)
        size = self.config.pair_chunk
        flat = torch.cat([
            self._pair_scores(targets[p : p + size], others[p : p + size], spans, projections,
                              mention_scores, speakers, genre)
            for p in range(0, max(1, targets.shape[0]), size)
        ])  # fmt: skip
        return flat.new_full(mask.shape, NEG_INF).masked_scatter(mask.to(spans.device), flat)

    def _pair_projections(self, spans: Tensor) -> tuple[Tensor, Tensor]:
        """W_1 g_i and W_2 g_j of FFNN_a's first layer, once per kept span (see _pair_scores)."""
        d = spans.shape[1]
        w_target, w_other = self.pair_scorer[0].weight[:, : 2 * d].split(d, dim=1)
        return spans @ w_target.t(), spans @ w_other.t()

    def _pair_scores(
        self,
        targets: Tensor,
        others: Tensor,
        spans: Tensor,
        projections: tuple[Tensor, Tensor],
        mention_scores: Tensor,
        speakers: Tensor,
        genre: Tensor,
    ) -> Tensor:
        """s(i, j) = s_m(i) + s_m(j) + s_a(i, j) (Eq. 1, 5) for the pairs (targets[p],
        others[p]) of kept spans: [P].

        FFNN_a's first layer on [g_i; g_j; g_i o g_j; phi(i, j)] is computed as the sum of its
        four blocks, W_1 g_i + W_2 g_j + W_3 (g_i o g_j) + W_4 phi: the same numbers as the
        concatenation, but the g_i and g_j terms are computed once per span rather than once
        per pair (a third of the cost of the concatenated layer each).
        """
        first = self.pair_scorer[0]
        d = spans.shape[1]
        _, _, w_product, w_features = first.weight.split(
            [d, d, d, first.weight.shape[1] - 3 * d], dim=1
        )
        by_target, by_other = projections
        product = gather_rows(spans, targets) * gather_rows(spans, others)  # [P, D]
        phi = self.pair_features(targets, others, speakers, genre)  # [P, F]
        hidden = (
            gather_rows(by_target, targets)
            + gather_rows(by_other, others)
            + product @ w_product.t()
            + phi @ w_features.t()
            + first.bias
        )
        s_a = self.pair_scorer[1:](hidden).squeeze(-1)
        return s_a + gather_rows(mention_scores, targets) + gather_rows(mention_scores, others)

    def pair_features(
        self, targets: Tensor, others: Tensor, speakers: Tensor, genre: Tensor
    ) -> Tensor:
        """phi(i, j) for pairs of kept spans (targets and others: indices of one shape [...]),
        [..., F]: bucketed mention distance, genre, same speaker (Lee et al. §4), with
        dropout; a pair with an unknown speaker gets the third speaker value."""
        c = self.config
        features = [self.distance_embeddings(bucket_distance(targets - others))]
        if c.use_genre:
            features.append(genre.expand(*others.shape, -1))
        if c.use_speakers:
            target_speakers, other_speakers = speakers[targets], speakers[others]
            known = (target_speakers >= 0) & (other_speakers >= 0)
            speaker_ids = torch.where(
                known, (target_speakers == other_speakers).long(),
                torch.full_like(others, SPEAKER_UNKNOWN),
            )  # fmt: skip
            features.append(self.speaker_embeddings(speaker_ids))
        return self.dropout(torch.cat(features, dim=-1))

    def _empty(self, starts: Tensor, ends: Tensor, device: torch.device) -> CorefOutput:
        none = torch.zeros(0, dtype=torch.long, device=device)
        zero_loss = self.words.weight.sum() * 0.0  # keeps backward() valid on empty crops
        return CorefOutput(
            starts, ends, torch.zeros(starts.shape[0], device=device), none, none,
            torch.zeros(0, device=device), none.view(0, 0), none.view(0, 0).bool(),
            torch.zeros(0, 1, device=device), zero_loss,
        )  # fmt: skip

    @torch.no_grad()
    def predict(self, doc: DocTensors) -> CorefOutput:
        """Inference (eval mode restored afterwards)."""
        was_training = self.training
        self.eval()
        try:
            return self(doc)
        finally:
            self.train(was_training)

    def load_pretrained(self, vectors: Tensor, found: Tensor, freeze: bool) -> None:
        """Copy pretrained rows (where `found`) into the word embeddings; optionally freeze.

        Rows without a pretrained vector keep their random initialisation (unlike Lee et al.,
        whose missing words are zero vectors, so that they stay distinguishable when trained).
        """
        with torch.no_grad():
            self.words.weight[found] = vectors[found].to(self.words.weight.dtype)
        self.words.weight.requires_grad_(not freeze)


def gather_rows(source: Tensor, index: Tensor) -> Tensor:
    """source[index] for a 1-D index, through index_select: its backward (index_add_) is
    cheaper on the CPU than indexing's (index_put_ with accumulate); the training step 11 %
    faster with the flat pairs' gathers (issue #57.3, docs/experiments/numerics.md)."""
    return source.index_select(0, index)


def gold_antecedent_labels(
    starts: Tensor, ends: Tensor, antecedents: Tensor, mask: Tensor, doc: DocTensors
) -> Tensor:
    """[N, K + 1] bool: column 0 (dummy) where no candidate antecedent is gold (Eq. 6)."""
    gold = {
        (s, e): c
        for s, e, c in zip(
            doc.gold_starts.tolist(),
            doc.gold_ends.tolist(),
            doc.gold_clusters.tolist(),
            strict=True,
        )
    }
    cluster = torch.tensor(
        [gold.get(span, 0) for span in zip(starts.tolist(), ends.tolist(), strict=True)],
        device=starts.device,
        dtype=torch.long,
    )
    same = (cluster[antecedents] == cluster.unsqueeze(1)) & (cluster.unsqueeze(1) > 0) & mask
    dummy = ~same.any(dim=1, keepdim=True)
    return torch.cat([dummy, same], dim=1)


def marginal_log_likelihood_loss(scores: Tensor, labels: Tensor) -> Tensor:
    """-log sum_{y in GOLD(i)} P(y | i), summed over kept spans (Lee et al. Eq. 6)."""
    scores = scores.float()
    gold = scores.masked_fill(~labels, NEG_INF)
    return (torch.logsumexp(scores, dim=1) - torch.logsumexp(gold, dim=1)).sum()


__all__ = [
    "ENCODERS",
    "AttentionalSentenceLinking",
    "AttentiveLSTM",
    "CorefConfig",
    "CorefModel",
    "CorefOutput",
    "DocTensors",
    "LinearSentenceLinking",
    "ScalarMix",
    "SentenceEncoder",
    "antecedent_candidates",
    "bucket_distance",
    "clusters_from_antecedents",
    "enumerate_spans",
    "gold_antecedent_labels",
    "marginal_log_likelihood_loss",
    "prune_spans",
]
