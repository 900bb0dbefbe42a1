"""models/coref/stacked.py (issue #15.1): K seeds of the coreference model trained as one
computation give each seed the run it gets alone -- the same per-epoch losses and dev scores
(float tolerance), best epoch and checkpoint -- with dropout on and random crops, so each
seed's document order, crops and dropout masks are its own; through the flow, one MLflow run
and one metrics.json per seed."""

from __future__ import annotations

import json

import pytest
import torch

from models.coref import stacked as st
from models.coref.model import AttentionalSentenceLinking, LinearSentenceLinking
from models.coref.train import (
    BEST,
    HISTORY,
    load_checkpoint,
    train_and_evaluate,
    train_and_evaluate_stacked,
)
from tests.models.coref.test_train import FAST, TINY, run_flow, splits  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SEEDS = (1, 2, 3)
# crops of 2 sentences: each seed draws its own; dropout as the paper's (0.2, lexical 0.5)
# biases added to every logit of a softmax (head attention, L&G Eq. 1): their gradient is
# rounding noise, which Adam scales to full-size steps, so they are not compared
SHIFT_INVARIANT = ("head_scorer.bias", "attend_out.bias")
TRAIN = {**FAST, "epochs": 2, "max_sentences": 2, "resume": False}


def _curve(path):
    return json.loads((path / HISTORY).read_text())


@pytest.mark.parametrize("encoder", ["baseline", "lsl", "asl"])
def test_stacked_seeds_reproduce_separate_runs(splits, tmp_path, encoder):  # noqa: F811
    docs, _ = splits
    mcfg = {**TINY, "encoder": encoder}
    data = (docs["train"], docs["dev"], docs["test"], mcfg)
    alone = [train_and_evaluate(*data, {**TRAIN, "seed": s}, tmp_path / f"alone{s}")
             for s in SEEDS]  # fmt: skip
    together = train_and_evaluate_stacked(
        *data, [{**TRAIN, "seed": s} for s in SEEDS], [tmp_path / f"stacked{s}" for s in SEEDS]
    )
    for s, one, other in zip(SEEDS, alone, together, strict=True):
        assert other["seed"] == s and other["stacked_with"] == list(SEEDS)
        assert other["best_epoch"] == one["best_epoch"]
        a, b = _curve(tmp_path / f"alone{s}"), _curve(tmp_path / f"stacked{s}")
        assert [r["train_loss"] for r in b] == pytest.approx([r["train_loss"] for r in a],
                                                             rel=1e-4)  # fmt: skip
        assert [r["dev_conll_f1"] for r in b] == pytest.approx([r["dev_conll_f1"] for r in a])
        assert other["test"]["conll_f1"] == pytest.approx(one["test"]["conll_f1"])
        ka = load_checkpoint(tmp_path / f"alone{s}" / BEST)["state_dict"]
        kb = load_checkpoint(tmp_path / f"stacked{s}" / BEST)["state_dict"]
        for name, value in ka.items():
            if name.endswith(SHIFT_INVARIANT):
                continue
            torch.testing.assert_close(kb[name], value, rtol=1e-4, atol=1e-5, msg=name)
    # the seeds did learn different things (own init, order, crops and masks)
    losses = {round(_curve(tmp_path / f"stacked{s}")[0]["train_loss"], 6) for s in SEEDS}
    assert len(losses) == len(SEEDS)


def _models(encoder_type, k=3, **sizes):
    torch.manual_seed(0)
    if encoder_type is LinearSentenceLinking:
        return [LinearSentenceLinking(6, 5, dropout=0.0) for _ in range(k)]
    return [AttentionalSentenceLinking(6, 5, 4, "scalar") for _ in range(k)]


@pytest.mark.parametrize("encoder_type", [LinearSentenceLinking, AttentionalSentenceLinking])
def test_batched_encoders_equal_each_seed_alone_on_documents_of_different_shapes(encoder_type):
    """Documents of 3, 1 and 4 sentences of different widths, padded into one batch: each
    seed's outputs (on its real words) are its own encoder's; padded rows stay finite."""
    encoders = _models(encoder_type)
    lengths = [torch.tensor([3, 1, 2]), torch.tensor([4]), torch.tensor([2, 5, 1, 3])]
    embs = [torch.randn(len(n), int(n.max()), 6, requires_grad=True) for n in lengths]
    x, n = st._pad(embs, lengths)
    streams = st.SeedStreams([st.SeedStreams.capture() for _ in encoders])
    shapes = [tuple(e.shape[:2]) for e in embs]
    out = st.ENCODE[encoder_type](encoders, x, n, streams, shapes)
    assert torch.isfinite(out).all()
    out.sum().backward()
    for k, (enc, e, length) in enumerate(zip(encoders, embs, lengths, strict=True)):
        alone = enc(e.detach(), length)
        valid = torch.arange(e.shape[1]) < length.unsqueeze(1)
        torch.testing.assert_close(out[k, : e.shape[0], : e.shape[1]][valid], alone[valid],
                                   rtol=1e-5, atol=1e-6)  # fmt: skip
        assert torch.isfinite(e.grad).all()
    for p in (p for enc in encoders for p in enc.parameters()):
        assert p.grad is None or torch.isfinite(p.grad).all()


def test_stacked_models_must_share_a_configuration(splits):  # noqa: F811
    from models.coref.model import CorefConfig, CorefModel

    base = {"vocab_size": 10, "num_chars": 5, "num_genres": 1, "embedding_dim": 4,
            "char_filters": 2, "lstm_size": 4, "ffnn_size": 4, "feature_size": 2}  # fmt: skip
    models = [CorefModel(CorefConfig.from_dict(base)),
              CorefModel(CorefConfig.from_dict({**base, "lstm_size": 6}))]  # fmt: skip
    streams = st.SeedStreams([st.SeedStreams.capture()] * 2)
    with pytest.raises(ValueError, match="one configuration"):
        st.StackedCoref(models, streams)


def test_flow_trains_seeds_stacked_with_one_mlflow_run_per_seed(splits, tmp_path, monkeypatch):  # noqa: F811
    docs, _ = splits
    settings = {"corpora": ["handmade"], "seeds": [1, 2], "model": TINY,
                "train": {**TRAIN, "seeds_stacked": True}}  # fmt: skip
    client = run_flow(monkeypatch, tmp_path, docs, settings, "lsl")
    summary = json.loads((tmp_path / "metrics" / "train_coref" / "lsl.json").read_text())
    assert summary["seeds"] == 2 and set(summary["per_seed"]) == {"1", "2"}
    for s in (1, 2):
        seed_metrics = json.loads((tmp_path / "artifacts" / "train_coref" / "lsl" / f"seed{s}" / "metrics.json")
                                  .read_text())  # fmt: skip
        assert seed_metrics["stacked_with"] == [1, 2] and seed_metrics["dataset"] == "handmade"
    exp = client.get_experiment_by_name("train_coref")
    runs = {r.info.run_name: r for r in client.search_runs([exp.experiment_id])}
    assert set(runs) == {"train_coref@lsl/seed1", "train_coref@lsl/seed2"}
    for s in (1, 2):
        run = runs[f"train_coref@lsl/seed{s}"]
        history = client.get_metric_history(run.info.run_id, "dev_conll_f1")
        assert [m.step for m in history] == [1, 2]
        assert run.data.params["embeddings"] == "random"
        assert run.data.params["train.seed"] == str(s)
