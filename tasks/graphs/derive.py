"""Derived corpora: normalized tables made from another corpus's normalized tables.

    params.yaml derive.<name>: {from: <corpus>, kind: <kind>, ...kind settings}
    dvc.yaml derive@<name>: data/docs/<from>/ -> data/docs/<name>/{documents,items,mentions}.parquet

Why a stage of its own rather than a corpus module: a corpus module normalizes its OWN raw
files, and download/normalize/stats are one foreach over `corpora` with the same
dependencies for every corpus (data/raw/<corpus>). A corpus built from data/docs/<other> must
declare that other corpus's normalized output as its dependency, which only a stage of its
own can do; with it DVC reruns the derived corpus exactly when its source changes. The output
has normalize's layout and checks (tasks.corpora.ingest.write_docs), so annotate, graphs and the
readers take a derived corpus like any other: name it in an annotate run
(`annotate.runs.<run>: {corpus: <name>, annotator: ...}`).

Kinds (KINDS):
- babi_mix: bAbI-Mix (Dhingra et al., papers/004, §4.2), built by tasks.graphs.babi_mix.mix_babi: the
  stories of one (split, task) are paired, one story of each pair gets its entities renamed,
  the sentences are interleaved, and every question of both stories is asked over the mixed
  story. Settings: seed; alternates (extra word -> alternate pairs, merged over
  tasks.graphs.babi_mix.BABI_ALTERNATES, for a corpus with other entity names); candidates: keep |
  drop (drop: items lose their candidate lists, so a reader picks among all document
  tokens as on bAbI, which has none -- the synthetic corpus lists its own story's places,
  which would leave the other story's renamed places out of reach).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tasks import corpora
from tasks.core import storage
from tasks.core.config import params
from tasks.core.errors import CorefreproError
from tasks.core.layout import docs_dir
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.corpora.base import Normalized
from tasks.corpora.ingest import corpus_stats, write_docs
from tasks.graphs.babi_mix import BABI_ALTERNATES, mix_babi

Deriver = Callable[[str, Mapping[str, Any], Mapping[str, Any]], Normalized]


def _babi_mix(name: str, tables: Mapping[str, Any], cfg: Mapping[str, Any]) -> Normalized:
    extra = cfg.get("alternates") or {}
    if not isinstance(extra, Mapping):
        raise CorefreproError(f"params.yaml derive.{name}.alternates must map words to words")
    if cfg.get("candidates", "keep") not in ("keep", "drop"):
        raise CorefreproError(f"params.yaml derive.{name}.candidates must be keep or drop")
    result = mix_babi(
        tables[DOCUMENTS],
        tables[ITEMS],
        tables[MENTIONS],
        seed=int(cfg["seed"]),
        name=name,
        alternates={**BABI_ALTERNATES, **{str(k): str(v) for k, v in extra.items()}},
    )
    if cfg.get("candidates", "keep") == "drop":
        for item in result.items:
            item["candidates"] = None
        result.notes.append("candidate lists dropped (derive candidates: drop)")
    return result


# kind -> (settings it accepts besides from/kind, the builder)
KINDS: dict[str, tuple[frozenset[str], Deriver]] = {
    "babi_mix": (frozenset({"seed", "alternates", "candidates"}), _babi_mix),
}


def settings(name: str) -> dict[str, Any]:
    """derive.<name>, checked: a known source, a known kind, only that kind's settings."""
    derived = params("derive") or {}
    if name not in derived:
        raise CorefreproError(
            f"params.yaml derive: no '{name}' (known: {', '.join(sorted(derived)) or 'none'})"
        )
    cfg = dict(derived[name] or {})
    where = f"params.yaml derive.{name}"
    if name in corpora.REGISTRY:
        raise CorefreproError(f"{where}: '{name}' is a corpus of its own; pick another name")
    if not isinstance(cfg.get("from"), str) or cfg["from"] == name:
        raise CorefreproError(f"{where}: 'from' must name another corpus, got {cfg.get('from')!r}")
    kind = cfg.get("kind")
    if kind not in KINDS:
        raise CorefreproError(f"{where}: kind {kind!r} unknown; known: {sorted(KINDS)}")
    unknown = sorted(set(cfg) - {"from", "kind"} - KINDS[kind][0])
    if unknown:
        raise CorefreproError(f"{where}: unknown setting(s) {unknown} for kind {kind}")
    if kind == "babi_mix" and not isinstance(cfg.get("seed"), int):
        raise CorefreproError(f"{where}: kind babi_mix needs an integer seed")
    return cfg


def derive_corpus(name: str, target: Path | None = None) -> dict[str, Any]:
    """Read data/docs/<from>/, build the derived rows, write data/docs/<name>/ atomically;
    returns per-split counts (tasks.corpora.ingest.corpus_stats) for the stage's metrics."""
    cfg = settings(name)
    source = docs_dir(cfg["from"])
    tables = {}
    for kind in (DOCUMENTS, ITEMS, MENTIONS):
        path = source / f"{kind}.parquet"
        if not path.exists():
            raise CorefreproError(
                f"{path}: missing; derive.{name} reads corpus '{cfg['from']}' (add it to "
                f"`corpora` and run `dvc repro normalize@{cfg['from']}`)"
            )
        tables[kind] = storage.read_table(path, kind)
    license_ = (tables[DOCUMENTS].schema.metadata or {}).get(b"license", b"").decode()
    result = KINDS[cfg["kind"]][1](name, tables, cfg)
    target = target or docs_dir(name)
    write_docs(
        name,
        result,
        target,
        f"derived from {cfg['from']}: {license_}",
        derived_from=cfg["from"],
        derive_kind=cfg["kind"],
    )
    metrics, _ = corpus_stats(target)
    return metrics


__all__ = ["KINDS", "derive_corpus", "settings"]
