"""An annotation run's tables as the graph stages read them (graphs, view_entitynlm,
view_corelm: flows/graphs.py, flows/view_entitynlm.py, flows/view_corelm.py).

Library code shared by the three stages: it takes the folders to read as arguments (the
stages resolve them from the run's settings) and reads no params.yaml. Tables of another
corpus are refused (a mentions table of another corpus would join to nothing, issue #14.4).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tasks.core import storage
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS, QUERY_MENTIONS


def read_annotation(source: Path, annotated: Path, *, items: bool) -> dict[str, Any]:
    """{documents, mentions[, items, query_mentions]}: the corpus's normalized tables in
    `source` (data/docs/<corpus>/) and the run's annotation in `annotated`
    (data/mentions/<run>/), checked to be of the same documents (and items)."""
    out: dict[str, Any] = {}
    docs_path = source / f"{DOCUMENTS}.parquet"
    out["documents"] = storage.read_table(docs_path, DOCUMENTS)
    paths = {"mentions": (annotated / f"{MENTIONS}.parquet", MENTIONS)}
    if items:
        paths["items"] = (source / f"{ITEMS}.parquet", ITEMS)
        paths["query_mentions"] = (annotated / f"{QUERY_MENTIONS}.parquet", QUERY_MENTIONS)
    for key, (path, kind) in paths.items():
        out[key] = storage.read_table(path, kind)
        if key == "query_mentions":
            items_path = paths["items"][0]
            storage.check_same_documents(out["items"], items_path, out[key], path, "item_id")
        else:
            storage.check_same_documents(out["documents"], docs_path, out[key], path)
    return out


def log_dropped(log: logging.Logger, run: str, name: str, stats: Mapping[str, Any]) -> None:
    """One log line of what a build dropped, skipped or resolved as a conflict (if anything)."""
    dropped = {
        k: v for k, v in stats.items() if ("drop" in k or "conflict" in k or "skip" in k) and v
    }
    if dropped:
        log.info("%s %s: %s", run, name, dropped)
