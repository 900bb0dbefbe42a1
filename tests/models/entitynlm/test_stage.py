"""Stage smoke test: train_entitynlm (flows/train_entitynlm.py) on tiny embedded-style views,
both models, metrics out."""

from __future__ import annotations

import json

import pytest

import flows.train_entitynlm as stage
from models.entitynlm import train
from models.entitynlm.data import Vocab
from tasks.core import config
from tests.models.entitynlm.helpers import doc


def _splits():
    ann = [(1, 0, 2), (1, 0, 1), (0, -1, 0), (1, 1, 1), (1, 0, 1), (0, -1, 0), (1, 1, 1)]
    words = ["the", "cat", "saw", "him", "it", "ran", "he"]
    make = lambda split, k: doc(words, ann, f"run/{split}{k}")  # noqa: E731
    splits = {s: [make(s, k) for k in range(n)] for s, n in (("train", 6), ("dev", 2), ("test", 2))}
    for s, docs in splits.items():
        for d in docs:
            d.split = s
    return splits


@pytest.mark.slow
def test_stage_trains_both_models_and_reports_perplexities(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)  # artifacts/train_entitynlm/<model>/seed<k>
    splits = _splits()
    vocab = Vocab.build(splits["train"])
    cfg = stage.TrainEntityNLMSettings(
        model=train.ModelSettings(embed_dim=8, hidden_size=8, l_max=3, min_count=1),
        train=train.TrainSettings(epochs=2, batch_tokens=64, threads=1, device="cpu"),
        evaluation=train.EvalSettings(samples=10, samples_grid=[3, 10], sampling_seeds=[1, 2]),
    )
    results = {k: stage.train_seed(k, 1, (splits, vocab), cfg, track=False) for k in train.MODELS}
    enlm, rnn = (stage.summarize(k, [results[k]]) for k in train.MODELS)
    assert enlm["vocab_size"] == rnn["vocab_size"] == len(vocab)
    assert enlm["test_ppl"]["mean"] > 1 and rnn["test_ppl"]["mean"] > 1
    assert enlm["selected"]["test"]["is_ppl"]["n"] == 2
    assert enlm["selected"]["dev"]["joint_ppl"] > enlm["dev_ppl"]["mean"] * 0.5
    seed1 = tmp_path / "artifacts" / "train_entitynlm" / "entitynlm" / "seed1"
    assert (seed1 / "best.pt").is_file()
    assert json.loads((seed1 / "metrics.json").read_text())["seed"] == 1
    assert sorted(enlm["test_ppl_by_samples"]) == ["10", "3"] and enlm["is_samples"] == 10
    assert sorted(enlm["selected"]["test"]["is_by_corpus"]) == ["run"]
    per_doc = json.loads((seed1 / train.IS_DOCUMENTS).read_text())
    assert [len(per_doc[s]) for s in ("dev", "test")] == [2, 2]
    assert all(r["bound"] >= r["gold_joint"] for r in per_doc["test"])
