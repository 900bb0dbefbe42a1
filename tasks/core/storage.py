"""Parquet I/O: deterministic (byte-identical on rerun), zstd, atomic (temp file + rename).

A stage that fails leaves no half-written file: everything is written beside its target
under a temporary name and renamed into place only once complete.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.core import config
from tasks.core.errors import CorefreproError
from tasks.core.layout import check_write_target, temp_dir
from tasks.core.schema import DOCUMENTS, GRAPHS, ITEMS, MENTIONS, QUERY_MENTIONS, SCHEMAS

log = logging.getLogger("corefrepro.storage")

PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 9,
    "use_dictionary": True,
    "write_statistics": True,
    # no wall-clock or writer-version noise beyond pyarrow's fixed created_by string
    "store_schema": True,
    "row_group_size": 65536,
}


class StorageError(CorefreproError):
    """An output could not be written (disk full, a file-size or quota limit)."""


# what a full disk, a quota or `ulimit -f` look like from Python, pyarrow and torch
_FULL_ERRNOS = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
_FULL_MESSAGES = ("No space left", "File too large", "Disk quota", "file write failed")


@contextlib.contextmanager
def _disk_errors_named(target: Path) -> Iterator[None]:
    """A write that fails for lack of room becomes one line naming the output; the previous
    version of the output stays in place (the write went to a temporary)."""
    try:
        yield
    except (OSError, RuntimeError) as exc:
        full = getattr(exc, "errno", None) in _FULL_ERRNOS
        if not full and not any(m in str(exc) for m in _FULL_MESSAGES):
            raise
        cause = os.strerror(exc.errno) if getattr(exc, "errno", None) else str(exc)
        raise StorageError(
            f"{target}: not written ({cause}): the disk is full or a size limit was hit; the "
            "previous version, if any, is kept. Free space and rerun the stage"
        ) from None


def secondary_process() -> bool:
    """One of torchrun's processes other than RANK 0 (tasks/training/distributed.py): it
    computes what RANK 0 computes, and its writes are dropped, so every output, checkpoint and
    metrics file is written once, by RANK 0."""
    return int(os.environ.get("RANK") or 0) > 0


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path; rename it onto *target* on success only.

    A target outside the data roots (tasks.core.layout.write_roots) is refused. The temporary
    lives in <root>/.tmp/, outside every DVC output: a process killed mid-write leaves no
    `.<name>.*.tmp` inside an output directory for DVC to commit. In a secondary process
    (secondary_process) the temporary is dropped."""
    target, root = check_write_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{target.name}.", suffix=".tmp", dir=temp_dir(root))
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        with _disk_errors_named(target):
            yield tmp_path
            if not secondary_process():
                os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


@contextlib.contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a temporary directory that replaces *target* as a whole on success only.

    A target outside the data roots (tasks.core.layout.write_roots) is refused: the old
    directory is deleted, so a name with "../" must never get here. The temporary and the
    replaced directory live in <root>/.tmp/, as for atomic_path."""
    target, root = check_write_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = temp_dir(root)
    tmp = Path(tempfile.mkdtemp(prefix=f"{target.name}.", suffix=".tmp", dir=staging))
    try:
        with _disk_errors_named(target):
            yield tmp
        if secondary_process():
            return
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f"{target.name}.", suffix=".old", dir=staging))
            os.replace(target, old / target.name)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


CACHE_MANIFEST = "SHA256SUMS"


def verified_cache(target: str | Path, build: Callable[[Path], None], what: str) -> Path:
    """A cache folder made by `build(tmp)` once, used only while complete.

    Written as a whole through atomic_dir with a SHA256SUMS of its files; before each use
    every listed file is checked (present, a plain file -- never a link out of the write
    roots --, same sha256) and nothing unlisted is there. A folder cut short, edited or
    planted with links is rebuilt (said once), never read or written through."""
    target = Path(target)
    problem = _cache_problem(target)
    if problem is None:
        return target
    if target.exists() or target.is_symlink():
        log.warning("%s cache %s: %s; rebuilding it", what, target, problem)
    with atomic_dir(target) as tmp:
        build(tmp)
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        sums = "".join(f"{sha256_of(p)}  {p.relative_to(tmp).as_posix()}\n" for p in files)
        (tmp / CACHE_MANIFEST).write_text(sums, encoding="utf-8")
    return target


def _cache_problem(target: Path) -> str | None:
    """Why the cache folder cannot be used as it is, or None."""
    manifest = target / CACHE_MANIFEST
    if target.is_symlink() or not target.is_dir() or not manifest.is_file():
        return "incomplete (no SHA256SUMS)"
    listed = {}
    for line in manifest.read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        listed[name] = digest
    present = {p.relative_to(target).as_posix(): p for p in target.rglob("*")
               if p.name != CACHE_MANIFEST and (p.is_file() or p.is_symlink())}  # fmt: skip
    for name, path in sorted(present.items()):
        if path.is_symlink():
            return f"{name} is a link"
        if name not in listed:
            return f"{name} is not one of its files"
    for name, digest in listed.items():
        if name not in present:
            return f"{name} is missing"
        if sha256_of(present[name]) != digest:
            return f"{name} differs from what was written (cut short or edited)"
    return None


def write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(path: str | Path, obj: Any) -> None:
    """Deterministic JSON (sorted keys) written atomically: DVC metrics and sidecars."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


# Wall-clock figures differ on every run. Kept in DVC metrics or outputs they would make a
# rerun with identical results dirty git and dvc.lock, so they live beside the run instead:
# MLflow has them, and logs/timings/ (untracked) keeps the last run's per output file.
TIMING_KEYS = frozenset(
    {"wall_time_s", "train_time_s", "epoch_time_s", "sec_per_epoch", "seconds", "docs_per_s"}
)
TIMING_SUFFIXES = ("time_s", "_per_s", "seconds")  # time_s, is_time_s, tokens_per_s, seconds
TIMINGS_DIR = Path("logs") / "timings"


def is_timing(key: str) -> bool:
    return key in TIMING_KEYS or key.endswith(TIMING_SUFFIXES)


def split_timings(obj: Any) -> tuple[Any, Any]:
    """(obj without TIMING_KEYS at any depth, the timings alone in the same nesting or None)."""
    if isinstance(obj, Mapping):
        kept: dict[str, Any] = {}
        timings: dict[str, Any] = {}
        for key, value in obj.items():
            if is_timing(key):
                timings[key] = value
                continue
            kept[key], inner = split_timings(value)
            if inner:
                timings[key] = inner
        return kept, timings or None
    if isinstance(obj, list):
        parts = [split_timings(value) for value in obj]
        timings = [t for _, t in parts]
        return [k for k, _ in parts], timings if any(timings) else None
    return obj, None


def timings_path(path: str | Path) -> Path:
    """logs/timings/<path relative to the repository>: where `path`'s wall-clock figures go."""
    target = Path(path).resolve()
    root = config.REPO_ROOT.resolve()  # read at call time: tests point it elsewhere
    rel = target.relative_to(root) if target.is_relative_to(root) else Path(target.name)
    return root / TIMINGS_DIR / rel


def write_metrics(path: str | Path, metrics: Any) -> Any:
    """DVC metrics (or any tracked JSON) without wall-clock figures, which go to
    timings_path(path): a rerun with identical results rewrites identical bytes. Returns the
    timings written (None if there were none)."""
    kept, timings = split_timings(metrics)
    write_json(path, kept)
    if timings:
        write_json(timings_path(path), timings)
    return timings


def to_table(kind: str, rows: Iterable[Mapping[str, Any]] | pa.Table) -> pa.Table:
    """Build a table of one of the declared kinds, checking rows against the schema."""
    schema = SCHEMAS[kind]
    if isinstance(rows, pa.Table):
        table = rows.select(schema.names).cast(schema)
    else:
        table = pa.Table.from_pylist(list(rows), schema=schema)
    validate(kind, table)
    return table


def validate(kind: str, table: pa.Table) -> None:
    """Structural checks every writer must pass (raises CorefreproError)."""
    schema = SCHEMAS[kind]
    if not table.schema.equals(schema, check_metadata=False):
        raise CorefreproError(f"{kind} table does not match tasks/core/schema.py:\n{table.schema}")
    key = {DOCUMENTS: "doc_id", ITEMS: "item_id", GRAPHS: "graph_id"}.get(kind)
    if key is not None:
        ids = table.column(key).to_pylist()
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise CorefreproError(f"{kind}: duplicate {key} values {dup}")
    if kind == DOCUMENTS:
        for doc_id, tokens, starts, speakers in zip(
            table.column("doc_id").to_pylist(),
            table.column("tokens").to_pylist(),
            table.column("sentence_starts").to_pylist(),
            table.column("speakers").to_pylist(),
            strict=True,
        ):
            n = len(tokens)
            if n and (not starts or starts[0] != 0):
                raise CorefreproError(f"document {doc_id}: sentence_starts must begin with 0")
            if any(b <= a for a, b in pairwise(starts)) or (starts and starts[-1] >= max(n, 1)):
                raise CorefreproError(
                    f"document {doc_id}: sentence_starts not increasing within the document"
                )
            if speakers is not None and len(speakers) != n:
                raise CorefreproError(f"document {doc_id}: {len(speakers)} speakers for {n} tokens")
    if kind in (MENTIONS, QUERY_MENTIONS):
        starts = table.column("start").to_pylist()
        ends = table.column("end").to_pylist()
        bad = [i for i, (s, e) in enumerate(zip(starts, ends, strict=True)) if s < 0 or e <= s]
        if bad:
            i = bad[0]
            raise CorefreproError(
                f"{kind}: {len(bad)} spans with start<0 or end<=start, first in "
                f"{table.column(0)[i].as_py()} [{starts[i]}, {ends[i]})"
            )


def check_mentions_in_range(documents: pa.Table, mentions: pa.Table) -> None:
    """Every mention lies inside its document (catches off-by-one readers)."""
    lengths = dict(
        zip(
            documents.column("doc_id").to_pylist(),
            (len(t) for t in documents.column("tokens").to_pylist()),
            strict=True,
        )
    )
    for doc_id, end in zip(
        mentions.column("doc_id").to_pylist(), mentions.column("end").to_pylist(), strict=True
    ):
        if doc_id not in lengths:
            raise CorefreproError(f"mentions: document {doc_id} is not in the documents table")
        if end > lengths[doc_id]:
            raise CorefreproError(
                f"mentions: span end {end} beyond document {doc_id} ({lengths[doc_id]} tokens)"
            )


def check_same_documents(
    documents: pa.Table,
    docs_path: str | Path,
    table: pa.Table,
    table_path: str | Path,
    column: str = "doc_id",
) -> None:
    """Every `column` id of `table` (mentions, items: doc_id; query mentions: item_id against
    the items table) is in `documents`' column of that name: a table of another corpus (a
    stale or swapped file) would otherwise join to nothing, and a stage would write empty
    results and exit 0."""
    known = set(documents.column(column).to_pylist())
    ids = table.column(column).unique().to_pylist()
    stray = [d for d in ids if d not in known]
    if stray:
        what = "documents" if column == "doc_id" else f"{column} values"
        raise CorefreproError(
            f"{table_path}: {len(stray)} of {len(ids)} {what} are not in {docs_path} "
            f"(first: {stray[0]!r}); a table of another corpus? rerun the stage that writes it"
        )


def write_table(
    path: str | Path,
    kind: str,
    rows: Iterable[Mapping[str, Any]] | pa.Table,
    metadata: Mapping[str, str] | None = None,
) -> pa.Table:
    """Write one table atomically and deterministically; returns the table written."""
    table = to_table(kind, rows)
    meta = dict(SCHEMAS[kind].metadata or {})
    meta.update({k.encode(): str(v).encode() for k, v in sorted((metadata or {}).items())})
    table = table.replace_schema_metadata(meta)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **PARQUET_OPTIONS)
    return table


def read_table(
    path: str | Path, kind: str | None = None, columns: list[str] | None = None
) -> pa.Table:
    """Read one table (checked against its schema when `kind` is given). A missing,
    truncated or corrupt file is one error line naming the file, not a pyarrow traceback."""
    path = Path(path)
    if not path.exists():
        raise CorefreproError(
            f"{path}: not found (run the stage that produces it, e.g. `dvc repro`)"
        )
    try:
        if columns is not None:  # a column the file lacks (an older schema): named, not a KeyError
            missing = [c for c in columns if c not in pq.read_schema(path).names]
            if missing:
                raise CorefreproError(_lacks(path, kind, missing))
        table = pq.read_table(path, columns=columns)
    except (pa.ArrowException, OSError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise CorefreproError(
            f"{path}: not a readable Parquet file ({reason}); it is truncated or corrupt: "
            "delete it and rerun the stage that writes it (`dvc repro -f <stage>`)"
        ) from None
    if columns is not None:
        return table
    if kind is not None:
        schema = SCHEMAS[kind]
        if not table.schema.equals(schema, check_metadata=False):
            missing = [n for n in schema.names if n not in table.schema.names]
            if missing:
                raise CorefreproError(_lacks(path, kind, missing))
            raise CorefreproError(f"{path}: schema differs from tasks/core/schema.py '{kind}'")
    return table


def _lacks(path: Path, kind: str | None, missing: list[str]) -> str:
    schema = f" '{kind}'" if kind else ""
    return (
        f"{path}: no column {', '.join(missing)} (tasks/core/schema.py{schema}): written by "
        "an older version? rerun the stage that writes it (`dvc repro -f <stage>`)"
    )


__all__ = [
    "DOCUMENTS",
    "ITEMS",
    "MENTIONS",
    "atomic_dir",
    "atomic_path",
    "check_mentions_in_range",
    "check_same_documents",
    "read_table",
    "to_table",
    "validate",
    "write_json",
    "write_metrics",
    "split_timings",
    "timings_path",
    "TIMING_KEYS",
    "write_table",
    "write_text",
]
