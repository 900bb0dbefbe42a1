"""Table 1's readings of EntityNLM's perplexity (issue #56.1; models/entitynlm/sampling.py
READINGS): the word-only readings of the importance draws and the words given the gold
annotation, each against an independent computation, and the marginal (Eq. 11) unchanged."""

from __future__ import annotations

import math

import pytest
import torch

from models.entitynlm.data import Vocab, collate, document_text
from models.entitynlm.draws import draw
from models.entitynlm.lm import EntityNLMMarginal
from models.entitynlm.sampling import (
    DRAW_READINGS,
    importance_draws,
    importance_readings,
    joint_perplexity,
)
from tests.models.entitynlm.helpers import (
    enumeration_batch,
    random_documents,
    random_model,
)
from tests.models.entitynlm.reference import reference_of

VOCAB = Vocab(["<pad>", "unk", *[f"w{i}" for i in range(5)]])


def _models(seed=0, scope="sentence"):
    q = random_model(7, proposal=True, l_max=3, scale=1.5, seed=seed, lstm_scope=scope)
    lm = random_model(7, l_max=3, scale=1.5, seed=seed + 10, lstm_scope=scope)
    return lm, q


@pytest.mark.parametrize("scope", ["sentence", "document"])
def test_the_walks_word_terms_are_the_lms_words_given_each_draw(scope):
    """draw(words=True)'s fourth item is log P(x | z_i) of each draw, the one-word-at-a-time
    reference's word terms; the draws, log Q and log P are those of draw() without it."""
    lm, q = _models(1, scope)
    batch = collate(random_documents(21, sentences=True), VOCAB)
    with torch.no_grad():
        plain = draw(q, batch.tokens, batch.mask, 15, torch.Generator().manual_seed(3), lm=lm,
                     sent_start=batch.sent_start)  # fmt: skip
        draws, logq, logp, logw = draw(q, batch.tokens, batch.mask, 15,
                                       torch.Generator().manual_seed(3), lm=lm,
                                       sent_start=batch.sent_start, words=True)  # fmt: skip
        oracle = reference_of(lm).log_words(draws)
    assert torch.equal(logq, plain[1]) and torch.equal(logp, plain[2])
    assert torch.equal(draws.entity, plain[0].entity)
    assert torch.allclose(logw, oracle, atol=1e-4), (logw - oracle).abs().max()
    assert (logw > logp).all()  # the structure's terms are log-probabilities < 0
    with pytest.raises(ValueError, match="give lm"):
        draw(q, batch.tokens, batch.mask, 2, words=True)


def test_each_draw_reading_is_its_formula_over_the_same_draws():
    """From one set of draws (same generator seed): the readings as READINGS define them,
    recomputed here from draws scored by the reference model; the marginal is
    importance_draws'; Jensen orders the two unweighted averages."""
    lm, q = _models(2)
    batch = collate(random_documents(22, sentences=True), VOCAB)
    n = 30
    with torch.no_grad():
        out = importance_readings(lm, q, batch, n, torch.Generator().manual_seed(5))
        marginal, best = importance_draws(lm, q, batch, n, torch.Generator().manual_seed(5))
        draws, logq, _ = draw(q, batch.tokens, batch.mask, n, torch.Generator().manual_seed(5),
                              sent_start=batch.sent_start)  # fmt: skip
        ref = reference_of(lm)
        logp, logw = ref.log_joint(draws).view(-1, n), ref.log_words(draws).view(-1, n)
    logq = logq.view(-1, n)
    assert torch.equal(out["marginal"], marginal) and torch.equal(out["best_draw"], best)
    expect = {"words_is": torch.logsumexp(logw - logq, 1) - math.log(n),
              "words_q_mix": torch.logsumexp(logw, 1) - math.log(n),
              "words_q_mean": logw.mean(1)}  # fmt: skip
    for name in DRAW_READINGS:
        assert torch.allclose(out[name], expect[name], atol=1e-3), name
    assert torch.allclose(out["marginal"], torch.logsumexp(logp - logq, 1) - math.log(n),
                          atol=1e-3)  # fmt: skip
    # words_is drops log P(z) < 0 from each weight of the marginal; Jensen orders the two means
    assert (out["words_q_mean"] <= out["words_q_mix"] + 1e-5).all()
    assert (out["words_is"] > out["marginal"]).all()


def test_the_literal_reading_converges_to_the_sum_of_word_conditionals():
    """words_is estimates log sum_z P(x | z) (every structure Q can draw), words_q_mix
    log sum_z Q(z | x) P(x | z): checked against the exact enumeration of a tiny document at
    N = 20000."""
    lm = random_model(4, l_max=2, scale=1.0, seed=4)
    q = random_model(4, proposal=True, l_max=2, scale=1.0, seed=5)
    words = [2, 3, 2]
    batch, _ = enumeration_batch(words, 2)
    with torch.no_grad():
        logw, logq = lm.log_words(batch).double(), q.log_joint(batch).double()
        log_px = float(torch.logsumexp(lm.log_joint(batch).double(), 0))
        one = collate([batch_doc(words)], VOCAB)
        out = importance_readings(lm, q, one, 20_000, torch.Generator().manual_seed(1))
    exact_is = float(torch.logsumexp(logw, 0))
    exact_mix = float(torch.logsumexp(logw + logq, 0))
    assert math.isclose(float(out["words_is"][0]), exact_is, rel_tol=0.04, abs_tol=0.05)
    assert math.isclose(float(out["words_q_mix"][0]), exact_mix, rel_tol=0.04, abs_tol=0.05)
    assert exact_is > log_px  # sum_z P(x | z) >= sum_z P(z) P(x | z) = P(x)


def batch_doc(word_ids):
    from tests.models.entitynlm.helpers import doc

    return doc([VOCAB.words[i] for i in word_ids], [(0, -1, 0)] * len(word_ids))


def test_words_given_gold_is_the_sum_of_word_log_probs_under_the_gold_annotation():
    """Reading (c), joint_perplexity's words_given_rel_ppl: exp(-1/T sum_t log P(x_t | gold
    R, E, L)), with the sum taken here word by word by the reference implementation."""
    lm, _ = _models(3)
    docs = random_documents(23, count=6, sentences=True)
    with torch.no_grad():
        got = joint_perplexity(lm, docs, VOCAB, max_tokens=16)
        batch = collate(docs, VOCAB)
        words = reference_of(lm).token_log_probs(batch)["x"].double()
        joint = sum(v.double().sum() for v in reference_of(lm).token_log_probs(batch).values())
    tokens = int(batch.mask.sum())
    assert got["tokens"] == tokens
    assert math.isclose(got["words_given_rel_ppl"], math.exp(-float(words.sum()) / tokens),
                        rel_tol=1e-5)  # fmt: skip
    assert got["words_given_rel_ppl"] < got["joint_ppl"]
    assert math.isclose(got["joint_ppl"], math.exp(-float(joint) / tokens), rel_tol=1e-5)


def test_the_contract_serves_the_marginal_and_the_readings_are_seeded():
    """EntityNLMMarginal: loglikelihood_rolling is the marginal; importance_perplexity adds the
    readings of the same draws; a seed fixes them, another seed moves them."""
    lm, q = _models(4)
    docs = random_documents(24, count=5, sentences=True)

    def run(seed):
        scorer = EntityNLMMarginal(lm, q, VOCAB, samples=12, seed=seed, max_tokens=32)
        return scorer, scorer.importance_perplexity(docs)

    scorer, first = run(7)
    _, again = run(7)
    _, other = run(8)
    assert first["readings"] == again["readings"] and set(first["readings"]) == set(DRAW_READINGS)
    assert first["readings"]["words_is"] != other["readings"]["words_is"]
    rolling = scorer.loglikelihood_rolling([document_text(d) for d in docs])
    assert [s.loglikelihood for s in rolling] == [d["log_px"] for d in first["documents"].values()]
    total = sum(r["words_q_mean"] for r in scorer.readings)
    assert math.isclose(first["readings"]["words_q_mean"]["ppl"],
                        math.exp(-total / first["tokens"]), rel_tol=1e-9)  # fmt: skip
    assert first["readings"]["words_is"]["ppl"] < first["ppl"]


def test_the_training_metrics_carry_each_reading_per_seed_and_over_seeds():
    """importance_evaluation writes the draw readings per N (mean ± sd over sampling seeds);
    summarize gives every reading over training seeds, the marginal being the headline."""
    from flows.train_entitynlm import summarize
    from tests.models.entitynlm.test_train import _evaluate

    out, _ = _evaluate([2, 5])
    test = out["test"]
    assert set(test["readings"]) == set(DRAW_READINGS)
    assert test["readings"] == test["is_grid"]["5"]["readings"]
    assert sorted(test["readings"]["words_is"]["ppl_per_seed"]) == ["1", "2"]
    assert test["readings"]["words_is"]["ppl"]["n"] == 2
    results = []
    for seed, gold in ((1, 9.0), (2, 11.0)):
        results.append({"model": "entitynlm", "seed": seed, "vocab_size": 9, "documents": {},
                        "tokens": {}, "epochs_run": 1, "best_epoch": 1,
                        "train_tokens_per_s": None, "device": "cpu",
                        **{s: {**f, "joint_ppl": 10.0, "words_given_rel_ppl": gold}
                           for s, f in out.items()}})  # fmt: skip
    summary = summarize("entitynlm", results)
    readings = summary["readings"]
    assert list(readings) == ["marginal", *DRAW_READINGS, "words_gold"]
    assert readings["marginal"]["test_ppl"] == summary["test_ppl"]
    assert readings["words_gold"]["test_ppl"] == {"mean": 10.0, "std": 1.0, "n": 2}
    head = test["readings"]["words_q_mean"]["ppl"]["mean"]
    assert readings["words_q_mean"]["per_seed"]["2"]["test_ppl"] == pytest.approx(head, abs=1e-6)
    old = [{k: v for k, v in r.items()} for r in results]
    for r in old:  # seeds measured before the readings: no block
        r["test"] = {k: v for k, v in r["test"].items() if k != "readings"}
        r["dev"] = {k: v for k, v in r["dev"].items() if k != "readings"}
    assert "readings" not in summarize("entitynlm", old)
    assert "readings" not in summarize("rnnlm", [{**results[0], "model": "rnnlm",
                                                        "dev": {"ppl": 3.0}}])  # fmt: skip
