"""tasks/results/transcribe: README figures become valid records, as stated, or a named error."""

from __future__ import annotations

import json

import pytest
import yaml

from tasks.core.config import REPO_ROOT
from tasks.core.errors import CorefreproError
from tasks.core.schema import record_problems
from tasks.results import transcribe

SOURCE = REPO_ROOT / transcribe.TRANSCRIBED


def test_committed_yaml_builds_valid_records():
    records = transcribe.build_all(SOURCE)
    assert 10 <= len(records) <= 25
    for record in records:
        assert record_problems(record) == []
        assert record["source"] == "transcribed, no run"
        assert record["mlflow_run_ids"] == {} and record["wall_time_s"] == {}
        assert record["data"]["transcribed_from"].startswith("README.md:")
        assert not record["id"].startswith("mage-babi/")  # the run records' ids


def test_round_trip_per_seed_and_stated(tmp_path):
    entries = yaml.safe_load(SOURCE.read_text())
    assert transcribe.main(["--out", str(tmp_path)]) == 0
    assert transcribe.main(["--out", str(tmp_path)]) == 0  # rewriting changes nothing
    by_item = {e["item"]: e for e in entries}
    asl = json.loads((tmp_path / "coref-conll2012/train_coref/asl.json").read_text())
    stated = by_item["asl"]["metrics"]["test_conll_f1"]["per_seed"]
    assert asl["metrics"]["test_conll_f1"]["per_seed"] == {str(k): v for k, v in stated.items()}
    assert asl["metrics"]["test_conll_f1"]["n"] == 5
    qa2 = json.loads((tmp_path / "readme/train_mage/bigru-mage16-qa2.json").read_text())
    metric = qa2["metrics"]["dev_error"]
    spec = by_item["bigru-mage16-qa2"]["metrics"]["dev_error"]
    assert (metric["per_seed"], metric["mean"], metric["sd"], metric["n"]) == (
        {}, spec["mean"], spec["sd"], spec["n"])  # fmt: skip


def test_malformed_entry_names_file_and_index(tmp_path):
    entries = yaml.safe_load(SOURCE.read_text())[:2]
    del entries[1]["metrics"]["test_conll_f1"]["unit"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(entries))
    with pytest.raises(CorefreproError, match=r"bad\.yaml: entry 1: .*unit"):
        transcribe.build_all(bad)
