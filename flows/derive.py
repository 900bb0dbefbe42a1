"""Stage `derive`: a corpus made from another normalized corpus (the kinds: tasks/graphs/derive.py).

    python -m flows.derive --corpus synthetic-mix

params.yaml derive.<name> names the source corpus and the kind (babi_mix: bAbI-Mix, Dhingra
et al. §4.2). Writes data/docs/<name>/{documents,items,mentions}.parquet and the per-split
counts to metrics/corpora/<name>.json (what stats@<corpus> writes for a normalized corpus).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows.runtime import flow, run_cli, task
from tasks import corpora
from tasks.core import storage
from tasks.core.config import params, resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.layout import check_name, docs_dir, name_problem
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.core.settings import ConfigError, parse_settings
from tasks.corpora.ingest import corpus_stats, write_docs
from tasks.graphs.derive import KINDS


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


derive_task = task(derive_corpus, name="derive-corpus", task_run_name="derive@{name}")


@flow(name="derive")
def derive_flow(corpus: str) -> dict:
    metrics = derive_task(corpus)
    storage.write_metrics(resolve_path(f"metrics/corpora/{corpus}.json"), metrics)
    return metrics


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a key of derive in params.yaml")
    args = parser.parse_args(argv)
    run_cli(derive_flow, args.corpus)


if __name__ == "__main__":
    main()
