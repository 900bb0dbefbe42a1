"""Reranking k-best antecedent trees (Ji et al. 2017 §5.2) with scorers whose answer is known."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from models.entitynlm.rerank import (
    Candidate,
    coref_scorer,
    entitynlm_view,
    evaluate,
    grid_search,
    lm_scores,
    oracle_scorer,
    read_kbest,
    rerank,
)
from tasks.core.schema import KBEST_SCHEMA


def kbest_table(lists: dict[str, list[tuple[float, list[list[tuple[int, int]]]]]]) -> pa.Table:
    rows = []
    for doc_id, trees in lists.items():
        for rank, (score, chains) in enumerate(trees):
            mentions = [
                {"start": s, "end": e, "cluster": c} for c, ch in enumerate(chains) for s, e in ch
            ]
            rows.append(
                {
                    "doc_id": doc_id,
                    "rank": rank,
                    "score": score,
                    "padded": False,
                    "mentions": mentions,
                }
            )
        last = rows[-1]
        rows.append({**last, "rank": last["rank"] + 1, "padded": True})  # padding is dropped
    return pa.Table.from_pylist(rows, schema=KBEST_SCHEMA)


M = [(2 * i, 2 * i + 1) for i in range(8)]  # eight one-token mentions
GOLD = [[M[0], M[2], M[4]], [M[1], M[3]], [M[5], M[6], M[7]]]
WRONG_1 = [[M[0], M[1], M[2]], [M[3], M[4]], [M[5], M[6], M[7]]]
WRONG_2 = [[M[0], M[2], M[4], M[5]], [M[6], M[7]]]


def documents(ids):
    return {
        d: {"doc_id": d, "split": "test", "tokens": ["w"] * 16, "sentence_starts": [0, 8]}
        for d in ids
    }


@pytest.fixture
def corpus():
    """12 documents whose 1-best is wrong in half of them; gold is always in the list."""
    lists, key = {}, {}
    for i in range(12):
        trees = (
            [(5.0, WRONG_1), (4.0, GOLD), (3.5, WRONG_2)]
            if i % 2
            else [(5.0, GOLD), (4.0, WRONG_1)]
        )
        lists[f"d{i:02d}"] = trees
        key[f"d{i:02d}"] = GOLD
    candidates = read_kbest(kbest_table(lists))
    return candidates, documents(lists), key


def test_read_kbest_drops_padding_and_keeps_chains(corpus):
    candidates, _, _ = corpus
    assert [c.rank for c in candidates["d01"]] == [0, 1, 2]
    assert candidates["d01"][1].clusters == tuple(tuple(c) for c in GOLD)
    assert candidates["d00"][0].coref_score == 5.0


def test_coref_score_as_scorer_reproduces_the_one_best(corpus):
    candidates, docs, key = corpus
    scores = lm_scores(candidates, docs, coref_scorer(candidates))
    report = evaluate(candidates, scores, key, key, trials=200)
    assert report.test["rerank_lm"] == report.test["baseline"]
    assert report.changed["rerank_lm"] == 0
    assert report.p_values["rerank_lm"] == 1.0


def test_oracle_scorer_raises_f1_significantly(corpus):
    candidates, docs, key = corpus
    scores = lm_scores(candidates, docs, oracle_scorer(key, exclude_singletons=True))
    report = evaluate(candidates, scores, key, key, trials=2000, seed=3)
    assert report.test["rerank_lm"]["conll_f1"] == pytest.approx(1.0)
    assert report.test["baseline"]["conll_f1"] < 0.9
    assert report.changed["rerank_lm"] == 6
    assert report.p_values["rerank_lm"] < 0.05


def test_grid_search_finds_the_only_working_mix():
    """Gold (coref 1.25, lm 1.25) wins iff 1.25 > 2 alpha (the coref-favoured tree loses) and
    1.25 > 2 - 2 alpha (the lm-favoured tree loses): alpha in (0.375, 0.625); ties of dev F1 go
    to the largest alpha of the grid, 0.6."""
    trees = {
        "x": [
            Candidate(0, 2.0, ((M[0], M[1]),)),
            Candidate(1, 1.25, ((M[0], M[2]),)),
            Candidate(2, 0.0, ((M[1], M[2]),)),
        ]
    }
    scores = {"x": np.array([0.0, 1.25, 2.0])}
    key = {"x": [[M[0], M[2]]]}
    alpha, grid = grid_search(trees, scores, key)
    assert alpha == pytest.approx(0.6)
    assert {a for a, f in grid.items() if f == 1.0} == {0.4, 0.45, 0.5, 0.55, 0.6}
    assert rerank(trees, scores, 1.0).choice == {"x": 0}
    assert rerank(trees, scores, 0.0).choice == {"x": 2}
    assert rerank(trees, scores, alpha).choice == {"x": 1}


def test_candidate_as_entitynlm_view():
    """Chains -> R/E/L with the view stage's rules: (4, 5) is nested in (4, 6) and dropped."""
    doc = documents(["d"])["d"]
    view = entitynlm_view(doc, (((0, 1), (2, 3), (4, 5)), ((4, 6), (12, 13))))
    assert view["is_mention"][:7] == [True, False, True, False, True, True, False]
    assert view["entity"][:7] == [0, -1, 0, -1, 1, 1, -1]
    assert view["entity"][12] == 1
    assert view["remaining"][4:6] == [2, 1]
    assert view["num_entities"] == 2


def test_scorer_with_score_many_is_called_once_per_document(corpus):
    candidates, docs, _ = corpus

    class Batched:
        calls = 0

        def score_many(self, doc, clusterings):
            Batched.calls += 1
            return [-len(c) for c in clusterings]

    scores = lm_scores(candidates, docs, Batched())
    assert Batched.calls == len(candidates)
    assert scores["d01"].tolist() == [-3.0, -3.0, -2.0]
