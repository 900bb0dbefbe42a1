"""The report's real-data sections, every figure from a results record (results/, issue #55):
a paper table rebuilt from its records (MAGE Table 1: per-task errors, the mean and failed-task
count beside the paper's), the studies beyond the papers (the gain against coreference
quality, #58.5), and an index of every record with its link.

Why a module of its own: the family sections below render the run in this workspace (the
embedded default's smoke run); these sections never read it, so a real-data figure cannot be
confused with a pipeline check.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tasks.core.errors import CorefreproError
from tasks.report.claims import paper_value
from tasks.report.common import DASH, _md_table, fmt, fold
from tasks.results.records import ppl_metric

RECORDS_LINK = "../results"  # results/ from reports/results.md


def record_link(record_id: str, text: str | None = None) -> str:
    return f"[{text or record_id}]({RECORDS_LINK}/{record_id}.json)"


def mean_sd(per_seed: Mapping[str, float]) -> str:
    """ "m ± sd (n)" over the seeds' values; one seed: "m (1 seed)"."""
    values = [v for v in per_seed.values() if v is not None]
    if not values:
        return DASH
    if len(values) == 1:
        return f"{values[0]:.1f} (1 seed)"
    return f"{statistics.fmean(values):.1f} ± {statistics.stdev(values):.1f} ({len(values)})"


def seeds_of(record: Mapping[str, Any] | None, metric: str) -> dict[str, float]:
    entry = (record or {}).get("metrics", {}).get(metric) or {}
    return {s: v for s, v in (entry.get("per_seed") or {}).items() if v is not None}


# ------------------------------------------------------------------- a paper table, rebuilt


@dataclass(frozen=True)
class TableRecords:
    """paper_results.yaml tables[].records: which records hold our figures of the table."""

    pattern: str  # record id with {model} and {column}
    models: list[str]  # model keys of the table's rows, in the order shown
    metrics: list[str] = field(default_factory=lambda: ["dev_error", "test_error"])


def table_records(table: Mapping[str, Any]) -> TableRecords | None:
    spec = table.get("records")
    if spec is None:
        return None
    try:
        return TableRecords(**spec)
    except TypeError as exc:
        raise CorefreproError(
            f"paper_results.yaml table {table.get('id')}: records: {exc}"
        ) from None


def _per_seed_over_columns(by_column: Mapping[str, Mapping[str, float]], limit: float | None
                           ) -> tuple[dict[str, float], dict[str, float]]:  # fmt: skip
    """seed -> mean over the columns, and seed -> failed count (> limit), over the seeds
    every column has."""
    seeds = set.intersection(*(set(v) for v in by_column.values())) if by_column else set()
    means, failed = {}, {}
    for seed in sorted(seeds, key=int):
        values = [by_column[c][seed] for c in by_column]
        means[seed] = statistics.fmean(values)
        if limit is not None:
            failed[seed] = float(sum(v > limit for v in values))
    return means, failed


def render_table_from_records(table: Mapping[str, Any], paper: Mapping[str, Any],
                              records: Mapping[str, Mapping[str, Any]]) -> list[str]:  # fmt: skip
    """A babi-kind paper table from its records: per column (task) each model's figures per
    metric (mean ± sd over seeds), the paper's, then the mean and the failed count."""
    spec = table_records(table)
    if spec is None:
        return []
    columns = table.get("columns") or []
    rows = {r.get("model"): r for r in table.get("rows", []) if r.get("model")}
    limit = table.get("failed_above")
    found = {(m, c): records.get(spec.pattern.format(model=m, column=c))
             for m in spec.models for c in columns}  # fmt: skip
    if not any(found.values()):
        return []
    header = ["task"] + [f"`{m}` {metric.replace('_', ' ')} %" for m in spec.models
                         for metric in spec.metrics] + [f"paper `{m}`" for m in spec.models]  # fmt: skip
    body = []
    for column in columns:
        cells = [column]
        for model in spec.models:
            record = found[(model, column)]
            for metric in spec.metrics:
                shown = mean_sd(seeds_of(record, metric))
                cells.append(record_link(record["id"], shown) if record else DASH)
        cells += [fmt(paper_value(table, m, column)) for m in spec.models]
        body.append(cells)
    for label, pick in (("mean over the tasks", 0), (f"failed tasks (> {limit:g} %)", 1)):
        cells = [f"**{label}**"]
        for model in spec.models:
            for metric in spec.metrics:
                by_column = {c: seeds_of(found[(model, c)], metric) for c in columns}
                complete = all(by_column.values())
                per_seed = _per_seed_over_columns(by_column, limit)[pick] if complete else {}
                cells.append(mean_sd(per_seed))
        key = "avg" if pick == 0 else "failed"
        cells += [fmt(rows.get(m, {}).get(key)) for m in spec.models]
        body.append(cells)
    first = next(r for r in found.values() if r)
    sizes = {metric: first["metrics"].get(metric, {}).get("split_size") for metric in spec.metrics}
    return [
        f"### {table['table']} of {paper.get('short', table.get('paper'))}, from the records: "
        f"{table['title']}",
        "",
        f"Ours: mean ± sd over seeds (n) of each record ({first.get('preset')} preset, scale "
        f"`{first.get('scale')}`; data {', '.join(sorted(first.get('data', {}))) or DASH}); "
        f"split sizes per task: {', '.join(f'{m} {s}' for m, s in sizes.items())} items (the "
        "mirror's test split is a sample). The mean and the failed count are taken per seed "
        "over all the table's tasks, then over seeds. Paper: the test error of the seed with "
        "the best dev accuracy of 10 (its protocol); ours averages the seeds instead.",
        "",
        *_md_table(header, body),
        "",
    ]


def _reading_rows(table: Mapping[str, Any], model: str, record: Mapping[str, Any] | None
                  ) -> list[tuple[str, str | None]]:  # fmt: skip
    """(label, reading) of `model`'s rows: each reading of the table's `readings` whose metric
    the record holds (EntityNLM's), in the table's order; else its one perplexity (None)."""
    metrics = (record or {}).get("metrics", {})
    rows = [r for r in (table.get("readings") or {}).get("rows", [])
            if ppl_metric("test", r["key"]) in metrics]  # fmt: skip
    if all(r["key"] == "marginal" for r in rows):  # no reading beyond the model's own figure
        return [(f"`{model}`", None)]
    return [(f"`{model}` {r['label']}", r["key"]) for r in rows]


def render_lm_from_records(table: Mapping[str, Any], paper: Mapping[str, Any],
                           records: Mapping[str, Mapping[str, Any]]) -> list[str]:  # fmt: skip
    """An LM table (Ji et al. Table 1) from its records: each model's dev and test perplexity
    (mean ± sd over training seeds), EntityNLM's under each reading of §5.1, the paper's
    figure beside the model's own row, or beside the reading the table calls comparable."""
    spec = table_records(table)
    found = {m: records.get(spec.pattern.format(model=m)) for m in spec.models} if spec else {}
    if not any(found.values()):
        return []
    comparable = (table.get("readings") or {}).get("comparable")
    body = []
    for model, record in found.items():
        for label, reading in _reading_rows(table, model, record):
            paper_cell = reading in (None, comparable)
            body.append([label, *(_cell(record, ppl_metric(split, reading))
                                   for split in ("dev", "test")),
                         fmt(paper_value(table, model, "test_ppl"), table.get("digits", 1))
                         if paper_cell else DASH])  # fmt: skip
    first = next(r for r in found.values() if r)
    sizes = {s: first["metrics"].get(ppl_metric(s), {}).get("split_size") for s in ("dev", "test")}
    return [
        f"### {table['table']} of {paper.get('short', table.get('paper'))}, from the records: "
        f"{table['title']}, under each reading",
        "",
        f"Ours: perplexity, mean ± sd over training seeds (n) of each record ({first.get('preset')} "
        f"preset, scale `{first.get('scale')}`; data {', '.join(sorted(first.get('data', {}))) or DASH}; "
        f"{', '.join(f'{s} {n} tokens' for s, n in sizes.items())}). EntityNLM's readings of §5.1 "
        f"are figures of the same checkpoints; the paper's number stands beside `{comparable}`, "
        "its text's reading. Whether each ordering holds beyond the spread: the claims above.",
        "",
        *_md_table(["row", "dev ppl", "test ppl", "paper test ppl"], body),
        "",
    ]


FROM_RECORDS = {"babi": render_table_from_records, "entitynlm_lm": render_lm_from_records}


def table_from_records(table: Mapping[str, Any], paper: Mapping[str, Any],
                       records: Mapping[str, Mapping[str, Any]]) -> list[str]:  # fmt: skip
    """A paper table rebuilt from its records, by the table's kind (none without `records`)."""
    if table.get("records") is None:
        return []
    render = FROM_RECORDS.get(table.get("kind"))
    if render is None:
        raise CorefreproError(f"paper_results.yaml table {table.get('id')}: records: no "
                              f"rendering for kind {table.get('kind')!r} (known: "
                              f"{', '.join(FROM_RECORDS)})")  # fmt: skip
    return render(table, paper, records)


# ------------------------------------------------------------------- a study beyond the papers


@dataclass(frozen=True)
class QualityStudy:
    """paper_results.yaml studies[]: a reader's error against the quality of its coreference."""

    id: str
    title: str
    tasks: list[str]
    levels: list[str]  # corruption names, e.g. drop10 (the order shown)
    records: str  # the reader's record id, {level} and {task} filled in
    clean: str  # the same reader on the uncorrupted links (p = 0), {task}
    quality: str  # the corrupted links' score record, {level}
    reference: str | None = None  # the reader without coreference, {task}
    metric: str = "dev_error"
    quality_metric: str = "conll_f1"
    note: str = ""
    # other annotators' links (name -> its row's label): the reader's records are `records`
    # with {level} the annotator, their score against the reference annotation
    # `annotator_quality` ({annotator}); a row each where any of its records exists
    annotators: dict[str, str] = field(default_factory=dict)
    annotator_quality: str | None = None
    annotator_note: str = ""  # said after the note where an annotator row is shown


def parse_studies(spec: Mapping[str, Any]) -> list[QualityStudy]:
    studies = []
    for i, entry in enumerate(spec.get("studies") or []):
        try:
            studies.append(QualityStudy(**entry))
        except TypeError as exc:
            raise CorefreproError(f"paper_results.yaml studies[{i}]: {exc}") from None
    return studies


def _mode(level: str) -> str:
    """drop25 -> drop: a series per kind of corruption."""
    return level.rstrip("0123456789")


def study_points(study: QualityStudy, records: Mapping[str, Mapping[str, Any]]
                 ) -> dict[str, list[tuple[float, dict[str, float], str]]]:  # fmt: skip
    """ "<task>, <mode>" -> [(the links' CoNLL F1, seed -> error, record id)], each series
    from p = 0 (F1 100) through its corruption levels."""
    out: dict[str, list] = {}
    for task in study.tasks:
        clean = records.get(study.clean.format(task=task))
        start = [(100.0, seeds_of(clean, study.metric), clean["id"])] if clean else []
        for level in study.levels:
            reader = records.get(study.records.format(level=level, task=task))
            f1 = seeds_of(records.get(study.quality.format(level=level)), study.quality_metric)
            series = out.setdefault(f"{task}, {_mode(level)}", list(start))
            if reader and f1:
                series.append((statistics.fmean(f1.values()), seeds_of(reader, study.metric),
                               reader["id"]))  # fmt: skip
    return out


def annotator_f1(study: QualityStudy, annotator: str, records: Mapping[str, Mapping[str, Any]],
                 task: str | None = None) -> float | None:  # fmt: skip
    """The annotator's links scored against the reference annotation: on `task`'s graphs where
    its record has that figure (`<quality_metric>_<task>`), else on every graph (None: no
    record)."""
    if study.annotator_quality is None:
        return None
    quality = records.get(study.annotator_quality.format(annotator=annotator))
    f1 = seeds_of(quality, f"{study.quality_metric}_{task}") if task else {}
    f1 = f1 or seeds_of(quality, study.quality_metric)
    return statistics.fmean(f1.values()) if f1 else None


def annotator_points(study: QualityStudy, records: Mapping[str, Mapping[str, Any]]
                     ) -> dict[str, tuple[float, dict[str, float], str]]:  # fmt: skip
    """ "<task>, <annotator>" -> (its links' CoNLL F1 on the task's graphs, seed -> error,
    record id): a point each where both the score and the reader's record exist, on the
    corruption series' axis."""
    out = {}
    for annotator in study.annotators:
        for task in study.tasks:
            f1 = annotator_f1(study, annotator, records, task)
            reader = records.get(study.records.format(level=annotator, task=task))
            if reader and f1 is not None:
                out[f"{task}, {annotator}"] = (f1, seeds_of(reader, study.metric), reader["id"])
    return out


def _annotator_rows(study: QualityStudy, records: Mapping[str, Mapping[str, Any]]
                    ) -> list[list[str]]:  # fmt: skip
    """A table row per annotator any of whose records exists ("—" where one is missing): its
    links' F1 per task (one figure where its record has no task's), the reader's error."""
    rows = []
    for annotator, label in study.annotators.items():
        readers = [records.get(study.records.format(level=annotator, task=t))
                   for t in study.tasks]  # fmt: skip
        quality = (records.get(study.annotator_quality.format(annotator=annotator))
                   if study.annotator_quality else None)  # fmt: skip
        if quality is None and not any(readers):
            continue
        per_task = [annotator_f1(study, annotator, records, t) for t in study.tasks]
        overall = annotator_f1(study, annotator, records)
        if quality is None or overall is None:
            f1 = DASH
        elif any(seeds_of(quality, f"{study.quality_metric}_{t}") for t in study.tasks):
            f1 = " / ".join(DASH if v is None else f"{v:.1f}" for v in per_task) + " (per task)"
        else:
            f1 = f"{overall:.1f}"
        rows.append([label, f1] + [_cell(r, study.metric) for r in readers])
    return rows


def render_study(study: QualityStudy, records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    points = study_points(study, records)
    annotators = _annotator_rows(study, records)
    if not any(len(p) > 1 for p in points.values()) and not annotators:
        return []
    header = ["coreference", "CoNLL F1 of the links %"] + [f"{t} {study.metric} %"
                                                           for t in study.tasks]  # fmt: skip
    body = [
        ["annotation (p = 0)", "100.0"]
        + [_cell(records.get(study.clean.format(task=t)), study.metric) for t in study.tasks]
    ]
    for level in study.levels:
        f1 = seeds_of(records.get(study.quality.format(level=level)), study.quality_metric)
        cells = [level, f"{statistics.fmean(f1.values()):.1f}" if f1 else DASH]
        cells += [_cell(records.get(study.records.format(level=level, task=t)), study.metric)
                  for t in study.tasks]  # fmt: skip
        body.append(cells)
    body += annotators
    if study.reference:
        body.append(["no coreference memory (reference)", DASH] + [
            _cell(records.get(study.reference.format(task=t)), study.metric)
            for t in study.tasks])  # fmt: skip
    note = " ".join(f"{study.note} {study.annotator_note if annotators else ''}".split())
    return [f"### {study.title}", "", note, "", *_md_table(header, body), ""]


def _cell(record: Mapping[str, Any] | None, metric: str) -> str:
    """A record's figure, linked: mean ± sd over its seeds, or as stated where it has none
    (a seedless estimator such as the 5-gram)."""
    entry = (record or {}).get("metrics", {}).get(metric)
    if not entry:
        return DASH
    per_seed = seeds_of(record, metric)
    return record_link(record["id"], mean_sd(per_seed) if per_seed else _stated_cell(entry))


def _stated_cell(metric: Mapping[str, Any]) -> str:
    """A figure a record states without seeds: one decimal, as mean_sd."""
    mean, sd, n = metric.get("mean"), metric.get("sd"), metric.get("n")
    if mean is None:
        return DASH
    return f"{mean:.1f} (seedless)" if sd is None else f"{mean:.1f} ± {sd:.1f} ({n}, stated)"


# ------------------------------------------------------------------- every record


def render_index(records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Every record, a line each, folded: what it measured, its figures and its link."""
    header = ["record", "paper, table, row", "figures: mean ± sd (n), split (size)", "source",
              "scale"]  # fmt: skip
    body = []
    for rid, record in sorted(records.items()):
        figures = "; ".join(
            f"{name} {_stated(m)}, {m.get('split')} ({m.get('split_size') or DASH})"
            for name, m in sorted(record.get("metrics", {}).items())
        )
        body.append([record_link(rid), f"{record.get('paper')}, {record.get('table')}, "
                     f"{record.get('row')}", figures,
                     "run" if record.get("source") == "run" else "transcribed, no run",
                     record.get("scale") or DASH])  # fmt: skip
    return fold(f"Every results record ({len(records)})", _md_table(header, body))


def _stated(metric: Mapping[str, Any]) -> str:
    mean, sd, n = metric.get("mean"), metric.get("sd"), metric.get("n")
    if mean is None:
        return DASH
    return f"{mean:.2f}" + (f" ± {sd:.2f}" if sd is not None else "") + f" ({n})"


def real_data_section(spec: Mapping[str, Any], records: Mapping[str, Mapping[str, Any]],
                      figure_names: Mapping[str, str]) -> list[str]:  # fmt: skip
    """The report's second section: real-data results from the records."""
    if not records:
        return []
    lines = ["## Real-data results, from the records", "",
             "Every figure here is a results record in `results/` (its link): the runs, commit, "
             "settings, data digests and host that made it. None comes from this workspace's "
             "run.", ""]  # fmt: skip
    papers = spec.get("papers", {})
    for table in spec.get("tables", []):
        lines += table_from_records(table, papers.get(table.get("paper"), {}), records)
    for study in parse_studies(spec):
        lines += render_study(study, records)
    for title, name in figure_names.items():
        lines += [f"![{title}]({name})", ""]
    return [*lines, *render_index(records), ""]


def study_series(spec: Mapping[str, Any], records: Mapping[str, Mapping[str, Any]]
                 ) -> list[tuple[QualityStudy, Mapping[str, Sequence], Mapping[str, tuple]]]:  # fmt: skip
    """What the study figures draw: each study with its series per task and corruption, and
    its other annotators' points."""
    return [(s, study_points(s, records), annotator_points(s, records))
            for s in parse_studies(spec)]  # fmt: skip


__all__ = ["real_data_section", "record_link", "study_series", "table_records"]
