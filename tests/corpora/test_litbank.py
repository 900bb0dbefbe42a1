"""LitBank coreference: fold-0 split, MANIFEST totals on the mirror, LitBank's empty coref column."""

from __future__ import annotations

from collections import Counter

import pytest

from tasks.core.errors import DataError
from tasks.core.storage import check_mentions_in_range, to_table
from tasks.corpora import litbank
from tests.corpora.conftest import fetch_and_normalize

MANIFEST_DOCS = 90
MANIFEST_TOKENS = 189675
MANIFEST_MENTION_STARTS = 25969


def test_sources_and_fold0():
    srcs = litbank.sources({})
    assert len(srcs) == 100
    pinned = [s for s in srcs if s.sha256]
    assert len(pinned) == MANIFEST_DOCS and not any(s.optional for s in pinned)
    assert sum(s.optional for s in srcs) == 10
    assert all(
        s.url.startswith(
            f"https://raw.githubusercontent.com/dbamman/litbank/{litbank.COMMIT}/coref/conll/"
        )
        for s in srcs
    )
    assert Counter(split for split, _ in litbank.DOCS.values()) == {
        "train": 80,
        "dev": 10,
        "test": 10,
    }
    # fold 0 of dbamman/lrec2020-coref data/litbank_tenfold_splits/0
    assert litbank.DOCS["768_wuthering_heights_brat"][0] == "dev"
    assert litbank.DOCS["1023_bleak_house_brat"][0] == "test"
    assert litbank.DOCS["2489_moby_dick_brat"][0] == "train"


@pytest.fixture(scope="module")
def normalized(mirror_session, tmp_path_factory):
    got = fetch_and_normalize(litbank, mirror_session, tmp_path_factory.mktemp("litbank"))
    assert sum(sha is not None for sha in got.fetched.values()) == MANIFEST_DOCS
    return got.out


@pytest.mark.mirror
def test_manifest_totals(normalized):
    docs = to_table("documents", normalized.documents)
    mentions = to_table("mentions", normalized.mentions)
    check_mentions_in_range(docs, mentions)
    assert docs.num_rows == MANIFEST_DOCS
    assert sum(len(t) for t in docs.column("tokens").to_pylist()) == MANIFEST_TOKENS
    assert mentions.num_rows == MANIFEST_MENTION_STARTS
    assert Counter(d["split"] for d in normalized.documents) == {"train": 73, "dev": 8, "test": 9}
    assert {d["genre"] for d in normalized.documents} == {"fiction"}
    assert any(n.startswith("10 of 100 documents absent") for n in normalized.notes)


@pytest.mark.mirror
def test_persuasion_opening(normalized):
    doc = next(d for d in normalized.documents if d["doc_id"] == "litbank/105_persuasion_brat")
    assert doc["tokens"][:5] == ["Chapter", "1", "Sir", "Walter", "Elliot"]
    assert len(doc["sentence_starts"]) > 40
    ments = [m for m in normalized.mentions if m["doc_id"] == "litbank/105_persuasion_brat"]
    walter = next(m for m in ments if (m["start"], m["end"]) == (2, 5))
    his = next(m for m in ments if (m["start"], m["end"]) == (19, 20))
    assert walter["cluster"] == his["cluster"]  # "Sir Walter Elliot ... his own amusement"


def test_truncated_litbank_line(tmp_path, monkeypatch):
    monkeypatch.setattr(litbank, "DOCS", {"1_tiny_brat": ("train", None)})
    blank = "\t".join(["_"] * 8)
    (tmp_path / "1_tiny_brat.conll").write_text(
        "#begin document (1_tiny_brat); part 0\n"
        f"1_tiny_brat\t0\t0\tShe\t{blank}\t(0)\n"
        f"1_tiny_brat\t0\t1\tslept\t_\t_\n"
        "#end document\n",
        encoding="utf-8",
    )
    with pytest.raises(
        DataError, match=r"1_tiny_brat.conll:3: token line has 6 columns, needs at least 13"
    ):
        litbank.normalize(tmp_path, {})
