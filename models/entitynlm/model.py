"""EntityNLM (Ji et al. 2017, papers/000 §2), its proposal Q(R, E, L | X) (§5.1 "Proposal
distribution") and the same-size LSTM RNNLM baseline (§5.1 "Baselines"), batched across documents.

Generative story per word t (§2.2): when the previous word ended a mention or was outside one,
choose R_t (Eq. 3); for R_t = 1 choose the entity E_t among the existing ones and a new one
(Eq. 4, with a distance feature) and the mention length L_t (Eq. 5); a mention continues with
L_t = L_{t-1} - 1. The word X_t is drawn given h_{t-1} and e_current (Eq. 6); then the LSTM
reads x_t (Eq. 2) and a mention word updates its entity's embedding with the gate of Eq. 8.
New entities are drawn from the learned prior N(r_1, sigma^2 I), projected on the unit sphere
(Eq. 7).

Batching. The LSTM does not read the entities (Eq. 2), so the states of all words of all
documents come from one cuDNN/MKL call. Only the entity memory is sequential, and an entity's
embedding changes only at its own mention words (Eq. 8): the scan runs along the B x K entity
chains at once (as many steps as the longest chain, packed longest first), the states any word
needs (e_current, e_{E_t,t-1}, the memory at each mention start for Eq. 4) are gathered from
its output afterwards, and Eq. 4 is evaluated at all mention starts together. R, L and the
(full) word softmax are computed for all words at once after the scan.

Conventions (as the view, tasks/graphs/views.py): entity ids 0-based in order of first mention
(the new entity at a mention start is index n = number of entities so far), -1 outside
mentions; L ("remaining") counts the words left in the mention including this one, 0 outside.
A document may end inside a mention (remaining > 1 on its last word): the model is then the
distribution of the first T words, which is what importance sampling (sampling.py) needs.

LSTM scope (`lstm_scope`, default "sentence": the authors' code, jiyfeng/entitynlm entitynlm.h
`EntityNLM::BuildGraph`). Every LSTM (EntityNLM, its proposal, the RNNLM) restarts from the
zero state at each sentence, reading bos (their <s>) first (`run_lstm`); earlier sentences
reach EntityNLM only through the entity memory and the context vector that a non-mention
word's Eq. 6 adds (`word_channel`: their Tc * cont), and the RNNLM not at all (the "RNNLMs
[that] only capture information within sentences", §6). Sentence boundaries are given (the
documents' segmentation): unlike the authors' code, no </s> is predicted or counted, so the
scored words are the same in both scopes and for the 5-gram. "document" runs each LSTM over
the whole document and adds W_e e_current at every word (the earlier behaviour).

Choices the paper leaves open (documented here, settings in EntityNLMConfig):
- f(e) in Eq. 4: one-hot bucket of the word distance from the current word to the last
  mention word of e (buckets 1, 2, 3, 4, 5-7, 8-15, ..., 128+); f(new) = 0.
- Eq. 7's noise (sigma = 0.01) is drawn in training only; evaluation uses the mean r_1/|r_1|,
  so log-probabilities are deterministic (the enumeration test and the reranker rely on it).
- e_current before the first mention of a document is the zero vector (document scope; the
  sentence scope's context vector starts as a learned vector, the authors' p_cont).
- The bilinear forms h^T W v are parameterised as (W h)^T v (nn.Linear without bias).
- Word softmax: full softmax (the paper's class-factorised softmax only speeds it up).
- Proposal: the paper's variant replaces h_{t-1} by h_t (the current word is read first) and
  drops the word term; `bidirectional=True` (default) also reads the words to the right
  (a bidirectional LSTM), which helps to propose mention lengths. Any Q with full support gives
  an unbiased Eq. 11 estimate; `bidirectional=False` is the paper's left-to-right variant.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from models.entitynlm.data import Batch
from models.sequences import run_recurrent

NEG = -1e9  # masked logits (finite: keeps 0 * masked out of NaN)
LSTM_SCOPES = ("sentence", "document")
# The authors' code (jiyfeng/entitynlm) against the paper's text where they differ (issue #56.4;
# docs/families/entitynlm.md "The authors' code against ours"), each a setting so that it can
# be ablated; the first value of each is the project's reading of the paper.
# f(e) of Eq. 4: word-distance buckets with a learned weight each; or the authors' one learned
# scalar lambda on the sentence distance, exp(lambda * (s_last(e) - s_t)), also for "new"
# (its s_last: 0) (entitynlm.h:116, :265, :503-510)
DISTANCE_FEATURES = ("word_buckets", "sentence_exp")
# a new entity's embedding (Eq. 7): r_1 of Eq. 3; or the authors' separate learned p_E
# (entitynlm.h:120, :474-478)
NEW_ENTITIES = ("r1", "learned")
# what Eq. 8 moves an entity towards: h_t; or the authors' projection W_T h_t (entitynlm.h:491)
ENTITY_INPUTS = ("state", "projected")


@dataclass
class EntityNLMConfig:
    vocab_size: int
    embed_dim: int = 32
    hidden_size: int = 32
    l_max: int = 25  # Ji et al. 2017 §2.1
    dropout: float = 0.0
    distance_buckets: int = 10
    prior_sigma: float = 0.01  # Eq. 7
    proposal: bool = False  # Q(R, E, L | X) instead of P(X, R, E, L)
    bidirectional: bool = True  # proposal only: also read the words to the right
    lstm_scope: str = "sentence"  # LSTM_SCOPES: restart the LSTM per sentence, or not
    distance_feature: str = "word_buckets"  # DISTANCE_FEATURES
    new_entity: str = "r1"  # NEW_ENTITIES
    entity_input: str = "state"  # ENTITY_INPUTS

    def __post_init__(self) -> None:
        for name, allowed in (("lstm_scope", LSTM_SCOPES),
                              ("distance_feature", DISTANCE_FEATURES),
                              ("new_entity", NEW_ENTITIES), ("entity_input", ENTITY_INPUTS)):  # fmt: skip
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {getattr(self, name)!r}")

    @property
    def sentence(self) -> bool:
        return self.lstm_scope == "sentence"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def decision_points(batch: Batch) -> torch.Tensor:
    """Where R_t is chosen (§2.2 step 1): the first word, or the previous word ended a mention
    (L_{t-1} = 1) or was outside one."""
    prev = F.pad(batch.remaining[:, :-1], (1, 0), value=0)
    return batch.mask & (prev <= 1)


def distance_bucket(distance: torch.Tensor, buckets: int) -> torch.Tensor:
    """1, 2, 3, 4 -> 0..3; then one bucket per power of two (5-7, 8-15, ...), capped."""
    d = distance.clamp(min=1)
    log_bucket = torch.floor(torch.log2(d.float())).long() + 2
    return torch.where(d <= 4, d - 1, log_bucket).clamp(max=buckets - 1)


def distance_axis(sent_start: torch.Tensor | None, mask: torch.Tensor, sentence: bool):
    """Each word's place on the axis Eq. 4's distance is measured along (B x T, long): its
    position (word distance), or (sentence: the authors' `get_dist_feat`) the index of its
    sentence in the document."""
    ar = torch.arange(mask.size(1), device=mask.device)
    if not sentence:
        return ar.expand_as(mask)
    if sent_start is None:
        return torch.zeros_like(mask, dtype=torch.long)
    return ((sent_start | (ar[None] == 0)) & mask).long().cumsum(1).sub(1).clamp(min=0)


def distinct_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(first, index) over the rows of the 2-D x: x[first] are its distinct rows, each at its
    first occurrence, and x[first][index] == x. Rows are grouped by a float64 projection (a
    sort of scalars, not of rows) and the grouping is verified exactly: on any mismatch every
    row stands alone."""
    gen = torch.Generator().manual_seed(0)
    direction = torch.randn(x.size(-1), generator=gen, dtype=torch.float64).to(x.device)
    _, index = torch.unique((x.double() * direction).sum(-1), return_inverse=True)
    order = torch.arange(x.size(0), device=x.device)
    first = torch.full((int(index.max()) + 1 if x.size(0) else 0,), x.size(0), device=x.device)
    first = first.scatter_reduce(0, index, order, "amin")
    if not torch.equal(x[first][index], x):
        return order, order
    return first, index


def sentences(sent_start: torch.Tensor | None, mask: torch.Tensor):
    """The sentences of a batch: (seg B x T, the row of each word's sentence among the S
    sentences of the batch, 0 on padding; pos B x T, the word's place in its sentence;
    first B x T, the position of its sentence's first word; lengths S). sent_start None:
    each document is one sentence."""
    b, t_len = mask.shape
    ar = torch.arange(t_len, device=mask.device)
    starts = ar[None] == 0 if sent_start is None else sent_start | (ar[None] == 0)
    starts = starts & mask
    count = starts.sum(1)
    offset = count.cumsum(0) - count
    seg = starts.long().cumsum(1) - 1 + offset[:, None]
    first = torch.where(starts, ar, 0).cummax(1).values if t_len else starts.long()
    seg = torch.where(mask, seg, 0)
    pos = torch.where(mask, ar - first, 0)
    lengths = torch.bincount(seg[mask], minlength=int(count.sum()))
    return seg, pos, first, lengths


def run_lstm(lstm: nn.LSTM, emb, mask, sent_start, bos, sentence: bool, post=None):
    """The LSTM over each document (sentence False) or restarted at every sentence, each
    sentence its own sequence from the zero state (sentence True: the authors' code,
    jiyfeng/entitynlm entitynlm.h `EntityNLM::BuildGraph` calls `builder.start_new_sequence()`
    per sentence and util.cc `read_sentence` puts <s> first). bos (E) is read first when given.
    Returns (before, after), B x T x H: the state before word t is read (with bos: after bos
    and the words before t; without: the same as after) and after it; post (e.g. dropout)
    applies once to the outputs, so both views share it."""
    post = post or (lambda x: x)
    b, t_len, dim = emb.shape
    k = 0 if bos is None else 1
    if not sentence:
        seq = emb if bos is None else torch.cat([bos.to(emb.dtype).expand(b, 1, -1), emb], 1)
        lengths = (mask.sum(1) + k).clamp(min=1).cpu()
        out = post(_packed(lstm, seq, lengths))
        return (out[:, :-1], out[:, 1:]) if k else (out, out)
    seg, pos, _, lengths = sentences(sent_start, mask)
    if lengths.numel() == 0:  # no words at all
        zero = emb.new_zeros(b, t_len, lstm.hidden_size * (2 if lstm.bidirectional else 1))
        return zero, zero
    width = int(lengths.max()) + k
    seq = emb.new_zeros(lengths.numel(), width, dim)
    if k:
        seq[:, 0] = bos.to(emb.dtype)
    seq = seq.index_put((seg[mask], pos[mask] + k), emb[mask])
    # a left-to-right LSTM's outputs at a sentence's words do not depend on the padding after
    # them: unpacked is exact there, and on CPU several times faster than packed short rows
    if lstm.bidirectional:
        out = _packed(lstm, seq, (lengths + k).cpu())
    else:
        out = run_recurrent(lstm, seq)[0]
    out = post(out)
    return out[seg, pos], out[seg, pos + k]


def _packed(lstm, seq, lengths):
    packed = nn.utils.rnn.pack_padded_sequence(seq, lengths, batch_first=True,
                                               enforce_sorted=False)  # fmt: skip
    out, _ = run_recurrent(lstm, packed)
    return nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=seq.size(1))[0]


class EntityNLM(nn.Module):
    """P(X, R, E, L) (generative) or Q(R, E, L | X) (config.proposal).

    Public API (all take a data.Batch of B padded documents, eval mode for deterministic scores):
    - `token_log_probs(batch) -> dict` of B x T tensors "r", "e", "l", "x" (0 where a variable
      is not chosen at t; no "x" for the proposal);
    - `log_joint(batch) -> B`: log P(X, R, E, L) per document (Eq. 9), the reranker's score
      (Eq. 12); for the proposal log Q(R, E, L | X);
    - `log_words(batch) -> B`: sum_t log P(X_t | h_{t-1}, e_current), words only, R/E/L given;
    - `entity_predictions(batch)`: at every mention start, log P(E_t = e | R_t = 1, left
      context) over the existing entities and "new" (entity prediction, Table 3);
    - `walk_inputs(tokens, mask)`: the per-document inputs of the importance draws (draws.py:
      N draws of (R, E, L) from the proposal, scored under the LM in the same walk).
    """

    def __init__(self, config: EntityNLMConfig):
        super().__init__()
        self.config = c = config
        h = c.hidden_size
        self.embed = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=0)
        bidir = c.proposal and c.bidirectional
        self.lstm = nn.LSTM(c.embed_dim, h, batch_first=True, bidirectional=bidir)
        self.merge = nn.Linear(2 * h, h) if bidir else None
        self.bos = nn.Parameter(torch.zeros(c.embed_dim))  # input before the first word
        self.drop = nn.Dropout(c.dropout)
        self.r_embed = nn.Parameter(torch.randn(2, h) * 0.1)  # r_0, r_1 (Eq. 3); r_1: Eq. 7
        self.w_r = nn.Linear(h, h, bias=False)  # Eq. 3
        self.w_entity = nn.Linear(h, h, bias=False)  # Eq. 4
        self.w_dist = nn.Embedding(c.distance_buckets, 1)  # Eq. 4: w_dist^T f(e)
        nn.init.zeros_(self.w_dist.weight)
        self.w_length = nn.Linear(2 * h, c.l_max)  # Eq. 5
        self.w_delta = nn.Linear(h, h, bias=False)  # Eq. 8
        if not c.proposal:
            self.w_e = nn.Linear(h, h, bias=False)  # Eq. 6
            self.out = nn.Linear(h, c.vocab_size)  # Eq. 6 (full softmax)
            if c.sentence:  # the context channel of non-mention words (`word_channel`)
                self.w_c = nn.Linear(h, h, bias=False)  # the authors' Tc
                self.cont = nn.Parameter(torch.randn(h) * 0.1)  # their p_cont
        # the authors' variants (DISTANCE_FEATURES, NEW_ENTITIES, ENTITY_INPUTS); created only
        # when chosen, after the others, so the default's initial weights do not move
        if c.distance_feature == "sentence_exp":
            self.lambda_dist = nn.Parameter(torch.full((), 1e-6))  # their init, entitynlm.h:116
        if c.new_entity == "learned":
            self.new_embed = nn.Parameter(torch.randn(h) * 0.1)  # their p_E
        if c.entity_input == "projected":
            self.w_t = nn.Linear(h, h, bias=False)  # their W_T

    # ------------------------------------------------------------------ states

    def contexts(self, tokens: torch.Tensor, mask: torch.Tensor, sent_start=None):
        """(pred, upd), B x T x H: the state that predicts the variables of word t (h_{t-1};
        the proposal's h_t) and the one that updates its entity (h_t, Eq. 8). The LSTM runs
        over each document, or (lstm_scope sentence) restarts at every sentence (`run_lstm`)."""
        emb = self.drop(self.embed(tokens))
        sentence = self.config.sentence
        if self.config.proposal:
            out, _ = run_lstm(self.lstm, emb, mask, sent_start, None, sentence)
            if self.merge is not None:
                out = torch.tanh(self.merge(out))
            out = self.drop(out)
            return out, out
        return run_lstm(self.lstm, emb, mask, sent_start, self.bos, sentence, self.drop)

    # ------------------------------------------------------------------ entity memory

    def prior(self, rows: int, slots: int, device, dtype) -> torch.Tensor:
        """Initial embeddings of `slots` entities per row (Eq. 7): r_1 (or, new_entity learned,
        the authors' p_E) + sigma * noise in training, the mean in evaluation, projected on the
        unit sphere."""
        base = self.new_embed if self.config.new_entity == "learned" else self.r_embed[1]
        mean = base.to(dtype).expand(rows, slots, -1)
        if self.training and self.config.prior_sigma > 0:
            mean = mean + self.config.prior_sigma * torch.randn_like(mean)
        return F.normalize(mean, dim=-1)

    def entity_log_probs(self, mem, qh, last, n, t) -> torch.Tensor:
        """log P(E_t = k | R_t = 1) over the K slots (Eq. 4): slots < n exist, slot n is the
        new entity, later slots are masked. qh = W_entity h (B x H); last, each entity's last
        mention word (B x K), and t, the current word (B), as places on the `distance_axis`."""
        k = torch.arange(mem.size(1), device=mem.device)
        scores = torch.bmm(mem, qh.to(mem.dtype)[:, :, None]).squeeze(-1).float()
        existing = k[None] < n[:, None]
        scores = scores + self.distance_scores(t[:, None], last, existing)
        return torch.log_softmax(scores.masked_fill(k[None] > n[:, None], NEG), -1)

    def distance_scores(self, here, last, existing) -> torch.Tensor:
        """Eq. 4's distance term of each slot, float: w_dist^T f(e) of the word distance
        here - last for an existing entity, 0 for "new" (word_buckets); or (sentence_exp, the
        authors' entitynlm.h:265) exp(lambda * (last - here)) on sentence indices, with last
        = 0 for "new". here, last: places on the `distance_axis` (broadcastable)."""
        if self.config.distance_feature == "sentence_exp":
            feat = torch.where(existing, last - here, -here).float()
            return torch.exp(feat * self.lambda_dist.float())
        dist = self.w_dist(distance_bucket(here - last, self.config.distance_buckets))
        return torch.where(existing, dist.squeeze(-1).float(), 0.0)

    def entity_input(self, upd) -> torch.Tensor:
        """What Eq. 8 moves an entity towards: h_t, or the authors' W_T h_t (ENTITY_INPUTS)."""
        return self.w_t(upd) if self.config.entity_input == "projected" else upd

    def gate_update(self, e_old, hu, ph) -> torch.Tensor:
        """Eq. 8: delta = sigmoid(h_t^T W_delta e), e <- normalize(delta e + (1 - delta) h_t);
        ph = W_delta h_t."""
        delta = torch.sigmoid((ph * e_old).sum(-1, keepdim=True))
        return F.normalize(torch.lerp(hu.to(e_old.dtype), e_old, delta), dim=-1)  # fewer ops

    def _chains(self, batch: Batch):
        """Index the mention words by entity chain: (rank, B x T: how many mention words of the
        word's entity precede it; before, B x T x K: mention words of entity k before t;
        where, B x K x S: position of the s-th mention word of entity k; count, B x K)."""
        b, t_len = batch.tokens.shape
        is_m = batch.is_mention & batch.mask
        slots = int(batch.entity.max()) + 2 if b else 1  # entities + the "new" slot
        ent = batch.entity.clamp(min=0)
        onehot = (F.one_hot(ent, slots).bool() & is_m[..., None]).long()
        upto = onehot.cumsum(1)
        before = upto - onehot
        rank = before.gather(2, ent[..., None]).squeeze(-1)
        count = upto[:, -1] if t_len else onehot.new_zeros(b, slots)
        steps = int(count.max()) if b and t_len else 0
        where = torch.zeros(b, slots, steps, dtype=torch.long, device=ent.device)
        bi, ti = torch.nonzero(is_m, as_tuple=True)
        where[bi, ent[bi, ti], rank[bi, ti]] = ti
        return rank, before, where, count

    def _mention_scan(self, pred, upd, batch: Batch):
        """The entity memory (Eq. 7-8) and the entity choices (Eq. 4) of B documents.

        An entity's embedding changes only at its own mention words, so the memory is scanned
        along the B x K entity chains at once (steps = most mention words of one entity, not
        of one document); the states every word needs are gathered afterwards, and Eq. 4 is
        evaluated at all mention starts together. Returns (logp_e B x T at mention starts,
        e_sel B x T x H = e_{E_t, t-1} at mention words, e_cur B x T x H = e_current for each
        word, extra: the entity distributions at the mention starts, B x M x K, their
        positions and validity, and n, the entities before each start)."""
        b, t_len, h = pred.shape
        dev = pred.device
        is_m = batch.is_mention & batch.mask
        rank, before, where, count = self._chains(batch)
        slots, steps = where.size(1), where.size(2)
        rows = where + torch.arange(b, device=dev)[:, None, None] * t_len  # rows of B*T
        prior = self.prior(b, slots, dev, pred.dtype).reshape(b * slots, h)
        table, at = self._chain_states(prior, self.entity_input(upd).reshape(-1, h),
                                       self.w_delta(upd).reshape(-1, h),
                                       rows.reshape(b * slots, steps), count.reshape(-1))  # fmt: skip
        chain = torch.arange(b, device=dev)[:, None] * slots + batch.entity.clamp(min=0)
        ar = torch.arange(t_len, device=dev)
        # e_current: a mention word's entity before it; elsewhere the last mention word's
        # entity after it (zero before the first mention)
        src = torch.where(is_m, ar, -1).cummax(1).values if t_len else chain
        src_c = src.clamp(min=0)
        idx = at(chain.gather(1, src_c), rank.gather(1, src_c) + (~is_m).long())
        e_cur = table[torch.where(src >= 0, idx, 0)]
        e_sel = torch.where(is_m[..., None], e_cur, 0.0)
        logp_e, extra = self._entity_choices(pred, batch, table, at, before, where)
        return logp_e, e_sel, e_cur, extra

    def _chain_states(self, prior, hu, ph, rows, count):
        """Eq. 8 along C entity chains at once, the longest first so that the chains still
        running at step s are a prefix (as packed sequences); rows (C x S): the row of hu/ph
        (h_t, W_delta h_t) of each chain's s-th mention word. Returns (table: N x H, row 0
        zero; at(c, s): the row of chain c's embedding after its first s mention words)."""
        c_all, steps = rows.shape
        h = prior.size(-1)
        order = torch.argsort(count, descending=True, stable=True)
        rank = torch.empty_like(order)
        rank[order] = torch.arange(c_all, device=order.device)
        alive = (count[:, None] > torch.arange(steps, device=count.device)).sum(0).tolist()
        rows = rows[order].T
        packed = torch.cat([rows[s, :live] for s, live in enumerate(alive)]) if steps else None
        if steps:  # one gather and one backward for all steps
            hu, ph = hu[packed].split(alive), ph[packed].split(alive)
        state = prior[order]
        pieces = [prior.new_zeros(1, h), state]
        for s, live in enumerate(alive):
            # the chains alive at a step are a prefix of those alive at the step before, so
            # the rows a step reads are the previous step's first rows: no copy of the rest
            # (the slice stays even when whole: the gradients then add up in the same order)
            e_new = self.gate_update(state[:live], hu[s], ph[s]).to(state.dtype)
            pieces.append(e_new)
            state = e_new
        table = torch.cat(pieces)
        starts = torch.tensor([1, *(1 + c_all + sum(alive[:s]) for s in range(steps))],
                              device=count.device)  # fmt: skip

        def at(c, s):
            # s > steps only for rows the caller masks out (a batch without mentions: steps 0)
            return starts[s.clamp(max=steps)] + rank[c]

        return table, at

    def _entity_choices(self, pred, batch: Batch, table, at, before, where):
        """Eq. 4 at every mention start at once: log P(E_t = k) over the K slots (B x M x K),
        with the memory as it stood before t (table, at: from the chain scan)."""
        b, t_len, h = pred.shape
        slots, steps = where.size(1), where.size(2)
        dev = pred.device
        starts = decision_points(batch) & batch.is_mention
        n_st = starts.sum(1)
        m = int(n_st.max()) if b and t_len else 0
        ar = torch.arange(t_len, device=dev)
        pos = torch.where(starts, ar, ar + t_len).argsort(1)[:, :m]
        valid = torch.arange(m, device=dev)[None] < n_st[:, None]
        seen = before.gather(1, pos[..., None].expand(-1, -1, slots))  # B x M x K
        k = torch.arange(slots, device=dev)
        existing = seen > 0
        n = (existing * (k + 1)).amax(-1) if slots else n_st.new_zeros(b, m)
        chain = torch.arange(b, device=dev)[:, None, None] * slots + k
        mem = table[at(chain.expand_as(seen), seen.clamp(max=steps))]  # B x M x K x H
        last = where.gather(2, (seen - 1).clamp(min=0).transpose(1, 2)).transpose(1, 2)
        qh = self.w_entity(pred.gather(1, pos[..., None].expand(-1, -1, h)))
        scores = (mem * qh.to(mem.dtype)[:, :, None]).sum(-1).float()
        if self.config.distance_feature == "word_buckets":
            here, last_at = pos[..., None], last
        else:
            axis = distance_axis(batch.sent_start, batch.mask, sentence=True)
            here = axis.gather(1, pos)[..., None]
            last_at = axis.gather(1, last.reshape(b, -1)).view_as(last)
        scores = scores + self.distance_scores(here, last_at, existing)
        lp = torch.log_softmax(scores.masked_fill(k > n[..., None], NEG), -1)
        gold = lp.gather(2, batch.entity.gather(1, pos).clamp(min=0)[..., None]).squeeze(-1)
        logp_e = torch.zeros(b, t_len, device=dev).scatter_add(1, pos, gold * valid)
        return logp_e, {"positions": pos, "starts": valid, "dists": lp, "n": n}

    # ------------------------------------------------------------------ probabilities

    def r_log_probs(self, pred) -> torch.Tensor:
        """log P(R_t = r | h) for r in {0, 1} (Eq. 3): B x T x 2."""
        return torch.log_softmax((self.w_r(pred) @ self.r_embed.T.to(pred.dtype)).float(), -1)

    def length_log_probs(self, hp, e_sel) -> torch.Tensor:
        """log P(L_t = l | h, e_{E_t, t-1}) for l = 1..l_max (Eq. 5): ... x l_max."""
        return torch.log_softmax(self.w_length(torch.cat([hp, e_sel.to(hp.dtype)], -1)).float(), -1)

    def word_channel(self, e_cur, upd, batch: Batch) -> torch.Tensor:
        """What Eq. 6 adds to h_{t-1} (B x T x H). Document scope: W_e e_current at every word
        (§2.2 step 3: a word outside mentions sees the most recent entity, zero before the
        first). Sentence scope, the authors' code (jiyfeng/entitynlm entitynlm.h
        `EntityNLM::BuildGraph`): a mention word `h_t + Te * entitylist[...]` (W_e e_{E_t,t-1}),
        a non-mention word `h_t + Tc * cont` (W_c c_t) where cont is p_cont at the start of the
        document, the entity just updated (`update_entity`: `cont = entitylist[...]`) after a
        mention word of the same sentence, and the last LSTM state of the previous sentence
        (`cont = h_t` at each sentence end) before one: the only ways, with the entity memory,
        that earlier sentences reach a sentence."""
        if not self.config.sentence:
            return self.w_e(e_cur.to(upd.dtype))
        is_m = batch.is_mention & batch.mask
        _, _, first, _ = sentences(batch.sent_start, batch.mask)
        ar = torch.arange(is_m.size(1), device=is_m.device)
        recent = torch.where(is_m, ar, -1).cummax(1).values if is_m.size(1) else first
        ctx = self.sentence_context(upd, first)
        ctx = torch.where((recent >= first)[..., None], e_cur.to(upd.dtype), ctx)
        return torch.where(is_m[..., None], self.w_e(e_cur.to(upd.dtype)), self.w_c(ctx))

    def sentence_context(self, upd, first) -> torch.Tensor:
        """The authors' cont before any mention of a word's sentence (B x T x H): the state
        after the last word of the previous sentence, p_cont in the first sentence."""
        prev = upd.gather(1, (first - 1).clamp(min=0)[..., None].expand(-1, -1, upd.size(-1)))
        return torch.where((first > 0)[..., None], prev, self.cont.to(upd.dtype))

    def word_log_probs(self, pred, channel, tokens) -> torch.Tensor:
        """log P(X_t = x_t | h_{t-1}, e_current) (Eq. 6), full softmax: B x T; channel: the
        `word_channel` vector added to h_{t-1}."""
        z = self.drop(pred + channel.to(pred.dtype))
        if torch.is_grad_enabled():
            logits = self.out(z).float()
            return logits.log_softmax(-1).gather(-1, tokens[..., None]).squeeze(-1)
        # evaluation (many importance draws): the target logit per row, the normaliser once
        # per distinct z (draws that agree on e_current at a word share it)
        flat, words = z.reshape(-1, z.size(-1)), tokens.reshape(-1)
        target = (flat.float() * self.out.weight[words].float()).sum(-1) + self.out.bias[words]
        first, inverse = distinct_rows(flat)
        rows = flat[first]
        norm = torch.empty(rows.size(0), device=z.device)
        for i in range(0, rows.size(0), 512):  # the V logits in cache-sized row chunks
            norm[i : i + 512] = self.out(rows[i : i + 512]).float().logsumexp(-1)
        return (target.float() - norm[inverse]).view(tokens.shape)

    def token_log_probs(self, batch: Batch, contexts=None) -> dict[str, torch.Tensor]:
        """Per word log-probabilities of each variable (0 where it is not chosen): R at
        decision points, E and L at mention starts, X at every word (generative only).
        contexts: precomputed `self.contexts(...)` (shared by the samples of a document)."""
        if contexts is None:
            contexts = self.contexts(batch.tokens, batch.mask, batch.sent_start)
        pred, upd = contexts
        dec = decision_points(batch)
        logp_r = self.r_log_probs(pred).gather(-1, batch.is_mention.long()[..., None])
        logp_e, e_sel, e_cur, _ = self._mention_scan(pred, upd, batch)
        starts = dec & batch.is_mention
        length = (batch.remaining - 1).clamp(0, self.config.l_max - 1)
        logp_l = self.length_log_probs(pred, e_sel).gather(-1, length[..., None]).squeeze(-1)
        out = {
            "r": torch.where(dec, logp_r.squeeze(-1), 0.0),
            "e": logp_e,
            "l": torch.where(starts, logp_l, 0.0),
        }
        if not self.config.proposal:
            channel = self.word_channel(e_cur, upd, batch)
            out["x"] = torch.where(
                batch.mask, self.word_log_probs(pred, channel, batch.tokens), 0.0
            )
        return out

    def log_joint(self, batch: Batch, contexts=None) -> torch.Tensor:
        """log P(X, R, E, L) per document (Eq. 9); the proposal: log Q(R, E, L | X)."""
        return sum(v.sum(1) for v in self.token_log_probs(batch, contexts).values())

    def log_words(self, batch: Batch, contexts=None) -> torch.Tensor:
        """sum_t log P(X_t | h_{t-1}, e_current) per document, R/E/L given (generative)."""
        return self.token_log_probs(batch, contexts)["x"].sum(1)

    @torch.no_grad()
    def entity_predictions(self, batch: Batch) -> list[list[tuple[int, torch.Tensor]]]:
        """Entity prediction (§5.3, Table 3): per document, at every mention start t (R_t = 1
        given, the gold annotation left of t as context), (t, log-probs over entities 0..n_t)
        where n_t = entities mentioned before t and index n_t is "new entity". The gold answer
        is batch.entity[doc, t] (== n_t for a new entity). Positions index the batch's words."""
        pred, upd = self.contexts(batch.tokens, batch.mask, batch.sent_start)
        _, _, _, extra = self._mention_scan(pred, upd, batch)
        out: list[list[tuple[int, torch.Tensor]]] = [[] for _ in range(batch.tokens.size(0))]
        for b, j in torch.nonzero(extra["starts"]).tolist():
            n_t = int(extra["n"][b, j])
            out[b].append((int(extra["positions"][b, j]), extra["dists"][b, j, : n_t + 1].cpu()))
        return out

    # ------------------------------------------------------------------ importance draws

    @torch.no_grad()
    def walk_inputs(self, tokens, mask, sent_start=None) -> tuple[tuple, tuple | None]:
        """What the draw-and-score walk (draws.py) reads of this model, per document: all that
        does not depend on the entity memory, computed once for the N draws, as contiguous
        numpy arrays. (memory, words): memory = (log P(R_t = r) B x T x 2 (Eq. 3), W_entity h
        B x T x H (Eq. 4), Eq. 8's input u_t (h_t, or W_T h_t: `entity_input`) and W_delta h_t
        B x T x H, W_len[:, :H] h + b B x T x L_max and W_len[:, H:] L_max x H (Eq. 5), Eq. 4's
        distance term of an existing entity at each distance 0..T, the prior (Eq. 7), each
        word's place on the `distance_axis` B x T and the new slot's distance term B x T);
        words (generative only, Eq. 6, evaluation: no dropout) = (word ids, a_t[x_t], max a_t,
        exp(a_t - max a_t) B x T x V, g_t = W W_e u_t B x T x V, W W_e prior V, and for a word
        whose Eq. 6 vector does not
        depend on the draw (no entity yet; in the sentence scope no mention yet in its
        sentence: the context `sentence_context`) its log-probability parts b_t[x_t] and
        logsumexp b_t, B x T; sentence scope only (else empty): gc_t = W W_c u_t B x T x V,
        W W_c prior V and the sentence starts B x T) with a_t = W h_{t-1} + b and b_t = a_t
        (document scope) or a_t + W W_c c_t (sentence scope)."""
        pred, upd = self.contexts(tokens, mask, sent_start)
        h, t_len = pred.size(-1), tokens.size(1)
        hu = self.entity_input(upd)
        prior = self.prior(1, 1, tokens.device, pred.dtype).reshape(h)
        axis = distance_axis(sent_start, mask, self.config.distance_feature == "sentence_exp")
        true = torch.ones((), dtype=torch.bool, device=tokens.device)
        memory = (
            self.r_log_probs(pred),
            self.w_entity(pred),
            hu,
            self.w_delta(upd),
            F.linear(pred, self.w_length.weight[:, :h], self.w_length.bias),
            self.w_length.weight[:, h:],
            self.distance_scores(torch.arange(t_len + 1, device=tokens.device), 0, true),
            prior,
            axis.contiguous(),
            self.distance_scores(axis, 0, ~true),
        )
        memory = tuple(np.ascontiguousarray((x if x.dtype == torch.long else x.float()).cpu()
                                            .numpy()) for x in memory)  # fmt: skip
        if self.config.proposal:
            return memory, None
        logits = self.out(pred).float()
        top = logits.amax(-1)
        if self.config.sentence:
            _, pos, first, _ = sentences(sent_start, mask)
            context = self.w_c(self.sentence_context(upd, first))
            fixed = logits + F.linear(context, self.out.weight).float()
            extra = (F.linear(self.w_c(hu), self.out.weight).float(),
                     F.linear(self.w_c(prior), self.out.weight).float(),
                     (pos == 0) & mask)  # fmt: skip
        else:
            fixed = logits
            extra = (torch.zeros(0, 0, 0), torch.zeros(0), torch.zeros_like(mask))
        words = (
            tokens,
            logits.gather(-1, tokens[..., None]).squeeze(-1).double(),
            top.double(),
            (logits - top[..., None]).exp_(),
            F.linear(self.w_e(hu), self.out.weight).float(),
            F.linear(self.w_e(prior), self.out.weight).float(),
            fixed.gather(-1, tokens[..., None]).squeeze(-1).double(),
            fixed.logsumexp(-1).double(),
            *extra,
        )
        return memory, tuple(np.ascontiguousarray(x.cpu().numpy()) for x in words)


class RNNLM(nn.Module):
    """The LSTM language model baseline (§5.1): the same embedding and LSTM sizes and the same
    vocabulary as EntityNLM, full softmax over h_{t-1}."""

    def __init__(self, config: EntityNLMConfig):
        super().__init__()
        self.config = c = config
        self.embed = nn.Embedding(c.vocab_size, c.embed_dim, padding_idx=0)
        self.lstm = nn.LSTM(c.embed_dim, c.hidden_size, batch_first=True)
        self.bos = nn.Parameter(torch.zeros(c.embed_dim))
        self.drop = nn.Dropout(c.dropout)
        self.out = nn.Linear(c.hidden_size, c.vocab_size)

    def token_log_probs(self, batch: Batch, *, greedy: bool = False) -> dict[str, torch.Tensor]:
        """Words only; the LSTM over each document or restarted at every sentence (config
        lstm_scope, `run_lstm`: then a sentence sees nothing of the earlier ones). greedy:
        also "greedy", True where the word is the argmax of its distribution."""
        emb = self.drop(self.embed(batch.tokens))
        before, _ = run_lstm(self.lstm, emb, batch.mask, batch.sent_start, self.bos,
                             self.config.sentence)  # fmt: skip
        logits = self.out(self.drop(before)).float()
        x = logits.log_softmax(-1).gather(-1, batch.tokens[..., None]).squeeze(-1)
        out = {"x": torch.where(batch.mask, x, 0.0)}
        if greedy:
            out["greedy"] = logits.argmax(-1) == batch.tokens
        return out

    def log_words(self, batch: Batch) -> torch.Tensor:
        return self.token_log_probs(batch)["x"].sum(1)

    log_joint = log_words


class EntityNLMPair(nn.Module):
    """EntityNLM and its proposal, trained side by side on the same annotated documents (one
    checkpoint: the proposal selected with the model it proposes for)."""

    def __init__(self, config: EntityNLMConfig, proposal_bidirectional: bool = True):
        super().__init__()
        self.lm = EntityNLM(config)
        qcfg = EntityNLMConfig(**{**config.to_dict(), "proposal": True,
                                  "bidirectional": proposal_bidirectional})  # fmt: skip
        self.proposal = EntityNLM(qcfg)
