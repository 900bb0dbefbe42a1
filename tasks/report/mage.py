"""The MAGE-GRU family's part of reports/results.md (Dhingra et al., issue #4).

Why its own module: the readers' tables (bAbI error rates with means and failed-task counts,
LAMBADA / CNN accuracies, the embedded default's runs) share one metrics layout and one
selection rule, none of which the other families use; tasks/report/build.py dispatches the
kinds "babi", "accuracy" and "runs" here (SECTION).

Reads metrics/train_mage/<model>-<task>.json (models/mage/train.py summarize): model, task
and dataset come from the file's keys, not its name (model keys contain hyphens too).
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
    fold,
    metric,
)

SMALL_TEST = 100  # a test set this small is a sample: its error moves in 10-point steps
SELECTION = (
    "each seed is selected on dev accuracy (early stopping); of the seeds, the one with the "
    "best dev accuracy gives the reported test number (the paper's protocol)"
)


# --------------------------------------------------------------------------- metrics files


def _listing_order(run: Run) -> tuple[str, str]:
    """Model, then "<task>.json": the order of the former per-model directories
    (metrics/mage/<model>/<task>.json), kept so the report lists files as it did."""
    return (run.model, f"{run.task}.json")


def load_mage_runs(root: str | Path) -> list[Run]:
    """Every metrics/train_mage/<model>-<task>.json, model and task read from the file; none
    when the directory does not exist. Two files of one model and task are an error."""
    root = Path(root)
    runs: dict[tuple[str, str], Run] = {}
    for path in sorted(root.glob("*.json")) if root.is_dir() else []:
        data = _read_json(path)
        model, task = _key(data, "model", path), _key(data, "task", path)
        if (model, task) in runs:
            other = runs[model, task].path
            raise DataError(path, f"model {model!r} task {task!r} again (also in {other})")
        dataset = str(data.get("dataset") or "")
        runs[model, task] = Run(model, task, dataset.split("/")[0], _display(path), data)
    return sorted(runs.values(), key=_listing_order)


# --------------------------------------------------------------------------- run listings


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


def _task_list(labels: Sequence[str]) -> str:
    return ", ".join(labels) if labels else "none"


# --------------------------------------------------------------------------- bAbI tables

# (model key, its paper row or None, column label)
Model = tuple[str, Mapping[str, Any] | None, str]


def _ours(by_model: Mapping[str, Mapping[str, Run]], model: str, task: str) -> float | None:
    """Our test error % of the selected seed, rounded as printed; None when not measured."""
    run = by_model.get(model, {}).get(task)
    err = metric(run.metrics, "test_error") if run else None
    return None if err is None else round(100 * err, 1)


def _babi_cells(table: Mapping, models: Sequence[Model], by_model: Mapping) -> list[list[str]]:
    """One row per task that the paper prints or we measured: 'ours (paper)' per model."""
    columns: list[str] = list(table["columns"])
    body = []
    for t in columns:
        printed = any(t in r["values"] for r in table["rows"])
        if not printed and not any(t in tasks for tasks in by_model.values()):
            continue
        row = [f"{columns.index(t) + 1} (`{t}`)"]
        for model, prow, _ in models:
            p = prow["values"].get(t) if prow else None
            row.append(cell(fmt(_ours(by_model, model, t)), None if p is None else fmt(p)))
        body.append(row)
    return body


def _babi_summary(
    table: Mapping, models: Sequence[Model], by_model: Mapping
) -> tuple[list[list[str]], list[str]]:
    """The mean, failed-count and printed-Avg rows, and the "tasks measured" lines."""
    limit = table["failed_above"]
    mean_row = ["Mean error over the tasks we measured (paper, same tasks)"]
    fail_row = [f"Failed tasks (> {limit:g}% error) of those (paper, same tasks)"]
    avg_row = ["Paper Avg / #failed as printed (over all 20 tasks)"]
    measured_lines = []
    for model, prow, label in models:
        done = [t for t in table["columns"] if _ours(by_model, model, t) is not None]
        errs = [_ours(by_model, model, t) for t in done]
        paper_same = [prow["values"].get(t) for t in done] if prow else []
        has_paper = bool(done) and prow is not None and None not in paper_same
        if done:
            o_mean = fmt(sum(errs) / len(errs))
            p_mean = fmt(sum(paper_same) / len(paper_same)) if has_paper else None
            mean_row.append(f"{cell(o_mean, p_mean)} over {len(done)} task{'s' * (len(done) > 1)}")
            o_fail = sum(_above(e, limit) for e in errs)
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
    return [mean_row, fail_row, avg_row], measured_lines


def _babi_footnotes(table: Mapping, runs: Sequence[Run]) -> list[str]:
    """Sampled test sets (read the dev error) and the paper rows we do not reproduce."""
    lines = []
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
    reference = [r for r in table["rows"] if not r.get("model")]
    if reference:
        refs = "; ".join(
            f"{r['paper_row']} (Avg {fmt(r.get('avg'))}"
            + (f", {r['failed']} failed" if r.get("failed") is not None else "")
            + ")"
            for r in reference
        )
        lines.append(f"\nPaper rows not reproduced here: {refs}.")
    return lines


def render_babi(
    table: Mapping, runs: Sequence[Run], papers: Mapping, annotation: str | None
) -> list[str]:
    """Tasks as rows, models as columns; mean and failed-task count over the tasks WE measured,
    beside the paper's numbers on the same tasks and its printed 20-task Avg / #failed."""
    paper_rows = [r for r in table["rows"] if r.get("model")]
    by_model: dict[str, dict[str, Run]] = {}
    for r in runs:
        by_model.setdefault(r.model, {})[r.task] = r
    extra = sorted(m for m in by_model if m not in {r["model"] for r in paper_rows})
    models: list[Model] = [(r["model"], r, f"{r['paper_row']} `{r['model']}`") for r in paper_rows]
    models += [(m, None, f"`{m}` (no paper row)") for m in extra]
    summary, measured_lines = _babi_summary(table, models, by_model)
    lines = _table_heading(table, papers)
    lines.append(
        "Cells: our test error % of the selected seed (paper's error %); "
        f"{DASH} = not measured. Selection: {SELECTION}."
    )
    lines.append("")
    header = ["Task"] + [label for _, _, label in models]
    cells = _babi_cells(table, models, by_model)
    measured = [row for row in cells if any(not c.startswith(DASH) for c in row[1:])]
    lines += _md_table(header, measured + summary)
    if len(measured) < len(cells):
        rest = [row for row in cells if row not in measured]
        lines += [""] + fold(f"Paper numbers of the {len(rest)} tasks not measured here",
                             _md_table(header, rest))  # fmt: skip
    lines.append("")
    lines.append(
        "The means and failed counts above are over the tasks we measured only; the paper's "
        "printed Avg is over all 20 tasks, so the two are comparable only when all 20 are "
        "measured. Tasks measured:"
    )
    lines += measured_lines or ["- none"]
    lines += _babi_footnotes(table, runs)
    lines += render_babi_dev(table, models, by_model)
    lines.append("")
    lines += _runs_details(runs, annotation, "Runs behind this table")
    return lines


def render_babi_dev(table: Mapping, models: Sequence[Model], by_model: Mapping) -> list[str]:
    """Dev error as mean ± sd over seeds per task, beside the paper's test error (issue #15.4).

    Why beside the test cells above: with the mirror, bAbI's test files are 10-question samples,
    and the best-dev seed's test error is one pick among seeds on a 100-question dev set; the
    seeds' spread on dev says how much of a cell is luck. Failed = seed-mean dev error above the
    paper's threshold. Shown when some run has several seeds."""
    if not any(r.metrics.get("seeds", 1) > 1 for runs in by_model.values() for r in runs.values()):
        return []
    shown = [m for m in models if by_model.get(m[0])]
    limit = table["failed_above"]
    header = ["Task"] + [label for _, _, label in shown]
    rows, means = [], {model: {} for model, _, _ in shown}
    for t in table["columns"]:
        if not any(t in by_model[model] for model, _, _ in shown):
            continue
        row = [f"{table['columns'].index(t) + 1} (`{t}`)"]
        for model, prow, _ in shown:
            run = by_model[model].get(t)
            errors = _dev_errors(run.metrics) if run else []
            if errors:
                means[model][t] = 100 * _mean(errors)
            paper = prow["values"].get(t) if prow else None
            row.append(cell(_mean_sd(errors), None if paper is None else fmt(paper)))
        rows.append(row)
    rows += _babi_dev_summary(shown, means, limit)
    lines = ["", f"#### {table.get('table', 'bAbI')}, dev error over seeds (mean ± sd)", ""]
    lines.append(
        "Cells: our dev error % as mean ± sd over the seeds (dev carved from training; not a "
        f"test set) (the paper's test error %). Failed: seed-mean dev error > {limit:g}%. "
        + _budget(by_model)
    )
    return lines + [""] + _md_table(header, rows) + [""]


def _babi_dev_summary(shown: Sequence[Model], means: Mapping, limit: float) -> list[list[str]]:
    """Mean over tasks and failed count per model, beside the paper's on the same tasks."""
    mean_row, fail_row = ["Mean over the tasks measured (paper)"], ["Failed tasks (paper)"]
    for model, prow, _ in shown:
        ours = means[model]
        paper = [prow["values"].get(t) for t in ours] if prow else []
        full = bool(ours) and None not in paper and bool(paper)
        mean_row.append(cell(
            fmt(_mean(list(ours.values()))) if ours else DASH,
            fmt(_mean(paper)) if full else None,
        ) + f" over {len(ours)}")  # fmt: skip
        fail_row.append(cell(
            f"{sum(_above(e, limit) for e in ours.values())} of {len(ours)}",
            str(sum(v > limit for v in paper)) if full else None,
        ))  # fmt: skip
    return [mean_row, fail_row]


def _budget(by_model: Mapping) -> str:
    """Seeds and epochs run, as ranges over the runs shown: the budget the numbers came from."""
    runs = [r for per_task in by_model.values() for r in per_task.values()]

    def span(key: str) -> str:
        values = sorted({int(r.metrics[key]) for r in runs if isinstance(r.metrics.get(key), int)})
        if not values:
            return DASH
        return str(values[0]) if len(values) == 1 else f"{values[0]}–{values[-1]}"

    return f"Budget: seeds per run {span('seeds')}, epochs run {span('epochs_run')}."


# --------------------------------------------------------------------------- accuracy tables


def render_accuracy(
    table: Mapping, runs: Sequence[Run], papers: Mapping, annotation: str | None
) -> list[str]:
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


# --------------------------------------------------------------------------- run tables


def render_runs(
    table: Mapping, runs: Sequence[Run], papers: Mapping, annotation: str | None
) -> list[str]:
    """Runs without a paper counterpart, one row each, and their metrics files."""
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


# --------------------------------------------------------------------------- the family

RENDERERS = {"babi": render_babi, "accuracy": render_accuracy, "runs": render_runs}


def _matches(table: Mapping, run: Run) -> bool:
    if table["source"] != "mage" or run.corpus not in (table.get("corpora") or []):
        return False
    if table["kind"] == "babi":
        return run.task in table["columns"]
    if table["kind"] == "accuracy":
        return run.task in table["tasks"]
    return table["kind"] == "runs"


def render(
    table: Mapping, runs: Sequence[Run], papers: Mapping, annotation: str | None
) -> list[str]:
    """One MAGE table (kind babi, accuracy or runs) from the runs of its corpora and tasks."""
    mine = [r for r in runs if _matches(table, r)]
    return RENDERERS[table["kind"]](table, mine, papers, annotation)


def render_unmatched(
    tables: Sequence[Mapping], runs: Sequence[Run], papers: Mapping, annotation: str | None
) -> list[str]:
    """The coreference placement ablation where measured, then the runs no table matched, so
    that no measured number goes unreported."""
    lines = render_placement(runs)
    others = [r for r in runs if not any(_matches(t, r) for t in tables)]
    if not others:
        return lines
    other = {"title": "Other measured runs (no paper table matches them)", "paper": None}
    return lines + render_runs(other, others, papers, annotation)


PLACEMENT_SUFFIX = "-sentence"  # train_mage.models.<model>-sentence: {..., data: <run>-sentence}


def render_placement(runs: Sequence[Run]) -> list[str]:
    """Ablation the paper does not have (issue #15.3): where a coreference edge leaves and
    enters a mention -- the paper's placement (last token -> first token of the next mention)
    beside the sentence-anchored one (graphs.coref_placement sentence). A run is on the
    sentence placement when its metrics say so (coref_placement, from the graph table); its
    paper-placement counterpart is the model key without "-sentence" on the same task. Dev
    error is shown as mean ± sd over seeds: with the mirror, bAbI's test files are 10-question
    samples, so test error (the best-dev seed's, with its item count) says little."""
    sentence = [r for r in runs if r.metrics.get("coref_placement") == "sentence"]
    if not sentence:
        return []
    by_key = {(r.model, r.task): r for r in runs if not r.metrics.get("coref_placement")}
    header = ["model", "task", "dev error % (paper placement)", "dev error % (sentence)",
              "Δ dev (sentence − paper)", "test error % paper / sentence (items)", "seeds",
              "epochs (best)", "data (sentence)"]  # fmt: skip
    rows = []
    for run in sorted(sentence, key=lambda r: (r.model, _task_key(r.task))):
        base_model = run.model.removesuffix(PLACEMENT_SUFFIX)
        base = by_key.get((base_model, run.task))
        ours, theirs = _dev_errors(run.metrics), _dev_errors(base.metrics) if base else []
        delta = 100 * (_mean(ours) - _mean(theirs)) if ours and theirs else None
        tests = [metric(r.metrics, "test_error") if r else None for r in (base, run)]
        m = run.metrics
        rows.append([
            f"`{base_model}`", run.task, _mean_sd(theirs), _mean_sd(ours), fmt(delta, 1),
            f"{' / '.join(fmt(t, 1, 100) for t in tests)} ({m.get('test_n', DASH)})",
            str(m.get("seeds", DASH)), f"{m.get('epochs_run', DASH)} ({m.get('best_epoch', DASH)})",
            str(m.get("dataset") or DASH),
        ])  # fmt: skip
    lines = ["### Ablation (not in the paper): coreference edge placement", ""]
    lines += [
        "Where a coreference edge leaves and enters a mention. Paper: from the last token of a "
        "mention to the first token of the chain's next mention (the authors' released code, "
        "bdhingra/coref-gru utils/MiniBatchLoader.py). Sentence: in the forward DAG from the "
        "end of the previous mention's sentence, in the backward DAG from the start of the next "
        "mention's sentence (tasks/graphs/dags.py). The paper reports no such ablation.",
        "",
    ]
    lines += _md_table(header, rows)
    return lines + ["", "Metrics files: " + ", ".join(r.path for r in sentence) + ".", ""]


def _dev_errors(metrics: Mapping[str, Any]) -> list[float]:
    """Each seed's dev error (per_seed dev_acc), else the summary's one dev error."""
    per_seed = metrics.get("per_seed") or {}
    errors = [1 - float(v["dev_acc"]) for v in per_seed.values() if "dev_acc" in v]
    single = metric(metrics, "dev_error")
    return errors or ([single] if single is not None else [])


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _above(error_pct: float, limit: float) -> bool:
    """Failed = error above the limit, compared at the precision errors have (counts over a
    few hundred items): the mean of 4, 5 and 6 % is 5.000000000000001 in floats, not failed."""
    return round(error_pct, 6) > limit


def _mean_sd(errors: Sequence[float]) -> str:
    """'mean ± sd' in % over seeds (population sd, as the stage's test_error_std)."""
    if not errors:
        return DASH
    mean = _mean(errors)
    if len(errors) == 1:
        return fmt(mean, 1, 100)
    sd = (sum((e - mean) ** 2 for e in errors) / len(errors)) ** 0.5
    return f"{fmt(mean, 1, 100)} ± {fmt(sd, 1, 100)}"


def _paper_value(table: Mapping, run: Run) -> float | None:
    """The paper's number for this run's cell: error % (babi) or test accuracy (accuracy)."""
    rows = [r for r in table["rows"] if r.get("model") == run.model]
    if not rows:
        return None
    if table["kind"] == "babi":
        return rows[0]["values"].get(run.task)
    for c in table.get("columns") or []:
        if "test_acc" in c["metric"] and c["key"] in rows[0]["values"]:
            return rows[0]["values"][c["key"]]
    return None


def measured(tables: Sequence[Mapping], runs: Sequence[Run]) -> list[Measured]:
    """Per reader run: the selected seed's test error % (or accuracy, as the paper table prints
    it) beside the paper's, with its data, seeds, epochs and device. Headline (metrics/summary):
    a model's mean error over the tasks of a bAbI table we measured (`ga-mage16_babi_err`),
    else the run's own number (`ga_lambada_acc`, `bigru_syn2_err`)."""
    out = []
    for run in runs:
        table = next((t for t in tables if t["kind"] != "runs" and _matches(t, run)), None)
        m = run.metrics
        accuracy = table is not None and table["kind"] == "accuracy"
        ours = metric(m, "test_acc") if accuracy else metric(m, "test_error")
        n = int(m.get("test_n") or 0)
        out.append(
            Measured(
                family="mage",
                table=f"{table['table']} ({table['id']})" if table else "no paper table",
                what=f"`{run.model}` {run.task}",
                metric="test acc" if accuracy else "test error %",
                ours=None if ours is None else (ours if accuracy else round(100 * ours, 1)),
                paper=_paper_value(table, run) if table else None,
                split=f"test ({n} items{', a sample' if 0 < n <= SMALL_TEST * 2 else ''})",
                data=str(m.get("dataset") or DASH),
                seeds=m.get("seeds"),
                budget=f"{m.get('epochs_run', DASH)} epochs (best {m.get('best_epoch', DASH)})",
                device=str(m.get("device") or DASH),
                short=_short(table, run),
            )
        )
    return out


def _short(table: Mapping | None, run: Run) -> str:
    """The run's figure in metrics/summary/mage/ (a bAbI table's runs share one per model)."""
    if table is not None and table["kind"] == "babi":
        return f"{run.model}_{table['id'].removeprefix('mage-')}_err"
    accuracy = table is not None and table["kind"] == "accuracy"
    return f"{run.model}_{run.task}_{'acc' if accuracy else 'err'}"


def table_matches(table: Mapping, runs: Sequence[Run]) -> bool:
    return any(_matches(table, r) for r in runs)


SECTION = Section(
    source="mage",
    kinds=("babi", "accuracy", "runs"),
    load=load_mage_runs,
    render=render,
    render_rest=render_unmatched,
    measured=measured,
    matches=table_matches,
)
