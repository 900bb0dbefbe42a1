"""EntityNLM R/E/L and CoreLM layers (tasks/graphs/views.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.core.errors import CorefreproError
from tasks.core.storage import to_table
from tasks.graphs.views import (
    build_corelm_view,
    build_entitynlm_view,
    entitynlm_row,
    nesting_layers,
    resolve_nesting,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def _doc(tokens, doc_id="toy/d", split="train"):
    return {"doc_id": doc_id, "split": split, "tokens": tokens, "sentence_starts": [0]}


def _mentions(doc_id, spans, annotator="gold"):
    return [
        {"doc_id": doc_id, "start": s, "end": e, "cluster": c, "annotator": annotator}
        for s, e, c in spans
    ]


# --------------------------------------------------------------------------- EntityNLM

FIG1_TEXT = (
    "John wanted to go to the coffee shop in downtown Copenhagen . "
    "He was told that it sold the best beans ."
)
FIG1 = FIG1_TEXT.split(" ")
FIG1_SPANS = [(0, 1, 1), (5, 8, 2), (9, 11, 3), (12, 13, 1), (16, 17, 2), (18, 21, 4)]


def test_entitynlm_reproduces_figure_2():
    """Ji et al. 2017 Fig. 2, in the view's storage conventions (0-based E, -1 / 0 = none)."""
    row = entitynlm_row(_doc(FIG1), FIG1_SPANS)
    r = [1, 0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 1, 1, 1, 0]
    e = [1, 0, 0, 0, 0, 2, 2, 2, 0, 3, 3, 0, 1, 0, 0, 0, 2, 0, 4, 4, 4, 0]  # 0 = clock
    ell = [1, 1, 1, 1, 1, 3, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 3, 2, 1, 1]
    assert row["is_mention"] == [bool(x) for x in r]
    assert row["entity"] == [x - 1 for x in e]
    assert row["remaining"] == [x if m else 0 for x, m in zip(ell, r, strict=True)]
    assert row["num_entities"] == 4


#        0       1     2          3      4      5     6     7        8      9
TOKENS = ["Mary", "'s", "brother", "met", "Tom", ".", "He", "liked", "her", "."]
SPANS = [(0, 3, 7), (0, 1, 9), (4, 5, 3), (6, 7, 7), (8, 9, 9)]


def test_entitynlm_outermost_only_and_singletons_dropped():
    stats = Counter()
    row = entitynlm_row(_doc(TOKENS), SPANS, drop_singletons=True, stats=stats)
    assert row["is_mention"] == [True, True, True, False, False, False, True, False, True, False]
    # "Mary 's brother" -> entity 0; embedded "Mary" gone, so "her" introduces entity 1
    assert row["entity"] == [0, 0, 0, -1, -1, -1, 0, -1, 1, -1]
    assert row["remaining"] == [3, 2, 1, 0, 0, 0, 1, 0, 1, 0]
    assert row["num_entities"] == 2
    assert stats["singleton_mentions_dropped"] == 1  # "Tom"
    assert stats["embedded_mentions_dropped"] == 1  # "Mary" inside "Mary 's brother"
    assert stats["mentions_kept"] == 3

    kept = entitynlm_row(_doc(TOKENS), SPANS, drop_singletons=False)
    assert kept["entity"] == [0, 0, 0, -1, 1, -1, 0, -1, 2, -1]  # "Tom" is entity 1
    assert kept["num_entities"] == 3


def test_entitynlm_l_max_truncates_or_skips_and_counts():
    tokens = ["the", "very", "old", "man", "slept", ".", "he", "woke"]
    spans = [(0, 4, 0), (6, 7, 0)]
    stats = Counter()
    row = entitynlm_row(_doc(tokens), spans, l_max=3, stats=stats)
    assert row["is_mention"] == [True, True, True, False, False, False, True, False]
    assert row["remaining"] == [3, 2, 1, 0, 0, 0, 1, 0]
    assert stats["long_mentions_truncated"] == 1
    stats = Counter()
    row = entitynlm_row(_doc(tokens), spans, l_max=3, long_mentions="skip", stats=stats)
    assert row["is_mention"] == [False] * 6 + [True, False]
    assert row["entity"] == [-1] * 6 + [0, -1]
    assert stats["long_mentions_skipped"] == 1
    with pytest.raises(CorefreproError, match="long_mentions"):
        entitynlm_row(_doc(tokens), spans, long_mentions="cap")


def test_entitynlm_view_table_and_errors():
    docs = [_doc(TOKENS, "toy/b"), _doc(FIG1, "toy/a", "dev")]
    mentions = _mentions("toy/b", SPANS) + _mentions("toy/a", FIG1_SPANS)
    built = build_entitynlm_view(docs, mentions, drop_singletons=True)
    assert [r["doc_id"] for r in built.rows] == ["toy/a", "toy/b"]
    assert built.rows[0]["num_entities"] == 2  # Fig. 1 without its two singletons
    assert to_table("entitynlm_view", built.rows).num_rows == 2
    with pytest.raises(CorefreproError, match="beyond document toy/b"):
        build_entitynlm_view(docs, _mentions("toy/b", [(9, 11, 0)]))
    with pytest.raises(CorefreproError, match="several annotators"):
        build_entitynlm_view(docs, mentions + _mentions("toy/a", [(0, 1, 0)], "stanza"))


# --------------------------------------------------------------------------- nesting / CoreLM

#          0       1     2      3      4         5    6       7
NESTED = ["John", "'s", "big", "dog", "barked", ".", "John", "left"]
# [[John]'s [big [dog]]] barked . [John] left
NESTED_SPANS = [(0, 4, 10), (0, 1, 20), (2, 4, 30), (3, 4, 40), (6, 7, 20)]


def test_nesting_layers():
    layers, crossing = nesting_layers(NESTED_SPANS + [(3, 5, 50)])  # [3, 5) crosses [0, 4)
    assert layers == [[(0, 4, 10), (6, 7, 20)], [(0, 1, 20), (2, 4, 30)], [(3, 4, 40)]]
    assert crossing == 1
    # one span in two clusters: the smaller cluster id is the outer layer
    assert nesting_layers([(0, 2, 5), (0, 2, 1)]) == ([[(0, 2, 1)], [(0, 2, 5)]], 0)


def test_resolve_nesting_enclosing_or_heads():
    # "enclosing" (Ji et al. §4): [John 's big dog] and the later [John]
    kept, stats = resolve_nesting(NESTED_SPANS)
    assert kept == [(0, 4, 10), (6, 7, 20)]
    assert stats["embedded_mentions_dropped"] == 3
    # "heads": every span enclosing another goes; [John], [dog] and the later [John] stay
    kept, stats = resolve_nesting(NESTED_SPANS, "heads")
    assert kept == [(0, 1, 20), (3, 4, 40), (6, 7, 20)]
    assert stats["enclosing_mentions_dropped"] == 2
    # a span in two clusters keeps the smaller id; of two crossing spans the later goes
    assert resolve_nesting([(0, 2, 5), (0, 2, 1), (1, 3, 7)], "heads")[0] == [(0, 2, 1)]
    with pytest.raises(CorefreproError, match="nested"):
        resolve_nesting(NESTED_SPANS, "inner")


def test_entitynlm_view_follows_the_nesting_rule():
    enclosing = entitynlm_row(_doc(NESTED), NESTED_SPANS)
    heads = entitynlm_row(_doc(NESTED), NESTED_SPANS, nested="heads")
    assert enclosing["remaining"][:4] == [4, 3, 2, 1]
    assert heads["is_mention"] == [True, False, False, True, False, False, True, False]
    assert heads["entity"] == [0, -1, -1, 1, -1, -1, 0, -1]  # [John] ... [John]: entity 0


def test_corelm_layers_and_ids():
    docs = [_doc(NESTED, "toy/a"), _doc(["Rex", "ran"], "toy/b")]
    mentions = _mentions("toy/a", NESTED_SPANS) + _mentions("toy/b", [(0, 1, 0)])
    built = build_corelm_view(docs, mentions)
    rows = {(r["doc_id"], r["layer"]): r["entity_ids"] for r in built.rows}
    # ids in first-mention order: [John's big dog]=1, [John]=2, [big dog]=3, [dog]=4
    assert rows[("toy/a", 0)] == [1, 1, 1, 1, 0, 0, 2, 0]
    assert rows[("toy/a", 1)] == [2, 0, 3, 3, 0, 0, 0, 0]
    assert rows[("toy/a", 2)] == [0, 0, 0, 4, 0, 0, 0, 0]
    assert rows[("toy/b", 0)] == [5, 0]  # corpus scope: ids go on across documents
    assert [(r["doc_id"], r["layer"]) for r in built.rows] == [
        ("toy/a", 0),
        ("toy/a", 1),
        ("toy/a", 2),
        ("toy/b", 0),
    ]
    assert to_table("corelm_view", built.rows).num_rows == 4

    per_doc = build_corelm_view(docs, mentions, id_scope="document")
    assert per_doc.rows[-1]["entity_ids"] == [1, 0]
    capped = build_corelm_view(docs, mentions, id_scope="document", max_entities=3)
    assert capped.rows[2]["entity_ids"] == [0, 0, 0, 0, 0, 0, 0, 0]  # [dog] over the cap
    assert capped.stats["entities_over_cap"] == 1
    with pytest.raises(CorefreproError, match="id_scope"):
        build_corelm_view(docs, mentions, id_scope="global")


def test_corelm_document_without_mentions_still_has_layer_0():
    built = build_corelm_view([_doc(["a", "b"])], [])
    assert built.rows == [{"doc_id": "toy/d", "layer": 0, "split": "train", "entity_ids": [0, 0]}]


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def synthetic_tables(tmp_path_factory):
    root = REPO_ROOT / "data" / "docs" / "synthetic"
    if (root / "documents.parquet").exists():
        return pq.read_table(root / "documents.parquet"), pq.read_table(root / "mentions.parquet")
    from tasks.corpora import synthetic

    raw = tmp_path_factory.mktemp("synthetic")
    synthetic.generate(raw, {})
    norm = synthetic.normalize(raw, {})
    return to_table("documents", norm.documents), to_table("mentions", norm.mentions)


def test_synthetic_views_are_valid(synthetic_tables):
    documents, mentions = synthetic_tables
    enlm = build_entitynlm_view(documents, mentions, drop_singletons=True)
    assert to_table("entitynlm_view", enlm.rows).num_rows == documents.num_rows
    for r in enlm.rows:
        seen = -1
        for t, (m, e, ell) in enumerate(
            zip(r["is_mention"], r["entity"], r["remaining"], strict=True)
        ):
            assert (e >= 0) == m and (ell > 0) == m and ell <= 25
            if ell > 1:  # L counts down inside a mention of one entity (§2.2 step 2)
                assert r["remaining"][t + 1] == ell - 1 and r["entity"][t + 1] == e
            if m and (t == 0 or r["remaining"][t - 1] <= 1):  # a mention starts here
                assert e <= seen + 1  # entities are numbered in order of first mention
                seen = max(seen, e)
        assert r["num_entities"] == seen + 1
    corelm = build_corelm_view(documents, mentions)
    table = to_table("corelm_view", corelm.rows)
    assert table.num_rows == corelm.stats["instances"] > documents.num_rows  # nested layers
    assert corelm.stats["layer_1_mentions"] > 0
