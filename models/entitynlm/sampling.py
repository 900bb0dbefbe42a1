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
    _, logq, logp = draw(
        proposal, batch.tokens, batch.mask, n, generator, lm=lm, sent_start=batch.sent_start
    )
    weights = (logp - logq).view(-1, n)
    return torch.logsumexp(weights, 1) - math.log(n), logp.view(-1, n).max(1).values


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
    words-given-annotation perplexity beside it (for the proposal: log Q(R, E, L | X))."""
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
