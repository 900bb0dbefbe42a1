"""One shard of an annotation run: annotate a list of documents, or reuse them from the cache.

The step the annotate stage (flows/annotate.py) maps over its shards on threads, spawned
processes or Dask workers. It lives here, not in the stage module, because a process or a
Dask worker imports the step by its module's name, and the stage's module is `__main__` in
the stage's own process (`python -m flows.annotate`); its per-worker caches (the annotator,
the input tables) would not survive being pickled by value. It takes everything as
arguments (ShardJob: the folders, the annotator and its settings, the batch size): it reads
no params.yaml and knows no path of the project.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks.annotation import annotators
from tasks.annotation.annotate import annotate_documents
from tasks.core import storage
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS, QUERY_MENTIONS


@dataclass(frozen=True)
class ShardJob:
    """What every shard of one run shares (picklable: sent to each worker)."""

    run: str  # the run's name (the shard's label: annotate@<run>/shard<k>)
    source: Path  # the corpus's normalized tables (documents, items, gold mentions)
    cache_dir: Path  # the run's finished shards: <cache_dir>/shard-<k>/
    annotator: str  # a name of tasks/annotation/annotators
    settings_json: str  # the annotator's settings, JSON with sorted keys
    fingerprint: str  # of everything that makes the shards' content
    batch_size: int  # documents per annotator call

    def shard_dir(self, shard: int) -> Path:
        return self.cache_dir / f"shard-{shard:05d}"


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


def annotate_shard(job: ShardJob, shard: int, doc_ids: list[str]) -> dict[str, Any]:
    """Annotate one shard of documents, or reuse it from the shard cache; returns its report."""
    out = job.shard_dir(shard)
    done = out / "report.json"
    if done.exists():
        return {"documents": len(doc_ids), "cached": True, **json.loads(done.read_text())}
    documents = _rows(job.source / f"{DOCUMENTS}.parquet", "doc_id", doc_ids)
    items = _rows(job.source / f"{ITEMS}.parquet", "doc_id", doc_ids)
    # the whole gold table, so "this corpus has gold" does not depend on the shard
    gold_path = job.source / f"{MENTIONS}.parquet"
    gold = _gold(str(gold_path), _stamp(gold_path))
    annotator = _annotator(job.annotator, job.settings_json, job.fingerprint)
    mention_rows, query_rows, report = annotate_documents(
        annotator, documents, items, gold, batch_size=job.batch_size
    )
    with storage.atomic_dir(out) as tmp:
        storage.write_table(tmp / f"{MENTIONS}.parquet", MENTIONS, mention_rows)
        storage.write_table(tmp / f"{QUERY_MENTIONS}.parquet", QUERY_MENTIONS, query_rows)
        storage.write_json(tmp / "report.json", {"report": report})
    return {"documents": len(doc_ids), "cached": False, "report": report}
