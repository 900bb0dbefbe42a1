"""Shared pieces of the report stage: the paper yaml, metrics files and markdown cells.

Why a module of its own: every model family's renderer (tasks/report/mage.py, coref.py, and
EntityNLM / CoreLM next) reads the same checked paper yaml, the same kind of DVC metrics
files and writes the same "ours (paper)" cells, so a family module holds only what is
particular to its papers' tables. tasks/report/build.py assembles the document.

Inputs: tasks/report/paper_results.yaml (the papers' numbers, transcribed exactly; see its
header) and the training stages' metrics directories, params.yaml `report.metrics`
(metrics/train_mage, metrics/train_coref). A missing directory or file is a "—" cell.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tasks.core import presets
from tasks.core.config import REPO_ROOT, params
from tasks.core.errors import DataError
from tasks.core.settings import parse_settings

DASH = "—"
PAPERS_LINK = "../../shared/papers"  # from reports/results.md: ../shared/papers of the checkout
# --------------------------------------------------------------------------- settings


@dataclass
class ReportMetrics:
    """Each paper family's DVC metrics folder (its training stage's); any other registered
    family's is metrics/train_<name> (`of`)."""

    mage: str = "metrics/train_mage"
    coref: str = "metrics/train_coref"
    entitynlm: str = "metrics/train_entitynlm"
    corelm: str = "metrics/train_corelm"

    def of(self, family: str) -> str:
        return getattr(self, family, None) or f"metrics/train_{family}"


@dataclass
class ReportArtifacts:
    """The folders whose history.json files give the learning-curve figures."""

    mage: str = "artifacts/train_mage"
    coref: str = "artifacts/train_coref"
    entitynlm: str = "artifacts/train_entitynlm"

    def of(self, family: str) -> str:
        return getattr(self, family, None) or f"artifacts/train_{family}"


@dataclass
class ReportSettings:
    """params.yaml report."""

    paper_results: str = "tasks/report/paper_results.yaml"  # the papers' numbers + row mapping
    metrics: ReportMetrics = field(default_factory=ReportMetrics)  # read whole; missing: "—"
    artifacts: ReportArtifacts = field(default_factory=ReportArtifacts)  # history.json curves
    annotation_metrics: str = "metrics/annotate"  # annotation quality figure
    output: str = "reports/results.md"
    figures: str = "plots/report"  # PNGs embedded in the report (DVC plots)
    corpus_plots: str = "plots/corpora"  # stats@<corpus> CSVs -> figures/doc_lengths.png
    summary: str = "metrics/summary"  # <family>/<figure>.json: the short DVC metrics
    records: str = "results"  # the results records: the claims table (tasks/report/claims.py)


def settings() -> ReportSettings:
    """params.yaml `report`, checked strictly."""
    return parse_settings(ReportSettings, params().get("report"), "report")


def reader_annotation() -> str | None:
    """The annotation run the MAGE readers train on (params.yaml train_mage.data), which the
    report's text names."""
    return (params().get("train_mage") or {}).get("data")


# --------------------------------------------------------------------------- families


@dataclass(frozen=True)
class Section:
    """One model family's part of the report (the SECTION of tasks/report/<family>.py, found
    by the family's name: models/registry.py reports()), as tasks/report/build.py
    dispatches to it.

    kinds: the paper_results.yaml table kinds it renders (none: it renders only render_rest);
    source: the key of params.yaml report.metrics (and the tables' `source`) it reads;
    load: that metrics directory -> the family's runs (any shape the renderers agree on);
    render: (table, runs, papers, annotation) -> the lines of one paper table;
    render_rest: (all tables, runs, papers, annotation) -> lines after the tables (e.g. the
    runs no table claimed); none by default.
    measured: (all tables, runs) -> one Measured per number we measured, for the report's
    opening table, the ours-vs-paper figure and metrics/summary/<source>.json.
    matches: (table, runs) -> whether any run fills a cell of that table (else it is folded).
    """

    source: str
    kinds: tuple[str, ...]
    load: Callable[[Path], Any]
    render: Callable[[Mapping, Any, Mapping, str | None], list[str]]
    render_rest: Callable[[Sequence[Mapping], Any, Mapping, str | None], list[str]] = lambda *_: []
    measured: Callable[[Sequence[Mapping], Any], list[Measured]] = lambda *_: []
    matches: Callable[[Mapping, Any], bool] = lambda *_: True
    # its learning curves from artifacts/train_<source> (ReportArtifacts.of) besides those
    # params.yaml report.artifacts lists: a family without a report module of its own
    curves: bool = False


def family_section(name: str) -> Section:
    """The section of a registered family without a report module of its own (no paper table
    to fill yet): its stage's summaries, metrics/train_<name>/<item>.json, one row per item
    with every number they hold at the top level."""

    def load(directory: Path) -> dict[str, dict[str, Any]]:
        files = sorted(directory.glob("*.json")) if directory.is_dir() else []
        return {path.stem: json.loads(path.read_text()) for path in files}

    def render_rest(tables, runs: Mapping[str, Mapping[str, Any]], papers, annotation):
        lines = [f"## Model family `{name}` (stage train_{name})", ""]
        if not runs:
            return lines + [f"Nothing yet: no metrics/train_{name}/*.json.", ""]
        keys = sorted({k for r in runs.values() for k, v in r.items() if _is_number(v)})
        body = [
            [item, *(_summary_cell(r.get(k)) for k in keys)] for item, r in sorted(runs.items())
        ]
        return lines + _md_table(["item", *keys], body) + [""]

    return Section(source=name, kinds=(), load=load, render=lambda *_: [],
                   render_rest=render_rest, curves=True)  # fmt: skip


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _summary_cell(value: Any) -> str:
    if not _is_number(value):
        return DASH
    return str(value) if isinstance(value, int) else fmt(value, 4)


@dataclass(frozen=True)
class Measured:
    """One number we measured, beside the paper's where a paper table prints it."""

    family: str
    table: str  # the paper table ("Table 1 (mage-babi)") or "no paper table"
    what: str  # model / task, e.g. "`ga-mage16` qa2"
    metric: str  # e.g. "test error %"
    ours: float | None
    paper: float | None
    split: str  # "test", "test sample (200 items)", "dev"
    data: str
    seeds: int | None
    budget: str  # epochs run
    device: str
    comparable: bool = True  # False: the paper measured other data (no delta is taken)
    # its file metrics/summary/<family>/<key>.json (a headline figure: `asl_f1`); None: the
    # report's tables only. Rows sharing a key are one figure: their mean (a bAbI table)
    short: str | None = None

    @property
    def delta(self) -> float | None:
        if self.ours is None or self.paper is None or not self.comparable:
            return None
        return self.ours - self.paper

    def key(self) -> str:
        return f"{self.what} {self.metric}".replace("`", "")


def summary_metrics(rows: Sequence[Measured]) -> dict[str, Any]:
    """The DVC metrics of a family (metrics/summary/<family>/<figure>.json): its headline
    figures only (the rows with a `short` key), each {"ours", "paper"}, so that `dvc metrics
    show` and `dvc exp show` stay a few short columns; splits, deltas and every other number
    are in the report. Rows under one key give their mean: ours over the rows we measured, the paper's
    over the same rows (None when the paper lacks one of them)."""
    groups: dict[str, list[Measured]] = {}
    for r in rows:
        if r.short and r.ours is not None:
            groups.setdefault(r.short, []).append(r)
    return {
        key: {"ours": _mean([r.ours for r in group]), "paper": _mean([r.paper for r in group])}
        for key, group in sorted(groups.items())
    }


def _mean(values: Sequence[float | None]) -> float | None:
    """The one value, or the mean of several (2 decimals); None if any is None."""
    if None in values:
        return None
    numbers = [v for v in values if v is not None]
    return numbers[0] if len(numbers) == 1 else round(sum(numbers) / len(numbers), 2)


def fold(summary: str, lines: Sequence[str]) -> list[str]:
    """Collapsed markdown (GitHub renders <details>): what was not measured stays one click away."""
    return ["<details><summary>" + summary + "</summary>", "", *lines, "", "</details>", ""]


# --------------------------------------------------------------------------- paper tables


def _number(value: Any, path: Path, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataError(path, f"{where}: {value!r} is not a number")
    return float(value)


def _require(cond: bool, path: Path, message: str) -> None:
    if not cond:
        raise DataError(path, message)


def _read_yaml(path: Path) -> Any:
    if not path.exists():
        raise DataError(path, "paper results file not found (params.yaml report.paper_results)")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise DataError(
            path, f"not valid YAML: {exc}", None if line is None else line + 1
        ) from None


def load_spec(path: str | Path, kinds: Collection[str], sources: Collection[str]) -> dict[str, Any]:
    """tasks/report/paper_results.yaml, checked: every table has one of `kinds` (the kinds the
    family renderers own) and `sources`, names its paper and table id, every number is a
    number, and list rows have one value per column. Numbers become floats."""
    path = Path(path)
    spec = _read_yaml(path)
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
        _check_table(table, papers, path, f"table {tid}", (tuple(kinds), tuple(sources)))
    return spec


def _check_table(
    table: dict, papers: Mapping, path: Path, where: str, allowed: tuple[tuple, tuple]
) -> None:
    kinds, sources = allowed
    kind = table.get("kind")
    _require(kind in kinds, path, f"{where}: kind {kind!r}; expected one of {kinds}")
    _require(table.get("source") in sources, path, f"{where}: source must be one of {sources}")
    _require(bool(table.get("title")), path, f"{where}: needs a title")
    if kind == "runs":
        _require(bool(table.get("corpora")), path, f"{where}: needs corpora")
        return
    _require(
        table.get("paper") in papers and bool(table.get("table")),
        path,
        f"{where}: needs 'paper' (one of {sorted(papers)}) and 'table' (e.g. 'Table 1')",
    )
    keys = _check_columns(table, path, where)
    if kind == "babi":
        _require(bool(table.get("corpora")), path, f"{where}: needs corpora")
        table["failed_above"] = _number(table.get("failed_above", 5.0), path, f"{where}")
    rows = table.get("rows")
    _require(isinstance(rows, list) and rows, path, f"{where}: needs rows")
    for j, row in enumerate(rows):
        _check_row(row, keys, path, f"{where} row {j + 1}")
    ours = table.get("ours_rows") or []
    _require(isinstance(ours, list), path, f"{where}: ours_rows: expected a list")
    for j, row in enumerate(ours):
        _require(isinstance(row, dict) and isinstance(row.get("label"), str) and row["label"]
                 and isinstance(row.get("model"), str) and row["model"], path,
                 f"{where} ours_rows[{j}]: needs label and model (rows the paper lacks)")  # fmt: skip
    for d in table.get("deltas") or []:
        _require(
            isinstance(d, dict) and d.get("model") and d.get("baseline"),
            path,
            f"{where}: each delta needs model and baseline",
        )
        if d.get("min_delta") is not None:
            d["min_delta"] = _number(d["min_delta"], path, f"{where} min_delta")


def _check_columns(table: dict, path: Path, where: str) -> list[str]:
    """The column keys; an accuracy column's `metric` becomes a list of metrics keys."""
    columns = table.get("columns")
    _require(isinstance(columns, list) and columns, path, f"{where}: needs columns")
    if table["kind"] != "accuracy":
        return list(columns)
    for c in columns:
        _require(
            isinstance(c, dict) and c.get("key") and c.get("label") and c.get("metric"),
            path,
            f"{where}: each column needs key, label and metric (a list of metrics keys)",
        )
        if isinstance(c["metric"], str):
            c["metric"] = [c["metric"]]
    _require(bool(table.get("tasks")), path, f"{where}: needs tasks (our run labels)")
    return [c["key"] for c in columns]


def _check_row(row: Any, keys: Sequence[str], path: Path, where: str) -> None:
    """One paper row: paper_row, model key or null, values by column key (floats)."""
    rw = f"{where} ({row.get('paper_row') if isinstance(row, dict) else row})"
    _require(isinstance(row, dict) and bool(row.get("paper_row")), path, f"{rw}: paper_row")
    model = row.get("model")
    _require(model is None or isinstance(model, str), path, f"{rw}: model: a key or null")
    values = row.get("values")
    if values is None:
        _require(isinstance(row.get("printed"), str), path, f"{rw}: needs values (or printed)")
        row["values"] = {}
    elif isinstance(values, list):
        _require(len(values) == len(keys), path, f"{rw}: {len(values)} values, {len(keys)} columns")
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


# --------------------------------------------------------------------------- measured numbers


@dataclass(frozen=True)
class Run:
    """One metrics file: metrics/train_mage/<model>-<task>.json (model, task and corpus from
    its keys) or metrics/train_coref/<encoder>.json (model = encoder, task "")."""

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


def _key(data: Mapping[str, Any], key: str, path: Path) -> str:
    """A metrics file's identifying key ("model", "task", "encoder"): a non-empty string."""
    value = data.get(key)
    _require(
        isinstance(value, str) and bool(value), path, f'needs the key "{key}" (a non-empty string)'
    )
    return value


def _display(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return path.as_posix()


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


def _table_heading(table: Mapping, papers: Mapping) -> list[str]:
    """Title, the paper and table it transcribes, protocol and note."""
    if table.get("paper") is None:
        lines = [f"## {table['title']}", ""]
    else:
        paper = papers[table["paper"]]
        lines = [
            f"## {paper.get('short') or paper['cite']}, {table['table']} — {table['title']}",
            "",
            f"Paper: {paper['cite']}, {table['table']}, as printed in "
            f"[{paper['file']}]({PAPERS_LINK}/{paper['file']}) (the papers folder beside the "
            f"checkout; transcribed in tasks/report/paper_results.yaml, table `{table['id']}`).",
            "",
        ]
    if table.get("id") in presets.names():
        lines += [f"Reproduce: `uv run python -m tasks.core.presets run {table['id']}` (CPU "
                  "scale; `--scale paper` for the paper's; `show` prints the `dvc exp run` "
                  "command; costs: `python -m tasks.core.presets list`)", ""]  # fmt: skip
    elif table.get("command"):
        lines += [f"Reproduce: {' '.join(str(table['command']).split())}", ""]
    if table.get("protocol"):
        lines += [f"Paper protocol: {table['protocol']}", ""]
    if table.get("note"):
        lines += [f"Note: {table['note']}", ""]
    return lines
