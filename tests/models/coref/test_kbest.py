"""models/coref/kbest.py: Ji et al. (2017) §5.2 approximate k-best antecedent trees."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
import torch

from models.coref.data import CorefDocument, build_vocab, tensorize
from models.coref.kbest import chains, kbest_for_documents, kbest_trees, trees_from_output
from models.coref.model import CorefConfig, CorefModel
from tasks.core.schema import KBEST_SCHEMA

NEG = -math.inf
SPANS = [(0, 1), (2, 3), (4, 5), (6, 7)]  # m0..m3
CANDIDATES = [[], [0], [1, 0], [2, 1, 0]]  # nearest first
SCORES = [
    [0.0],
    [0.0, 2.0],  # m1 -> m0 best (gap of the dummy: 2.0)
    [0.0, 1.0, 0.5],  # m2 -> m1 best; m2 -> m0 (0.5) gives the same chains
    [0.0, -1.0, -3.0, -0.2],  # m3 non-anaphoric; m3 -> m0 costs only 0.2
]


# one torch thread: deterministic float sums and no spinning on a busy 2-core machine
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_hand_computed_list_skips_duplicate_chains_and_pads():
    trees = kbest_trees(SPANS, CANDIDATES, SCORES, k=6)
    m0, m1, m2, m3 = SPANS
    assert [t.clusters for t in trees] == [
        ((m0, m1, m2),),  # best tree, score 2 + 1 + 0
        ((m0, m1, m2, m3),),  # m3 -> m0 (gap 0.2)
        # m2 -> m0 (gap 0.5) induces the best tree's chains: skipped
        ((m0, m1),),  # m2 -> dummy (gap 1.0; before m3 -> m2, same gap, a duplicate)
        ((m1, m2),),  # m1 -> dummy (gap 2.0); m3 -> m1 (gap 3.0) is a duplicate
        ((m1, m2),),  # padding: the last tree added, repeated
        ((m1, m2),),
    ]
    assert [t.score for t in trees] == pytest.approx([3.0, 2.8, 2.0, 1.0, 1.0, 1.0])
    assert [t.padded for t in trees] == [False] * 4 + [True] * 2
    assert trees[1].antecedents == (-1, 0, 1, 0)


def test_k_distinct_clusterings_sorted_by_score_best_is_argmax():
    torch.manual_seed(3)
    docs = [_doc("a", 40), _doc("b", 0)]
    vocab = build_vocab(docs)
    cfg = CorefConfig(vocab_size=len(vocab.words), num_chars=len(vocab.chars),
                      num_genres=len(vocab.genres), embedding_dim=6, char_embedding_dim=3,
                      char_filters=2, lstm_size=5, ffnn_size=6, feature_size=3,
                      max_antecedents=8)  # fmt: skip
    model = CorefModel(cfg).eval()
    output = model.predict(tensorize(docs[0], vocab))
    spans, trees = trees_from_output(output, k=20)
    assert len(trees) == 20
    distinct = [t for t in trees if not t.padded]
    assert len({t.clusters for t in distinct}) == len(distinct) > 1
    scores = [t.score for t in trees]
    assert scores == sorted(scores, reverse=True)
    # rank 0 is the model's own decoding (argmax antecedent per mention)
    assert trees[0].clusters == tuple(sorted(tuple(sorted(c)) for c in output.clusters()))
    assert trees[0].score == pytest.approx(float(output.scores.max(dim=1).values.sum()), rel=1e-5)
    # every tree is the best one with exactly one antecedent changed
    for t in distinct[1:]:
        assert sum(a != b for a, b in zip(t.antecedents, trees[0].antecedents, strict=True)) == 1
        assert t.clusters == chains(spans, t.antecedents)

    table = kbest_for_documents(model, vocab, docs, k=5)
    assert table.schema.equals(KBEST_SCHEMA)
    rows = table.to_pylist()
    assert [(r["doc_id"], r["rank"]) for r in rows] == [
        (d, r) for d in ("a", "b") for r in range(5)
    ]
    empty = [r for r in rows if r["doc_id"] == "b"]
    assert all(r["mentions"] == [] and r["score"] == 0.0 for r in empty)
    assert [r["padded"] for r in empty] == [False, True, True, True, True]
    first = rows[0]["mentions"]
    assert {(m["start"], m["end"]) for m in first} == {m for c in trees[0].clusters for m in c}


def test_unavailable_choices_and_bad_input():
    # -inf marks a masked candidate: never proposed as a swap
    trees = kbest_trees([(0, 1), (1, 2)], [[], [0]], [[0.0], [0.0, NEG]], k=3)
    assert [t.clusters for t in trees] == [(), (), ()]
    assert [t.padded for t in trees] == [False, True, True]
    with pytest.raises(ValueError, match="precede"):
        kbest_trees([(0, 1), (1, 2)], [[], [1]], [[0.0], [0.0, 1.0]], k=2)
    with pytest.raises(ValueError):
        kbest_trees(SPANS, CANDIDATES, SCORES, k=0)
    assert isinstance(KBEST_SCHEMA, pa.Schema)


def _doc(doc_id: str, n: int) -> CorefDocument:
    words = ["the", "cat", "sat", "on", "mat", "it", "was", "happy", "."]
    tokens = [words[i % len(words)] for i in range(n)]
    starts = list(range(0, n, 9))
    return CorefDocument(doc_id, "test", tokens, starts if n else [], "news", None, [])
