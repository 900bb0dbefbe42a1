"""Build, merge and check results records (the schema: tasks/core/schema.py RECORD_FIELDS).

Why records: a figure in prose has no link to the run, commit, settings or data that made
it; a record has all of them and is written from the finished run, so the report prints only
what was measured. The spread is the sample standard deviation over seeds (ddof 1; None for
one seed, which carries no direction claim).
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tasks.core.errors import CorefreproError
from tasks.core.schema import RECORD_VERSION, record_problems


def spread(per_seed: Mapping[str, float | None]) -> tuple[float | None, float | None, int]:
    """(mean, sample sd, n) over the seeds that have a value."""
    values = [float(v) for v in per_seed.values() if v is not None and math.isfinite(v)]
    if not values:
        return None, None, 0
    sd = statistics.stdev(values) if len(values) > 1 else None
    return round(statistics.fmean(values), 6), None if sd is None else round(sd, 6), len(values)


def metric_entry(per_seed: Mapping[str, float | None], *, split: str, split_size: int | None,
                 unit: str, better: str) -> dict[str, Any]:  # fmt: skip
    mean, sd, n = spread(per_seed)
    return {"per_seed": {str(k): v for k, v in sorted(per_seed.items(), key=lambda kv: int(kv[0]))},
            "mean": mean, "sd": sd, "n": n, "split": split, "split_size": split_size,
            "unit": unit, "better": better}  # fmt: skip


def stated_metric_entry(mean: float, sd: float | None, n: int, *, split: str,
                        split_size: int | None, unit: str, better: str) -> dict[str, Any]:  # fmt: skip
    """A metric whose per-seed figures are not known, only the stated mean, sd and n (a
    transcribed README figure): per_seed stays empty, nothing is recomputed."""
    return {"per_seed": {}, "mean": mean, "sd": sd, "n": n, "split": split,
            "split_size": split_size, "unit": unit, "better": better}  # fmt: skip


# a record's CBT figure (`<column>_accuracy`) -> the CBT question type it scores (Hill et al.)
CBT = {"cbt_cn": "CN", "cbt_ne": "NE", "cbt_v": "V", "cbt_p": "P"}


def ppl_metric(split: str, reading: str | None = None) -> str:
    """A perplexity's metric name in a record: `test_ppl` for the model's own (for EntityNLM
    the marginal, Eq. 11), `test_ppl_words_is` for EntityNLM's reading `words_is` of §5.1."""
    return f"{split}_ppl" if reading in (None, "marginal") else f"{split}_ppl_{reading}"


def record_id(preset: str | None, stage: str, item: str) -> str:
    return f"{preset or 'adhoc'}/{stage}/{item}"


# Overrides that choose what runs or where the bytes come from, never what an item computes:
# a stage's run list (`<stage>.run.models`, `.tasks`, ...; train_corelm's `models`), its seed
# list (train_corelm's one `train.seed`, the record's seed), how many seeds train at once
# (`workers`: same bytes, tests/training/test_workers.py), and the mirror (the data digests in
# the record decide whether the data agree).
SELECTION = re.compile(
    r"^[a-z_]+\.(run\.[a-z_]+|seeds|workers)=|^train_corelm\.(models|train\.seed)="
    r"|^download\.mirror="
)


def result_settings(overrides: list[str] | None) -> list[str]:
    """The overrides that can change an item's figures (`overrides` less SELECTION)."""
    return [o for o in overrides or [] if not SELECTION.match(o)]


def merge(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """`new` over `old` seed by seed: a seed recorded again replaces its earlier figures, the
    other seeds stay (a lane records its seed when it finishes, with its own run list and
    seeds). Records of other settings do not merge: the overrides that can change an item's
    figures must agree."""
    if old is None:
        return dict(new)
    a, b = result_settings(old.get("overrides")), result_settings(new.get("overrides"))
    if a != b or old.get("id") != new.get("id"):
        differ = sorted(set(a) ^ set(b))
        raise CorefreproError(
            f"record {new.get('id')}: the recorded seeds ran under other settings (differing: "
            f"{differ or 'the record id'}); record them under another preset name or remove "
            "the old record"
        )
    merged = dict(new)
    merged["metrics"] = {}
    for name in sorted({*old["metrics"], *new["metrics"]}):
        a, b = old["metrics"].get(name), new["metrics"].get(name)
        base = b or a
        seeds = {**(a or {}).get("per_seed", {}), **(b or {}).get("per_seed", {})}
        if not seeds:  # a stated mean/sd/n (stated_metric_entry): kept as it is
            merged["metrics"][name] = dict(base)
            continue
        merged["metrics"][name] = metric_entry(seeds, split=base["split"],
                                               split_size=base["split_size"], unit=base["unit"],
                                               better=base["better"])  # fmt: skip
    for key in ("epochs", "wall_time_s", "mlflow_run_ids"):
        merged[key] = dict(sorted({**old[key], **new[key]}.items(), key=lambda kv: int(kv[0])))
    merged.pop("curve", None)
    merged.update(merged_curves(old, new))
    if old.get("data") != new.get("data"):
        raise CorefreproError(f"record {new.get('id')}: the recorded seeds read other data "
                              f"({old.get('data')} recorded, {new.get('data')} now)")  # fmt: skip
    for key, sep in SEED_FACTS.items():  # the seeds' commits, numerics, hosts: all kept
        merged[key] = sep.join(sorted({*old[key].split(sep), *new[key].split(sep)}))
    return merged


SEED_FACTS = {"commit": ", ", "numerics": "; ", "device": ", ", "cpu": "; "}


def merged_curves(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """{"curve": seed -> its learning curve} of `new` over `old`, or {} where no seed has one: a
    seed recorded again brings its own curve or none (its old one was another run's), the
    other seeds' curves stay."""
    again = set(new["wall_time_s"])
    curves = {s: c for s, c in (old.get("curve") or {}).items() if s not in again}
    curves.update(new.get("curve") or {})
    return {"curve": dict(sorted(curves.items(), key=lambda kv: int(kv[0])))} if curves else {}


def new_record(**fields: Any) -> dict[str, Any]:
    """A record of `fields` (every RECORD_FIELDS one but version, any RECORD_OPTIONAL_FIELDS
    one), checked."""
    record = {"version": RECORD_VERSION, **fields}
    problems = record_problems(record)
    if problems:
        raise CorefreproError(f"record {fields.get('id')}: " + "; ".join(problems))
    return record


def load_records(folder: str | Path) -> dict[str, dict[str, Any]]:
    """Every record under `folder` (results/<preset>/<stage>/<item>.json) by id, checked: a
    file that is no valid record is an error naming it, never a silent gap in the report."""
    import json

    out: dict[str, dict[str, Any]] = {}
    for path in sorted(Path(folder).rglob("*.json")) if Path(folder).is_dir() else []:
        try:
            record = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise CorefreproError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
        problems = record_problems(record)
        if problems:
            raise CorefreproError(f"{path}: not a valid record ({'; '.join(problems)})")
        out[record["id"]] = record
    return out
