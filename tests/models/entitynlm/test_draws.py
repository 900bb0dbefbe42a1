"""The importance draws (models/entitynlm/draws.py): they follow the proposal Q, their log Q
is Q's score of them, and the LM's score computed in the same walk (the word term through the
exp-factorised normaliser) is the LM's log P(X, R, E, L) of them."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import torch

from models.entitynlm.data import collate
from models.entitynlm.draws import _set_exp, draw
from tests.models.entitynlm.helpers import (
    AUTHORS_VARIANTS,
    enumeration_batch,
    random_documents,
    random_model,
    vocab_of,
)
from tests.models.entitynlm.reference import reference_of

VOCAB = vocab_of(7)


def _annotations(draws) -> list[tuple]:
    return [
        tuple(zip(m.tolist(), e.tolist(), r.tolist(), strict=True))
        for m, e, r in zip(draws.is_mention, draws.entity, draws.remaining, strict=True)
    ]


def test_draws_follow_the_proposal():
    """Frequencies of 20,000 draws against Q of every configuration of a 3-word document."""
    q = random_model(vocab_size=4, proposal=True, l_max=2, scale=1.5, seed=3)
    batch, configs = enumeration_batch([2, 3, 2], 2)
    with torch.no_grad():
        probs = q.log_joint(batch).exp()
        draws, logq, _ = draw(q, batch.tokens[:1], batch.mask[:1], 20_000,
                                 torch.Generator().manual_seed(0))  # fmt: skip
    counts = Counter(_annotations(draws))
    assert set(counts) <= {tuple(c) for c in configs}
    for config, p in zip(configs, probs.tolist(), strict=True):
        sd = math.sqrt(p * (1 - p) / 20_000)
        assert abs(counts[tuple(config)] / 20_000 - p) <= 4.5 * sd + 1e-4, (config, p)


@pytest.mark.parametrize("scope", ["sentence", "document"])
def test_log_q_of_the_draws_is_the_proposals_score(scope):
    q = random_model(7, proposal=True, l_max=3, scale=1.5, seed=2, lstm_scope=scope)
    batch = collate(random_documents(11, sentences=True), VOCAB)
    with torch.no_grad():
        draws, logq, _ = draw(q, batch.tokens, batch.mask, 30, torch.Generator().manual_seed(4),
                              sent_start=batch.sent_start)  # fmt: skip
        assert torch.allclose(reference_of(q).log_joint(draws), logq, atol=1e-5)
    assert draws.is_mention.any() and (~draws.is_mention[draws.mask]).any()
    assert (draws.remaining[~draws.mask] == 0).all() and (draws.entity[~draws.mask] == -1).all()


@pytest.mark.parametrize("scope", ["sentence", "document"])
def test_the_walks_lm_score_is_the_lms_log_joint(scope):
    """Random documents with mentions running past their ends (and across sentence starts)
    and padding, and one long document with many entities (the walk's per-entity buffers
    grow); the one-word-at-a-time reference implementation as the oracle."""
    long_doc = random_documents(99, count=1, max_len=120, sentences=True)
    for seed in range(3):
        q = random_model(7, proposal=True, l_max=3, scale=1.5, seed=seed, lstm_scope=scope)
        lm = random_model(7, l_max=3, scale=1.5, seed=seed + 10, lstm_scope=scope)
        batch = collate(random_documents(seed + 20, sentences=True) + long_doc, VOCAB)
        with torch.no_grad():
            draws, _, logp = draw(q, batch.tokens, batch.mask, 25,
                                  torch.Generator().manual_seed(seed), lm=lm,
                                  sent_start=batch.sent_start)  # fmt: skip
            oracle = reference_of(lm).log_joint(draws)
        assert torch.allclose(logp, oracle, atol=1e-4), (seed, (logp - oracle).abs().max())
        assert int(draws.entity.max()) >= 4  # past the walk's first buffer of 4 entities


@pytest.mark.parametrize("variant", sorted(AUTHORS_VARIANTS))
def test_the_walk_scores_the_authors_variants_as_the_reference(variant):
    """Issue #56.4: with each of the authors' model variants in both Q and the LM, the walk's
    log Q and log P(X, R, E, L) of its draws are the reference's."""
    settings = AUTHORS_VARIANTS[variant]
    long_doc = random_documents(99, count=1, max_len=120, sentences=True)
    for seed in range(2):
        q = random_model(7, proposal=True, l_max=3, scale=1.5, seed=seed, **settings)
        lm = random_model(7, l_max=3, scale=1.5, seed=seed + 10, **settings)
        batch = collate(random_documents(seed + 20, sentences=True) + long_doc, VOCAB)
        with torch.no_grad():
            draws, logq, logp = draw(q, batch.tokens, batch.mask, 25,
                                     torch.Generator().manual_seed(seed), lm=lm,
                                     sent_start=batch.sent_start)  # fmt: skip
            assert torch.allclose(reference_of(q).log_joint(draws), logq, atol=1e-5), seed
            oracle = reference_of(lm).log_joint(draws)
        assert torch.allclose(logp, oracle, atol=1e-4), (seed, (logp - oracle).abs().max())


def test_a_seed_fixes_the_draws():
    q = random_model(7, proposal=True, l_max=3, scale=1.5, seed=2)
    batch = collate(random_documents(5), VOCAB)

    def run(seed):
        with torch.no_grad():
            return draw(q, batch.tokens, batch.mask, 10, torch.Generator().manual_seed(seed))

    (a, qa, _), (b, qb, _), (c, _, _) = run(1), run(1), run(2)
    assert _annotations(a) == _annotations(b) and torch.equal(qa, qb)
    assert _annotations(a) != _annotations(c)


def test_draws_need_a_proposal():
    lm = random_model(7)
    batch = collate(random_documents(5), VOCAB)
    with pytest.raises(ValueError, match="proposal=True"):
        draw(lm, batch.tokens, batch.mask, 2)


def test_the_walks_exp_is_numpys_to_1e_9():
    """The walk's vectorisable exp (a polynomial and 2^k as float bits) over the range it meets,
    exp(c - max c) with c - max c in [-700, 0], and past it (clamped: exp(-700) ~ 1e-304)."""
    rng = np.random.default_rng(0)
    c = np.concatenate([-rng.random(50_000) * 700, -rng.random(50_000) * 5, [-1e-300]]) + 3.0
    c[17] = 3.0
    out, bits = np.empty_like(c), np.empty(c.size, np.int64)
    assert _set_exp(c, out, bits) == 3.0
    np.testing.assert_allclose(out, np.exp(c - 3.0), rtol=1e-9, atol=0)
    far = np.array([0.0, -800.0])
    _set_exp(far, out[:2], bits[:2])
    assert out[1] == pytest.approx(math.exp(-700.0), rel=1e-9)
