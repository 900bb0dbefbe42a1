"""The graph stages refuse inputs that do not belong together (issue #14.4): a mentions table
of another corpus used to join to nothing, so the stage wrote empty views and exited 0."""

from __future__ import annotations

import pytest

from flows import view_corelm, view_entitynlm
from tasks.annotation.runs import RunEntry
from tasks.core import storage
from tasks.core.errors import CorefreproError
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS, QUERY_MENTIONS


def _docs(corpus: str) -> list[dict]:
    return [
        {
            "doc_id": f"{corpus}/{i}",
            "split": "train",
            "tokens": ["Mary", "went", ".", "She", "sat", "."],
            "sentence_starts": [0, 3],
        }
        for i in range(2)
    ]


def _mentions(corpus: str) -> list[dict]:
    return [
        {"doc_id": f"{corpus}/{i}", "start": s, "end": s + 1, "cluster": 0, "annotator": "x"}
        for i in range(2)
        for s in (0, 3)
    ]


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """Corpus `a` normalized, run `r` annotated: data under tmp_path."""
    docs, mentions = tmp_path / "docs", tmp_path / "mentions"
    storage.write_table(docs / "a" / f"{DOCUMENTS}.parquet", DOCUMENTS, _docs("a"))
    storage.write_table(docs / "a" / f"{ITEMS}.parquet", ITEMS, [])
    storage.write_table(mentions / "r" / f"{QUERY_MENTIONS}.parquet", QUERY_MENTIONS, [])
    for stage in (view_entitynlm, view_corelm):
        monkeypatch.setattr(stage, "run_settings", lambda run: RunEntry("a", "x"))
        monkeypatch.setattr(stage, "docs_dir", lambda corpus: docs / corpus)
        monkeypatch.setattr(stage, "mentions_dir", lambda run: mentions / run)
        monkeypatch.setattr(
            stage, "view_file", lambda run, family: tmp_path / "graphs" / run / f"{family}.parquet"
        )
        monkeypatch.setattr(stage, "resolve_path", lambda p: tmp_path / p)
    return mentions / "r" / f"{MENTIONS}.parquet"


@pytest.mark.parametrize("build", [view_entitynlm.build, view_corelm.build])
def test_a_mentions_table_of_another_corpus_is_refused(layout, tmp_path, build):
    storage.write_table(layout, MENTIONS, _mentions("b"))
    with pytest.raises(CorefreproError, match=r"mentions\.parquet: 2 of 2 documents are not in"):
        build("r")
    assert not (tmp_path / "graphs").exists()


@pytest.mark.parametrize("build", [view_entitynlm.build, view_corelm.build])
def test_the_same_corpus_passes(layout, build):
    storage.write_table(layout, MENTIONS, _mentions("a"))
    assert build("r")


def test_a_truncated_parquet_file_is_one_line_naming_it(tmp_path):
    path = tmp_path / "t.parquet"
    storage.write_table(path, DOCUMENTS, _docs("a"))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorefreproError) as err:
        storage.read_table(path, DOCUMENTS)
    message = str(err.value)
    assert message.startswith(f"{path}: not a readable Parquet file") and "\n" not in message
