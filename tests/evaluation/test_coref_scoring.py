"""Tests of tasks/evaluation/coref.py, coreference metrics.

Three kinds of evidence: the reference scorer's own 36 test cases (mirror), the worked examples
of the metric papers (values computed by hand below), and a cross-check against the independent
`scorch` implementation on random clusterings.
"""

from __future__ import annotations

import json
import random
import time
from fractions import Fraction
from pathlib import Path

import pyarrow as pa
import pytest

from tasks.core.schema import MENTIONS_SCHEMA
from tasks.evaluation.coref import (
    COREF_METRICS,
    DuplicateMentionsError,
    Score,
    _blanc_counts,
    _blanc_counts_by_enumeration,
    _Document,
    as_metrics,
    b_cubed,
    blanc,
    ceaf_e,
    ceaf_m,
    clusters_from_mentions,
    conll_f1,
    lea,
    mention_identification,
    muc,
    score_coreference,
    score_mention_tables,
)
from tests.conftest import mirror_dir

SCORER_TESTS = "conll_scorer_tests"


def rpf(score: Score) -> tuple[float, float, float]:
    return (score.recall, score.precision, score.f1)


def f1(r: float, p: float) -> float:
    return 2 * r * p / (r + p) if r + p else 0.0


def assert_rpf(score: Score, recall: float, precision: float, f: float | None = None) -> None:
    expected = (recall, precision, f1(recall, precision) if f is None else f)
    assert rpf(score) == pytest.approx(expected, abs=1e-12), (rpf(score), expected)


# ---------------------------------------------------------------------------------------------
# The reference scorer's test suite (conll/reference-coreference-scorers, test/), via the mirror
# ---------------------------------------------------------------------------------------------


def _expected_cases() -> list[dict]:
    root = mirror_dir()
    path = root / SCORER_TESTS / "expected.json" if root is not None else None
    if path is None or not path.is_file():
        # keep the parametrized ids stable when the mirror is absent: the test then skips
        return [{"id": f"case{i}"} for i in range(36)]
    return json.loads(path.read_text(encoding="utf-8"))


def _scorer_clusters(path: Path) -> dict[str, list[list[tuple[int, int]]]]:
    """{doc_id: clusters} of a scorer test file, read with the project's one CoNLL reader.

    The clusters are put in the order v8.01 numbers entities (GetIndex: by the first token of
    their first mention, one-token mentions before openings), because a span repeated in the
    response is kept in the first entity (cases A7-A9). The reader returns mentions sorted, so
    two labels opening on the same token tie and keep the reader's label order; for A8/A9
    ("(1(3") that is the file's order too.
    """
    from tasks.corpora.conll import parse_conll

    corpus = {}
    for doc in parse_conll(path, token_column=None):
        first: dict[str, tuple[int, int, int]] = {}
        clusters: dict[str, list[tuple[int, int]]] = {}
        for n, (start, end, label) in enumerate(doc.mentions):
            rank = (start, 0 if end - start == 1 else 1, n)
            first[label] = min(first.get(label, rank), rank)
            clusters.setdefault(label, []).append((start, end))
        corpus[doc.doc_id] = [clusters[label] for label in sorted(first, key=first.__getitem__)]
    return corpus


@pytest.fixture
def scorer_tests_dir(mirror: Path) -> Path:
    path = mirror / SCORER_TESTS
    if not (path / "expected.json").is_file():
        pytest.skip(f"reference scorer test cases not in the mirror ({path})")
    return path


@pytest.mark.mirror
@pytest.mark.parametrize("case", _expected_cases(), ids=lambda case: case["id"])
def test_reference_scorer_case(case: dict, scorer_tests_dir: Path) -> None:
    data = scorer_tests_dir / "DataFiles"
    key = _scorer_clusters(data / case["key_file"])
    response = _scorer_clusters(data / case["response_file"])
    assert list(key) == list(response)  # the same documents, or one side would be scored alone
    expected = case["expected_recall_precision_f1"]
    scores = score_coreference(key, response, metrics=sorted(expected))
    for metric, values in expected.items():
        for name, want, got in zip(
            ("recall", "precision", "f1"), values, rpf(scores[metric]), strict=True
        ):
            # the suite writes some values as 5-decimal numbers (rounded), others as fractions
            tolerance = 5e-6 if round(want, 5) == want else 1e-9
            assert got == pytest.approx(want, abs=tolerance), (case["id"], metric, name, got, want)


@pytest.mark.mirror
def test_reference_cases_cover_the_suite(scorer_tests_dir: Path) -> None:
    cases = json.loads((scorer_tests_dir / "expected.json").read_text(encoding="utf-8"))
    assert len(cases) == 36
    assert {m for c in cases for m in c["expected_recall_precision_f1"]} == {
        "muc", "bcub", "ceafm", "ceafe", "blanc",
    }  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Worked examples of the metric papers (computed by hand)
# ---------------------------------------------------------------------------------------------

# Bagga & Baldwin (1998), Fig. 2/3 and Luo (2005), Fig. 1: key {1-5}, {6,7}, {8,9,A,B,C};
# response (a) merges the 2nd and 3rd entity, response (b) the 1st and 3rd.
BB_KEY = [[1, 2, 3, 4, 5], [6, 7], [8, 9, "A", "B", "C"]]
BB_RESPONSE_A = [[1, 2, 3, 4, 5], [6, 7, 8, 9, "A", "B", "C"]]
BB_RESPONSE_B = [[1, 2, 3, 4, 5, 8, 9, "A", "B", "C"], [6, 7]]


def test_muc_vilain_example() -> None:
    # Vilain et al. (1995): key {A,B,C,D}, response {A,B} {C,D}: 2 of 3 links, no wrong link
    assert_rpf(muc([["A", "B", "C", "D"]], [["A", "B"], ["C", "D"]]), 2 / 3, 1.0)
    # ... and the other way round: 3 response links, 2 correct
    assert_rpf(muc([["A", "B"], ["C", "D"]], [["A", "B", "C", "D"]]), 1.0, 2 / 3)


def test_muc_bagga_baldwin_examples_cannot_tell_a_from_b() -> None:
    # the observation that motivated B3: MUC gives both responses 9/10 precision
    assert_rpf(muc(BB_KEY, BB_RESPONSE_A), 1.0, 0.9)
    assert_rpf(muc(BB_KEY, BB_RESPONSE_B), 1.0, 0.9)


def test_b_cubed_bagga_baldwin_examples() -> None:
    # (a): precision (5*1 + 2*(2/7) + 5*(5/7)) / 12 = 16/21; (b): (10*(5/10) + 2*1) / 12 = 7/12
    assert_rpf(b_cubed(BB_KEY, BB_RESPONSE_A), 1.0, 16 / 21)
    assert_rpf(b_cubed(BB_KEY, BB_RESPONSE_B), 1.0, 7 / 12)


def test_ceaf_luo_examples() -> None:
    # (a): align {1-5}->{1-5}, {8..C}->{6..C}: phi3 = 5 + 5; phi4 = 1 + 2*5/12
    assert_rpf(ceaf_m(BB_KEY, BB_RESPONSE_A), 10 / 12, 10 / 12)
    phi4 = 1 + 10 / 12
    assert_rpf(ceaf_e(BB_KEY, BB_RESPONSE_A), phi4 / 3, phi4 / 2)
    # (b): {1-5}->{1..C} (5) and {6,7}->{6,7} (2) beats {8..C}->{1..C}: phi3 = 7
    assert_rpf(ceaf_m(BB_KEY, BB_RESPONSE_B), 7 / 12, 7 / 12)
    phi4 = 2 * 5 / 15 + 1
    assert_rpf(ceaf_e(BB_KEY, BB_RESPONSE_B), phi4 / 3, phi4 / 2)


def test_ceaf_alignment_is_one_to_one_and_optimal() -> None:
    # overlaps: {a,b,c}-{a,b,x} 2, {a,b,c}-{c,d} 1, {d}-{c,d} 1; each cluster is used once
    key = [["a", "b", "c"], ["d"]]
    response = [["a", "b", "x"], ["c", "d"]]
    # phi3: a->0 (2) + d->1 (1) = 3 beats a->1 (1) + d->0 (0)
    assert_rpf(ceaf_m(key, response), 3 / 4, 3 / 5)
    # phi4: 2*2/6 + 2*1/3 = 4/3
    assert_rpf(ceaf_e(key, response), (4 / 3) / 2, (4 / 3) / 2)


def test_lea_moosavi_strube_example() -> None:
    # Moosavi & Strube (2016), Sec. 5: key {a,b,c} {d,e,f,g}, response {a,b} {c,d} {f,g,h,i}
    # R = (3*1/3 + 4*1/6) / 7, P = (2*1 + 2*0 + 4*1/6) / 8
    key = [list("abc"), list("defg")]
    response = [list("ab"), list("cd"), list("fghi")]
    assert_rpf(lea(key, response), (1 + 4 / 6) / 7, (2 + 4 / 6) / 8)


def test_lea_singletons_are_self_links() -> None:
    # a singleton counts one link, resolved only when the other side has it alone too
    assert_rpf(lea([["a"], ["b", "c"]], [["a"], ["b", "c"]]), 1.0, 1.0)
    # key {a} is inside a response pair: unresolved; response {a,b} has no correct link
    assert_rpf(lea([["a"], ["b"]], [["a", "b"]]), 0.0, 0.0)


def test_blanc_hand_example() -> None:
    # key {a,b,c} {d}: coref ab ac bc, non-coref ad bd cd; response {a,b} {c,d}: coref ab cd,
    # non-coref ac ad bc bd. Correct: coref {ab}, non-coref {ad, bd}.
    score = blanc([list("abc"), ["d"]], [list("ab"), list("cd")])
    rc, pc, rn, pn = 1 / 3, 1 / 2, 2 / 3, 2 / 4
    assert_rpf(score, (rc + rn) / 2, (pc + pn) / 2, (f1(rc, pc) + f1(rn, pn)) / 2)
    assert score.counts == (1, 3, 1, 2, 2, 3, 2, 4)


def test_blanc_without_coreference_links_in_key_is_the_non_coreference_score() -> None:
    # all key mentions singletons: non-coref links ab ac bc; response links a-b: non-coref ac bc
    assert_rpf(blanc([["a"], ["b"], ["c"]], [["a", "b"], ["c"]]), 2 / 3, 1.0)


def test_blanc_without_non_coreference_links_in_key_is_the_coreference_score() -> None:
    assert_rpf(blanc([list("abc")], [list("ab"), ["c"]]), 1 / 3, 1.0)


def test_blanc_key_without_any_link_scores_zero() -> None:
    # one key mention: no link of either kind; v8.01 prints 0 even for a perfect response
    assert rpf(blanc([["a"]], [["a"]])) == (0.0, 0.0, 0.0)
    assert rpf(blanc([], [["a", "b"]])) == (0.0, 0.0, 0.0)


def test_blanc_counts_agree_with_enumerating_the_links() -> None:
    rng = random.Random(7)
    for _ in range(200):
        key, response = _random_pair(rng, max_mentions=14)
        doc = _Document.build(key, response, exclude_singletons=False)
        assert _blanc_counts(doc) == _blanc_counts_by_enumeration(doc)


# ---------------------------------------------------------------------------------------------
# Edge cases of the reference scorer
# ---------------------------------------------------------------------------------------------


def test_muc_ignores_singletons() -> None:
    key = [["a", "b", "c"], ["d"], ["e"]]
    response = [["a", "b"], ["c", "d"], ["f"]]
    with_singletons = muc(key, response)
    assert_rpf(with_singletons, 1 / 2, 1 / 2)
    assert rpf(muc(key, response, exclude_singletons=True)) == rpf(with_singletons)


def test_muc_all_singletons_scores_zero() -> None:
    assert muc([["a"], ["b"]], [["a"], ["b"]]) == Score(0.0, 0.0, 0.0, (0, 0, 0, 0))


def test_exclude_singletons_drops_them_from_key_and_response() -> None:
    key = [["a", "b"], ["c"]]
    response = [["a", "b"], ["d"]]
    assert b_cubed(key, response).precision < 1
    for name, score in score_coreference(key, response, exclude_singletons=True).items():
        assert rpf(score) == (1.0, 1.0, 1.0), name
    # a cluster that repeats one span is a singleton too
    assert rpf(b_cubed([["a", "b"]], [["a", "b"], ["x", "x"]], exclude_singletons=True)) == (
        1.0, 1.0, 1.0,
    )  # fmt: skip


def test_ceaf_with_zero_clusters() -> None:
    for metric in (ceaf_m, ceaf_e):
        assert metric([], []) == Score(0.0, 0.0, 0.0, (0, 0, 0, 0))
        assert rpf(metric([["a", "b"]], [])) == (0.0, 0.0, 0.0)
        assert rpf(metric([], [["a", "b"]])) == (0.0, 0.0, 0.0)
    assert ceaf_e([["a", "b"], ["c"]], []).counts == (0, 2, 0, 0)
    assert ceaf_m([["a", "b"], ["c"]], []).counts == (0, 3, 0, 0)


def test_empty_clusters_are_ignored() -> None:
    key = [["a", "b"], [], ["c", "d"]]
    response = [[], ["a", "b"], ["c", "d"], []]
    for name, score in score_coreference(key, response).items():
        assert rpf(score) == (1.0, 1.0, 1.0), name
    assert ceaf_e(key, response).counts == (2, 2, 2, 2)


def test_twinless_mentions_count_in_denominators() -> None:
    # the response misses c and invents x; B3 as v8.01 (no Cai & Strube 2010 adjustment):
    # a and b share 2 of their 3-mention cluster on both sides, c and x score 0: 4/9 and 4/9
    score = b_cubed([["a", "b", "c"]], [["a", "b", "x"]])
    assert_rpf(score, (2 * 2 / 3) / 3, (2 * 2 / 3) / 3)
    assert_rpf(mention_identification([["a", "b", "c"]], [["a", "b", "x", "y"]]), 2 / 3, 2 / 4)


def test_repeated_response_mention_is_kept_where_it_first_occurs() -> None:
    key = [["a", "b"], ["c", "d"]]
    # v8.01 removes the second "a" (case A7-A9 of its suite); clusters then [a, b], [c, d]
    repeated = score_coreference(key, [["a", "b"], ["c", "d", "a"]])
    cleaned = score_coreference(key, [["a", "b"], ["c", "d"]])
    assert repeated == cleaned
    # a cluster emptied by the removal disappears (CEAF-e counts response entities)
    assert ceaf_e(key, [["a", "b"], ["a"], ["c", "d"]]).counts == (2, 2, 2, 2)
    # within one cluster too
    assert score_coreference(key, [["a", "a", "b"], ["c", "d"]]) == cleaned


def test_too_many_repeated_response_mentions_are_refused() -> None:
    key = {"d1": [["a", "b"]], "d2": [["a", "b"]]}
    response = {"d1": [["a", "b"] + ["a"] * 6], "d2": [["a", "b"] + ["b"] * 5]}
    with pytest.raises(DuplicateMentionsError, match="more than 10 repeated mentions.*'d2'"):
        score_coreference(key, response)  # 11 in all: counted over the documents of one call
    assert rpf(muc(key, response, max_duplicates=None)) == (1.0, 1.0, 1.0)
    assert rpf(muc(key, response, max_duplicates=11)) == (1.0, 1.0, 1.0)


def test_key_span_in_two_clusters_follows_v801() -> None:
    # key lists "a" in two clusters: one mention (one id) in both lists, looked up in the LAST
    key = [["a", "b"], ["a", "c"]]
    response = [["a", "b", "c"]]
    scores = score_coreference(key, response)
    assert_rpf(scores["muc"], 1 / 2, 1 / 2)  # correct: 3 - 2 key clusters touched; links 2, 2
    # per response mention: a -> [a,c], b -> [a,b], c -> [a,c]; each shares 2 of 3
    assert_rpf(scores["bcub"], 3 / 4, 2 / 3)
    assert_rpf(scores["ceafm"], 2 / 4, 2 / 3)
    assert_rpf(scores["ceafe"], 0.8 / 2, 0.8 / 1)
    # key links: coref {ab, ac}; non-coref a-a, ac, ab, bc (a pair of a span with itself)
    assert scores["blanc"].counts == (2, 2, 2, 3, 0, 4, 0, 0)
    assert_rpf(scores["blanc"], 1 / 2, 1 / 3, 0.4)


def test_span_repeated_within_a_key_cluster_counts_once() -> None:
    # v8.01 would count "a" twice here and print CEAF-m precision 3/2
    for name, score in score_coreference([["a", "a", "b"]], [["a", "b"]]).items():
        assert rpf(score) == (1.0, 1.0, 1.0), name


def test_documents_only_in_key_or_only_in_response() -> None:
    key = {"both": [["a", "b"]], "key only": [["a", "b"]]}
    response = {"both": [["a", "b"]], "response only": [["x", "y"]]}
    score = muc(key, response)
    assert score.counts == (1, 2, 1, 1)  # the key-only doc costs recall; the other is ignored
    with pytest.raises(ValueError, match="not in the key"):
        muc(key, response, strict_documents=True)


def test_scores_are_micro_averaged_over_documents() -> None:
    key = {"d1": [list("abcd")], "d2": [list("ab")]}
    response = {"d1": [list("abcd")], "d2": [["a"], ["b"]]}
    score = muc(key, response)
    assert score.counts == (3, 4, 3, 3)
    assert_rpf(score, 3 / 4, 1.0)  # not the macro mean (1 + 0) / 2
    blanc_score = blanc(key, response)
    assert blanc_score.counts == (6, 7, 6, 6, 0, 0, 0, 1)
    assert_rpf(blanc_score, 6 / 7, 1.0)  # summed counts: the key has no non-coref link at all


def test_conll_f1_and_flat_metrics() -> None:
    scores = score_coreference(BB_KEY, BB_RESPONSE_A)
    expected = (scores["muc"].f1 + scores["bcub"].f1 + scores["ceafe"].f1) / 3
    assert conll_f1(scores) == pytest.approx(expected, abs=1e-15)
    flat = as_metrics(scores)
    assert flat["conll_f1"] == conll_f1(scores)
    assert flat["bcub_p"] == pytest.approx(16 / 21)
    assert set(flat) == {f"{m}_{x}" for m in COREF_METRICS for x in ("r", "p", "f1")} | {"conll_f1"}
    with pytest.raises(ValueError, match="ceafe"):
        conll_f1({"muc": scores["muc"], "bcub": scores["bcub"]})


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="unknown coreference metric"):
        score_coreference([], [], metrics=["muc", "ceaf"])
    with pytest.raises(TypeError, match="both"):
        score_coreference({"d": []}, [])


def test_spans_as_lists_are_accepted() -> None:
    # JSON gives spans as lists: they are compared as tuples
    assert rpf(b_cubed([[[0, 2], [5, 6]]], [[(0, 2), (5, 6)]])) == (1.0, 1.0, 1.0)


def test_exact_fractions() -> None:
    # a case with non-terminating decimals, checked to the last bits against Fractions
    key = [list("abcde"), list("fg"), list("hij")]
    response = [list("abf"), list("cdeg"), list("hx"), ["i"]]
    score = b_cubed(key, response)
    k = [set(c) for c in key]
    r = [set(c) for c in response]
    recall = sum(Fraction(len(a & b) ** 2, len(a)) for a in k for b in r) / 10
    precision = sum(Fraction(len(a & b) ** 2, len(b)) for a in k for b in r) / 10
    assert score.recall == pytest.approx(float(recall), abs=1e-15)
    assert score.precision == pytest.approx(float(precision), abs=1e-15)


# ---------------------------------------------------------------------------------------------
# Mentions tables
# ---------------------------------------------------------------------------------------------


def _rows(doc_id: str, clusters: list[list[tuple[int, int]]], annotator: str) -> list[dict]:
    return [
        {"doc_id": doc_id, "start": s, "end": e, "cluster": c, "annotator": annotator}
        for c, cluster in enumerate(clusters)
        for s, e in cluster
    ]


def test_clusters_from_mentions_table_and_rows() -> None:
    rows = [
        {"doc_id": "d2", "start": 4, "end": 5, "cluster": 7, "annotator": "gold"},
        {"doc_id": "d1", "start": 0, "end": 2, "cluster": 3, "annotator": "gold"},
        {"doc_id": "d2", "start": 0, "end": 1, "cluster": 2, "annotator": "gold"},
        {"doc_id": "d2", "start": 9, "end": 10, "cluster": 7, "annotator": "gold"},
    ]
    expected = {"d2": [[(4, 5), (9, 10)], [(0, 1)]], "d1": [[(0, 2)]]}
    assert clusters_from_mentions(rows) == expected
    table = pa.Table.from_pylist(rows, schema=MENTIONS_SCHEMA)
    assert clusters_from_mentions(table) == expected
    # rows without the annotator field are fine when no annotator is asked for
    plain = [{k: v for k, v in row.items() if k != "annotator"} for row in rows]
    assert clusters_from_mentions(plain) == expected


def test_clusters_from_mentions_selects_one_annotator() -> None:
    rows = _rows("d", [[(0, 1), (3, 4)]], "gold") + _rows("d", [[(0, 1)], [(3, 4)]], "model")
    with pytest.raises(ValueError, match="several annotators"):
        clusters_from_mentions(rows)
    assert clusters_from_mentions(rows, annotator="model") == {"d": [[(0, 1)], [(3, 4)]]}
    with pytest.raises(ValueError, match="lack field"):
        clusters_from_mentions([{"doc_id": "d", "start": 0, "end": 1}])
    with pytest.raises(ValueError, match="lacks column"):
        clusters_from_mentions(pa.table({"doc_id": ["d"], "start": [0], "end": [1]}))


def test_score_mention_tables() -> None:
    gold = pa.Table.from_pylist(
        _rows("d1", [[(0, 1), (3, 4), (6, 8)]], "gold") + _rows("d2", [[(1, 2), (5, 6)]], "gold"),
        schema=MENTIONS_SCHEMA,
    )
    predicted = pa.Table.from_pylist(
        _rows("d1", [[(0, 1), (3, 4)], [(6, 8)]], "model")
        + _rows("d3", [[(0, 1), (2, 3)]], "model"),
        schema=MENTIONS_SCHEMA,
    )
    scores = score_mention_tables(gold, predicted)
    assert scores["muc"].counts == (1, 3, 1, 1)  # d2 unanswered, d3 (no gold rows) ignored
    # with the document list, d3 is scored against an empty key: its link costs precision
    scores = score_mention_tables(gold, predicted, documents=["d1", "d2", "d3"])
    assert scores["muc"].counts == (1, 3, 1, 2)


# ---------------------------------------------------------------------------------------------
# Cross-check against scorch (an independent implementation of MUC, B3, CEAF, BLANC)
# ---------------------------------------------------------------------------------------------


def _random_pair(rng: random.Random, max_mentions: int = 30) -> tuple[list, list]:
    """A key and a response over partly shared spans: twinless mentions and singletons on both
    sides, no span repeated (scorch takes sets)."""
    n = rng.randint(1, max_mentions)
    spans = [(i, i + rng.randint(1, 3)) for i in rng.sample(range(4 * max_mentions), n)]
    key_spans = [s for s in spans if rng.random() < 0.9] or spans[:1]
    response_spans = [s for s in spans if rng.random() < 0.8] or spans[-1:]

    def partition(items: list) -> list[list]:
        k = rng.randint(1, len(items))
        clusters: dict[int, list] = {}
        for item in items:
            clusters.setdefault(rng.randrange(k), []).append(item)
        return list(clusters.values())

    return partition(key_spans), partition(response_spans)


def test_agrees_with_scorch_on_random_clusterings() -> None:
    scorch = pytest.importorskip("scorch.scores")
    rng = random.Random(2024)
    compared_blanc = 0
    for _ in range(50):
        key, response = _random_pair(rng)
        ours = score_coreference(key, response)
        key_sets, response_sets = [set(c) for c in key], [set(c) for c in response]
        for name, theirs in (
            ("muc", scorch.muc),
            ("bcub", scorch.b_cubed),
            ("ceafm", scorch.ceaf_m),
            ("ceafe", scorch.ceaf_e),
        ):
            expected = theirs(key_sets, response_sets)
            assert rpf(ours[name]) == pytest.approx(expected, abs=1e-9), (name, key, response)
        # BLANC only where both conventions agree: scorch scores a key of a single mention by
        # Recasens & Hovy's edge cases (1.0 when the response has that mention alone) where
        # v8.01 prints 0, and its link enumeration fails on an empty response. With >= 2 key
        # mentions both give the mean of the coref and non-coref scores, or the one the key has.
        if len(set().union(*key_sets)) >= 2:
            expected = scorch.blanc(key_sets, response_sets, fast=False)
            assert rpf(ours["blanc"]) == pytest.approx(expected, abs=1e-9), (key, response)
            compared_blanc += 1
    assert compared_blanc >= 40


def test_scorch_blanc_differs_on_single_mention_keys() -> None:
    # documents the difference the comparison above leaves out
    scorch = pytest.importorskip("scorch.scores")
    assert scorch.blanc([{"a"}], [{"a"}]) == (1.0, 1.0, 1.0)
    assert rpf(blanc([["a"]], [["a"]])) == (0.0, 0.0, 0.0)


# ---------------------------------------------------------------------------------------------
# Speed: the CoNLL-2012 test set has 348 documents (Ji et al., 2017); scoring must not matter
# ---------------------------------------------------------------------------------------------


def test_scoring_a_thousand_documents_is_fast() -> None:
    rng = random.Random(3)
    key, response = {}, {}
    for d in range(1000):
        k, r = _random_pair(rng, max_mentions=80)
        key[str(d)], response[str(d)] = k, r
    start = time.perf_counter()
    scores = score_coreference(key, response)
    elapsed = time.perf_counter() - start
    assert 0 < scores["ceafe"].f1 < 1
    assert elapsed < 10, f"scoring 1000 documents took {elapsed:.1f}s"
