"""`entity-id`: MAGE's surface entity chains on real bAbI, the synthetic corpus and CNN-style
placeholders, and the exact-string-match baseline over gold mention spans."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from tasks.annotation import annotators
from tasks.annotation.annotate import annotate_documents
from tasks.annotation.annotators.base import Doc, Query
from tasks.annotation.annotators.entity_id import PRONOUNS, detect_mentions
from tasks.core.errors import CorefreproError
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.core.storage import to_table
from tasks.corpora import babi
from tasks.evaluation.coref import score_mention_tables
from tests.annotation.conftest import tables

BABI_TASKS = [1, 5, 12, 15, 17, 18, 20]
PLACES = {"bathroom", "bedroom", "garden", "hallway", "kitchen", "office"}
QA1 = {"mary", "john", "daniel", "sandra"} | {f"the {p}" for p in PLACES}
QA18 = {"the box", "the box of chocolates", "the chest", "the chocolate", "the container"}
QA18 |= {"the suitcase"}


@pytest.fixture(scope="module")
def babi_run(mirror_session):
    """Real bAbI stories of a few tasks (train files + the mirror's test samples)."""
    t = tables(babi.normalize(Path(mirror_session) / babi.MIRROR_DIR, {"tasks": BABI_TASKS}))
    rows, qrows, report = annotate_documents(
        annotators.get("entity-id", {}), t[DOCUMENTS], t[ITEMS], t[MENTIONS], batch_size=64
    )
    return t, rows, qrows, report


def strings_by_task(t, rows) -> dict[str, set[str]]:
    tokens = {r["doc_id"]: r["tokens"] for r in t[DOCUMENTS].to_pylist()}
    out: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        task = r["doc_id"].split("/")[2]
        out[task].add(" ".join(tokens[r["doc_id"]][r["start"] : r["end"]]).lower())
    return out


@pytest.mark.mirror
def test_babi_mentions_are_exactly_the_entities_of_each_task(babi_run):
    t, rows, _, report = babi_run
    found = strings_by_task(t, rows)
    assert found["qa1"] == QA1
    assert found["qa18"] == QA18  # "The chocolate fits ..." stops before the verb
    shapes = {"square", "rectangle", "sphere", "triangle"}
    assert all(s.split()[-1] in shapes for s in found["qa17"]), found["qa17"]
    assert {"the pink rectangle", "the triangle"} <= found["qa17"]
    assert {"the left", "the right", "the blue"}.isdisjoint(found["qa17"])
    assert {"a mouse", "a wolf", "gertrude", "cats"} <= found["qa15"]
    assert {"mary and daniel", "daniel and mary"} <= found["qa12"]
    assert {"sumit", "the pajamas", "the milk"} <= found["qa20"]
    assert report["duplicate_two_clusters"] == report["crossing"] == 0
    assert report["cross_sentence"] == 0


@pytest.mark.mirror
def test_babi_one_chain_per_entity(babi_run):
    t, rows, _, _ = babi_run
    tokens = {r["doc_id"]: r["tokens"] for r in t[DOCUMENTS].to_pylist()}
    chains: dict[tuple[str, str], set[int]] = defaultdict(set)
    for r in rows:
        words = [w.lower() for w in tokens[r["doc_id"]][r["start"] : r["end"]]]
        words = sorted(words) if "and" in words else words  # "Mary and John" = "John and Mary"
        key = " ".join(words[1:] if words[0] in ("the", "a", "an") else words)
        chains[(r["doc_id"], key)].add(r["cluster"])
    assert all(len(c) == 1 for c in chains.values())
    per_doc: dict[str, list[int]] = defaultdict(list)
    for (doc_id, _), c in chains.items():
        per_doc[doc_id].extend(c)
    assert all(len(c) == len(set(c)) for c in per_doc.values())  # distinct entities apart


@pytest.mark.mirror
def test_babi_questions_link_to_the_chain_of_their_entity(babi_run):
    t, rows, qrows, report = babi_run
    tokens = {r["doc_id"]: r["tokens"] for r in t[DOCUMENTS].to_pylist()}
    items = {r["item_id"]: r for r in t[ITEMS].to_pylist()}
    strings: dict[tuple[str, int], set[str]] = defaultdict(set)
    for r in rows:
        strings[(r["doc_id"], r["cluster"])].add(
            " ".join(tokens[r["doc_id"]][r["start"] : r["end"]]).lower()
        )
    by_item = defaultdict(list)
    for q in qrows:
        by_item[q["item_id"]].append(q)
    qa1 = [i for i in items.values() if i["task"] == "qa1"]
    assert qa1 and all(  # "Where is Mary ?" -> Mary's chain
        [(q["start"], q["end"]) for q in by_item[i["item_id"]]] == [(2, 3)] for i in qa1
    )
    for q in qrows:
        item = items[q["item_id"]]
        said = " ".join(item["query"][q["start"] : q["end"]]).lower()
        assert said in strings[(item["doc_id"], q["cluster"])], (item["query"], said)
    qa20 = [i for i in items.values() if i["task"] == "qa20" and "sumit" in i["query"]]
    assert qa20 and all(by_item[i["item_id"]] for i in qa20)  # lower-cased names link too
    assert report["query_only_clusters"] == 0


def test_synthetic_chains_are_gold_without_pronouns(synthetic_tables):
    """On bAbI-style text the rules find every non-pronoun gold mention and nothing else, in
    the gold chains; pronouns are left to coreference models (the _coref questions)."""
    t = synthetic_tables
    rows, _, _ = annotate_documents(
        annotators.get("entity-id", {}), t[DOCUMENTS], t[ITEMS], t[MENTIONS]
    )
    tokens = {r["doc_id"]: r["tokens"] for r in t[DOCUMENTS].to_pylist()}

    def partition(mentions, drop_pronouns):
        clusters = defaultdict(set)
        for r in mentions:
            words = tokens[r["doc_id"]][r["start"] : r["end"]]
            if drop_pronouns and len(words) == 1 and words[0].lower() in PRONOUNS:
                continue
            clusters[(r["doc_id"], r["cluster"])].add((r["start"], r["end"]))
        return {(d, frozenset(s)) for (d, _), s in clusters.items()}

    gold = t[MENTIONS].to_pylist()
    assert partition(rows, False) == partition(gold, True)
    assert len(rows) < len(gold)
    pronouns = {"he", "she", "they"}
    assert not any(tokens[r["doc_id"]][r["start"]].lower() in pronouns for r in rows)


def test_entity_id_output_is_deterministic(synthetic_tables):
    t = synthetic_tables
    runs = [
        annotate_documents(
            annotators.get("entity-id", {}), t[DOCUMENTS], t[ITEMS], None, batch_size=size
        )
        for size in (1, 7, 1)
    ]
    assert runs[0] == runs[1] == runs[2]
    assert runs[0][1]  # the questions got mentions


def test_where_is_mary_links_to_marys_chain():
    tokens = [
        "Mary",
        "went",
        "to",
        "the",
        "kitchen",
        ".",
        "She",
        "took",
        "the",
        "apple",
        ".",
        "John",
        "met",
        "Mary",
        ".",
    ]
    doc = Doc(
        "s/0",
        tokens,
        [0, 6, 10],
        queries=[Query("s/0/q0", ["Where", "is", "Mary", "?"], len(tokens))],
    )
    [answer] = annotators.get("entity-id", {}).annotate([doc])
    mary = {c for s, e, c in answer.mentions if tokens[s] == "Mary"}
    assert len(mary) == 1 and len([m for m in answer.mentions if m[2] in mary]) == 2
    assert answer.query_mentions == {"s/0/q0": [(2, 3, mary.pop())]}
    assert not any(tokens[s] == "She" for s, _, _ in answer.mentions)


def test_cnn_placeholders_chain_and_link_from_the_query():
    text = (
        "@entity0 ( @entity1 ) -- the @entity2 police said @entity3 was seen in @entity1 . "
        "@entity3 , 34 , told @entity0 that the car was his ."
    )
    tokens = text.split()
    query = ["@placeholder", "was", "arrested", "in", "@entity1", "by", "@entity7", "."]
    doc = Doc("cnn/0", tokens, [0, 13], queries=[Query("cnn/0/q", query, len(tokens))])
    [answer] = annotators.get("entity-id", {"mentions": "placeholders"}).annotate([doc])
    got = [(tokens[s], c) for s, e, c in answer.mentions]
    assert [w for w, _ in got] == [t for t in tokens if t.startswith("@entity")]
    ids = dict(got)
    assert len(set(ids.values())) == 4  # @entity0..3, each one chain
    assert answer.query_mentions["cnn/0/q"] == [(4, 5, ids["@entity1"]), (6, 7, 4)]
    # through the stage: @entity7 (never in the article) becomes a query-only cluster
    docs = to_table(
        DOCUMENTS,
        [{"doc_id": "cnn/0", "split": "dev", "tokens": tokens, "sentence_starts": [0, 13]}],
    )
    items = to_table(
        ITEMS,
        [
            {
                "item_id": "cnn/0/q",
                "doc_id": "cnn/0",
                "split": "dev",
                "task": "cnn",
                "context_end": len(tokens),
                "query": query,
                "answer": "@entity3",
            }
        ],
    )
    _, qrows, report = annotate_documents(
        annotators.get("entity-id", {"mentions": "placeholders"}), docs, items, None
    )
    assert [(q["start"], q["cluster"]) for q in qrows] == [(4, 1), (6, 4)]
    assert report["query_only_clusters"] == 1
    # in text mode the same document also gets its noun phrases ("the car")
    [text_mode] = annotators.get("entity-id", {}).annotate([doc])
    assert {tokens[s] for s, _, _ in text_mode.mentions} >= {"@entity0", "the"}


def test_noun_phrase_rules():
    def strings(sentence: str) -> list[str]:
        words = sentence.split()
        found = detect_mentions(words, [0], placeholder=None)
        return [" ".join(words[f.start : f.end]) for f in found]

    assert strings("The chocolate fits inside the box .") == ["The chocolate", "the box"]
    assert strings("The box of chocolates is bigger than the chest .") == [
        "The box of chocolates",
        "the chest",
    ]
    assert strings("The triangle is to the left of the red square .") == [
        "The triangle",
        "the red square",
    ]
    assert strings("Then Mary and John went back to the hallway .") == [
        "Mary and John",
        "Mary",
        "John",
        "the hallway",
    ]
    assert strings("Yesterday Julie went to the park this morning .") == ["Julie", "the park"]


def test_gold_mode_is_exact_string_match_over_gold_spans():
    tokens = [
        "Anna",
        "saw",
        "the",
        "dog",
        ".",
        "The",
        "dog",
        "saw",
        "her",
        ".",
        "She",
        "saw",
        "Anna",
        "and",
        "she",
        "left",
        ".",
    ]
    gold = [(0, 1, 0), (2, 4, 1), (5, 7, 1), (8, 9, 0), (10, 11, 0), (12, 13, 0), (14, 15, 0)]
    doc = Doc("g/0", tokens, [0, 5, 10], gold=gold)

    def clusters(**cfg):
        [answer] = annotators.get("entity-id", {"mentions": "gold", **cfg}).annotate([doc])
        groups = defaultdict(list)
        for s, e, c in answer.mentions:
            groups[c].append(" ".join(tokens[s:e]))
        return sorted(groups.values()), answer.counts

    assert clusters() == (
        [["Anna", "Anna"], ["She"], ["her"], ["she"], ["the dog", "The dog"]],
        {},
    )
    assert clusters(pronouns="string")[0] == [
        ["Anna", "Anna"],
        ["She", "she"],
        ["her"],
        ["the dog", "The dog"],
    ]
    assert clusters(pronouns="drop") == (
        [["Anna", "Anna"], ["the dog", "The dog"]],
        {"entity_id_pronouns_dropped": 3},
    )
    with pytest.raises(CorefreproError, match="without gold mentions"):
        annotators.get("entity-id", {"mentions": "gold"}).annotate([Doc("b", ["x"], [0])])


def test_gold_mode_scores_below_gold_and_above_nothing(synthetic_tables):
    t = synthetic_tables
    dev = [r["doc_id"] for r in t[DOCUMENTS].to_pylist() if r["split"] == "dev"]
    rows, _, _ = annotate_documents(
        annotators.get("entity-id", {"mentions": "gold"}), t[DOCUMENTS], t[ITEMS], t[MENTIONS]
    )
    scores = score_mention_tables(t[MENTIONS], rows, documents=dev)
    assert scores["mentions"].f1 == 1.0  # same spans
    assert 0.5 < scores["muc"].f1 < 1.0  # names chained, pronouns not


def test_bad_settings_are_errors():
    with pytest.raises(CorefreproError, match="mentions must be one of"):
        annotators.get("entity-id", {"mentions": "names"})
    with pytest.raises(CorefreproError, match="pronouns must be one of"):
        annotators.get("entity-id", {"pronouns": "resolve"})
    with pytest.raises(CorefreproError, match="not a regex"):
        annotators.get("entity-id", {"placeholder": "@entity("})
