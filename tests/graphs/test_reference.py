"""An annotation run scored against another on the same graphs (graphs.references.<run>,
graphs_reference@<run>, issue #58.5): the other annotators of the coreference-quality study on
the corruption series' axis -- the same graphs (tasks/graphs/dags.py graph_inputs) and the same
scoring (flows/graphs.py coreference_scores) as a corrupted variant's."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from flows import graphs as graphs_flow
from tasks.annotation.runs import RunEntry
from tasks.core import config, storage
from tasks.core.errors import CorefreproError
from tasks.core.schema import MENTIONS, QUERY_MENTIONS
from tasks.core.settings import ConfigError, parse_settings
from tasks.graphs import runs
from tasks.graphs.dags import Corruption, build_graph, build_graphs, graph_clusters, graph_inputs
from tests.graphs.test_order_span import _tables, stage_workspace


def _workspace(tmp_path, monkeypatch, other_mentions, other_query, graph_params):
    """Runs "r" (the reference, test_order_span's tables) and "s" (`other_*`) of corpus "c"."""
    root = stage_workspace(tmp_path, monkeypatch)
    storage.write_table(root / "s" / f"{MENTIONS}.parquet", MENTIONS, other_mentions)
    storage.write_table(root / "s" / f"{QUERY_MENTIONS}.parquet", QUERY_MENTIONS, other_query)
    monkeypatch.setattr(
        graphs_flow, "mentions_dir", lambda run: root / ("m" if run == "r" else run)
    )
    monkeypatch.setattr(config, "params", lambda section, path=None: graph_params)
    monkeypatch.setattr(runs, "run_names", lambda: {"r", "s"})
    return root


def _every_link_dropped():
    """Run "s": test_order_span's mentions, each its own chain (the query's too)."""
    _, _, mentions, query_mentions = _tables(3)
    mentions = [dict(m, cluster=k, annotator="s") for k, m in enumerate(mentions)]
    query = [dict(q, cluster=10 + k, annotator="s") for k, q in enumerate(query_mentions)]
    return mentions, query


def test_graph_clusters_are_the_graphs_build_graphs_writes():
    """One place decides a graph's tokens and mentions: the clusters scored are the key a
    corruption is scored against, graph by graph, in every order and span."""
    tables = _tables(5)
    for order in ("random", "document_query", "query_document"):
        for span in ("annotated", "no_determiner"):
            built = build_graphs(*tables, seed=13, order=order, mention_span=span,
                                 corruption=Corruption("drop", 0.0, 1))  # fmt: skip
            clusters = graph_clusters(*tables, seed=13, order=order, mention_span=span)
            assert clusters == {g: pair[0] for g, pair in built.clusters.items()}
            assert [r["graph_id"] for r in built.rows] == sorted(clusters)
    stats = Counter()
    inputs = list(graph_inputs(*tables, seed=13, stats=stats))
    assert [g.graph_id for g in inputs] == [f"i{k}" for k in range(5)]
    assert sum(v for k, v in stats.items() if k.startswith("order_")) == 5
    row = build_graphs(*tables, seed=13).rows[0]
    assert build_graph(inputs[0].segments).chain == row["chain"]  # the same sequence


def test_a_run_is_scored_against_its_reference_as_a_corruption_is(tmp_path, monkeypatch):
    """A run whose every link is missing scores what the 100 % drop of the reference's links
    scores: both lie on one axis."""
    cells = {"r-drop100": {"run": "r", "corpus": "c", "corrupt": "drop", "corrupt_rate": 1.0}}
    references = {"s": {"corpus": "c", "reference": "r"}}
    _workspace(tmp_path, monkeypatch, *_every_link_dropped(),
               {"seed": 13, "ablations": cells, "references": references})  # fmt: skip
    dropped = graphs_flow.build_variant("r-drop100")["coreference_against_annotation"]
    report = graphs_flow.score_against_reference("s")
    scores = report["coreference_against_reference"]
    assert {k: v for k, v in scores.items() if k != "mentions_f1"} == dropped
    assert scores["muc_f1"] == 0.0 and scores["mentions_f1"] == 100.0
    assert report["reference"] == "r" and report["graphs"] == 3
    # four document mentions and one query mention per graph, on either side
    assert report["graph_mentions"] == {"r": 15, "s": 15}
    written = json.loads((tmp_path / "metrics/graphs_reference/s.json").read_text())
    assert written == report


def test_the_same_links_score_100_and_other_mentions_lower_mention_f1(tmp_path, monkeypatch):
    _, _, mentions, query = _tables(3)
    # "s" finds the hallway chain only, without its determiner: other spans, no name chain
    other = [dict(m, start=m["start"] + 1, annotator="s") for m in mentions if m["cluster"] == 1]
    references = {"s": {"corpus": "c", "reference": "r"},
                  "r": {"corpus": "c", "reference": "s"}}  # fmt: skip
    _workspace(tmp_path, monkeypatch, other, [dict(q, annotator="s") for q in query],
               {"seed": 13, "references": references})  # fmt: skip
    scores = graphs_flow.score_against_reference("s")["coreference_against_reference"]
    assert 0 < scores["mentions_f1"] < 100 and scores["conll_f1"] < 100
    # per graph the reference has 5 spans (4 of the story, 1 of the query), "s" 3, and only
    # the query's "the hallway" is one of both: recall 1/5, precision 1/3, F1 1/4
    assert scores["mentions_f1"] == pytest.approx(25.0)
    backwards = graphs_flow.score_against_reference("r")["coreference_against_reference"]
    assert backwards["mentions_f1"] == pytest.approx(25.0)  # recall and precision swap


@pytest.mark.parametrize(("run", "entry", "error"), [
    ("s", {"corpus": "other", "reference": "r"},
     "graphs.references.s.corpus: 'other', but the run 's' annotates corpus 'c'"),
    ("s", {"corpus": "c", "reference": "s"}, "graphs.references.s.reference: the run itself"),
    ("missing", None, "graphs.references.missing: no such entry; known: s"),
])  # fmt: skip
def test_a_bad_reference_entry_is_named(run, entry, error, tmp_path, monkeypatch):
    stage_workspace(tmp_path, monkeypatch)
    cfg = parse_settings(runs.GraphSettings,
                         {"references": {"s": entry or {"corpus": "c", "reference": "r"}}},
                         "graphs")  # fmt: skip
    with pytest.raises(CorefreproError, match=error.replace(".", r"\.").replace("(", r"\(")):
        runs.reference_entry(cfg, run)


def test_the_reference_of_another_corpus_is_refused(monkeypatch):
    corpora = {"s": "c", "r": "other"}
    monkeypatch.setattr(runs, "run_settings", lambda run: RunEntry(corpora[run], "a"))
    cfg = parse_settings(runs.GraphSettings, {"references": {"s": {"corpus": "c",
                                                                    "reference": "r"}}}, "graphs")  # fmt: skip
    with pytest.raises(CorefreproError, match="but the reference 'r' annotates corpus 'other'"):
        runs.reference_entry(cfg, "s")
    with pytest.raises(ConfigError, match="graphs.references.s.referense"):
        parse_settings(runs.GraphSettings,
                       {"references": {"s": {"corpus": "c", "referense": "r"}}}, "graphs")  # fmt: skip
