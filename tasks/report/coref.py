"""The Luo & Glass family's part of reports/results.md (cross-sentence coreference, issue #5).

Why its own module: its table compares encoders (baseline, LSL, ASL) by CoNLL F1 mean ± std
over seeds and judges the ASL − baseline delta against the paper's, which no reader table
does; tasks/report/build.py dispatches the kind "coref" here (SECTION).

Reads metrics/train_coref/<encoder>.json (flows/train_coref.py summarize); the encoder is
the file's "encoder" key, not its name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tasks.core.errors import DataError
from tasks.report.common import (
    DASH,
    Measured,
    Run,
    Section,
    _display,
    _key,
    _md_table,
    _read_json,
    _table_heading,
    cell,
    fmt,
    metric,
)

# Luo & Glass Table 1 columns -> keys of tasks/evaluation/coref.py's scores (ours are fractions)
COREF_KEYS = {"avg_f1": "conll_f1"}
COREF_LABELS = {
    "muc_p": "MUC P",
    "muc_r": "MUC R",
    "muc_f1": "MUC F1",
    "bcub_p": "B³ P",
    "bcub_r": "B³ R",
    "bcub_f1": "B³ F1",
    "ceafe_p": "CEAF-e P",
    "ceafe_r": "CEAF-e R",
    "ceafe_f1": "CEAF-e F1",
    "avg_f1": "Avg F1",
}


# beside the encoders' directory: flows/compare_coref.py's paired test
COMPARISON = "compare_coref.json"


class CorefRuns(dict):
    """The runs by encoder, and compare_coref's paired test of two of them (None before that
    stage has run)."""

    comparison: Mapping[str, Any] | None = None


def load_coref_runs(root: str | Path) -> CorefRuns:
    """Every metrics/train_coref/<encoder>.json by its "encoder"; empty when the directory does
    not exist. Two files of one encoder are an error. Plus metrics/compare_coref.json."""
    root = Path(root)
    out = CorefRuns()
    if (root.parent / COMPARISON).is_file():
        out.comparison = _read_json(root.parent / COMPARISON)
    for path in sorted(root.glob("*.json")) if root.is_dir() else []:
        data = _read_json(path)
        encoder = _key(data, "encoder", path)
        if encoder in out:
            raise DataError(path, f"encoder {encoder!r} again (also in {out[encoder].path})")
        out[encoder] = Run(encoder, "", str(data.get("dataset") or ""), _display(path), data)
    return out


def _mean_std(stat: Any, scale: float = 100.0) -> str:
    if not isinstance(stat, Mapping) or stat.get("mean") is None:
        return DASH
    std = stat.get("std")
    return fmt(stat["mean"], 1, scale) + ("" if std is None else f" ± {fmt(std, 1, scale)}")


def _intro(table: Mapping, coref: Mapping[str, Run]) -> list[str]:
    """Our data and embeddings against the paper's: compare deltas, not absolute scores."""
    datasets = sorted({r.corpus or DASH for r in coref.values()})
    embeddings = sorted({str(r.metrics.get("embeddings") or DASH) for r in coref.values()})
    return [
        f"Our numbers are on {', '.join(f'`{d}`' for d in datasets) or DASH} "
        f"(params.yaml train_coref.corpora), the paper's on {table.get('dataset', DASH)}: "
        "different data, so compare the deltas between encoders, not the absolute scores. "
        f"Our word embeddings: {', '.join(embeddings) or DASH}. Cells: ours (paper), F1 in %; "
        f"{DASH} = not measured. Our per-encoder model selection: best dev CoNLL F1 epoch per "
        "seed; mean ± (population) std over the seeds run.",
        "",
    ]


def _means(table: Mapping, coref: Mapping[str, Run]) -> list[str]:
    """Per mapped encoder: CoNLL F1 mean ± std over seeds (test beside the paper's, dev)."""
    header = [
        "Paper row",
        "ours",
        "seeds",
        "test Avg F1 (CoNLL F1)",
        "dev Avg F1 (CoNLL F1)",
        "test MUC F1",
        "test B³ F1",
        "test CEAF-e F1",
    ]
    body = []
    for prow in (r for r in table["rows"] if r.get("model")):
        run = coref.get(prow["model"])
        m = run.metrics if run else {}
        pv = prow["values"]
        row = [prow["paper_row"], f"`{prow['model']}`", str(m.get("seeds", DASH))]
        row.append(cell(_mean_std((m.get("test") or {}).get("conll_f1")), fmt(pv.get("avg_f1"))))
        row.append(_mean_std((m.get("dev") or {}).get("conll_f1")))
        for k in ("muc_f1", "bcub_f1", "ceafe_f1"):
            ours = metric(m, f"test.{k}.mean")
            row.append(cell(fmt(ours, 1, 100), fmt(pv.get(k)) if k in pv else None))
        body.append(row)
    return _md_table(header, body)


def _selected(table: Mapping, coref: Mapping[str, Run]) -> list[str]:
    """Every paper row: the selected seed's test P / R / F1 beside the paper's."""
    columns = table["columns"]
    body = []
    for prow in table["rows"]:
        model = prow.get("model")
        run = coref.get(model) if model else None
        m = run.metrics if run else {}
        row = [prow["paper_row"], f"`{model}`" if model else "not reproduced"]
        row.append(str(m.get("selected_seed", DASH)))
        for k in columns:
            key = f"selected.test.{COREF_KEYS.get(k, k)}"
            p = prow["values"].get(k)
            row.append(cell(fmt(metric(m, key), 1, 100), None if p is None else fmt(p)))
        body.append(row)
    return _md_table(["Paper row", "ours", "seed"] + [COREF_LABELS[k] for k in columns], body)


def _delta_row(d: Mapping, coref: Mapping[str, Run], paper: Mapping[str, Any]) -> list[str]:
    """`model` − `baseline`: ours on test and dev, the paper's, and the criterion's verdict."""
    a, b = d["model"], d["baseline"]
    row = [f"`{a}` − `{b}`"]
    got = {}
    for split in ("test", "dev"):
        va, vb = (
            metric(coref[x].metrics, f"{split}.conll_f1.mean") if x in coref else None
            for x in (a, b)
        )
        got[split] = None if va is None or vb is None else 100 * (va - vb)
        row.append(fmt(got[split], 2, sign=True))
    pa_, pb = (paper.get(x, {}).get("values", {}).get("avg_f1") for x in (a, b))
    row.append(DASH if pa_ is None or pb is None else fmt(round(pa_ - pb, 1), 1, sign=True))
    if d.get("min_delta") is None:
        row.append(DASH)
    else:
        verdict = (
            DASH
            if got["test"] is None
            else ("met" if got["test"] >= d["min_delta"] - 1e-9 else "not met")
        )
        row.append(f"test ≥ {fmt(d['min_delta'], 1, sign=True)}: {verdict}")
    return row


def _seeds(n: int) -> str:
    return "1 seed" if n == 1 else f"{n} seeds pooled"


def _comparison(c: Mapping[str, Any] | None) -> list[str]:
    """compare_coref's b − a: pooled over the seeds and seed by seed, with p-values."""
    if not c:
        return []
    a, b, pooled = c["a"], c["b"], c["pooled"]
    seeds = "; ".join(f"seed {k} {fmt(100 * r['difference'], 2, sign=True)} (p = {r['p_value']:.3f})"
                      for k, r in c["per_seed"].items())  # fmt: skip
    return [
        f"Paired test (`compare_coref`, approximate randomization over the {c['documents']} "
        f"{c['split']} documents, {c['trials']:,} shuffles): `{b}` − `{a}` = "
        f"{fmt(100 * pooled['difference'], 2, sign=True)} points of CoNLL F1, "
        f"{_seeds(len(c['seeds']))} (each document's counts summed over the seeds), "
        f"p = {pooled['p_value']:.3f}; {seeds}.",
        "",
    ]


def render_coref(table: Mapping, coref: Mapping[str, Run], papers: Mapping) -> list[str]:
    """Our CoNLL F1 (mean ± std over seeds) beside the paper's Avg F1, the selected seed's
    P/R/F1 beside the paper's, and the ASL/LSL − baseline deltas (issue #5 criterion)."""
    lines = _table_heading(table, papers) + _intro(table, coref) + _means(table, coref)
    lines += [
        "",
        "Selected seed (best dev CoNLL F1), test set, P / R / F1 in %: ours (paper).",
        "",
    ]
    lines += _selected(table, coref)
    lines += [
        "",
        "Avg F1 deltas in points (ours: difference of the mean CoNLL F1 over seeds).",
        "",
    ]
    paper = {r["model"]: r for r in table["rows"] if r.get("model")}
    body = [_delta_row(d, coref, paper) for d in table.get("deltas") or []]
    lines += _md_table(["delta", "ours test", "ours dev", "paper (test)", "criterion"], body)
    lines.append("")
    lines += _comparison(getattr(coref, "comparison", None))
    files = [coref[k].path for k in sorted(coref)]
    lines.append(f"Metrics files: {', '.join(files) if files else 'none'}.")
    lines.append("")
    return lines


def render(
    table: Mapping, coref: Mapping[str, Run], papers: Mapping, annotation: str | None
) -> list[str]:
    """The coref table; the reader annotation run does not apply to it."""
    return render_coref(table, coref, papers)


def measured(tables: Sequence[Mapping], coref: Mapping[str, Run]) -> list[Measured]:
    """Per encoder: test CoNLL F1 (mean over seeds, %) beside the paper's Avg F1."""
    table = next((t for t in tables if t["kind"] == "coref"), None)
    paper = {r["model"]: r["values"] for r in (table or {}).get("rows", []) if r.get("model")}
    out = []
    for encoder in sorted(coref):
        m = coref[encoder].metrics
        ours = metric(m, "test.conll_f1.mean")
        epochs = [s.get("epochs_run") for s in (m.get("per_seed") or {}).values()]
        out.append(
            Measured(
                family="coref",
                table=f"{table['table']} ({table['id']})" if table else "no paper table",
                what=f"`{encoder}`",
                metric="test CoNLL F1 % (mean over seeds)",
                ours=None if ours is None else round(100 * ours, 1),
                paper=paper.get(encoder, {}).get("avg_f1"),
                split="test",
                data=str(m.get("dataset") or DASH),
                seeds=m.get("seeds"),
                budget=f"{max((e for e in epochs if e), default=DASH)} epochs",
                device=str(m.get("device") or DASH),
                comparable="ontonotes" in str(m.get("dataset") or ""),  # the paper's data
                short=f"{encoder}_f1",
            )
        )
    return out


SECTION = Section(
    source="coref",
    kinds=("coref",),
    load=load_coref_runs,
    render=render,
    measured=measured,
    matches=lambda table, coref: bool(coref),
)
