"""GUM coreference: sources, official splits, MANIFEST totals on the mirror, reddit/GENTLE handling."""

from __future__ import annotations

from collections import Counter

import pytest

from tasks.core.errors import DataError
from tasks.core.storage import check_mentions_in_range, to_table
from tasks.corpora import gum
from tests.corpora.conftest import fetch_and_normalize

MANIFEST_DOCS = 253
MANIFEST_TOKENS = 240271
MANIFEST_MENTION_STARTS = 67849


def test_sources_cover_every_upstream_file():
    srcs = gum.sources({})
    assert len(srcs) == 281
    assert len({s.relpath for s in srcs}) == 281
    pinned = [s for s in srcs if s.sha256]
    assert len(pinned) == MANIFEST_DOCS and not any(s.optional for s in pinned)
    held = [s for s in srcs if s.sha256 is None]
    assert len(held) == 28 and all(s.optional for s in held)
    assert all(
        s.url.startswith(
            f"https://raw.githubusercontent.com/amir-zeldes/gum/{gum.COMMIT}/coref/gum/conll/"
        )
        for s in srcs
    )
    splits = Counter(split for split, _ in gum.DOCS.values())
    assert splits == {"train": 191, "dev": 32, "test": 32, "test2": 26}


def test_genre_and_sentence_rule():
    assert gum.genre_of("GUM_academic_art") == "academic"
    assert gum.genre_of("GENTLE_poetry_raven") == "poetry"
    toks = [
        "He",
        "said",
        ":",
        '"',
        "Go",
        ".",
        '"',
        "She",
        "went",
        "!",
        "(",
        "Really",
        "?",
        ")",
        "Yes",
    ]
    assert gum.split_sentences(toks) == [0, 7, 10, 14]
    assert gum.split_sentences(["No", "end"]) == [0]


@pytest.fixture(scope="module")
def normalized(mirror_session, tmp_path_factory):
    got = fetch_and_normalize(gum, mirror_session, tmp_path_factory.mktemp("gum"))
    assert sum(sha is not None for sha in got.fetched.values()) == MANIFEST_DOCS
    return got.raw, got.out


@pytest.mark.mirror
def test_manifest_totals(normalized):
    _, norm = normalized
    docs = to_table("documents", norm.documents)
    mentions = to_table("mentions", norm.mentions)
    check_mentions_in_range(docs, mentions)
    assert docs.num_rows == MANIFEST_DOCS
    assert sum(len(t) for t in docs.column("tokens").to_pylist()) == MANIFEST_TOKENS
    # the MANIFEST counts "(" brackets: every one is a mention, none is a repeat in GUM
    assert mentions.num_rows == MANIFEST_MENTION_STARTS
    assert not any("written twice" in n for n in norm.notes)
    assert {r["annotator"] for r in norm.mentions} == {"gold"}


@pytest.mark.mirror
def test_splits_genres_and_notes(normalized):
    _, norm = normalized
    by_id = {d["doc_id"]: d for d in norm.documents}
    assert by_id["gum/GUM_academic_exposure"]["split"] == "dev"
    assert by_id["gum/GUM_academic_eegimaa"]["split"] == "test"
    assert by_id["gum/GUM_academic_art"]["split"] == "train"
    assert by_id["gum/GENTLE_poetry_raven"]["split"] == "test"
    assert by_id["gum/GENTLE_poetry_raven"]["genre"] == "poetry"
    counts = Counter(d["split"] for d in norm.documents)
    assert counts == {"train": 168, "dev": 30, "test": 55}
    assert all(d["speakers"] is None for d in norm.documents)
    # 28 held-out documents are named in the notes, so nothing is dropped silently
    assert any(n.startswith("28 of 281 documents absent") for n in norm.notes)
    reddit = [d for d in norm.documents if "_reddit_" in d["doc_id"]]
    assert len(reddit) == 17
    assert all(set(t) == {"_"} for d in reddit for t in d["tokens"])
    assert all(d["sentence_starts"] == [0] for d in reddit)
    assert any("17 GUM_reddit documents have masked words" in n for n in norm.notes)
    art = by_id["gum/GUM_academic_art"]
    starts = art["sentence_starts"]
    assert len(starts) > 20 and starts[0] == 0
    second = art["tokens"][starts[1] : starts[2]]
    assert " ".join(second) == "Which elements of specific artworks do they focus on ?"


@pytest.mark.mirror
def test_first_document_clusters(normalized):
    _, norm = normalized
    art = [m for m in norm.mentions if m["doc_id"] == "gum/GUM_academic_art"]
    # "Aesthetic Appreciation" (abstract-1) is cluster 0 at tokens 0-1; "Claire Bailey - Ross" 11-14
    assert (art[0]["start"], art[0]["end"], art[0]["cluster"]) == (0, 2, 0)
    assert any((m["start"], m["end"]) == (11, 15) for m in art)
    # "United Kingdom" (place-10) occurs three times in one cluster
    uk = {m["cluster"] for m in art if (m["start"], m["end"]) in {(20, 22), (28, 30), (36, 38)}}
    assert len(uk) == 1


@pytest.mark.mirror
def test_gentle_exclude_and_determinism(normalized):
    raw, norm = normalized
    excluded = gum.normalize(raw, {"gentle_split": "exclude"})
    assert len(excluded.documents) == MANIFEST_DOCS - 24
    assert not any(d["doc_id"].startswith("gum/GENTLE_") for d in excluded.documents)
    assert any("24 GENTLE (test2) documents excluded" in n for n in excluded.notes)
    assert [d["doc_id"] for d in norm.documents] == sorted(d["doc_id"] for d in norm.documents)


def test_tiny_document_and_malformed_file(tmp_path, monkeypatch):
    monkeypatch.setattr(
        gum, "DOCS", {"GUM_news_tiny": ("dev", None), "GUM_news_zz": ("train", None)}
    )
    (tmp_path / "GUM_news_tiny.conll").write_text(
        "# begin document GUM_news_tiny\n0\tThe\t(object-1\n1\tscrew\tobject-1)\n2\tbroke\t_\n3\t.\t_\n"
        "4\tIt\t(object-1)\n5\trusted\t_\n6\t.\t_\n# end document\n",
        encoding="utf-8",
    )
    norm = gum.normalize(tmp_path, {})  # GUM_news_zz is absent and optional: noted, not fatal
    [doc] = norm.documents
    assert (doc["doc_id"], doc["split"], doc["genre"]) == ("gum/GUM_news_tiny", "dev", "news")
    assert doc["sentence_starts"] == [0, 4]
    assert [(m["start"], m["end"], m["cluster"]) for m in norm.mentions] == [(0, 2, 0), (4, 5, 0)]
    assert any("1 of 2 documents absent" in n and "GUM_news_zz" in n for n in norm.notes)
    (tmp_path / "GUM_news_zz.conll").write_text(
        "# begin document GUM_news_zz\n0\tA\t(object-1\n1\tb\t_\n# end document\n", encoding="utf-8"
    )
    with pytest.raises(
        DataError, match=r"GUM_news_zz.conll:2: '\(object-1' opens a mention that is never closed"
    ):
        gum.normalize(tmp_path, {})


def test_wrong_document_name_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(gum, "DOCS", {"GUM_news_tiny": ("train", None)})
    (tmp_path / "GUM_news_tiny.conll").write_text(
        "# begin document GUM_news_other\n0\tHi\t_\n# end document\n"
    )
    with pytest.raises(
        DataError, match="GUM_news_tiny.conll:1: expected exactly one document named GUM_news_tiny"
    ):
        gum.normalize(tmp_path, {})
