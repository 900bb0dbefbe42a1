"""Helpers for the corpus tests: a corpus fetched from the real mirror (network off) and
normalized, as the download and normalize stages would. Pair them with the session fixture
`mirror_session` (tests/conftest.py), which skips where the mirror is absent."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa

from tasks.core.fetch import fetch_source
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.core.storage import to_table
from tasks.corpora.base import Normalized


def fetch_all(
    module: ModuleType, mirror: Path, tmp_dir: Path, cfg: dict[str, Any] | None = None
) -> dict[str, str | None]:
    """Fetch every source module.sources(cfg) declares into tmp_dir/raw, from the mirror only.

    Returns relpath -> sha256 of the fetched file (None for an optional file not mirrored).
    """
    return {
        src.relpath: fetch_source(
            src,
            module.NAME,
            tmp_dir / "raw",
            mirror=str(mirror),
            mirror_dir=module.MIRROR_DIR,
            network=False,
            cache_dir=tmp_dir / "cache",
        )
        for src in module.sources(cfg or {})
    }


@dataclass
class Fetched:
    raw: Path  # the raw directory normalize read
    fetched: dict[str, str | None]  # what fetch_all returned
    out: Normalized
    documents: pa.Table
    items: pa.Table
    mentions: pa.Table


def fetch_and_normalize(
    module: ModuleType, mirror: Path, tmp_dir: Path, cfg: dict[str, Any] | None = None
) -> Fetched:
    """fetch_all, then module.normalize with the same cfg, then the three checked tables."""
    fetched = fetch_all(module, mirror, tmp_dir, cfg)
    out = module.normalize(tmp_dir / "raw", cfg or {})
    return Fetched(
        tmp_dir / "raw",
        fetched,
        out,
        to_table(DOCUMENTS, out.documents),
        to_table(ITEMS, out.items),
        to_table(MENTIONS, out.mentions),
    )
