"""Where the data stages write: one place for the paths that several stages share.

A stage's outputs are named by the stage (dvc.yaml): download@<corpus> -> data/raw/<corpus>,
normalize@<corpus> -> data/docs/<corpus>, annotate@<run> -> data/mentions/<run>, graphs@<run>
and view_*@<run> -> data/graphs/<run>/<table>.parquet; training stages write
artifacts/<stage>/<item>/ and metrics/<stage>/<item>.json (their own modules say how).
"""

from __future__ import annotations

from pathlib import Path

from tasks.core.config import resolve_path

RAW_ROOT = "data/raw"
DOCS_ROOT = "data/docs"
MENTIONS_ROOT = "data/mentions"
GRAPHS_ROOT = "data/graphs"


def raw_dir(corpus: str) -> Path:
    return resolve_path(RAW_ROOT) / corpus


def docs_dir(corpus: str) -> Path:
    return resolve_path(DOCS_ROOT) / corpus


def mentions_dir(run: str) -> Path:
    return resolve_path(MENTIONS_ROOT) / run


def graphs_dir(run: str) -> Path:
    return resolve_path(GRAPHS_ROOT) / run
