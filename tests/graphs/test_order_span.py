"""Segment order (graphs.order) and mention span (graphs.mention_span) of the graph stage
(tasks/graphs/dags.py ORDERS, MENTION_SPANS): the paper's random order per item (§3.3) stays
the default; the released code's document -> query order and the reverse are fixed orders;
mention spans with or without their determiner; each variant its own graph run."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from flows import graphs as graphs_flow
from tasks.annotation.runs import RunEntry
from tasks.core import config, storage
from tasks.core.schema import DOCUMENTS, GRAPHS, ITEMS, MENTIONS, QUERY_MENTIONS
from tasks.core.settings import ConfigError, parse_settings
from tasks.graphs import runs
from tasks.graphs.dags import GraphError, build_graphs, segment_order, trim_determiners

SEQ, COREF = 0, 1
#          0       1        2     3      4          5    6       7        8      9
TOKENS = ["Mary", "moved", "to", "the", "hallway", ".", "Mary", "left", "the", "hallway"]
MENTIONS_ = [(0, 1, 0), (3, 5, 1), (6, 7, 0), (8, 10, 1)]
QUERY = ["Where", "is", "the", "hallway", "?"]


def _tables(n_items: int = 8):
    docs = [{"doc_id": "d", "tokens": TOKENS, "split": "train"}]
    items = [
        {"item_id": f"i{k}", "doc_id": "d", "split": "train", "context_end": len(TOKENS),
         "query": QUERY, "answer": "hallway", "task": "qa", "candidates": None}
        for k in range(n_items)
    ]  # fmt: skip
    mentions = [
        {"doc_id": "d", "start": s, "end": e, "cluster": c, "annotator": "a"}
        for s, e, c in MENTIONS_
    ]
    query_mentions = [
        {"item_id": f"i{k}", "start": 2, "end": 4, "cluster": 1, "annotator": "a"}
        for k in range(n_items)
    ]
    return docs, items, mentions, query_mentions


def test_fixed_orders_and_the_papers_random_one():
    names = ["context", "query"]
    drawn = {tuple(segment_order(f"i{k}", 13, names)) for k in range(20)}
    assert drawn == {("context", "query"), ("query", "context")}  # §3.3: random per item
    assert segment_order("i1", 13, names) == segment_order("i1", 13, names, "random")
    for k in range(20):
        assert segment_order(f"i{k}", 13, names, "document_query") == ["context", "query"]
        assert segment_order(f"i{k}", 13, names, "query_document") == ["query", "context"]
    assert segment_order("i", 1, ["context"], "query_document") == ["context"]  # LAMBADA
    with pytest.raises(GraphError, match="order"):
        segment_order("i", 1, names, "alphabetical")


def test_document_query_reads_the_query_after_the_document():
    """The released GA.py: forward over the document, then the query with the document's chain
    memory -- one concatenation [context, query] whose sequential and coreference edges run
    into the query."""
    tables = _tables()
    graphs = build_graphs(*tables, seed=13, order="document_query")
    assert all(r["segments"] == ["context", "query"] for r in graphs.rows)
    assert graphs.stats["order_context+query"] == 8
    row = graphs.rows[0]
    n = len(TOKENS)
    assert row["forward"][SEQ][n] == n - 1  # the query's first token follows the document's last
    assert row["forward"][COREF][n + 2] == 9  # "the hallway" of the query <- the document's
    assert graphs.metadata["segment_order"] == "document_query"
    reverse = build_graphs(*tables, seed=13, order="query_document")
    assert all(r["segments"] == ["query", "context"] for r in reverse.rows)
    paper = build_graphs(*tables, seed=13)
    assert {tuple(r["segments"]) for r in paper.rows} == {
        ("context", "query"),
        ("query", "context"),
    }
    assert "segment_order" not in paper.metadata and "mention_span" not in paper.metadata
    assert paper.rows == build_graphs(*tables, seed=13, order="random").rows


def test_mentions_without_their_determiner():
    stats: Counter = Counter()
    spans = trim_determiners([(3, 5, 1), (0, 1, 0), (8, 10, 1), (8, 9, 2)], TOKENS, stats)
    # "the hallway" -> "hallway"; a one-token "the" and a name stay
    assert spans == [(0, 1, 0), (4, 5, 1), (8, 9, 2), (9, 10, 1)]
    assert stats["mention_determiners_dropped"] == 2
    assert trim_determiners([(0, 2, 0)], ["An", "apple"], stats) == [(1, 2, 0)]


def test_no_determiner_moves_the_coreference_edges_onto_the_nouns():
    tables = _tables(1)
    annotated = build_graphs(*tables, seed=13, order="document_query").rows[0]
    bare = build_graphs(*tables, seed=13, order="document_query", mention_span="no_determiner")
    row = bare.rows[0]
    n = len(TOKENS)
    # paper placement: last token of a mention -> FIRST token of the chain's next mention
    assert annotated["forward"][COREF][8] == 4 and annotated["forward"][COREF][9] == -1
    assert row["forward"][COREF][8] == -1 and row["forward"][COREF][9] == 4
    assert annotated["forward"][COREF][n + 2] == 9 and row["forward"][COREF][n + 3] == 9
    assert row["backward"][COREF][4] == 9  # the inverse edge leaves from the noun
    # the one-hot chain feature marks the nouns only
    assert annotated["chain"][3] == annotated["chain"][4] == 1
    assert row["chain"][3] == -1 and row["chain"][4] == 1 and row["chain"][n + 2] == -1
    assert bare.metadata["mention_span"] == "no_determiner"
    assert bare.stats["mention_determiners_dropped"] == 3  # two in the document, one in the query
    with pytest.raises(GraphError, match="mention span"):
        build_graphs(*tables, seed=13, mention_span="head")


def test_every_variant_is_its_own_graph_run():
    assert runs.graph_run("babi") == "babi"
    assert runs.graph_run("babi", order="document_query") == "babi-document-query"
    assert runs.graph_run("babi", mention_span="no_determiner") == "babi-no-determiner"
    assert (
        runs.graph_run("babi", placement="sentence", order="query_document",
                        mention_span="no_determiner")
        == "babi-sentence-query-document-no-determiner"
    )  # fmt: skip
    assert runs.placement_run("babi", "sentence") == "babi-sentence"
    cells = {
        runs.graph_run("r", placement=p, order=o, mention_span=s)
        for p in ("paper", "sentence")
        for o in ("random", "document_query", "query_document")
        for s in ("annotated", "no_determiner")
    }
    assert len(cells) == 12  # an order x placement x span grid never shares a table


def test_settings_are_parsed_strictly():
    cfg = parse_settings(runs.GraphSettings, {"order": "document_query"}, "graphs")
    assert (cfg.order, cfg.mention_span) == ("document_query", "annotated")
    with pytest.raises(ConfigError, match="graphs.order"):
        parse_settings(runs.GraphSettings, {"order": "doc_first"}, "graphs")
    with pytest.raises(ConfigError, match="graphs.mention_span"):
        parse_settings(runs.GraphSettings, {"mention_span": "bare"}, "graphs")


def stage_workspace(tmp_path, monkeypatch):
    """Run "r" of corpus "c" on three items, its tables under tmp_path/data, the graph stage's
    paths pointed there; returns that data folder."""
    docs, items, mentions, query_mentions = _tables(3)
    root = tmp_path / "data"
    storage.write_table(root / "docs" / f"{DOCUMENTS}.parquet", DOCUMENTS,
                        [dict(docs[0], sentence_starts=[0, 6])])  # fmt: skip
    storage.write_table(root / "docs" / f"{ITEMS}.parquet", ITEMS, items)
    storage.write_table(root / "m" / f"{MENTIONS}.parquet", MENTIONS, mentions)
    storage.write_table(root / "m" / f"{QUERY_MENTIONS}.parquet", QUERY_MENTIONS, query_mentions)
    for module in (graphs_flow, runs):
        monkeypatch.setattr(module, "run_settings", lambda run: RunEntry("c", "a"))
    monkeypatch.setattr(runs, "run_names", lambda: {"r"})
    monkeypatch.setattr(graphs_flow, "docs_dir", lambda corpus: root / "docs")
    monkeypatch.setattr(graphs_flow, "mentions_dir", lambda run: root / "m")
    monkeypatch.setattr(graphs_flow, "graphs_dir", lambda run: root / "graphs" / run)
    monkeypatch.setattr(graphs_flow, "resolve_path", lambda p: tmp_path / p)
    return root


def test_the_stage_writes_a_variant_beside_the_papers_table(tmp_path, monkeypatch):
    root = stage_workspace(tmp_path, monkeypatch)
    cell = {"run": "r", "corpus": "c", "order": "document_query", "mention_span": "no_determiner"}
    graph_params = {"seed": 13, "ablations": {"r-document-query-no-determiner": cell}}
    monkeypatch.setattr(config, "params", lambda section, path=None: graph_params)
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    graphs_flow.main(["--run", "r"])
    # a grid cell (issue #33.11) is a DVC item: graphs_ablation@<its graph run> (issue #54.3)
    graphs_flow.main(["--ablation", "r-document-query-no-determiner"])
    paper = storage.read_table(root / "graphs/r/graphs.parquet", GRAPHS)
    variant = storage.read_table(root / "graphs/r-document-query-no-determiner/graphs.parquet",
                                 GRAPHS)  # fmt: skip
    assert variant.column("segments").to_pylist() == [["context", "query"]] * 3
    meta = variant.schema.metadata
    assert meta[b"segment_order"] == b"document_query" and meta[b"mention_span"] == b"no_determiner"
    assert b"segment_order" not in paper.schema.metadata


@pytest.mark.parametrize(("name", "entry", "error"), [
    ("r-sentence", {"run": "r", "corpus": "other", "coref_placement": "sentence"},
     "graphs.ablations.r-sentence.corpus: 'other', but run 'r' annotates corpus 'c'"),
    ("r", {"run": "r", "corpus": "c", "coref_placement": "sentence"},
     "graphs.ablations.r: 'r' is an annotation run's name"),
    ("r-same", {"run": "r", "corpus": "c"}, "every setting is the paper's: that is graphs@r"),
    ("missing", None, "graphs.ablations.missing: no such entry"),
])  # fmt: skip
def test_an_ablation_entry_names_its_table_and_reads_its_run_corpus(monkeypatch, name, entry,
                                                                    error):  # fmt: skip
    """The corpus is the stage's data/docs dep, so it must be the one read; one table per name
    lets a model entry's `data:` say which variant it trains on."""
    from tasks.core.errors import CorefreproError

    monkeypatch.setattr(runs, "run_settings", lambda run: RunEntry("c", "a"))
    monkeypatch.setattr(runs, "run_names", lambda: {"r"})
    ablations = {name: entry} if entry else {}
    cfg = runs.GraphSettings(ablations={k: runs.GraphAblation(**v) for k, v in ablations.items()})
    with pytest.raises(CorefreproError, match=re.escape(error)):
        runs.ablation_entry(cfg, name)
