"""A training stage's `workers` (issue #57.4): its seeds train at once in processes of their
own, and each seed's outputs are the bytes it gets when the seeds train one after the other in
one process; the run records the thread and process counts. `threads: auto` (a process's share
of the cores) is native-only: portable bytes depend on the thread count."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tasks.core import numerics
from tasks.core.settings import ConfigError, parse_settings
from tests.conftest import copy_checkout
from tests.models.mage.test_data import build_synthetic_graphs

ITEM = "bigru-syn2"  # the embedded default's first train_mage item, at its own tiny sizes


def _set_train_mage(repo: Path, **keys) -> None:
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["train_mage"].update(keys)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def _train(repo: Path, env: dict[str, str]) -> dict[str, bytes]:
    """Run the stage command as DVC would; every byte it writes under artifacts/ and metrics/."""
    for folder in ("artifacts/train_mage", "metrics/train_mage", "data/cache/resume"):
        shutil.rmtree(repo / folder, ignore_errors=True)
    proc = subprocess.run(
        [sys.executable, "-m", "flows.train_mage", "--model", "bigru", "--task", "syn2"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {
        str(p.relative_to(repo)): p.read_bytes()
        for folder in ("artifacts/train_mage", "metrics/train_mage")
        for p in sorted((repo / folder).rglob("*"))
        if p.is_file()
    }


def _tags(repo: Path) -> dict[str, dict[str, str]]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{repo / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("train_mage")
    runs = client.search_runs([experiment.experiment_id], order_by=["attributes.start_time DESC"])
    newest: dict[str, dict[str, str]] = {}
    for run in runs:
        newest.setdefault(run.info.run_name, run.data.tags)
    return newest


@pytest.mark.slow
def test_seeds_in_two_worker_processes_write_the_bytes_of_one_process(tmp_path):
    repo = tmp_path / "repo"
    env = copy_checkout(repo)
    graphs = repo / "data" / "graphs" / "synthetic-gold"
    graphs.mkdir(parents=True)
    shutil.copyfile(build_synthetic_graphs(tmp_path / "built"), graphs / "graphs.parquet")
    train = yaml.safe_load((repo / "params.yaml").read_text())["train_mage"]["train"]
    train["epochs"] = 1  # the embedded sizes, one epoch: seconds a seed
    _set_train_mage(repo, seeds=[1, 2], train=train)
    one = _train(repo, env)
    _set_train_mage(repo, seeds=[1, 2], train=train, workers=2)
    two = _train(repo, env)
    assert sorted(one) == sorted(two)
    assert {f"artifacts/train_mage/{ITEM}/seed{s}/best.pt" for s in (1, 2)} <= set(one)
    assert [k for k in one if one[k] != two[k]] == []
    tags = _tags(repo)
    for seed in (1, 2):
        run = tags[f"train_mage@{ITEM}/seed{seed}"]
        assert (run["threads"], run["workers"]) == ("1", "2")
        assert run["numerics"].startswith("portable")


def test_workers_refuse_the_other_ways_to_use_the_cores():
    from flows.train_mage import TrainMageSettings

    base = {"models": {"bigru": {"reader": "bigru", "encoder": "gru"}}, "workers": 2}
    for train, other in (({"nproc": 2, "accumulate": 2}, "nproc"),
                         ({"seeds_stacked": True}, "seeds_stacked")):  # fmt: skip
        with pytest.raises(ConfigError, match=rf"train_mage.workers: 2 seed processes and "
                                              rf"train_mage.train.{other}"):  # fmt: skip
            parse_settings(TrainMageSettings, {**base, "train": train}, "train_mage")
    with pytest.raises(ConfigError, match=r"train_mage.workers: must be >= 1"):
        parse_settings(TrainMageSettings, {**base, "workers": 0}, "train_mage")


def test_threads_auto_is_native_only(monkeypatch):
    from models.mage.train import MageTrain

    monkeypatch.setattr(numerics, "_PINNED", ["portable"])
    monkeypatch.delenv(numerics.MODE_ENV, raising=False)
    with pytest.raises(ConfigError, match=r"^train_mage.train.threads: auto needs numerics: "
                                          r"native"):  # fmt: skip
        parse_settings(MageTrain, {"threads": "auto"}, "train_mage.train")
    from flows.kbest import KbestSettings  # a scoring stage's threads: the same rule

    with pytest.raises(ConfigError, match=r"^kbest.threads: auto needs numerics: native"):
        parse_settings(KbestSettings, {"threads": "auto"}, "kbest")
    monkeypatch.setenv(numerics.MODE_ENV, "native")
    assert parse_settings(MageTrain, {"threads": "auto"}, "train_mage.train").threads == "auto"
    assert parse_settings(KbestSettings, {"threads": "auto"}, "kbest").threads == "auto"
    monkeypatch.setenv(numerics.JOBS_ENV, "2")
    share = max(1, len(numerics.os.sched_getaffinity(0)) // 2)
    assert numerics.threads("auto", "threads") == numerics.cores() == share
    assert numerics.threads(3, "threads") == 3 and numerics.threads(None, "threads") is None


def test_a_results_record_names_the_thread_count_of_its_runs(tmp_path, monkeypatch):
    """The results record's numerics (tasks/results/record.py) carries the seeds' thread and
    worker counts (their MLflow tags), beside the mode."""
    from mlflow.tracking import MlflowClient

    from tasks.results import record

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setattr("tasks.core.tracking.tracking_uri", lambda: uri)
    client = MlflowClient(uri)
    experiment = client.create_experiment("train_mage", (tmp_path / "art").as_uri())
    tags = {"mlflow.runName": "train_mage@m-t/seed1", "numerics": "native", "threads": "4",
            "workers": "2"}  # fmt: skip
    run = client.create_run(experiment, tags=tags)
    client.set_terminated(run.info.run_id, "FINISHED")
    found = record.mlflow_runs("train_mage", "m-t", ["1"])
    assert found["1"]["numerics"] == "native [torch threads 4, workers 2]"
