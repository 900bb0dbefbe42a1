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
`importance_perplexity`. Perplexities are exp(-mean natural log) = 2^(-mean log2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from models.entitynlm.data import Batch, Document, Vocab, collate, token_batches
from models.entitynlm.draws import draw
from models.entitynlm.model import EntityNLM


@torch.no_grad()
def importance_log_marginal(
    lm: EntityNLM,
    proposal: EntityNLM,
    batch: Batch,
    n: int = 100,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Eq. 11 per document: log P̂(x) (B,), from n draws of (R, E, L) per document from Q,
    each scored under the LM in the walk that draws it (draws.py)."""
    _, logq, logp = draw(
        proposal, batch.tokens, batch.mask, n, generator, lm=lm, sent_start=batch.sent_start
    )
    weights = (logp - logq).view(-1, n)
    return torch.logsumexp(weights, 1) - math.log(n)


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
def importance_perplexity(lm, proposal, docs: Sequence[Document], vocab: Vocab, *, n=100,
                          seed=1, max_tokens=2048, device="cpu", progress=None) -> dict[str, float]:  # fmt: skip
    """Words-only perplexity of documents with R, E, L marginalised by Eq. 11 (n draws each);
    documents are batched by max_tokens words before the n-fold expansion. progress: a
    tasks.core.progress.Progress (or anything with update(k)) told the documents done."""
    lm.eval()
    proposal.eval()
    generator = torch.Generator(device=device).manual_seed(int(seed))
    total, tokens = 0.0, 0
    for group in token_batches(docs, max(1, max_tokens)):
        batch = collate(group, vocab).to(device)
        total += float(importance_log_marginal(lm, proposal, batch, n, generator).sum())
        tokens += batch.num_tokens
        if progress is not None:
            progress.update(len(group))
    return {"ppl": perplexity(total, tokens), "log_prob": total, "tokens": tokens}


@torch.no_grad()
def lm_perplexity(model, docs: Sequence[Document], vocab: Vocab, *, max_tokens=4096,
                  device="cpu") -> dict[str, float]:  # fmt: skip
    """Exact words perplexity of a model with `log_words` (the RNNLM)."""
    model.eval()
    total, tokens = _run(model.log_words, docs, vocab, max_tokens, device)
    return {"ppl": perplexity(total, tokens), "log_prob": total, "tokens": tokens}
