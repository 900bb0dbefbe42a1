"""The vectorised paths (issue #13 point 7) compute what the original one-word-at-a-time code
computed (tests/models/entitynlm/reference.py), on random documents and random models."""

from __future__ import annotations

import random

import torch

from models.entitynlm.data import Document, collate
from models.entitynlm.model import distinct_rows
from models.entitynlm.sampling import importance_log_marginal
from tests.models.entitynlm.helpers import random_model, vocab_of
from tests.models.entitynlm.reference import reference_importance_log_marginal, reference_of

VOCAB = vocab_of(7)


def random_documents(seed, count=5, max_len=14, l_max=3) -> list[Document]:
    """Random annotations the story allows; a mention may run past the last word."""
    rng = random.Random(seed)
    docs = []
    for k in range(count):
        length = rng.randint(1, max_len)
        is_m, ent, rem, n = [], [], [], 0
        while len(is_m) < length:
            if rng.random() < 0.45:
                e = rng.randrange(n + 1)
                n = max(n, e + 1)
                ell = rng.randint(1, l_max)
                is_m += [True] * ell
                ent += [e] * ell
                rem += list(range(ell, 0, -1))
            else:
                is_m.append(False), ent.append(-1), rem.append(0)
        tokens = [f"w{rng.randrange(5)}" for _ in range(length)]
        docs.append(Document(f"r{k}", "test", tokens, is_m[:length], ent[:length], rem[:length]))
    return docs


def test_token_log_probs_and_gradients_equal_the_reference():
    for seed in range(4):
        for proposal in (False, True):
            model = random_model(7, proposal=proposal, l_max=3, scale=1.5, seed=seed).train()
            ref = reference_of(model)
            batch = collate(random_documents(seed), VOCAB)
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


def test_entity_predictions_equal_the_reference():
    model = random_model(7, l_max=3, scale=1.5, seed=3)
    batch = collate(random_documents(7), VOCAB)
    fast, slow = model.entity_predictions(batch), reference_of(model).entity_predictions(batch)
    assert [[t for t, _ in d] for d in fast] == [[t for t, _ in d] for d in slow]
    for d_fast, d_slow in zip(fast, slow, strict=True):
        for (_, a), (_, b) in zip(d_fast, d_slow, strict=True):
            assert torch.allclose(a, b, atol=1e-5)


def test_sampler_draws_what_the_reference_draws():
    """Same generator, same random numbers consumed in the same order: the same draws."""
    q = random_model(7, proposal=True, l_max=3, scale=1.5, seed=2)
    batch = collate(random_documents(11), VOCAB)
    fast = q.sample(batch.tokens, batch.mask, 30, torch.Generator().manual_seed(4))
    slow = reference_of(q).sample(batch.tokens, batch.mask, 30, torch.Generator().manual_seed(4))
    for name in ("is_mention", "entity", "remaining"):
        assert torch.equal(getattr(fast[0], name), getattr(slow[0], name)), name
    assert torch.allclose(fast[1], slow[1], atol=1e-5)


def test_importance_estimate_equals_the_reference_with_the_same_generator():
    lm = random_model(7, l_max=3, scale=1.5, seed=5)
    q = random_model(7, proposal=True, l_max=3, scale=1.5, seed=6)
    batch = collate(random_documents(13, count=3), VOCAB)
    fast = importance_log_marginal(lm, q, batch, 40, torch.Generator().manual_seed(1))
    slow = reference_importance_log_marginal(reference_of(lm), reference_of(q), batch, 40,
                                             torch.Generator().manual_seed(1))  # fmt: skip
    assert torch.allclose(fast, slow, atol=1e-4)


def test_distinct_rows_groups_exactly_equal_rows():
    base = torch.randn(6, 5)
    x = base[torch.tensor([0, 3, 3, 1, 0, 5, 3])]
    x[6, 4] = torch.nextafter(x[6, 4], torch.tensor(10.0))  # one ulp away: its own row
    first, index = distinct_rows(x)
    assert torch.equal(x[first][index], x) and sorted(first.tolist()) == [0, 1, 3, 5, 6]


def test_evaluation_word_normalisers_match_the_training_softmax():
    """The no-grad path (normaliser once per distinct z) gives the full log-softmax's values."""
    lm = random_model(vocab_size=7, scale=1.5, seed=3)
    batch = collate(random_documents(4), VOCAB)
    with torch.enable_grad():
        full = lm.log_words(batch)
    with torch.no_grad():
        fast = lm.log_words(batch)
    assert torch.allclose(full.detach(), fast, atol=1e-5)
