"""LAMBADA reader: real mirror counts (MANIFEST.md), sentence heuristic, malformed input."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from tasks.core.errors import DataError
from tasks.core.schema import DOCUMENTS
from tasks.core.storage import to_table
from tasks.corpora import lambada
from tasks.corpora.base import punct_sentence_starts
from tests.corpora.conftest import fetch_and_normalize


@pytest.fixture(scope="module")
def real(mirror_session, tmp_path_factory):
    """Fetch every declared source from the mirror (network off) and normalize once."""
    got = fetch_and_normalize(lambada, mirror_session, tmp_path_factory.mktemp("lambada"))
    return got.fetched, got.out, got.documents, got.items


@pytest.mark.mirror
def test_mirror_fetch_gets_dev_and_samples_only(real):
    fetched = real[0]
    assert fetched[lambada.DEV_FILE] == lambada.DEV_SHA256
    assert fetched[lambada.SAMPLE_TEST_FILE] == lambada.SAMPLE_TEST_SHA256
    assert fetched[lambada.SAMPLE_OPENAI_FILE] == lambada.SAMPLE_OPENAI_SHA256
    # full test files are held back from the mirror and the network is off
    assert fetched[lambada.TEST_FILE] is None and fetched[lambada.OPENAI_FILE] is None


@pytest.mark.mirror
def test_mirror_counts_match_manifest(real):
    _, out, docs, items = real
    splits = docs.column("split").to_pylist()
    tasks = items.column("task").to_pylist()
    ids = docs.column("doc_id").to_pylist()
    assert splits.count("dev") == 4869  # MANIFEST: dev 4869 passages
    assert sum(i.startswith("lambada/test/") for i in ids) == 200  # plain test sample
    assert sum(i.startswith("lambada/openai-test/") for i in ids) == 200  # OpenAI sample
    assert tasks.count("lambada") == 4869 + 200 and tasks.count("lambada_openai") == 200
    assert docs.num_rows == items.num_rows == 5269
    assert any(lambada.SAMPLE_TEST_FILE in n for n in out.notes)
    assert any(lambada.SAMPLE_OPENAI_FILE in n for n in out.notes)


@pytest.mark.mirror
def test_mirror_target_is_not_in_the_document(real):
    _, out, _, _ = real
    docs = {d["doc_id"]: d for d in out.documents}
    first = docs["lambada/dev/00000"]
    item = next(i for i in out.items if i["item_id"] == "lambada/dev/00000")
    # line 1 of the dev file ends "... to the top of the cake"
    assert item["answer"] == "cake" and first["tokens"][-3:] == ["top", "of", "the"]
    assert item["context_end"] == len(first["tokens"]) and item["query"] == []
    assert item["candidates"] is None
    # four sentences, each ending at a standalone "." except the last (the target's)
    starts = first["sentence_starts"]
    assert [first["tokens"][s] for s in starts] == ["her", "after", "pam", "brian"]
    assert all(first["tokens"][s - 1] == "." for s in starts[1:])


@pytest.mark.mirror
def test_mirror_openai_sample_is_the_plain_sample_detokenized(real):
    _, out, _, _ = real
    answers = {i["item_id"]: i["answer"] for i in out.items}
    for k in range(200):
        plain = answers[f"lambada/test/{k:05d}"]
        openai = answers[f"lambada/openai-test/{k:05d}"]
        # the detokenized target may carry an opening quote ('"Nadia')
        assert openai.lower().lstrip('"') == plain, k


def test_sentence_heuristic_tokenized():
    toks = ["``", "no", ",", "''", "he", "said", ".", "``", "why", "?", "''"]
    toks += ["she", "left", "...", "mr.", "smith", "waved", "!", "''"]
    starts = punct_sentence_starts(toks)
    # closing quotes stay with their sentence; "..." ends one; PTB "mr." keeps its period
    assert [toks[s] for s in starts] == ["``", "``", "she", "mr."]
    assert punct_sentence_starts(["a", "."]) == [0]  # no start past the end
    assert punct_sentence_starts([]) == [0]  # the schema always starts at 0


def test_sentence_heuristic_detokenized():
    toks = ["I", "saw", "Mr.", "Smith.", '"Run!"', "she", "said.", "J.", "R.", "waved", "Then"]
    starts = punct_sentence_starts(toks, [10], detokenized=True)
    # abbreviations and initials do not end sentences; a line start always does. Known
    # limit of the heuristic: '"Run!" she said.' is split after '"Run!"'.
    assert [toks[s] for s in starts] == ["I", '"Run!"', "she", "J.", "Then"]
    assert punct_sentence_starts(toks, [10]) == [0, 10]  # tokenized mode: only standalone marks


def _raw(tmp_path: Path, dev: bytes, **files: bytes) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / lambada.DEV_FILE).write_bytes(dev)
    for name, data in files.items():
        (raw / name).write_bytes(data)
    return raw


def test_full_test_file_wins_over_sample(tmp_path):
    raw = _raw(
        tmp_path,
        b"a b . c d\n",
        **{lambada.TEST_FILE: b"x y z\nu v w\n", lambada.SAMPLE_TEST_FILE: b"s t\n"},
    )
    out = lambada.normalize(raw, {})
    test_ids = [d["doc_id"] for d in out.documents if d["split"] == "test"]
    assert test_ids == ["lambada/test/00000", "lambada/test/00001"]
    assert not any("sample" in n and "plain" in n for n in out.notes)
    assert any("OpenAI test" in n and "no OpenAI test documents" in n for n in out.notes)
    dev = out.documents[0]
    assert dev["tokens"] == ["a", "b", ".", "c"] and dev["sentence_starts"] == [0, 3]


def test_short_passage_is_an_error(tmp_path):
    raw = _raw(tmp_path, b"a b c\nlonely\nd e\n")
    with pytest.raises(DataError) as err:
        lambada.normalize(raw, {})
    assert f"{lambada.DEV_FILE}:2:" in str(err.value)


def test_bad_utf8_is_an_error(tmp_path):
    raw = _raw(tmp_path, b"a b c\nd e\nf \xff g\n")
    with pytest.raises(DataError) as err:
        lambada.normalize(raw, {})
    assert f"{lambada.DEV_FILE}:3:" in str(err.value) and "utf-8" in str(err.value)


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        (b'{"text": "a b"\n', "not a JSON object"),
        (b'{"txt": "a b"}\n', '"text"'),
        (b'{"text": "a"}\n', "target"),
    ],
)
def test_malformed_openai_jsonl(tmp_path, line, needle):
    good = json.dumps({"text": "one two\n\nthree four"}).encode() + b"\n"
    raw = _raw(tmp_path, b"a b\n", **{lambada.OPENAI_FILE: good + line})
    with pytest.raises(DataError) as err:
        lambada.normalize(raw, {})
    assert f"{lambada.OPENAI_FILE}:2:" in str(err.value) and needle in str(err.value)


def test_openai_newlines_start_sentences(tmp_path):
    text = 'He came in\n\n"Hello," she said and'
    raw = _raw(
        tmp_path, b"a b\n", **{lambada.OPENAI_FILE: json.dumps({"text": text}).encode() + b"\n"}
    )
    out = lambada.normalize(raw, {})
    doc = next(d for d in out.documents if d["doc_id"] == "lambada/openai-test/00000")
    item = next(i for i in out.items if i["doc_id"] == doc["doc_id"])
    assert item["task"] == "lambada_openai" and item["answer"] == "and"
    assert doc["sentence_starts"] == [0, 3]


def _tar(members: dict[str, bytes], mode: str = "w") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _novels_archive(books: dict[str, bytes]) -> bytes:
    inner = _tar({f"train-novels/{k}": v for k, v in books.items()})
    return _tar({lambada.DEV_FILE: b"a b\n", "train-novels.tar": inner}, mode="w:gz")


def test_train_novels_source_only_on_request():
    assert lambada.NOVELS_FILE not in {s.relpath for s in lambada.sources({})}
    src = {s.relpath: s for s in lambada.sources({"train_novels": True})}[lambada.NOVELS_FILE]
    assert src.optional and src.sha256 == lambada.ZENODO_SHA256 and src.url == lambada.ZENODO_URL


def test_train_novels_one_document_per_book(tmp_path):
    books = {
        "Romance/b2.txt": b"she smiled . he left .\nthe end\n",
        "Adventure/b1.txt": b"i ran ! \n\nwe hid\n",
        "Adventure/b3.txt": b"x y z .\n",
    }
    raw = _raw(tmp_path, b"a b\n", **{lambada.NOVELS_FILE: _novels_archive(books)})
    out = lambada.normalize(raw, {})
    novels = [d for d in out.documents if d["split"] == "train"]
    assert [d["doc_id"] for d in novels] == [
        "lambada/train/Adventure/b1",
        "lambada/train/Adventure/b3",
        "lambada/train/Romance/b2",
    ]
    b2 = novels[2]
    assert b2["genre"] == "Romance" and b2["tokens"][:3] == ["she", "smiled", "."]
    assert b2["sentence_starts"] == [0, 3, 6]  # "he left ." and the new line "the end"
    assert not any(i["doc_id"].startswith("lambada/train/") for i in out.items)
    to_table(DOCUMENTS, out.documents)

    kept = lambada.normalize(raw, {"max_novels": 2, "seed": 5})
    again = lambada.normalize(raw, {"max_novels": 2, "seed": 5})
    ids = [d["doc_id"] for d in kept.documents if d["split"] == "train"]
    assert len(ids) == 2 and ids == [d["doc_id"] for d in again.documents if d["split"] == "train"]
    assert any("kept 2 of 3" in n for n in kept.notes)


def test_train_novel_bad_utf8_names_member_and_line(tmp_path):
    books = {"Horror/bad.txt": b"fine line\nbad \xc3( line\n"}
    raw = _raw(tmp_path, b"a b\n", **{lambada.NOVELS_FILE: _novels_archive(books)})
    with pytest.raises(DataError) as err:
        lambada.normalize(raw, {})
    assert "train-novels/Horror/bad.txt:2:" in str(err.value)


# --- the passages as released (#28: a language model scores the file's string) ---------------


@pytest.fixture(scope="module")
def real_raw(mirror_session, tmp_path_factory):
    got = fetch_and_normalize(lambada, mirror_session, tmp_path_factory.mktemp("lambada_raw"))
    return got.raw, got.out


@pytest.mark.mirror
def test_mirror_released_dev_passages_are_the_file_s_lines(real_raw, mirror):
    raw, out = real_raw
    passages = lambada.released_passages(raw)
    lines = (mirror / "lambada" / lambada.DEV_FILE).read_text(encoding="utf-8").splitlines()
    assert [passages[f"lambada/dev/{k:05d}"] for k in range(len(lines))] == lines
    docs = {d["doc_id"]: d for d in out.documents}
    for item in out.items:  # the documents' words are the released passage's words
        words = [*docs[item["doc_id"]]["tokens"], item["answer"]]
        assert passages[item["doc_id"]].split() == words, item["doc_id"]


@pytest.mark.mirror
def test_mirror_released_openai_passages_keep_their_line_breaks(real_raw, mirror):
    raw, _ = real_raw
    passages = lambada.released_passages(raw)
    path = mirror / "lambada" / lambada.SAMPLE_OPENAI_FILE
    texts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines()]
    assert [passages[f"lambada/openai-test/{k:05d}"] for k in range(len(texts))] == texts
    assert sum("\n" in t for t in texts) == 182  # 91 % of the 200-passage sample


def test_released_passages_are_the_file_strings(tmp_path):
    text = 'He came in\n\n"Hello," she said  and'
    raw = _raw(
        tmp_path,
        b"a b  c\r\nd e\n",
        **{lambada.OPENAI_FILE: json.dumps({"text": text}).encode() + b"\n"},
    )
    assert lambada.released_passages(raw) == {
        "lambada/dev/00000": "a b  c",
        "lambada/dev/00001": "d e",
        "lambada/openai-test/00000": text,
    }
    assert lambada.released_passages(tmp_path / "absent") == {}
