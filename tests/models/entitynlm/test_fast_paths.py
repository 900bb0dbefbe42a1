"""The vectorised paths (issue #13 point 7) compute what the original one-word-at-a-time code
computed (tests/models/entitynlm/reference.py), on random documents and random models."""

from __future__ import annotations

import pytest
import torch

from models.entitynlm.data import collate
from models.entitynlm.model import distinct_rows
from tests.models.entitynlm.helpers import (
    AUTHORS_VARIANTS,
    random_documents,
    random_model,
    vocab_of,
)
from tests.models.entitynlm.reference import reference_of

VOCAB = vocab_of(7)


@pytest.mark.parametrize("scope", ["sentence", "document"])
def test_token_log_probs_and_gradients_equal_the_reference(scope):
    _assert_scan_matches_reference(range(4), lstm_scope=scope)


def _assert_scan_matches_reference(seeds, **settings):
    """Log-probabilities and gradients of the batched scan against the reference, for
    EntityNLM and its proposal built with `settings` (random_model's)."""
    for seed in seeds:
        for proposal in (False, True):
            model = random_model(7, proposal=proposal, l_max=3, scale=1.5, seed=seed,
                                 **settings).train()  # fmt: skip
            ref = reference_of(model)
            batch = collate(random_documents(seed, sentences=True), VOCAB)
            torch.manual_seed(seed)  # Eq. 7's noise in training: the same draws in both
            fast = model.token_log_probs(batch)
            torch.manual_seed(seed)
            slow = ref.token_log_probs(batch)
            for key in slow:
                assert torch.allclose(fast[key], slow[key], atol=1e-5), (seed, proposal, key)
            sum(v.sum() for v in fast.values()).backward()
            sum(v.sum() for v in slow.values()).backward()
            for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
                if p.grad is not None or q.grad is not None:
                    assert torch.allclose(p.grad, q.grad, atol=1e-4), (seed, proposal, name)


@pytest.mark.parametrize("scope", ["sentence", "document"])
def test_entity_predictions_equal_the_reference(scope):
    model = random_model(7, l_max=3, scale=1.5, seed=3, lstm_scope=scope)
    batch = collate(random_documents(7, sentences=True), VOCAB)
    fast, slow = model.entity_predictions(batch), reference_of(model).entity_predictions(batch)
    assert [[t for t, _ in d] for d in fast] == [[t for t, _ in d] for d in slow]
    for d_fast, d_slow in zip(fast, slow, strict=True):
        for (_, a), (_, b) in zip(d_fast, d_slow, strict=True):
            assert torch.allclose(a, b, atol=1e-5)


def test_distinct_rows_groups_exactly_equal_rows():
    base = torch.randn(6, 5)
    x = base[torch.tensor([0, 3, 3, 1, 0, 5, 3])]
    x[6, 4] = torch.nextafter(x[6, 4], torch.tensor(10.0))  # one ulp away: its own row
    first, index = distinct_rows(x)
    assert torch.equal(x[first][index], x) and sorted(first.tolist()) == [0, 1, 3, 5, 6]


@pytest.mark.parametrize("scope", ["sentence", "document"])
def test_evaluation_word_normalisers_match_the_training_softmax(scope):
    """The no-grad path (normaliser once per distinct z) gives the full log-softmax's values."""
    lm = random_model(vocab_size=7, scale=1.5, seed=3, lstm_scope=scope)
    batch = collate(random_documents(4, sentences=True), VOCAB)
    with torch.enable_grad():
        full = lm.log_words(batch)
    with torch.no_grad():
        fast = lm.log_words(batch)
    assert torch.allclose(full.detach(), fast, atol=1e-5)


@pytest.mark.parametrize("variant", sorted(AUTHORS_VARIANTS))
def test_the_authors_variants_equal_the_reference(variant):
    """Issue #56.4: each of the authors' model variants through the batched scan (log-probs,
    gradients, entity predictions) computes what the one-word-at-a-time reference computes."""
    settings = AUTHORS_VARIANTS[variant]
    _assert_scan_matches_reference(range(2), **settings)
    model = random_model(7, l_max=3, scale=1.5, seed=3, **settings)
    batch = collate(random_documents(7, sentences=True), VOCAB)
    fast, slow = model.entity_predictions(batch), reference_of(model).entity_predictions(batch)
    for d_fast, d_slow in zip(fast, slow, strict=True):
        for (ta, a), (tb, b) in zip(d_fast, d_slow, strict=True):
            assert ta == tb and torch.allclose(a, b, atol=1e-5)


@pytest.mark.parametrize("scope", ["sentence", "document"])
def test_the_training_step_is_the_same_bits_before_and_after_the_speedups(scope):
    """Issue #57.3: the stage's training step (LMRecipe: EntityNLM and its bidirectional
    proposal, per-model clip, Adam) gives the same loss, gradients and weights, bit for bit,
    on the code paths before and after the speed-ups (profile_step.use: torch's packed LSTM
    kernel and the copying chain scan, against models/sequences.py `packed_lstm` and the
    prefix chain scan), two steps on InScript-like documents."""
    from tests.models.entitynlm import profile_step

    runs = {}
    try:
        for variant in profile_step.VARIANTS:
            profile_step.use(variant)
            step, recipe = profile_step.recipe_step("inscript", seed=3, lstm_scope=scope)
            step(), step()
            runs[variant] = [t.detach().clone() for p in recipe.model.parameters()
                             for t in (p, torch.empty(0) if p.grad is None else p.grad)]  # fmt: skip
    finally:
        profile_step.use("after")
    assert all(torch.equal(a, b) for a, b in zip(*runs.values(), strict=True))
