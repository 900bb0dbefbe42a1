"""Importance-sampled marginal (Ji et al. 2017, Eq. 11) against the exact sum over every
(R, E, L) of tiny documents, and the exactness of that enumeration itself; the direction of
the log estimate's bias and the lower bounds beside it (issue #33.8)."""

from __future__ import annotations

import math

import pytest
import torch

from models.entitynlm.data import Batch
from models.entitynlm.lm import EntityNLMMarginal
from models.entitynlm.sampling import (
    document_records,
    importance_bounds,
    importance_bounds_by_run,
    importance_log_marginal,
    log_joint_documents,
)
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
        scorer = EntityNLMMarginal(lm, q, vocab_of(4), samples=4, max_tokens=6,
                                   progress=progress)  # fmt: skip
        out = scorer.importance_perplexity(docs)
    assert progress.done == 5 and out["tokens"] == 15 and math.isfinite(out["ppl"])
    assert "importance sampling test: 5/5 docs" in caplog.text


# --------------------------------------------------------------------------- bias and bounds (#33.8)


def _replicated(words, starts, rows):
    """One batch of `rows` copies of a document: one independent estimate per row."""
    tokens = torch.tensor([words] * rows)
    first = torch.tensor([[i in starts for i in range(len(words))]] * rows)
    return Batch(tokens, torch.ones_like(tokens, dtype=torch.bool),
                 *(torch.zeros_like(tokens),) * 3, [], first)  # fmt: skip


def test_log_of_the_estimate_is_low_on_average_and_rises_with_n():
    """E[log P̂_N(x)] <= log P(x) (Jensen: P̂_N is unbiased, log is concave), rising towards it
    as N grows (Burda et al. 2016); the gap is ~ rel_sd^2 / (2N) (delta method). 8000
    estimates per N against the enumerated marginal of a 5-word, two-sentence document."""
    lm = random_model(vocab_size=4, l_max=L_MAX, scale=1.5, seed=1)
    q = random_model(vocab_size=4, proposal=True, l_max=L_MAX, scale=1.0, seed=2)
    words, starts = [2, 3, 2, 3, 2], (0, 3)
    exact, rel_sd = _exact(lm, q, words, starts)
    assert rel_sd > 0.5  # a proposal far enough from the posterior for a visible bias
    batch = _replicated(words, starts, 8000)
    means, sems = {}, {}
    for n in (1, 10, 100):
        est = importance_log_marginal(lm, q, batch, n, torch.Generator().manual_seed(n)).double()
        means[n], sems[n] = float(est.mean()), float(est.std()) / math.sqrt(len(est))
        assert means[n] <= exact + 3 * sems[n], (n, means[n], exact, sems[n])
    assert exact - means[1] > 5 * sems[1]  # low, beyond the noise
    assert means[1] + 3 * sems[1] < means[10] and means[10] + 3 * sems[10] < means[100] + 1e-9
    for n in (10, 100):
        gap = rel_sd**2 / (2 * n)
        assert abs((exact - means[n]) - gap) < 0.5 * gap + 3 * sems[n], (n, exact - means[n], gap)


def test_the_bounds_are_below_the_exact_marginal():
    """Per document, the best draw's log P(x, z*) and the gold joint log P(x, z_gold) are <=
    log P(x) (P(x) sums P(x, z) over every z): always, not only on average. The best draw is
    one of the enumerated annotations, so it is at most the best of them."""
    lm = random_model(vocab_size=4, l_max=L_MAX, scale=1.5, seed=1)
    q = random_model(vocab_size=4, proposal=True, l_max=L_MAX, scale=1.0, seed=2)
    vocab = vocab_of(4)
    gold = [[(1, 0, 2), (1, 0, 1), (0, -1, 0), (1, 0, 1)], [(0, -1, 0), (1, 0, 1), (1, 1, 1)],
            [(1, 0, 1), (1, 1, 2), (1, 1, 1), (0, -1, 0), (1, 0, 1)]]  # fmt: skip
    words = [[2, 3, 2, 3], [3, 2, 2], [2, 2, 3, 3, 2]]
    docs = [doc([vocab.words[i] for i in w], g, f"a/d{k}", (0, 2))
            for k, (w, g) in enumerate(zip(words, gold, strict=True))]  # fmt: skip
    runs = {n: [EntityNLMMarginal(lm, q, vocab, samples=n, seed=s).importance_perplexity(docs)
                for s in (1, 2)] for n in (1, 10, 200)}  # fmt: skip
    joint = log_joint_documents(lm, docs, vocab)
    records = {r["doc_id"]: r for r in document_records(docs, runs, joint)}
    for d, w in zip(docs, words, strict=True):
        batch, _ = enumeration_batch(w, L_MAX, (0, 2))
        with torch.no_grad():
            all_joints = lm.log_joint(batch)
        exact, top = float(torch.logsumexp(all_joints, 0)), float(all_joints.max())
        r = records[d.doc_id]
        assert r["best_draw"] <= top + 1e-4 and r["gold_joint"] <= exact + 1e-5
        assert r["bound"] == max(r["best_draw"], r["gold_joint"]) <= exact + 1e-4
        assert r["best_draw"] == max(x["documents"][d.doc_id]["best_draw"]
                                     for rs in runs.values() for x in rs)  # fmt: skip
        assert r["best_draw"] > top - 1.0  # 400 draws of a 5-word document find a good one
        assert [len(v) for v in r["log_px"].values()] == [2, 2, 2]


def test_importance_bounds_sum_documents_into_perplexities_per_corpus():
    """exp(-sum / words) of each figure, by doc_id's run prefix and over all; an estimate under
    its document's bound is counted per N."""
    docs = [doc(["w0"] * 2, [(0, -1, 0)] * 2, "gum/x"), doc(["w0"] * 3, [(0, -1, 0)] * 3, "lit/y")]
    per = lambda lp, best: {"log_px": lp, "best_draw": best}  # noqa: E731
    runs = {10: [{"documents": {"gum/x": per(-5.0, -4.0), "lit/y": per(-6.0, -7.0)}},
                 {"documents": {"gum/x": per(-3.0, -6.0), "lit/y": per(-6.5, -6.2)}}],
            100: [{"documents": {"gum/x": per(-3.5, -4.5), "lit/y": per(-5.0, -8.0)}},
                  {"documents": {"gum/x": per(-3.4, -5.0), "lit/y": per(-5.1, -7.0)}}]}  # fmt: skip
    gold = {"gum/x": -4.2, "lit/y": -5.9}
    records = document_records(docs, runs, gold)
    assert [(r["run"], r["best_draw"], r["bound"]) for r in records] == [
        ("gum", -4.0, -4.0), ("lit", -6.2, -5.9)]  # fmt: skip
    total = importance_bounds(records)
    assert total["documents"] == 2 and total["tokens"] == 5 and total["estimates"] == 4
    assert total["under_bound"] == {"10": 3, "100": 0}  # -5 < -4; -6, -6.5 < -5.9
    ppl = lambda s, t: math.exp(-s / t)  # noqa: E731
    assert math.isclose(total["is_ppl"]["10"]["mean"], (ppl(-11.0, 5) + ppl(-9.5, 5)) / 2)
    assert total["is_ppl"]["100"]["n"] == 2
    assert math.isclose(total["best_draw_ppl"], ppl(-10.2, 5))
    assert math.isclose(total["gold_joint_ppl"], ppl(-10.1, 5))
    assert math.isclose(total["bound_ppl"], ppl(-9.9, 5))
    by_run = importance_bounds_by_run(records)
    assert sorted(by_run) == ["gum", "lit"]
    assert by_run["lit"]["tokens"] == 3 and by_run["lit"]["under_bound"] == {"10": 2, "100": 0}
    assert math.isclose(by_run["gum"]["bound_ppl"], ppl(-4.0, 2))
