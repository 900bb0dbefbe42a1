"""LAMBADA (Paperno et al. 2016, "The LAMBADA dataset: Word prediction requiring a broad
discourse context"): predict the last word of a narrative passage.

Normalization (one document and one item per passage, so annotation runs once per passage):
- document = the passage WITHOUT its target word (the last whitespace token), so that no
  annotator or graph can see the answer; item: task "lambada", context_end = all document
  tokens, query [] (the passage is its own query: MAGE-GRU / Chu et al. 2016 take the last
  sentence of the document as the query), answer = the target word, candidates None.
- plain text (the Zenodo release, lower-cased and tokenized, one passage per line): dev
  ("lambada_development_plain_text.txt", split "dev", required) and test (split "test", held
  back from the developer mirror; its 200-passage sample stands in, with a note, only when
  the full file is absent). doc_id "lambada/<dev|test>/<line index, 0-based>".
- OpenAI's detokenized test file (GPT-2's "lambada_test.jsonl", used by CoreLM's Appendix A
  and lm-evaluation-harness "lambada_openai") is a separate variant of the same 5153 test
  passages: task "lambada_openai", doc_id "lambada/openai-test/<index>", split "test";
  tokens = whitespace split of the text as lm-evaluation-harness does (the target keeps any
  attached punctuation, e.g. a leading quote in 2 of the first 200 passages).
- training novels (optional, only when download.lambada.train_novels is true: the 334 MB
  Zenodo tarball): one document per book ("lambada/train/<genre>/<book>"), split "train",
  genre = the book's folder, no items. cfg "max_novels" keeps a seeded, genre-blind sample.

Sentence boundaries: the text has no markers (passages are run-on lines), so they come from
the punctuation rule of tasks/corpora/base.py (punct_sentence_starts): in the tokenized plain
text after standalone . ! ? tokens (plus closing quotes/brackets); in detokenized text (OpenAI
file, novels) also after words with attached final punctuation that are no abbreviation or
initial, and every line break starts one. This matters: MAGE-GRU's query is the document's
last sentence.
"""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from tasks.core.errors import DataError, MissingSourceError
from tasks.core.fetch import Archive, Source
from tasks.core.splits import stable_fraction
from tasks.corpora.base import (
    Normalized,
    document_row,
    item_row,
    punct_sentence_starts,
    read_lines,
)

NAME = "lambada"
MIRROR_DIR = "lambada"
LICENSE = (
    "CC BY 4.0 (Zenodo record 2630551, the LAMBADA release); the OpenAI detokenized test file "
    "is under OpenAI's modified MIT license (github.com/openai/gpt-2 LICENSE)"
)

# The official release: sha256 and size (334,527,694 bytes) published by HuggingFace datasets
# (datasets/lambada/dataset_infos.json, download_checksums) and tensorflow-datasets
# (text/lambada/checksums.tsv). Members sit at the archive root (both loaders open
# <extracted>/lambada_*_plain_text.txt and <extracted>/train-novels.tar).
ZENODO_URL = "https://zenodo.org/record/2630551/files/lambada-dataset.tar.gz"
ZENODO_SHA256 = "8fbe499096ddbdcbbd0cac406861b5026fb451d15b8fe04e0e4f3d082f2ad5d7"
# GPT-2's detokenized test set: sha256 pinned by lm-evaluation-harness (lambada task) and the
# EleutherAI/lambada_openai dataset card, which links this URL (1,819,752 bytes, 5153 lines).
OPENAI_URL = "https://openaipublic.blob.core.windows.net/gpt-2/data/lambada_test.jsonl"
OPENAI_SHA256 = "4aa8d02cd17c719165fc8a7887fddd641f43fcafa4b1c806ca8abc31fabdb226"

DEV_FILE = "lambada_development_plain_text.txt"
TEST_FILE = "lambada_test_plain_text.txt"
OPENAI_FILE = "lambada_test.jsonl"
SAMPLE_TEST_FILE = "sample_test_plain_text.txt"
SAMPLE_OPENAI_FILE = "sample_test_openai.jsonl"
NOVELS_FILE = "lambada-dataset.tar.gz"

# sha256 of the mirrored files, from /work/shared/data/lambada/MANIFEST.md.
DEV_SHA256 = "f5b0f1e38fcdad6a1cd3a17bee4b6932a28cd9c5f463ada970c61de0f8679f2f"
SAMPLE_TEST_SHA256 = "a4e9bdaf7d5216e324639f34648c58ddd32b212b017daf3ddc7ad6f440eb76f5"
SAMPLE_OPENAI_SHA256 = "59d2ac8c920ce01e7952db060fd9095837c3d68e90ac3b72e3e05e3b2380ce2b"

TASK = "lambada"
TASK_OPENAI = "lambada_openai"


def sources(cfg: dict[str, Any]) -> list[Source]:
    """Dev is required (mirrored); full test files are optional (held back), samples stand in.

    cfg "train_novels" (default false): also fetch the whole Zenodo tarball for its training
    novels; only paper-scale MAGE-GRU training (Chu et al. 2016 style) needs them.
    """
    zenodo = Archive(ZENODO_URL, DEV_FILE, ZENODO_SHA256)
    out = [
        Source(DEV_FILE, DEV_SHA256, archive=zenodo),
        # no published checksum for the test member; the archive's own sha256 is checked
        Source(
            TEST_FILE,
            None,
            archive=Archive(ZENODO_URL, TEST_FILE, ZENODO_SHA256),
            optional=True,
        ),
        Source(OPENAI_FILE, OPENAI_SHA256, url=OPENAI_URL, optional=True),
        Source(SAMPLE_TEST_FILE, SAMPLE_TEST_SHA256, optional=True),
        Source(SAMPLE_OPENAI_FILE, SAMPLE_OPENAI_SHA256, optional=True),
    ]
    if cfg.get("train_novels", False):
        out.append(Source(NOVELS_FILE, ZENODO_SHA256, url=ZENODO_URL, optional=True))
    return out


# --------------------------------------------------------------------------- readers


def _passage_rows(
    doc_id: str,
    split: str,
    task: str,
    tokens: list[str],
    line_starts: Sequence[int],
    detokenized: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    context, target = tokens[:-1], tokens[-1]
    starts = punct_sentence_starts(context, line_starts, detokenized=detokenized)
    doc = document_row(doc_id, split, context, starts)
    item = item_row(doc_id, doc_id, split, task, len(context), [], target)
    return doc, item


def _plain_passages(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, passage): the plain-text release's lines without their line break."""
    yield from read_lines(path)


def _openai_passages(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, passage): the "text" of every record of GPT-2's jsonl, as released."""
    for lineno, line in read_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                path, f"not a JSON object ({exc.msg} at column {exc.colno})", lineno
            ) from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise DataError(path, 'expected an object with a string field "text"', lineno)
        yield lineno, record["text"]


def released_passages(raw_dir: Path) -> dict[str, str]:
    """doc_id -> the passage exactly as its file releases it (context, a space, target word).

    The documents keep the whitespace-split words only; a language model scores the released
    string, as lm-evaluation-harness's lambada_openai and OpenAI's GPT-2 figure do (the jsonl
    keeps the line breaks of 91 % of its passages; the plain-text files are one line each).
    Same files and doc_ids as `normalize` (a sample only where the full file is absent).
    """
    raw_dir, out = Path(raw_dir), {}
    files = [
        (raw_dir / DEV_FILE, f"{NAME}/dev", _plain_passages),
        (_pick(raw_dir, TEST_FILE, SAMPLE_TEST_FILE, "", []), f"{NAME}/test", _plain_passages),
        (
            _pick(raw_dir, OPENAI_FILE, SAMPLE_OPENAI_FILE, "", []),
            f"{NAME}/openai-test",
            _openai_passages,
        ),
    ]
    for path, prefix, read in files:
        if path is not None and path.is_file():
            out.update((f"{prefix}/{lineno - 1:05d}", text) for lineno, text in read(path))
    return out


def read_plain(path: Path, split: str, prefix: str) -> tuple[list[dict], list[dict]]:
    """One passage per line (tokenized); the last token is the target word."""
    docs, items = [], []
    for lineno, line in _plain_passages(path):
        tokens = line.split()
        if len(tokens) < 2:
            raise DataError(
                path,
                f"a passage needs context words and a target word, found {len(tokens)} tokens",
                lineno,
            )
        doc, item = _passage_rows(f"{prefix}/{lineno - 1:05d}", split, TASK, tokens, (), False)
        docs.append(doc)
        items.append(item)
    return docs, items


def read_openai(path: Path, split: str, prefix: str) -> tuple[list[dict], list[dict]]:
    """GPT-2's detokenized jsonl: {"text": passage} per line; the last word is the target."""
    docs, items = [], []
    for lineno, text in _openai_passages(path):
        tokens: list[str] = []
        line_starts: list[int] = []
        for segment in text.split("\n"):
            words = segment.split()
            if words:
                line_starts.append(len(tokens))
                tokens.extend(words)
        if len(tokens) < 2:
            raise DataError(
                path,
                f"a passage needs context words and a target word, found {len(tokens)} tokens",
                lineno,
            )
        doc, item = _passage_rows(
            f"{prefix}/{lineno - 1:05d}", split, TASK_OPENAI, tokens, line_starts, True
        )
        docs.append(doc)
        items.append(item)
    return docs, items


def _novel_members(tf: tarfile.TarFile) -> list[tarfile.TarInfo]:
    """train-novels/<genre>/<book>.txt members, in archive order."""
    out = []
    for m in tf.getmembers():
        parts = PurePosixPath(m.name).parts
        if m.isfile() and m.name.endswith(".txt") and "train-novels" in parts[:-2]:
            out.append(m)
    return out


def _novel_doc(where: str, member: tarfile.TarInfo, data: bytes) -> dict[str, Any] | None:
    path = PurePosixPath(member.name)
    tokens: list[str] = []
    line_starts: list[int] = []
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"{where}!{member.name}", f"not valid utf-8 at byte {exc.start} of the line", lineno
            ) from None
        words = text.split()
        if words:
            line_starts.append(len(tokens))
            tokens.extend(words)
    if not tokens:
        return None
    return document_row(
        f"{NAME}/train/{path.parent.name}/{path.stem}",
        "train",
        tokens,
        punct_sentence_starts(tokens, line_starts, detokenized=True),
        genre=path.parent.name,
    )


def read_novels(path: Path, max_novels: int | None, seed: int) -> tuple[list[dict], list[str]]:
    """Books of the Zenodo tarball (inside its nested train-novels.tar), one document each.

    max_novels keeps the books ranked first by a seeded hash of their path (a sample that
    does not favour genres early in the alphabet). Members are read in archive order so the
    compressed stream is only ever read forward.
    """
    notes: list[str] = []

    def collect(tf: tarfile.TarFile, where: str) -> list[dict]:
        members = _novel_members(tf)
        if not members:
            raise DataError(where, "no train-novels/<genre>/<book>.txt members in the archive")
        chosen = {m.name for m in members}
        if max_novels is not None and max_novels < len(members):
            ranked = sorted(chosen, key=lambda n: (stable_fraction(n, seed), n))
            chosen = set(ranked[: max(0, max_novels)])
            notes.append(
                f"train novels: kept {len(chosen)} of {len(members)} (max_novels={max_novels}, seed={seed})"
            )
        docs, empty = [], 0
        for m in members:
            if m.name not in chosen:
                continue
            fh = tf.extractfile(m)
            if fh is None:  # pragma: no cover - filtered to regular files above
                continue
            doc = _novel_doc(where, m, fh.read())
            if doc is None:
                empty += 1
            else:
                docs.append(doc)
        if empty:
            notes.append(f"train novels: {empty} empty book files skipped")
        return docs

    with tarfile.open(path, "r:*") as outer:
        nested = [m for m in outer.getmembers() if PurePosixPath(m.name).name == "train-novels.tar"]
        if nested:
            fh = outer.extractfile(nested[0])
            if fh is None:
                raise DataError(path, "train-novels.tar is not a regular file in the archive")
            with tarfile.open(fileobj=fh, mode="r:") as inner:
                docs = collect(inner, f"{path}!{nested[0].name}")
        else:
            docs = collect(outer, str(path))
    ids = [d["doc_id"] for d in docs]
    if len(set(ids)) != len(ids):
        raise DataError(path, "two training novels map to the same <genre>/<book> id")
    return docs, notes


# --------------------------------------------------------------------------- normalize


def _pick(raw_dir: Path, full: str, sample: str, what: str, notes: list[str]) -> Path | None:
    if (raw_dir / full).exists():
        return raw_dir / full
    if (raw_dir / sample).exists():
        notes.append(f"{what}: {full} absent; used the mirror sample {sample} (first 200 passages)")
        return raw_dir / sample
    notes.append(f"{what}: neither {full} nor {sample} present; no {what} documents")
    return None


def normalize(raw_dir: Path, cfg: dict[str, Any]) -> Normalized:
    raw_dir = Path(raw_dir)
    notes: list[str] = []
    if not (raw_dir / DEV_FILE).exists():
        raise MissingSourceError(f"{raw_dir / DEV_FILE}: missing (run the download stage first)")
    docs, items = read_plain(raw_dir / DEV_FILE, "dev", f"{NAME}/dev")

    test = _pick(raw_dir, TEST_FILE, SAMPLE_TEST_FILE, "plain test", notes)
    if test is not None:
        d, i = read_plain(test, "test", f"{NAME}/test")
        docs += d
        items += i
    openai = _pick(raw_dir, OPENAI_FILE, SAMPLE_OPENAI_FILE, "OpenAI test", notes)
    if openai is not None:
        d, i = read_openai(openai, "test", f"{NAME}/openai-test")
        docs += d
        items += i

    if (raw_dir / NOVELS_FILE).exists():
        max_novels = cfg.get("max_novels")
        d, n = read_novels(
            raw_dir / NOVELS_FILE,
            None if max_novels is None else int(max_novels),
            int(cfg.get("seed", 13)),
        )
        docs += d
        notes += n
        notes.append(f"train novels: {len(d)} books")

    docs.sort(key=lambda r: r["doc_id"])
    items.sort(key=lambda r: r["item_id"])
    return Normalized(documents=docs, items=items, notes=notes)
