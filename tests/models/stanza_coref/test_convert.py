"""models/stanza_coref/convert.py: the project's documents as Stanza's coreference JSON, read
back by Stanza's own CorefDataset; the clusters come back as the gold."""

from __future__ import annotations

import json

import pytest

from models.coref.data import CorefDocument, load_splits
from models.stanza_coref.convert import (
    assign_heads,
    clusters_of,
    convert,
    span_head,
    to_stanza,
)
from models.stanza_coref.encoder import train_wordpiece
from tasks.core.schema import DOCUMENTS, MENTIONS
from tasks.core.storage import write_table
from tasks.corpora import handmade, synthetic


def _write(root, name, normalized) -> None:
    write_table(root / name / f"{DOCUMENTS}.parquet", DOCUMENTS, normalized.documents)
    write_table(root / name / f"{MENTIONS}.parquet", MENTIONS, normalized.mentions)


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> list[CorefDocument]:
    """handmade + a few generated stories, normalized as the pipeline does, every split, with
    their singletons (the converter must keep whatever the gold has)."""
    root = tmp_path_factory.mktemp("docs")
    raw = tmp_path_factory.mktemp("handmade-raw")
    handmade.generate(raw, {})
    _write(root, "handmade", handmade.normalize(raw, {}))
    raw = tmp_path_factory.mktemp("synthetic-raw")
    synthetic.generate(raw, {"n_train": 6, "n_dev": 3, "n_test": 3})
    _write(root, "synthetic", synthetic.normalize(raw, {}))
    splits = load_splits([root / "handmade", root / "synthetic"], drop_singletons=False)
    return [d for split in splits.values() for d in split]


def as_set(clusters) -> set[frozenset]:
    return {frozenset(map(tuple, c)) for c in clusters}


def test_round_trip_gives_the_gold_clusters(docs):
    for doc in docs:
        assert as_set(clusters_of(to_stanza(doc))) == as_set(doc.clusters), doc.doc_id


def test_fields_are_the_ones_stanza_writes_and_heads_lie_in_their_spans(docs):
    for doc in docs:
        out = to_stanza(doc)
        n = len(doc.tokens)
        assert out["cased_words"] == doc.tokens and len(out["sent_id"]) == len(out["speaker"]) == n
        assert out["sent_id"][0] == 0 and out["sent_id"][-1] == len(doc.sentence_starts) - 1
        pairs = [(h, tuple(s)) for c, hs in zip(out["span_clusters"], out["word_clusters"],
                                                strict=True) for s, h in zip(c, hs, strict=True)]  # fmt: skip
        assert all(s <= h < e for h, (s, e) in pairs)
        assert out["head2span"] == sorted([h, s, e] for h, (s, e) in pairs)


def test_heads_follow_english_noun_phrases():
    words = ["the", "president", "of", "France", "and", "Germany", ",", "who", "spoke"]
    assert span_head(words, 0, 4) == 1  # "the president [of France]"
    assert span_head(words, 0, 6) == 1  # the "and" inside the post-modifier heads nothing
    assert span_head(words, 0, 9) == 1  # "... [, who spoke]"
    assert span_head(words, 3, 6) == 4  # coordination: the conjunction (CAW-coref)
    assert span_head(words, 5, 6) == 5
    assert span_head(["his", "old", "dog"], 0, 3) == 2  # head-final


def test_nested_spans_get_distinct_heads_where_they_can():
    words = ["the", "dog"]
    heads, shared = assign_heads(words, [(0, 2), (1, 2)])
    assert heads == {(1, 2): 1, (0, 2): 0} and shared == 0
    heads, shared = assign_heads(["it"], [(0, 1), (0, 1)])  # one span, listed twice
    assert heads == {(0, 1): 0} and shared == 0
    _, shared = assign_heads(["x", "y"], [(0, 1), (1, 2), (0, 2)])  # no word left for (0, 2)
    assert shared == 1


def test_stanza_reads_the_json_with_its_own_dataset(docs, tmp_path):
    """Stanza's CorefDataset (what CorefModel trains on) takes the converted split as is."""
    from types import SimpleNamespace

    from stanza.models.coref.dataset import CorefDataset

    converted, counts = convert(docs)
    assert counts["documents"] == len(docs)
    assert counts["mentions"] == sum(len(c) for d in docs for c in d.clusters)
    path = tmp_path / "train.json"
    path.write_text(json.dumps(converted), encoding="utf-8")
    tokenizer = train_wordpiece([" ".join(d.tokens) for d in docs], 200)
    dataset = CorefDataset(str(path), SimpleNamespace(bert_model="local"), tokenizer)
    assert len(dataset) == len(docs)
    first = dataset[0]
    assert len(first["word2subword"]) == len(docs[0].tokens)
    assert [tuple(s) for c in first["span_clusters"] for s in c] == [
        tuple(s) for c in converted[0]["span_clusters"] for s in c
    ]


@pytest.mark.mirror
def test_gum_and_litbank_convert_with_few_shared_heads(mirror_session, tmp_path_factory):
    """The real corpora of the mirror: every cluster back as it was, and heads shared by two
    mentions (nested spans with no free word) stay rare."""
    from tasks.corpora import gum, litbank
    from tests.corpora.conftest import fetch_and_normalize

    root = tmp_path_factory.mktemp("mirror-docs")
    for name, module in (("gum", gum), ("litbank", litbank)):
        fetched = fetch_and_normalize(module, mirror_session, tmp_path_factory.mktemp(name))
        _write(root, name, fetched.out)
    splits = load_splits([root / "gum", root / "litbank"])
    converted, counts = convert(splits["dev"])
    assert [as_set(clusters_of(d)) for d in converted] == [
        as_set(d.clusters) for d in splits["dev"]
    ]
    assert counts["heads_shared"] <= 0.01 * counts["mentions"]
