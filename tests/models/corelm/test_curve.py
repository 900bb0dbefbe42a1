"""CoreLM's learning curve (issue #58.4): a point every epoch of train.max_steps_per_epoch
batches with held-out word perplexity (CoreLM: with and without entities), the gate and the
entity path's share; the warm-up and decay over the whole run, across a kill and a resume."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from models.corelm import train
from models.corelm.model import gate_figures
from tasks.core.settings import ConfigError
from tasks.training import loop
from tests.models.corelm.test_train import (
    _corpus,
    _repo,  # noqa: F401  (tmp_path is the repository)
    _settings,
    _stage,
)

EPOCHS, STEPS = 3, 2  # a point every 2 optimizer steps, 6 in all


def _curve_cfg(tmp_path, **train_overrides):
    cfg = _settings(_corpus(tmp_path), epochs=EPOCHS, max_steps_per_epoch=STEPS, batch_size=2,
                    warmup_steps=1, **train_overrides)  # fmt: skip
    cfg.eval.curve_docs = 1
    return cfg


@pytest.mark.parametrize("model", ["ft", "corelm"])
def test_a_curve_point_every_n_steps_with_both_held_out_figures(tmp_path, monkeypatch, model):
    cfg = _curve_cfg(tmp_path)
    flow = _stage(monkeypatch, cfg)
    m = flow.train_model(model, cfg, out_dir=tmp_path / "art", track=False)
    curve = m["curve"]
    assert curve["every_steps"] == STEPS and curve["schedule_steps"] == EPOCHS * STEPS
    points = curve["points"]
    assert [p["step"] for p in points] == [0, 2, 4, 6]  # the untrained model, then each epoch
    both = {"heldout_word_ppl", "heldout_word_ppl_no_entities"}
    for p in points:
        # the one test document (eval.curve_docs 1), as the final evaluation counts it
        assert p["heldout_words"] == m["heldout"][model]["n_words"]
        assert both <= set(p) if model == "corelm" else both & set(p) == {"heldout_word_ppl"}
        assert p["heldout_word_ppl"] > 1
    assert all("dev_loss" in p and "learning_rate" in p for p in points[1:])
    assert curve["first_step_loss"] > 0
    history = json.loads((tmp_path / "art" / "history.json").read_text())
    assert [r["curve_step"] for r in history] == [2, 4, 6]
    if model == "corelm":
        init = curve["initial"]
        assert init["gate_sigmoid_mean"] == 0.5 and init["entity_share_mean"] == 0.75
        assert 0 < points[-1]["entity_norm_share"] < 1
        assert points[-1]["gate_w_mean"] != 0.0  # the gate trained
        # the last point's figures are the model's at the last epoch: the final evaluation of
        # the same documents (here every held-out one) gives the same perplexities
        final = m["heldout"]
        if history[-1]["best"]:
            assert points[-1]["heldout_word_ppl"] == pytest.approx(
                final["corelm+coref"]["word_perplexity"], rel=1e-6)  # fmt: skip
            assert points[-1]["heldout_word_ppl_no_entities"] == pytest.approx(
                final["corelm"]["word_perplexity"], rel=1e-6)  # fmt: skip


def test_mlflow_gets_the_curve_at_its_optimizer_step(tmp_path):
    cfg = _curve_cfg(tmp_path)
    from flows import train_corelm as stage

    backbone, data = stage.prepare_data(cfg)
    logged = []
    train.train_model("corelm", cfg.gating, cfg.train, backbone, data, tmp_path / "c",
                      log_metrics=lambda m, step: logged.append((dict(m), step)),
                      evaluation=cfg.eval)  # fmt: skip
    curve_steps = [s for m, s in logged if "curve_heldout_word_ppl" in m]
    epoch_steps = [s for m, s in logged if "dev_loss" in m]
    assert curve_steps == [0, 2, 4, 6] and epoch_steps == [1, 2, 3]
    assert all(not any(k.startswith("curve_") for k in m) for m, _ in logged if "dev_loss" in m)


def test_without_curve_docs_the_rows_are_as_before(tmp_path):
    cfg = _settings(_corpus(tmp_path), epochs=2, max_steps_per_epoch=2, batch_size=2)
    from flows import train_corelm as stage

    backbone, data = stage.prepare_data(cfg)
    _, facts = train.train_model("corelm", cfg.gating, cfg.train, backbone, data, tmp_path / "c",
                                 evaluation=cfg.eval)  # fmt: skip
    assert "curve" not in facts
    assert set(facts["history"][0]) == {"epoch", "train_loss", "dev_loss", "dev_ppl",
                                        "dev_n_tokens", "learning_rate", "best"}  # fmt: skip


def _kill_after(monkeypatch, epochs: int) -> None:
    """The process dies right after last.pt of epoch `epochs` is written."""
    save = loop._save_last

    def killing(path, recipe, optimizer, scheduler, scaler, state, expected):
        save(path, recipe, optimizer, scheduler, scaler, state, expected)
        if state.epoch == epochs:
            raise KeyboardInterrupt

    monkeypatch.setattr(loop, "_save_last", killing)


def test_a_killed_and_resumed_curve_is_the_uninterrupted_one(tmp_path, monkeypatch, caplog):
    """train.resume through the stage: last.pt lives in the untracked work folder (DVC
    removes the stage's outputs before it reruns it), and the resumed run's curve, learning
    rates included, is the uninterrupted run's; the decay spans the whole run."""
    cfg = _curve_cfg(tmp_path, resume=True)
    flow = _stage(monkeypatch, cfg)
    art = tmp_path / "artifacts" / "train_corelm"
    whole = flow.train_model("corelm", cfg, track=False)["curve"]
    assert not (art / "corelm" / "last.pt").exists()  # resume state is no output
    shutil.rmtree(tmp_path / "data" / "cache" / "resume")
    shutil.rmtree(art)

    with monkeypatch.context() as patch:
        _kill_after(patch, 1)
        with pytest.raises(KeyboardInterrupt):
            flow.train_model("corelm", cfg, track=False)
    shutil.rmtree(art, ignore_errors=True)  # what `dvc repro` does before rerunning the stage
    with caplog.at_level("INFO"):
        resumed = flow.train_model("corelm", cfg, track=False)["curve"]
    assert "last.pt after epoch 1" in caplog.text  # it resumed, not trained from scratch
    assert resumed == whole
    lrs = [p["learning_rate"] for p in whole["points"][1:]]
    total, warm, lr = EPOCHS * STEPS, cfg.train.warmup_steps, cfg.train.lr
    assert lrs == pytest.approx([lr * (total - s) / (total - warm) for s in (2, 4, 6)])


def test_a_resume_under_another_budget_says_the_schedule_changed(tmp_path, monkeypatch, caplog):
    cfg = _curve_cfg(tmp_path, resume=True)
    flow = _stage(monkeypatch, cfg)
    with monkeypatch.context() as patch:
        _kill_after(patch, 1)
        with pytest.raises(KeyboardInterrupt):
            flow.train_model("corelm", cfg, track=False)
    cfg.train.epochs = EPOCHS + 1
    with caplog.at_level("WARNING"):
        flow.train_model("corelm", cfg, track=False)
    assert "over 8 optimizer steps (train.epochs) where the run began with 6" in caplog.text


@pytest.mark.parametrize(("train_overrides", "setting"), [
    ({"patience": 2}, "train.patience"),
    ({"accumulate": 3}, "train.max_steps_per_epoch"),
    ({"warmup_steps": 6}, "train.warmup_steps"),
])  # fmt: skip
def test_bad_curve_settings_are_refused_naming_the_setting(tmp_path, train_overrides, setting):
    import flows.train_corelm as stage
    from tasks.core.settings import parse_settings

    raw = {"backbone": "tiny", "data": ["toy"], "gating": {"n_heads": 2},
           "tiny": {"vocab_size": 300, "n_layer": 1, "n_head": 2, "n_embd": 32, "n_positions": 64},
           "train": {"epochs": EPOCHS, "max_steps_per_epoch": STEPS, "warmup_steps": 1,
                     "block_size": 32, **train_overrides},
           "eval": {"curve_docs": 1}}  # fmt: skip
    with pytest.raises(ConfigError, match=rf"test\.{setting}:"):
        parse_settings(stage.TrainCoreLMSettings, raw, "test")
    raw["eval"] = {"curve_docs": None}  # the same train settings without a curve are fine
    parse_settings(stage.TrainCoreLMSettings, raw, "test")
    raw["eval"] = {"curve_docs": 0}
    with pytest.raises(ConfigError, match=r"eval\.curve_docs"):
        parse_settings(stage.TrainCoreLMSettings, raw, "test")


def test_a_curve_without_held_out_documents_is_refused(tmp_path):
    cfg = _curve_cfg(tmp_path)
    cfg.eval.heldout_split = "nosuch"
    from flows import train_corelm as stage

    backbone, data = stage.prepare_data(cfg)
    with pytest.raises(
        train.CorefreproError, match=r"train_corelm\.eval\.curve_docs: .* no nosuch"
    ):
        train.train_model("corelm", cfg.gating, cfg.train, backbone, data, tmp_path / "c",
                          evaluation=cfg.eval)  # fmt: skip


def test_the_gate_s_two_terms_sum_to_its_output(tmp_path):
    from models.corelm.model import EntityGating

    torch.manual_seed(0)
    for norm in ("after_gate", "entity_path"):
        layer = EntityGating(16, 2, norm=norm).eval()
        h, c = torch.randn(2, 5, 16), torch.randn(2, 5, 16)
        kept, entity = layer.mix_parts(h, c)
        out = kept + entity if norm == "entity_path" else layer.ln_out(kept + entity)
        assert torch.equal(layer(h, c), out)
    figures = gate_figures(EntityGating(16, 2, gate_init=0.0))
    assert figures["entity_share_mean"] == 0.75 and figures["gate_sigmoid_mean"] == 0.5
