"""Perplexity of EntityNLM with the entities marginalised out, by importance sampling
(Ji et al. 2017, papers/000 §5.1, Eq. 11):

    P(x) = sum_{r,e,l} P(x, r, e, l) ~= 1/N sum_i P(x, r_i, e_i, l_i) / Q(r_i, e_i, l_i | x),

with N draws (the paper: N = 100) per document from the proposal Q. In log space,
log P(x) ~= logsumexp_i(log P(x, .) - log Q(.)) - log N, which never leaves the float range.
The N draws of a document are drawn and scored together (draws.py; several documents go
together): the LSTM states are computed once per document and shared by its draws. tests/models/entitynlm/test_sampling.py
checks the estimate against the exact marginal, enumerated on tiny documents.

Model selection (§5.1 "Results"): the joint perplexity 2^(-1/T sum log2 P(X, R, E, L)) on the
annotated dev set, `joint_perplexity`; the words-only perplexity of the test set comes from
the LM contract (models/entitynlm/lm.py `EntityNLMMarginal`, the draws below). Perplexities are exp(-mean natural log) = 2^(-mean log2).

Bias (issue #33.8). P̂_N(x) is unbiased, so its log is not: E[log P̂_N(x)] <= log P(x)
(Jensen), rising with N towards it (Burda et al. 2016, the importance-weighted bound). A
perplexity from N draws is thus too high on average, more so at small N and on long documents
(the weights' spread grows with the words). Two bounds hold for every draw, not only on average,
since P(x) sums P(x, r, e, l) over every annotation: the best draw's log P(x, z*) and the gold
annotation's log P(x, z_gold) are both <= log P(x) (`importance_bounds`); an estimate under
either is certainly too low. tests/models/entitynlm/test_sampling.py checks both directions
against the enumerated marginal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from models.entitynlm.data import Batch, Document, Vocab, collate, run_of, token_batches
from models.entitynlm.draws import draw
from models.entitynlm.model import EntityNLM

# Table 1's readings of EntityNLM's test perplexity (issue #56.1), each a per-document log
# score over the same words; `importance_readings` computes the draw-based ones from one set of
# draws, `joint_perplexity` the gold-structure one. The LM contract (models/entitynlm/lm.py
# `loglikelihood_rolling`) serves "marginal" only.
READINGS = {
    "marginal": "(a) log P(x), R, E, L marginalised: Eq. 11 (today's headline)",
    "words_is": "(b) Eq. 11 with the word terms only: log 1/N sum_i P(x | z_i) / Q(z_i | x)",
    "words_q_mix": "(b') log 1/N sum_i P(x | z_i), z_i ~ Q: the draws' word probability averaged",
    "words_q_mean": "(b'') 1/N sum_i log P(x | z_i), z_i ~ Q: the draws' word log-probability "
                    "averaged (the released code's per-sample `evalobj 1` score)",
    "words_gold": "(c) log P(x | gold R, E, L): the released code's `evalobj 1` on the annotated "
                  "test file (uses test coreference)",
}  # fmt: skip
DRAW_READINGS = ("words_is", "words_q_mix", "words_q_mean")  # from the draws, beside "marginal"


@torch.no_grad()
def importance_readings(
    lm: EntityNLM,
    proposal: EntityNLM,
    batch: Batch,
    n: int = 100,
    generator: torch.Generator | None = None,
) -> dict[str, torch.Tensor]:
    """Per document (B,), from one set of n draws z_i = (r, e, l)_i ~ Q(R, E, L | x), each
    scored under the LM in the walk that draws it (draws.py): log P(x, z_i), log Q(z_i | x) and
    the word terms alone, log P(x | z_i) = sum_t log P(x_t | h_{t-1}, e_current) (Eq. 6):

    - "marginal" (a): Eq. 11, log 1/N sum_i P(x, z_i) / Q(z_i | x), an estimate of log P(x);
    - "best_draw": max_i log P(x, z_i), a lower bound on log P(x) (module docstring);
    - "words_is" (b, the paper's text read literally): §5.1 "we are able to calculate
      perplexity by marginalizing all other random variables using Equation 11. [...] our
      model only takes account of log probabilities on word prediction": Eq. 11 with the
      model's log-probabilities counted for the words only, the proposal's kept as the
      importance weight, log 1/N sum_i P(x | z_i) / Q(z_i | x). Its expectation is
      sum_z P(x | z), a sum of conditionals over every structure Q can draw, not a
      probability of x (it is not bounded by 1 and grows with the number of structures), so
      its perplexity is no distribution's;
    - "words_q_mix" (b'): the same draws with the importance weight dropped,
      log 1/N sum_i P(x | z_i), an estimate of log E_Q[P(x | Z)]: Q standing in for the
      prior over the structure;
    - "words_q_mean" (b''): 1/N sum_i log P(x | z_i), an estimate of E_Q[log P(x | Z)]: each
      draw scored as the released code scores one annotated document (jiyfeng/entitynlm
      entitynlm.h:429-431 `err_type == 1`, `i_nerr = sum(x_errs)`, main.cc:341-348 the
      per-document score of `task == test`) and the scores averaged over the draws. Jensen:
      words_q_mean <= words_q_mix.

    The three word readings share the draws (and so the generator's stream) with "marginal",
    which is the same number as without them."""
    _, logq, logp, logw = draw(proposal, batch.tokens, batch.mask, n, generator, lm=lm,
                               sent_start=batch.sent_start, words=True)  # fmt: skip
    weights = (logp - logq).view(-1, n)
    logw, logq = logw.view(-1, n), logq.view(-1, n)
    return {"marginal": torch.logsumexp(weights, 1) - math.log(n),
            "best_draw": logp.view(-1, n).max(1).values,
            "words_is": torch.logsumexp(logw - logq, 1) - math.log(n),
            "words_q_mix": torch.logsumexp(logw, 1) - math.log(n),
            "words_q_mean": logw.mean(1)}  # fmt: skip


@torch.no_grad()
def importance_draws(
    lm: EntityNLM,
    proposal: EntityNLM,
    batch: Batch,
    n: int = 100,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 11 per document: log P̂(x) (B,), from n draws of (R, E, L) per document from Q,
    each scored under the LM in the walk that draws it (draws.py); and the best draw's log
    P(x, r, e, l) (B,), a lower bound on log P(x) (module docstring)."""
    out = importance_readings(lm, proposal, batch, n, generator)
    return out["marginal"], out["best_draw"]


def importance_log_marginal(
    lm: EntityNLM,
    proposal: EntityNLM,
    batch: Batch,
    n: int = 100,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Eq. 11 per document: log P̂(x) (B,) (`importance_draws` without the best draw)."""
    return importance_draws(lm, proposal, batch, n, generator)[0]


def _run(model_eval, docs, vocab, max_tokens, device):
    total, tokens = 0.0, 0
    for group in token_batches(docs, max_tokens):
        batch = collate(group, vocab).to(device)
        total += float(model_eval(batch).sum())
        tokens += batch.num_tokens
    return total, tokens


def perplexity(total_log_prob: float, tokens: int) -> float:
    """exp(-1/T sum ln P) (= 2^(-1/T sum log2 P))."""
    return math.exp(-total_log_prob / tokens) if tokens else math.nan


@torch.no_grad()
def joint_perplexity(lm, docs: Sequence[Document], vocab: Vocab, *, max_tokens=4096,
                     device="cpu") -> dict[str, float]:  # fmt: skip
    """Joint perplexity of the annotated documents (the paper's dev selection), and the
    words-given-annotation perplexity beside it, `words_given_rel_ppl`: Table 1's reading (c),
    "words_gold" (READINGS), exp(-1/T sum_t log P(x_t | h_{t-1}, e_current)) with the gold R,
    E, L -- the released code's `--evalobj 1` (jiyfeng/entitynlm main.cc:341-348 `task ==
    test` sums `BuildGraph(..., evalobj, ...)` over the test documents; entitynlm.h:429-431
    `err_type == 1` returns `sum(x_errs)`, the word terms of the annotated file). It reads the
    test coreference, which §5.1 excludes from Table 1 ("coreference information is only used
    for training"). Unlike the released code, no </s> is predicted or counted (model.py). For
    the proposal: log Q(R, E, L | X)."""
    lm.eval()
    joint, tokens = _run(lm.log_joint, docs, vocab, max_tokens, device)
    out = {"joint_ppl": perplexity(joint, tokens), "tokens": tokens}
    if not lm.config.proposal:
        words, _ = _run(lm.log_words, docs, vocab, max_tokens, device)
        out["words_given_rel_ppl"] = perplexity(words, tokens)
    return out


@torch.no_grad()
def log_joint_documents(lm, docs: Sequence[Document], vocab: Vocab, *, max_tokens=4096,
                        device="cpu") -> dict[str, float]:  # fmt: skip
    """log P(x, r, e, l) of each document's gold annotation (Eq. 9) by doc_id: a lower bound
    on its log P(x); summed over the documents it is `joint_perplexity`'s."""
    lm.eval()
    out = {}
    for group in token_batches(docs, max(1, max_tokens)):
        values = lm.log_joint(collate(group, vocab).to(device)).tolist()
        out.update((d.doc_id, v) for d, v in zip(group, values, strict=True))
    return out


def document_records(docs: Sequence[Document], runs: Mapping[int, Sequence[Mapping]],
                     gold: Mapping[str, float]) -> list[dict]:  # fmt: skip
    """Per document, Eq. 11 against its two lower bounds. runs: {N: [one
    models/entitynlm/lm.py `EntityNLMMarginal.importance_perplexity` result per
    sampling seed]}; gold: `log_joint_documents`. Each
    record: doc_id, run (its corpus), tokens, log_px {N: [log P̂_N(x) per seed]}, best_draw
    (the best of every draw, all N and seeds), gold_joint, and bound = their larger,
    B(x) <= log P(x)."""
    out = []
    for d in docs:
        mine = {n: [r["documents"][d.doc_id] for r in rs] for n, rs in sorted(runs.items())}
        best = max(x["best_draw"] for xs in mine.values() for x in xs)
        out.append({"doc_id": d.doc_id, "run": run_of(d.doc_id), "tokens": len(d.tokens),
                    "log_px": {str(n): [x["log_px"] for x in xs] for n, xs in mine.items()},
                    "best_draw": best, "gold_joint": gold[d.doc_id],
                    "bound": max(best, gold[d.doc_id])})  # fmt: skip
    return out


def importance_bounds(records: Sequence[Mapping]) -> dict:
    """`document_records` summed as perplexities exp(-sum / words), so a bound's perplexity is
    >= the true one: is_ppl {N: mean ± sd over seeds}, best_draw_ppl, gold_joint_ppl,
    bound_ppl (the per-document larger bound); under_bound {N: estimates log P̂_N(x) < B(x),
    certainly too low} out of `estimates` (documents x seeds)."""
    tokens = sum(r["tokens"] for r in records)
    out: dict = {"documents": len(records), "tokens": tokens, "is_ppl": {}, "under_bound": {}}
    for n in records[0]["log_px"] if records else ():
        seeds = len(records[0]["log_px"][n])
        out["is_ppl"][n] = spread([perplexity(sum(r["log_px"][n][k] for r in records), tokens)
                                   for k in range(seeds)])  # fmt: skip
        out["under_bound"][n] = sum(v < r["bound"] for r in records for v in r["log_px"][n])
        out["estimates"] = len(records) * seeds
    for key in ("best_draw", "gold_joint", "bound"):
        out[f"{key}_ppl"] = perplexity(sum(r[key] for r in records), tokens)
    return out


def importance_bounds_by_run(records: Sequence[Mapping]) -> dict[str, dict]:
    """`importance_bounds` per annotation run (the corpus: doc_id's "<run>/" prefix)."""
    runs = sorted({r["run"] for r in records})
    return {run: importance_bounds([r for r in records if r["run"] == run]) for run in runs}


def spread(values: Sequence[float]) -> dict[str, float]:
    """{mean, std (population), n} of a figure over seeds."""
    return {"mean": float(np.mean(values)), "std": float(np.std(values)), "n": len(values)}
