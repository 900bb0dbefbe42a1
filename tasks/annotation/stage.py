"""The annotation stage around tasks/annotation/annotate.py: shard plan, resumable shard cache, merge,
quality against gold.

A run (params.yaml annotate.runs.<run>) pairs a corpus with an annotator. Shards are keyed by
a fingerprint of everything that determines their content (input tables, annotator and its
settings, annotator code), so a crashed or interrupted stage resumes from the shards it had
finished, and a changed input never reuses a stale shard.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks.annotation import annotators
from tasks.annotation.annotate import annotate_documents
from tasks.annotation.runs import run_settings, settings
from tasks.core import storage
from tasks.core.config import REPO_ROOT, resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.layout import docs_dir, mentions_dir
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS, QUERY_MENTIONS
from tasks.core.storage import sha256_of

log = logging.getLogger("corefrepro.annotate")

CODE_FILES = ("tasks/annotation/annotate.py", "tasks/annotation/annotators")


def annotator_settings(run: str) -> dict[str, Any]:
    """annotate.annotators.<annotator> with the run's own `settings` merged over it."""
    entry = run_settings(run)
    shared = dict(settings().annotators.get(entry.annotator) or {})
    return {**shared, **entry.settings}


def _code_hash() -> str:
    h = hashlib.sha256()
    for name in CODE_FILES:
        path = REPO_ROOT / name
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(f.relative_to(REPO_ROOT).as_posix().encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def _checkpoint_hash(cfg: dict[str, Any]) -> str | None:
    """A model checkpoint's content, so shards of an interrupted run are not reused after
    retraining (the path alone stays the same): the model annotator's `checkpoint`, Stanza's
    `coref_model_path`."""
    path = cfg.get("checkpoint") or cfg.get("coref_model_path")
    return sha256_of(resolve_path(path)) if path and resolve_path(path).is_file() else None


@dataclass(frozen=True)
class Plan:
    run: str
    corpus: str
    annotator: str
    fingerprint: str
    shards: list[dict[str, Any]]

    @property
    def cache_dir(self) -> Path:
        return resolve_path(settings().cache_dir) / self.run / self.fingerprint


def plan(run: str) -> Plan:
    entry = run_settings(run)
    corpus, name = entry.corpus, entry.annotator
    cfg, own = settings(), annotator_settings(run)  # params.yaml read once for the plan
    annotators.check(name, own)  # typos and factories refused up front
    source = docs_dir(corpus)
    tables = [source / f"{kind}.parquet" for kind in (DOCUMENTS, ITEMS, MENTIONS)]
    for t in tables:
        if not t.exists():
            raise CorefreproError(
                f"{t}: missing; run `dvc repro normalize@{corpus}` (or `derive@{corpus}` for a "
                f"derived corpus) first"
            )
    docs = storage.read_table(tables[0], columns=["doc_id"])
    for t in tables[1:]:  # items and gold mentions of another corpus would match nothing
        storage.check_same_documents(docs, tables[0], storage.read_table(t, columns=["doc_id"]), t)
    doc_ids = docs.column("doc_id").to_pylist()
    size = cfg.shard_size
    fingerprint = hashlib.sha256(
        json.dumps(
            {
                "inputs": [sha256_of(t) for t in tables],
                "annotator": name,
                "settings": own,
                "checkpoint": _checkpoint_hash(own),
                "batch_size": cfg.batch_size,
                "shard_size": size,
                "code": _code_hash(),
            },
            sort_keys=True,
        ).encode()
    ).hexdigest()[:16]
    shards = [
        {"index": k, "doc_ids": doc_ids[i : i + size]}
        for k, i in enumerate(range(0, len(doc_ids), size))
    ]
    return Plan(run, corpus, name, fingerprint, shards)


# Worker-process caches, keyed by what makes their content: a worker of a running Dask
# cluster outlives the stage, and must not serve the next run a table read before the corpus
# was normalized again, or a model loaded before it was retrained (the fingerprint covers the
# inputs, settings and checkpoint). Small bounds: a long-lived worker serves many runs.
@lru_cache(maxsize=2)
def _annotator(name: str, cfg_json: str, fingerprint: str) -> Any:
    """One annotator per worker process (models load once, not once per shard)."""
    return annotators.get(name, json.loads(cfg_json))


def _stamp(path: Path | str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_mtime_ns, st.st_size


@lru_cache(maxsize=8)
def _table(path: str, stamp: tuple[int, int]) -> pa.Table:
    """Input tables are read once per worker process, not once per shard."""
    return pq.read_table(path)


def _rows(path: Path, column: str, ids: list[str]) -> pa.Table:
    table = _table(str(path), _stamp(path))
    return table.filter(pc.is_in(table.column(column), value_set=pa.array(ids, pa.string())))


@lru_cache(maxsize=4)
def _gold(path: str, stamp: tuple[int, int]) -> pa.Table:
    """Human coreference of a corpus (annotator "gold"; machine-made corpus mentions excluded)."""
    table = _table(path, stamp)
    return table.filter(pc.equal(table.column("annotator"), "gold"))


def annotate_shard(run: str, shard: int, doc_ids: list[str], fingerprint: str) -> dict[str, Any]:
    """Annotate one shard of documents, or reuse it from the shard cache; returns its report."""
    entry = run_settings(run)
    p = Plan(run, entry.corpus, entry.annotator, fingerprint, [])
    out = p.cache_dir / f"shard-{shard:05d}"
    done = out / "report.json"
    if done.exists():
        return {"documents": len(doc_ids), "cached": True, **json.loads(done.read_text())}
    source = docs_dir(p.corpus)
    documents = _rows(source / f"{DOCUMENTS}.parquet", "doc_id", doc_ids)
    items = _rows(source / f"{ITEMS}.parquet", "doc_id", doc_ids)
    # the whole gold table, so "this corpus has gold" does not depend on the shard
    gold_path = source / f"{MENTIONS}.parquet"
    gold = _gold(str(gold_path), _stamp(gold_path))
    cfg_json = json.dumps(annotator_settings(run), sort_keys=True)
    annotator = _annotator(p.annotator, cfg_json, fingerprint)
    mention_rows, query_rows, report = annotate_documents(
        annotator, documents, items, gold, batch_size=settings().batch_size
    )
    with storage.atomic_dir(out) as tmp:
        storage.write_table(tmp / f"{MENTIONS}.parquet", MENTIONS, mention_rows)
        storage.write_table(tmp / f"{QUERY_MENTIONS}.parquet", QUERY_MENTIONS, query_rows)
        storage.write_json(tmp / "report.json", {"report": report})
    return {"documents": len(doc_ids), "cached": False, "report": report}


def _sum_reports(reports: list[dict[str, Any]]) -> dict[str, Any]:
    total: Counter[str] = Counter()
    for r in reports:
        for k, v in (r or {}).items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                total[k] += v
    return dict(sorted(total.items()))


def merge_shards(p: Plan, results: list[dict[str, Any]], elapsed: float) -> dict[str, Any]:
    """Concatenate the shards in order into data/mentions/<run>/ (atomically)."""
    tables = {kind: [] for kind in (MENTIONS, QUERY_MENTIONS)}
    for s in p.shards:
        for kind in tables:
            tables[kind].append(
                pq.read_table(p.cache_dir / f"shard-{s['index']:05d}" / f"{kind}.parquet")
            )
    meta = {"corpus": p.corpus, "annotator": p.annotator, "run": p.run}
    with storage.atomic_dir(mentions_dir(p.run)) as tmp:
        for kind, parts in tables.items():
            combined = pa.concat_tables(parts) if parts else storage.to_table(kind, [])
            storage.write_table(tmp / f"{kind}.parquet", kind, combined, meta)
    shutil.rmtree(p.cache_dir, ignore_errors=True)
    documents = sum(r["documents"] for r in results)
    fresh = [r for r in results if not r["cached"]]
    if len(fresh) < len(results):  # how this run went, not what it made: a log line only, so
        # a resumed run's metrics are the bytes of an uninterrupted one
        log.info("%s: %d of %d shards reused from the cache", p.run,
                 len(results) - len(fresh), len(results))  # fmt: skip
    return {
        "run": p.run,
        "corpus": p.corpus,
        "annotator": p.annotator,
        "documents": documents,
        "shards": len(p.shards),
        "mentions": sum(t.num_rows for t in tables[MENTIONS]),
        "query_mentions": sum(t.num_rows for t in tables[QUERY_MENTIONS]),
        "seconds": round(elapsed, 3),
        "docs_per_s": round(sum(r["documents"] for r in fresh) / elapsed, 1)
        if fresh and elapsed > 0
        else None,
        "validation": _sum_reports([r.get("report") for r in results]),
    }


def score_and_log(run: str, report: dict[str, Any]) -> dict[str, Any]:
    """Score against the corpus's gold mentions on dev documents; write DVC metrics + MLflow."""
    from tasks.core.tracking import log_metrics, tracked_run
    from tasks.evaluation.coref import as_metrics, score_mention_tables

    entry = run_settings(run)
    source = docs_dir(entry.corpus)
    gold = storage.read_table(source / f"{MENTIONS}.parquet", MENTIONS)
    gold = gold.filter(pc.equal(gold.column("annotator"), "gold"))
    docs = storage.read_table(source / f"{DOCUMENTS}.parquet", DOCUMENTS)
    storage.check_same_documents(
        docs, source / f"{DOCUMENTS}.parquet", gold, source / f"{MENTIONS}.parquet"
    )
    split = settings().score_split
    ids = [
        d
        for d, s in zip(
            docs.column("doc_id").to_pylist(), docs.column("split").to_pylist(), strict=True
        )
        if s == split
    ]
    metrics: dict[str, Any] = {k: v for k, v in report.items() if k != "validation"}
    metrics["validation"] = report["validation"]
    if gold.num_rows and ids and entry.annotator != "gold":
        predicted_path = mentions_dir(run) / f"{MENTIONS}.parquet"
        predicted = storage.read_table(predicted_path, MENTIONS)
        storage.check_same_documents(
            docs, source / f"{DOCUMENTS}.parquet", predicted, predicted_path
        )
        scores = score_mention_tables(gold, predicted, documents=ids)
        metrics[split] = {k: round(v, 6) for k, v in as_metrics(scores).items()}
        metrics[split]["documents"] = len(ids)
        log.info(
            "%s: CoNLL F1 on %d %s documents = %.2f",
            run,
            len(ids),
            split,
            100 * metrics[split]["conll_f1"],
        )
    storage.write_metrics(resolve_path(f"metrics/annotate/{run}.json"), metrics)
    with tracked_run(
        "annotate",
        run,
        dataset=entry.corpus,
        run_params={
            "annotator": annotator_settings(run),
            "shard_size": settings().shard_size,
        },
    ):
        flat = {
            k: float(v)
            for k, v in metrics.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        }
        if split in metrics:
            flat.update({f"{split}.{k}": float(v) for k, v in metrics[split].items()})
        log_metrics(flat)
    return metrics
