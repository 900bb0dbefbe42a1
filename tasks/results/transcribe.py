"""Write results records of README figures measured before records existed:
`python -m tasks.results.transcribe`.

Why: figures measured on real data earlier live only as prose and tables in README.md, with
no run behind them any more; the report should read every figure from a record. Each entry
of results/transcribed.yaml copies one README figure with what the README states about it
(its line number and a quote included) and nothing else: a fact the README does not give is
"unknown" (or {}). The records carry source "transcribed, no run", so they are never taken
for a run's own record; a stated mean/sd/n without per-seed figures stays as stated. A run's
record that replaced one (`python -m tasks.results.record ... --replace-transcribed`) is kept.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.results.record import RESULTS_ROOT, existing, is_transcribed, write
from tasks.results.records import metric_entry, new_record, record_id, stated_metric_entry

SOURCE = "transcribed, no run"
TRANSCRIBED = "results/transcribed.yaml"
REQUIRED = {"readme_line": int, "quote": str, "stage": str, "item": str, "paper": str,
            "table": str, "row": str, "metrics": dict, "data": dict, "recorded_at": str}  # fmt: skip
OPTIONAL = {"preset": (str, "readme"), "scale": ((str, type(None)), None),
            "overrides": (list, []), "epochs": (dict, {}), "commit": (str, "unknown"),
            "numerics": (str, "unknown"), "device": (str, "unknown"), "cpu": (str, "unknown")}  # fmt: skip
METRIC_KEYS = {"unit", "better", "split", "split_size", "per_seed", "mean", "sd", "n"}


def _metric(name: str, spec: Any) -> dict[str, Any]:
    if not isinstance(spec, dict):
        raise ValueError(f"metric {name}: not a mapping")
    unknown = set(spec) - METRIC_KEYS
    missing = {"unit", "better", "split"} - set(spec)
    if unknown or missing:
        raise ValueError(
            f"metric {name}: unknown keys {sorted(unknown)}, missing {sorted(missing)}"
        )
    where = {"split": spec["split"], "split_size": spec.get("split_size"), "unit": spec["unit"],
             "better": spec["better"]}  # fmt: skip
    if "per_seed" in spec:
        if {"mean", "sd", "n"} & set(spec) or not isinstance(spec["per_seed"], dict):
            raise ValueError(f"metric {name}: per_seed (a mapping) or mean/sd/n, not both")
        return metric_entry({str(k): v for k, v in spec["per_seed"].items()}, **where)
    if "mean" not in spec or "n" not in spec:
        raise ValueError(f"metric {name}: needs per_seed, or the stated mean and n (sd optional)")
    return stated_metric_entry(spec["mean"], spec.get("sd"), spec["n"], **where)


def build(entry: Any) -> dict[str, Any]:
    """The record of one yaml entry (ValueError / CorefreproError: what is wrong with it)."""
    if not isinstance(entry, dict):
        raise ValueError("an entry is a mapping")
    unknown = set(entry) - set(REQUIRED) - set(OPTIONAL)
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}")
    for key, kind in REQUIRED.items():
        if not isinstance(entry.get(key), kind):
            raise ValueError(f"{key}: missing or not {kind.__name__}")
    fields = {k: entry.get(k, default) for k, (kind, default) in OPTIONAL.items()}
    for key, (kind, _) in OPTIONAL.items():
        if not isinstance(fields[key], kind):
            raise ValueError(f"{key}: {type(fields[key]).__name__}")
    if not entry["metrics"]:
        raise ValueError("metrics: empty")
    data = {
        **entry["data"],
        "transcribed_from": f"README.md:{entry['readme_line']}: {entry['quote']}",
    }
    return new_record(
        id=record_id(fields["preset"], entry["stage"], entry["item"]), paper=entry["paper"],
        table=entry["table"], row=entry["row"], source=SOURCE, stage=entry["stage"],
        item=entry["item"], preset=fields["preset"], scale=fields["scale"],
        overrides=[str(o) for o in fields["overrides"]],
        metrics={name: _metric(name, spec) for name, spec in sorted(entry["metrics"].items())},
        data=data, commit=fields["commit"], numerics=fields["numerics"], device=fields["device"],
        cpu=fields["cpu"], epochs={str(k): v for k, v in fields["epochs"].items()},
        wall_time_s={}, mlflow_run_ids={}, recorded_at=entry["recorded_at"],
    )  # fmt: skip


def build_all(path: str | Path) -> list[dict[str, Any]]:
    """Every entry's record, checked; a malformed entry is an error naming file and index."""
    entries = yaml.safe_load(Path(path).read_text())
    if not isinstance(entries, list):
        raise CorefreproError(f"{path}: expected a list of entries")
    records, seen = [], set()
    for index, entry in enumerate(entries):
        try:
            record = build(entry)
        except (ValueError, TypeError, CorefreproError) as exc:
            raise CorefreproError(f"{path}: entry {index}: {exc}") from None
        if record["id"] in seen:
            raise CorefreproError(f"{path}: entry {index}: id {record['id']} twice")
        seen.add(record["id"])
        records.append(record)
    return records


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=TRANSCRIBED, help="the transcription yaml")
    parser.add_argument("--out", default=None, help="results folder (default: results/)")
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else resolve_path(RESULTS_ROOT)
    try:
        for record in build_all(resolve_path(args.source)):
            kept = existing(out / f"{record['id']}.json")
            if kept is not None and not is_transcribed(kept):  # record --replace-transcribed
                print(f"{out / record['id']}.json: kept, a run's record (source {kept['source']})")
                continue
            path = write(record, out)
            shown = ", ".join(f"{k} {v['mean']}" for k, v in record["metrics"].items())
            print(f"{path}: {shown}")
    except CorefreproError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
