"""`gold`: the corpus's mentions pass through unchanged (as partitions), questions link."""

from __future__ import annotations

from collections import defaultdict

import pytest

from tasks.annotation import annotators
from tasks.annotation.annotate import annotate_documents
from tasks.core.errors import CorefreproError
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.core.storage import to_table


def partitions(rows) -> set[tuple[str, frozenset]]:
    clusters: dict[tuple[str, int], set] = defaultdict(set)
    for r in rows:
        clusters[(r["doc_id"], r["cluster"])].add((r["start"], r["end"]))
    return {(doc_id, frozenset(spans)) for (doc_id, _), spans in clusters.items()}


@pytest.mark.parametrize("corpus", ["synthetic_tables", "handmade_tables"])
def test_gold_passes_the_corpus_mentions_through(corpus, request):
    t = request.getfixturevalue(corpus)
    rows, _, report = annotate_documents(
        annotators.get("gold", {}), t[DOCUMENTS], t[ITEMS], t[MENTIONS], batch_size=5
    )
    gold = t[MENTIONS].to_pylist()
    assert len(rows) == len(gold) == report["mentions"]
    assert partitions(rows) == partitions(gold)
    assert {r["annotator"] for r in rows} == {"gold"}
    # clusters are dense per document, numbered in order of first mention
    by_doc: dict[str, list[int]] = defaultdict(list)
    for r in rows:
        by_doc[r["doc_id"]].append(r["cluster"])
    for clusters in by_doc.values():
        firsts = list(dict.fromkeys(clusters))
        assert firsts == list(range(len(firsts)))
    assert report["duplicate_same_cluster"] == report["duplicate_two_clusters"] == 0
    assert report["crossing"] == report["cross_sentence"] == 0
    assert report["nested"] > 0  # "Mary and John" holds "Mary"; "my garage" holds "my"


def test_gold_questions_link_to_the_chain_they_ask_about(synthetic_tables):
    t = synthetic_tables
    rows, qrows, _ = annotate_documents(
        annotators.get("gold", {}), t[DOCUMENTS], t[ITEMS], t[MENTIONS]
    )
    tokens = {r["doc_id"]: r["tokens"] for r in t[DOCUMENTS].to_pylist()}
    items = {r["item_id"]: r for r in t[ITEMS].to_pylist()}
    strings: dict[tuple[str, int], set[str]] = defaultdict(set)
    for r in rows:
        strings[(r["doc_id"], r["cluster"])].add(
            " ".join(tokens[r["doc_id"]][r["start"] : r["end"]])
        )
    asked = [i for i in items.values() if i["task"].startswith("syn1")]  # Where is <name> ?
    linked = {(q["item_id"], q["start"]) for q in qrows}
    assert asked and all((i["item_id"], 2) in linked for i in asked)
    for q in qrows:
        item = items[q["item_id"]]
        said = " ".join(item["query"][q["start"] : q["end"]])
        assert said in strings[(item["doc_id"], q["cluster"])], (q, said)


def test_gold_refuses_a_corpus_without_gold():
    docs = to_table(
        DOCUMENTS,
        [
            {
                "doc_id": "b/0",
                "split": "dev",
                "tokens": ["Mary", "left", "."],
                "sentence_starts": [0],
            }
        ],
    )
    with pytest.raises(CorefreproError, match="b/0 comes from a corpus without gold"):
        annotate_documents(annotators.get("gold", {}), docs, None, to_table(MENTIONS, []))
