"""Reading-comprehension readers of the MAGE paper's experiments (papers/004, §4.1).

- BiGRUReader: bi-GRUs encode the document into H^d and the query into h^q, the query attends
  over the document (Eq. 5), and the answer is read off with the attention sum of Kadlec et al.
  (2016) for extractive tasks (probability of a candidate word = the attention on the positions
  where it occurs) or with a softmax over an output lookup table W_C of candidates (Eq. 6).
- GAReader: the Gated-Attention reader (Dhingra, Liu, Cohen & Salakhutdinov 2016, "Gated-
  Attention Readers for Text Comprehension"): K layers; between layers every document token is
  multiplied element-wise by its attention-weighted query vector; the query is re-encoded
  from its embeddings at every layer; attention sum over the last layer.

Options shared by both, one per row of Tables 1-5:
- encoder="gru": separate bi-GRUs over the document and the query.
- encoder="mage": "we replace the pair of bi-GRUs with the single MAGE-GRU model described for
  multiple sequences" (§4.1): one bidirectional MAGE-GRU (models/mage/mage_gru.py) over the
  concatenated graph sequence (context and query in the item's random order, §3.3), whose
  outputs are split back into document and query by their spans. In the GA reader "we replace
  the bi-GRU at every layer" (§4.1): every layer runs MAGE over the concatenation, with the
  gated document representation at document positions and the previous layer's query
  representation at query positions (the paper does not say what feeds the query positions
  of later layers; a joint sequence needs one input size, so we take the layer below's).
  mage_mode="shared" / "dagrnn" give Table 1's "MAGE (shared)" and "GA + DAG-RNN".
- one_hot_coref: "we append a one-hot vector o_t in {0,1}^M to the input of the GRU x_t
  indicating which coreference chain, if any, that token is a part of" (§4.1, after Wang et
  al. 2017): the "+ one-hot" baseline. Chain ids are per item, dense from 0 (collate_graphs).
- edge_combine: "concat" (Eq. 4) or "attention" over the incoming edge types, as the released
  CorefGRU (models/mage/mage_gru.py, module docstring); MAGE encoders, mage_mode "split".

Choices the paper leaves open, each with the released code's reading as an option
(bdhingra/coref-gru, lambada branch; the "authors" recipe of models/mage/train.py sets all):
- init: "torch" (nn.GRU / nn.Embedding / nn.Linear defaults) or "glorot" (glorot_init_).
- dropout_at: "all" (the embeddings, the bi-GRU reader's document encoding, the GA reader's
  gated layer inputs) or "between_layers" (only the gated layer inputs: model/GA.py applies
  tf.nn.dropout only inside ``if i<K-1``, so a one-layer reader has none).
- attention_sum: "document" (Eq. 5's softmax over every document position, the paper and
  Kadlec et al.) or "candidates" (renormalised over the positions holding a candidate:
  model/GA.py ``probm = probs*self.cmask + EPS; probm = probm/tf.reduce_sum(probm, ...)``).
- token_in_query: the GA Reader's token-in-query feature (Dhingra et al. 2016, "qe-comm" after
  Li et al. 2016), which the MAGE paper does not mention: model/GA.py ``prepare_input`` marks
  every document token whose word occurs in the query, embeds the flag in 2 dimensions
  (``Femb``) and appends it to the document input of the last layer (``if self.use_feat and
  i==K-1``; config.py ``use_feat``: 0 on the lambada branch, 1 in its later GAMage config) --
  for the one-layer bi-GRU reader, its only layer. Off by default (the paper's model); in a
  MAGE encoder over the concatenation the query positions take flag 0 (one input size).
- separate_query (bi-GRU reader, MAGE split encoder): the released code's structure instead of
  the paper's "single MAGE-GRU": the document and the query have their own CorefGRUs (own
  weights), and the query is read after the document from its memory, the document after
  the query in the backward pass (lambada branch, model/GA.py lines 85-102: ``fqry.compute(...,
  mem_init=dmem[:,-1,:,:])``, ``bdoc.compute(..., mem_init=qmem[:,-1,:,:])``; the chains are
  one list over document and query, utils/MiniBatchLoader.py lines 136-150, and the query's
  first token has the sequential chain's incoming edge, line 88). A chain's memory after the
  document is the state of its last mention, which is what the concatenation's edges
  name: so the reader runs the concatenation in the document-query order (graphs.order:
  document_query, required) with the document's weights at document positions and the
  query's at query positions (MAGEGRU.run_rows). The query's input has no token-in-query
  flag (GA.py: ``inqry`` lacks the +2). Where we depart: the released backward document pass
  starts from ``qmem[:,-1]``, which after its reversal (tflayers.py CorefGRU.compute lines
  238-241) is the memory after the query's LAST position alone -- the zero memory wherever
  the query is padded; we start it from the query's whole backward memory, the code's evident
  intent ("the reverse in the backward pass").
- char_filters > 0: character features of every token appended to its word embedding, for
  document and query alike (one set of weights): the later config's char CNN (master,
  model/GA.py lines 72-76 and get_character_embeddings/conv1d lines 157-191; config.py
  ``char_dim: 10, char_filter_size: 50, char_filter_width: 5, max_word_len: 15``): each
  character embedded (char_dim), one convolution of width char_width over the word's first
  max_word_len characters padded to that length ("VALID", no bias), ReLU, max over positions.
  The characters are those of the vocabulary word a token id stands for (`words`); the
  released code takes the raw word, so an out-of-vocabulary word there keeps its own.

The batch (collate_graphs builds it from numericalized GRAPHS rows), B items, T tokens:
    tokens        [B, T] long   token ids of the concatenated sequence, padding_idx after it
    mask          [B, T] bool   real tokens
    forward       [B, E, T] long  forward-DAG predecessor per edge type (-1 none); mage only
    backward      [B, E, T] long  backward-DAG predecessor per edge type (-1 none); mage only
    chain         [B, T] long   coreference chain per token (-1 none); one_hot_coref only
    doc_span      [B, 2] long   [start, end) of the document in the concatenation
    query_span    [B, 2] long   [start, end) of the query (LAMBADA: the last sentence, Chu et
                                al. 2016; it may lie inside the one context segment)
    answer        [B] long      index into candidates (attention_sum) or class id (classify)
    candidates    [B, C] long   candidate token ids (attention_sum), in the id space of `surface`
                                where the batch has it
    surface       [B, T] long   optional: ids for matching candidates to positions -- the vocab
                                id, or a per-example id for each distinct out-of-vocabulary word
                                (they all embed as <unk>, but an unknown answer that occurs in
                                the document stays reachable by attention sum)
    candidate_mask [B, C] bool  real candidates (attention_sum)
    placeholder   [B] long      optional: the cloze position in the concatenation (-1 none);
                                where given, the query vector is the query's representation
                                there (GA reader on CNN/CBT), else [forward state at the
                                query's last token || backward state at its first] (Eq. 5's h^q)
    class_mask    [B, K] bool   optional: the classes allowed per item (classify)

forward(batch) returns log-probabilities over the candidates (or classes), [B, C]; loss() is
their negative log-likelihood at "answer", predict() their argmax.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from models.mage.mage_gru import EDGE_COMBINES, MAGEGRU, MODES, BiMAGEGRU, split_sizes
from models.sequences import reverse_padded

ENCODERS = ("gru", "mage")
OUTPUTS = ("attention_sum", "classify")
INITS = ("torch", "glorot")
DROPOUT_AT = ("all", "between_layers")
ATTENTION_SUMS = ("document", "candidates")
# log-probability floor for candidates that never occur in the document (attention sum)
_TINY = 1e-12


# --------------------------------------------------------------------------- batching


def collate_graphs(examples: Sequence[Mapping[str, Any]], *, pad_id: int = 0) -> dict[str, Tensor]:
    """Pad numericalized graph items into a batch (see the module docstring for the keys).

    Each example: tokens (ids), forward / backward (one predecessor list per edge type),
    chain (cluster per token, -1 none), doc_span, query_span ((start, end)), answer (int), and
    optionally candidates (ids) and placeholder (int). Chains are renumbered densely in order
    of first occurrence, so the one-hot baseline's M counts the item's own chains (§4.1).
    """
    if not examples:
        raise ValueError("collate_graphs needs at least one example")
    batch = len(examples)
    steps = max(len(ex["tokens"]) for ex in examples)
    n_fwd = {len(ex["forward"]) for ex in examples}
    n_bwd = {len(ex["backward"]) for ex in examples}
    if len(n_fwd) != 1 or len(n_bwd) != 1:
        raise ValueError(f"examples disagree on the number of edge types: {n_fwd} / {n_bwd}")
    tokens = torch.full((batch, steps), pad_id, dtype=torch.long)
    mask = torch.zeros(batch, steps, dtype=torch.bool)
    forward = torch.full((batch, n_fwd.pop(), steps), -1, dtype=torch.long)
    backward = torch.full((batch, n_bwd.pop(), steps), -1, dtype=torch.long)
    chain = torch.full((batch, steps), -1, dtype=torch.long)
    for b, ex in enumerate(examples):
        n = len(ex["tokens"])
        tokens[b, :n] = torch.as_tensor(ex["tokens"], dtype=torch.long)
        mask[b, :n] = True
        for name, out in (("forward", forward), ("backward", backward)):
            for e, preds in enumerate(ex[name]):
                if len(preds) != n:
                    raise ValueError(f"example {b}: {name}[{e}] has {len(preds)} entries, not {n}")
                out[b, e, :n] = torch.as_tensor(preds, dtype=torch.long)
        dense: dict[int, int] = {}
        chain[b, :n] = torch.as_tensor(
            [-1 if c < 0 else dense.setdefault(c, len(dense)) for c in ex["chain"]],
            dtype=torch.long,
        )
    out = {
        "tokens": tokens,
        "mask": mask,
        "forward": forward,
        "backward": backward,
        "chain": chain,
        "doc_span": torch.tensor([list(ex["doc_span"]) for ex in examples], dtype=torch.long),
        "query_span": torch.tensor([list(ex["query_span"]) for ex in examples], dtype=torch.long),
        "answer": torch.tensor([int(ex["answer"]) for ex in examples], dtype=torch.long),
        "placeholder": torch.tensor(
            [int(ex.get("placeholder", -1)) for ex in examples], dtype=torch.long
        ),
    }
    if all("surface" in ex for ex in examples):
        out["surface"] = torch.full((batch, steps), pad_id, dtype=torch.long)
        for b, ex in enumerate(examples):
            out["surface"][b, : len(ex["surface"])] = torch.as_tensor(
                ex["surface"], dtype=torch.long
            )
    if all("candidates" in ex for ex in examples):
        width = max(len(ex["candidates"]) for ex in examples)
        out["candidates"] = torch.full((batch, width), pad_id, dtype=torch.long)
        out["candidate_mask"] = torch.zeros(batch, width, dtype=torch.bool)
        for b, ex in enumerate(examples):
            out["candidates"][b, : len(ex["candidates"])] = torch.as_tensor(
                ex["candidates"], dtype=torch.long
            )
            out["candidate_mask"][b, : len(ex["candidates"])] = True
    return out


def segment_spans(
    segments: Sequence[str], segment_starts: Sequence[int], n_tokens: int
) -> dict[str, tuple[int, int]]:
    """{segment name: (start, end)} of a GRAPHS row (segments, segment_starts, len(tokens)),
    e.g. {"query": (0, 12), "context": (12, 400)}: the reader's doc_span / query_span."""
    bounds = [*segment_starts, n_tokens]
    return {name: (bounds[i], bounds[i + 1]) for i, name in enumerate(segments)}


def take_span(x: Tensor, span: Tensor) -> tuple[Tensor, Tensor]:
    """Rows [start, end) of every item: x [B, T, ...], span [B, 2] -> ([B, L, ...], mask [B, L])
    with L the longest span; positions past an item's end are zero (False in the mask)."""
    start, end = span[:, 0], span[:, 1]
    length = (end - start).clamp(min=0)
    width = int(length.max()) if length.numel() else 0
    offset = torch.arange(width, device=x.device)
    mask = offset.unsqueeze(0) < length.unsqueeze(1)
    index = (start.unsqueeze(1) + offset).clamp(0, x.shape[1] - 1)
    index = index.view(*index.shape, *([1] * (x.dim() - 2))).expand(-1, -1, *x.shape[2:])
    out = torch.gather(x, 1, index)
    keep = mask.view(*mask.shape, *([1] * (x.dim() - 2)))
    return out * keep.to(out.dtype) if out.is_floating_point() else out.masked_fill(~keep, 0), mask


def span_mask(span: Tensor, steps: int) -> Tensor:
    """[B, 2] spans -> [B, T] bool, True inside [start, end)."""
    position = torch.arange(steps, device=span.device)
    return (position >= span[:, :1]) & (position < span[:, 1:])


def in_query_flags(batch: Mapping[str, Tensor]) -> Tensor:
    """[B, T] long: 1 at the document tokens whose word also occurs in the query, else 0
    (bdhingra/coref-gru model/GA.py ``prepare_input``: ``np.in1d(d[i,:,0], q[i,:,0])``); words
    are compared by `surface` id where the batch has it, so two unknown words differ."""
    ids = batch.get("surface", batch["tokens"])
    query_ids, query_mask = take_span(ids, batch["query_span"])
    hit = ((ids.unsqueeze(2) == query_ids.unsqueeze(1)) & query_mask.unsqueeze(1)).any(2)
    in_doc = span_mask(batch["doc_span"], ids.shape[1]) & batch["mask"]
    return (hit & in_doc).long()


def masked_softmax(scores: Tensor, mask: Tensor, dim: int = -1) -> Tensor:
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=dim)


# --------------------------------------------------------------------------- encoders


class MaskedBiGRU(nn.Module):
    """A bidirectional GRU over right-padded sequences. forward(x [B, L, D], mask [B, L]) ->
    [B, L, 2H], zero at padding: [forward state || backward state], the backward direction
    starting at each sequence's last real token.

    Two one-way nn.GRUs over padded batches instead of pack_padded_sequence: on CPU the
    backward pass of a packed nn.GRU grows superlinearly with length (a 32 x 691-token bAbI
    qa3 batch: 74 s, against about 1 s padded), which made the GRU baselines unusable on long
    stories. Same parameters and initial values as nn.GRU(bidirectional=True); checkpoints
    saved in that layout load (see _load_from_state_dict)."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.fwd = nn.GRU(input_size, hidden_size, batch_first=True)
        self.bwd = nn.GRU(input_size, hidden_size, batch_first=True)
        self.hidden_size = hidden_size

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        lengths = mask.sum(1)
        if bool((lengths == 0).any()):
            raise ValueError("a document or query span is empty; a reader needs both")
        ahead, _ = self.fwd(x)  # padding follows the real tokens: their states are exact
        back, _ = self.bwd(reverse_padded(x, lengths))
        out = torch.cat([ahead, reverse_padded(back, lengths)], dim=-1)
        return out * mask.unsqueeze(-1).to(out.dtype)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        """Accept the nn.GRU(bidirectional=True) layout of earlier checkpoints (rnn.*)."""
        for key in [k for k in state_dict if k.startswith(prefix + "rnn.")]:
            name = key[len(prefix + "rnn.") :]
            one_way = (
                "bwd." + name.removesuffix("_reverse")
                if name.endswith("_reverse")
                else "fwd." + name
            )
            state_dict[prefix + one_way] = state_dict.pop(key)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


def query_vector(query: Tensor, query_mask: Tensor, position: Tensor | None = None) -> Tensor:
    """h^q (Eq. 5) from a bi-RNN's query outputs [B, L, 2H]: [forward state at the last real
    token || backward state at the first], or the full output at `position` (query-relative,
    -1 = none) where given, as the GA reader does for the cloze placeholder (Dhingra et al.
    2016)."""
    hidden = query.shape[-1] // 2
    batch = torch.arange(query.shape[0], device=query.device)
    last = (query_mask.sum(1) - 1).clamp(min=0)
    ends = torch.cat([query[batch, last, :hidden], query[:, 0, hidden:]], dim=-1)
    if position is None:
        return ends
    at = query[batch, position.clamp(min=0)]
    return torch.where((position >= 0).unsqueeze(-1), at, ends)


def _glorot_(weight: Tensor, fan_in: int, fan_out: int) -> None:
    nn.init.normal_(weight, 0.0, math.sqrt(6.0 / (fan_in + fan_out)))


@torch.no_grad()
def glorot_init_(model: nn.Module) -> None:
    """The released code's initial values: every weight matrix N(0, sd) with sd = sqrt(6 /
    (fan_in + fan_out)), one matrix per gate, every bias zero (bdhingra/coref-gru lambada,
    model/tflayers.py: glorot() and CorefGRU's _gate_params, ``tf.random_normal(...,
    stddev=glorot(...))`` and ``tf.zeros`` biases; model/GA.py: the embeddings Wemb likewise,
    glorot(vocab_size, embed_dim), where no GloVe vectors are given). The padding embedding
    stays zero; MAGE's edge attention keeps its own N(0, 0.1) (tflayers.py Watt)."""
    for m in model.modules():
        if isinstance(m, nn.Embedding):
            _glorot_(m.weight, *m.weight.shape)
            if m.padding_idx is not None:
                m.weight[m.padding_idx].zero_()
        elif isinstance(m, nn.Linear):
            _glorot_(m.weight, m.in_features, m.out_features)
            if m.bias is not None:
                m.bias.zero_()
        elif isinstance(m, nn.GRU | MAGEGRU):
            for name, p in m.named_parameters():
                if name.startswith("weight_i") or name.startswith("weight_h"):
                    for gate in p.chunk(3):  # [H, fan_in] per gate (r, z, n)
                        _glorot_(gate, gate.shape[1], gate.shape[0])
                elif name.startswith("bias"):
                    p.zero_()


class CharCNN(nn.Module):
    """Character features of each token id (the released code's char CNN; module docstring,
    char_filters): forward(tokens [B, T]) -> [B, T, filters]. The characters of every
    vocabulary word are a fixed table built from `words` (ids 1 ... in order of first
    occurrence over the words, 0 padding; the padding token has none), so the module's
    parameters are the character embeddings and the convolution's filters only."""

    def __init__(
        self,
        words: Sequence[str] | None,
        filters: int,
        dim: int = 10,
        width: int = 5,
        max_word_len: int = 15,
        padding_idx: int = 0,
    ) -> None:
        super().__init__()
        if words is None:
            raise ValueError("char features need the vocabulary's words (words=...)")
        if filters < 1 or dim < 1 or width < 1 or max_word_len < width:
            raise ValueError(
                f"char CNN: filters {filters}, char_dim {dim}, char_width {width} must be >= 1 "
                f"and max_word_len {max_word_len} >= char_width"
            )
        ids: dict[str, int] = {}
        table = torch.zeros(len(words), max_word_len, dtype=torch.long)
        for w, word in enumerate(words):
            if w == padding_idx:
                continue
            chars = [ids.setdefault(c, len(ids) + 1) for c in str(word)[:max_word_len]]
            table[w, : len(chars)] = torch.tensor(chars, dtype=torch.long)
        self.register_buffer("word_chars", table, persistent=False)
        self.embedding = nn.Embedding(len(ids) + 1, dim, padding_idx=0)
        # GA.py conv1d: filter [1, width, dim, filters], no bias, VALID
        self.conv = nn.Conv1d(dim, filters, width, bias=False)
        self.output_size = filters

    def forward(self, tokens: Tensor) -> Tensor:
        chars = self.word_chars[tokens]  # [B, T, W]
        emb = self.embedding(chars.flatten(0, 1)).transpose(1, 2)  # [B*T, dim, W]
        out = torch.relu(self.conv(emb)).amax(-1)  # [B*T, filters]
        return out.view(*tokens.shape, -1)


# --------------------------------------------------------------------------- readers


class _Reader(nn.Module):
    """What both readers share: embeddings (+ one-hot chains), encoders, the answer layer."""

    def __init__(
        self,
        vocab_size: int,
        embed_dim: int,
        hidden_size: int,
        *,
        encoder: str = "gru",
        num_edge_types: int = 2,
        coref_size: int = 16,
        mage_mode: str = "split",
        one_hot_coref: bool = False,
        max_chains: int = 0,
        output: str = "attention_sum",
        num_classes: int | None = None,
        dropout: float = 0.0,
        padding_idx: int = 0,
        edge_combine: str = "concat",
        init: str = "torch",
        dropout_at: str = "all",
        attention_sum: str = "document",
        token_in_query: bool = False,
        separate_query: bool = False,
        char_filters: int = 0,
        char_dim: int = 10,
        char_width: int = 5,
        max_word_len: int = 15,
        words: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        if encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, not {encoder!r}")
        for name, value, allowed in (("edge_combine", edge_combine, EDGE_COMBINES),
                                     ("init", init, INITS), ("dropout_at", dropout_at, DROPOUT_AT),
                                     ("attention_sum", attention_sum, ATTENTION_SUMS)):  # fmt: skip
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {value!r}")
        if mage_mode not in MODES:
            raise ValueError(f"mage_mode must be one of {MODES}, not {mage_mode!r}")
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, not {output!r}")
        if output == "classify" and not num_classes:
            raise ValueError("output='classify' needs num_classes (the size of W_C, Eq. 6)")
        if one_hot_coref and max_chains < 1:
            raise ValueError("one_hot_coref needs max_chains >= 1")
        self.encoder = encoder
        self.hidden_size = hidden_size
        self.num_edge_types = num_edge_types
        self.mage_mode = mage_mode
        self.edge_sizes = (
            split_sizes(hidden_size, coref_size, num_edge_types)
            if encoder == "mage" and mage_mode == "split"
            else None
        )
        self.one_hot_coref = one_hot_coref
        self.max_chains = max_chains if one_hot_coref else 0
        self.output = output
        self.edge_combine = edge_combine
        self.init = init
        self.dropout_at = dropout_at
        self.attention_sum = attention_sum
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        self.chars = (
            CharCNN(words, char_filters, char_dim, char_width, max_word_len, padding_idx)
            if char_filters
            else None
        )
        if self.chars is not None and len(words) != vocab_size:
            raise ValueError(f"char features need one word per token id: {len(words)} words, "
                             f"vocab_size {vocab_size}")  # fmt: skip
        self.input_size = embed_dim + char_filters + self.max_chains
        self.separate_query = separate_query
        if separate_query and (encoder != "mage" or mage_mode != "split"):
            raise ValueError(
                "separate_query (the released code's document and query CorefGRUs) needs "
                f"encoder 'mage' with mage_mode 'split', not {encoder!r} / {mage_mode!r}"
            )
        self.dropout = nn.Dropout(dropout)
        # W_C of Eq. 6: one output embedding per class
        self.classes = nn.Linear(2 * hidden_size, num_classes, bias=False) if num_classes else None
        # the token-in-query flag's 2-d embedding (GA.py Femb), appended at the last layer
        self.in_query = nn.Embedding(2, 2) if token_in_query else None
        self.feature_size = 2 if token_in_query else 0

    def _bi_mage(self, input_size: int) -> BiMAGEGRU:
        return BiMAGEGRU(
            input_size,
            self.hidden_size,
            self.num_edge_types,
            edge_sizes=self.edge_sizes,
            mode=self.mage_mode,
            edge_combine=self.edge_combine,
        )

    def _initialize(self) -> None:
        """After the subclass built its encoders: the released code's values where init is
        "glorot" (glorot_init_), else the modules' own."""
        if self.init == "glorot":
            glorot_init_(self)

    def _drop(self, x: Tensor) -> Tensor:
        """Dropout outside the gated layer inputs (dropout_at "all" only)."""
        return self.dropout(x) if self.dropout_at == "all" else x

    def embed(self, batch: Mapping[str, Tensor]) -> Tensor:
        """x_t, with the one-hot chain o_t appended for the "+ one-hot" baseline (§4.1)."""
        x = self.embedding(batch["tokens"])
        if self.chars is not None:
            x = torch.cat([x, self.chars(batch["tokens"]).to(x.dtype)], dim=-1)
        if self.one_hot_coref:
            chain = batch["chain"]
            if bool((chain >= self.max_chains).any()):
                raise ValueError(
                    f"chain id {int(chain.max())} >= max_chains {self.max_chains}: raise "
                    "max_chains (the one-hot width M, §4.1)"
                )
            onehot = F.one_hot((chain + 1).clamp(min=0), self.max_chains + 1)[..., 1:]
            x = torch.cat([x, onehot.to(x.dtype)], dim=-1)
        return self._drop(x)

    def with_in_query(self, x: Tensor, batch: Mapping[str, Tensor], span: Tensor | None) -> Tensor:
        """x [B, L, D] (the whole sequence, or the rows of `span`) with the token-in-query
        feature appended where token_in_query is on (module docstring), else x."""
        if self.in_query is None:
            return x
        flags = in_query_flags(batch)
        if span is not None:
            flags, _ = take_span(flags, span)
        return torch.cat([x, self.in_query(flags).to(x.dtype)], dim=-1)

    def answer(
        self,
        doc: Tensor,
        doc_mask: Tensor,
        doc_tokens: Tensor,
        query: Tensor,
        batch: Mapping[str, Tensor],
    ) -> Tensor:
        """Eq. 5 attention, then attention sum (Kadlec et al. 2016) or Eq. 6; log-probs."""
        # Eq. 5: alpha = softmax(h_q^T H^d) over the document's tokens
        scores = torch.einsum("bld,bd->bl", doc, query)
        if self.output == "attention_sum":
            candidates = batch["candidates"]
            occurs = (doc_tokens.unsqueeze(1) == candidates.unsqueeze(2)) & doc_mask.unsqueeze(1)
            support = doc_mask
            if self.attention_sum == "candidates":
                # the softmax renormalised over candidate positions (module docstring); an
                # item with no candidate in its document keeps the document's
                at_candidate = (occurs & batch["candidate_mask"].unsqueeze(2)).any(1)
                support = torch.where(at_candidate.any(1, keepdim=True), at_candidate, doc_mask)
            alpha = masked_softmax(scores, support)
            # P(w) = sum over the positions i where w occurs in d of alpha_i
            prob = torch.einsum("bcl,bl->bc", occurs.to(alpha.dtype), alpha)
            log_prob = prob.clamp(min=_TINY).log()
            return log_prob.masked_fill(~batch["candidate_mask"], float("-inf"))
        # Eq. 6: h^d = alpha^T H^d, p_C = softmax(h^d W_C)
        alpha = masked_softmax(scores, doc_mask)
        logits = self.classes(torch.einsum("bl,bld->bd", alpha, doc))
        if "class_mask" in batch:
            logits = logits.masked_fill(~batch["class_mask"], float("-inf"))
        return torch.log_softmax(logits, dim=-1)

    @staticmethod
    def loss(log_probs: Tensor, batch: Mapping[str, Tensor]) -> Tensor:
        """Mean negative log-likelihood of the gold answer."""
        return F.nll_loss(log_probs, batch["answer"])

    @staticmethod
    def predict(log_probs: Tensor) -> Tensor:
        return log_probs.argmax(-1)

    @staticmethod
    def _placeholder(batch: Mapping[str, Tensor]) -> Tensor | None:
        """The cloze position relative to the query span (-1 none), or None if not given."""
        if "placeholder" not in batch:
            return None
        position = batch["placeholder"]
        start, end = batch["query_span"][:, 0], batch["query_span"][:, 1]
        if bool(((position >= 0) & ((position < start) | (position >= end))).any()):
            raise ValueError("a placeholder position lies outside its query span")
        return torch.where(position >= 0, position - start, position)


class BiGRUReader(_Reader):
    """bi-GRU (or MAGE-GRU) reader with Eq. 5 attention and attention-sum / Eq. 6 output.

    Tables 1, 3, 5 rows "bi-GRU", "+ one-hot" (one_hot_coref=True), "+ MAGE (d)"
    (encoder="mage", coref_size=d). hidden_size is per direction (the total of Eq. 3's split).
    """

    def __init__(
        self, vocab_size: int, embed_dim: int = 128, hidden_size: int = 256, **options: Any
    ) -> None:
        """options: the keyword settings of _Reader (encoder, coref_size, output, ...)."""
        super().__init__(vocab_size, embed_dim, hidden_size, **options)
        encoder = self.encoder
        if encoder == "gru":
            self.doc_rnn = MaskedBiGRU(self.input_size + self.feature_size, hidden_size)
            self.query_rnn = MaskedBiGRU(self.input_size, hidden_size)
        else:
            self.rnn = self._bi_mage(self.input_size + self.feature_size)
            if self.separate_query:  # the query's own CorefGRUs, without the flag (GA.py inqry)
                self.query_mage = self._bi_mage(self.input_size)
        self._initialize()

    def forward(self, batch: Mapping[str, Tensor]) -> Tensor:
        x = self.embed(batch)
        if self.separate_query:
            doc, doc_mask, query, query_mask = self._document_then_query(x, batch)
        elif self.encoder == "gru":
            x_doc, doc_mask = take_span(x, batch["doc_span"])
            x_query, query_mask = take_span(x, batch["query_span"])
            doc = self.doc_rnn(self.with_in_query(x_doc, batch, batch["doc_span"]), doc_mask)
            query = self.query_rnn(x_query, query_mask)
        else:
            # §3.3: one MAGE-GRU over the concatenated sequences, split back by the spans
            x = self.with_in_query(x, batch, None)
            h = self.rnn(x, batch["forward"], batch["backward"], batch["mask"])
            doc, doc_mask = take_span(h, batch["doc_span"])
            query, query_mask = take_span(h, batch["query_span"])
            if bool((doc_mask.sum(1) == 0).any() | (query_mask.sum(1) == 0).any()):
                raise ValueError("a document or query span is empty; a reader needs both")
        doc = self._drop(doc)
        doc_tokens, _ = take_span(batch.get("surface", batch["tokens"]), batch["doc_span"])
        q = query_vector(query, query_mask, self._placeholder(batch))
        return self.answer(doc, doc_mask, doc_tokens, q, batch)

    def _document_then_query(
        self, x: Tensor, batch: Mapping[str, Tensor]
    ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """separate_query (module docstring): forward, the document's MAGE-GRU then the
        query's reading the document's outputs as memory; backward, the query's then the
        document's reading the query's. Returns (doc [B, Ld, 2H], doc mask, query [B, Lq, 2H],
        query mask)."""
        doc_span, query_span = batch["doc_span"], batch["query_span"]
        if bool((doc_span[:, 1] > query_span[:, 0]).any()):
            raise ValueError(
                "separate_query reads the query after the document, as the released code does: "
                "train on graphs in that order (graphs.order: document_query, an entry of "
                "graphs.ablations), not on items whose query comes first or lies inside it"
            )
        x_doc, doc_mask = take_span(self.with_in_query(x, batch, None), doc_span)
        x_query, query_mask = take_span(x, query_span)
        if bool((doc_mask.sum(1) == 0).any() | (query_mask.sum(1) == 0).any()):
            raise ValueError("a document or query span is empty; a reader needs both")
        ld, lq = x_doc.shape[1], x_query.shape[1]
        doc_layers, query_layers = self.rnn, self.query_mage
        fwd, bwd = batch["forward"], batch["backward"]
        # forward: memory rows 1 ... Ld the document's steps, then the query's
        d_rows = _memory_rows(_span_preds(fwd, doc_span), [(doc_span, 1, ld, False)])
        h_doc = doc_layers.forward_rnn.run_rows(x_doc, d_rows, doc_mask)
        q_rows = _memory_rows(
            _span_preds(fwd, query_span),
            [(doc_span, 1, ld, False), (query_span, 1 + ld, lq, False)],
        )
        prefix = h_doc.transpose(0, 1)
        h_query = query_layers.forward_rnn.run_rows(x_query, q_rows, query_mask, prefix)
        # backward, in processing order (each span flipped): the query's steps, then the document's
        q_rows = _memory_rows(_span_preds(bwd, query_span), [(query_span, 1, lq, True)]).flip(2)
        b_query = query_layers.backward_rnn.run_rows(x_query.flip(1), q_rows, query_mask.flip(1))
        d_rows = _memory_rows(
            _span_preds(bwd, doc_span), [(query_span, 1, lq, True), (doc_span, 1 + lq, ld, True)]
        ).flip(2)
        b_doc = doc_layers.backward_rnn.run_rows(
            x_doc.flip(1), d_rows, doc_mask.flip(1), b_query.transpose(0, 1)
        )
        doc = torch.cat([h_doc, b_doc.flip(1)], dim=-1)
        query = torch.cat([h_query, b_query.flip(1)], dim=-1)
        return doc, doc_mask, query, query_mask


def _span_preds(preds: Tensor, span: Tensor) -> Tensor:
    """The predecessors [B, E, L] (positions in the concatenation, -1 none) of the tokens of
    `span` ([B, 2]), from those of the whole sequence, preds [B, E, T]; -1 past a span's end."""
    inside, _ = take_span((preds + 1).transpose(1, 2), span)  # zero past the end
    return inside.transpose(1, 2) - 1


def _memory_rows(preds: Tensor, segments: Sequence[tuple[Tensor, int, int, bool]]) -> Tensor:
    """Memory rows [B, E, L] of predecessor positions preds [B, E, L]: for each segment
    (span [B, 2], its first row, its padded width, flipped) the memory holds, a position inside
    the span is row first + its offset (from the padded end where flipped); 0 elsewhere (none)."""
    rows = torch.zeros_like(preds)
    for span, first, width, flipped in segments:
        start, end = span[:, 0].view(-1, 1, 1), span[:, 1].view(-1, 1, 1)
        offset = preds - start
        index = width - 1 - offset if flipped else offset
        rows = torch.where((preds >= start) & (preds < end), first + index, rows)
    return rows


class GAReader(_Reader):
    """Gated-Attention reader (Dhingra et al. 2016) with bi-GRU or MAGE-GRU layers.

    Layer k < K: D^(k) = BiRNN(X^(k-1)), Q^(k) = BiRNN_q^(k)(Y) (the query embeddings Y);
    gated attention: alpha_i = softmax(Q^(k)T d_i), q~_i = Q^(k) alpha_i, x_i = d_i * q~_i.
    Layer K: attention sum with the query vector of Q^(K). Tables 1, 3, 5 rows "GA",
    "+ one-hot", "+ MAGE (d)", "+ MAGE (shared)", "+ DAG-RNN". The GA paper's token-in-query
    feature (qe-comm) is the option token_in_query; its character embeddings are not part of
    this reproduction.
    """

    def __init__(
        self,
        vocab_size: int,
        embed_dim: int = 128,
        hidden_size: int = 256,
        *,
        num_layers: int = 3,
        **options: Any,
    ) -> None:
        """options: the keyword settings of _Reader (encoder, coref_size, output, ...)."""
        super().__init__(vocab_size, embed_dim, hidden_size, **options)
        encoder = self.encoder
        if num_layers < 1:
            raise ValueError("num_layers must be >= 1")
        if self.separate_query:
            raise ValueError("separate_query is an option of the bi-GRU reader (reader 'bigru')")
        self.num_layers = num_layers
        sizes = [self.input_size] + [2 * hidden_size] * (num_layers - 1)
        sizes[-1] += self.feature_size  # the token-in-query flag enters the last layer
        if encoder == "gru":
            self.doc_rnns = nn.ModuleList(MaskedBiGRU(s, hidden_size) for s in sizes)
            self.query_rnns = nn.ModuleList(
                MaskedBiGRU(self.input_size, hidden_size) for _ in sizes
            )
        else:
            self.rnns = nn.ModuleList(self._bi_mage(s) for s in sizes)
        self._initialize()

    @staticmethod
    def gate(doc: Tensor, query: Tensor, query_mask: Tensor) -> Tensor:
        """GA(D, Q): x_i = d_i * (Q softmax(Q^T d_i)), for doc [B, L, 2H], query [B, Lq, 2H]."""
        alpha = masked_softmax(torch.einsum("bld,bqd->blq", doc, query), query_mask.unsqueeze(1))
        return doc * torch.einsum("blq,bqd->bld", alpha, query)

    def forward(self, batch: Mapping[str, Tensor]) -> Tensor:
        y = self.embed(batch)
        last = self.num_layers - 1
        if self.encoder == "gru":
            x, doc_mask = take_span(y, batch["doc_span"])
            y_query, query_mask = take_span(y, batch["query_span"])
            for k in range(self.num_layers):
                if k == last:
                    x = self.with_in_query(x, batch, batch["doc_span"])
                doc = self.doc_rnns[k](x, doc_mask)
                query = self.query_rnns[k](y_query, query_mask)
                if k < last:
                    x = self.dropout(self.gate(doc, query, query_mask))
        else:
            in_doc = span_mask(batch["doc_span"], y.shape[1]).unsqueeze(-1)
            x = y
            for k in range(self.num_layers):
                if k == last:
                    x = self.with_in_query(x, batch, None)
                h = self.rnns[k](x, batch["forward"], batch["backward"], batch["mask"])
                query, query_mask = take_span(h, batch["query_span"])
                if k < last:
                    # gate the document positions; query positions pass on ungated
                    x = self.dropout(torch.where(in_doc, self.gate(h, query, query_mask), h))
            doc, doc_mask = take_span(h, batch["doc_span"])
            if bool((doc_mask.sum(1) == 0).any() | (query_mask.sum(1) == 0).any()):
                raise ValueError("a document or query span is empty; a reader needs both")
        doc_tokens, _ = take_span(batch.get("surface", batch["tokens"]), batch["doc_span"])
        q = query_vector(query, query_mask, self._placeholder(batch))
        return self.answer(doc, doc_mask, doc_tokens, q, batch)
