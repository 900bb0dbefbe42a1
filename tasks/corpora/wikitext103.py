"""WikiText-103 v1, tokenized (Merity et al. 2016): 28,475 / 60 / 60 Wikipedia articles.

Parsing and the document / <eos> conventions live in tasks/corpora/wikitext.py. Nothing of
WikiText-103 is in the developer mirror: valid and test come from the official archive
(required: CoreLM evaluates WikiText-103 zero-shot). The 103M-token train file is optional
and not normalized unless normalize.wikitext103.include_train is true (it would hold every
token in memory; no model here trains on it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.core.fetch import Source
from tasks.corpora import wikitext
from tasks.corpora.base import Normalized

NAME = "wikitext103"
MIRROR_DIR = "wikitext103"
LICENSE = "CC BY-SA 3.0 (Wikipedia text; WikiText release page, Merity et al. 2016)"

# Official archive: sha256 and size (190,229,076 bytes) published by HuggingFace datasets
# (datasets/wikitext/dataset_infos.json) for the s3.amazonaws.com/research.metamind.io URL,
# which now answers 403; the author's wikitext.smerity.com serves the same archive. No
# per-file checksums are published (and no mirror copy exists): members are checked only
# through the archive's sha256.
ARCHIVE_URL = "https://wikitext.smerity.com/wikitext-103-v1.zip"
ARCHIVE_SHA256 = "242ba0f20b329cfdf1ccc61e9e9e5b59becf189db7f7a81cd2a0e2fc31539590"
ARCHIVE_ROOT = "wikitext-103"

FILES = [
    wikitext.SplitFile("train", "wiki.train.tokens"),
    wikitext.SplitFile("valid", "wiki.valid.tokens", required=True),
    wikitext.SplitFile("test", "wiki.test.tokens", required=True),
]


def sources(cfg: dict[str, Any]) -> list[Source]:
    return wikitext.archive_sources(FILES, ARCHIVE_URL, ARCHIVE_ROOT, ARCHIVE_SHA256)


def normalize(raw_dir: Path, cfg: dict[str, Any]) -> Normalized:
    return wikitext.normalize_files(raw_dir, cfg, NAME, FILES, include_train_default=False)
