"""The Children's Book Test (Hill, Bordes, Chopra & Weston 2015, "The Goldilocks Principle").

CoreLM (Table 2, Appendix A/B) scores the four cloze types NE / CN / V / P zero-shot.

Normalization:
- question files (cbtest_<TYPE>_{train,valid_2000ex,test_2500ex}.txt, the bAbI-style format of
  the release, README.txt "CBT questions"): 21 numbered lines per question, "1 <sentence>" ..
  "20 <sentence>" (the context, 20 consecutive Stanford-CoreNLP sentences of a book) and
  "21 <query with XXXXX>\\t<answer>\\t\\t<candidate>|<candidate>|...", then a blank line.
  Each question becomes its own document (the 20 sentences, split as in the file;
  doc_id = item_id = "cbt/<TYPE>/<split>/<index in the file>") and one item: query = the
  21st sentence's tokens (with the XXXXX token), answer, candidates, task = TYPE.
  These files are NOT in the developer mirror (MANIFEST.md): they are optional sources taken
  from the official archive when the network is on; without them there are no items (note).
- raw book text (cbt_{train,valid,test}.txt): one document per book, split by its
  "_BOOK_TITLE_ : <file>.txt.out" header line, one sentence per line as in the file,
  doc_id "cbt/book/<file name without .txt.out>" (the title is the only stable key a book
  has). A line count of the file = books (headers) + sentences, e.g. cbt_valid.txt's 12,747
  lines = 5 books + 12,742 sentences.
- splits by file: train -> "train", valid -> "dev", test -> "test". The raw test-book text is
  held back from the mirror; its first-200-line sample stands in (note) when it is absent.
- cfg "exclude_books" (default []): book files (e.g. "Rudyard_Kipling___The_Jungle_Book")
  removed everywhere: their book documents and every question whose context comes from them
  (>= 18 of its 20 sentences occur in the book's raw text). CoreLM (Appendix A) drops The
  Jungle Book from CBT because it is part of GPT-2's training data. The book's raw text must
  be available whenever questions are loaded (it is, from the same archive).
- cfg "tasks" (default all four) limits the question types read; download.cbt
  "question_splits" (default [valid, test]) says which question files to fetch (the train
  question files are 250-850 MB each and no model here trains on them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tasks.core.errors import CorefreproError, DataError, MissingSourceError
from tasks.core.fetch import Archive, Source
from tasks.corpora.base import Normalized, document_row, item_row, join_sentences, read_lines

NAME = "cbt"
MIRROR_DIR = "cbt"
LICENSE = (
    "GNU Free Documentation License v1.2 or later, Copyright (c) 2015 Facebook "
    "(README.txt and LICENSE.txt of CBTest)"
)

# The official CBTest.tgz (120,547,669 bytes; tree CBTest/{README.txt,data/,stats/}). The
# bAbI page's original link www.thespermwhale.com/jaseweston/babi/CBTest.tgz is dead; ParlAI
# (parlai/tasks/cbt/build.py) serves the same file from Facebook's parl.ai downloads with the
# same sha256 that HuggingFace datasets records for CBTest.tgz (datasets/cbt/dataset_infos.json).
ARCHIVE_URL = "http://parl.ai/downloads/cbt/cbt.tar.gz"
ARCHIVE_SHA256 = "932df0cadc1337b2a12b4c696b1041c1d1c6d4b6bd319874c6288f02e4a61e92"
ARCHIVE_ROOT = "CBTest"

TASKS = ("NE", "CN", "V", "P")
SPLITS = {"train": "train", "valid": "dev", "test": "test"}  # file split -> table split
QUESTION_SUFFIX = {"train": "train", "valid": "valid_2000ex", "test": "test_2500ex"}
BOOK_FILES = {s: f"data/cbt_{s}.txt" for s in SPLITS}
SAMPLE_TEST_FILE = "sample_test/cbt_test_first200lines.txt"

# sha256 of the mirrored files, from /work/shared/data/cbt/MANIFEST.md.
VALID_BOOKS_SHA256 = "b28c46bb0986a04943f2eac750b367fda372d43b9ca521789fa0a493888cd100"
SAMPLE_TEST_SHA256 = "13d20806405477e46b94a328e210e8bd059c43e36d5c79014a820391899e4851"

TITLE_PREFIX = "_BOOK_TITLE_ :"
BLANK = "XXXXX"
CONTEXT_SENTENCES = 20
MATCH_AT_LEAST = 18  # context sentences found in a book for a question to count as from it


def question_file(task: str, split: str) -> str:
    return f"data/cbtest_{task}_{QUESTION_SUFFIX[split]}.txt"


def _archive(relpath: str) -> Archive:
    return Archive(ARCHIVE_URL, f"{ARCHIVE_ROOT}/{relpath}", ARCHIVE_SHA256)


def sources(cfg: dict[str, Any]) -> list[Source]:
    """Valid book text is required (mirrored); everything else is optional (archive/sample)."""
    splits = list(cfg.get("question_splits", ["valid", "test"]))
    bad = [s for s in splits if s not in SPLITS]
    if bad:
        raise CorefreproError(f"download.cbt.question_splits: unknown {bad}; use {list(SPLITS)}")
    out = [
        Source(BOOK_FILES["valid"], VALID_BOOKS_SHA256, archive=_archive(BOOK_FILES["valid"])),
        # no published per-file checksums: the archive's sha256 is checked instead
        Source(BOOK_FILES["train"], None, archive=_archive(BOOK_FILES["train"]), optional=True),
        Source(BOOK_FILES["test"], None, archive=_archive(BOOK_FILES["test"]), optional=True),
        Source(SAMPLE_TEST_FILE, SAMPLE_TEST_SHA256, optional=True),
    ]
    for task in TASKS:
        for split in SPLITS:
            if split in splits:
                rel = question_file(task, split)
                out.append(Source(rel, None, archive=_archive(rel), optional=True))
    return out


# --------------------------------------------------------------------------- books


def read_books(path: Path, split: str) -> tuple[list[dict[str, Any]], int]:
    """Documents of a cbt_*.txt file (one per _BOOK_TITLE_ header, one sentence per line)
    and the number of blank lines skipped (none in cbt_valid.txt)."""
    docs: list[dict[str, Any]] = []
    header_lines: list[int] = []
    blank = 0
    current: dict[str, Any] | None = None
    for lineno, line in read_lines(path):
        if line.startswith("_BOOK_TITLE_"):
            if not line.startswith(TITLE_PREFIX) or not line[len(TITLE_PREFIX) :].strip():
                raise DataError(path, f"book header must read '{TITLE_PREFIX} <file name>'", lineno)
            title = line[len(TITLE_PREFIX) :].strip().removesuffix(".txt.out")
            current = document_row(f"{NAME}/book/{title}", split, [], [])
            docs.append(current)
            header_lines.append(lineno)
            continue
        words = line.split()
        if not words:
            blank += 1
            continue
        if current is None:
            raise DataError(path, f"text before the first '{TITLE_PREFIX}' header", lineno)
        current["sentence_starts"].append(len(current["tokens"]))
        current["tokens"].extend(words)
    seen: dict[str, int] = {}
    for doc, line in zip(docs, header_lines, strict=True):
        if not doc["tokens"]:
            raise DataError(path, f"book '{doc['doc_id']}' has no sentences", line)
        if doc["doc_id"] in seen:
            raise DataError(
                path,
                f"book '{doc['doc_id']}' repeats the header of line {seen[doc['doc_id']]}",
                line,
            )
        seen[doc["doc_id"]] = line
    return docs, blank


# --------------------------------------------------------------------------- questions


def iter_questions(path: Path) -> Iterator[tuple[int, list[list[str]], list[str], str, list[str]]]:
    """Yield (line of the query, context sentences, query tokens, answer, candidates)."""
    expected = 1
    sentences: list[list[str]] = []
    last = 0
    for lineno, line in read_lines(path):
        last = lineno
        if expected == 1 and not line.strip():
            continue  # the blank line that separates questions
        number, _, rest = line.partition(" ")
        if not number.isdigit() or int(number) != expected:
            raise DataError(
                path,
                f"expected line {expected} of a 21-line question to start with '{expected} ', "
                f"found {line[:20]!r}",
                lineno,
            )
        if expected <= CONTEXT_SENTENCES:
            if "\t" in rest:
                raise DataError(
                    path,
                    f"context sentence {expected} contains a tab (a query line too early?)",
                    lineno,
                )
            words = rest.split()
            if not words:
                raise DataError(path, f"context sentence {expected} is empty", lineno)
            sentences.append(words)
            expected += 1
            continue
        fields = rest.split("\t")
        if len(fields) != 4:
            raise DataError(
                path,
                f"query line needs 4 tab-separated fields (query, answer, empty, "
                f"candidates), found {len(fields)}",
                lineno,
            )
        query_text, answer, empty, cand_text = fields
        query = query_text.split()
        if BLANK not in query_text:
            raise DataError(path, f"query has no {BLANK} blank", lineno)
        answer = answer.strip()
        if not answer:
            raise DataError(path, "empty answer field", lineno)
        if empty.strip():
            raise DataError(
                path, f"third field must be empty, found {empty.strip()[:20]!r}", lineno
            )
        candidates = cand_text.strip().split("|")
        if any(not c.strip() for c in candidates):
            raise DataError(path, "empty candidate in the '|'-separated list", lineno)
        if answer not in candidates:
            raise DataError(path, f"answer {answer!r} is not among the candidates", lineno)
        yield lineno, sentences, query, answer, candidates
        expected, sentences = 1, []
    if expected != 1:
        raise DataError(
            path, f"file ends inside a question (after its line {expected - 1} of 21)", last
        )


def read_questions(
    path: Path, task: str, split: str
) -> tuple[list[dict], list[dict], list[list[str]]]:
    """Documents, items and the raw context sentences (for book matching) of one question file."""
    docs, items, contexts = [], [], []
    for index, (_, sentences, query, answer, candidates) in enumerate(iter_questions(path)):
        doc_id = f"{NAME}/{task}/{split}/{index:06d}"
        tokens, starts = join_sentences(sentences)
        docs.append(document_row(doc_id, split, tokens, starts))
        items.append(
            item_row(doc_id, doc_id, split, task, len(tokens), query, answer, candidates=candidates)
        )
        contexts.append([" ".join(s) for s in sentences])
    return docs, items, contexts


# --------------------------------------------------------------------------- normalize


def _sentences(doc: dict[str, Any]) -> set[str]:
    toks, starts = doc["tokens"], doc["sentence_starts"]
    bounds = [*starts, len(toks)]
    return {" ".join(toks[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)}


def normalize(raw_dir: Path, cfg: dict[str, Any]) -> Normalized:
    raw_dir = Path(raw_dir)
    notes: list[str] = []
    tasks = list(cfg.get("tasks", TASKS))
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise CorefreproError(f"normalize.cbt.tasks: unknown {unknown}; use {list(TASKS)}")
    exclude = [str(b).removesuffix(".txt.out") for b in cfg.get("exclude_books", [])]

    if not (raw_dir / BOOK_FILES["valid"]).exists():
        raise MissingSourceError(
            f"{raw_dir / BOOK_FILES['valid']}: missing (run the download stage first)"
        )
    books: list[dict[str, Any]] = []
    for split, table_split in SPLITS.items():
        path = raw_dir / BOOK_FILES[split]
        if not path.exists() and split == "test" and (raw_dir / SAMPLE_TEST_FILE).exists():
            path = raw_dir / SAMPLE_TEST_FILE
            notes.append(
                f"books: {BOOK_FILES['test']} absent; used the mirror sample {SAMPLE_TEST_FILE} "
                "(its first 200 lines: part of one test book)"
            )
        if not path.exists():
            notes.append(f"books: {BOOK_FILES[split]} absent; no {table_split} book documents")
            continue
        found, blank = read_books(path, table_split)
        books += found
        if blank:
            notes.append(f"books: {blank} blank lines skipped in {path.name}")

    docs: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    contexts: list[list[str]] = []
    missing = []
    for task in tasks:
        for split, table_split in SPLITS.items():
            rel = question_file(task, split)
            if not (raw_dir / rel).exists():
                missing.append(rel)
                continue
            d, i, c = read_questions(raw_dir / rel, task, table_split)
            docs += d
            items += i
            contexts += c
    if missing:
        notes.append(
            f"questions: {len(missing)} question files absent (not in the developer mirror; "
            f"fetched from the official archive with the network on): {', '.join(missing)}"
        )

    if exclude:
        by_title = {b["doc_id"].removeprefix(f"{NAME}/book/"): b for b in books}
        absent = [t for t in exclude if t not in by_title]
        if absent and items:
            raise CorefreproError(
                f"normalize.cbt.exclude_books: no raw text for {absent} among the loaded book "
                "files, so their questions cannot be identified (fetch cbt_{train,valid,test}.txt)"
            )
        if absent:
            notes.append(
                f"exclude_books: {absent} not in the loaded book text (no questions loaded)"
            )
        drop_docs: set[str] = set()
        for title in exclude:
            if title not in by_title:
                continue
            sentences = _sentences(by_title[title])
            hits = [
                it["doc_id"]
                for it, ctx in zip(items, contexts, strict=True)
                if sum(s in sentences for s in ctx) >= MATCH_AT_LEAST
            ]
            drop_docs.update(hits)
            drop_docs.add(by_title[title]["doc_id"])
            notes.append(f"exclude_books: removed book {title} and {len(hits)} of its questions")
        books = [b for b in books if b["doc_id"] not in drop_docs]
        docs = [d for d in docs if d["doc_id"] not in drop_docs]
        items = [i for i in items if i["doc_id"] not in drop_docs]

    documents = sorted(books + docs, key=lambda r: r["doc_id"])
    items.sort(key=lambda r: r["item_id"])
    return Normalized(documents=documents, items=items, notes=notes)
