"""AMALGUM (Gessler et al., LREC 2020; gucorpling/amalgum): GUM-style web text, MACHINE-annotated.

AMALGUM is a ~4M-token "Machine-Annotated Lookalike of GUM" in GUM's genres (academic, bio,
fiction, interview, news, voyage, whow; reddit only on request). Its coreference was produced
by a system scoring 51.4 CoNLL F1 on GUM test (README.md): it is silver data, useful to
pre-train or to scale coreference-aware language models, never to evaluate against. The rows
carry annotator "amalgum-auto" (not "gold") so no stage mistakes them for gold.

Upstream format: the repository has no coreference .conll files; coreference is in the MISC
column of its CoNLL-U files (amalgum/<genre>/dep/AMALGUM_<genre>_<x>.conllu) as GUM-style
brackets, ``Entity=(person-6``, ``Entity=person-6)event-11)(time-12)``, read by
tasks/corpora/conll.py parse_conllu (same bracket reader as GUM). Gold sentence breaks come
with it.

Not in the mirror; no checksums are published, so sources carry sha256=None (the observed hash
is logged). download.amalgum.documents chooses the documents (default: a 10-document sample
across genres, each seen at the pinned commit); download.amalgum.commit pins the version. The
sources are optional (an offline run skips them); normalize fails if none is present.

Split: AMALGUM has no official split (it is training material). Every document is train except
a deterministic dev carve-out (carve_dev, normalize.amalgum.dev_fraction / seed); no test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.core.errors import CorefreproError
from tasks.core.fetch import Source
from tasks.core.splits import carve_dev
from tasks.corpora.base import Normalized
from tasks.corpora.conll import document_row, mention_rows, parse_conllu, single_document

NAME = "amalgum"
# who made these mentions: AMALGUM's coreference system, not human annotators
ANNOTATOR = "amalgum-auto"
MIRROR_DIR = "amalgum"  # not in the developer mirror
LICENSE = (
    "annotations CC BY 4.0; texts under their sources' licenses (MDPI CC BY, Wikipedia CC BY-SA, "
    "Gutenberg, Wikinews CC BY 2.5, wikiHow CC BY-NC-SA, Wikivoyage CC BY-SA): README.md of "
    "gucorpling/amalgum"
)
COMMIT = "c62d76acdf9e997362424821efb3e92094668a1d"  # gucorpling/amalgum (v0.2 data)
URL = "https://raw.githubusercontent.com/gucorpling/amalgum/{commit}/amalgum/{genre}/dep/{name}.conllu"
GENRES = ("academic", "bio", "fiction", "interview", "news", "reddit", "voyage", "whow")
DEFAULT_DOCUMENTS = (
    "AMALGUM_academic_adder",
    "AMALGUM_academic_agricultural",
    "AMALGUM_fiction_adventure",
    "AMALGUM_fiction_allan",
    "AMALGUM_news_abdelbaset",
    "AMALGUM_news_africans",
    "AMALGUM_voyage_alto",
    "AMALGUM_voyage_anatolia",
    "AMALGUM_whow_aarp",
    "AMALGUM_whow_actuators",
)


def genre_of(name: str) -> str:
    parts = name.split("_")
    if len(parts) < 3 or parts[0] != "AMALGUM" or parts[1] not in GENRES:
        raise CorefreproError(
            f"amalgum: unexpected document name {name!r} (AMALGUM_<genre>_<x>, genre in {GENRES})"
        )
    return parts[1]


def relpath(name: str) -> str:
    """Upstream layout: amalgum/<genre>/dep/<name>.conllu."""
    return f"amalgum/{genre_of(name)}/dep/{name}.conllu"


def sources(cfg: dict[str, Any] | None = None) -> list[Source]:
    cfg = cfg or {}
    commit = str(cfg.get("commit", COMMIT))
    names = sorted(set(cfg.get("documents") or DEFAULT_DOCUMENTS))
    optional = bool(cfg.get("optional", True))
    return [
        Source(
            relpath(name),
            None,  # AMALGUM publishes no checksums
            url=URL.format(commit=commit, genre=genre_of(name), name=name),
            optional=optional,
        )
        for name in names
    ]


def normalize(raw_dir: Path, cfg: dict[str, Any] | None = None) -> Normalized:
    cfg = cfg or {}
    raw_dir = Path(raw_dir)
    files = sorted(raw_dir.glob("amalgum/*/dep/*.conllu"))
    if not files:
        raise CorefreproError(
            f"amalgum: no documents under {raw_dir}/amalgum/*/dep/ (AMALGUM is not in the mirror: "
            "enable the network, or remove amalgum from the corpora list)"
        )
    parsed = []
    for path in files:
        name = path.stem
        genre = genre_of(name)
        parsed.append((name, genre, single_document(path, parse_conllu(path), name)))
    dev = carve_dev(
        [name for name, _, _ in parsed],
        float(cfg.get("dev_fraction", 0.1)),
        int(cfg.get("seed", 13)),
    )
    documents: list[dict[str, Any]] = []
    mentions: list[dict[str, Any]] = []
    duplicates = 0
    for name, genre, doc in parsed:
        doc_id = f"{NAME}/{name}"
        documents.append(document_row(doc_id, "dev" if name in dev else "train", doc, genre=genre))
        mentions.extend(mention_rows(doc_id, doc, annotator=ANNOTATOR))
        duplicates += doc.duplicates
    notes = [
        f"{len(documents)} AMALGUM documents; coreference is AUTOMATIC (silver, 51.4 CoNLL F1 on GUM test "
        "per the AMALGUM README), stored with annotator 'gold' as the corpus's own annotation",
        f"no official split: {len(dev)} documents carved as dev, the rest train, no test",
    ]
    if duplicates:
        notes.append(f"{duplicates} mentions written twice in the same cluster were kept once")
    return Normalized(documents=documents, mentions=mentions, notes=notes)
