"""WikiText-2 v1, tokenized (Merity et al. 2016): 600 / 60 / 60 Wikipedia articles.

Parsing and the document / <eos> conventions live in tasks/corpora/wikitext.py. The
developer mirror has wiki.valid.tokens and a 200-line test sample only: wiki.train.tokens is
optional (from the official archive when the network is on), so normalize works with the
valid split alone (and notes it); the full test file is held back and its sample stands in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.core.fetch import Source
from tasks.corpora import wikitext
from tasks.corpora.base import Normalized

NAME = "wikitext2"
MIRROR_DIR = "wikitext2"
LICENSE = "CC BY-SA 3.0 (Wikipedia text; WikiText release page, Merity et al. 2016)"

# Official archive: HuggingFace datasets (datasets/wikitext/dataset_infos.json) publishes
# its sha256 and size (4,475,746 bytes) for s3.amazonaws.com/research.metamind.io/wikitext/
# wikitext-2-v1.zip, which now answers 403; the author's wikitext.smerity.com serves the
# same archive. Members live under wikitext-2/.
ARCHIVE_URL = "https://wikitext.smerity.com/wikitext-2-v1.zip"
ARCHIVE_SHA256 = "92675f1d63015c1c8b51f1656a52d5bdbc33aafa60cc47a218a66e7ee817488c"
ARCHIVE_ROOT = "wikitext-2"

# Per-file sha256: valid and sample from /work/shared/data/wikitext2/MANIFEST.md. The mirror
# copied pytorch/examples word_language_model/data/wikitext-2/{valid,test}.txt; the train and
# test hashes below are the ones published for that directory's train.txt / test.txt (several
# public projects pin them next to the valid hash the mirror shows). They are the official
# files: valid.txt matches the HF per-line byte count of the official zip's wiki.valid.tokens.
TRAIN_SHA256 = "9e9fa1ad55b1c2c95b08e37dd8e653f638fac2c6de904b79e813611eefbc985f"
VALID_SHA256 = "f0737ed31fc1329026e95cb8b98e19c2a182c39c240ab909dc31abf2f8af58e8"
TEST_SHA256 = "d790b833ef8cf03a90db7bf1271b7520b83c45ce07ba3c1a9699df81e239eca0"
SAMPLE_TEST_SHA256 = "c652d41afea7f2bd5fb9016dac13ddde0524a80a781ae11bf710d18effe93470"
SAMPLE_TEST_FILE = "sample_test.tokens"

FILES = [
    wikitext.SplitFile("train", "wiki.train.tokens"),
    wikitext.SplitFile("valid", "wiki.valid.tokens", required=True),
    wikitext.SplitFile("test", "wiki.test.tokens", sample_relpath=SAMPLE_TEST_FILE),
]
_SHA = {"train": TRAIN_SHA256, "valid": VALID_SHA256, "test": TEST_SHA256}


def sources(cfg: dict[str, Any]) -> list[Source]:
    out = wikitext.archive_sources(FILES, ARCHIVE_URL, ARCHIVE_ROOT, ARCHIVE_SHA256, _SHA)
    out.append(Source(SAMPLE_TEST_FILE, SAMPLE_TEST_SHA256, optional=True))
    return out


def normalize(raw_dir: Path, cfg: dict[str, Any]) -> Normalized:
    return wikitext.normalize_files(raw_dir, cfg, NAME, FILES)
