"""models/mage/train.py and flows/train_mage.py: the reader training loop learns the synthetic
corpus, selects on dev only, checkpoints safely, logs its learning curve to MLflow, and the
stage writes its artifacts and DVC metrics."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import torch

from flows import train_mage as mage_stage
from models.mage import train as tr
from models.mage.data import load_reader_data
from tasks.core.checkpoints import jsonable
from tasks.core.settings import parse_settings
from tasks.core.storage import split_timings
from tests.models.mage.test_data import build_synthetic_graphs

TINY = {"embed_dim": 16, "hidden_size": 24, "coref_size": 8, "dropout": 0.0}
FAST = {"batch_size": 32, "lr": 0.005, "threads": 1, "log_every_s": 0}


@pytest.fixture(autouse=True)
def _one_thread_local(monkeypatch):
    """Small tensors on a shared 2-core box: one intra-op thread is fastest (see
    tests/models/test_readers.py); no Prefect, no repository MLflow store."""
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory) -> Path:
    """graphs@synthetic-gold, built from the project's generator (no `dvc repro` needed)."""
    return build_synthetic_graphs(tmp_path_factory.mktemp("synthetic-gold"))


@pytest.fixture(scope="module")
def syn1(graphs):
    return load_reader_data(graphs, "syn1")


def chance(data, split="dev") -> float:
    """Expected accuracy of a uniform guess among each item's candidates."""
    items = data.splits[split]
    return sum(1 / len(e["candidates"]) for e in items) / len(items)


@pytest.mark.parametrize("encoder", ["gru", "mage"])
def test_learns_syn1_above_chance_in_a_few_epochs(graphs, syn1, tmp_path, encoder):
    metrics = tr.train_and_evaluate(
        graphs,
        "syn1",
        {**TINY, "encoder": encoder},
        {**FAST, "epochs": 4, "patience": 4},
        tmp_path,
        data=syn1,
    )
    base = chance(syn1)  # ~0.4: 2-3 places mentioned per story
    assert base < 0.5
    assert metrics["dev_acc"] > base + 0.15, (metrics, base)
    assert metrics["test_acc"] > chance(syn1, "test") + 0.1, metrics
    history = json.loads((tmp_path / tr.HISTORY).read_text())
    assert history[-1]["train_loss"] < history[0]["train_loss"]


def test_selection_is_on_dev_and_test_is_evaluated_once_at_the_end(
    graphs, syn1, tmp_path, monkeypatch
):
    calls: list[tuple[str, int]] = []
    real = tr.evaluate

    def spy(model, data, split, **kw):
        out = real(model, data, split, **kw)
        calls.append((split, len(calls)))
        return out

    monkeypatch.setattr(tr, "evaluate", spy)
    metrics = tr.train_and_evaluate(
        graphs,
        "syn1",
        TINY,
        {**FAST, "epochs": 5, "patience": 2},
        tmp_path,
        data=syn1,
    )
    history = json.loads((tmp_path / tr.HISTORY).read_text())
    dev_accs = [h["dev_acc"] for h in history]
    # the selected epoch is an argmax of dev accuracy (ties: lower dev loss)
    assert dev_accs[metrics["best_epoch"] - 1] == max(dev_accs)
    tied = [h for h in history if h["dev_acc"] == max(dev_accs)]
    assert metrics["best_epoch"] == min(tied, key=lambda h: h["dev_loss"])["epoch"]
    # test: evaluated exactly once, after every dev evaluation of the training loop
    splits = [s for s, _ in calls]
    assert splits.count("test") == 1 and splits[-1] == "test"
    assert splits[:-1] == ["dev"] * (len(history) + 1)  # per epoch + the reloaded best
    # the reported dev accuracy is that of the saved best checkpoint
    assert metrics["dev_acc"] == pytest.approx(max(dev_accs))
    # patience: stops 2 epochs after the last higher dev accuracy (or at the epoch limit)
    first_max = dev_accs.index(max(dev_accs)) + 1
    assert metrics["epochs_run"] == min(5, first_max + 2)


def test_a_seed_fixes_the_whole_run(graphs, syn1, tmp_path):
    runs = [
        tr.train_and_evaluate(
            graphs,
            "syn1",
            {**TINY, "encoder": "mage", "dropout": 0.3},
            {**FAST, "epochs": 2, "seed": seed},
            tmp_path / f"{seed}-{i}",
            data=syn1,
        )
        for i, seed in enumerate((3, 3, 4))
    ]
    curves = [
        json.loads((tmp_path / f"{s}-{i}" / tr.HISTORY).read_text())
        for i, s in enumerate((3, 3, 4))
    ]
    strip = lambda c: [{k: v for k, v in h.items() if not k.endswith("_time_s")} for h in c]  # noqa: E731
    assert strip(curves[0]) == strip(curves[1])  # dropout, init and batch order: all seeded
    assert runs[0]["test_acc"] == runs[1]["test_acc"]
    assert strip(curves[0]) != strip(curves[2])


def test_checkpoint_reload_and_config_mismatch_refusal(graphs, syn1, tmp_path):
    model_cfg = {**TINY, "encoder": "mage"}
    tr.train_and_evaluate(graphs, "syn1", model_cfg, {**FAST, "epochs": 1}, tmp_path, data=syn1)
    ckpt = tmp_path / tr.BEST
    model = tr.restore(ckpt, model_cfg, syn1)
    again = tr.restore(ckpt, model_cfg, syn1)
    from models.mage.data import make_batch

    batch = make_batch(syn1.splits["dev"][:8])
    with torch.no_grad():
        assert torch.equal(model(batch), again(batch))
    saved = tr.load_checkpoint(ckpt)
    assert saved["config"] == tr.checkpoint_config(model_cfg, syn1)
    assert saved["vocab"] == list(syn1.vocab.itos) and saved["epoch"] == 1
    with pytest.raises(
        tr.CheckpointMismatchError,
        match=r"model\.coref_size: 8 \(checkpoint\) "
        r"!= 4 \(requested\)",
    ):
        tr.restore(ckpt, {**model_cfg, "coref_size": 4}, syn1)
    other = load_reader_data(graphs, "syn1", {"min_count": 300})
    with pytest.raises(tr.CheckpointMismatchError, match=r"data\.min_count.*data\.vocab_size"):
        tr.restore(ckpt, model_cfg, other)
    # no temporary files left beside the checkpoint (atomic writes)
    assert sorted(p.name for p in tmp_path.iterdir()) == [tr.BEST, tr.HISTORY]


def test_model_configs_and_labels():
    assert tr.model_label({}) == "bigru"
    assert tr.model_label({"encoder": "mage", "coref_size": 32}) == "bigru+mage32"
    assert tr.model_label({"reader": "ga", "encoder": "mage", "mage_mode": "shared"}) == (
        "ga+mage-shared"
    )
    assert tr.model_label({"reader": "ga", "encoder": "dagrnn"}) == "ga+dagrnn"
    assert tr.model_label({"one_hot": True}) == "bigru+onehot"
    assert tr.model_label({"encoder": "mage", "token_in_query": True}) == "bigru+mage16+inquery"
    # total hidden fixed at 256 (§4.2): MAGE(16) splits it 240 + 16
    assert tr.resolve_model({"encoder": "mage"}).hidden_size == 256
    # aliases resolved and settings that play no part normalized away: equal models are equal
    assert tr.resolve_model({"reader": "ga", "encoder": "dagrnn", "coref_size": 8}) == (
        tr.resolve_model({"reader": "ga", "encoder": "mage", "mage_mode": "dagrnn"})
    )
    assert tr.resolve_model({"num_layers": 2, "coref_size": 4}) == tr.resolve_model({})
    assert tr.resolve_model(tr.resolve_model({"encoder": "dagrnn"})).mage_mode == "dagrnn"
    with pytest.raises(
        tr.CorefreproError,
        match=r"train_mage model\.hidden: unknown setting \(did you mean hidden_size\?\)",
    ):
        tr.resolve_model({"hidden": 3})
    with pytest.raises(
        tr.CorefreproError,
        match=r"train_mage train\.epoch: unknown setting \(did you mean epochs\?\)",
    ):
        tr.resolve_train_cfg({"epoch": 3})


def test_every_table1_variant_builds_and_runs(syn1):
    from models.mage.data import make_batch

    batch = make_batch(syn1.splits["dev"][:4])
    for cfg in (
        {"one_hot": True},
        {"reader": "ga", "num_layers": 2},
        {"reader": "ga", "encoder": "mage", "num_layers": 2},
        {"reader": "ga", "encoder": "mage", "mage_mode": "shared", "num_layers": 2},
        {"reader": "ga", "encoder": "dagrnn", "num_layers": 2},
        {"encoder": "mage", "token_in_query": True},
        {"reader": "ga", "encoder": "mage", "num_layers": 2, "token_in_query": True},
    ):
        model = tr.build_model({**TINY, **cfg}, syn1).eval()
        with torch.no_grad():
            log_p = model(batch)
        assert log_p.shape == batch["candidates"].shape, cfg
        # attention sum: the candidates' share of the attention (<= 1), -inf on padding
        mass = log_p.exp().sum(-1)
        assert bool(((mass > 0) & (mass <= 1 + 1e-5)).all()), cfg
        assert bool(torch.isneginf(log_p[~batch["candidate_mask"]]).all()), cfg


def test_learning_curve_is_logged_to_mlflow_per_epoch(graphs, tmp_path, monkeypatch):
    import mlflow

    import flows.train_mage as flow

    settings = {"data": "synthetic-gold", "model_defaults": TINY, "models": {"bigru-tiny": {}},
                "seeds": [7], "train": {**FAST, "epochs": 2}}  # fmt: skip
    uri = _stage_in(tmp_path, settings, graphs, monkeypatch, track=True)
    metrics = flow.train_mage("bigru-tiny", "syn1")
    client = mlflow.tracking.MlflowClient(uri)
    exp = client.get_experiment_by_name("train_mage")
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.run_name == "train_mage@bigru-tiny-syn1/seed7"
    assert run.data.tags["dataset"] == "synthetic/syn1" and run.data.tags["seed"] == "7"
    curve = client.get_metric_history(run.info.run_id, "dev_acc")
    assert [m.step for m in curve] == [1, 2]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "train_loss")] == [1, 2]
    assert run.data.metrics["test_acc"] == pytest.approx(metrics["test_acc"])
    assert run.data.params["model.encoder"] == "gru"
    history = client.download_artifacts(run.info.run_id, tr.HISTORY, str(tmp_path))
    assert [h["epoch"] for h in json.loads(Path(history).read_text())] == [1, 2]


def test_runs_of_a_task_group_are_named_as_the_dvc_stage_item(graphs, tmp_path, monkeypatch):
    """Issue #30.3: runs were named train_mage@bigru-syn1+syn1_coref/seed1 where dvc.yaml,
    Prefect and the README say train_mage@bigru-syn1-all/seed1 (the task group's name); the
    dataset tag keeps the group's members."""
    import mlflow

    import flows.train_mage as flow

    settings = {"data": "synthetic-gold", "model_defaults": TINY, "models": {"bigru": {}},
                "task_groups": {"syn1-all": ["syn1", "syn1_coref"]}, "seeds": [1],
                "train": {**FAST, "epochs": 1}}  # fmt: skip
    uri = _stage_in(tmp_path, settings, graphs, monkeypatch, track=True)
    flow.train_mage("bigru", "syn1-all")
    client = mlflow.tracking.MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("train_mage").experiment_id])
    assert run.info.run_name == "train_mage@bigru-syn1-all/seed1"
    assert run.data.tags["dataset"] == "synthetic/syn1+syn1_coref"


def test_flow_writes_artifacts_and_dvc_metrics(graphs, syn1, tmp_path, monkeypatch):
    import flows.train_mage as flow

    settings = {
        "data": "synthetic-gold",
        "model_defaults": TINY,
        "models": {
            "bigru+mage8": {"encoder": "mage"},
            "mage8-seqonly": {"encoder": "mage", "train": {"edge_types": ["sequential"]}},
        },
        "task_groups": {"syn1-all": ["syn1", "syn1_coref"]},
        "task_settings": {"syn1-all": {"epochs": 1}},
        "seeds": [1, 2],
        "train": {**FAST, "epochs": 3},
    }
    _stage_in(tmp_path, settings, graphs, monkeypatch)
    out = flow.train_mage("bigru+mage8", "syn1-all")
    metrics = json.loads((tmp_path / "metrics/train_mage/bigru+mage8-syn1-all.json").read_text())
    # the written metrics are the returned ones less the wall-clock figures (logs/timings/)
    assert metrics == split_timings(json.loads(json.dumps(out, allow_nan=False)))[0]
    assert metrics["seeds"] == 2 and set(metrics["per_seed"]) == {"1", "2"}
    best = max(metrics["per_seed"].values(), key=lambda m: m["dev_acc"])
    assert metrics["dev_acc"] == best["dev_acc"]  # the reported seed is the best on dev
    assert metrics["epochs_run"] == 1  # task_settings override the train settings
    assert metrics["dataset"] == "synthetic/syn1+syn1_coref"
    for seed in (1, 2):
        d = tmp_path / f"artifacts/train_mage/bigru+mage8-syn1-all/seed{seed}"
        assert {p.name for p in d.iterdir()} == {"best.pt", "history.json", "metrics.json"}
    # model_defaults apply under every model: the tiny size, not the 256-unit default
    saved = tr.load_checkpoint(tmp_path / "artifacts/train_mage/bigru+mage8-syn1-all/seed1/best.pt")
    assert saved["config"]["model"]["hidden_size"] == TINY["hidden_size"]
    assert saved["config"]["model"]["encoder"] == "mage"
    with pytest.raises(tr.CorefreproError, match=r"no model 'gru9'.*bigru\+mage8"):
        flow.train_mage("gru9", "syn1")
    # a model entry's train overrides: the "no coreference edges" ablation as a model row
    flow.train_mage("mage8-seqonly", "syn1-all", [1])
    ablation = tr.load_checkpoint(
        tmp_path / "artifacts/train_mage/mage8-seqonly-syn1-all/seed1/best.pt"
    )
    assert ablation["config"]["data"]["edge_types"] == ["sequential"]
    assert "train" not in ablation["config"]["model"]
    assert saved["config"]["data"]["edge_types"] is None
    # the command line: one seed; the metrics file then summarizes that seed alone
    flow.main(["--model", "bigru+mage8", "--task", "syn1-all", "--seed", "3"])
    metrics = json.loads((tmp_path / "metrics/train_mage/bigru+mage8-syn1-all.json").read_text())
    assert metrics["selected_seed"] == 3 and set(metrics["per_seed"]) == {"3"}
    with pytest.raises(SystemExit) as stop:  # a pipeline error: one line, exit status 2
        flow.main(["--model", "gru9", "--task", "syn1"])
    assert stop.value.code == 2


def test_seeds_trained_apart_are_collected_without_training(graphs, syn1, tmp_path, monkeypatch):
    """`--seed k` lanes, then `--collect`: the summary is the one the joint run would write,
    and a seed that is missing or was trained under other settings is named, not used."""
    import flows.train_mage as flow

    settings = {
        "data": "synthetic-gold",
        "model_defaults": TINY,
        "models": {"bigru": {"encoder": "gru"}},
        "seeds": [1, 2],
        "train": {**FAST, "epochs": 1},
    }
    _stage_in(tmp_path, settings, graphs, monkeypatch)
    metrics_file = tmp_path / "metrics/train_mage/bigru-syn1.json"
    joint = flow.train_mage("bigru", "syn1")  # seeds 1 and 2 in one run
    flow.main(["--model", "bigru", "--task", "syn1", "--seed", "2"])  # a lane: seed 2 alone
    assert set(json.loads(metrics_file.read_text())["per_seed"]) == {"2"}
    monkeypatch.setattr(tr, "train_and_evaluate", None)  # collecting must not train
    flow.main(["--model", "bigru", "--task", "syn1", "--collect"])
    collected = json.loads(metrics_file.read_text())
    same = ("selected_seed", "dev_acc", "test_acc", "test_error", "seeds", "best_epoch")
    assert {k: collected[k] for k in same} == {k: joint[k] for k in same}  # seeded: equal
    assert collected["test_error_mean"] == pytest.approx(joint["test_error_mean"], abs=1e-5)
    for seed, row in joint["per_seed"].items():
        assert collected["per_seed"][seed]["dev_acc"] == row["dev_acc"]
        assert collected["per_seed"][seed]["test_acc"] == row["test_acc"]
    # settings changed since seed 2 was trained: refused, with the command that retrains it
    settings["train"] = {**FAST, "epochs": 2}
    with pytest.raises(tr.CorefreproError, match=r"seed 1: .*other settings.*--seed 1"):
        flow.collect_mage("bigru", "syn1")
    settings["train"] = {**FAST, "epochs": 1, "threads": 2}  # run-only keys do not count
    assert flow.collect_mage("bigru", "syn1")["seeds"] == 2
    with pytest.raises(tr.CorefreproError, match=r"seed 3: no .*metrics.json.*--seed 3"):
        flow.collect_mage("bigru", "syn1", [1, 3])


def _stage_in(tmp_path, settings, graphs, monkeypatch, *, track: bool = False) -> str:
    """The train_mage stage with these params.yaml settings, writing under tmp_path; with
    track, into an MLflow store there (its URI returned), else untracked."""
    import flows.train_mage as flow
    from tasks.core import config

    monkeypatch.setattr(
        flow,
        "settings",
        lambda: parse_settings(mage_stage.TrainMageSettings, settings, "train_mage"),
    )
    monkeypatch.setattr(flow, "graphs_path", lambda cfg, run=None: graphs)
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)  # artifacts/ and metrics/ of the stage
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    if track:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
        monkeypatch.setattr("tasks.core.tracking.artifact_root",
                            lambda: (tmp_path / "art").as_uri())  # fmt: skip
        monkeypatch.setattr("tasks.core.tracking.stage_lock_hash", lambda stage: "none")
    else:
        seed = flow.train_seed_task
        monkeypatch.setattr(flow, "train_seed_task",
                            lambda *a, **k: seed.fn(*a, **{**k, "track": False}))  # fmt: skip
    return uri


# --------------------------------------------------------------------------- LAMBADA subsets


class FirstCandidate(torch.nn.Module):
    """Always answers the first candidate: the document's first (known) token."""

    def forward(self, batch):
        if "candidates" not in batch:  # classify: the first class
            return torch.log_softmax(torch.arange(4.0, 0, -1).expand(len(batch["answer"]), 4), -1)
        scores = torch.zeros(batch["candidates"].shape)
        scores[:, 0] = 1.0
        return torch.log_softmax(scores.masked_fill(~batch["candidate_mask"], -1e4), -1)


def lambada_table(tmp_path: Path) -> Path:
    """Hand-made LAMBADA rows; which ones FirstCandidate gets right is known by construction."""
    from tests.models.mage.test_data import lambada_row, write_graphs

    rows = [
        lambada_row("l/train/0/i", "train", "Anna met Bob . Then Carl waved at", "Bob"),
        lambada_row("l/train/1/i", "train", "Carl met Anna . Then Bob waved at", "Anna"),
        # dev: answer first in the context (right), later (wrong), only in the query (wrong,
        # outside 'context'), first (right): context 2/3, all 2/4
        lambada_row("l/dev/0/i", "dev", "Anna met Bob . Then she waved at", "Anna"),
        lambada_row("l/dev/1/i", "dev", "Bob met Anna . Then she waved at", "Anna"),
        lambada_row("l/dev/2/i", "dev", "Anna met Bob . Then Carl waved at", "Carl"),
        lambada_row("l/dev/3/i", "dev", "Carl met Bob . Then he waved at", "Carl"),
        # test: right, and an answer found nowhere in the passage: context 1/1, all 1/2
        lambada_row("l/test/0/i", "test", "Bob met Carl . Then he waved at", "Bob"),
        lambada_row("l/test/1/i", "test", "Bob met Carl . Then he waved at", "Dora"),
    ]
    return write_graphs(tmp_path / "lambada.parquet", rows)


LAMBADA_CFG = {"output": "attention_sum", "answer_candidates": "document"}


def test_evaluate_reports_context_and_all_accuracy(tmp_path):
    data = load_reader_data(lambada_table(tmp_path), "lambada", LAMBADA_CFG)
    kwargs = dict(batch_size=3, device=torch.device("cpu"), autocast=contextlib.nullcontext)
    dev = tr.evaluate(FirstCandidate(), data, "dev", **kwargs)
    test = tr.evaluate(FirstCandidate(), data, "test", **kwargs)
    assert (dev["acc"], dev["n"], dev["context_acc"], dev["context_n"]) == (2 / 4, 4, 2 / 3, 3)
    assert (test["acc"], test["n"], test["context_acc"], test["context_n"]) == (1 / 2, 2, 1, 1)
    assert tr.subset_metrics(dev, test) == {
        "context": {"dev_acc": 2 / 3, "test_acc": 1.0, "dev_n": 3, "test_n": 1},
        "all": {"dev_acc": 0.5, "test_acc": 0.5, "dev_n": 4, "test_n": 2},
    }
    # where 'context' is 'all' (the synthetic corpus's candidate lists) nothing extra
    classify = load_reader_data(tmp_path / "lambada.parquet", "lambada", {"output": "classify"})
    assert "context_acc" not in tr.evaluate(FirstCandidate(), classify, "dev", **kwargs)


def test_lambada_run_writes_subsets_and_split_notes_and_logs_them(tmp_path):
    path = lambada_table(tmp_path)
    cfg = {**LAMBADA_CFG, "train_from_dev": 0.5}
    with pytest.raises(tr.CorefreproError, match="train_from_dev is for tasks without train"):
        tr.train_and_evaluate(path, "lambada", TINY, {**FAST, **cfg}, tmp_path / "x")
    from tests.models.mage.test_data import lambada_row, write_graphs

    rows = [
        lambada_row(f"l/dev/{d}/i", "dev", f"Anna met Bob{d % 3} . Then she waved at", a)
        for d, a in enumerate(["Anna", "Bob0", "Carl", "Anna", "Bob1", "Dora"] * 2)
    ]
    path = write_graphs(tmp_path / "carve.parquet", rows)
    logged: dict[str, float] = {}
    metrics = tr.train_and_evaluate(
        path, "lambada", TINY, {**FAST, **cfg, "epochs": 1}, tmp_path / "out", model_name="m",
        log_metrics=lambda m, step: logged.update(m) if step is None else None,
    )  # fmt: skip
    assert metrics["train_n"] == 6 and metrics["dev_n"] == 6 and metrics["test_n"] == 0
    sub = metrics["subsets"]
    assert sub["all"] == {
        "dev_acc": metrics["dev_acc"],
        "test_acc": None,
        "dev_n": 6,
        "test_n": 0,
    }
    held_out = load_reader_data(path, "lambada", cfg).splits["dev"]
    assert sub["context"]["dev_n"] == sum(ex["in_context"] for ex in held_out) < 6
    assert set(metrics["split_notes"]) == {"train", "dev"}
    # the run's final figures (its MLflow metrics)
    assert logged["context_dev_acc"] == pytest.approx(sub["context"]["dev_acc"])
    assert logged["all_dev_acc"] == pytest.approx(metrics["dev_acc"])
    assert "context_test_acc" not in logged  # no test split: nothing invented
    # the DVC metrics of the stage carry both, from the selected seed
    summary = mage_stage.summarize("m-lambada", [{**metrics, "task": "lambada"}])
    assert summary["subsets"] == jsonable(sub) == summary["per_seed"]["1"]["subsets"]
    assert summary["split_notes"] == metrics["split_notes"]


def test_a_coreference_part_as_large_as_the_state_is_refused_before_any_data(tmp_path,
                                                                           monkeypatch):  # fmt: skip
    settings = {"data": "synthetic-gold", "model_defaults": {**TINY, "hidden_size": 64},
                "models": {"m64": {"encoder": "mage", "coref_size": 64},
                           "g64": {"encoder": "gru", "coref_size": 64}}}  # fmt: skip
    import flows.train_mage as flow

    cfg = parse_settings(mage_stage.TrainMageSettings, settings, "train_mage")
    monkeypatch.setattr(flow, "graphs_path", lambda cfg, run=None: tmp_path / "absent.parquet")
    with pytest.raises(tr.ConfigError, match=r"train_mage.models.m64: coref_size 64 must be in"):
        flow.plan(cfg, "m64", "syn1")
    assert flow.plan(cfg, "g64", "syn1")  # a plain GRU has no coreference part
