"""The report's first screen (tasks/report/claims.py): the papers' claims, ours from records."""

from __future__ import annotations

import pytest

from tasks.core.errors import CorefreproError
from tasks.report.claims import claims_section, status
from tasks.results.records import metric_entry

TABLE = {"id": "t", "paper": "p", "table": "Table 1", "columns": ["qa1", "qa2"],
         "rows": [{"model": "a", "values": [10.0, 60.0], "avg": 35.0},
                  {"model": "b", "values": [10.0, 2.0], "avg": 6.0}]}  # fmt: skip
SPEC = {"papers": {"p": {"short": "Paper"}}, "tables": [TABLE],
        "claims": [{"id": "c", "claim": "b beats a", "table": "t", "column": "qa2", "a": "a",
                    "b": "b", "records": "x/{model}-{column}", "metric": "err"},
                   {"id": "m", "claim": "b beats a on average", "table": "t", "column": "avg",
                    "a": "a", "b": "b", "records": "x/{model}-{column}", "metric": "err"}]}  # fmt: skip


def _record(per_seed, source="run"):
    return {"metrics": {"err": metric_entry(per_seed, split="dev", split_size=100, unit="%",
                                            better="lower")},
            "scale": "cpu", "source": source, "data": {"corpora": "babi"}}  # fmt: skip


def _rows(records):
    lines = claims_section(SPEC, records, "spec")
    return [line.split(" | ") for line in lines if line.startswith("| b beats")]


def test_a_claim_reads_the_papers_table_and_our_paired_seed_differences():
    records = {"x/a-qa2": _record({"1": 50.0, "2": 60.0, "3": 55.0}),
               "x/b-qa2": _record({"1": 1.0, "2": 3.0})}  # fmt: skip
    (row, avg) = _rows(records)
    assert row[1] == "Paper, Table 1, qa2" and row[3] == "60 → 2 (-58.00)"
    assert row[4] == "-53.00 ± 5.66 (2 seeds)"  # seeds 1 and 2 only: paired
    assert row[5] == "babi; dev (100), cpu" and row[7].startswith("reproduced (direction)")
    assert avg[4] == "—" and avg[7].startswith("no record")  # qa1 has no record


def test_a_claim_not_run_says_why_until_a_record_exists():
    spec = {**SPEC, "claims": [{**SPEC["claims"][0], "not_run": "GPU scale"}]}
    (row,) = [
        line.split(" | ")
        for line in claims_section(spec, {}, "spec")
        if line.startswith("| b beats")
    ]
    assert row[7] == "not run: GPU scale"
    records = {"x/a-qa2": _record({"1": 50.0, "2": 60.0})}  # one side run: the gap is a record's
    (row,) = [
        line.split(" | ")
        for line in claims_section(spec, records, "spec")
        if line.startswith("| b beats")
    ]
    assert row[7] == "no record"


def test_one_seed_carries_no_direction_and_the_opposite_sign_is_not_reproduced():
    assert status(-5.0, [-3.0]) == ("-3.00 (1 seed)", "single seed")
    assert status(-5.0, [3.0, 4.0])[1] == "not reproduced"
    assert status(-5.0, [-1.0, 1.5])[1] == "inconclusive"
    assert status(None, []) == ("—", "no record")


def test_a_transcribed_record_is_flagged_and_a_bad_claim_is_named():
    records = {f"x/{m}-{c}": _record({"1": 1.0, "2": 2.0}, "transcribed, no run")
               for m in "ab" for c in ("qa1", "qa2")}  # fmt: skip
    (row, _) = _rows(records)
    assert row[4].endswith("(transcribed, no run)")
    with pytest.raises(CorefreproError, match=r"spec: claims\[0\]"):
        claims_section({**SPEC, "claims": [{"id": "c"}]}, {}, "spec")
    with pytest.raises(CorefreproError, match="no table 'nope'"):
        claims_section({**SPEC, "claims": [{**SPEC["claims"][0], "table": "nope"}]}, {}, "spec")


def test_the_committed_records_are_valid_and_every_claim_names_a_table():
    """Every results record in git parses (load_records names a bad file) and the claims of
    paper_results.yaml render against them."""
    from models import registry
    from tasks.core.config import resolve_path
    from tasks.report import build
    from tasks.results.records import load_records

    secs = build.sections(registry.reports())
    spec = build.load_spec(resolve_path("tasks/report/paper_results.yaml"), secs)
    lines = claims_section(spec, load_records(resolve_path("results")), "paper_results.yaml")
    assert lines[0] == "## The papers' claims" and len(spec["claims"]) >= 10


def test_a_claim_links_its_records_and_says_how_ours_differs():
    records = {"x/a-qa2": _record({"1": 50.0, "2": 60.0}), "x/b-qa2": _record({"1": 1.0, "2": 3.0})}
    (row, _avg) = _rows(records)
    assert row[-1].startswith("[a-qa2](../results/x/a-qa2.json), [b-qa2](../results/x/b-qa2.json)")


def test_stated_means_without_common_seeds_are_compared_unpaired():
    from tasks.report.claims import _unpaired

    a = {"metrics": {"m": {"mean": 10.0, "sd": None, "n": 1}}}  # a seedless baseline
    b = {"metrics": {"m": {"mean": 4.0, "sd": 1.0, "n": 3}}}
    assert _unpaired(a, b, "m") == (-6.0, 1.0)
    one = {"metrics": {"m": {"mean": 4.0, "sd": None, "n": 1}}}
    assert _unpaired(a, one, "m") is None  # two single figures carry no direction claim


def test_a_claim_may_read_another_metric_on_its_claimed_side():
    """#56.1: EntityNLM's word-only reading (b's `b_metric`) against the RNNLM's perplexity."""
    spec = {**SPEC, "claims": [{**SPEC["claims"][0], "b_metric": "err_words"}]}
    a = _record({"1": 50.0, "2": 60.0})
    b = _record({"1": 70.0, "2": 80.0})  # its own `err` is worse than a's ...
    b["metrics"]["err_words"] = metric_entry(
        {"1": 40.0, "2": 44.0}, split="dev", split_size=100, unit="%", better="lower"
    )  # ... its reading better
    (row,) = [line.split(" | ") for line in claims_section(spec, {"x/a-qa2": a, "x/b-qa2": b}, "s")
              if line.startswith("| b beats")]  # fmt: skip
    assert row[2] == "err_words vs err" and row[4] == "-13.00 ± 4.24 (2 seeds)"
    assert row[7] == "reproduced (direction)"
    del b["metrics"]["err_words"]  # a record without the reading: no figure for it
    (row,) = [line.split(" | ") for line in claims_section(spec, {"x/a-qa2": a, "x/b-qa2": b}, "s")
              if line.startswith("| b beats")]  # fmt: skip
    assert row[7] == "no record"
