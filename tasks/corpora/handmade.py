"""Embedded default coreference documents: six short ORIGINAL texts written for corefrepro.

Why: the coreference stages (readers, scorer, E2E coref, EntityNLM) need real-looking text with
gold chains that runs offline in seconds. The documents (tasks/corpora/handmade/*.conll) are
CoNLL-2012 files (12 space-aligned columns: document, part, word number, word, POS "-",
parse "*", lemma, frameset, sense "-", SPEAKER, named entities "*", COREFERENCE), written by
the project and annotated by hand following OntoNotes conventions except that singletons are
marked (as in GUM and LitBank). They cover a news report (x2), a dialogue and an interview
with speakers (first/second person pronouns resolved across turns), a short story full of
pronouns, and a how-to; nested mentions ("[its] main supports", "[[my] brother] and I"), a
split-antecedent "they" left as its own singleton, multi-token names ("Mayor Elena
Vasquez") and no cataphora.

The genre is the first component of the document name ("(news/harbor); part 000").
Splits are pinned below: four train, one dev, one test.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tasks.core.errors import CorefreproError, DataError
from tasks.core.fetch import Source
from tasks.corpora.base import Normalized
from tasks.corpora.conll import document_row, mention_rows, parse_conll

NAME = "handmade"
MIRROR_DIR = "handmade"  # never in a mirror: generate() copies the shipped files
LICENSE = "MIT: written by corefrepro itself, same license as the project (pyproject.toml)"
SHIPPED_DIR = Path(__file__).resolve().parent / "handmade"
SPEAKER_COLUMN = 9
SPLITS: dict[str, str] = {
    "bakery": "train",
    "bread": "train",
    "harbor": "train",
    "lighthouse": "train",
    "cycling": "dev",
    "library": "test",
}


def sources(cfg: dict[str, Any] | None = None) -> list[Source]:
    return []  # nothing to fetch: generate() provides the files


def generate(raw_dir: Path, cfg: dict[str, Any] | None = None) -> None:
    """Copy the shipped documents into raw_dir, so the download stage works offline."""
    raw_dir = Path(raw_dir)
    raw_dir.mkdir(parents=True, exist_ok=True)
    for name in sorted(SPLITS):
        src = SHIPPED_DIR / f"{name}.conll"
        if not src.exists():
            raise CorefreproError(f"handmade: shipped document {src} is missing from the checkout")
        shutil.copyfile(src, raw_dir / src.name)


def normalize(raw_dir: Path, cfg: dict[str, Any] | None = None) -> Normalized:
    raw_dir = Path(raw_dir)
    documents: list[dict[str, Any]] = []
    mentions: list[dict[str, Any]] = []
    for name, split in sorted(SPLITS.items()):
        path = raw_dir / f"{name}.conll"
        if not path.exists():
            raise CorefreproError(
                f"handmade: {path} is missing (run the download stage, which calls generate())"
            )
        docs = parse_conll(path, token_column=3, coref_column=-1, speaker_column=SPEAKER_COLUMN)
        if len(docs) != 1:
            raise DataError(path, f"expected one document, found {len(docs)}", 1)
        doc = docs[0]
        genre, _, rest = doc.doc_id.partition("/")
        if not rest.startswith(f"{name}/"):
            raise DataError(
                path, f"document {doc.doc_id} should be named <genre>/{name}", doc.first_line
            )
        doc_id = f"{NAME}/{name}"
        documents.append(document_row(doc_id, split, doc, genre=genre))
        mentions.extend(mention_rows(doc_id, doc))
    return Normalized(documents=documents, mentions=mentions, notes=[])
