"""CoNLL-2012 / OntoNotes 5.0 coreference (Pradhan et al. 2012): the user's own LDC copy.

OntoNotes Release 5.0 is LDC-licensed (LDC2013T19) and may not be redistributed, so the
pipeline NEVER downloads it: download.ontonotes.path names a directory the user built with the
CoNLL-2012 scripts (the standard layout ``.../data/{train,development,test}/data/<language>/
annotations/<genre>/<source>/<nn>/<doc>.v4_gold_conll``). sources() lists its *_gold_conll
files (sorted) as file:// sources without checksums (each copy differs by the user's build);
normalize reads them from data/raw/ontonotes/ with the same relative paths.

Columns (CoNLL-2012 *_conll format): 0 document, 1 part, 2 word number, 3 word, 4 POS,
5 parse bit, 6 lemma, 7 frameset, 8 word sense, 9 SPEAKER, 10 named entities, 11.. predicate
arguments (a variable number per sentence), last: coreference. Documents are
``#begin document (bc/cctv/00/cctv_0001); part 000`` blocks, several per file, and become
doc ids ``ontonotes/bc/cctv/00/cctv_0001/part_000``; the genre is the first component
(bc broadcast conversation, bn broadcast news, mz magazine, nw newswire, pt Bible,
tc telephone conversation, wb web). Split from the path (train / development -> dev / test).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.core.errors import CorefreproError, DataError, MissingSourceError
from tasks.core.fetch import Source
from tasks.corpora.base import Normalized
from tasks.corpora.conll import document_row, mention_rows, parse_conll

NAME = "ontonotes"
MIRROR_DIR = "ontonotes"  # never in a mirror: LDC license
LICENSE = "LDC User Agreement for OntoNotes Release 5.0 (LDC2013T19): not redistributable, never downloaded"
GENRES = ("bc", "bn", "mz", "nw", "pt", "tc", "wb")
LANGUAGES = ("arabic", "chinese", "english")
SUFFIX = "_gold_conll"
SPEAKER_COLUMN = 9
SPLIT_DIRS = {"train": "train", "development": "dev", "dev": "dev", "test": "test"}


def _wanted(rel: Path, language: str) -> bool:
    """Keep files of *language*; files under no language folder are kept as they are."""
    parts = rel.parts
    langs = [p for p in parts if p in LANGUAGES]
    return not langs or language in langs


def _gold_files(root: Path, language: str) -> list[Path]:
    return sorted(
        (
            p.relative_to(root)
            for p in root.rglob(f"*{SUFFIX}")
            if p.is_file() and _wanted(p.relative_to(root), language)
        ),
        key=lambda p: p.as_posix(),
    )


def sources(cfg: dict[str, Any] | None = None) -> list[Source]:
    cfg = cfg or {}
    value = cfg.get("path")
    if not value:
        raise MissingSourceError(
            "ontonotes: set download.ontonotes.path in params.yaml to your CoNLL-2012 directory "
            "(the *_gold_conll files built from OntoNotes Release 5.0, LDC2013T19). The data is licensed "
            "by the LDC (https://catalog.ldc.upenn.edu/LDC2013T19) and is never downloaded by corefrepro."
        )
    from tasks.core.config import resolve_path

    root = resolve_path(value)
    if not root.is_dir():
        raise MissingSourceError(f"ontonotes: download.ontonotes.path {root} is not a directory")
    language = str(cfg.get("language", "english"))
    files = _gold_files(root, language)
    if not files:
        raise MissingSourceError(
            f"ontonotes: no *{SUFFIX} files for language '{language}' under {root} "
            "(expected .../data/{train,development,test}/data/<language>/annotations/...)"
        )
    return [Source(rel.as_posix(), None, url=(root / rel).resolve().as_uri()) for rel in files]


def split_of(rel: Path) -> str | None:
    """train / development / test folder in the path -> split (the first such folder wins)."""
    for part in rel.parts[:-1]:
        if part in SPLIT_DIRS:
            return SPLIT_DIRS[part]
    return None


def genre_of(doc_id: str) -> str | None:
    head = doc_id.split("/", 1)[0]
    return head if head in GENRES else None


def normalize(raw_dir: Path, cfg: dict[str, Any] | None = None) -> Normalized:
    raw_dir = Path(raw_dir)
    files = sorted(
        (p.relative_to(raw_dir) for p in raw_dir.rglob(f"*{SUFFIX}") if p.is_file()),
        key=lambda p: p.as_posix(),
    )
    if not files:
        raise CorefreproError(
            f"ontonotes: no *{SUFFIX} files under {raw_dir} (run the download stage first)"
        )
    documents: list[dict[str, Any]] = []
    mentions: list[dict[str, Any]] = []
    seen: dict[str, Path] = {}
    duplicates = 0
    no_genre = 0
    for rel in files:
        path = raw_dir / rel
        split = split_of(rel)
        if split is None:
            raise DataError(
                path, "cannot tell the split: no train/development/test folder in the path"
            )
        for doc in parse_conll(
            path, token_column=3, coref_column=-1, speaker_column=SPEAKER_COLUMN
        ):
            doc_id = f"{NAME}/{doc.doc_id}"
            if doc_id in seen:
                raise DataError(
                    path, f"document {doc.doc_id} also in {seen[doc_id]}", doc.first_line
                )
            seen[doc_id] = rel
            genre = genre_of(doc.doc_id)
            no_genre += genre is None
            documents.append(document_row(doc_id, split, doc, genre=genre))
            mentions.extend(mention_rows(doc_id, doc))
            duplicates += doc.duplicates
    documents.sort(key=lambda d: d["doc_id"])
    mentions.sort(key=lambda m: (m["doc_id"], m["start"], m["end"], m["cluster"]))
    notes = [f"{len(documents)} documents from {len(files)} *{SUFFIX} files"]
    if no_genre:
        notes.append(
            f"{no_genre} documents whose id starts with no OntoNotes genre ({', '.join(GENRES)}): genre null"
        )
    if duplicates:
        notes.append(f"{duplicates} mentions written twice in the same cluster were kept once")
    return Normalized(documents=documents, mentions=mentions, notes=notes)
