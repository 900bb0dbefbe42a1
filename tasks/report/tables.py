"""Stage `report`: reports/results.md, our measured numbers beside the papers' tables.

Why a generated file: the reproduction's claim is the comparison itself (issue #4: "a generated
table side by side with the paper's Tables 1, 2, 3 and 5" of Dhingra et al.; issue #5: "report
table beside the paper's Table 1" of Luo & Glass), so it must be rebuilt from the metrics that
`dvc repro` just wrote, never hand-edited.

Inputs, and nothing else:
- measured numbers: the DVC metrics files of the training stages, metrics/mage/<model>/<task>.json
  (models/mage/train.py summarize) and metrics/coref/<encoder>.json (models/coref/train.py
  summarize). A missing directory or file is a "—" cell, never a crash.
- paper numbers and the mapping of our model keys / task labels to paper rows and columns:
  tasks/report/paper_results.yaml (transcribed exactly; see its header).
- the annotation run the readers were trained on (params.yaml train_mage.data), because the
  reader metrics name the corpus but not the annotation; a metrics key "annotation" wins.

Cells read "ours (paper)". The output is deterministic (sorted, no timestamps), so rerunning
the stage on unchanged metrics rewrites the same bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tasks.core.config import REPO_ROOT, params, resolve_path
from tasks.core.errors import DataError
from tasks.core.storage import write_text

KINDS = ("babi", "accuracy", "coref", "runs")
SOURCES = ("mage", "coref")
DASH = "—"
SMALL_TEST = 100  # a test set this small is a sample: its error moves in 10-point steps
DEFAULTS: dict[str, Any] = {
    "paper_results": "tasks/report/paper_results.yaml",
    "metrics": {"mage": "metrics/mage", "coref": "metrics/coref"},
    "output": "reports/results.md",
}
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


# --------------------------------------------------------------------------- settings


def settings() -> dict[str, Any]:
    """params.yaml `report` over the defaults, plus the reader annotation run (for the text)."""
    cfg = {**DEFAULTS, **(params().get("report") or {})}
    cfg["metrics"] = {**DEFAULTS["metrics"], **(cfg.get("metrics") or {})}
    cfg["annotation"] = (params().get("train_mage") or {}).get("data")
    return cfg


# --------------------------------------------------------------------------- paper tables


def _number(value: Any, path: Path, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataError(path, f"{where}: {value!r} is not a number")
    return float(value)


def _require(cond: bool, path: Path, message: str) -> None:
    if not cond:
        raise DataError(path, message)


def load_spec(path: str | Path) -> dict[str, Any]:
    """tasks/report/paper_results.yaml, checked: every table names its paper and table id, every
    number is a number, and list rows have one value per column. Numbers become floats."""
    path = Path(path)
    if not path.exists():
        raise DataError(path, "paper results file not found (params.yaml report.paper_results)")
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise DataError(
            path, f"not valid YAML: {exc}", None if line is None else line + 1
        ) from None
    _require(isinstance(spec, dict), path, "top level must be a mapping (papers, tables)")
    papers = spec.get("papers") or {}
    _require(isinstance(papers, dict), path, "papers: expected a mapping of paper ids")
    for pid, paper in papers.items():
        _require(
            isinstance(paper, dict) and paper.get("file") and paper.get("cite"),
            path,
            f"papers.{pid}: needs 'file' (under the papers directory) and 'cite'",
        )
    tables = spec.get("tables") or []
    _require(isinstance(tables, list) and tables, path, "tables: expected a non-empty list")
    seen: set[str] = set()
    for i, table in enumerate(tables):
        _require(isinstance(table, dict), path, f"tables[{i}]: expected a mapping")
        tid = table.get("id")
        _require(isinstance(tid, str) and tid not in seen, path, f"tables[{i}]: missing/dup id")
        seen.add(tid)
        _check_table(table, papers, path, f"table {tid}")
    return spec


def _check_table(table: dict, papers: Mapping, path: Path, where: str) -> None:
    kind = table.get("kind")
    _require(kind in KINDS, path, f"{where}: kind {kind!r}; expected one of {KINDS}")
    _require(table.get("source") in SOURCES, path, f"{where}: source must be one of {SOURCES}")
    _require(bool(table.get("title")), path, f"{where}: needs a title")
    if kind == "runs":
        _require(bool(table.get("corpora")), path, f"{where}: needs corpora")
        return
    _require(
        table.get("paper") in papers and bool(table.get("table")),
        path,
        f"{where}: needs 'paper' (one of {sorted(papers)}) and 'table' (e.g. 'Table 1')",
    )
    columns = table.get("columns")
    _require(isinstance(columns, list) and columns, path, f"{where}: needs columns")
    if kind == "accuracy":
        for c in columns:
            _require(
                isinstance(c, dict) and c.get("key") and c.get("label") and c.get("metric"),
                path,
                f"{where}: each column needs key, label and metric (a list of metrics keys)",
            )
            if isinstance(c["metric"], str):
                c["metric"] = [c["metric"]]
        keys = [c["key"] for c in columns]
        _require(bool(table.get("tasks")), path, f"{where}: needs tasks (our run labels)")
    else:
        keys = list(columns)
    if kind == "babi":
        _require(bool(table.get("corpora")), path, f"{where}: needs corpora")
        table["failed_above"] = _number(table.get("failed_above", 5.0), path, f"{where}")
    rows = table.get("rows")
    _require(isinstance(rows, list) and rows, path, f"{where}: needs rows")
    for j, row in enumerate(rows):
        rw = f"{where} row {j + 1} ({row.get('paper_row') if isinstance(row, dict) else row})"
        _require(isinstance(row, dict) and bool(row.get("paper_row")), path, f"{rw}: paper_row")
        model = row.get("model")
        _require(model is None or isinstance(model, str), path, f"{rw}: model: a key or null")
        values = row.get("values")
        if values is None:
            _require(isinstance(row.get("printed"), str), path, f"{rw}: needs values (or printed)")
            row["values"] = {}
        elif isinstance(values, list):
            _require(
                len(values) == len(keys), path, f"{rw}: {len(values)} values, {len(keys)} columns"
            )
            row["values"] = {
                k: _number(v, path, f"{rw} {k}") for k, v in zip(keys, values, strict=True)
            }
        elif isinstance(values, dict):
            unknown = sorted(set(values) - set(keys))
            _require(not unknown, path, f"{rw}: values for unknown columns {unknown}")
            row["values"] = {k: _number(v, path, f"{rw} {k}") for k, v in values.items()}
        else:
            raise DataError(path, f"{rw}: values must be a list or a mapping")
        if row.get("avg") is not None:
            row["avg"] = _number(row["avg"], path, f"{rw} avg")
        if row.get("failed") is not None:
            _require(isinstance(row["failed"], int), path, f"{rw}: failed must be an integer")
    for d in table.get("deltas") or []:
        _require(
            isinstance(d, dict) and d.get("model") and d.get("baseline"),
            path,
            f"{where}: each delta needs model and baseline",
        )
        if d.get("min_delta") is not None:
            d["min_delta"] = _number(d["min_delta"], path, f"{where} min_delta")


# --------------------------------------------------------------------------- measured numbers


@dataclass(frozen=True)
class Run:
    """One metrics file: metrics/mage/<model>/<task>.json or metrics/coref/<encoder>.json."""

    model: str
    task: str
    corpus: str
    path: str
    metrics: Mapping[str, Any]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(path, f"not valid JSON: {exc.msg}", exc.lineno) from None
    if not isinstance(data, dict):
        raise DataError(path, "expected a JSON object (a DVC metrics file)")
    return data


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return path.as_posix()


def load_mage_runs(root: str | Path) -> list[Run]:
    """Every metrics/mage/<model>/<task>.json; none when the directory does not exist."""
    root = Path(root)
    runs = []
    for path in sorted(root.glob("*/*.json")) if root.is_dir() else []:
        data = _read_json(path)
        dataset = str(data.get("dataset") or "")
        runs.append(Run(path.parent.name, path.stem, dataset.split("/")[0], _display(path), data))
    return runs


def load_coref_runs(root: str | Path) -> dict[str, Run]:
    """Every metrics/coref/<encoder>.json by encoder; empty when the directory does not exist."""
    root = Path(root)
    out = {}
    for path in sorted(root.glob("*.json")) if root.is_dir() else []:
        data = _read_json(path)
        out[path.stem] = Run(path.stem, "", str(data.get("dataset") or ""), _display(path), data)
    return out


def metric(metrics: Mapping[str, Any], keys: str | Sequence[str]) -> float | None:
    """The first of the dotted keys ("subsets.context.dev_acc") present and numeric."""
    for key in [keys] if isinstance(keys, str) else keys:
        value: Any = metrics
        for part in key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


# --------------------------------------------------------------------------- formatting


def fmt(value: float | None, digits: int = 1, scale: float = 1.0, sign: bool = False) -> str:
    if value is None or not math.isfinite(value):
        return DASH
    return f"{value * scale:{'+' if sign else ''}.{digits}f}"


def cell(ours: str, paper: str | None) -> str:
    """'ours (paper)'; a column the paper does not print reads 'ours (—)'."""
    return f"{ours} ({DASH if paper is None else paper})"


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return lines


def _mean_std(stat: Any, scale: float = 100.0) -> str:
    if not isinstance(stat, Mapping) or stat.get("mean") is None:
        return DASH
    std = stat.get("std")
    return fmt(stat["mean"], 1, scale) + ("" if std is None else f" ± {fmt(std, 1, scale)}")


def _task_list(labels: Sequence[str]) -> str:
    return ", ".join(labels) if labels else "none"


# --------------------------------------------------------------------------- sections


def _table_heading(table: Mapping, papers: Mapping) -> list[str]:
    if table.get("paper") is None:
        lines = [f"## {table['title']}", ""]
    else:
        paper = papers[table["paper"]]
        lines = [
            f"## {paper.get('short') or paper['cite']}, {table['table']} — {table['title']}",
            "",
            f"Paper: {paper['cite']}, {table['table']}, as printed in papers/{paper['file']} "
            f"(transcribed in tasks/report/paper_results.yaml, table `{table['id']}`).",
            "",
        ]
    if table.get("protocol"):
        lines += [f"Paper protocol: {table['protocol']}", ""]
    if table.get("note"):
        lines += [f"Note: {table['note']}", ""]
    return lines


def _runs_details(runs: Sequence[Run], annotation: str | None, summary: str) -> list[str]:
    """Per metrics file: dataset, annotation, seeds and the selection rule's outcome."""
    header = [
        "model",
        "task",
        "dataset",
        "annotation",
        "seeds",
        "selected seed",
        "dev acc",
        "test acc",
        "test error % (selected)",
        "test error % mean ± std over seeds",
        "notes",
        "metrics file",
    ]
    rows = [
        [*cells[:4], str(r.metrics.get("seeds", DASH)), str(r.metrics.get("selected_seed", DASH)),
         *cells[5:], r.path]
        for r, cells in _run_rows(runs, annotation)
    ]  # fmt: skip
    if not rows:
        return []
    return ["<details><summary>" + summary + "</summary>", "", *_md_table(header, rows)] + [
        "",
        "</details>",
        "",
    ]


def _run_rows(runs: Sequence[Run], annotation: str | None) -> list[tuple[Run, list[str]]]:
    """Per run, sorted by model and task: model, task, dataset, annotation, "seeds (selected)",
    dev acc, test acc, test error % (selected), test error % mean ± std, notes."""
    out = []
    for r in sorted(runs, key=lambda r: (r.model, _task_key(r.task))):
        m = r.metrics
        out.append(
            (
                r,
                [
                    f"`{r.model}`",
                    r.task,
                    m.get("dataset") or DASH,
                    m.get("annotation") or annotation or DASH,
                    f"{m.get('seeds', DASH)} ({m.get('selected_seed', DASH)})",
                    fmt(metric(m, "dev_acc"), 3),
                    fmt(metric(m, "test_acc"), 3),
                    fmt(metric(m, "test_error"), 1, 100),
                    _error_spread(m),
                    _notes(m),
                ],
            )
        )
    return out


def _error_spread(m: Mapping[str, Any]) -> str:
    """Test error over seeds, "mean ± std" in %."""
    spread = fmt(metric(m, "test_error_mean"), 1, 100)
    if spread != DASH and m.get("test_error_std") is not None:
        spread += f" ± {fmt(m['test_error_std'], 1, 100)}"
    return spread


def _notes(m: Mapping[str, Any]) -> str:
    """The metrics' split_notes (e.g. a train portion carved from dev), else "—"."""
    notes = m.get("split_notes")
    if isinstance(notes, Mapping) and notes:
        return "; ".join(f"{k}: {v}" for k, v in sorted(notes.items()))
    return str(notes) if notes else DASH


def _task_key(task: str) -> tuple[int, str]:
    digits = "".join(ch for ch in task if ch.isdigit())
    return (int(digits) if digits else 0, task)


SELECTION = (
    "each seed is selected on dev accuracy (early stopping); of the seeds, the one with the "
    "best dev accuracy gives the reported test number (the paper's protocol)"
)


def render_babi(table: Mapping, runs: Sequence[Run], papers: Mapping, annotation: str | None):
    """Tasks as rows, models as columns; mean and failed-task count over the tasks WE measured,
    beside the paper's numbers on the same tasks and its printed 20-task Avg / #failed."""
    columns: list[str] = list(table["columns"])
    limit = table["failed_above"]
    paper_rows = [r for r in table["rows"] if r.get("model")]
    reference = [r for r in table["rows"] if not r.get("model")]
    by_model: dict[str, dict[str, Run]] = {}
    for r in runs:
        by_model.setdefault(r.model, {})[r.task] = r
    extra = sorted(m for m in by_model if m not in {r["model"] for r in paper_rows})
    models = [(r["model"], r, f"{r['paper_row']} `{r['model']}`") for r in paper_rows]
    models += [(m, None, f"`{m}` (no paper row)") for m in extra]

    def ours(model: str, task: str) -> float | None:
        run = by_model.get(model, {}).get(task)
        err = metric(run.metrics, "test_error") if run else None
        return None if err is None else round(100 * err, 1)

    shown = [
        t
        for t in columns
        if any(t in r["values"] for r in paper_rows + reference)
        or any(t in tasks for tasks in by_model.values())
    ]
    lines = _table_heading(table, papers)
    lines.append(
        "Cells: our test error % of the selected seed (paper's error %); "
        f"{DASH} = not measured. Selection: {SELECTION}."
    )
    lines.append("")
    body = []
    for t in shown:
        row = [f"{columns.index(t) + 1} (`{t}`)"]
        for model, prow, _ in models:
            p = prow["values"].get(t) if prow else None
            row.append(cell(fmt(ours(model, t)), None if p is None else fmt(p)))
        body.append(row)
    mean_row = ["Mean error over the tasks we measured (paper, same tasks)"]
    fail_row = [f"Failed tasks (> {limit:g}% error) of those (paper, same tasks)"]
    avg_row = ["Paper Avg / #failed as printed (over all 20 tasks)"]
    measured_lines = []
    for model, prow, label in models:
        done = [t for t in columns if ours(model, t) is not None]
        errs = [ours(model, t) for t in done]
        paper_same = [prow["values"].get(t) for t in done] if prow else []
        has_paper = bool(done) and prow is not None and None not in paper_same
        if done:
            o_mean = fmt(sum(errs) / len(errs))
            p_mean = fmt(sum(paper_same) / len(paper_same)) if has_paper else None
            mean_row.append(f"{cell(o_mean, p_mean)} over {len(done)} task{'s' * (len(done) > 1)}")
            o_fail = sum(e > limit for e in errs)
            p_fail = str(sum(v > limit for v in paper_same)) if has_paper else None
            fail_row.append(f"{cell(f'{o_fail} of {len(done)}', p_fail)}")
            measured_lines.append(f"- {label}: {_task_list(done)}")
        else:
            mean_row.append(DASH)
            fail_row.append(DASH)
        printed = []
        if prow and prow.get("avg") is not None:
            printed.append(fmt(prow["avg"]))
        if prow and prow.get("failed") is not None:
            printed.append(str(prow["failed"]))
        avg_row.append(" / ".join(printed) if printed else DASH)
    header = ["Task"] + [label for _, _, label in models]
    lines += _md_table(header, body + [mean_row, fail_row, avg_row])
    lines.append("")
    lines.append(
        "The means and failed counts above are over the tasks we measured only; the paper's "
        "printed Avg is over all 20 tasks, so the two are comparable only when all 20 are "
        "measured. Tasks measured:"
    )
    lines += measured_lines or ["- none"]
    small = sorted(
        f"`{r.model}` {r.task} ({r.metrics['test_n']} questions, dev error "
        f"{fmt(metric(r.metrics, 'dev_error'), 1, 100)}%)"
        for r in runs
        if isinstance(r.metrics.get("test_n"), int) and r.metrics["test_n"] < SMALL_TEST
    )
    if small:
        lines.append(
            f"\nTest sets under {SMALL_TEST} questions (e.g. the mirror's 10-question samples; "
            "the full test sets are held back) make these cells coarse; read the dev error: "
            + "; ".join(small)
            + "."
        )
    if reference:
        refs = "; ".join(
            f"{r['paper_row']} (Avg {fmt(r.get('avg'))}"
            + (f", {r['failed']} failed" if r.get("failed") is not None else "")
            + ")"
            for r in reference
        )
        lines.append(f"\nPaper rows not reproduced here: {refs}.")
    lines.append("")
    lines += _runs_details(runs, annotation, "Runs behind this table")
    return lines


def render_accuracy(table: Mapping, runs: Sequence[Run], papers: Mapping, annotation: str | None):
    """Models as rows, the paper's accuracy columns, cells 'ours (paper)'."""
    columns = table["columns"]
    digits = int(table.get("digits", 3))
    tasks = list(table["tasks"])
    by_model: dict[str, Run] = {}
    for r in sorted(runs, key=lambda r: tasks.index(r.task) if r.task in tasks else len(tasks)):
        by_model.setdefault(r.model, r)
    rows_spec = [r for r in table["rows"] if r["values"] or r.get("model")]
    extra = sorted(m for m in by_model if m not in {r.get("model") for r in table["rows"]})
    body = []
    for prow in rows_spec + [{"paper_row": DASH, "model": m, "values": {}} for m in extra]:
        model = prow.get("model")
        run = by_model.get(model) if model else None
        row = [prow["paper_row"], f"`{model}`" if model else "not reproduced"]
        for c in columns:
            p = prow["values"].get(c["key"])
            o = metric(run.metrics, c["metric"]) if run else None
            row.append(cell(fmt(o, digits), None if p is None else fmt(p, digits)))
        body.append(row)
    lines = _table_heading(table, papers)
    lines.append(
        f"Cells: our accuracy (paper's accuracy); {DASH} = not measured. "
        f"Our run labels: {', '.join(tasks)}. Selection: {SELECTION}."
    )
    lines.append("")
    lines += _md_table(["Paper row", "ours"] + [c["label"] for c in columns], body)
    keys = "; ".join(f"{c['label']} = {' or '.join(c['metric'])}" for c in columns)
    lines += ["", f"Our columns read these metrics keys (first present): {keys}."]
    for r in table["rows"]:
        if r.get("printed"):
            lines.append(
                f'- Paper row {r["paper_row"]}: printed "{r["printed"]}" — {r.get("note", "")}'
            )
    lines.append("")
    lines += _runs_details(list(by_model.values()), annotation, "Runs behind this table")
    return lines


def render_coref(table: Mapping, coref: Mapping[str, Run], papers: Mapping):
    """Our CoNLL F1 (mean ± std over seeds) beside the paper's Avg F1, the selected seed's
    P/R/F1 beside the paper's, and the ASL/LSL − baseline deltas (issue #5 criterion)."""
    columns = table["columns"]
    lines = _table_heading(table, papers)
    mapped = [r for r in table["rows"] if r.get("model")]
    datasets = sorted({r.corpus or DASH for r in coref.values()})
    embeddings = sorted({str(r.metrics.get("embeddings") or DASH) for r in coref.values()})
    lines.append(
        f"Our numbers are on {', '.join(f'`{d}`' for d in datasets) or DASH} "
        f"(params.yaml train_coref.corpora), the paper's on {table.get('dataset', DASH)}: "
        "different data, so compare the deltas between encoders, not the absolute scores. "
        f"Our word embeddings: {', '.join(embeddings) or DASH}. Cells: ours (paper), F1 in %; "
        f"{DASH} = not measured. Our per-encoder model selection: best dev CoNLL F1 epoch per "
        "seed; mean ± (population) std over the seeds run."
    )
    lines.append("")
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
    for prow in mapped:
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
    lines += _md_table(header, body)
    lines += [
        "",
        "Selected seed (best dev CoNLL F1), test set, P / R / F1 in %: ours (paper).",
        "",
    ]
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
    lines += _md_table(["Paper row", "ours", "seed"] + [COREF_LABELS[k] for k in columns], body)
    lines += [
        "",
        "Avg F1 deltas in points (ours: difference of the mean CoNLL F1 over seeds).",
        "",
    ]
    rows_by_model = {r["model"]: r for r in mapped}
    body = []
    for d in table.get("deltas") or []:
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
        pa_, pb = (rows_by_model.get(x, {}).get("values", {}).get("avg_f1") for x in (a, b))
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
        body.append(row)
    lines += _md_table(["delta", "ours test", "ours dev", "paper (test)", "criterion"], body)
    lines.append("")
    files = [coref[k].path for k in sorted(coref)]
    lines.append(f"Metrics files: {', '.join(files) if files else 'none'}.")
    lines.append("")
    return lines


def render_runs(table: Mapping, runs: Sequence[Run], papers: Mapping, annotation: str | None):
    lines = _table_heading(table, papers)
    if not runs:
        return lines + [f"No metrics files matched ({DASH}).", ""]
    header = ["model", "task", "dataset", "annotation", "seeds (selected)", "dev acc"]
    header += ["test acc", "test error % (selected)", "test error % mean ± std over seeds"]
    header += ["notes"]
    rows = [cells for _, cells in _run_rows(runs, annotation)]
    lines += [f"Selection: {SELECTION}.", ""]
    lines += _md_table(header, rows)
    return lines + ["", "Metrics files: " + ", ".join(r.path for r in runs) + ".", ""]


def _matches(table: Mapping, run: Run) -> bool:
    if table["source"] != "mage" or run.corpus not in (table.get("corpora") or []):
        return False
    if table["kind"] == "babi":
        return run.task in table["columns"]
    if table["kind"] == "accuracy":
        return run.task in table["tasks"]
    return table["kind"] == "runs"


def render(
    spec: Mapping[str, Any],
    mage_runs: Sequence[Run],
    coref: Mapping[str, Run],
    *,
    annotation: str | None = None,
) -> str:
    """The whole reports/results.md text."""
    papers = spec["papers"]
    lines = [
        "# Results beside the papers' tables",
        "",
        "Generated by the `report` stage (`python -m flows.report`, tasks/report/tables.py) from the "
        "DVC metrics of the training stages (metrics/mage, metrics/coref) and the paper numbers "
        "transcribed in tasks/report/paper_results.yaml; `dvc repro` rewrites it whenever one of them "
        "changes. Do not edit by hand.",
        "",
        f"Reader annotation run: `{annotation or DASH}` (params.yaml train_mage.data). "
        f'"{DASH}" marks a number not measured (no metrics file) or not printed by the paper.',
        "",
    ]
    claimed: set[str] = set()
    for table in spec["tables"]:
        if table["source"] == "coref":
            lines += render_coref(table, coref, papers)
            continue
        runs = [r for r in mage_runs if _matches(table, r)]
        claimed |= {r.path for r in runs}
        render_fn = {"babi": render_babi, "accuracy": render_accuracy, "runs": render_runs}
        lines += render_fn[table["kind"]](table, runs, papers, annotation)
    others = [r for r in mage_runs if r.path not in claimed]
    if others:
        other = {"title": "Other measured runs (no paper table matches them)", "paper": None}
        lines += render_runs(other, others, papers, annotation)
    return "\n".join(lines).rstrip("\n") + "\n"


def build(cfg: Mapping[str, Any] | None = None) -> Path:
    """Read the paper yaml and the metrics named by `cfg` (params.yaml report), write the report."""
    cfg = dict(cfg) if cfg is not None else settings()
    spec = load_spec(resolve_path(cfg["paper_results"]))
    metrics_dirs = cfg.get("metrics") or {}
    text = render(
        spec,
        load_mage_runs(resolve_path(metrics_dirs.get("mage", DEFAULTS["metrics"]["mage"]))),
        load_coref_runs(resolve_path(metrics_dirs.get("coref", DEFAULTS["metrics"]["coref"]))),
        annotation=cfg.get("annotation"),
    )
    out = resolve_path(cfg["output"])
    write_text(out, text)
    return out


__all__ = [
    "Run",
    "build",
    "load_coref_runs",
    "load_mage_runs",
    "load_spec",
    "metric",
    "render",
    "settings",
]
