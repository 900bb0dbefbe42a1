"""tasks/training/stage.py: what a training stage does around its seeds' folders."""

from __future__ import annotations

import dataclasses

import pytest

import flows.train_coref as coref_stage
import flows.train_entitynlm as entitynlm_stage
from tasks.core import config
from tasks.training import stage as training_stage
from tasks.training.stage import artifact_dir, drop_other_seeds


def _seed_folders(stage: str, item: str, seeds) -> None:
    for seed in seeds:
        folder = artifact_dir(stage, item, seed)
        folder.mkdir(parents=True)
        (folder / "last.pt").write_bytes(b"x")


def _left(stage: str, item: str) -> list[str]:
    return sorted(p.name for p in artifact_dir(stage, item, 1).parent.iterdir())


def test_a_run_of_the_whole_seed_list_drops_the_seed_folders_of_an_earlier_list(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    _seed_folders("train_coref", "asl", [1, 2, 3])
    (artifact_dir("train_coref", "asl", 1).parent / "notes.txt").write_text("kept")
    drop_other_seeds("train_coref", "asl", [1, 3])
    assert _left("train_coref", "asl") == ["notes.txt", "seed1", "seed3"]
    assert (artifact_dir("train_coref", "asl", 3) / "last.pt").read_bytes() == b"x"
    drop_other_seeds("train_coref", "lsl", [1])  # no folder yet: nothing to do


@pytest.mark.parametrize(
    ("module", "item", "call"),
    [
        (coref_stage, "asl", lambda m, seed: m.train_coref("asl", seed)),
        (entitynlm_stage, "entitynlm", lambda m, seed: m.train_entitynlm("entitynlm", seed)),
    ],
)
def test_the_persisted_stages_drop_stale_seeds_but_a_lane_of_one_seed_keeps_the_others(
    tmp_path, monkeypatch, module, item, call
):
    """train_coref and train_entitynlm persist their folders (resume from last.pt): the
    stage's own command (every seed) drops seed folders params.yaml no longer lists; `--seed
    k` (one lane of several) must not touch the other lanes' folders."""
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    stage = module.STAGE
    cfg = type("Cfg", (), {"seeds": [1], "train": None, "runs": [], "corpora": []})()
    if module is coref_stage:
        monkeypatch.setattr(module, "settings", lambda: cfg)
        monkeypatch.setattr(module, "train_seed_task", lambda *a, **k: {"seed": a[1]})
        monkeypatch.setattr(module, "write_summary", lambda family, it, results: results)
        monkeypatch.setattr(module, "encoder_model_cfg", lambda c, e: {})
        monkeypatch.setattr(module, "prepare_data", lambda e, c: None)
        monkeypatch.setattr(module, "stacked", lambda c, s: False)
    else:  # the generic stage (tasks/training/stage.py train_item) with the family's hooks
        family = dataclasses.replace(module.FAMILY, prepare_data=lambda c: ({}, []),
                                     run_params=lambda c, d: {})  # fmt: skip
        monkeypatch.setattr(module, "FAMILY", family)
        monkeypatch.setattr(training_stage, "load_settings", lambda f: cfg)
        monkeypatch.setattr(module, "train_seed_task", lambda *a, **k: {"seed": a[2]})
        monkeypatch.setattr(training_stage, "write_summary", lambda family, it, results: results)
    _seed_folders(stage, item, [1, 2])
    assert call(module, 2) == [{"seed": 2}]  # a lane: seed 2 alone
    assert _left(stage, item) == ["seed1", "seed2"]
    assert call(module, None) == [{"seed": 1}]  # the stage: params' seeds [1]
    assert _left(stage, item) == ["seed1"]
