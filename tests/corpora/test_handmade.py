"""The embedded hand-written coreference documents: parse, in range, every split present."""

from __future__ import annotations

from collections import Counter

import pytest

from tasks.core.errors import CorefreproError, DataError
from tasks.core.storage import check_mentions_in_range, to_table
from tasks.corpora import handmade
from tasks.corpora.conll import parse_conll


@pytest.fixture(scope="module")
def normalized(tmp_path_factory):
    raw = tmp_path_factory.mktemp("handmade") / "raw"
    assert handmade.sources({}) == []
    handmade.generate(raw, {})
    return raw, handmade.normalize(raw, {})


def test_generate_copies_every_shipped_file(normalized):
    raw, _ = normalized
    shipped = sorted(p.name for p in handmade.SHIPPED_DIR.glob("*.conll"))
    assert shipped == sorted(f"{n}.conll" for n in handmade.SPLITS)
    assert sorted(p.name for p in raw.iterdir()) == shipped
    for name in shipped:
        assert (raw / name).read_bytes() == (handmade.SHIPPED_DIR / name).read_bytes()


def test_documents_parse_and_mentions_in_range(normalized):
    _, norm = normalized
    docs = to_table("documents", norm.documents)
    mentions = to_table("mentions", norm.mentions)
    check_mentions_in_range(docs, mentions)
    assert docs.num_rows == 6
    for d in norm.documents:
        assert 40 <= len(d["tokens"]) <= 120, d["doc_id"]
        assert len(d["sentence_starts"]) >= 4
        assert len(d["speakers"]) == len(d["tokens"])
    assert {d["genre"] for d in norm.documents} == {
        "news",
        "dialogue",
        "fiction",
        "howto",
        "interview",
    }
    assert Counter(d["split"] for d in norm.documents) == {"train": 4, "dev": 1, "test": 1}
    assert {m["annotator"] for m in norm.mentions} == {"gold"}


def test_each_document_has_chains_singletons_and_nesting(normalized):
    _, norm = normalized
    for d in norm.documents:
        ms = [
            (m["start"], m["end"], m["cluster"])
            for m in norm.mentions
            if m["doc_id"] == d["doc_id"]
        ]
        sizes = Counter(c for _, _, c in ms)
        assert max(sizes.values()) >= 3, d["doc_id"]  # a real chain
        assert min(sizes.values()) == 1, d["doc_id"]  # singletons annotated
        nested = any(a[0] <= b[0] and b[1] <= a[1] and a[:2] != b[:2] for a in ms for b in ms)
        assert nested, d["doc_id"]


def test_gold_chains_read_as_intended(normalized):
    _, norm = normalized

    def chain_text(doc_id: str, word: str) -> set[str]:
        doc = next(d for d in norm.documents if d["doc_id"] == doc_id)
        ms = [m for m in norm.mentions if m["doc_id"] == doc_id]
        cluster = next(
            m["cluster"] for m in ms if " ".join(doc["tokens"][m["start"] : m["end"]]) == word
        )
        return {
            " ".join(doc["tokens"][m["start"] : m["end"]]) for m in ms if m["cluster"] == cluster
        }

    assert chain_text("handmade/harbor", "Mayor Elena Vasquez") == {
        "Mayor Elena Vasquez",
        "Vasquez",
    }
    assert chain_text("handmade/harbor", "its") == {"the old harbor bridge", "the bridge", "its"}
    assert chain_text("handmade/lighthouse", "Old Tomas") == {"Old Tomas", "he", "his", "Tomas"}
    # dialogue: Ana's "you" and Ben's "I" are Ben
    assert chain_text("handmade/bakery", "you") == {"you", "I"}
    bakery = next(d for d in norm.documents if d["doc_id"] == "handmade/bakery")
    assert set(bakery["speakers"]) == {"Ana", "Ben"}
    news = next(d for d in norm.documents if d["doc_id"] == "handmade/harbor")
    assert set(news["speakers"]) == {"-"}


def test_shipped_files_parse_directly():
    for name in handmade.SPLITS:
        [doc] = parse_conll(handmade.SHIPPED_DIR / f"{name}.conll", speaker_column=9)
        assert doc.doc_id.endswith(f"/{name}/part_000")
        assert doc.duplicates == 0


def test_missing_or_broken_file(tmp_path):
    with pytest.raises(CorefreproError, match="run the download stage"):
        handmade.normalize(tmp_path, {})
    handmade.generate(tmp_path, {})
    path = tmp_path / "bread.conll"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[2].split()[3] == "bake" and lines[2].endswith("-")
    lines[2] = lines[2][:-1] + "(99"  # an opening that never closes
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        DataError, match=r"bread.conll:3: '\(99' opens a mention that is never closed"
    ):
        handmade.normalize(tmp_path, {})
