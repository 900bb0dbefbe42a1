"""Write a results record from a finished training item: `python -m tasks.results.record`.

    python -m tasks.results.record train_mage ga-mage16-qa2 --preset mage-babi --scale cpu \
        --table "Table 1" --row "GA + MAGE(16), qa2" --data data/graphs/babi-entity-id/graphs.parquet

It reads every artifacts/<stage>/<item>/seed<k>/metrics.json of this workspace (the seeds'
wall times from logs/timings/), the seeds' MLflow runs (their ids, commit and numerics tags),
the settings that differ from HEAD's params.yaml (the overrides), the sha256 of each --data
file, and writes results/<preset>/<stage>/<item>.json (--out: another results folder, e.g.
main's from a lane workspace), merged seed by seed with what is there.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tasks.core import storage
from tasks.core.config import REPO_ROOT, resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.schema import record_problems
from tasks.core.tracking import git_sha
from tasks.results.records import merge, metric_entry, new_record, record_id

RESULTS_ROOT = "results"


@dataclass(frozen=True)
class MetricSpec:
    """One recorded figure: where it sits in a seed's metrics.json, its scale and unit."""

    name: str
    key: str  # dotted path in metrics.json
    scale: float
    unit: str
    better: str
    split: str
    size_key: str | None


def _pct(name, key, better, split, size_key):
    return MetricSpec(name, key, 100.0, "%", better, split, size_key)


STAGE_METRICS = {
    "train_mage": [_pct("dev_error", "dev_error", "lower", "dev", "dev_n"),
                   _pct("test_error", "test_error", "lower", "test", "test_n")],
    "train_coref": [_pct("dev_conll_f1", "dev.conll_f1", "higher", "dev", "dev.documents"),
                    _pct("test_conll_f1", "test.conll_f1", "higher", "test", "test.documents")],
}  # fmt: skip
# a graph variant's coreference scored against its annotation (metrics/graphs/<name>.json),
# one "seed": the corruption's (graphs.ablations.<name>.corrupt_seed)
STAGE_METRICS["graphs_ablation"] = [
    MetricSpec(f"{m}_f1" if m != "conll" else "conll_f1",
               f"coreference_against_annotation.{m}_f1", 1.0, "%", "higher", "all", None)
    for m in ("conll", "muc", "bcub", "ceafe")
]  # fmt: skip
PAPERS = {"train_mage": "Dhingra et al. 2018 (MAGE-GRU)",
          "train_coref": "Luo & Glass 2018 (cross-sentence coreference)",
          "graphs_ablation": "beyond the papers (corrupted coreference)"}  # fmt: skip


def _at(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def seed_metrics(root: Path, stage: str, item: str) -> dict[str, dict[str, Any]]:
    """seed -> its metrics.json (+ its timings), of every seed folder of the item; a graph
    variant: its one metrics file under its corruption seed."""
    if stage == "graphs_ablation":
        return _graph_metrics(root, item)
    folder = root / "artifacts" / stage / item
    seeds = sorted(folder.glob("seed*/metrics.json")) if folder.is_dir() else []
    if not seeds:
        raise CorefreproError(f"{folder}: no seed<k>/metrics.json: train the item first")
    out = {}
    for path in seeds:
        metrics = json.loads(path.read_text())
        timings = storage.timings_path(path)
        if timings.is_file():
            metrics.update(json.loads(timings.read_text()))
        out[path.parent.name.removeprefix("seed")] = metrics
    return out


def _graph_metrics(root: Path, item: str) -> dict[str, dict[str, Any]]:
    from tasks.graphs.stage import ablation_entry, graph_settings

    path = root / "metrics" / "graphs" / f"{item}.json"
    if not path.is_file():
        raise CorefreproError(f"{path}: missing: run `dvc repro graphs_ablation@{item}` first")
    entry = ablation_entry(graph_settings(), item)
    return {str(entry.corrupt_seed): json.loads(path.read_text())}


def overrides(root: Path) -> list[str]:
    """params.yaml's settings that differ from HEAD's, as `key=value` (dvc exp run -S form)."""
    head = subprocess.run(["git", "show", "HEAD:params.yaml"], cwd=root, capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    return sorted(_diff(yaml.safe_load(head), yaml.safe_load((root / "params.yaml").read_text())))


def _diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted({*a, *b}, key=str)
                for d in _diff(a.get(k), b.get(k), f"{prefix}{k}.")]  # fmt: skip
    if a == b:
        return []
    return [f"{prefix.rstrip('.')}={json.dumps(b, sort_keys=True)}"]


def mlflow_runs(stage: str, item: str, seeds: list[str]) -> dict[str, dict[str, str]]:
    """seed -> {run_id, git_sha, numerics, host} of its newest FINISHED run in this workspace's
    MLflow store ({} for a seed without one)."""
    from mlflow.tracking import MlflowClient

    from tasks.core.tracking import tracking_uri

    client = MlflowClient(tracking_uri())
    experiment = client.get_experiment_by_name(stage)
    if experiment is None:
        return {}
    out = {}
    for seed in seeds:
        runs = client.search_runs(
            [experiment.experiment_id],
            filter_string=f"tags.mlflow.runName = '{stage}@{item}/seed{seed}' "
            "and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"], max_results=1,
        )  # fmt: skip
        if runs:
            tags = runs[0].data.tags
            out[seed] = {"run_id": runs[0].info.run_id, "git_sha": tags.get("git_sha", "unknown"),
                         "numerics": tags.get("numerics", "unknown"),
                         "host": tags.get("corefrepro.host", "unknown")}  # fmt: skip
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def build(stage: str, item: str, *, preset: str | None, scale: str | None, table: str, row: str,
          data: list[str], root: Path = REPO_ROOT) -> dict[str, Any]:  # fmt: skip
    if stage not in STAGE_METRICS:
        raise CorefreproError(f"record: no metric spec for stage {stage!r}; known: "
                              f"{sorted(STAGE_METRICS)} (tasks/results/record.py)")  # fmt: skip
    seeds = seed_metrics(root, stage, item)
    metrics = {}
    for spec in STAGE_METRICS[stage]:
        values = {s: (None if _at(m, spec.key) is None else round(_at(m, spec.key) * spec.scale, 4))
                  for s, m in seeds.items()}  # fmt: skip
        sizes = {_at(m, spec.size_key) for m in seeds.values()} if spec.size_key else {None}
        metrics[spec.name] = metric_entry(values, split=spec.split,
                                          split_size=sizes.pop() if len(sizes) == 1 else None,
                                          unit=spec.unit, better=spec.better)  # fmt: skip
    runs = mlflow_runs(stage, item, list(seeds))
    commits = sorted({r["git_sha"] for r in runs.values()}) or [git_sha(root)]
    numerics = sorted({r["numerics"] for r in runs.values()}) or ["unknown"]
    return new_record(
        id=record_id(preset, stage, item), paper=PAPERS.get(stage, stage), table=table, row=row,
        source="run", stage=stage, item=item, preset=preset, scale=scale,
        overrides=overrides(root), metrics=metrics,
        data={p: storage.sha256_of(root / p) for p in data},
        commit=", ".join(commits), numerics="; ".join(numerics),
        device=", ".join(sorted({str(m.get("device", "unknown")) for m in seeds.values()})),
        cpu=cpu_model(),
        epochs={s: {"best": m.get("best_epoch"), "run": m.get("epochs_run")}
                for s, m in seeds.items()},
        wall_time_s={s: m.get("wall_time_s") for s, m in seeds.items()},
        mlflow_run_ids={s: r["run_id"] for s, r in runs.items()},
        recorded_at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )  # fmt: skip


def write(record: dict[str, Any], out: Path) -> Path:
    """The record at out/<id>.json, merged with the one there (seed by seed)."""
    path = out / f"{record['id']}.json"
    old = None
    if path.is_file():
        old = json.loads(path.read_text())
        problems = record_problems(old)
        if problems:
            raise CorefreproError(f"{path}: not a valid record ({'; '.join(problems)})")
    merged = merge(old, record)
    path.parent.mkdir(parents=True, exist_ok=True)
    storage.write_text(path, json.dumps(merged, indent=2, sort_keys=True) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=sorted(STAGE_METRICS))
    parser.add_argument("item", help="the stage item, e.g. ga-mage16-qa2")
    parser.add_argument("--preset", default=None)
    parser.add_argument("--scale", default=None)
    parser.add_argument("--table", required=True, help="the paper's table, e.g. 'Table 1'")
    parser.add_argument("--row", required=True, help="the paper's row, e.g. 'GA, qa2'")
    parser.add_argument("--data", action="append", default=[],
                        help="a data file the item read (its sha256 is recorded); repeatable")  # fmt: skip
    parser.add_argument("--out", default=None, help="results folder (default: results/)")
    args = parser.parse_args(argv)
    try:
        record = build(args.stage, args.item, preset=args.preset, scale=args.scale,
                       table=args.table, row=args.row, data=args.data)  # fmt: skip
        path = write(record, Path(args.out) if args.out else resolve_path(RESULTS_ROOT))
    except CorefreproError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    shown = ", ".join(
        f"{k} {v['mean']} ± {v['sd']} (n {v['n']})" for k, v in record["metrics"].items()
    )
    print(f"{path}: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
