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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tasks import corpora
from tasks.core import storage
from tasks.core.config import params
from tasks.core.errors import CorefreproError
from tasks.core.layout import check_name, docs_dir, name_problem
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.core.settings import ConfigError, parse_settings
from tasks.corpora.base import Normalized
from tasks.corpora.ingest import corpus_stats, write_docs
from tasks.graphs.babi_mix import BABI_ALTERNATES, mix_babi

Deriver = Callable[[str, Mapping[str, Any], Any], Normalized]  # (name, tables, kind settings)


@dataclass
class BabiMixSettings:
    """derive.<name> of kind babi_mix, besides `from` and `kind`."""

    seed: int
    alternates: dict[str, str] = field(default_factory=dict)  # merged over BABI_ALTERNATES
    candidates: Literal["keep", "drop"] = "keep"


def _babi_mix(name: str, tables: Mapping[str, Any], cfg: BabiMixSettings) -> Normalized:
    result = mix_babi(
        tables[DOCUMENTS],
        tables[ITEMS],
        tables[MENTIONS],
        seed=cfg.seed,
        name=name,
        alternates={**BABI_ALTERNATES, **cfg.alternates},
    )
    if cfg.candidates == "drop":
        for item in result.items:
            item["candidates"] = None
        result.notes.append("candidate lists dropped (derive candidates: drop)")
    return result


# kind -> (the settings class of its keys besides from/kind, the builder)
KINDS: dict[str, tuple[type, Deriver]] = {
    "babi_mix": (BabiMixSettings, _babi_mix),
}


@dataclass(frozen=True)
class Derivation:
    """derive.<name>: the corpus it reads (`from`), its kind and that kind's settings."""

    source: str
    kind: str
    options: Any  # KINDS[kind]'s settings class


def settings(name: str) -> Derivation:
    """derive.<name>, parsed strictly (tasks.core.settings): a safe name that is no corpus of
    its own, `from` another corpus (a safe name), a known kind, only that kind's settings."""
    derived = params("derive") or {}
    if name not in derived:
        raise CorefreproError(
            f"params.yaml derive: no '{name}' (known: {', '.join(sorted(derived)) or 'none'})"
        )
    where = f"derive.{name}"
    check_name(name, "derive (the key)")
    if name in corpora.REGISTRY:
        raise ConfigError(f"{where}: '{name}' is a corpus of its own; pick another name")
    cfg = derived[name]
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"{where}: expected mapping, got {type(cfg).__name__} {cfg!r}")
    cfg = dict(cfg)
    source, kind = cfg.pop("from", None), cfg.pop("kind", None)
    problems = []
    if not isinstance(source, str) or source == name:
        problems.append(f"{where}.from: must name another corpus, got {source!r}")
    elif name_problem(source):
        problems.append(f"{where}.from: {name_problem(source)}")
    if kind not in KINDS:
        problems.append(f"{where}.kind: {kind!r} unknown; known: {sorted(KINDS)}")
    else:
        try:
            options = parse_settings(KINDS[kind][0], cfg, where)
        except ConfigError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ConfigError(problems)
    return Derivation(source, kind, options)


def derive_corpus(name: str, target: Path | None = None) -> dict[str, Any]:
    """Read data/docs/<from>/, build the derived rows, write data/docs/<name>/ atomically;
    returns per-split counts (tasks.corpora.ingest.corpus_stats) for the stage's metrics."""
    cfg = settings(name)
    source = docs_dir(cfg.source)
    tables = {}
    for kind in (DOCUMENTS, ITEMS, MENTIONS):
        path = source / f"{kind}.parquet"
        if not path.exists():
            raise CorefreproError(
                f"{path}: missing; derive.{name} reads corpus '{cfg.source}' (add it to "
                f"`corpora` and run `dvc repro normalize@{cfg.source}`)"
            )
        tables[kind] = storage.read_table(path, kind)
    license_ = (tables[DOCUMENTS].schema.metadata or {}).get(b"license", b"").decode()
    result = KINDS[cfg.kind][1](name, tables, cfg.options)
    target = target or docs_dir(name)
    write_docs(
        name,
        result,
        target,
        f"derived from {cfg.source}: {license_}",
        derived_from=cfg.source,
        derive_kind=cfg.kind,
    )
    metrics, _ = corpus_stats(target)
    return metrics


__all__ = ["KINDS", "derive_corpus", "settings"]
