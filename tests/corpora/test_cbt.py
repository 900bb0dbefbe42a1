"""CBT reader: real mirror book text (MANIFEST.md counts), question-file format, malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.core.errors import CorefreproError, DataError
from tasks.core.schema import DOCUMENTS, ITEMS
from tasks.core.storage import to_table
from tasks.corpora import cbt
from tests.corpora.conftest import fetch_and_normalize


@pytest.fixture(scope="module")
def real(mirror_session, tmp_path_factory):
    got = fetch_and_normalize(cbt, mirror_session, tmp_path_factory.mktemp("cbt"))
    return mirror_session, got.fetched, got.out, got.documents


@pytest.mark.mirror
def test_mirror_has_book_text_but_no_questions(real):
    _, fetched, out, _ = real
    assert fetched[cbt.BOOK_FILES["valid"]] == cbt.VALID_BOOKS_SHA256
    assert fetched[cbt.SAMPLE_TEST_FILE] == cbt.SAMPLE_TEST_SHA256
    for task in cbt.TASKS:  # MANIFEST: question files NOT available
        assert fetched[cbt.question_file(task, "valid")] is None
        assert fetched[cbt.question_file(task, "test")] is None
    assert out.items == []
    assert any("question files absent" in n for n in out.notes)
    assert any(cbt.SAMPLE_TEST_FILE in n for n in out.notes)


@pytest.mark.mirror
def test_mirror_valid_books_match_manifest(real):
    mirror, _, _, docs = real
    dev = [r for r in docs.to_pylist() if r["split"] == "dev"]
    # MANIFEST: 5 books, 12747 lines = 5 _BOOK_TITLE_ header lines + one sentence per line
    assert len(dev) == 5
    assert sum(len(r["sentence_starts"]) for r in dev) + len(dev) == 12747
    # the books are the validation books that BOOK_SPLIT.txt lists
    split_file = (Path(mirror) / cbt.MIRROR_DIR / "BOOK_SPLIT.txt").read_text(encoding="utf-8")
    valid_block = split_file.split("BOOKS USED FOR VALIDATION SET")[1].split("BOOKS USED FOR TEST")[
        0
    ]
    listed = sorted(
        w.removesuffix(".txt.out") for w in valid_block.split() if w.endswith(".txt.out")
    )
    assert [r["doc_id"].removeprefix("cbt/book/") for r in dev] == listed
    grey = next(r for r in dev if r["doc_id"] == "cbt/book/Andrew_Lang___The_Grey_Fairy_Book")
    assert grey["tokens"][:3] == ["DONKEY", "SKIN", "There"]


@pytest.mark.mirror
def test_mirror_test_sample_is_one_partial_book(real):
    _, _, _, docs = real
    test = [r for r in docs.to_pylist() if r["split"] == "test"]
    # MANIFEST: 200 lines of book 1 = its header + 199 sentences
    assert [r["doc_id"] for r in test] == ["cbt/book/Andrew_Lang___The_Yellow_Fairy_Book"]
    assert len(test[0]["sentence_starts"]) == 199


# ---------------------------------------------------------------- question files (hand-made)

CONTEXT = [
    "Once upon a time a fox lived in the wood .",
    "`` I am hungry , '' said the fox .",
    "He went to the farm of old Tom .",
    "Tom had a hen and a goose .",
    "The hen was red .",
    "The goose was white .",
    "`` Good morning , '' said the fox to the hen .",
    "The hen ran away .",
    "The goose hid behind the barn .",
    "Tom came out with a stick .",
    "The fox ran back to the wood .",
    "There he met a bear .",
    "`` Why do you run ? ''",
    "asked the bear .",
    "`` Tom has a stick , '' said the fox .",
    "The bear laughed .",
    "Next day the fox went back .",
    "This time Tom was asleep .",
    "The fox looked for the hen .",
    "But the hen was in the house .",
]
QUERY = "So the XXXXX went home hungry ."
CANDIDATES = "bear|barn|fox|goose|hen|house|stick|Tom|wood|farm"


def question(context=CONTEXT, query=QUERY, answer="fox", candidates=CANDIDATES, tail="\t\t") -> str:
    lines = [f"{k} {s}" for k, s in enumerate(context, start=1)]
    lines.append(f"21 {query}\t{answer}{tail}{candidates}")
    return "\n".join(lines) + "\n"


def write_raw(tmp_path: Path, files: dict[str, str | bytes], books: str | None = None) -> Path:
    raw = tmp_path / "raw"
    (raw / "data").mkdir(parents=True)
    valid_books = books or "_BOOK_TITLE_ : Some_Author___Some_Book.txt.out\nA line .\nB line .\n"
    (raw / cbt.BOOK_FILES["valid"]).write_text(valid_books, encoding="utf-8")
    for rel, data in files.items():
        path = raw / rel
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8")
    return raw


def test_question_file_parses_into_documents_and_items(tmp_path):
    second = [s.replace("fox", "cat") for s in CONTEXT]
    text = question() + "\n" + question(second, "The XXXXX slept .", "cat", "cat|dog") + "\n"
    rel = cbt.question_file("NE", "valid")
    out = cbt.normalize(write_raw(tmp_path, {rel: text}), {})
    items = to_table(ITEMS, out.items).to_pylist()
    docs = {d["doc_id"]: d for d in to_table(DOCUMENTS, out.documents).to_pylist()}
    assert [i["item_id"] for i in items] == ["cbt/NE/dev/000000", "cbt/NE/dev/000001"]
    first = items[0]
    assert first["task"] == "NE" and first["split"] == "dev" and first["answer"] == "fox"
    assert first["query"] == QUERY.split() and first["candidates"] == CANDIDATES.split("|")
    doc = docs[first["doc_id"]]
    assert len(doc["sentence_starts"]) == 20
    assert first["context_end"] == len(doc["tokens"]) == sum(len(s.split()) for s in CONTEXT)
    s2 = doc["sentence_starts"][1]
    assert doc["tokens"][s2 : s2 + 2] == ["``", "I"]
    assert items[1]["candidates"] == ["cat", "dog"] and "cbt/book/Some_Author___Some_Book" in docs


def _error(tmp_path, text: str | bytes) -> str:
    rel = cbt.question_file("CN", "test")
    with pytest.raises(DataError) as err:
        cbt.normalize(write_raw(tmp_path, {rel: text}), {})
    assert Path(rel).name in str(err.value)
    return str(err.value)


def test_wrong_line_number(tmp_path):
    bad = question().replace("\n5 The hen", "\n6 The hen")
    assert ":5:" in _error(tmp_path, bad)


def test_missing_tab_fields(tmp_path):
    bad = question(tail="\t")  # query, answer, candidates: the empty field is missing
    msg = _error(tmp_path, question() + "\n" + bad)
    assert ":43:" in msg and "4 tab-separated fields" in msg  # 21 + blank + 21


def test_query_without_blank(tmp_path):
    assert ":21:" in _error(tmp_path, question(query="So the fox went home ."))


def test_answer_not_a_candidate(tmp_path):
    assert "not among the candidates" in _error(tmp_path, question(answer="wolf"))


def test_truncated_question_at_end_of_file(tmp_path):
    truncated = question() + "\n" + "\n".join(question().splitlines()[:15]) + "\n"
    msg = _error(tmp_path, truncated)
    assert ":37:" in msg and "ends inside a question" in msg


def test_bad_utf8_in_question_file(tmp_path):
    data = question().encode().replace(b"The goose was white", b"The goose was \xe9hite")
    msg = _error(tmp_path, data)
    assert ":6:" in msg and "utf-8" in msg


def test_book_text_before_first_header(tmp_path):
    with pytest.raises(DataError) as err:
        cbt.normalize(
            write_raw(tmp_path, {}, books="stray line .\n_BOOK_TITLE_ : X.txt.out\na .\n"), {}
        )
    assert "cbt_valid.txt:1:" in str(err.value)


def test_exclude_books_drops_book_and_its_questions(tmp_path):
    book = "_BOOK_TITLE_ : Rudyard_Kipling___The_Jungle_Book.txt.out\n" + "\n".join(CONTEXT) + "\n"
    other = "_BOOK_TITLE_ : Other___Book.txt.out\nSomething else .\n"
    jungle_q = question()
    other_q = question([f"Other sentence {k} ." for k in range(20)], answer="fox")
    raw = write_raw(
        tmp_path,
        {
            cbt.question_file("P", "test"): jungle_q + "\n" + other_q,
            cbt.BOOK_FILES["test"]: book + other,
        },
    )
    kept = cbt.normalize(raw, {"exclude_books": ["Rudyard_Kipling___The_Jungle_Book.txt.out"]})
    assert [i["item_id"] for i in kept.items] == ["cbt/P/test/000001"]
    ids = {d["doc_id"] for d in kept.documents}
    assert (
        "cbt/book/Rudyard_Kipling___The_Jungle_Book" not in ids and "cbt/book/Other___Book" in ids
    )
    assert "cbt/P/test/000000" not in ids
    assert any("removed book Rudyard_Kipling___The_Jungle_Book and 1" in n for n in kept.notes)
    assert len(cbt.normalize(raw, {}).items) == 2
    with pytest.raises(CorefreproError, match="no raw text"):
        cbt.normalize(raw, {"exclude_books": ["Not_A_Book"]})


def test_sources_declare_question_splits():
    rels = {s.relpath: s for s in cbt.sources({})}
    assert cbt.question_file("V", "test") in rels and cbt.question_file("V", "train") not in rels
    assert rels[cbt.BOOK_FILES["valid"]].optional is False
    assert all(s.optional for r, s in rels.items() if r != cbt.BOOK_FILES["valid"])
    arc = rels[cbt.question_file("NE", "valid")].archive
    assert (
        arc.member == "CBTest/data/cbtest_NE_valid_2000ex.txt" and arc.sha256 == cbt.ARCHIVE_SHA256
    )
    with_train = {s.relpath for s in cbt.sources({"question_splits": ["train"]})}
    assert cbt.question_file("P", "train") in with_train
