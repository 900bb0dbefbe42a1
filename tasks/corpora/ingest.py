"""Corpus stages as plain functions: download (or generate), normalize, statistics.

flows/download.py, flows/normalize.py and flows/stats.py wrap these in Prefect flows.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa

from tasks import corpora
from tasks.core import storage
from tasks.core.config import params
from tasks.core.errors import CorefreproError
from tasks.core.fetch import DownloadSettings, sha256_of
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.core.settings import ConfigError, parse_settings, settings_to_dict
from tasks.corpora.base import Normalized
from tasks.corpora.settings import SharedNormalize, settings_class

log = logging.getLogger("corefrepro.ingest")

SUMS_FILE = "SHA256SUMS"


# the shared normalize keys (normalize.<corpus> may override them): tasks/corpora/settings.py
NormalizeSettings = SharedNormalize


def _split_section(section: str, cls: type) -> tuple[Any, dict[str, Any]]:
    """(the shared keys parsed strictly into cls, {corpus: its namespace}) of download /
    normalize."""
    cfg = params(section) or {}
    if not isinstance(cfg, dict):
        raise ConfigError(f"{section}: expected mapping, got {type(cfg).__name__} {cfg!r}")
    cfg = dict(cfg)
    per_corpus = {k: cfg.pop(k) for k in list(cfg) if k in corpora.REGISTRY}
    return parse_settings(cls, cfg, section), per_corpus


def _corpus_namespace(section: str, corpus: str, given: Any, base: dict[str, Any]) -> dict:
    """<section>.<corpus> parsed strictly with its class (tasks/corpora/settings.py); only
    the keys given are returned (over `base`): the module's own defaults apply to the rest."""
    cls = settings_class(corpus, section)
    given = {} if given is None else given
    if not isinstance(given, dict):
        raise ConfigError(
            f"{section}.{corpus}: expected mapping, got {type(given).__name__} {given!r}"
        )
    parsed = settings_to_dict(parse_settings(cls, {**base, **given}, f"{section}.{corpus}"))
    return {k: parsed[k] for k in {**base, **given}}


def download_settings(corpus: str) -> tuple[DownloadSettings, dict[str, Any]]:
    """(shared download settings, this corpus's download.<corpus> namespace)."""
    shared, per_corpus = _split_section("download", DownloadSettings)
    return shared, _corpus_namespace("download", corpus, per_corpus.get(corpus), {})


def write_checksums(directory: Path) -> dict[str, str]:
    """SHA256SUMS beside the raw files: what was fetched, including unpinned files."""
    sums = {
        p.relative_to(directory).as_posix(): sha256_of(p)
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != SUMS_FILE
    }
    storage.write_text(directory / SUMS_FILE, "".join(f"{h}  {name}\n" for name, h in sums.items()))
    return sums


def normalize_settings(corpus: str) -> dict[str, Any]:
    """normalize.<corpus> merged over the shared normalize settings (seed, dev_fraction)."""
    shared, per_corpus = _split_section("normalize", NormalizeSettings)
    return _corpus_namespace("normalize", corpus, per_corpus.get(corpus), settings_to_dict(shared))


def normalize_corpus(corpus: str, source: Path, target: Path) -> dict[str, int]:
    """Read data/raw/<corpus> and write the three Parquet tables into data/docs/<corpus>/."""
    if not source.is_dir():
        raise CorefreproError(
            f"{source}: raw corpus missing; run `dvc repro download@{corpus}` first"
        )
    module = corpora.get(corpus)
    result: Normalized = module.normalize(source, normalize_settings(corpus))
    return write_docs(corpus, result, target, getattr(module, "LICENSE", ""))


def write_docs(
    corpus: str, result: Normalized, target: Path, license: str, **extra_meta: str
) -> dict[str, int]:
    """Check and write normalized rows as data/docs/<corpus>/ (normalize and derive stages)."""
    for note in result.notes:
        log.info("%s: %s", corpus, note)
    documents = storage.to_table(DOCUMENTS, result.documents)
    items = storage.to_table(ITEMS, result.items)
    mentions = storage.to_table(MENTIONS, result.mentions)
    storage.check_mentions_in_range(documents, mentions)
    _check_items(documents, items)
    meta = {"corpus": corpus, "license": license, "notes": "\n".join(result.notes), **extra_meta}
    with storage.atomic_dir(target) as tmp:
        storage.write_table(tmp / f"{DOCUMENTS}.parquet", DOCUMENTS, documents, meta)
        storage.write_table(tmp / f"{ITEMS}.parquet", ITEMS, items, meta)
        storage.write_table(tmp / f"{MENTIONS}.parquet", MENTIONS, mentions, meta)
    counts = {
        "documents": documents.num_rows,
        "items": items.num_rows,
        "mentions": mentions.num_rows,
    }
    log.info("%s: wrote %s to %s", corpus, counts, target)
    return counts


def _check_items(documents: pa.Table, items: pa.Table) -> None:
    lengths = dict(
        zip(
            documents.column("doc_id").to_pylist(),
            (len(t) for t in documents.column("tokens").to_pylist()),
            strict=True,
        )
    )
    for item_id, doc_id, end in zip(
        items.column("item_id").to_pylist(),
        items.column("doc_id").to_pylist(),
        items.column("context_end").to_pylist(),
        strict=True,
    ):
        if doc_id not in lengths:
            raise CorefreproError(
                f"item {item_id}: context document {doc_id} not in the documents table"
            )
        if not 0 <= end <= lengths[doc_id]:
            raise CorefreproError(f"item {item_id}: context_end {end} outside document {doc_id}")


def corpus_stats(directory: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Metrics (per split) and a document-length histogram for one normalized corpus."""
    docs = storage.read_table(directory / f"{DOCUMENTS}.parquet", DOCUMENTS)
    items = storage.read_table(directory / f"{ITEMS}.parquet", ITEMS)
    mentions = storage.read_table(directory / f"{MENTIONS}.parquet", MENTIONS)
    split_of = dict(
        zip(docs.column("doc_id").to_pylist(), docs.column("split").to_pylist(), strict=True)
    )
    lengths = [len(t) for t in docs.column("tokens").to_pylist()]
    metrics: dict[str, Any] = {}
    for split in sorted(set(split_of.values())):
        idx = [i for i, s in enumerate(docs.column("split").to_pylist()) if s == split]
        toks = [lengths[i] for i in idx]
        metrics[split] = {
            "documents": len(idx),
            "tokens": sum(toks),
            "mean_doc_tokens": round(sum(toks) / max(len(idx), 1), 2),
            "items": sum(1 for s in items.column("split").to_pylist() if s == split),
        }
    m_docs = mentions.column("doc_id").to_pylist()
    clusters = {(d, c) for d, c in zip(m_docs, mentions.column("cluster").to_pylist(), strict=True)}
    for split in metrics:
        metrics[split]["mentions"] = sum(1 for d in m_docs if split_of[d] == split)
        metrics[split]["clusters"] = sum(1 for d, _ in clusters if split_of[d] == split)
    width = 50 if max(lengths, default=0) <= 1000 else 500
    hist = Counter((n // width) * width for n in lengths)
    plot = [{"doc_tokens": k, "documents": hist[k]} for k in sorted(hist)]
    return metrics, plot
