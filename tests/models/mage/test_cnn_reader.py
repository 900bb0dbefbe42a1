"""CNN (MAGE Table 5) end to end on a small archive in the real .question layout: normalize
-> entity-id annotation of the @entityN placeholders -> graphs -> readers with attention sum
over the item's @entity candidates. The real corpus is not mirrored; this checks the path."""

from __future__ import annotations

import pytest

from models.mage.data import load_reader_data
from models.mage.train import train_and_evaluate
from tasks.annotation import annotators
from tasks.annotation.annotate import annotate_documents
from tasks.core import storage
from tasks.core.schema import DOCUMENTS, GRAPHS, ITEMS, MENTIONS, QUERY_MENTIONS
from tasks.corpora import cnn
from tasks.graphs.dags import build_graphs
from tests.corpora.test_cnn import GOOD, make_tgz


@pytest.fixture(scope="module")
def cnn_graphs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cnn")
    make_tgz(tmp / "raw" / cnn.ARCHIVE, GOOD)
    out = cnn.normalize(tmp / "raw", {})
    documents = storage.to_table(DOCUMENTS, out.documents)
    items = storage.to_table(ITEMS, out.items)
    annotator = annotators.get("entity-id", {"mentions": "placeholders"})
    mentions, query_mentions, _ = annotate_documents(annotator, documents, items, None)
    graphs = build_graphs(
        documents,
        items,
        storage.to_table(MENTIONS, mentions),
        storage.to_table(QUERY_MENTIONS, query_mentions),
        seed=13,
        on_conflict="nearest",
    )
    path = tmp / "graphs.parquet"
    storage.write_table(path, GRAPHS, graphs.rows, {"corpus": "cnn", **graphs.metadata})
    return path, mentions


def test_placeholders_become_chains_and_candidates(cnn_graphs):
    path, mentions = cnn_graphs
    # every @entityN occurrence is a mention; one chain per entity number within a story
    f00d = [m for m in mentions if m["doc_id"] == "cnn/train/f00d"]
    assert len(f00d) == 4 and len({m["cluster"] for m in f00d}) == 3
    data = load_reader_data(path, "cnn", {})
    assert data.output == "attention_sum"
    for split, examples in data.splits.items():
        for ex in examples:
            words = [
                data.vocab.itos[c] if c < len(data.vocab) else "<oov>" for c in ex["candidates"]
            ]
            assert all(w.startswith("@entity") or w == "<oov>" for w in words), (split, words)
            assert ex["answer"] >= 0  # the answer entity is always one of the candidates


def test_readers_train_on_cnn_and_log_accuracy(cnn_graphs, tmp_path):
    path, _ = cnn_graphs
    for model in ({"reader": "bigru"}, {"reader": "ga", "encoder": "mage", "coref_size": 4}):
        cfg = {**model, "hidden_size": 8, "embed_dim": 8, "num_layers": 2}
        metrics = train_and_evaluate(
            path, "cnn", cfg, {"epochs": 2, "threads": 1}, tmp_path / model["reader"]
        )
        assert 0.0 <= metrics["dev_acc"] <= 1.0 and 0.0 <= metrics["test_acc"] <= 1.0
        assert (tmp_path / model["reader"] / "best.pt").exists()
