"""Importance draws for Eq. 11 (Ji et al. 2017, papers/000 §5.1): N draws of (R, E, L) per
document from the proposal Q, each scored under EntityNLM, log P(X, R, E, L), in the same pass.

Why a compiled walk. A draw is sequential (E and L depend on the entity memory, which the
previous choices wrote), so it cannot be one batched tensor expression; as a loop of small
tensor ops over the words it spent its time in op dispatch (IS cost 36-74 RNNLM passes on
trained models, issue #13's target <= 20). Here everything that does not
depend on the memory (the LSTM states, W h, R's distribution, Eq. 4's distance weights, Eq.
5's h half) is computed in torch once per document (`EntityNLM.walk_inputs`), and the walk
over the words is one numba loop per draw that keeps two memories side by side: Q's, to
draw, and the LM's, to score the same choices.

Why the word term is cheap. Eq. 6's logits are a_t + c_e with a_t = W h_{t-1} + b (shared
by the draws) and c_e = W W_e e_current (the draw's). The N draws of a trained proposal still
disagree on e_current at most words (75 of 100 on GUM + LitBank), so a softmax per draw and
word costs ~N RNNLM passes. Instead, per document and word, A_t = exp(a_t - max a_t) once;
per entity state C_e = exp(c_e - max c_e); the normaliser is then one V-long dot product,
log sum_v exp(a_t + c_e) = max a_t + max c_e + log <A_t, C_e>, with no H factor. And c_e
needs no matrix product either: Eq. 8's e' = (delta e + (1 - delta) h_t) / |.| is linear
before the norm, so c_e' = (delta c_e + (1 - delta) g_t) / |.| with g_t = W W_e u_t (u_t: h_t,
or the authors' W_T h_t), once per document and word. Exact up to rounding: the order of sums differs from the softmax's, and
exp is a polynomial good to 1e-9 relative (`_set_exp`).

Sentence scope (model.py `word_channel`, the authors' context channel): a word outside
mentions adds W_c c_t instead. Where c_t does not depend on the draw (no mention yet in its
sentence: the previous sentence's last state, or p_cont) its log-probability comes with the
inputs, as a word before the first entity does in the document scope; after a mention of its
sentence, c_t is the entity just updated, carried as d_e = W W_c e through Eq. 8 exactly as
c_e (gc_t = W W_c h_t).

Random numbers: three uniforms per draw and word from the caller's torch generator (R by
comparison, E and L by inverse CDF), so a seed fixes the draws.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit

from models.entitynlm.data import Batch
from tasks.core.numerics import heal_jit_cache

_FAST = {"reassoc", "contract"}  # vectorised dot products; no NaN/inf assumptions


@njit(cache=True, fastmath=_FAST)
def _entity_logits(mem, n, qh, dist_w, new_w, axis, last, t, out):
    """Eq. 4 over entities 0..n (n = the new one): e_k^T (W h) + the distance term, of the
    distance axis[t] - axis[last word of e_k] for an existing entity, new_w for the new one."""
    for k in range(n + 1):
        s = 0.0
        for j in range(qh.shape[0]):
            s += mem[k, j] * qh[j]
        out[k] = s + (dist_w[axis[t] - axis[last[k]]] if k < n else new_w)


@njit(cache=True, fastmath=_FAST)
def _length_logits(h_part, w_e_part, e, out):
    """Eq. 5: W_len [h; e] + b, the h half (with b) precomputed; w_e_part: L_max x H."""
    for lth in range(out.shape[0]):
        s = 0.0
        for j in range(e.shape[0]):
            s += e[j] * w_e_part[lth, j]
        out[lth] = h_part[lth] + s


@njit(cache=True)
def _log_normaliser(logits, n):
    top = logits[0]
    for k in range(1, n):
        top = max(top, logits[k])
    s = 0.0
    for k in range(n):
        s += math.exp(logits[k] - top)
    return top + math.log(s)


@njit(cache=True)
def _draw(logits, n, u):
    """One index of softmax(logits[:n]) by inverse CDF at uniform u, and its log-probability."""
    lse = _log_normaliser(logits, n)
    c = 0.0
    for k in range(n):
        c += math.exp(logits[k] - lse)
        if u < c:
            return k, logits[k] - lse
    return n - 1, logits[n - 1] - lse  # u beyond the rounded total


@njit(cache=True, fastmath=_FAST)
def _gate(e, hu, ph):
    """Eq. 8 in place: delta = sigmoid(h^T W_delta e); e <- normalize(delta e + (1 - delta) h).
    Returns (delta, the norm divided by)."""
    a = 0.0
    for j in range(e.shape[0]):
        a += ph[j] * e[j]
    delta = 1.0 / (1.0 + math.exp(-a))
    norm = 0.0
    for j in range(e.shape[0]):
        e[j] = hu[j] + delta * (e[j] - hu[j])
        norm += e[j] * e[j]
    norm = max(math.sqrt(norm), 1e-12)
    for j in range(e.shape[0]):
        e[j] /= norm
    return delta, norm


_LOG2E = 1.0 / math.log(2.0)
_C0, _C1, _C2, _C3, _C4, _C5, _C6, _C7, _C8 = (math.log(2.0) ** k / math.factorial(k)
                                               for k in range(9))  # fmt: skip


@njit(cache=True, fastmath=_FAST)
def _set_exp(c, out, bits):
    """out = exp(c - max c), returns max c. exp(x) = 2^k 2^f, k = round(x log2 e), |f| <= 1/2,
    2^f by its degree-8 Taylor polynomial (relative error < 1e-9; the test checks it against
    numpy) and 2^k written as float64 bits: loops LLVM vectorises, where a libm exp per
    element was 90 % of the walk (numba's vectorised SVML exp needs an llvmlite built with
    it, which PyPI's is not). bits: int64 scratch of c's length."""
    top = c[0]
    for v in range(c.shape[0]):
        top = max(top, c[v])
    for v in range(c.shape[0]):
        t = max(c[v] - top, -700.0) * _LOG2E
        k = math.floor(t + 0.5)
        f = t - k
        p = _C8
        p = p * f + _C7
        p = p * f + _C6
        p = p * f + _C5
        p = p * f + _C4
        p = p * f + _C3
        p = p * f + _C2
        p = p * f + _C1
        out[v] = p * f + _C0
        bits[v] = (np.int64(k) + 1023) << 52
    scale = bits.view(np.float64)
    for v in range(c.shape[0]):
        out[v] *= scale[v]
    return top


@njit(cache=True, fastmath=_FAST)
def _dot(a, b):
    s = 0.0
    for v in range(a.shape[0]):
        s += a[v] * b[v]
    return s


@njit(cache=True, fastmath=_FAST)
def _update_logits(c, delta, norm, g):
    """c_e' = (delta c_e + (1 - delta) g_t) / norm: Eq. 8 carried to W W_e e."""
    for v in range(c.shape[0]):
        c[v] = (g[v] + delta * (c[v] - g[v])) / norm


@njit(cache=True)
def _grow(x, rows):
    out = np.empty((rows, x.shape[1]), x.dtype)
    out[: x.shape[0]] = x
    return out


@njit(cache=True)
def _walk(doc_of_row, lengths, uniforms, q, p, words, score, is_m, ent, rem, logq, logp, logw):
    """Each row: one draw from Q along its document's words (§2.2's story), log Q of it, and,
    if score, the LM's log P(X, R, E, L) of the same draw and its word terms alone,
    log P(X | R, E, L) = sum_t log P(x_t | h_{t-1}, e_current) (logw: the words-only readings
    of Table 1, sampling.py `importance_readings`; accumulated beside logp, which is unchanged).
    q, p: (log P(R) D x T x 2, W_entity h D x T x H, h_t and W_delta h_t D x T x H (Eq. 8),
    Eq. 5's h half D x T x L_max, its e half L_max x H, distance terms T + 1, prior H,
    distance axis D x T, the new slot's distance term D x T);
    words (the LM's Eq. 6): (word ids D x T, a_t[x_t] D x T, max a_t D x T, A_t D x T x V,
    g_t D x T x V, W W_e prior V, b_t[x_t] and logsumexp b_t D x T (a word whose vector does
    not depend on the draw), gc_t D x T x V and W W_c prior V and sentence starts D x T
    (sentence scope; gc_t empty in the document scope)), see the module docstring and
    `EntityNLM.walk_inputs`."""
    r_q, qh_q, hu_q, ph_q, len_q, wle_q, dist_q, prior_q, axis_q, new_q = q
    r_p, qh_p, hu_p, ph_p, len_p, wle_p, dist_p, prior_p, axis_p, new_p = p
    ids, target, top_a, big_a, g, c_prior, fixed_target, fixed_lse, gc, d_prior, first = words
    sentence = gc.shape[0] > 0
    t_max, h = uniforms.shape[1], qh_q.shape[2]
    mem_q = np.empty((t_max + 1, h), np.float32)
    mem_p = np.empty((t_max + 1, h), np.float32)
    last = np.zeros(t_max + 1, np.int64)
    scores = np.empty(t_max + 1)
    lengths_lp = np.empty(len_q.shape[2])
    c = np.empty((4, c_prior.shape[0]))  # per entity: c_e, exp(c_e - max), max (grown)
    big_c = np.empty_like(c)
    top_c = np.empty(t_max + 1)
    d = np.empty((4 if sentence else 0, c_prior.shape[0]))  # the same for d_e = W W_c e
    big_d = np.empty_like(d)
    top_d = np.empty(t_max + 1)
    big_prior = np.empty(c_prior.shape[0])
    big_d_prior = np.empty(c_prior.shape[0])
    bits = np.empty(c_prior.shape[0], np.int64)
    top_prior = _set_exp(c_prior.astype(np.float64), big_prior, bits) if score else 0.0
    top_d_prior = 0.0
    if score and sentence:
        top_d_prior = _set_exp(d_prior.astype(np.float64), big_d_prior, bits)
    for row in range(doc_of_row.shape[0]):
        doc = doc_of_row[row]
        n, prev, cur, recent, lq, lp, lw = 0, 0, -1, -1, 0.0, 0.0, 0.0
        for t in range(lengths[doc]):
            if sentence and first[doc, t]:  # the context channel forgets the last sentence
                recent = -1
            r, start = True, False
            if prev <= 1:  # a decision point: Eq. 3
                r = uniforms[row, t, 0] < math.exp(r_q[doc, t, 1])
                start = r
                lq += r_q[doc, t, 1] if r else r_q[doc, t, 0]
                lp += r_p[doc, t, 1] if r else r_p[doc, t, 0]
            if start:  # Eq. 4 then Eq. 5; slot n is the new entity, drawn from the prior (Eq. 7)
                mem_q[n] = prior_q
                mem_p[n] = prior_p
                _entity_logits(mem_q, n, qh_q[doc, t], dist_q, new_q[doc, t], axis_q[doc], last,
                               t, scores)  # fmt: skip
                cur, lpe = _draw(scores, n + 1, uniforms[row, t, 1])
                _length_logits(len_q[doc, t], wle_q, mem_q[cur], lengths_lp)
                ell, lpl = _draw(lengths_lp, lengths_lp.shape[0], uniforms[row, t, 2])
                lq += lpe + lpl
                if score:
                    _entity_logits(mem_p, n, qh_p[doc, t], dist_p, new_p[doc, t], axis_p[doc],
                                   last, t, scores)  # fmt: skip
                    lp += scores[cur] - _log_normaliser(scores, n + 1)
                    _length_logits(len_p[doc, t], wle_p, mem_p[cur], lengths_lp)
                    lp += lengths_lp[ell] - _log_normaliser(lengths_lp, lengths_lp.shape[0])
                    if cur == n:  # W W_e e (and W W_c e) of the new entity
                        if n >= c.shape[0]:
                            c, big_c = _grow(c, 2 * n), _grow(big_c, 2 * n)
                            if sentence:
                                d, big_d = _grow(d, 2 * n), _grow(big_d, 2 * n)
                        c[n], big_c[n], top_c[n] = c_prior, big_prior, top_prior
                        if sentence:
                            d[n], big_d[n], top_d[n] = d_prior, big_d_prior, top_d_prior
                now = ell + 1
            else:
                now = prev - 1 if r else 0
            if score:  # Eq. 6: a mention word's entity before it, else the most recent one
                k = cur if r else recent
                x = ids[doc, t]
                if k < 0:  # the vector does not depend on the draw
                    word = fixed_target[doc, t] - fixed_lse[doc, t]
                elif sentence and not r:  # W_c e of the entity just updated
                    norm = top_a[doc, t] + top_d[k] + math.log(_dot(big_a[doc, t], big_d[k]))
                    word = target[doc, t] + d[k, x] - norm
                else:
                    norm = top_a[doc, t] + top_c[k] + math.log(_dot(big_a[doc, t], big_c[k]))
                    word = target[doc, t] + c[k, x] - norm
                lp += word
                lw += word
                if r:
                    delta, size = _gate(mem_p[cur], hu_p[doc, t], ph_p[doc, t])  # Eq. 8
                    _update_logits(c[cur], delta, size, g[doc, t])
                    top_c[cur] = _set_exp(c[cur], big_c[cur], bits)
                    if sentence:
                        _update_logits(d[cur], delta, size, gc[doc, t])
                        top_d[cur] = _set_exp(d[cur], big_d[cur], bits)
            if r:
                _gate(mem_q[cur], hu_q[doc, t], ph_q[doc, t])
                last[cur], n, recent = t, max(n, cur + 1), cur
            is_m[row, t] = r
            ent[row, t] = cur if r else -1
            rem[row, t] = now
            prev, cur = now, cur if r else -1
        logq[row], logp[row], logw[row] = lq, lp, lw


def _no_words() -> tuple:
    """Empty word inputs of the types `EntityNLM.walk_inputs` gives (a walk that only draws)."""
    per_word, per_vocab = np.zeros((0, 0)), np.zeros((0, 0, 0), np.float32)
    return (np.zeros((0, 0), np.int64), per_word, per_word, per_vocab, per_vocab,
            np.zeros(0, np.float32), per_word, per_word, per_vocab, np.zeros(0, np.float32),
            np.zeros((0, 0), np.bool_))  # fmt: skip


@heal_jit_cache  # a damaged numba cache is cleared and compiled afresh (tasks/core/numerics.py)
def draw(proposal, tokens, mask, n: int, generator: torch.Generator | None = None, lm=None,
         sent_start: torch.Tensor | None = None, *, words: bool = False):  # fmt: skip
    """n draws of (R, E, L) per document from Q (document b's draws are rows b*n .. b*n+n-1;
    a mention may run past the last word: prefix semantics). sent_start: the batch's sentence
    starts (Batch.sent_start; the sentence scope restarts the LSTMs there). Returns (Batch of
    the draws, log Q per draw, log P(X, R, E, L) per draw under lm, or None without lm), and
    with words (lm given) a fourth item: log P(X | R, E, L) per draw, the word terms of the
    same walk (the draws and log P do not depend on it)."""
    if not proposal.config.proposal:
        raise ValueError("draws come from the proposal: EntityNLMConfig(proposal=True)")
    if words and lm is None:
        raise ValueError("draw(words=True) scores the words under the LM: give lm")
    dev, (b, t_len) = tokens.device, tokens.shape
    q, _ = proposal.walk_inputs(tokens, mask, sent_start)
    p, inputs = (q, _no_words()) if lm is None else lm.walk_inputs(tokens, mask, sent_start)
    rows = b * n
    uniforms = torch.rand((rows, t_len, 3), generator=generator, device=dev).cpu().numpy()
    is_m = np.zeros((rows, t_len), np.bool_)
    ent = np.full((rows, t_len), -1, np.int64)
    rem = np.zeros((rows, t_len), np.int64)
    logq, logp, logw = np.zeros(rows), np.zeros(rows), np.zeros(rows)
    doc_of_row = np.repeat(np.arange(b), n)
    lengths = mask.sum(1).cpu().numpy().astype(np.int64)
    score = lm is not None
    _walk(doc_of_row, lengths, uniforms, q, p, inputs, score, is_m, ent, rem, logq, logp, logw)

    def back(x, dtype=None):
        return torch.from_numpy(x).to(dev, dtype)

    starts = None if sent_start is None else sent_start.repeat_interleave(n, 0)
    draws = Batch(tokens.repeat_interleave(n, 0), mask.repeat_interleave(n, 0), back(is_m),
                  back(ent), back(rem), [], starts)  # fmt: skip
    out = (draws, back(logq, torch.float32), None if lm is None else back(logp, torch.float32))
    return (*out, back(logw, torch.float32)) if words else out
