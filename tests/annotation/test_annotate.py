"""tasks/annotation/annotate.py: building Docs, batching, and the validation policy case by case."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from tasks.annotation import annotators
from tasks.annotation.annotate import REPORT_KEYS, annotate_documents
from tasks.annotation.annotators.base import Annotation, Annotator, Doc
from tasks.core.errors import CorefreproError
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS, QUERY_MENTIONS
from tasks.core.storage import to_table
from tasks.corpora import gum, litbank
from tests.annotation.conftest import tables


class Scripted(Annotator):
    """Answers with given mentions per doc_id; records the batches it was given."""

    name = "scripted"

    def __init__(self, answers: dict[str, Annotation]):
        self.answers = answers
        self.batches: list[list[str]] = []

    def annotate(self, batch: list[Doc]) -> list[Annotation]:
        self.batches.append([d.doc_id for d in batch])
        return [self.answers.get(d.doc_id, Annotation([])) for d in batch]


def docs_table(*docs: tuple[str, list[str], list[int]]) -> pa.Table:
    return to_table(
        DOCUMENTS,
        [
            {"doc_id": d, "split": "dev", "tokens": t, "sentence_starts": s, "genre": None}
            for d, t, s in docs
        ],
    )


def items_table(*items: tuple[str, str, int, list[str]]) -> pa.Table:
    return to_table(
        ITEMS,
        [
            {
                "item_id": i,
                "doc_id": d,
                "split": "dev",
                "task": "t",
                "context_end": end,
                "query": q,
                "answer": "x",
            }
            for i, d, end, q in items
        ],
    )


TOKENS = ["Mary", "went", "home", ".", "She", "slept", "there", "."]
DOC = ("c/d0", TOKENS, [0, 4])


def run(answers, documents=None, items=None, gold=None, batch_size=4):
    annotator = Scripted(answers)
    out = annotate_documents(
        annotator,
        documents if documents is not None else docs_table(DOC),
        items,
        gold,
        batch_size=batch_size,
    )
    return (*out, annotator)


def spans(rows):
    return [(r["start"], r["end"], r["cluster"]) for r in rows]


def test_report_has_every_key_and_rows_fit_the_schemas():
    items = items_table(("c/d0/q0", "c/d0", 8, ["Where", "is", "Mary", "?"]))
    answer = Annotation([(0, 1, 3), (4, 5, 3), (2, 3, 8)], {"c/d0/q0": [(2, 3, 3)]})
    rows, qrows, report, _ = run({"c/d0": answer}, items=items)
    assert set(REPORT_KEYS) <= set(report)
    assert spans(rows) == [(0, 1, 0), (2, 3, 1), (4, 5, 0)]  # dense, by first mention
    assert spans(qrows) == [(2, 3, 0)]
    assert {r["annotator"] for r in rows + qrows} == {"scripted"}
    assert to_table(MENTIONS, rows).num_rows == 3
    assert to_table(QUERY_MENTIONS, qrows).num_rows == 1
    assert report["mentions"] == 3 and report["clusters"] == 2 and report["singletons"] == 1
    assert report["documents"] == 1 and report["items"] == 1 and report["query_mentions"] == 1


@pytest.mark.parametrize("span", [(6, 9, 0), (-1, 1, 0), (3, 3, 0), (4, 2, 0)])
def test_mention_out_of_range_is_an_error_naming_document_and_span(span):
    with pytest.raises(CorefreproError) as err:
        run({"c/d0": Annotation([(0, 1, 0), span])})
    assert "c/d0" in str(err.value) and f"[{span[0]}, {span[1]})" in str(err.value)
    assert "scripted" in str(err.value)


def test_query_mention_out_of_range_is_an_error_naming_the_item():
    items = items_table(("c/d0/q0", "c/d0", 8, ["Where", "is", "Mary", "?"]))
    with pytest.raises(CorefreproError, match=r"item c/d0/q0.*\[3, 5\)"):
        run({"c/d0": Annotation([(0, 1, 0)], {"c/d0/q0": [(3, 5, 0)]})}, items=items)


def test_malformed_answers_are_errors():
    with pytest.raises(CorefreproError, match="not \\(start, end, cluster\\) ints"):
        run({"c/d0": Annotation([(0, 1)])})
    with pytest.raises(CorefreproError, match="not \\(start, end, cluster\\) ints"):
        run({"c/d0": Annotation([(0, 1, "a")])})
    with pytest.raises(CorefreproError, match="not over this document"):
        run({"c/d0": Annotation([(0, 1, 0)], {"c/other/q": []})})

    class Short(Annotator):
        name = "short"

        def annotate(self, batch):
            return []

    with pytest.raises(CorefreproError, match="returned 0 annotations for a batch of 1"):
        annotate_documents(Short(), docs_table(DOC), None, None)


def test_cross_sentence_mentions_are_kept_and_counted():
    rows, _, report, _ = run({"c/d0": Annotation([(2, 5, 0), (0, 1, 0), (3, 4, 1)])})
    assert spans(rows) == [(0, 1, 0), (2, 5, 0), (3, 4, 1)]
    assert report["cross_sentence"] == 1  # [2, 5) covers "home . She"; [3, 4) is one sentence


def test_nested_and_crossing_mentions_are_kept_and_counted():
    # [0, 3) holds [0, 1) and [1, 3); [2, 5) crosses [0, 3) and [1, 3); [4, 5) nests in [2, 5)
    answer = Annotation([(0, 3, 0), (0, 1, 1), (1, 3, 2), (2, 5, 3), (4, 5, 4)])
    rows, _, report, _ = run({"c/d0": answer})
    assert len(rows) == 5
    assert report["nested"] == 3 and report["crossing"] == 1


def test_duplicates_keep_the_first_cluster_and_are_counted():
    answer = Annotation(
        [
            (5, 6, 7),  # span also in cluster 9, whose first mention [1, 2) comes first
            (0, 1, 4),
            (0, 1, 4),  # same span, same cluster: the copy is dropped
            (1, 2, 9),
            (5, 6, 9),
            (5, 6, 9),
            (6, 7, 8),  # cluster 8 has no other mention: ...
            (6, 7, 4),  # ... but cluster 4 comes first, so 8 disappears
        ]
    )
    rows, _, report, _ = run({"c/d0": answer})
    assert spans(rows) == [(0, 1, 0), (1, 2, 1), (5, 6, 1), (6, 7, 0)]
    assert report["duplicate_same_cluster"] == 2
    assert report["duplicate_two_clusters"] == 2
    assert report["clusters"] == 2


def test_empty_documents_are_not_annotated_and_are_counted():
    documents = docs_table(("c/e", [], []), DOC)
    items = items_table(("c/e/q", "c/e", 0, ["Where", "?"]))
    rows, qrows, report, annotator = run(
        {"c/d0": Annotation([(0, 1, 0)])}, documents=documents, items=items
    )
    assert annotator.batches == [["c/d0"]]
    assert report["empty_documents"] == 1 and report["documents"] == 2
    assert [r["doc_id"] for r in rows] == ["c/d0"] and qrows == []


def test_query_only_clusters_continue_the_numbering():
    items = items_table(
        ("c/d0/q0", "c/d0", 4, ["Who", "saw", "@entity9", "and", "Mary", "?"]),
        ("c/d0/q1", "c/d0", 8, ["@entity9", "?"]),
    )
    answer = Annotation(
        [(0, 1, 50), (4, 5, 50), (6, 7, 60)],
        {"c/d0/q0": [(2, 3, 99), (4, 5, 50)], "c/d0/q1": [(0, 1, 99)]},
    )
    rows, qrows, report, _ = run({"c/d0": answer}, items=items)
    assert spans(rows) == [(0, 1, 0), (4, 5, 0), (6, 7, 1)]
    assert [(r["item_id"], r["start"], r["cluster"]) for r in qrows] == [
        ("c/d0/q0", 2, 2),
        ("c/d0/q0", 4, 0),
        ("c/d0/q1", 0, 2),
    ]
    assert report["query_only_clusters"] == 1


def test_annotator_counts_are_added_to_the_report():
    documents = docs_table(DOC, ("c/d1", ["x"], [0]))
    answers = {
        "c/d0": Annotation([], counts={"stanza_zero_mentions": 2}),
        "c/d1": Annotation([], counts={"stanza_zero_mentions": 1}),
    }
    *_, report, _ = run(answers, documents=documents)
    assert report["stanza_zero_mentions"] == 3


def test_batches_follow_batch_size_and_results_do_not_depend_on_it():
    documents = docs_table(*[(f"c/d{i}", TOKENS, [0, 4]) for i in range(5)])
    rng = random.Random(3)
    answers = {}
    for i in range(5):
        ms = [(s, s + rng.randint(1, 2), rng.randint(0, 3)) for s in range(0, 6, 2)]
        rng.shuffle(ms)
        answers[f"c/d{i}"] = Annotation(ms)
    first = run(answers, documents=documents, batch_size=2)
    second = run(answers, documents=documents, batch_size=5)
    assert first[3].batches == [["c/d0", "c/d1"], ["c/d2", "c/d3"], ["c/d4"]]
    assert second[3].batches == [[f"c/d{i}" for i in range(5)]]
    assert first[:3] == second[:3]
    shuffled = {k: Annotation(list(reversed(v.mentions))) for k, v in answers.items()}
    assert run(shuffled, documents=documents)[:3] == first[:3]
    with pytest.raises(CorefreproError, match="batch_size"):
        run(answers, documents=documents, batch_size=0)


def test_docs_carry_gold_queries_genre_and_speakers():
    documents = to_table(
        DOCUMENTS,
        [
            {
                "doc_id": "c/d0",
                "split": "dev",
                "tokens": TOKENS,
                "sentence_starts": [0, 4],
                "genre": "nw",
                "speakers": ["A"] * 8,
            },
            {"doc_id": "c/d1", "split": "dev", "tokens": ["x"], "sentence_starts": [0]},
        ],
    )
    gold = to_table(
        MENTIONS,
        [
            {"doc_id": "c/d0", "start": 4, "end": 5, "cluster": 1, "annotator": "gold"},
            {"doc_id": "c/d0", "start": 0, "end": 1, "cluster": 1, "annotator": "gold"},
            {"doc_id": "c/zz", "start": 0, "end": 1, "cluster": 0, "annotator": "gold"},
        ],
    )
    items = items_table(("c/d0/q0", "c/d0", 4, ["Where", "is", "Mary", "?"]))
    seen: list[Doc] = []

    class Spy(Annotator):
        name = "spy"

        def annotate(self, batch):
            seen.extend(batch)
            return [Annotation([]) for _ in batch]

    annotate_documents(Spy(), documents, items, gold)
    assert seen[0].gold == [(4, 5, 1), (0, 1, 1)] and seen[1].gold == []
    assert seen[0].genre == "nw" and seen[0].speakers == ["A"] * 8 and seen[1].speakers is None
    assert [tuple(q) for q in seen[0].queries] == [("c/d0/q0", ["Where", "is", "Mary", "?"], 4)]
    seen.clear()
    annotate_documents(Spy(), documents, items, to_table(MENTIONS, []))
    assert seen[0].gold is None  # a corpus without gold coreference


def test_inconsistent_inputs_are_errors():
    with pytest.raises(CorefreproError, match="c/nowhere"):
        run({}, items=items_table(("q", "c/nowhere", 0, ["?"])))
    with pytest.raises(CorefreproError, match="context_end 99"):
        run({}, items=items_table(("q", "c/d0", 99, ["?"])))
    mixed = to_table(
        MENTIONS,
        [
            {"doc_id": "c/d0", "start": 0, "end": 1, "cluster": 0, "annotator": "gold"},
            {"doc_id": "c/d0", "start": 0, "end": 1, "cluster": 0, "annotator": "other"},
        ],
    )
    with pytest.raises(CorefreproError, match="mixes annotators"):
        run({}, gold=mixed)


@pytest.mark.mirror
def test_gold_pass_through_on_real_gum_and_litbank_counts_what_the_policy_keeps(mirror):
    """The counts behind the policy: GUM's 28 cross-sentence gold mentions, LitBank's 3
    crossing brackets -- kept, counted, nothing dropped."""
    expected = {
        gum: {"mentions": 67849, "cross_sentence": 28, "crossing": 0, "nested": 25350},
        litbank: {"mentions": 25969, "cross_sentence": 0, "crossing": 3, "nested": 2920},
    }
    for module, counts in expected.items():
        t = tables(module.normalize(Path(mirror) / module.MIRROR_DIR, {}))
        rows, _, report = annotate_documents(
            annotators.get("gold", {}), t[DOCUMENTS], t[ITEMS], t[MENTIONS], batch_size=64
        )
        assert {k: report[k] for k in counts} == counts, module.NAME
        assert report["duplicate_same_cluster"] == report["duplicate_two_clusters"] == 0
        assert len(rows) == t[MENTIONS].num_rows
