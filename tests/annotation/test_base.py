"""The annotator contract: registry, settings check, the generic query linker."""

from __future__ import annotations

import pytest

from tasks.annotation import annotators
from tasks.annotation.annotators.base import Doc, Query, link_queries, match_strings
from tasks.core.errors import CorefreproError

TOKENS = [
    "Mary",
    "went",
    "to",
    "the",
    "kitchen",
    ".",
    "He",
    "saw",
    "the",
    "pink",
    "rectangle",
    "there",
    ".",
    "John",
    "met",
    "Mary",
    ".",
    "He",
    "left",
    "the",
    "kitchen",
    ".",
]
# Mary 0 | the kitchen 3-5 | He 6 | the pink rectangle 8-11 | pink 9 | John 13 | Mary 15 |
# He 17 | the kitchen 19-21
MENTIONS = [
    (0, 1, 0),
    (3, 5, 1),
    (6, 7, 2),
    (8, 11, 3),
    (9, 10, 4),
    (13, 14, 5),
    (15, 16, 0),
    (17, 18, 5),
    (19, 21, 1),
]


def doc(*queries: Query) -> Doc:
    return Doc("c/d", TOKENS, [0, 6, 13, 17], queries=list(queries))


def test_registry_knows_the_four_annotators_and_names_them_on_a_typo():
    assert annotators.names() == ["entity-id", "gold", "model", "stanza"]
    with pytest.raises(CorefreproError) as err:
        annotators.get("entityid", {})
    assert "unknown annotator 'entityid'" in str(err.value)
    assert "entity-id, gold, model, stanza" in str(err.value)


def test_unknown_settings_are_errors_naming_the_closest_known_one():
    with pytest.raises(CorefreproError) as err:
        annotators.get("entity-id", {"mention": "gold"})
    assert str(err.value) == (
        "annotate.annotators.entity-id.mention: unknown setting (did you mean mentions?)"
    )
    with pytest.raises(CorefreproError, match="link_queries"):
        annotators.get("gold", {"link": False})


def test_linker_finds_the_chain_of_a_name_in_the_query():
    d = doc(Query("q0", ["Where", "is", "Mary", "?"], len(TOKENS)))
    assert link_queries(d, MENTIONS) == {"q0": [(2, 3, 0)]}


def test_linker_prefers_the_longest_match_and_never_overlaps():
    d = doc(Query("q0", ["Is", "the", "pink", "rectangle", "pink", "?"], len(TOKENS)))
    assert link_queries(d, MENTIONS) == {"q0": [(1, 4, 3), (4, 5, 4)]}


def test_linker_ignores_case_unless_told_and_only_reads_the_context():
    q = Query("q0", ["where", "is", "mary", "and", "john", "?"], 13)  # John comes after 13
    assert link_queries(doc(q), MENTIONS) == {"q0": [(2, 3, 0)]}
    assert link_queries(doc(q), MENTIONS, casefold=False) == {"q0": []}
    assert link_queries(doc(q._replace(context_end=14)), MENTIONS)["q0"] == [(2, 3, 0), (4, 5, 5)]


def test_linker_takes_the_most_recent_cluster_of_an_ambiguous_string():
    he = ["Where", "did", "he", "go", "?"]
    early, late = Query("early", he, 13), Query("late", he, len(TOKENS))
    assert link_queries(doc(early, late), MENTIONS) == {
        "early": [(2, 3, 2)],
        "late": [(2, 3, 5)],
    }


def test_linker_gives_every_item_an_entry():
    d = doc(Query("empty", [], 5), Query("none", ["Why", "?"], 5))
    assert link_queries(d, MENTIONS) == {"empty": [], "none": []}
    assert match_strings(["x"], {}) == []


def test_doc_sentences_split_at_sentence_starts():
    d = doc()
    assert [len(s) for s in d.sentences()] == [6, 7, 4, 5]
    assert (d.sentence_of(0), d.sentence_of(5), d.sentence_of(6), d.sentence_of(21)) == (
        0,
        0,
        1,
        3,
    )
