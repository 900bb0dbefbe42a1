"""Stage `annotate`: coreference mentions for one (corpus, annotator) run.

    python -m flows.annotate --run synthetic-gold

params.yaml annotate.runs.<run> (or model_runs.<run>, stanza_runs.<run>) names the corpus and the
annotator; data/docs/<corpus>/ is read, and data/mentions/<run>/{mentions,query_mentions}.parquet
is written. Documents are annotated in shards on the configured executor: threads,
processes, or dask (a LocalCluster of annotate.workers, with or without Prefect; or, with
annotate.dask_address or DASK_SCHEDULER_ADDRESS, the running scheduler there). Each finished
shard is kept in data/cache/annotate/ under a fingerprint of its inputs, so an interrupted run
resumes where it stopped. Where the corpus has gold coreference, the run is scored against it
on the dev documents (metrics/annotate/<run>.json, MLflow experiment "annotation"). The DVC
stages annotate, annotate_model and annotate_stanza all run this module.

Layout (issue #54.4): this module is the stage's one home, read top to bottom:

1. its settings: params.yaml `annotate` (AnnotateSettings), parsed once by the flow and
   passed down; the schema lives in tasks/annotation/runs.py because the graph stages read
   the section's runs too (a run's corpus), and must not import the annotation stage;
2. its paths: the corpus tables read (data/docs/<corpus>/), the shard cache
   (annotate.cache_dir/<run>/<fingerprint>/), data/mentions/<run>/ and
   metrics/annotate/<run>.json;
3. its plan: the shards and the fingerprint of everything that makes their content (input
   tables, annotator and its settings, its checkpoint, annotator code), so a crashed or
   interrupted run resumes from the shards it had finished and a changed input never reuses
   a stale shard;
4. its outputs: the shards merged in order into data/mentions/<run>/, the run scored against
   gold (metrics file and MLflow run);
5. the flow.

The libraries take arguments: tasks/annotation/shards.py annotates one shard (the step that
runs on a pool or Dask worker, importable there by name), tasks/annotation/annotate.py runs an
annotator over tables and checks its answers, tasks/annotation/annotators/ are the annotators.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from flows.runtime import Runner, flow, run_cli, task
from tasks.annotation import annotators, shards
from tasks.annotation.runs import AnnotateSettings, dask_address, run_settings, settings
from tasks.core import storage
from tasks.core.config import REPO_ROOT, resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.layout import docs_dir, mentions_dir
from tasks.core.progress import Progress
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS, QUERY_MENTIONS
from tasks.core.storage import sha256_of

log = logging.getLogger("corefrepro.annotate")

STAGE = "annotate"
# the annotator code a shard's content depends on (in its fingerprint)
CODE_FILES = ("tasks/annotation/annotate.py", "tasks/annotation/annotators")

# --------------------------------------------------------------------------- 1. settings


def annotator_settings(cfg: AnnotateSettings, run: str) -> dict[str, Any]:
    """annotate.annotators.<annotator> with the run's own `settings` merged over it."""
    entry = run_settings(run, cfg)
    shared = dict(cfg.annotators.get(entry.annotator) or {})
    return {**shared, **entry.settings}


# --------------------------------------------------------------------------- 2. paths


def input_tables(corpus: str) -> list[Path]:
    """data/docs/<corpus>/{documents,items,mentions}.parquet: what every shard reads."""
    return [docs_dir(corpus) / f"{kind}.parquet" for kind in (DOCUMENTS, ITEMS, MENTIONS)]


def metrics_path(run: str) -> Path:
    return resolve_path(f"metrics/{STAGE}/{run}.json")


# --------------------------------------------------------------------------- 3. plan


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
    job: shards.ShardJob  # what every shard's step gets

    @property
    def cache_dir(self) -> Path:
        return self.job.cache_dir


def plan(cfg: AnnotateSettings, run: str) -> Plan:
    entry = run_settings(run, cfg)
    corpus, name = entry.corpus, entry.annotator
    own = annotator_settings(cfg, run)
    annotators.check(name, own)  # typos and factories refused up front
    tables = input_tables(corpus)
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
    pieces = [
        {"index": k, "doc_ids": doc_ids[i : i + size]}
        for k, i in enumerate(range(0, len(doc_ids), size))
    ]
    job = shards.ShardJob(
        run=run,
        source=docs_dir(corpus),
        cache_dir=resolve_path(cfg.cache_dir) / run / fingerprint,
        annotator=name,
        settings_json=json.dumps(own, sort_keys=True),
        fingerprint=fingerprint,
        batch_size=cfg.batch_size,
    )
    return Plan(run, corpus, name, fingerprint, pieces, job)


# --------------------------------------------------------------------------- 4. outputs


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
            tables[kind].append(pq.read_table(p.job.shard_dir(s["index"]) / f"{kind}.parquet"))
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


def score_and_log(cfg: AnnotateSettings, run: str, report: dict[str, Any]) -> dict[str, Any]:
    """Score against the corpus's gold mentions on dev documents; write DVC metrics + MLflow."""
    from tasks.core.tracking import log_metrics, tracked_run
    from tasks.evaluation.coref import as_metrics, score_mention_tables

    entry = run_settings(run, cfg)
    source = docs_dir(entry.corpus)
    gold = storage.read_table(source / f"{MENTIONS}.parquet", MENTIONS)
    gold = gold.filter(pc.equal(gold.column("annotator"), "gold"))
    docs = storage.read_table(source / f"{DOCUMENTS}.parquet", DOCUMENTS)
    storage.check_same_documents(
        docs, source / f"{DOCUMENTS}.parquet", gold, source / f"{MENTIONS}.parquet"
    )
    split = cfg.score_split
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
    storage.write_metrics(metrics_path(run), metrics)
    with tracked_run(
        STAGE,
        run,
        dataset=entry.corpus,
        run_params={
            "annotator": annotator_settings(cfg, run),
            "shard_size": cfg.shard_size,
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


# --------------------------------------------------------------------------- 5. the flow


def _runner(run: str) -> Runner:
    cfg = settings()
    address, setting = dask_address(cfg)
    return Runner(
        cfg.executor,
        cfg.workers,
        address=address,
        address_setting=setting or "dask address",
    )


annotate_shard = task(
    shards.annotate_shard,
    name="annotate-shard",
    task_run_name="annotate@{job.run}/shard{shard}",
    retries=1,
)


@task(name="score-against-gold", task_run_name="score@{run}")
def score_run(cfg: AnnotateSettings, run: str, report: dict) -> dict:
    return score_and_log(cfg, run, report)


@flow(name="annotate", runner=_runner)
def annotate(run: str) -> dict:
    cfg = settings()  # every setting checked before any work, then passed down
    p = plan(cfg, run)
    total = sum(len(s["doc_ids"]) for s in p.shards)
    log.info(
        "%s: %d documents in %d shards (%s annotator, %s)",
        run,
        total,
        len(p.shards),
        p.annotator,
        _runner(run),
    )
    started = time.perf_counter()
    bar = Progress(f"annotate@{run}", total, "docs", logger=log)

    def progress(i: int, result: dict) -> None:
        if result["cached"]:  # an interrupted run's finished shard: said, not redone
            log.info("%s: shard %d of %d [reused from cache]", run, i, len(p.shards))
        bar.update(result["documents"])

    with bar:
        results = annotate_shard.map_kwargs(
            [{"job": p.job, "shard": s["index"], "doc_ids": s["doc_ids"]} for s in p.shards],
            on_done=progress,
        )
    elapsed = time.perf_counter() - started
    report = merge_shards(p, results, elapsed)
    return score_run(cfg, run, report)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run", required=True, help="a key of annotate.runs, model_runs or stanza_runs"
    )
    args = parser.parse_args(argv)
    run_cli(annotate, args.run)


if __name__ == "__main__":
    main()
