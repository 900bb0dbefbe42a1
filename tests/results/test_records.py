"""tasks/results: records are built from finished runs, checked, and merged seed by seed."""

from __future__ import annotations

import json

import pytest

from tasks.core import config
from tasks.core.errors import CorefreproError
from tasks.core.schema import record_problems
from tasks.results import record as record_cli
from tasks.results.records import merge, spread


def _seed(root, item: str, seed: int, dev_error: float) -> None:
    folder = root / "artifacts/train_mage" / item / f"seed{seed}"
    folder.mkdir(parents=True)
    metrics = {"dev_error": dev_error, "test_error": 0.5, "dev_n": 100, "test_n": 10,
               "best_epoch": 7, "epochs_run": 27, "device": "cpu"}  # fmt: skip
    (folder / "metrics.json").write_text(json.dumps(metrics))


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    (tmp_path / "params.yaml").write_text("train_mage:\n  seeds: [1]\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=tmp_path, check=True)
    (tmp_path / "params.yaml").write_text("train_mage:\n  seeds: [1, 2]\n")
    monkeypatch.setattr(record_cli, "mlflow_runs", lambda stage, item, seeds: {})
    return tmp_path


def _build(root, item="ga-qa2"):
    return record_cli.build("train_mage", item, preset="mage-babi", scale="cpu", table="Table 1",
                            row="GA, qa2", data=[], root=root)  # fmt: skip


def test_a_record_holds_each_seed_its_spread_and_the_overrides(workspace):
    _seed(workspace, "ga-qa2", 1, 0.10)
    _seed(workspace, "ga-qa2", 2, 0.20)
    record = _build(workspace)
    assert record_problems(record) == []
    dev = record["metrics"]["dev_error"]
    assert dev["per_seed"] == {"1": 10.0, "2": 20.0} and dev["n"] == 2
    assert dev["mean"] == 15.0 and dev["sd"] == pytest.approx(7.071068)
    assert dev["unit"] == "%" and dev["better"] == "lower" and dev["split_size"] == 100
    assert record["overrides"] == ["train_mage.seeds=[1, 2]"]
    assert record["id"] == "mage-babi/train_mage/ga-qa2" and record["source"] == "run"


def test_a_record_written_twice_merges_seed_by_seed(workspace):
    _seed(workspace, "ga-qa2", 1, 0.10)
    out = workspace / "results"
    path = record_cli.write(_build(workspace), out)
    first = path.read_text()
    record_cli.write(_build(workspace), out)  # the same seed again: replaced, not duplicated
    assert json.loads(path.read_text())["metrics"] == json.loads(first)["metrics"]
    _seed(workspace, "ga-qa2", 2, 0.30)
    merged = json.loads(record_cli.write(_build(workspace), out).read_text())
    assert merged["metrics"]["dev_error"]["per_seed"] == {"1": 10.0, "2": 30.0}


def test_records_of_other_settings_do_not_merge_and_a_bad_record_is_named(workspace):
    old = {"id": "a", "overrides": ["x=1"], "metrics": {}}
    with pytest.raises(CorefreproError, match="other settings"):
        merge(old, {"id": "a", "overrides": ["x=2"], "metrics": {}})
    _seed(workspace, "ga-qa2", 1, 0.10)
    bad = workspace / "results/mage-babi/train_mage/ga-qa2.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"id": 3}')
    with pytest.raises(CorefreproError, match=r"ga-qa2.json: not a valid record .*missing field"):
        record_cli.write(_build(workspace), workspace / "results")


def test_lanes_with_other_run_lists_merge_but_other_model_settings_do_not():
    """A lane runs its own models, tasks and seeds from another mirror: what it selects is no
    setting of the item, so its seed merges; a changed model setting is named and refused."""
    base = {"id": "a", "metrics": {}, "data": {}, "epochs": {}, "wall_time_s": {},
            "mlflow_run_ids": {}, "commit": "c", "numerics": "native", "device": "cpu",
            "cpu": "x"}  # fmt: skip
    shared = ["train_mage.train.epochs=100"]
    old = {**base, "overrides": [*shared, 'train_mage.run.models=["ga"]', "train_mage.seeds=[1]",
                                 'download.mirror="/a"']}  # fmt: skip
    new = {**base, "overrides": [*shared, 'train_mage.run.models=["ga", "b"]',
                                 'train_mage.run.tasks=["qa2"]', "train_mage.seeds=[3]"]}  # fmt: skip
    assert merge(old, new)["overrides"] == new["overrides"]
    with pytest.raises(CorefreproError, match=r"differing: \['train_mage.train.epochs=100', "
                                              r"'train_mage.train.epochs=50'\]"):  # fmt: skip
        merge(old, {**new, "overrides": ["train_mage.train.epochs=50"]})


def test_no_finished_run_is_one_line(workspace, capsys):
    assert record_cli.main(["train_mage", "ga-qa9", "--table", "T", "--row", "r"]) == 2
    assert "no seed<k>/metrics.json: train the item first" in capsys.readouterr().err


def test_one_seed_has_no_spread():
    assert spread({"1": 4.0}) == (4.0, None, 1)
    assert spread({"1": None}) == (None, None, 0)


def test_a_merge_keeps_every_seeds_commit_and_host_and_refuses_other_data():
    """A lane on a later commit (or another machine) adds its seed; the record names both."""
    base = {"id": "a", "overrides": [], "metrics": {}, "data": {"g": "1"}, "epochs": {},
            "wall_time_s": {}, "mlflow_run_ids": {}, "numerics": "native", "device": "cpu"}  # fmt: skip
    old = {**base, "commit": "aaa", "cpu": "AMD EPYC"}
    new = {**base, "commit": "bbb", "cpu": "Intel Xeon"}
    merged = merge(old, new)
    assert merged["commit"] == "aaa, bbb" and merged["cpu"] == "AMD EPYC; Intel Xeon"
    assert merged["numerics"] == "native"
    with pytest.raises(CorefreproError, match="read other data"):
        merge(old, {**new, "data": {"g": "2"}})
