"""The report's real-data tables rebuilt from records (tasks/report/real_data.py)."""

from __future__ import annotations

import pytest

from tasks.core.errors import CorefreproError
from tasks.report.real_data import table_from_records
from tasks.results.records import metric_entry, stated_metric_entry

LM_TABLE = {
    "id": "lm", "paper": "p", "table": "Table 1", "title": "perplexity", "kind": "entitynlm_lm",
    "digits": 2, "columns": ["test_ppl"],
    "records": {"pattern": "lm/{model}", "models": ["5gram", "rnnlm", "entitynlm"],
                "metrics": ["dev_ppl", "test_ppl"]},
    "rows": [{"model": "5gram", "values": {"test_ppl": 138.37}},
             {"model": "rnnlm", "values": {"test_ppl": 134.79}},
             {"model": "entitynlm", "values": {"test_ppl": 131.64}}],
    "readings": {"comparable": "words_is",
                 "rows": [{"key": "words_is", "label": "(b) words only"},
                          {"key": "marginal", "label": "(a) marginal"},
                          {"key": "words_gold", "label": "(c) gold"}]},
}  # fmt: skip


def _ppl(per_seed, split):
    return metric_entry(per_seed, split=split, split_size=100, unit="ppl", better="lower")


def _record(rid, metrics):
    return {"id": rid, "preset": "lm", "scale": "cpu", "data": {"d.parquet": "0"},
            "metrics": metrics}  # fmt: skip


RECORDS = {
    "lm/5gram": _record("lm/5gram", {
        s: stated_metric_entry(v, None, 1, split=s.split("_")[0], split_size=100, unit="ppl",
                               better="lower")
        for s, v in (("dev_ppl", 259.89), ("test_ppl", 289.04))}),
    "lm/rnnlm": _record("lm/rnnlm", {"test_ppl": _ppl({"1": 241.0, "2": 248.0}, "test"),
                                     "dev_ppl": _ppl({"1": 212.4, "2": 214.1}, "dev")}),
    "lm/entitynlm": _record("lm/entitynlm", {
        "test_ppl": _ppl({"1": 280.3}, "test"), "test_ppl_words_is": _ppl({"1": 156.3}, "test"),
        "dev_ppl": _ppl({"1": 246.9}, "dev")}),
}  # fmt: skip


def _body(lines):
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines
            if line.startswith("| `")]  # fmt: skip


def test_the_lm_table_shows_each_reading_a_record_holds_with_the_paper_beside_the_comparable():
    body = _body(table_from_records(LM_TABLE, {"short": "Ji"}, RECORDS))
    labels = [row[0] for row in body]
    # the gold reading is in the table's spec but not in the record: no row for it
    assert labels == ["`5gram`", "`rnnlm`", "`entitynlm` (b) words only",
                      "`entitynlm` (a) marginal"]  # fmt: skip
    five, rnn, words, marginal = body
    assert five[2] == "[289.0 (seedless)](../results/lm/5gram.json)" and five[3] == "138.37"
    assert rnn[2].startswith("[244.5 ± 4.9 (2)](") and rnn[3] == "134.79"
    assert words[2].startswith("[156.3 (1 seed)](") and words[1] == "—" and words[3] == "131.64"
    assert marginal[2].startswith("[280.3 (1 seed)](") and marginal[1].startswith("[246.9")
    assert marginal[3] == "—"  # the paper's number stands beside its own reading only


def test_no_record_no_table_and_an_unknown_kind_is_named():
    assert table_from_records(LM_TABLE, {}, {}) == []
    assert table_from_records({**LM_TABLE, "records": None}, {}, RECORDS) == []
    with pytest.raises(CorefreproError, match="table lm: records: no rendering for kind 'x'"):
        table_from_records({**LM_TABLE, "kind": "x"}, {}, RECORDS)


# ------------------------------------------------------------------- the coreference-quality study

STUDY = {
    "id": "q", "title": "quality", "tasks": ["qa2", "qa16"], "levels": ["drop50"],
    "records": "s/train_mage/ga-mage16-{level}-{task}", "clean": "s/train_mage/ga-mage16-{task}",
    "quality": "s/graphs_ablation/babi-{level}", "note": "The note.",
    "annotators": {"model": "own model", "stanza": "Stanza"},
    "annotator_quality": "s/graphs_reference/babi-{annotator}",
    "annotator_note": "The annotator rows.",
}  # fmt: skip


def _pct(per_seed, split="dev"):
    return metric_entry(per_seed, split=split, split_size=100, unit="%", better="lower")


def _study_records(annotators: bool):
    records = {
        "s/train_mage/ga-mage16-qa2": _record("s/train_mage/ga-mage16-qa2",
                                              {"dev_error": _pct({"1": 0.0, "2": 0.0})}),
        "s/train_mage/ga-mage16-drop50-qa2": _record("s/train_mage/ga-mage16-drop50-qa2",
                                                     {"dev_error": _pct({"1": 30.0, "2": 40.0})}),
        "s/graphs_ablation/babi-drop50": _record("s/graphs_ablation/babi-drop50",
                                                 {"conll_f1": _pct({"1": 65.9}, "all")}),
    }  # fmt: skip
    if annotators:  # the model's reader on qa2 only; its F1 overall and per task; no Stanza F1
        records |= {
            "s/train_mage/ga-mage16-model-qa2": _record("s/train_mage/ga-mage16-model-qa2",
                                                        {"dev_error": _pct({"1": 2.0, "2": 4.0})}),
            "s/graphs_reference/babi-model": _record("s/graphs_reference/babi-model", {
                "conll_f1": _pct({"1": 60.0}, "all"), "conll_f1_qa2": _pct({"1": 97.0}, "all"),
                "conll_f1_qa16": _pct({"1": 0.0}, "all")}),
            "s/train_mage/ga-mage16-stanza-qa16": _record("s/train_mage/ga-mage16-stanza-qa16",
                                                          {"dev_error": _pct({"1": 45.0})}),
        }  # fmt: skip
    return records


def test_the_study_gains_a_row_per_annotator_only_once_its_records_exist(tmp_path):
    """Issue #58.5: the other annotators' rows sit beside the corruption levels, their links'
    F1 per task on the same axis; before their records exist the table is as it was."""
    from tasks.report import figures
    from tasks.report.real_data import annotator_points, parse_studies, render_study

    study = parse_studies({"studies": [STUDY]})[0]
    before = render_study(study, _study_records(False))
    rows = _body_rows(before)
    assert [r[0] for r in rows] == ["annotation (p = 0)", "drop50"]
    assert before[2] == "The note."  # the annotator note only with an annotator row
    after = render_study(study, _study_records(True))
    rows = {r[0]: r for r in _body_rows(after)}
    assert list(rows) == ["annotation (p = 0)", "drop50", "own model", "Stanza"]
    assert rows["own model"][1] == "97.0 / 0.0 (per task)"
    assert rows["own model"][2].startswith("[3.0 ± 1.4 (2)](../results/s/train_mage/ga-mage16-")
    assert rows["own model"][3] == "—"  # its qa16 reader has no record yet
    assert rows["Stanza"][1:3] == ["—", "—"] and rows["Stanza"][3].startswith("[45.0 (1 seed)]")
    assert after[2] == "The note. The annotator rows."
    # the figure's points: where both the F1 and the reader's record exist, at the task's F1
    points = annotator_points(study, _study_records(True))
    assert list(points) == ["qa2, model"] and points["qa2, model"][:2] == (97.0, {"1": 2.0,
                                                                                   "2": 4.0})  # fmt: skip
    series = {"qa2, drop": [(100.0, {"1": 0.0}, "a"), (65.9, {"1": 30.0}, "b")]}
    plain = figures.quality_curve("t", "dev_error", series, tmp_path / "plain.png")
    empty = figures.quality_curve("t", "dev_error", series, tmp_path / "empty.png", marks={})
    marked = figures.quality_curve("t", "dev_error", series, tmp_path / "marked.png",
                                   marks=points)  # fmt: skip
    assert plain.read_bytes() == empty.read_bytes() != marked.read_bytes()
    assert figures.quality_curve("t", "dev_error", {}, tmp_path / "only.png", marks=points)


def _body_rows(lines):
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines
            if line.startswith("| ") and not line.startswith("| coreference")
            and not line.startswith("| ---")]  # fmt: skip
