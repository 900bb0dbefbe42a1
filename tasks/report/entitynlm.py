"""The EntityNLM family's part of reports/results.md (Ji et al. 2017, issue #13).

Table 1 (language modelling): the perplexity of the 5-gram, the RNNLM and EntityNLM (words
only, R/E/L marginalised by importance sampling, Eq. 11) on dev and test beside the paper's
test numbers. Reads every metrics/train_entitynlm/<model>.json by its "model" key
(models/entitynlm/train.py summarize: dev_ppl / test_ppl as {mean, std, n}; a file of another
stage, e.g. the 5-gram's, may give plain numbers there). After the tables: whatever the
reranking (Table 2) and entity-prediction (Table 3) stages wrote under
metrics/rerank_entitynlm/ and metrics/entity_prediction/, rendered as is (their numbers
beside the paper's are those stages' own sections).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tasks.core.config import resolve_path
from tasks.core.errors import DataError
from tasks.report.common import (
    DASH,
    Family,
    Measured,
    Run,
    _display,
    _key,
    _md_table,
    _read_json,
    _table_heading,
    cell,
    fmt,
    metric,
)

EXTRA_DIRS = {"Table 2 (coreference reranking)": "metrics/rerank_entitynlm",
              "Table 3 (entity prediction)": "metrics/entity_prediction"}  # fmt: skip


def load_runs(root: str | Path) -> dict[str, Run]:
    """metrics/train_entitynlm/<model>.json by "model"; empty when the directory is absent."""
    root = Path(root)
    out: dict[str, Run] = {}
    for path in sorted(root.glob("*.json")) if root.is_dir() else []:
        data = _read_json(path)
        model = _key(data, "model", path)
        if model in out:
            raise DataError(path, f"model {model!r} again (also in {out[model].path})")
        out[model] = Run(model, "", str(data.get("dataset") or ""), _display(path), data)
    return out


def _ppl(stat: Any) -> str:
    """A perplexity: a number, or {mean, std} (the IS spread / seeds) as 'mean ± std'."""
    if isinstance(stat, int | float) and not isinstance(stat, bool):
        return fmt(float(stat), 2)
    if not isinstance(stat, Mapping) or stat.get("mean") is None:
        return DASH
    std = stat.get("std")
    return fmt(stat["mean"], 2) + ("" if not std else f" ± {fmt(std, 2)}")


def _is_spread(m: Mapping[str, Any], split: str) -> str:
    """EntityNLM: the spread of the estimate over sampling seeds (selected training seed)."""
    stat = (((m.get("selected") or {}).get(split) or {}).get("is_ppl")) or {}
    if not stat:
        return DASH
    return f"± {fmt(stat.get('std'), 2)} over {stat.get('n', DASH)} sampling seeds"


def render_lm(table: Mapping, runs: Mapping[str, Run], papers: Mapping) -> list[str]:
    datasets = sorted({r.corpus or DASH for r in runs.values()})
    lines = _table_heading(table, papers)
    lines += [f"Our numbers are on {', '.join(f'`{d}`' for d in datasets) or DASH} "
              "(params.yaml train_entitynlm.runs), the paper's on CoNLL-2012 (10K vocabulary): "
              "compare the order of the models, not the absolute values. Cells: ours (paper); "
              "EntityNLM's perplexity is words only with R, E, L marginalised by importance "
              "sampling (Eq. 11), mean over sampling seeds.", ""]  # fmt: skip
    body = []
    for prow in table["rows"]:
        run = runs.get(prow.get("model") or "")
        m = run.metrics if run else {}
        paper = prow["values"].get("test_ppl")
        body.append([prow["paper_row"], f"`{prow['model']}`" if prow.get("model") else DASH,
                     cell(_ppl(m.get("test_ppl")), None if paper is None else fmt(paper, 2)),
                     _ppl(m.get("dev_ppl")), _is_spread(m, "test"),
                     str(m.get("vocab_size", DASH)),
                     str((m.get("tokens") or {}).get("test", DASH))])  # fmt: skip
    lines += _md_table(["Paper row", "ours", "test ppl", "dev ppl", "IS spread (test)",
                        "vocab", "test tokens"], body)  # fmt: skip
    lines += ["", f"Metrics files: {', '.join(runs[k].path for k in sorted(runs)) or 'none'}.", ""]
    return lines


def _flat(data: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(data, Mapping):
        return [kv for k, v in data.items() for kv in _flat(v, f"{prefix}{k}.")]
    return [(prefix[:-1], data)] if isinstance(data, int | float | str) else []


def render_rest(tables: Sequence[Mapping], runs: Any, papers: Mapping, annotation) -> list[str]:
    """The metrics files of the reranking and entity-prediction stages, when present."""
    lines: list[str] = []
    for title, folder in EXTRA_DIRS.items():
        root = resolve_path(folder)
        files = sorted(root.glob("*.json")) if root.is_dir() else []
        if not files:
            continue
        lines += [f"## Ji et al. 2017 (EntityNLM), {title}: measured", ""]
        for path in files:
            data = json.loads(path.read_text(encoding="utf-8"))
            rows = [[k, fmt(v, 4) if isinstance(v, float) else str(v)] for k, v in _flat(data)]
            lines += [f"`{_display(path)}`", ""] + _md_table(["key", "value"], rows) + [""]
    return lines


def render(table: Mapping, runs: Mapping[str, Run], papers: Mapping, annotation) -> list[str]:
    return render_lm(table, runs, papers)


def _mean(stat: Any) -> float | None:
    if isinstance(stat, int | float) and not isinstance(stat, bool):
        return float(stat)
    return metric(stat, "mean") if isinstance(stat, Mapping) else None


def measured(tables: Sequence[Mapping], runs: Mapping[str, Run]) -> list[Measured]:
    """Per model: test perplexity beside the paper's Table 1 (CoNLL-2012: never comparable
    in absolute value unless ours ran on ontonotes)."""
    table = next((t for t in tables if t["kind"] == "entitynlm_lm"), None)
    paper = {r["model"]: r["values"] for r in (table or {}).get("rows", []) if r.get("model")}
    out = []
    for model in sorted(runs):
        m = runs[model].metrics
        n = (m.get("tokens") or {}).get("test")
        out.append(Measured(
            family="entitynlm",
            table=f"{table['table']} ({table['id']})" if table else "no paper table",
            what=f"`{model}`",
            metric="test perplexity" + (" (IS, Eq. 11)" if model == "entitynlm" else ""),
            ours=_mean(m.get("test_ppl")),
            paper=paper.get(model, {}).get("test_ppl"),
            split=f"test ({n} tokens)" if n else "test",
            data=str(m.get("dataset") or DASH),
            seeds=m.get("seeds"),
            budget=f"{m.get('epochs_run', DASH)} epochs",
            device=str(m.get("device") or DASH),
            comparable="ontonotes" in str(m.get("dataset") or ""),
        ))  # fmt: skip
    return out


FAMILY = Family(
    source="entitynlm",
    load=load_runs,
    render=render,
    render_rest=render_rest,
    measured=measured,
    matches=lambda table, runs: bool(runs),
)
