"""The MLflow helper: runs from several processes at once on a fresh tracking database."""

from __future__ import annotations

import multiprocessing as mp

import pytest

pytest.importorskip("mlflow")


def _open_run(uri: str, model: str, barrier, results) -> None:
    import os

    os.environ["MLFLOW_TRACKING_URI"] = uri
    from tasks.core.tracking import tracked_run

    barrier.wait()  # every process reaches the empty database at the same moment
    try:
        with tracked_run("train_mage", f"{model}-qa2", dataset="babi/qa2", seed=1) as run:
            import mlflow

            mlflow.log_metric("dev_acc", 0.5)
            results.put((model, run.info.run_id))
    except Exception as exc:  # reported to the test, which fails on it
        results.put((model, f"error: {type(exc).__name__}: {exc}"))


def test_concurrent_first_runs_on_fresh_database(tmp_path):
    """Two training lanes started together (two `python -m flows.train_mage`)
    both open their run: creating the database and the experiment happens once, not twice."""
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ctx = mp.get_context("spawn")
    lanes = 3
    barrier, results = ctx.Barrier(lanes), ctx.Queue()
    procs = [
        ctx.Process(target=_open_run, args=(uri, f"model{i}", barrier, results))
        for i in range(lanes)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    outcomes = dict(results.get(timeout=5) for _ in procs)
    errors = {m: o for m, o in outcomes.items() if o.startswith("error")}
    assert not errors, errors
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["train_mage"], output_format="list")
    assert sorted(r.info.run_name for r in runs) == [
        f"train_mage@model{i}-qa2/seed1" for i in range(3)
    ]
