"""The EntityNLM family's part of reports/results.md (Ji et al. 2017, issue #13).

Table 1 (language modelling): the perplexity of the 5-gram, the RNNLM and EntityNLM (words
only, R/E/L marginalised by importance sampling, Eq. 11) on dev and test beside the paper's
test numbers; where the metrics hold EntityNLM's readings of §5.1 (flows/train_entitynlm.py
`readings_summary`, issue #56.1), EntityNLM's row is the reading paper_results.yaml names
`comparable` and the others follow it, with whether EntityNLM < RNNLM < 5-gram holds under
each. Reads every metrics/train_entitynlm/<model>.json by its "model" key
(flows/train_entitynlm.py summarize and models/entitynlm/ngram.py: dev_ppl / test_ppl as
{mean, std, n}; plain numbers are read too).

Table 2 (coreference reranking, §5.2): metrics/rerank_entitynlm/<corpus>.json of the
rerank_entitynlm stage (MUC/B3/CEAF-e P, R, F1 and CoNLL of the 1-best and the two rerankers
on test, alpha, approximate-randomization p-values). Table 3 (entity prediction, §5.3):
metrics/entity_prediction/<corpus>.json (accuracy per predictor on test). Both directories
are the siblings of the family's metrics directory (params.yaml report.metrics.entitynlm).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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

RERANK_DIR, PREDICTION_DIR = "rerank_entitynlm", "entity_prediction"  # siblings of the LM dir
SYSTEMS = ("baseline", "rerank_lm", "rerank_combined")  # models/entitynlm/rerank.evaluate


@dataclass
class EntityNLMRuns:
    """The family's metrics: LM runs by model (Table 1), reranking and entity-prediction
    results by corpus (Tables 2 and 3)."""

    lm: dict[str, Run] = field(default_factory=dict)
    rerank: dict[str, Run] = field(default_factory=dict)
    prediction: dict[str, Run] = field(default_factory=dict)

    def of(self, kind: str) -> dict[str, Run]:
        return {"entitynlm_rerank": self.rerank, "entitynlm_prediction": self.prediction}.get(
            kind, self.lm
        )


def _load_dir(root: Path, key: str) -> dict[str, Run]:
    out: dict[str, Run] = {}
    for path in sorted(root.glob("*.json")) if root.is_dir() else []:
        data = _read_json(path)
        name = _key(data, key, path)
        if name in out:
            raise DataError(path, f"{key} {name!r} again (also in {out[name].path})")
        corpus = str(data.get("dataset") or data.get("corpus") or "")
        out[name] = Run(name, "", corpus, _display(path), data)
    return out


def load_runs(root: str | Path) -> EntityNLMRuns:
    """metrics/train_entitynlm/<model>.json by "model", and the sibling directories'
    <corpus>.json by "corpus"; empty where a directory is absent."""
    root = Path(root)
    return EntityNLMRuns(_load_dir(root, "model"), _load_dir(root.parent / RERANK_DIR, "corpus"),
                         _load_dir(root.parent / PREDICTION_DIR, "corpus"))  # fmt: skip


def _ppl(stat: Any) -> str:
    """A perplexity: a number, or {mean, std} (the IS spread / seeds) as 'mean ± std'."""
    if isinstance(stat, int | float) and not isinstance(stat, bool):
        return fmt(float(stat), 2)
    if not isinstance(stat, Mapping) or stat.get("mean") is None:
        return DASH
    std = stat.get("std")
    return fmt(stat["mean"], 2) + ("" if not std else f" ± {fmt(std, 2)}")


def _is_spread(m: Mapping[str, Any], split: str, n: str | None = None) -> str:
    """EntityNLM: the spread of the estimate over sampling seeds (selected training seed), at
    N = n draws (else the headline N)."""
    scores = (m.get("selected") or {}).get(split) or {}
    if n is not None:
        scores = (scores.get("is_grid") or {}).get(n) or {}
    stat = scores.get("is_ppl") or {}
    if not stat:
        return DASH
    return f"± {fmt(stat.get('std'), 2)} over {stat.get('n', DASH)} sampling seeds"


def _other_samples(m: Mapping[str, Any]) -> list[str]:
    """The Ns EntityNLM was also measured at besides the headline (summarize's
    test_ppl_by_samples), ascending."""
    head = m.get("is_samples")
    return sorted((n for n in m.get("test_ppl_by_samples") or {} if str(head) != n), key=int)


def render_lm(table: Mapping, runs: Mapping[str, Run], papers: Mapping) -> list[str]:
    datasets = sorted({r.corpus or DASH for r in runs.values()})
    enlm = runs["entitynlm"].metrics if "entitynlm" in runs else {}
    head = enlm.get("is_samples")
    lines = _table_heading(table, papers)
    lines += [f"Our numbers are on {', '.join(f'`{d}`' for d in datasets) or DASH} "
              "(params.yaml train_entitynlm.runs), the paper's on CoNLL-2012 (10K vocabulary): "
              "compare the order of the models, not the absolute values. Cells: ours (paper); "
              "EntityNLM's perplexity is words only with R, E, L marginalised by importance "
              f"sampling (Eq. 11, N = {head or DASH} draws per document; the paper's: 100), "
              "mean over sampling seeds; rows `EntityNLM, N = …` are the same model's estimate "
              "at other N (train_entitynlm.evaluation.samples_grid). All three rows are the "
              "token perplexity of the one LM contract (tasks/evaluation/lm.py `perplexity`) "
              "over the same words: every word predicted, no end-of-sentence event.", ""]  # fmt: skip
    comparable, reading_rows = _reading_spec(table)
    readings = enlm.get("readings") or {}
    if comparable in readings:
        lines += [f"EntityNLM's row is reading `{comparable}`, the one the paper's number is "
                  "comparable to; the rows `EntityNLM, (…)` below it are the same model under "
                  "the other readings of §5.1 (models/entitynlm/sampling.py READINGS, issue "
                  "#56.1), ± the sd over training seeds (the IS spread column: over sampling "
                  "seeds, selected training seed).", ""]  # fmt: skip
    body = []
    for prow in table["rows"]:
        run = runs.get(prow.get("model") or "")
        m = run.metrics if run else {}
        paper = prow["values"].get("test_ppl")
        shown = {"test_ppl": m.get("test_ppl"), "dev_ppl": m.get("dev_ppl")}
        ours, spread_cell = f"`{prow['model']}`" if prow.get("model") else DASH, None
        if prow.get("model") == "entitynlm" and comparable in readings:
            shown, ours = readings[comparable], f"`entitynlm` `{comparable}`"
            spread_cell = _reading_spread(m, comparable)
        body.append([prow["paper_row"], ours,
                     cell(_ppl(shown.get("test_ppl")), None if paper is None else fmt(paper, 2)),
                     _ppl(shown.get("dev_ppl")), spread_cell or _is_spread(m, "test"),
                     str(m.get("vocab_size", DASH)),
                     str((m.get("tokens") or {}).get("test", DASH))])  # fmt: skip
        if prow.get("model") == "entitynlm" and comparable in readings:
            body += [[f"EntityNLM, {label}", f"`entitynlm` `{key}`",
                      cell(_ppl(readings[key].get("test_ppl")), None),
                      _ppl(readings[key].get("dev_ppl")), _reading_spread(m, key),
                      str(m.get("vocab_size", DASH)),
                      str((m.get("tokens") or {}).get("test", DASH))]
                     for key, label in reading_rows if key != comparable and key in readings]  # fmt: skip
        if prow.get("model") == "entitynlm":
            body += [[f"EntityNLM, N = {n}", "`entitynlm`",
                      cell(_ppl(m["test_ppl_by_samples"][n]), None),
                      _ppl((m.get("dev_ppl_by_samples") or {}).get(n)), _is_spread(m, "test", n),
                      str(m.get("vocab_size", DASH)),
                      str((m.get("tokens") or {}).get("test", DASH))]
                     for n in _other_samples(m)]  # fmt: skip
    lines += _md_table(["Paper row", "ours", "test ppl", "dev ppl", "IS spread (test)",
                        "vocab", "test tokens"], body)  # fmt: skip
    lines += ["", *_orders(readings, reading_rows, runs), *_bounds(enlm)]
    lines += [f"Metrics files: {', '.join(runs[k].path for k in sorted(runs)) or 'none'}.", ""]
    return lines


def _reading_spec(table: Mapping) -> tuple[str | None, list[tuple[str, str]]]:
    """paper_results.yaml entitynlm-lm `readings`: (the comparable reading, [(key, label)])."""
    spec = table.get("readings") or {}
    return spec.get("comparable"), [(r["key"], r["label"]) for r in spec.get("rows") or []]


def _reading_spread(m: Mapping[str, Any], key: str) -> str:
    """The spread of a reading over sampling seeds (selected training seed): the marginal's
    as `_is_spread`, the draw readings' from the split's `readings`; the gold one is exact."""
    if key == "marginal":
        return _is_spread(m, "test")
    if key == "words_gold":
        return "exact (gold R, E, L)"
    test = (m.get("selected") or {}).get("test") or {}
    stat = (((test.get("readings") or {}).get(key) or {}).get("ppl")) or {}
    if not stat:
        return DASH
    return f"± {fmt(stat.get('std'), 2)} over {stat.get('n', DASH)} sampling seeds"


def _below(a: Any, b: Any) -> str:
    """Whether perplexity a is below b: 'yes, beyond the spread' when the intervals mean ± sd
    do not overlap, 'yes, within the spread', 'no', or — without both figures."""
    ma, mb = _mean(a), _mean(b)
    if ma is None or mb is None:
        return DASH
    sa = (a.get("std") or 0.0) if isinstance(a, Mapping) else 0.0
    sb = (b.get("std") or 0.0) if isinstance(b, Mapping) else 0.0
    if ma >= mb:
        return "no"
    return "yes, beyond the spread" if ma + sa < mb - sb else "yes, within the spread"


def _orders(readings: Mapping[str, Any], rows: Sequence[tuple[str, str]],
            runs: Mapping[str, Run]) -> list[str]:  # fmt: skip
    """Under Table 1: does EntityNLM < RNNLM < 5-gram hold under each reading (test, mean ± sd
    over training seeds)?"""
    if not readings:
        return []
    rnn = (runs["rnnlm"].metrics if "rnnlm" in runs else {}).get("test_ppl")
    five = (runs["5gram"].metrics if "5gram" in runs else {}).get("test_ppl")
    body = [[f"`{key}`", _below(readings[key].get("test_ppl"), rnn), _below(rnn, five)]
            for key, _ in rows if key in readings]  # fmt: skip
    return ["**The paper's order under each reading** (test perplexity, mean ± sd over "
            "training seeds; beyond the spread: the intervals do not overlap):", "",
            *_md_table(["EntityNLM reading", "EntityNLM < RNNLM", "RNNLM < 5-gram"], body),
            ""]  # fmt: skip


def _bounds(m: Mapping[str, Any]) -> list[str]:
    """Under Table 1: EntityNLM's estimate at each N against two lower bounds on log P(x), per
    corpus (test, selected seed; models/entitynlm/sampling.py importance_bounds, issue #33.8)."""
    test = (m.get("selected") or {}).get("test") or {}
    total, by_corpus = test.get("is_bounds"), test.get("is_by_corpus") or {}
    if not total:
        return []
    ns = sorted(total.get("is_ppl") or {}, key=int)
    lines = [f"**EntityNLM's estimate against its bounds** (test, training seed "
             f"{m.get('selected_seed', DASH)}). Eq. 11 averages N importance weights; the mean is "
             "unbiased for P(x), so its log is low on average (Jensen) and rises towards "
             "log P(x) as N grows: a perplexity from N draws is too high on average, the more "
             "so at small N and on long documents (the weights spread more with the words). "
             f"Table 1 keeps N = {m.get('is_samples', DASH)}, the paper's (§5.1), so that its "
             "cell is measured as the paper's is; the columns N = … show how far the figure "
             "still moves with N. Two figures bound log P(x) from below for every document, not "
             "only on average: the best single draw's log P(x, z*) (over every draw of every N "
             "and seed) and the gold annotation's log P(x, z_gold). As perplexities "
             "exp(−Σ/words) they are upper bounds on the true perplexity (bound: the larger of "
             "the two per document); an IS figure above `bound` is too high for certain. "
             "Under bound: (document, sampling seed) estimates below their document's bound, "
             "per N.", ""]  # fmt: skip
    rows = [(f"`{c}`", f) for c, f in sorted(by_corpus.items())]
    if len(rows) != 1:
        rows.append(("all", total))
    body = []
    for name, f in rows:
        docs = f.get("documents") or 0
        per_doc = fmt(f["tokens"] / docs, 0) if docs and f.get("tokens") is not None else DASH
        under = f.get("under_bound") or {}
        body.append([name, str(f.get("documents", DASH)), per_doc,
                     *[_ppl((f.get("is_ppl") or {}).get(n)) for n in ns],
                     _ppl(f.get("best_draw_ppl")), _ppl(f.get("gold_joint_ppl")),
                     _ppl(f.get("bound_ppl")),
                     ", ".join(f"{under.get(n, DASH)}" for n in ns)
                     + f" of {f.get('estimates', DASH)}"])  # fmt: skip
    lines += _md_table(["corpus", "documents", "words / document",
                        *[f"IS ppl, N = {n}" for n in ns], "best draw", "gold joint", "bound",
                        f"under bound (N = {', '.join(ns)})"], body)  # fmt: skip
    return [*lines, ""]


def _pct(value: Any) -> str:
    return fmt(value, 2, 100.0) if isinstance(value, int | float) else DASH


def render_rerank(table: Mapping, runs: Mapping[str, Run], papers: Mapping) -> list[str]:
    """Table 2 per corpus: ours (paper) for each system and column, alpha and p-values."""
    lines = _table_heading(table, papers)
    lines += ["Our numbers rerank the k-best trees of the project's coreference model "
              "(stage kbest; params.yaml kbest) with the EntityNLM of train_entitynlm, on "
              "the corpora named below; the paper reranks cort on CoNLL-2012. "
              "Cells: ours (paper), %.", ""]  # fmt: skip
    columns = list(table["columns"])
    for corpus in sorted(runs) or [None]:
        m = runs[corpus].metrics if corpus else {}
        test = m.get("test") or {}
        body = []
        for prow in table["rows"]:
            ours = test.get(prow.get("model") or "") or {}
            body.append([prow["paper_row"], f"`{prow['model']}`" if prow.get("model") else DASH]
                        + [cell(_pct(ours.get(c)), fmt(prow["values"].get(c), 2))
                           for c in columns])  # fmt: skip
        if corpus:
            p = m.get("p_values") or {}
            lines += [f"Corpus `{corpus}` ({(m.get('documents') or {}).get('test', DASH)} test "
                      f"documents; alpha = {fmt(m.get('alpha'), 2)} on dev; approximate "
                      f"randomization p = {fmt(p.get('rerank_lm'), 4)} (LM alone), "
                      f"{fmt(p.get('rerank_combined'), 4)} (mix), {m.get('trials', DASH)} "
                      f"trials; test documents whose choice moved off the 1-best: "
                      f"{_changed(m.get('changed') or {})}):", ""]  # fmt: skip
        lines += _md_table(["Paper row", "ours", *[COLUMN_NAMES.get(c, c) for c in columns]], body)
        lines += [""]
    files = ", ".join(runs[k].path for k in sorted(runs)) or "none"
    return lines + [f"Metrics files: {files}.", ""]


def _changed(changed: Mapping[str, Any]) -> str:
    names = {"rerank_lm": "LM alone", "rerank_combined": "mix"}
    return ", ".join(f"{names.get(k, k)} {v}" for k, v in sorted(changed.items())) or DASH


COLUMN_NAMES = {"conll_f1": "CoNLL F1", "muc_p": "MUC P", "muc_r": "MUC R", "muc_f1": "MUC F1",
                "bcub_p": "B3 P", "bcub_r": "B3 R", "bcub_f1": "B3 F1", "ceafe_p": "CEAF-e P",
                "ceafe_r": "CEAF-e R", "ceafe_f1": "CEAF-e F1"}  # fmt: skip


def _prediction_split(m: Mapping[str, Any], predictor: str) -> tuple[str, Mapping[str, Any]]:
    """The test figures of a predictor: `test`, else the InScript sample's `test_sample`."""
    per = (m.get("accuracy") or {}).get(predictor) or {}
    for split in ("test", "test_sample"):
        if split in per:
            return split, per[split]
    return "test", {}


def render_prediction(table: Mapping, runs: Mapping[str, Run], papers: Mapping) -> list[str]:
    """Table 3: accuracy per predictor and corpus beside the paper's (InScript test)."""
    lines = _table_heading(table, papers)
    lines += ["Our numbers are on the corpora named in the columns (params.yaml "
              "entity_prediction.corpora; the embedded default's `synthetic` stories are not "
              "InScript). Cells: ours (paper), accuracy %.", ""]  # fmt: skip
    corpora = sorted(runs)
    body = []
    rows = [(r["paper_row"], r.get("model"), fmt(r["values"].get("accuracy"), 2))
            for r in table["rows"]]  # fmt: skip
    rows += [(f"(ours) {r['label']}", r["model"], None) for r in table.get("ours_rows") or []]
    for label, model, paper in rows:
        cells = []
        for corpus in corpora:
            split, r = _prediction_split(runs[corpus].metrics, model or "")
            n = f" (n={r['n']}{', ' + split if split != 'test' else ''})" if r else ""
            cells.append(cell(_pct(r.get("accuracy")) + n, paper))
        body.append([label, f"`{model}`" if model else DASH,
                     *(cells or [cell(DASH, paper)])])  # fmt: skip
    lines += _md_table(["Paper row", "ours", *([f"`{c}`" for c in corpora] or ["—"])], body)
    lines += [line for c in corpora if (line := _slot_set_line(c, runs[c].metrics))]
    files = ", ".join(runs[k].path for k in corpora) or "none"
    return lines + ["", f"Metrics files: {files}.", ""]


def _slot_set_line(corpus: str, m: Mapping[str, Any]) -> str | None:
    """Which test slots `corpus` was scored on (the stage's metrics ``test_slots``)."""
    info = m.get("test_slots")
    if not isinstance(info, Mapping):
        return None
    if info.get("set") != "released":
        return (f"\n`{corpus}` test slots: the rule (tasks/evaluation/entity_prediction.py; "
                f"{info.get('why') or 'no release'}).")  # fmt: skip
    c = info.get("comparison") or {}
    human = info.get("human") or {}
    return (f"\n`{corpus}` test slots: Modi et al.'s released targets ({info.get('file')}: "
            f"{c.get('released', DASH)} targets in {c.get('documents', DASH)} stories, "
            f"{c.get('unmatched', 0)} in no gold mention); the rule picks {c.get('rule', DASH)} "
            f"there, missing {c.get('rule_misses', DASH)} and adding {c.get('rule_extra', DASH)}."
            + (f" Human majority: {human.get('ties', 0)} tied votes (first listed wins)."
               if human else ""))  # fmt: skip


def render(table: Mapping, runs: EntityNLMRuns, papers: Mapping, annotation) -> list[str]:
    if table["kind"] == "entitynlm_rerank":
        return render_rerank(table, runs.rerank, papers)
    if table["kind"] == "entitynlm_prediction":
        return render_prediction(table, runs.prediction, papers)
    return render_lm(table, runs.lm, papers)


def _mean(stat: Any) -> float | None:
    if isinstance(stat, int | float) and not isinstance(stat, bool):
        return float(stat)
    return metric(stat, "mean") if isinstance(stat, Mapping) else None


def _table_of(tables: Sequence[Mapping], kind: str) -> tuple[str, dict[str, Mapping]]:
    """(the Measured table label, {model: paper values}) of the paper table of `kind`."""
    table = next((t for t in tables if t["kind"] == kind), None)
    if table is None:
        return "no paper table", {}
    paper = {r["model"]: r["values"] for r in table.get("rows", []) if r.get("model")}
    return f"{table['table']} ({table['id']})", paper


def measured(tables: Sequence[Mapping], runs: EntityNLMRuns) -> list[Measured]:
    """Tables 1-3's numbers; EntityNLM's own figure in each is a headline (metrics/summary)."""
    return measured_lm(tables, runs.lm) + measured_rerank(tables, runs.rerank) + \
        measured_prediction(tables, runs.prediction)  # fmt: skip


def measured_rerank(tables: Sequence[Mapping], runs: Mapping[str, Run]) -> list[Measured]:
    """Per corpus and system: test CoNLL F1 (%) beside Table 2's (CoNLL-2012 + cort: never
    comparable unless ours reranked OntoNotes)."""
    label, paper = _table_of(tables, "entitynlm_rerank")
    out = []
    for corpus in sorted(runs):
        m = runs[corpus].metrics
        n = (m.get("documents") or {}).get("test")
        for system in SYSTEMS:
            f1 = metric(m, f"test.{system}.conll_f1")
            out.append(Measured(
                family="entitynlm", table=label, what=f"`{system}` on {corpus}",
                metric="test CoNLL F1 %", ours=None if f1 is None else round(100 * f1, 2),
                paper=paper.get(system, {}).get("conll_f1"),
                split=f"test ({n} documents)" if n else "test", data=corpus, seeds=1,
                budget=f"alpha {fmt(m.get('alpha'), 2)}", device="cpu",
                comparable=corpus == "ontonotes",
                short=f"rerank_{corpus}_f1" if system == "rerank_combined" else None,
            ))  # fmt: skip
    return out


def measured_prediction(tables: Sequence[Mapping], runs: Mapping[str, Run]) -> list[Measured]:
    """Per corpus and predictor: test accuracy (%) beside Table 3's (InScript test)."""
    label, paper = _table_of(tables, "entitynlm_prediction")
    out = []
    for corpus in sorted(runs):
        m = runs[corpus].metrics
        for predictor in sorted(m.get("accuracy") or {}):
            split, r = _prediction_split(m, predictor)
            acc = r.get("accuracy")
            out.append(Measured(
                family="entitynlm", table=label, what=f"`{predictor}` on {corpus}",
                metric="test accuracy %", ours=None if acc is None else round(100 * acc, 2),
                paper=paper.get(predictor, {}).get("accuracy"),
                split=f"{split} ({r.get('n', DASH)} slots)", data=corpus, seeds=1,
                budget=DASH, device="cpu",
                comparable=corpus == "inscript" and split == "test",
                short=f"entitynlm_{corpus}_acc" if predictor == "entitynlm" else None,
            ))  # fmt: skip
    return out


def measured_lm(tables: Sequence[Mapping], runs: Mapping[str, Run]) -> list[Measured]:
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
            budget=f"{m['epochs_run']} epochs" if m.get("epochs_run") else "counts (no epochs)",
            device=str(m.get("device") or DASH),
            comparable="ontonotes" in str(m.get("dataset") or ""),
            short="entitynlm_ppl" if model == "entitynlm" else None,
        ))  # fmt: skip
    return out


SECTION = Section(
    source="entitynlm",
    kinds=("entitynlm_lm", "entitynlm_rerank", "entitynlm_prediction"),  # Ji et al. Tables 1-3
    load=load_runs,
    render=render,
    measured=measured,
    matches=lambda table, runs: bool(runs.of(table["kind"])),
)
