"""CoreLM's Tables 1 and 2 (Stylianou & Vlahavas, papers/003) beside our measured numbers.

Reads metrics/train_corelm/<model>.json (flows/train_corelm.py) and the paper's
numbers from tasks/report/paper_results.yaml `corelm`. Our backbone is whatever
train_corelm.backbone names (stated in every table): SmolLM2 numbers are that backbone's,
never GPT-2's. Perplexity is word-level (per whitespace word, the paper's "per word
prediction"); token-level figures stay in the metrics files. A missing number is "—".

Which measurement fills which cell (papers/003 §4: "The entity-aware fine-tuned LM is
evaluated on GUMBY, using the created entity representations during Fine-Tuning and in a
Zero-Shot setting, without any further training, on LAMBADA, WikiText2, WikiText103"; App. A:
"During Zero-Shot evaluation we do not use any entity information"): CoreLM's held-out cell is
scored with the training corpora's entities (metrics key "corelm+coref" of `heldout`), its
zero-shot cells without; the no-entity held-out figure is printed under Table 1. The
"CoreLM + coreference" row holds the zero-shot corpora scored with a coreference run's
entities (Table 2's row of the paper).

    python -m tasks.report.corelm [metrics dir] [artifacts dir]    # prints the section
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tasks.core.config import resolve_path
from tasks.report.common import Measured, Section
from tasks.results.records import CBT

DASH = "—"
ROWS = {"zeroshot": "backbone zero-shot", "ft": "backbone FT", "corelm": "CoreLM",
        "corelm+coref": "CoreLM + coreference"}  # fmt: skip


def load(metrics_dir: str | Path = "metrics/train_corelm") -> dict[str, dict]:
    root = resolve_path(metrics_dir)
    files = sorted(root.glob("*.json")) if root.is_dir() else []
    return {p.stem: json.loads(p.read_text()) for p in files}


def _fmt(x: Any, scale: float = 1.0) -> str:
    return DASH if x is None else f"{x * scale:.2f}"


def _get(d: Mapping, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, Mapping) or k not in d:
            return None
        d = d[k]
    return d


def _ppl(runs: Mapping[str, dict], row: str, column: str) -> Any:
    model, coref = row.split("+")[0], "+coref" in row
    m = runs.get(model) or {}
    name = model + ("+coref" if coref else "")
    if column == "gumby":  # CoreLM: with the corpora's own entities (module docstring)
        if coref:
            return None
        with_entities = _get(m, "heldout", f"{model}+coref", "word_perplexity")
        return with_entities if model == "corelm" else _get(m, "heldout", name, "word_perplexity")
    if column in ("wikitext2", "wikitext103"):
        return _get(m, column, name, "word_perplexity")
    if column == "lambada":
        return _get(m, "lambada", f"{name}/full_word", "perplexity")
    return None


def _acc(runs: Mapping[str, dict], row: str, column: str, convention: str) -> Any:
    model = row.split("+")[0]
    m = runs.get(model) or {}
    if column == "lambada":
        return _get(m, "lambada", f"{row}/{convention}", "accuracy")
    return _get(m, "cbt", f"{row}/{CBT[column]}", "accuracy")


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _budget(runs: Mapping[str, dict]) -> list[str]:
    out = []
    for model in ("ft", "corelm"):
        t = _get(runs, model, "training") or {}
        if t:
            batch = t.get("effective_batch_size")
            of = f" of {batch} windows" if batch else ""
            out.append(f"{model}: {t.get('steps')} steps{of} ({t.get('epochs')} epochs, "
                       f"{t.get('train_tokens_per_epoch')} tokens/epoch), "
                       f"mode {runs[model].get('mode')}{_choices(runs[model])}")  # fmt: skip
    return out


def _choices(m: Mapping[str, Any]) -> str:
    """The readings a run was trained under (models/corelm/train.py), where it says."""
    if m.get("ft_backbone"):
        return f", backbone {m['ft_backbone']}"
    g = m.get("gating") or {}
    keys = ("entity_vectors", "mention_mean", "gate", "norm")
    return (", " + ", ".join(f"{k} {g[k]}" for k in keys if k in g)) if g else ""


def _heldout_note(runs: Mapping[str, dict]) -> list[str]:
    """Which split the held-out column is and CoreLM's held-out figure without entities."""
    split = next((m.get("heldout_split") for m in runs.values() if m.get("heldout_split")), None)
    plain = _get(runs, "corelm", "heldout", "corelm", "word_perplexity")
    notes = []
    if split:
        notes.append(f"held-out = the `{split}` split of the fine-tuning data (checkpoints are "
                     "selected on `dev`)")  # fmt: skip
    if plain is not None:
        notes.append(f"CoreLM on the held-out split without entities: {_fmt(plain)}")
    return ["", "Held-out column: " + "; ".join(notes) + "."] if notes else []


def render_section(runs: Mapping[str, dict], paper: Mapping[str, Any]) -> list[str]:
    backbone = next((m.get("backbone") for m in runs.values()), DASH)
    data = next((m.get("data") for m in runs.values()), None)
    t1, t2 = paper["table1"], paper["table2"]
    lines = ["## CoreLM (Stylianou & Vlahavas), Tables 1-2", "",
             f"Our backbone: `{backbone}` (paper: GPT-2 small); fine-tuning data: "
             f"{'+'.join(data or []) or DASH} (paper: GUMBY). Training budget: "
             + ("; ".join(_budget(runs)) or DASH) + ".", "",
             "Table 1, word-level perplexity (ours / paper): per whitespace word of the "
             "original text, as GPT-2 and lm-evaluation-harness's word_perplexity count "
             "(WikiText: the detokenized article scored, its original tokens counted), each "
             "text in rolling windows of the model's context (tasks/evaluation/lm.py).", "",
             _line(["model", "held-out (paper: GUMBY)", "LAMBADA", "WikiText-2", "WikiText-103"]),
             _line(["---"] * 5)]  # fmt: skip
    for row in ("zeroshot", "ft", "corelm", "corelm+coref"):
        paper_row = t1["rows"].get(row)
        cells = [ROWS[row]]
        for k, col in enumerate(t1["columns"]):
            ours = _fmt(_ppl(runs, row, col))
            cells.append(f"{ours} / {_fmt(paper_row[k]) if paper_row else DASH}")
        lines.append(_line(cells))
    lines += _heldout_note(runs)
    lines += ["", "Table 2, accuracy % (ours full-word, ours last-BPE-token / paper):", "",
              _line(["model", "LAMBADA", "CBT-CN", "CBT-NE", "CBT-V", "CBT-P"]),
              _line(["---"] * 6)]  # fmt: skip
    for row in ("zeroshot", "ft", "corelm", "corelm+coref"):
        paper_row = t2["rows"].get(row)
        cells = [ROWS[row]]
        for k, col in enumerate(t2["columns"]):
            full = _fmt(_acc(runs, row, col, "full_word"), 100)
            last = _fmt(_acc(runs, row, col, "last_token"), 100) if col == "lambada" else None
            ours = f"{full}, {last}" if last else full
            cells.append(f"{ours} / {_fmt(paper_row[k]) if paper_row else DASH}")
        lines.append(_line(cells))
    return [*lines, "", *curve_section(runs)]


def curve_section(runs: Mapping[str, dict]) -> list[str]:
    """The learning curves (train_corelm.eval.curve_docs, the metrics' "curve"), FT beside
    CoreLM at each optimizer step: held-out word perplexity (CoreLM with and without
    entities), the gate's sigmoid(w) and the entity path's nominal and measured share; the
    first batch's loss beside the gate's initial share. None recorded: no lines."""
    curves = {m: runs[m]["curve"] for m in ("ft", "corelm") if (runs.get(m) or {}).get("curve")}
    if not curves:
        return []
    by_step: dict[int, dict[str, dict]] = {}
    for model, curve in curves.items():
        for point in curve["points"]:
            by_step.setdefault(int(point["step"]), {})[model] = point
    any_curve = next(iter(curves.values()))
    lines = ["Learning curves: held-out word perplexity on the first "
             f"{any_curve['heldout_docs']} `{any_curve['heldout_split']}` documents, a point "
             f"every {any_curve['every_steps']} optimizer steps of {any_curve['schedule_steps']} "
             "(step 0: untrained); CoreLM's gate sigmoid(w) and the entity path's share of the "
             "mix (nominal; measured by norm on the first dev batch).", "",
             _line(["step", "FT", "CoreLM", "CoreLM without entities", "sigmoid(w)",
                    "entity share", "entity share (norm)"]),
             _line(["---"] * 7)]  # fmt: skip
    for step, points in sorted(by_step.items()):
        ft, co = points.get("ft") or {}, points.get("corelm") or {}
        keys = ("heldout_word_ppl_no_entities", "gate_sigmoid_mean", "entity_share_mean",
                "entity_norm_share")  # fmt: skip
        lines.append(_line([str(step), _fmt(ft.get("heldout_word_ppl")),
                            _fmt(co.get("heldout_word_ppl")), *(_fmt(co.get(k)) for k in keys)]))  # fmt: skip
    first = [f"{ROWS[m]} {_fmt(c.get('first_step_loss'))}" for m, c in curves.items()]
    share = (curves.get("corelm") or {}).get("initial", {}).get("entity_share_mean")
    lines += ["", "First training batch's loss: " + ", ".join(first)
              + (f" (CoreLM's initial entity share {_fmt(share)})" if share is not None else "")
              + ".", ""]  # fmt: skip
    return lines


def paired_tests(artifacts_dir: str | Path, convention: str = "full_word") -> list[str]:
    """Paired t-tests on per-passage LAMBADA correctness (papers/003 Table 2 uses a paired
    t-test), CoreLM against the backbone zero-shot and FT, from <artifacts>/<model>/items.json.
    tasks/evaluation/significance.paired_t_test (scipy's ttest_rel)."""
    from tasks.evaluation.significance import paired_t_test

    root = resolve_path(artifacts_dir)

    def items(model: str) -> dict:
        path = root / model.split("+")[0] / "items.json"
        return json.loads(path.read_text()) if path.is_file() else {}

    lines = []
    for a, b in [("corelm", "zeroshot"), ("corelm", "ft"), ("corelm+coref", "corelm")]:
        xa = items(a).get(f"lambada/{a}/{convention}")
        xb = items(b).get(f"lambada/{b}/{convention}")
        if not xa or not xb or len(xa) != len(xb):
            continue
        if xa == xb:
            lines.append(f"- {ROWS[a]} vs {ROWS[b]} (LAMBADA {convention}): identical predictions")
            continue
        t = paired_t_test([float(v) for v in xa], [float(v) for v in xb])
        lines.append(
            f"- {ROWS[a]} vs {ROWS[b]} (LAMBADA {convention}, n={len(xa)}): "
            f"t = {t.statistic:.3f}, p = {t.p_value:.3g}"
        )
    return lines


def render(
    metrics_dir: str | Path = "metrics/train_corelm",
    artifacts_dir: str | Path = "artifacts/train_corelm",
    paper_results: str | Path = "tasks/report/paper_results.yaml",
) -> list[str]:
    """The section: Tables 1-2 beside the paper's, then the paired t-tests on LAMBADA."""
    paper = yaml.safe_load(resolve_path(paper_results).read_text())["corelm"]
    tests = [t for c in ("full_word", "last_token") for t in paired_tests(artifacts_dir, c)]
    extra = ["Paired t-tests (scipy ttest_rel on per-passage correctness):", "", *tests, ""]
    return [*render_section(load(metrics_dir), paper), *(extra if tests else [])]


def _paper() -> Mapping[str, Any]:
    return yaml.safe_load(resolve_path("tasks/report/paper_results.yaml").read_text())["corelm"]


def measured(tables: Any, runs: Mapping[str, dict]) -> list[Measured]:
    """Per model: word perplexity (held-out, WikiText-2) and LAMBADA accuracy in both
    conventions beside the paper's GPT-2 numbers (comparable only with the gpt2 backbone)."""
    if not runs:
        return []
    paper = _paper()
    t1, t2 = paper["table1"], paper["table2"]
    out = []
    for model in ("zeroshot", "ft", "corelm"):
        m = runs.get(model)
        if not m:
            continue
        common_ = {"family": "corelm", "data": "+".join(m.get("data") or []) or DASH,
                   "seeds": 1, "device": str(m.get("device") or DASH),
                   "budget": f"{_get(m, 'training', 'steps') or 0} steps",
                   "comparable": m.get("backbone") == "gpt2"}  # fmt: skip
        p1, p2 = t1["rows"].get(model), t2["rows"].get(model)
        for col, label in (("gumby", "held-out"), ("wikitext2", "WikiText-2")):
            k = t1["columns"].index(col)
            out.append(Measured(table="Table 1", what=f"`{model}` ({m.get('backbone')})",
                                metric=f"{label} word ppl", ours=_ppl(runs, model, col),
                                paper=p1[k] if p1 else None,
                                split=f"{m.get('heldout_split') or 'held-out'} / valid",
                                short=f"{model}_ppl" if col == "gumby" else None,
                                **common_))  # fmt: skip
        for convention in ("full_word", "last_token"):
            acc = _acc(runs, model, "lambada", convention)
            out.append(Measured(table="Table 2", what=f"`{model}` ({m.get('backbone')})",
                                metric=f"LAMBADA acc % ({convention})",
                                ours=None if acc is None else round(100 * acc, 2),
                                paper=p2[0] if p2 else None, split="LAMBADA dev",
                                short=f"{model}_lambada_acc" if convention == "full_word"
                                else None, **common_))  # fmt: skip
    return [r for r in out if r.ours is not None]


def render_rest(tables: Any, runs: Mapping[str, dict], papers: Any, annotation: Any) -> list[str]:
    """The CoreLM section after the paper tables (its numbers live under `corelm` in the
    paper yaml, not in `tables`)."""
    if not runs:
        return []
    tests = [t for c in ("full_word", "last_token") for t in paired_tests(ARTIFACTS, c)]
    extra = ["Paired t-tests (on per-passage correctness):", "", *tests, ""]
    return [*render_section(runs, _paper()), *(extra if tests else [])]


ARTIFACTS = "artifacts/train_corelm"
SECTION = Section(
    source="corelm",
    kinds=(),  # its section reads paper_results.yaml `corelm`: no table kind
    load=load,
    render=lambda *_: [],
    render_rest=render_rest,
    measured=measured,
    matches=lambda table, runs: bool(runs),
)


if __name__ == "__main__":
    import sys

    print("\n".join(render(*sys.argv[1:3])))  # [metrics dir] [artifacts dir]
