"""Significance tests for paired system comparisons.

- Approximate randomization (Noreen 1989, "Computer-Intensive Methods for Testing Hypotheses",
  ch. 2; the test Ji et al. 2017 §5.2 apply to coreference reranking through
  github.com/smartschat/art): under the null hypothesis the two systems' outputs are
  exchangeable per document, so each trial swaps the two outputs of every document with
  probability 1/2 and recomputes the corpus-level metric of both; the p-value is the share of
  trials whose absolute difference is at least the observed one, p = (count + 1) / (R + 1)
  (Noreen's add-one estimator, so p is never 0).
  The corpus metrics here are functions of per-document counts summed over documents (the
  CoNLL scorer aggregates micro: numerators and denominators of recall and precision are
  summed, tasks/evaluation/coref.py), so a trial is one matrix product: the swapped sums are
  sum_a + swap @ (b - a), and all R trials are scored at once.
- Paired t-test over per-item scores (scipy.stats.ttest_rel), as Stylianou & Vlahavas (CoreLM)
  Table 2 and Ji et al. §5.3 report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from tasks.evaluation.coref import CONLL_METRICS, Corpus, score_coreference

TRIALS = 10_000  # R; Noreen's and art's default order of magnitude
CHUNK = 1_000  # trials scored per matrix product (bounds memory: CHUNK x documents)


@dataclass(frozen=True)
class RandomizationResult:
    """Observed metric of both systems, their difference (a - b), the p-value and how it came."""

    metric_a: float
    metric_b: float
    difference: float
    p_value: float
    trials: int
    at_least_as_extreme: int


def approximate_randomization(
    counts_a: np.ndarray | Sequence[Sequence[float]],
    counts_b: np.ndarray | Sequence[Sequence[float]],
    metric: Callable[[np.ndarray], np.ndarray],
    *,
    trials: int = TRIALS,
    seed: int = 0,
) -> RandomizationResult:
    """Two-sided paired approximate randomization test over documents.

    counts_a, counts_b: (documents, k) per-document counts of the two systems (a 1-d array is
    one count per document); metric: summed counts (..., k) -> corpus metric (...), vectorised
    over leading axes (e.g. `conll_f1_from_counts`, or `lambda s: s[..., 0] / n` for a mean).
    """
    a, b = _as_counts(counts_a), _as_counts(counts_b)
    if a.shape != b.shape:
        raise ValueError(f"paired counts must have one shape, got {a.shape} and {b.shape}")
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    sum_a, sum_b = a.sum(axis=0), b.sum(axis=0)
    metric_a, metric_b = float(metric(sum_a)), float(metric(sum_b))
    observed = abs(metric_a - metric_b)
    delta = b - a  # what swapping a document moves from a's sums to b's (and back)
    rng = np.random.default_rng(seed)
    extreme = 0
    for done in range(0, trials, CHUNK):
        swap = rng.random((min(CHUNK, trials - done), len(a))) < 0.5
        moved = swap.astype(np.float64) @ delta
        differences = np.abs(metric(sum_a + moved) - metric(sum_b - moved))
        # a relative tolerance keeps float noise in recomputing the same sums from deciding
        extreme += int(np.sum(differences >= observed - 1e-12 * max(1.0, observed)))
    return RandomizationResult(
        metric_a=metric_a,
        metric_b=metric_b,
        difference=metric_a - metric_b,
        p_value=(extreme + 1) / (trials + 1),
        trials=trials,
        at_least_as_extreme=extreme,
    )


def _as_counts(values: np.ndarray | Sequence[Sequence[float]]) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or len(array) == 0:
        raise ValueError(f"expected (documents, k) counts with documents >= 1, got {array.shape}")
    return array


# --------------------------------------------------------------------------- CoNLL F1


def conll_counts(
    key: Corpus, response: Corpus, documents: Sequence[str] | None = None, **options
) -> np.ndarray:
    """(documents, 12) per-document MUC, B3, CEAF-e counts (recall num/den, precision num/den).

    documents: the order of the rows (default: the key's); options as score_coreference
    (e.g. exclude_singletons). Summing rows gives exactly score_coreference's micro totals.
    """
    documents = list(key) if documents is None else list(documents)
    rows = []
    for doc_id in documents:
        scores = score_coreference(
            {doc_id: key.get(doc_id, [])},
            {doc_id: response.get(doc_id, [])},
            metrics=CONLL_METRICS,
            **options,
        )
        rows.append([c for m in CONLL_METRICS for c in scores[m].counts])
    return np.asarray(rows, dtype=np.float64).reshape(len(documents), 4 * len(CONLL_METRICS))


def f1_from_counts(counts: np.ndarray) -> np.ndarray:
    """F1 from (..., 4) recall num/den, precision num/den; 0 where undefined (as coref._ratios)."""
    counts = np.asarray(counts, dtype=np.float64)
    r_num, r_den, p_num, p_den = np.moveaxis(counts, -1, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(r_den > 0, r_num / r_den, 0.0)
        precision = np.where(p_den > 0, p_num / p_den, 0.0)
        total = recall + precision
        return np.where(total > 0, 2 * recall * precision / total, 0.0)


def conll_f1_from_counts(sums: np.ndarray) -> np.ndarray:
    """CoNLL F1 (mean of MUC, B3, CEAF-e F1) from summed `conll_counts` rows, (..., 12) -> (...)."""
    sums = np.asarray(sums, dtype=np.float64)
    per_metric = sums.reshape(*sums.shape[:-1], len(CONLL_METRICS), 4)
    return f1_from_counts(per_metric).mean(axis=-1)


def conll_randomization(
    key: Corpus,
    response_a: Corpus,
    response_b: Corpus,
    *,
    trials: int = TRIALS,
    seed: int = 0,
    **options,
) -> RandomizationResult:
    """Approximate randomization on the CoNLL F1 of two responses, paired over the key's documents."""
    documents = list(key)
    return approximate_randomization(
        conll_counts(key, response_a, documents, **options),
        conll_counts(key, response_b, documents, **options),
        conll_f1_from_counts,
        trials=trials,
        seed=seed,
    )


# --------------------------------------------------------------------------- paired t-test


@dataclass(frozen=True)
class TTestResult:
    statistic: float
    p_value: float
    mean_difference: float
    n: int


def paired_t_test(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, **options
) -> TTestResult:
    """Two-sided paired t-test (scipy.stats.ttest_rel) of per-item scores a vs b.

    options go to ttest_rel (e.g. alternative="greater"). Identical samples give p = 1 (scipy
    returns NaN for zero variance of the differences; no difference is no evidence).
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"paired samples need one 1-d shape with n >= 2, got {a.shape}, {b.shape}")
    result = stats.ttest_rel(a, b, **options)
    statistic, p_value = float(result.statistic), float(result.pvalue)
    if np.all(a == b):
        statistic, p_value = 0.0, 1.0
    return TTestResult(statistic, p_value, float(np.mean(a - b)), len(a))


def as_dict(result: RandomizationResult | TTestResult) -> Mapping[str, float]:
    """Flat metrics for DVC/MLflow."""
    return dict(result.__dict__)


__all__ = [
    "TRIALS",
    "RandomizationResult",
    "TTestResult",
    "approximate_randomization",
    "as_dict",
    "conll_counts",
    "conll_f1_from_counts",
    "conll_randomization",
    "f1_from_counts",
    "paired_t_test",
]
