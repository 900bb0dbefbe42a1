"""Corrupted coreference (graphs.ablations.<name>.corrupt, issue #58.5): a seeded share of the
links dropped or rewired before the edges are built, scored against the annotation it came
from, each corruption its own graphs_ablation table."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from flows import graphs as graphs_flow
from tasks.core import config, storage
from tasks.core.schema import GRAPHS
from tasks.core.settings import ConfigError, parse_settings
from tasks.graphs import runs
from tasks.graphs.dags import Corruption, GraphError, build_graphs, corrupt_links
from tests.graphs.test_order_span import _tables, stage_workspace

# one chain of four mentions (cluster 0) and one of two (cluster 1), in text order
SPANS = [(0, 1, 0), (2, 3, 1), (4, 5, 0), (6, 7, 0), (8, 9, 1), (10, 11, 0)]


def _chains(spans):
    chains: dict[int, list] = {}
    for s, e, c in spans:
        chains.setdefault(c, []).append((s, e))
    return sorted(chains.values())


def test_rate_zero_keeps_every_link_and_rate_one_drops_them_all():
    stats = Counter()
    assert corrupt_links(SPANS, Corruption("drop", 0.0, 1), "g", stats) == SPANS
    assert stats == {"coref_links": 4}
    stats = Counter()
    dropped = corrupt_links(SPANS, Corruption("drop", 1.0, 1), "g", stats)
    assert [(s, e) for s, e, _ in dropped] == [(s, e) for s, e, _ in SPANS]  # same mentions
    assert len({c for *_, c in dropped}) == len(SPANS)  # every mention its own chain
    assert stats["coref_links_dropped"] == 4


def test_a_rewired_link_joins_a_chain_seen_before_it():
    stats = Counter()
    rewired = corrupt_links(SPANS, Corruption("rewire", 1.0, 1), "g", stats)
    # the first link that can move is (0,1)->(4,5): the only other earlier chain is cluster 1
    assert dict(((s, e), c) for s, e, c in rewired)[(4, 5)] == 1
    assert stats["coref_links_rewired"] + stats["coref_links_dropped"] == 4
    assert len(rewired) == len(SPANS)


def test_the_draw_is_seeded_per_graph():
    many = [(2 * k, 2 * k + 1, k % 3) for k in range(60)]
    a = corrupt_links(many, Corruption("drop", 0.5, 7), "g1", Counter())
    assert a == corrupt_links(many, Corruption("drop", 0.5, 7), "g1", Counter())
    assert a != corrupt_links(many, Corruption("drop", 0.5, 8), "g1", Counter())
    assert a != corrupt_links(many, Corruption("drop", 0.5, 7), "g2", Counter())
    kept = sum(1 for x, y in zip(a, a[3:], strict=False) if x[2] == y[2])
    assert 10 < kept < 47  # about half of the 57 links survive


@pytest.mark.parametrize(("mode", "rate"), [("swap", 0.1), ("drop", 1.5)])
def test_a_bad_corruption_is_refused(mode, rate):
    with pytest.raises(GraphError, match="corruption"):
        Corruption(mode, rate, 1)


def test_graphs_with_no_corruption_are_the_papers():
    docs, items, mentions, query_mentions = _tables(4)
    paper = build_graphs(docs, items, mentions, query_mentions, seed=13)
    same = build_graphs(docs, items, mentions, query_mentions, seed=13,
                        corruption=Corruption("drop", 0.0, 1))  # fmt: skip
    assert same.rows == paper.rows
    dropped = build_graphs(docs, items, mentions, query_mentions, seed=13,
                           corruption=Corruption("drop", 1.0, 1))  # fmt: skip
    coref = [row["forward"][1] for row in dropped.rows]
    assert all(pred == -1 for chain in coref for pred in chain)  # no coreference edge left
    assert dropped.metadata["coref_corruption"] == "drop 1 seed 1"
    key, response = dropped.clusters["i0"]
    assert len(response) > len(key)


def test_the_settings_parse_strictly():
    entry = {"run": "r", "corpus": "c", "corrupt": "drop", "corrupt_rate": 0.25}
    cfg = parse_settings(runs.GraphSettings, {"ablations": {"r-drop25": entry}}, "graphs")
    assert cfg.ablations["r-drop25"].corruption() == Corruption("drop", 0.25, 1)
    with pytest.raises(ConfigError, match="graphs.ablations.r-drop25.corrupt_rate"):
        parse_settings(runs.GraphSettings,
                       {"ablations": {"r-drop25": {**entry, "corrupt_rate": 2}}}, "graphs")  # fmt: skip


def test_the_stage_scores_the_corrupted_links_against_the_annotation(tmp_path, monkeypatch):
    root = stage_workspace(tmp_path, monkeypatch)
    cells = {"r-drop100": {"run": "r", "corpus": "c", "corrupt": "drop", "corrupt_rate": 1.0}}
    monkeypatch.setattr(config, "params", lambda section, path=None: {"ablations": cells})
    report = graphs_flow.build_variant("r-drop100")
    scores = report["coreference_against_annotation"]
    assert scores["muc_f1"] == 0.0 and 0 < scores["conll_f1"] < 100  # B3/CEAF credit singletons
    written = json.loads((tmp_path / "metrics/graphs/r-drop100.json").read_text())
    assert written["coreference_against_annotation"] == scores
    table = storage.read_table(root / "graphs/r-drop100/graphs.parquet", GRAPHS)
    assert table.schema.metadata[b"coref_corruption"] == b"drop 1 seed 1"
