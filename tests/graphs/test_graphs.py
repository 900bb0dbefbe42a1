"""MAGE graphs (tasks/graphs/dags.py): hand-built examples with exact predecessor arrays, the
multi-sequence permutation, the chain assumption, prefix clipping, bAbI-Mix, and the real
synthetic corpus through tasks.core.storage.to_table."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.core.storage import check_mentions_in_range, to_table
from tasks.graphs import dags as graphs
from tasks.graphs.babi_mix import BABI_ALTERNATES, mix_babi
from tasks.graphs.dags import (
    EdgeType,
    GraphError,
    Segment,
    build_graph,
    build_graphs,
    edge_type_names,
    segment_order,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SEQ, COREF = 0, 1  # outer index of the default edge types in forward / backward

# --------------------------------------------------------------------------- one sequence

#          0      1      2      3     4      5    6      7          8      9
TOKENS = ["the", "old", "man", "saw", "Mary", ".", "he", "greeted", "her", "."]
MENTIONS = [(0, 3, 0), (4, 5, 1), (6, 7, 0), (8, 9, 1)]


def test_single_sequence_exact_predecessors_with_inverse_edges():
    g = build_graph([Segment("document", TOKENS, MENTIONS)])
    assert g.forward_types == ["sequential", "coreference"]
    assert g.backward_types == ["sequential_inverse", "coreference_inverse"]
    assert g.forward[SEQ] == [-1, 0, 1, 2, 3, 4, 5, 6, 7, 8]
    # last token of "the old man" (2) -> "he" (6); "Mary" (4) -> "her" (8)
    assert g.forward[COREF] == [-1, -1, -1, -1, -1, -1, 2, -1, 4, -1]
    # §3.1 inverse edges, all i > j: the backward DAG
    assert g.backward[SEQ] == [1, 2, 3, 4, 5, 6, 7, 8, 9, -1]
    assert g.backward[COREF] == [-1, -1, 6, -1, 8, -1, -1, -1, -1, -1]
    assert g.chain == [0, 0, 0, -1, 1, -1, 0, -1, 1, -1]
    assert g.segments == ["document"] and g.segment_starts == [0]
    assert g.stats["edges_coreference"] == 2 and g.stats["edges_sequential"] == 9


def test_predecessors_point_the_right_way_for_every_type():
    g = build_graph([Segment("document", TOKENS, MENTIONS)])
    for pred in g.forward:
        assert all(p < t for t, p in enumerate(pred) if p != -1)
    for pred in g.backward:
        assert all(p > t for t, p in enumerate(pred) if p != -1)


def test_cross_sequence_coreference_in_both_orders():
    context = Segment("context", ["Mary", "went", "home", "."], [(0, 1, 5)])
    query = Segment("query", ["where", "is", "Mary", "?"], [(2, 3, 5)])
    g = build_graph([context, query])
    assert g.segments == ["context", "query"] and g.segment_starts == [0, 4]
    assert g.forward[SEQ][4] == 3  # the sequence runs on across the junction (§3.3)
    assert g.forward[COREF] == [-1, -1, -1, -1, -1, -1, 0, -1]
    assert g.backward[COREF] == [6, -1, -1, -1, -1, -1, -1, -1]
    assert g.chain == [5, -1, -1, -1, -1, -1, 5, -1]

    g = build_graph([query, context])
    assert g.segments == ["query", "context"] and g.segment_starts == [0, 4]
    assert g.tokens[:4] == ["where", "is", "Mary", "?"]
    assert g.forward[SEQ][4] == 3
    assert g.forward[COREF] == [-1, -1, -1, -1, 2, -1, -1, -1]
    assert g.backward[COREF] == [-1, -1, 4, -1, -1, -1, -1, -1]


NESTED = ["John", "'s", "dog", "barked", ".", "John", "'s", "dog", "slept"]
# "John" (A) and "John 's dog" (B) both start at tokens 0 and 5
NESTED_MENTIONS = [(0, 1, 0), (0, 3, 1), (5, 6, 0), (5, 8, 1)]


def test_two_incoming_edges_of_one_type_is_an_error_naming_the_document():
    with pytest.raises(GraphError) as err:
        build_graph([Segment("document", NESTED, NESTED_MENTIONS)], graph_id="g1", doc_id="d/7")
    msg = str(err.value)
    assert "d/7" in msg and "token 5" in msg and "'coreference'" in msg
    assert "from tokens 0 and 2" in msg and "Eq. 4" in msg


def test_nearest_keeps_the_closer_source_and_counts():
    g = build_graph([Segment("document", NESTED, NESTED_MENTIONS)], on_conflict="nearest")
    assert g.forward[COREF][5] == 2  # "dog" (2) is nearer to 5 than "John" (0)
    assert g.stats["conflicts_resolved_coreference"] == 1
    # backward: the inverses 5 -> 0 (A) and 5 -> 2 (B) enter different tokens: no conflict
    assert g.backward[COREF] == [5, -1, 5, -1, -1, -1, -1, -1, -1]
    assert g.chain == [0, 1, 1, -1, -1, 0, 1, 1, -1]  # innermost mention wins
    with pytest.raises(GraphError, match="on_conflict"):
        build_graph([Segment("d", NESTED, NESTED_MENTIONS)], on_conflict="first")


def test_overlapping_mentions_of_one_chain_give_no_edge_and_are_counted():
    g = build_graph([Segment("d", TOKENS, [(0, 3, 0), (2, 3, 0), (6, 7, 0)])])
    assert g.forward[COREF][6] == 2 and g.forward[COREF][2] == -1
    assert g.stats["coref_overlapping_pairs_skipped"] == 1


def test_mention_outside_its_segment_is_rejected():
    with pytest.raises(GraphError, match=r"\[3, 9\) outside segment 'query' of 4 tokens"):
        build_graph([Segment("query", ["a", "b", "c", "d"], [(3, 9, 0)])], graph_id="it")


def test_edge_type_registry_is_extensible(monkeypatch):
    def same_word(seq, stats):
        last: dict[str, int] = {}
        edges = []
        for t, tok in enumerate(seq.tokens):
            if tok in last:
                edges.append((last[tok], t))
            last[tok] = t
        return edges

    monkeypatch.setattr(graphs, "EDGE_TYPES", graphs.EDGE_TYPES.copy())
    graphs.register_edge_type(EdgeType("same_word", "same_word_inverse", same_word))
    with pytest.raises(GraphError, match="already registered"):
        graphs.register_edge_type(EdgeType("same_word", "x", same_word))
    types = ("sequential", "coreference", "same_word")
    g = build_graph([Segment("d", TOKENS, MENTIONS)], edge_types=types)
    assert g.forward_types[2] == "same_word" and g.backward_types[2] == "same_word_inverse"
    assert g.forward[2][9] == 5 and g.backward[2][5] == 9  # the two "."

    # a relation whose edges run both ways (hypernym -> hyponym) feeds both DAGs
    both = EdgeType("isa", "isa_inverse", lambda seq, st: [(4, 0), (2, 8)], forward_only=False)
    assert edge_type_names(["sequential", both]) == (
        ["sequential", "isa", "isa_inverse"],
        ["sequential_inverse", "isa", "isa_inverse"],
    )
    g = build_graph([Segment("d", TOKENS, [])], edge_types=["sequential", both])
    assert g.forward[1][8] == 2 and g.forward[2][4] == 0  # isa 2->8; inverse of 4->0
    assert g.backward[1][0] == 4 and g.backward[2][2] == 8

    bad = EdgeType("bad", "bad_inverse", lambda seq, st: [(5, 1)])
    with pytest.raises(GraphError, match="forward_only"):
        build_graph([Segment("d", TOKENS, [])], edge_types=[bad])


# --------------------------------------------------------------------------- tables


def _docs_items():
    docs = [
        {
            "doc_id": "toy/a",
            "split": "train",
            "tokens": ["Mary", "took", "milk", ".", "She", "left", "it", "there", "."],
            "sentence_starts": [0, 4],
            "genre": None,
            "speakers": None,
        },
    ]
    mentions = [
        {"doc_id": "toy/a", "start": s, "end": e, "cluster": c, "annotator": "gold"}
        for s, e, c in [(0, 1, 0), (2, 3, 1), (4, 5, 0), (6, 7, 1)]
    ]
    items = [
        {
            "item_id": f"toy/a/q{k}",
            "doc_id": "toy/a",
            "split": "train",
            "task": "t",
            "context_end": end,
            "query": ["Where", "is", "Mary", "?"],
            "answer": "there",
            "candidates": ["there", "here"],
            "supporting": None,
        }
        for k, end in enumerate([4, 5, 9])
    ]
    qm = [
        {"item_id": f"toy/a/q{k}", "start": 2, "end": 3, "cluster": 0, "annotator": "gold"}
        for k in range(3)
    ]
    return docs, items, mentions, qm


def test_build_graphs_per_item_with_clipping_and_metadata():
    docs, items, mentions, qm = _docs_items()
    # a mention [4, 6) that context_end 5 cuts
    crossing = {"doc_id": "toy/a", "start": 4, "end": 6, "cluster": 2, "annotator": "gold"}
    built = build_graphs(docs, items, [*mentions, crossing], qm, seed=3)
    assert [r["graph_id"] for r in built.rows] == ["toy/a/q0", "toy/a/q1", "toy/a/q2"]
    # q1 (end 5) cuts it; q0 (end 4) ends before it starts; q2 (end 9) holds it whole
    assert built.stats["mentions_crossing_context_end"] == 1
    assert 2 not in built.rows[0]["chain"] and 2 in built.rows[2]["chain"]
    assert json.loads(built.metadata["forward_edge_types"]) == ["sequential", "coreference"]
    assert json.loads(built.metadata["backward_edge_types"]) == [
        "sequential_inverse",
        "coreference_inverse",
    ]
    q1 = built.rows[1]
    assert q1["item_id"] == "toy/a/q1" and q1["doc_id"] == "toy/a" and q1["answer"] == "there"
    assert q1["candidates"] == ["there", "here"] and q1["task"] == "t"
    assert len(q1["tokens"]) == 5 + 4
    order = q1["segments"]
    assert sorted(order) == ["context", "query"]
    assert order == segment_order("toy/a/q1", 3, ["context", "query"])
    start = dict(zip(q1["segments"], q1["segment_starts"], strict=True))
    ctx, qry = start["context"], start["query"]
    assert q1["tokens"][ctx : ctx + 5] == docs[0]["tokens"][:5]
    # context "She" (4) keeps its chain, "she left" (crossing) is gone: chain 0, not 2
    assert q1["chain"][ctx + 4] == 0 and 2 not in q1["chain"]
    # the query's "Mary" is linked to the context chain, across the junction
    mary_q, she = qry + 2, ctx + 4
    fwd, bwd = q1["forward"][COREF], q1["backward"][COREF]
    if order == ["context", "query"]:
        assert fwd[mary_q] == she and bwd[she] == mary_q
    else:
        assert fwd[ctx + 0] == mary_q and bwd[mary_q] == ctx + 0
    table = to_table("graphs", built.rows)
    assert table.num_rows == 3


def test_lambada_like_item_with_empty_query_is_context_only():
    docs, items, mentions, _ = _docs_items()
    item = {**items[2], "query": [], "item_id": "toy/a/cloze"}
    built = build_graphs(docs, [item], mentions, None, seed=0)
    (row,) = built.rows
    assert row["segments"] == ["context"] and row["segment_starts"] == [0]
    assert row["tokens"] == docs[0]["tokens"]
    assert row["forward"][COREF] == [-1, -1, -1, -1, 0, -1, 2, -1, -1]


def test_documents_without_items_give_one_graph_each():
    docs, _, mentions, _ = _docs_items()
    built = build_graphs(docs, [], mentions, [], seed=0)
    (row,) = built.rows
    assert row["graph_id"] == "toy/a" and row["item_id"] is None and row["task"] is None
    assert row["segments"] == ["document"]
    assert row["forward"][COREF] == [-1, -1, -1, -1, 0, -1, 2, -1, -1]
    to_table("graphs", built.rows)


def test_permutation_is_seeded_per_item_and_both_orders_occur():
    names = ["context", "query"]
    ids = [f"c/{i}" for i in range(200)]
    first = [segment_order(i, 13, names) for i in ids]
    assert first == [segment_order(i, 13, names) for i in ids]  # same seed, same order
    counts = Counter(tuple(o) for o in first)
    assert set(counts) == {("context", "query"), ("query", "context")}
    assert 60 < counts[("context", "query")] < 140  # one fair coin per item
    other = [segment_order(i, 14, names) for i in ids]
    assert other != first  # the seed matters
    assert len({tuple(o) for o in first[:20]}) == 2  # different items, different orders


def test_build_graphs_is_deterministic_and_order_independent():
    docs, items, mentions, qm = _docs_items()
    a = build_graphs(docs, items, mentions, qm, seed=5).rows
    shuffled = list(items)
    random.Random(1).shuffle(shuffled)
    b = build_graphs(docs, shuffled, list(reversed(mentions)), qm, seed=5).rows
    assert a == b


def test_input_errors_name_the_culprit():
    docs, items, mentions, qm = _docs_items()
    other = [{**m, "annotator": "stanza"} for m in mentions]
    with pytest.raises(GraphError, match="several annotators"):
        build_graphs(docs, items, mentions + other, qm, seed=0)
    assert build_graphs(docs, items, mentions + other, qm, seed=0, annotator="gold").rows
    with pytest.raises(GraphError, match=r"beyond document toy/a \(9 tokens\)"):
        build_graphs(docs, items, [{**mentions[0], "end": 10}], qm, seed=0)
    with pytest.raises(GraphError, match="context_end 12 outside document toy/a"):
        build_graphs(docs, [{**items[0], "context_end": 12}], mentions, None, seed=0)
    with pytest.raises(GraphError, match="unknown items"):
        build_graphs(docs, items, mentions, [{**qm[0], "item_id": "nope"}], seed=0)
    with pytest.raises(GraphError, match="unknown edge type 'hyponymy'"):
        build_graphs(docs, items, mentions, qm, seed=0, edge_types=["hyponymy"])


# --------------------------------------------------------------------------- bAbI-Mix


def _babi(n_stories: int):
    docs, items = [], []
    names = ["Mary", "John", "Daniel", "Sandra"]
    places = ["kitchen", "garden", "office", "hallway"]
    for k in range(n_stories):
        sents = [
            [names[(k + j) % 4], "went", "to", "the", places[(k * 3 + j) % 4], "."]
            for j in range(3)
        ]
        tokens = [t for s in sents for t in s]
        doc_id = f"babi/en/qa1/train/{k}"
        docs.append(
            {
                "doc_id": doc_id,
                "split": "train",
                "tokens": tokens,
                "sentence_starts": [0, 6, 12],
                "genre": None,
                "speakers": None,
            }
        )
        for q, (end, sup) in enumerate([(12, 1), (18, 2)]):
            s = sents[sup]
            items.append(
                {
                    "item_id": f"{doc_id}/q{q}",
                    "doc_id": doc_id,
                    "split": "train",
                    "task": "qa1",
                    "context_end": end,
                    "query": ["Where", "is", s[0], "?"],
                    "answer": s[4],
                    "candidates": None,
                    "supporting": [sup],
                }
            )
    mentions = [
        {"doc_id": d["doc_id"], "start": 6 * j, "end": 6 * j + 1, "cluster": j, "annotator": "x"}
        for d in docs
        for j in range(3)
    ]
    return docs, items, mentions


def test_babi_mix_interleaves_renames_and_remaps_items():
    docs, items, mentions = _babi(4)
    mixed = mix_babi(docs, items, mentions, seed=11)
    assert len(mixed.documents) == 2 and len(mixed.items) == len(items)
    by_id = {d["doc_id"]: d for d in docs}
    for doc in mixed.documents:
        a_id, b_local = doc["doc_id"].removeprefix("babi_mix/").split("+")
        a, b = by_id[f"babi/{a_id}"], by_id[f"babi/en/qa1/train/{b_local}"]
        sents = [
            doc["tokens"][s:e]
            for s, e in zip(
                doc["sentence_starts"],
                doc["sentence_starts"][1:] + [len(doc["tokens"])],
                strict=True,
            )
        ]
        assert len(sents) == 6
        orig = {
            "a": [a["tokens"][i : i + 6] for i in (0, 6, 12)],
            "b": [b["tokens"][i : i + 6] for i in (0, 6, 12)],
        }
        renamed = {k: [[BABI_ALTERNATES.get(t, t) for t in s] for s in v] for k, v in orig.items()}
        # exactly one story is renamed; each keeps its own sentence order
        a_plain = [s for s in sents if s in orig["a"]]
        a_ren = [s for s in sents if s in renamed["a"]]
        b_plain = [s for s in sents if s in orig["b"]]
        b_ren = [s for s in sents if s in renamed["b"]]
        assert (a_plain == orig["a"] and b_ren == renamed["b"]) or (
            a_ren == renamed["a"] and b_plain == orig["b"]
        )
        for it in (i for i in mixed.items if i["doc_id"] == doc["doc_id"]):
            side = it["item_id"].split("/")[-2]
            story = by_id[f"babi/{a_id}"] if side == "a" else by_id[f"babi/en/qa1/train/{b_local}"]
            src = next(
                i for i in items if i["item_id"] == f"{story['doc_id']}/{it['item_id'][-2:]}"
            )
            was_renamed = (side == "a" and a_ren == renamed["a"]) or (
                side == "b" and b_ren == renamed["b"]
            )
            ren = (lambda t: BABI_ALTERNATES.get(t, t)) if was_renamed else (lambda t: t)
            assert it["query"] == [ren(t) for t in src["query"]]
            assert it["answer"] == ren(src["answer"])
            # the supporting sentence moved with its index; the context ends right after
            # the story's last sentence before the original context_end
            (k,) = it["supporting"]
            assert sents[k] == [ren(t) for t in story["tokens"][6 * src["supporting"][0] :][:6]]
            context = doc["tokens"][: it["context_end"]]
            n_story = src["context_end"] // 6
            mine = [s for s in sents if s in (renamed if was_renamed else orig)[side]]
            assert context[-6:] == mine[n_story - 1]
            assert sum(1 for s in sents[: len(context) // 6] if s in mine) == n_story
    to_table("documents", mixed.documents)
    to_table("items", mixed.items)
    check_mentions_in_range(
        to_table("documents", mixed.documents), to_table("mentions", mixed.mentions)
    )
    # mentions moved with their sentences; clusters of the two stories stay apart
    for doc in mixed.documents:
        ms = [m for m in mixed.mentions if m["doc_id"] == doc["doc_id"]]
        assert len(ms) == 6 and len({m["cluster"] for m in ms}) == 6
        assert all(doc["sentence_starts"].count(m["start"]) == 1 for m in ms)


def test_babi_mix_is_seeded_and_checks_its_alternates():
    docs, items, mentions = _babi(5)
    one = mix_babi(docs, items, mentions, seed=1)
    assert one == mix_babi(docs, items, mentions, seed=1)
    others = [mix_babi(docs, items, mentions, seed=s).documents for s in range(2, 6)]
    assert any(o != one.documents for o in others)
    # odd count: the last story is mixed with a reused one, its questions asked once
    assert len(one.documents) == 3 and len(one.items) == len(items)
    assert any("odd count" in n for n in one.notes)
    with pytest.raises(Exception, match="already occur in the corpus"):
        mix_babi(docs, items, mentions, seed=1, alternates={"Mary": "John"})
    with pytest.raises(Exception, match="distinct words"):
        mix_babi(docs, items, mentions, seed=1, alternates={"Mary": "Zed", "John": "Zed"})


def test_babi_mix_pairs_stories_within_one_release():
    """bAbI en and en-10k in one corpus: a 1k story is never mixed with a 10k one."""
    docs, items, mentions = _babi(8)

    def release(row):  # stories 4-7 become en-10k stories
        if int(row["doc_id"].split("/")[4]) < 4:
            return row
        return {**row, "doc_id": row["doc_id"].replace("babi/en/", "babi/en-10k/")}

    docs, items, mentions = ([release(r) for r in rows] for rows in (docs, items, mentions))
    for seed in range(1, 9):
        mixed = mix_babi(docs, items, mentions, seed=seed)
        assert len(mixed.documents) == 4 and len(mixed.items) == len(items)
        # a pair within one release has a common id 'en-10k/qa1/train/5+7'
        assert sorted(d["doc_id"].split("/")[1] for d in mixed.documents) == [
            "en",
            "en",
            "en-10k",
            "en-10k",
        ]
        assert all("/" not in d["doc_id"].split("+")[1] for d in mixed.documents)


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def synthetic_tables(tmp_path_factory):
    """data/docs/synthetic when the pipeline made it, else the same corpus generated here."""
    root = REPO_ROOT / "data" / "docs" / "synthetic"
    if (root / "documents.parquet").exists():
        return tuple(
            pq.read_table(root / f"{k}.parquet") for k in ("documents", "items", "mentions")
        )
    from tasks.corpora import synthetic

    raw = tmp_path_factory.mktemp("synthetic")
    synthetic.generate(raw, {})
    norm = synthetic.normalize(raw, {})
    return (
        to_table("documents", norm.documents),
        to_table("items", norm.items),
        to_table("mentions", norm.mentions),
    )


def test_synthetic_corpus_graphs_are_valid(synthetic_tables):
    documents, items, mentions = synthetic_tables
    t0 = time.perf_counter()
    built = build_graphs(documents, items, mentions, None, seed=13, on_conflict="nearest")
    elapsed = time.perf_counter() - t0
    table = to_table("graphs", built.rows)
    assert table.num_rows == items.num_rows == built.stats["graphs"]
    assert elapsed < 10, f"{table.num_rows} graphs took {elapsed:.1f}s"
    orders = Counter(tuple(r["segments"]) for r in built.rows)
    assert set(orders) == {("context", "query"), ("query", "context")}
    n_edges = 0
    for r in built.rows:
        n = len(r["tokens"])
        assert all(len(p) == n for p in r["forward"] + r["backward"]) and len(r["chain"]) == n
        assert r["forward"][SEQ] == list(range(-1, n - 1))
        assert r["backward"][SEQ] == list(range(1, n)) + [-1]
        fwd, bwd = r["forward"][COREF], r["backward"][COREF]
        assert all(p < t for t, p in enumerate(fwd) if p != -1)
        assert all(p > t for t, p in enumerate(bwd) if p != -1)
        # every coreference edge joins two tokens of mentions of one chain
        assert all(
            r["chain"][t] != -1 and r["chain"][p] != -1 for t, p in enumerate(fwd) if p != -1
        )
        n_edges += sum(p != -1 for p in fwd)
    kept = built.stats["edges_coreference"] - built.stats["conflicts_resolved_coreference"]
    assert n_edges == kept > 0
    assert (
        built.rows
        == build_graphs(documents, items, mentions, None, seed=13, on_conflict="nearest").rows
    )
