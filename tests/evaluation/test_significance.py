"""Approximate randomization and the paired t-test against answers known in advance."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from tasks.evaluation.coref import conll_f1, score_coreference
from tasks.evaluation.significance import (
    approximate_randomization,
    conll_counts,
    conll_f1_from_counts,
    conll_randomization,
    paired_t_test,
)


def mean_of(n: int):
    return lambda sums: sums[..., 0] / n


def exact_permutation_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided paired permutation test by enumerating all 2^n swaps (the exact AR answer)."""
    observed = abs(a.mean() - b.mean())
    hits = 0
    for swap in itertools.product((False, True), repeat=len(a)):
        s = np.array(swap)
        a2, b2 = np.where(s, b, a), np.where(s, a, b)
        hits += abs(a2.mean() - b2.mean()) >= observed - 1e-12
    return hits / 2 ** len(a)


def test_identical_systems_give_p_one():
    counts = np.random.default_rng(1).integers(0, 10, size=(30, 4))
    result = approximate_randomization(counts, counts, lambda s: s[..., 0] / s[..., 1], trials=500)
    assert result.difference == 0.0
    assert result.p_value == 1.0
    assert result.at_least_as_extreme == 500


def test_clearly_better_system_gets_small_p():
    rng = np.random.default_rng(2)
    b = rng.normal(0.5, 0.05, size=60)
    a = b + 0.1 + rng.normal(0, 0.01, size=60)  # better on every document
    result = approximate_randomization(a, b, mean_of(60), trials=2000, seed=3)
    # no swap pattern but the identity and the full swap reaches the observed gap: p is the floor
    assert result.at_least_as_extreme == 0
    assert result.p_value == pytest.approx(1 / 2001)


def test_matches_exact_permutation_test_on_tiny_case():
    a = np.array([0.61, 0.55, 0.70, 0.52, 0.66, 0.58, 0.49, 0.71])
    b = np.array([0.58, 0.57, 0.62, 0.50, 0.60, 0.59, 0.47, 0.65])
    exact = exact_permutation_p(a, b)  # 2^8 = 256 patterns
    result = approximate_randomization(a, b, mean_of(len(a)), trials=20_000, seed=4)
    # binomial standard error of the Monte Carlo estimate: sqrt(p(1-p)/R) ~ 0.002
    assert 0.01 < exact < 0.5
    assert result.p_value == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 20_000))


def test_seeded():
    a = np.random.default_rng(0).normal(size=20)
    b = a + np.random.default_rng(1).normal(0.2, 1.0, size=20)
    first = approximate_randomization(a, b, mean_of(20), trials=2500, seed=7)  # 3 chunks
    assert first == approximate_randomization(a, b, mean_of(20), trials=2500, seed=7)
    assert 0 < first.at_least_as_extreme < 2500


def test_conll_counts_sum_to_the_scorer_totals():
    key = {
        "d1": [[(0, 1), (3, 4), (6, 7)], [(9, 10), (12, 13)]],
        "d2": [[(0, 2), (5, 6)]],
        "d3": [[(1, 2), (4, 5), (8, 9), (11, 12)]],
    }
    response = {
        "d1": [[(0, 1), (3, 4)], [(6, 7), (9, 10), (12, 13)]],
        "d2": [[(0, 2), (5, 6), (8, 9)]],
        "d3": [[(1, 2), (4, 5)], [(8, 9), (11, 12)]],
    }
    counts = conll_counts(key, response)
    assert counts.shape == (3, 12)
    expected = conll_f1(score_coreference(key, response))
    assert float(conll_f1_from_counts(counts.sum(axis=0))) == pytest.approx(expected, abs=1e-12)


def test_conll_randomization_prefers_the_gold_response():
    rng = np.random.default_rng(5)
    key, bad = {}, {}
    for d in range(25):
        mentions = [(3 * i, 3 * i + 1) for i in range(8)]
        key[f"d{d}"] = [mentions[0::2], mentions[1::2]]
        shuffled = list(mentions)
        rng.shuffle(shuffled)
        bad[f"d{d}"] = [shuffled[:4], shuffled[4:]]
    result = conll_randomization(key, key, bad, trials=2000, seed=1)
    assert result.metric_a == pytest.approx(1.0)
    assert result.metric_b < 1.0
    assert result.p_value < 0.01
    same = conll_randomization(key, bad, bad, trials=200)
    assert same.p_value == 1.0


def test_paired_t_test_is_scipys():
    rng = np.random.default_rng(6)
    a = rng.normal(0.6, 0.1, size=40)
    b = a - 0.02 + rng.normal(0, 0.03, size=40)
    result = paired_t_test(a, b)
    reference = stats.ttest_rel(a, b)
    assert result.p_value == pytest.approx(reference.pvalue)
    assert result.statistic == pytest.approx(reference.statistic)
    assert result.mean_difference == pytest.approx(np.mean(a - b))
    assert paired_t_test(a, a).p_value == 1.0


def test_shape_errors_are_reported():
    with pytest.raises(ValueError, match="one shape"):
        approximate_randomization(np.ones((3, 2)), np.ones((4, 2)), lambda s: s[..., 0])
    with pytest.raises(ValueError, match="n >= 2"):
        paired_t_test([1.0], [2.0])
