"""Benchmark (issue #57.4): what a second core buys one training stage.

    uv run pytest -m bench -s tests/training/test_bench_workers.py

train_mage@bigru-syn2 of the embedded default (its own sizes), with two seeds, run as its
stage command (`python -m flows.train_mage`) in a copy of the checkout, alternating ROUNDS
times so that load from other work hits each way alike:

- portable, workers 1: the seeds one after the other, one thread (the committed default);
- portable, workers 2: the seeds at once in two processes of one thread each (the same bytes:
  tests/training/test_workers.py);
- native, workers 1, threads 1 and threads 2: the other way to use a second core, intra-op
  threads (native only: portable bytes depend on the thread count).

The embedded default trains a seed in seconds, so a process's own start (imports, its first
MLflow run) weighs as much as the training: the stage is run at its 3 epochs and, portable
only, at LONG_EPOCHS (patience off), where training dominates as in a preset's runs. Printed:
the median wall time of each and the speed-ups (workers 1 ÷ workers 2; threads 1 ÷ threads
2). Never asserted; meaningful on a machine with two idle cores.
"""

from __future__ import annotations

import shutil
import statistics
import time

import pytest
import yaml

from tests.conftest import copy_checkout
from tests.models.mage.test_data import build_synthetic_graphs
from tests.training.test_workers import _set_train_mage, _train

pytestmark = pytest.mark.bench

ROUNDS = 3
LONG_EPOCHS = 15
WAYS = {  # name -> (numerics, workers, threads, epochs: None = the embedded default's)
    "portable, workers 1, threads 1": ("portable", 1, 1, None),
    "portable, workers 2, threads 1": ("portable", 2, 1, None),
    "native, workers 1, threads 1": ("native", 1, 1, None),
    "native, workers 1, threads 2": ("native", 1, 2, None),
    f"portable, workers 1, threads 1, {LONG_EPOCHS} epochs": ("portable", 1, 1, LONG_EPOCHS),
    f"portable, workers 2, threads 1, {LONG_EPOCHS} epochs": ("portable", 2, 1, LONG_EPOCHS),
}


def _set_mode(repo, mode: str) -> None:
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["numerics"] = mode
    path.write_text(yaml.safe_dump(params, sort_keys=False))


@pytest.mark.timeout(5400)  # 6 ways x ROUNDS stage commands (on busy cores: minutes each)
def test_bench_two_cores_for_one_training_stage(tmp_path):
    repo = tmp_path / "repo"
    env = copy_checkout(repo)
    graphs = repo / "data" / "graphs" / "synthetic-gold"
    graphs.mkdir(parents=True)
    shutil.copyfile(build_synthetic_graphs(tmp_path / "built"), graphs / "graphs.parquet")
    train = yaml.safe_load((repo / "params.yaml").read_text())["train_mage"]["train"]
    times: dict[str, list[float]] = {name: [] for name in WAYS}
    for _ in range(ROUNDS):
        for name, (mode, workers, threads, epochs) in WAYS.items():
            _set_mode(repo, mode)
            longer = {"epochs": epochs, "patience": None} if epochs else {}
            _set_train_mage(repo, seeds=[1, 2], workers=workers,
                            train={**train, "threads": threads, **longer})  # fmt: skip
            started = time.perf_counter()
            _train(repo, env)
            times[name].append(time.perf_counter() - started)
    median = {name: statistics.median(t) for name, t in times.items()}
    print(f"\ntrain_mage@bigru-syn2, seeds [1, 2], stage command wall time, median of {ROUNDS}")
    print("| numerics, workers, threads | wall (s) |\n|---|---|")
    for name, seconds in median.items():
        print(f"| {name} | {seconds:.1f} |")
    names = list(WAYS)
    for label, pair in {
        "2 seed workers (portable)": names[0:2],
        "2 threads (native)": names[2:4],
        f"2 seed workers (portable, {LONG_EPOCHS} epochs)": names[4:6],
    }.items():
        if len(pair) == 2:  # (a shorter WAYS, as in a smoke run, prints what it has)
            print(f"speed-up of {label}: {median[pair[0]] / median[pair[1]]:.2f}")
    assert all(s > 0 for s in median.values())
