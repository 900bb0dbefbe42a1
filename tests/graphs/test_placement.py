"""Coreference edge placement (issue #15.3, tasks/graphs/dags.py PLACEMENTS) on a hand-built
document: "paper" (last token of a mention -> first token of the next mention of its chain)
and "sentence" (forward: from the end of the previous mention's sentence; backward: from the
start of the next mention's sentence)."""

from __future__ import annotations

import pytest

from flows import train_mage as mage_stage
from tasks.core.settings import parse_settings
from tasks.graphs import runs
from tasks.graphs.dags import (
    GraphError,
    Segment,
    build_graph,
    build_graphs,
    graph_metadata,
    with_placement,
)

SEQ, COREF = 0, 1
#          0      1      2      3      4      5    6      7          8      9    10    11
TOKENS = ["the", "old", "man", "saw", "Mary", ".", "he", "greeted", "her", ".", "she", "left"]
# chain 0: "the old man" [0,3) -> "he" [6,7); chain 1: "Mary" [4,5) -> "her" [8,9) -> "she" [10,11)
# sentences: 0-5, 6-9, 10-11 (the last one has no final period)
MENTIONS = [(0, 3, 0), (4, 5, 1), (6, 7, 0), (8, 9, 1), (10, 11, 1)]


def _graph(placement: str, tokens=TOKENS, mentions=MENTIONS):
    return build_graph(
        [Segment("document", tokens, mentions)], edge_types=with_placement(
            ["sequential", "coreference"], placement)
    )  # fmt: skip


def test_paper_placement_is_the_default_behaviour():
    paper, default = _graph("paper"), build_graph([Segment("document", TOKENS, MENTIONS)])
    assert paper.forward == default.forward and paper.backward == default.backward
    # last token of the previous mention -> first token of the next
    assert paper.forward[COREF] == [-1, -1, -1, -1, -1, -1, 2, -1, 4, -1, 8, -1]
    assert paper.backward[COREF] == [-1, -1, 6, -1, 8, -1, -1, -1, 10, -1, -1, -1]


def test_sentence_placement_leaves_from_the_sentence_ends():
    g = _graph("sentence")
    assert g.forward_types == ["sequential", "coreference"]
    assert g.backward_types == ["sequential_inverse", "coreference_inverse"]
    # forward: from the end of the previous mention's sentence ("." at 5 and 9) into the
    # next mention's first token
    assert g.forward[COREF] == [-1, -1, -1, -1, -1, -1, 5, -1, 5, -1, 9, -1]
    # backward: from the start of the next mention's sentence (6, 6, 10) into the previous
    # mention's last token
    assert g.backward[COREF] == [-1, -1, 6, -1, 6, -1, -1, -1, 10, -1, -1, -1]
    assert g.forward[SEQ] == _graph("paper").forward[SEQ]  # sequential edges untouched


def test_sentence_placement_keeps_the_papers_edge_inside_one_sentence():
    tokens = ["Mary", "saw", "her", "dog", "and", "she", "smiled", "."]
    mentions = [(0, 1, 0), (2, 3, 0), (5, 6, 0)]
    g = _graph("sentence", tokens, mentions)
    assert g.forward[COREF] == _graph("paper", tokens, mentions).forward[COREF]
    assert g.backward[COREF] == _graph("paper", tokens, mentions).backward[COREF]
    assert g.stats["coref_same_sentence_pairs"] == 2


def test_sentence_placement_across_the_query_segment():
    """A segment boundary ends a sentence: the query is its own sentence (§3.3)."""
    context = Segment("context", ["Mary", "went", "home"], [(0, 1, 0)])
    query = Segment("query", ["where", "is", "Mary"], [(2, 3, 0)])
    g = build_graph(
        [context, query], edge_types=with_placement(["sequential", "coreference"], "sentence")
    )
    assert g.forward[COREF][5] == 2  # end of the context's (unterminated) sentence
    assert g.backward[COREF][0] == 3  # start of the query


def test_placement_is_named_in_the_metadata_and_checked():
    sentence = with_placement(["sequential", "coreference"], "sentence")
    assert graph_metadata(sentence)["coreference_placement"] == "sentence"
    assert "coreference_placement" not in graph_metadata(["sequential", "coreference"])
    with pytest.raises(GraphError, match="placement"):
        with_placement(["coreference"], "middle")
    assert runs.placement_run("babi", "sentence") == "babi-sentence"
    assert runs.placement_run("babi", "paper") == "babi"


def test_build_graphs_with_sentence_placement():
    docs = [{"doc_id": "d1", "tokens": TOKENS, "split": "train"}]
    mentions = [
        {"doc_id": "d1", "start": s, "end": e, "cluster": c, "annotator": "gold"}
        for s, e, c in MENTIONS
    ]
    paper = build_graphs(docs, [], mentions, [], seed=1)
    sentence = build_graphs(docs, [], mentions, [], seed=1, placement="sentence")
    assert paper.rows[0]["forward"][COREF] != sentence.rows[0]["forward"][COREF]
    assert sentence.rows[0]["forward"][COREF] == _graph("sentence").forward[COREF]
    assert "coreference_placement" not in paper.metadata


def test_a_reader_model_entry_reads_its_own_graph_run(monkeypatch, tmp_path):
    """train_mage.models.<model>-sentence: {data: <run>-sentence} trains beside the paper's."""

    settings = {
        "data": "babi",
        "models": {"m": {}, "m-sentence": {"data": "babi-sentence"}},
        "seeds": [1],
    }
    from flows.train_mage import plan
    from tasks.core import config

    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    cfg = parse_settings(mage_stage.TrainMageSettings, settings, "train_mage")
    item = plan(cfg, "m-sentence", "qa2")
    assert item.graphs == str(tmp_path / "data/graphs/babi-sentence/graphs.parquet")
    assert "data" not in item.model_cfg
    assert plan(cfg, "m", "qa2").graphs == str(tmp_path / "data/graphs/babi/graphs.parquet")
