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
