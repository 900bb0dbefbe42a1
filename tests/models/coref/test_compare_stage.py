"""Stage `compare_coref` (flows/compare_coref.py) on the handmade corpus with tiny models
trained here (tests/models/coref/test_kbest_stage.py make_root); the paths of a checkout are
redirected into a temp directory."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import torch

import flows.compare_coref as flow
from models.coref.data import load_splits
from models.coref.train import BEST, evaluate, load_checkpoint, restore, train_and_evaluate
from tasks.core import config
from tasks.core.errors import CorefreproError
from tasks.core.settings import ConfigError
from tests.models.coref.test_kbest_stage import FAST, TINY, make_root


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """asl seed 1 (make_root), a baseline seed 1 trained here, and `same`: a copy of asl."""
    root = make_root(tmp_path_factory.mktemp("checkout"))
    splits = load_splits([root / "data" / "docs" / "handmade"])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = root / "artifacts" / "train_coref" / "baseline" / "seed1"
        train_and_evaluate(splits["train"], splits["dev"], splits["test"],
                           {**TINY, "encoder": "baseline"}, FAST, out)  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    arts = root / "artifacts" / "train_coref"
    shutil.copytree(arts / "asl", arts / "same")
    return root


@pytest.fixture
def stage(root, monkeypatch):
    """Run the stage inside `root`; returns the compare_coref params (edit them to change it)."""
    real = config.params()
    settings = copy.deepcopy(real)
    settings["train_coref"] = {**settings["train_coref"], "corpora": ["handmade"], "seeds": [1]}
    settings["compare_coref"] = {"a": "baseline", "b": "asl", "split": "test", "trials": 200}

    def params(section=None, path=None):
        return settings if section is None else settings[section]

    monkeypatch.setattr(config, "REPO_ROOT", root)
    monkeypatch.setattr(config, "params", params)
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    yield settings["compare_coref"]


def _test_f1(root: Path, encoder: str) -> float:
    """The checkpoint's test CoNLL F1 as training scores it (models/coref/train.py evaluate)."""
    ckpt = load_checkpoint(root / "artifacts" / "train_coref" / encoder / "seed1" / BEST)
    model, vocab = restore(ckpt)
    docs = load_splits([root / "data" / "docs" / "handmade"])["test"]
    return evaluate(model, docs, vocab)["conll_f1"]


def test_each_system_scores_as_training_recorded_it_and_the_test_is_paired(stage, root):
    metrics = flow.run(track=False)
    written = json.loads((root / "metrics" / "compare_coref.json").read_text())
    assert written == metrics
    pooled = metrics["pooled"]
    # one seed: pooled = that seed; per-document counts summed = training's micro score
    for encoder in ("baseline", "asl"):
        assert pooled[encoder] == pytest.approx(_test_f1(root, encoder), abs=1e-6)
        assert metrics["per_seed"]["1"][encoder] == pooled[encoder]
    assert pooled["difference"] == pytest.approx(pooled["asl"] - pooled["baseline"], abs=1e-6)
    assert 0.0 < pooled["p_value"] <= 1.0
    assert metrics["documents"] == len(load_splits([root / "data" / "docs" / "handmade"])["test"])


def test_a_system_against_itself_differs_by_nothing(stage):
    stage["a"] = "same"
    pooled = flow.run(track=False)["pooled"]
    assert pooled["difference"] == 0.0 and pooled["p_value"] == 1.0


def test_a_missing_seed_names_its_checkpoint(stage, root, monkeypatch):
    coref = config.params("train_coref")
    monkeypatch.setitem(coref, "seeds", [1, 2])
    with pytest.raises(CorefreproError, match=r"baseline/seed2/best.pt: no checkpoint"):
        flow.run(track=False)


def test_one_encoder_twice_is_refused(stage):
    stage["b"] = "baseline"
    with pytest.raises(ConfigError, match="a and b are both 'baseline'"):
        flow.settings()
