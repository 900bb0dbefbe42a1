"""WikiText-2/103 readers: real mirror counts (MANIFEST.md), <eos> convention, malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.core.errors import DataError, MissingSourceError
from tasks.core.schema import DOCUMENTS
from tasks.core.storage import to_table
from tasks.corpora import wikitext, wikitext2, wikitext103
from tests.corpora.conftest import fetch_all

VALID_LINES = 3760  # MANIFEST: wiki.valid.tokens 3760 lines, 217,646 tokens incl. <eos>
VALID_TOKENS_WITH_EOS = 217_646
SAMPLE_LINES = 200  # MANIFEST: sample_test.tokens, first 200 lines of the test file


@pytest.fixture(scope="module")
def raw(mirror_session, tmp_path_factory):
    root = tmp_path_factory.mktemp("wikitext2")
    fetched = fetch_all(wikitext2, mirror_session, root)
    assert fetched["wiki.valid.tokens"] == wikitext2.VALID_SHA256
    assert (
        fetched["wiki.train.tokens"] is None and fetched["wiki.test.tokens"] is None
    )  # not mirrored
    return root / "raw"


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for _ in fh)


@pytest.mark.mirror
def test_valid_token_count_matches_manifest(raw):
    out = wikitext2.normalize(raw, {})
    docs = to_table(DOCUMENTS, out.documents).to_pylist()
    dev = [d for d in docs if d["split"] == "dev"]
    assert len(dev) == 60  # Merity et al. 2016, Table 1: WikiText-2 valid has 60 articles
    lines = _count_lines(raw / "wiki.valid.tokens")
    assert lines == VALID_LINES
    # documents hold the text tokens; the published count adds one <eos> per line of the file
    assert sum(len(d["tokens"]) for d in dev) + lines == VALID_TOKENS_WITH_EOS
    assert f"{VALID_TOKENS_WITH_EOS} tokens" in " ".join(out.notes)
    assert not any("<eos>" in d["tokens"] for d in dev)
    assert dev[0]["doc_id"] == "wikitext2/dev/00000_Homarus_gammarus"
    assert dev[0]["tokens"][:4] == ["=", "Homarus", "gammarus", "="]
    assert any("<unk>" in d["tokens"] for d in dev)  # kept verbatim
    assert any("wiki.train.tokens absent" in n for n in out.notes)


@pytest.mark.mirror
def test_valid_with_eos_is_the_published_count(raw):
    out = wikitext2.normalize(raw, {"eos": True})
    dev = [d for d in out.documents if d["split"] == "dev"]
    test = [d for d in out.documents if d["split"] == "test"]
    assert sum(len(d["tokens"]) for d in dev) == VALID_TOKENS_WITH_EOS
    assert sum(d["tokens"].count("<eos>") for d in dev) == VALID_LINES
    sample_words = sum(
        len(line.split()) for line in (raw / "sample_test.tokens").read_text().splitlines()
    )
    assert sum(len(d["tokens"]) for d in test) == sample_words + SAMPLE_LINES
    to_table(DOCUMENTS, out.documents)  # sentence starts stay valid with <eos> sentences


@pytest.mark.mirror
def test_sample_stands_in_for_test(raw):
    out = wikitext2.normalize(raw, {"sentences": "line"})
    test = [d for d in out.documents if d["split"] == "test"]
    assert len(test) == 4  # top-level headings in the 200-line sample
    assert any(wikitext2.SAMPLE_TEST_FILE in n for n in out.notes)
    dev = [d for d in out.documents if d["split"] == "dev"]
    # "line" mode: one sentence per non-blank line (MANIFEST lines minus the blank " " lines)
    blank = sum(
        1 for line in (raw / "wiki.valid.tokens").read_text().splitlines() if not line.strip()
    )
    assert sum(len(d["sentence_starts"]) for d in dev) == VALID_LINES - blank


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    """Write tmp_path/name; return the file."""
    (tmp_path / name).write_bytes(data)
    return tmp_path / name


ARTICLE = b" \n = Alpha = \n \n Alpha is a test . It has two sentences . \n \n = = Part = = \n \n More text \n"


def test_articles_sections_and_sentences(tmp_path):
    data = ARTICLE + b" = Beta ( band ) = \n \n Beta <unk> . \n"
    docs, stats = wikitext.read_tokens_file(_write(tmp_path, "f.tokens", data), "wt", "dev")
    assert [d["doc_id"] for d in docs] == ["wt/dev/00000_Alpha", "wt/dev/00001_Beta_(_band_)"]
    alpha = docs[0]
    starts = alpha["sentence_starts"]
    assert [alpha["tokens"][s] for s in starts] == ["=", "Alpha", "It", "=", "More"]
    assert (stats.articles, stats.lines, stats.blank_lines) == (2, 11, 5)
    assert stats.published_tokens == stats.text_tokens + 11
    eos_docs, _ = wikitext.read_tokens_file(tmp_path / "f.tokens", "wt", "dev", eos=True)
    assert sum(len(d["tokens"]) for d in eos_docs) == stats.published_tokens
    assert eos_docs[0]["tokens"][:2] == ["<eos>", "="]  # the leading blank line


def test_text_before_first_heading_is_an_error(tmp_path):
    with pytest.raises(DataError) as err:
        wikitext.read_tokens_file(
            _write(tmp_path, "f.tokens", b" \n stray words \n = A = \n"), "wt", "dev"
        )
    assert "f.tokens:2:" in str(err.value)


def test_bad_utf8_is_an_error(tmp_path):
    with pytest.raises(DataError) as err:
        wikitext.read_tokens_file(
            _write(tmp_path, "f.tokens", ARTICLE + b" caf\xe9 \n"), "wt", "dev"
        )
    assert "f.tokens:9:" in str(err.value)  # ARTICLE has 8 lines


def test_wikitext2_normalizes_without_train_and_test(tmp_path):
    out = wikitext2.normalize(_write(tmp_path, "wiki.valid.tokens", ARTICLE).parent, {})
    assert [d["split"] for d in out.documents] == ["dev"]
    assert any("wiki.train.tokens absent" in n for n in out.notes)
    assert any("wiki.test.tokens absent" in n for n in out.notes)


def test_wikitext103_sources_and_train_default(tmp_path):
    srcs = {s.relpath: s for s in wikitext103.sources({})}
    assert not srcs["wiki.valid.tokens"].optional and not srcs["wiki.test.tokens"].optional
    assert srcs["wiki.train.tokens"].optional
    assert srcs["wiki.test.tokens"].archive.member == "wikitext-103/wiki.test.tokens"
    raw = tmp_path
    for name in ("wiki.train.tokens", "wiki.valid.tokens", "wiki.test.tokens"):
        _write(raw, name, ARTICLE)
    out = wikitext103.normalize(raw, {})
    assert sorted({d["split"] for d in out.documents}) == ["dev", "test"]  # train off by default
    assert {d["split"] for d in wikitext103.normalize(raw, {"include_train": True}).documents} == {
        "train",
        "dev",
        "test",
    }
    (raw / "wiki.test.tokens").unlink()
    with pytest.raises(MissingSourceError):
        wikitext103.normalize(raw, {})


# --- the harness's detokenizer (#28) ---------------------------------------------------------


def test_detokenize_is_the_harness_s_wikitext_detokenizer():
    from tasks.corpora.wikitext import detokenize

    page = ' = Title = \n \n It was 1 @,@ 000 km ( 620 mi ) long , " he said " . N N \n'
    assert detokenize(page) == ' = Title =\n\nIt was 1,000 km (620 mi) long, "he said". 1 N\n'
    harness = pytest.importorskip("lm_eval.tasks.wikitext.preprocess_wikitext")
    assert detokenize(page) == harness.wikitext_detokenizer({"page": page})


@pytest.mark.mirror
def test_detokenize_equals_the_harness_on_the_mirror_s_valid_file(mirror):
    from tasks.corpora.wikitext import detokenize

    harness = pytest.importorskip("lm_eval.tasks.wikitext.preprocess_wikitext")
    text = (mirror / "wikitext2" / "wiki.valid.tokens").read_text(encoding="utf-8")
    for start in range(0, len(text), 20_000):
        page = text[start : start + 20_000]
        assert detokenize(page) == harness.wikitext_detokenizer({"page": page})
