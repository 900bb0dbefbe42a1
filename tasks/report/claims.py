"""The report's first screen: one row per headline claim of the four papers, ours from the
results records (results/<preset>/<stage>/<item>.json, tasks/results/records.py).

Why records and not the embedded run's metrics: the embedded default trains on synthetic data
in minutes; its numbers say the pipeline runs, not whether a paper reproduces. A claim's
figures come only from real-data records, with their seeds, spread and data, and a claim with
no record says so.

A claim (paper_results.yaml `claims`) compares two rows of a paper table: the paper's
difference b − a (its figures are the table's, not transcribed twice) beside ours, the mean ±
sd of the per-seed paired differences over the seeds both records have. The status:
- `no record`: a side has no record (or not every column of an average), `not run: <why>`
  where the claim states why (its `not_run`); `no paired seeds`:
  both have one, but no seed in common (a seedless baseline, a figure stated as mean ± sd);
- `single seed`: fewer than two paired seeds, which carry no direction claim;
- `reproduced (direction)`: our mean difference has the paper's sign and exceeds its sd;
- `not reproduced`: the opposite sign, beyond its sd; `inconclusive`: within one sd.
Where no seed pairs but both sides state a mean (and one of them an sd over seeds), the
difference of the means with the sd of that difference decides the same way ("unpaired means").
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks.core.errors import CorefreproError
from tasks.report.common import DASH


@dataclass(frozen=True)
class Claim:
    """One entry of paper_results.yaml `claims`."""

    id: str
    claim: str  # what the paper says, in a line
    table: str  # a `tables` id (or `corelm`): the paper's figures
    column: str  # the table's column (a task, a metric), or `avg` over its columns
    a: str  # the model key of the compared-against row
    b: str  # the model key of the claimed row
    records: str  # record id pattern, {model} and {column} filled in
    metric: str  # the record's metric
    # b's metric where it is another reading of a's figure (EntityNLM's word-only perplexity
    # beside the RNNLM's, issue #56.1); empty: `metric` on both sides
    b_metric: str = ""
    items: dict[str, str] = field(default_factory=dict)  # model key -> record item, if other
    differs: str = ""  # how our records' protocol or data differ from the paper's, in a line
    not_run: str = ""  # why no record exists yet (data unavailable, its cost), shown as the status


def parse_claims(spec: Mapping[str, Any], where: str) -> list[Claim]:
    claims = []
    for i, entry in enumerate(spec.get("claims") or []):
        try:
            claims.append(Claim(**entry))
        except TypeError as exc:
            raise CorefreproError(f"{where}: claims[{i}]: {exc}") from None
    return claims


def paper_value(table: Mapping[str, Any], model: str, column: str) -> float | None:
    """The paper's printed figure of `model`'s row in `column` (or its `avg`)."""
    rows = [r for r in table.get("rows", []) if r.get("model") == model]
    if not rows:
        return None
    row = rows[0]
    if column == "avg":
        return row.get("avg")
    values = row.get("values")
    if isinstance(values, Mapping):
        return values.get(column)
    columns = table.get("columns") or []
    return values[columns.index(column)] if values and column in columns else None


def metric_of(claim: Claim, model: str) -> str:
    """The record metric read for `model`'s side of the claim."""
    return claim.b_metric if model == claim.b and claim.b_metric else claim.metric


def our_seeds(claim: Claim, model: str, columns: Sequence[str],
              records: Mapping[str, Mapping[str, Any]]) -> dict[str, float] | None:  # fmt: skip
    """seed -> our figure of `model` (an average over `columns` for `avg`: the seeds every
    column's record has), or None while a record is missing."""
    per_column = []
    for column in columns:
        record = records.get(claim.records.format(model=claim.items.get(model, model),
                                                  column=column))  # fmt: skip
        metric = (record or {}).get("metrics", {}).get(metric_of(claim, model))
        if metric is None:
            return None
        per_column.append({s: v for s, v in metric["per_seed"].items() if v is not None})
    seeds = set.intersection(*(set(c) for c in per_column))
    return {s: statistics.fmean(c[s] for c in per_column) for s in sorted(seeds, key=int)}


def _fmt(value: float | None) -> str:
    return DASH if value is None else f"{value:+.2f}"


def status(paper_diff: float | None, diffs: Sequence[float]) -> tuple[str, str]:
    """(our difference as mean ± sd, n; the claim's status)."""
    if len(diffs) < 2:
        shown = f"{_fmt(diffs[0])} (1 seed)" if diffs else DASH
        return shown, "single seed" if diffs else "no record"
    mean, sd = statistics.fmean(diffs), statistics.stdev(diffs)
    shown = f"{_fmt(mean)} ± {sd:.2f} ({len(diffs)} seeds)"
    if paper_diff is None or abs(mean) <= sd:
        return shown, "inconclusive"
    same = (mean > 0) == (paper_diff > 0)
    return shown, "reproduced (direction)" if same else "not reproduced"


@dataclass(frozen=True)
class ClaimFigures:
    """A claim's figures: the paper's a, b and b − a; ours per seed; our difference and
    status (status()); the record of b's first column and every record read."""

    paper_a: float | None
    paper_b: float | None
    paper_diff: float | None
    diffs: list[float]  # per paired seed, b − a
    unpaired: tuple[float, float] | None  # (mean difference, its sd) when no seed pairs
    shown: str
    status: str
    first: Mapping[str, Any] | None
    record_ids: list[str]


def _unpaired(
    a: Mapping[str, Any], b: Mapping[str, Any], metric: str, b_metric: str = ""
) -> tuple[float, float] | None:
    """b's mean − a's mean with the sd of that difference, from stated means (a seedless
    baseline, a figure stated as mean ± sd: a missing sd counts as 0, i.e. deterministic)."""
    ma, mb = a["metrics"][metric], b["metrics"][b_metric or metric]
    if ma.get("mean") is None or mb.get("mean") is None:
        return None
    if max(ma.get("n") or 0, mb.get("n") or 0) < 2:
        return None
    sd = ((ma.get("sd") or 0.0) ** 2 + (mb.get("sd") or 0.0) ** 2) ** 0.5
    return mb["mean"] - ma["mean"], sd


def claim_figures(claim: Claim, table: Mapping[str, Any],
                  records: Mapping[str, Mapping[str, Any]]) -> ClaimFigures:  # fmt: skip
    pa, pb = paper_value(table, claim.a, claim.column), paper_value(table, claim.b, claim.column)
    paper_diff = None if pa is None or pb is None else pb - pa
    columns = table.get("columns", []) if claim.column == "avg" else [claim.column]
    ids = {m: [claim.records.format(model=claim.items.get(m, m), column=c) for c in columns]
           for m in (claim.a, claim.b)}  # fmt: skip
    a, b = (our_seeds(claim, m, columns, records) for m in (claim.a, claim.b))
    first = records.get(ids[claim.b][0]) if columns else None
    found = [i for m in (claim.a, claim.b) for i in ids[m] if i in records]
    if a is None or b is None:
        state = f"not run: {claim.not_run}" if claim.not_run and not found else "no record"
        return ClaimFigures(pa, pb, paper_diff, [], None, DASH, state, first, found)
    paired = [b[s] - a[s] for s in a if s in b]
    shown, state = status(paper_diff, paired)
    unpaired = None
    if not paired:  # both recorded, no seed in common
        state = "no paired seeds"
        if len(columns) == 1:
            unpaired = _unpaired(
                records[ids[claim.a][0]], records[ids[claim.b][0]], claim.metric, claim.b_metric
            )
        if unpaired is not None:
            mean, sd = unpaired
            shown = f"{_fmt(mean)} ± {sd:.2f} (unpaired means)"
            if paper_diff is not None and abs(mean) > sd:
                same = (mean > 0) == (paper_diff > 0)
                state = "reproduced (direction)" if same else "not reproduced"
            elif paper_diff is not None:
                state = "inconclusive"
    return ClaimFigures(pa, pb, paper_diff, paired, unpaired, shown, state, first, found)


def claim_row(claim: Claim, tables: Mapping[str, Mapping[str, Any]],
              records: Mapping[str, Mapping[str, Any]],
              papers: Mapping[str, Mapping[str, Any]]) -> list[str]:  # fmt: skip
    table = tables.get(claim.table)
    if table is None:
        raise CorefreproError(f"claims {claim.id}: no table {claim.table!r} in paper_results.yaml")
    got = claim_figures(claim, table, records)
    first, where = got.first, DASH
    if first is not None and got.status != "no record":
        metric = first["metrics"][metric_of(claim, claim.b)]
        corpora = first["data"].get("corpora") or ", ".join(sorted(first["data"])) or DASH
        where = (f"{corpora}; {metric['split']} ({metric['split_size'] or DASH}), "
                 f"{first['scale'] or DASH}")  # fmt: skip
    paper = DASH if got.paper_diff is None else (
        f"{got.paper_a:g} → {got.paper_b:g} ({_fmt(got.paper_diff)})")  # fmt: skip
    source = " (transcribed, no run)" if first and first.get("source") != "run" else ""
    paper_info = papers.get(table.get("paper"), {})
    paper_name = paper_info.get("short", table.get("paper"))
    links = _links(got.record_ids)
    notes = f"[protocol](../{paper_info['docs']})" if paper_info.get("docs") else DASH
    shown_metric = f"{claim.b_metric} vs {claim.metric}" if claim.b_metric else claim.metric
    return [claim.claim, f"{paper_name}, {table.get('table')}, {claim.column}", shown_metric,
            paper, got.shown + source, where, claim.differs or DASH, got.status,
            f"{links}; {notes}"]  # fmt: skip


def _links(record_ids: Sequence[str]) -> str:
    """The records read: each linked, or their folder when there are many (an average)."""
    if not record_ids:
        return DASH
    if len(record_ids) > 2:
        folders = sorted({i.rsplit("/", 1)[0] for i in record_ids})
        return ", ".join(f"[{f}/ ({len(record_ids)} records)](../results/{f}/)" for f in folders)
    return ", ".join(f"[{i.rsplit('/', 1)[1]}](../results/{i}.json)" for i in record_ids)


def claims_section(spec: Mapping[str, Any], records: Mapping[str, Mapping[str, Any]],
                   where: str) -> list[str]:  # fmt: skip
    """The report's opening section (markdown lines)."""
    claims = parse_claims(spec, where)
    if not claims:
        return []
    tables = {t["id"]: t for t in spec.get("tables", [])}
    header = ["claim", "paper table", "metric", "paper: a → b (b − a)",
              "ours: b − a, mean ± sd", "our data; split (size), scale",
              "how ours differs from the paper's protocol", "status", "records; notes"]  # fmt: skip
    lines = [
        "## The papers' claims",
        "",
        "Ours from the results records in `results/` (real data, `python -m tasks.results.record`),",
        "never from this run's embedded data; the paper's figures from the tables below. Our",
        "difference is the mean ± sd of per-seed paired differences; one seed carries no",
        "direction claim. A record's protocol and scale differ from the paper's where its",
        "`scale` says (see each record's overrides).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    papers = spec.get("papers", {})
    lines += ["| " + " | ".join(claim_row(c, tables, records, papers)) + " |" for c in claims]
    return [*lines, ""]
