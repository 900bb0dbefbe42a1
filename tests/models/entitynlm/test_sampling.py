"""Importance-sampled marginal (Ji et al. 2017, Eq. 11) against the exact sum over every
(R, E, L) of tiny documents, and the exactness of that enumeration itself."""

from __future__ import annotations

import math

import pytest
import torch

from models.entitynlm.data import Batch
from models.entitynlm.sampling import importance_log_marginal, importance_perplexity
from tasks.core.progress import Progress
from tests.models.entitynlm.helpers import (
    all_word_sequences,
    configurations,
    doc,
    enumeration_batch,
    random_model,
    vocab_of,
)

L_MAX = 2


def test_enumeration_counts_the_generative_story():
    # 1 word: R=0, or a new entity with L in {1, 2}
    assert len(list(configurations(1, L_MAX))) == 3
    # 2 words, l_max 1: 00, 0e, e0, e e' (e' in {same, new}) = 1 + 1 + 1 + 2
    assert len(list(configurations(2, 1))) == 5


@pytest.mark.parametrize("scope", ["sentence", "document"])
def test_joint_sums_to_one_over_every_document_and_annotation(scope):
    """sum over X in V^T and every (R, E, L) of P(X, R, E, L) = 1 (a normalised model of the
    first T words, given the sentence starts), for a generative model with a 2-word
    vocabulary; two sentences, so the sentence scope's context channel is summed over."""
    lm = random_model(vocab_size=2, l_max=L_MAX, scale=2.0, lstm_scope=scope)
    total = []
    for words in all_word_sequences(2, 3):
        batch, _ = enumeration_batch(words, L_MAX, (0, 2))
        with torch.no_grad():
            total.append(torch.logsumexp(lm.log_joint(batch), 0))
    assert math.isclose(float(torch.logsumexp(torch.stack(total), 0)), 0.0, abs_tol=1e-5)


def test_proposal_is_normalised_given_the_words():
    q = random_model(vocab_size=4, proposal=True, l_max=L_MAX, scale=2.0, seed=3)
    batch, _ = enumeration_batch([2, 3, 2, 3], L_MAX)
    assert math.isclose(float(torch.logsumexp(q.log_joint(batch), 0)), 0.0, abs_tol=1e-5)


def _exact(lm, q, words, starts=(0,)):
    """log P(x) exactly, and the exact standard deviation of one importance weight P/Q
    under Q divided by P(x) (the relative error of a one-draw estimate)."""
    batch, _ = enumeration_batch(words, L_MAX, starts)
    with torch.no_grad():
        logp, logq = lm.log_joint(batch).double(), q.log_joint(batch).double()
    log_px = torch.logsumexp(logp, 0)
    second = torch.logsumexp(2 * logp - logq, 0)  # log E_Q[(P/Q)^2]
    rel_sd = math.sqrt(max(0.0, math.exp(float(second - 2 * log_px)) - 1.0))
    return float(log_px), rel_sd


@pytest.mark.parametrize("scope", ["sentence", "document"])
def test_importance_sampling_converges_to_the_exact_marginal(scope):
    """P̂_N(x) is unbiased with relative sd rel_sd/sqrt(N): its error stays within 4 sd for
    each N, and shrinks as N grows (N = 100 -> 10000) on tiny documents of <= 2 entities."""
    lm = random_model(vocab_size=4, l_max=L_MAX, scale=1.5, seed=1, lstm_scope=scope)
    q = random_model(vocab_size=4, proposal=True, l_max=L_MAX, scale=1.0, seed=2,
                     lstm_scope=scope)  # fmt: skip
    docs = [([2, 3, 2, 3], (0, 2)), ([3, 2, 2], (0,))]
    errors = {}
    for words, starts in docs:
        exact, rel_sd = _exact(lm, q, words, starts)
        tokens = torch.tensor([words])
        first = torch.tensor([[i in starts for i in range(len(words))]])
        batch = Batch(tokens, torch.ones_like(tokens, dtype=torch.bool),
                      *(torch.zeros_like(tokens),) * 3, [], first)  # fmt: skip
        for n in (100, 1000, 10000):
            gen = torch.Generator().manual_seed(n)
            est = float(importance_log_marginal(lm, q, batch, n, gen)[0])
            rel_err = abs(math.exp(est - exact) - 1.0)
            assert rel_err <= 4 * rel_sd / math.sqrt(n) + 1e-6, (words, n, rel_err, rel_sd)
            errors.setdefault(n, []).append(rel_err)
    assert max(errors[10000]) < max(errors[100])
    assert max(errors[10000]) < 0.05


def test_several_documents_in_one_call_match_one_at_a_time():
    lm = random_model(vocab_size=4, l_max=L_MAX, scale=1.5, seed=1)
    q = random_model(vocab_size=4, proposal=True, l_max=L_MAX, seed=2)
    tokens = torch.tensor([[2, 3, 2, 3], [3, 2, 2, 0]])
    mask = tokens > 0
    zeros = torch.zeros_like(tokens)
    both = importance_log_marginal(lm, q, Batch(tokens, mask, zeros.bool(), zeros, zeros, []),
                                   20, torch.Generator().manual_seed(5))  # fmt: skip
    assert both.shape == (2,) and torch.isfinite(both).all()
    one = importance_log_marginal(
        lm, q, Batch(tokens[1:, :3], mask[1:, :3], zeros[1:, :3].bool(), zeros[1:, :3],
                     zeros[1:, :3], []), 20, torch.Generator().manual_seed(5))  # fmt: skip
    exact, _ = _exact(lm, q, [3, 2, 2])
    assert abs(float(one[0]) - exact) < 1.0 and abs(float(both[1]) - exact) < 1.0


def test_importance_perplexity_reports_progress_per_document(caplog):
    """A long evaluation (N = 100 draws per document) says how far it is, rate and ETA."""
    lm, q = random_model(vocab_size=4, seed=1), random_model(vocab_size=4, proposal=True, seed=2)
    none = [(0, -1, 0)] * 3
    docs = [doc(["w0", "w1", "w0"], none, f"d{k}") for k in range(5)]
    progress = Progress("importance sampling test", 5, "docs", every_s=0.0, bar=False)
    with caplog.at_level("INFO", logger="corefrepro"), progress:
        out = importance_perplexity(lm, q, docs, vocab_of(4), n=4, max_tokens=6,
                                    progress=progress)  # fmt: skip
    assert progress.done == 5 and out["tokens"] == 15 and math.isfinite(out["ppl"])
    assert "importance sampling test: 5/5 docs" in caplog.text
