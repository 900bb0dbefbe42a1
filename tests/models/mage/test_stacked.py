"""models/mage/stacked.py (issue #15.1): K seeds trained stacked, as one batched model, give
each seed the run it gets alone -- same per-epoch losses and dev accuracies (float tolerance),
same best epoch, same checkpoint -- with dropout on, so each seed's masks are its own."""

from __future__ import annotations

import json

import pytest
import torch

from flows import train_mage as mage_stage
from models.mage import train as tr
from models.mage.data import load_reader_data
from models.mage.mage_gru import MAGEGRU
from models.mage.stacked import StackedGRU, StackedMAGEGRU
from tasks.core.checkpoints import load_checkpoint
from tasks.core.settings import parse_settings
from tests.models.mage.test_data import build_synthetic_graphs

TINY = {"embed_dim": 12, "hidden_size": 16, "coref_size": 4, "dropout": 0.2}
FAST = {"batch_size": 16, "lr": 0.01, "threads": 1, "log_every_s": 0, "epochs": 3}
MODELS = {
    "bigru": {"reader": "bigru", "encoder": "gru"},
    "bigru-mage": {"reader": "bigru", "encoder": "mage"},
    # the token-in-query feature: its 2-d embedding stacked per seed
    "bigru-mage-inquery": {"reader": "bigru", "encoder": "mage", "token_in_query": True},
    "ga-mage": {"reader": "ga", "encoder": "mage", "num_layers": 2},
    # edge attention (its Watt stacked per seed) and the authors' recipe (clipping by value)
    "ga-mage-attention-authors": {
        "reader": "ga",
        "encoder": "mage",
        "num_layers": 2,
        "edge_combine": "attention",
        "recipe": "authors",
    },
}
SEEDS = (1, 2, 3)


pytestmark = pytest.mark.usefixtures("local_flows")


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    return build_synthetic_graphs(tmp_path_factory.mktemp("synthetic-gold"))


@pytest.fixture(scope="module")
def syn1(graphs):
    data = load_reader_data(graphs, "syn1")
    # a small, uneven training set: the last batch is short and lands differently per seed
    data.splits["train"] = data.splits["train"][:70]
    data.splits["dev"] = data.splits["dev"][:40]
    return data


def _curve(path):
    return json.loads((path / tr.HISTORY).read_text())


@pytest.mark.parametrize("model", sorted(MODELS))
def test_stacked_seeds_reproduce_separate_runs(graphs, syn1, tmp_path, model):
    mcfg = {**TINY, **MODELS[model]}
    alone = [
        tr.train_and_evaluate(
            graphs,
            "syn1",
            mcfg,
            {**FAST, "seed": s},
            tmp_path / f"alone{s}",
            data=syn1,
        )  # fmt: skip
        for s in SEEDS
    ]
    stacked = tr.train_stacked(
        graphs, "syn1", mcfg, [{**FAST, "seed": s} for s in SEEDS],
        [tmp_path / f"stacked{s}" for s in SEEDS], data=syn1,
    )  # fmt: skip
    for s, one, many in zip(SEEDS, alone, stacked, strict=True):
        a, b = _curve(tmp_path / f"alone{s}"), _curve(tmp_path / f"stacked{s}")
        assert len(a) == len(b) == FAST["epochs"]
        for ra, rb in zip(a, b, strict=True):
            assert ra["train_loss"] == pytest.approx(rb["train_loss"], rel=1e-4, abs=1e-5), (
                s,
                ra,
                rb,
            )
            assert ra["train_acc"] == rb["train_acc"]
            assert ra["dev_acc"] == rb["dev_acc"], (s, ra, rb)
            assert ra["dev_loss"] == pytest.approx(rb["dev_loss"], rel=1e-4, abs=1e-5)
            assert ra["best"] == rb["best"]
        assert one["best_epoch"] == many["best_epoch"]
        assert one["test_acc"] == many["test_acc"]
        wa = load_checkpoint(tmp_path / f"alone{s}" / tr.BEST)["state_dict"]
        wb = load_checkpoint(tmp_path / f"stacked{s}" / tr.BEST)["state_dict"]
        assert wa.keys() == wb.keys()
        for key in wa:
            torch.testing.assert_close(wa[key], wb[key], rtol=1e-3, atol=1e-4)
    # the seeds really differ from each other (own init, order and masks)
    assert (
        _curve(tmp_path / "stacked1")[0]["train_loss"]
        != _curve(tmp_path / "stacked2")[0]["train_loss"]
    )


def test_stacked_layers_match_their_single_layers():
    """Forward and gradients of StackedGRU (nn.GRU) and StackedMAGEGRU, seed by seed."""
    torch.manual_seed(0)
    grus = [torch.nn.GRU(5, 6, batch_first=True) for _ in range(3)]
    mages = [MAGEGRU(5, 6, 2, edge_sizes=(4, 2)) for _ in range(3)]
    x = torch.randn(3 * 2, 7, 5, requires_grad=True)
    preds = torch.tensor([[-1, 0, 1, 2, 3, 4, 5], [-1, -1, 0, -1, 2, 2, 4]]).expand(6, 2, 7)
    for singles, stacked, run in (
        (grus, StackedGRU(grus), lambda m, v: m(v)[0]),
        (mages, StackedMAGEGRU(mages), lambda m, v: m(v, preds[: v.shape[0]])),
    ):
        out = run(stacked, x)
        out.pow(2).sum().backward()
        for k, single in enumerate(singles):
            xs = x.detach()[2 * k : 2 * k + 2].requires_grad_()
            ref = run(single, xs)
            torch.testing.assert_close(out[2 * k : 2 * k + 2], ref, rtol=1e-5, atol=1e-6)
            ref.pow(2).sum().backward()
            for (name, p), q in zip(single.named_parameters(), stacked.parameters(), strict=True):
                torch.testing.assert_close(q.grad[k], p.grad, rtol=1e-4, atol=1e-5, msg=name)
        x.grad = None


def test_stage_with_seeds_stacked_writes_per_seed_artifacts_runs_and_collects(
    graphs, tmp_path, monkeypatch
):
    """train.seeds_stacked: the stage's per-seed artifacts and MLflow runs, as seeds trained
    one by one, and `--collect` accepts them (seeds_stacked is a run-only setting)."""
    import mlflow

    import flows.train_mage as flow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.setattr("tasks.core.tracking.artifact_root", lambda: (tmp_path / "art").as_uri())
    monkeypatch.setattr("tasks.core.tracking.stage_lock_hash", lambda stage: "none")
    settings = {
        "data": "synthetic-gold",
        "model_defaults": TINY,
        "models": {"bigru+mage": {"encoder": "mage"}},
        "seeds": [1, 2],
        "train": {**FAST, "epochs": 2, "seeds_stacked": True},
    }
    from tasks.core import config

    monkeypatch.setattr(
        flow,
        "settings",
        lambda: parse_settings(mage_stage.TrainMageSettings, settings, "train_mage"),
    )
    monkeypatch.setattr(flow, "graphs_path", lambda cfg, run=None: graphs)
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(flow, "train_and_evaluate", None)  # stacked: never the one-seed path
    out = flow.train_mage("bigru+mage", "syn1")
    assert out["seeds"] == 2 and set(out["per_seed"]) == {"1", "2"}
    for seed in (1, 2):
        d = tmp_path / f"artifacts/train_mage/bigru+mage-syn1/seed{seed}"
        assert {p.name for p in d.iterdir()} == {"best.pt", "history.json", "metrics.json"}
        assert json.loads((d / "metrics.json").read_text())["seed"] == seed
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("train_mage")
    runs = {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}
    assert set(runs) == {f"train_mage@bigru+mage-syn1/seed{s}" for s in (1, 2)}
    for seed in (1, 2):
        run = runs[f"train_mage@bigru+mage-syn1/seed{seed}"]
        assert run.info.status == "FINISHED" and run.data.tags["seed"] == str(seed)
        assert [m.step for m in client.get_metric_history(run.info.run_id, "dev_acc")] == [1, 2]
        assert run.data.metrics["test_acc"] == pytest.approx(out["per_seed"][str(seed)]["test_acc"])
    settings["train"]["seeds_stacked"] = False  # collected under the unstacked plan
    collected = flow.collect_mage("bigru+mage", "syn1")
    for seed, row in out["per_seed"].items():  # (wall times are not kept in metrics.json)
        assert collected["per_seed"][seed]["dev_acc"] == row["dev_acc"]
        assert collected["per_seed"][seed]["test_acc"] == row["test_acc"]
        assert collected["per_seed"][seed]["best_epoch"] == row["best_epoch"]
