"""The released code's optimisation recipe (recipe: authors, models/mage/train.py) and the reader
options it sets (models/mage/readers.py): Glorot initial values, dropout between layers only,
the attention sum renormalised over candidate positions, the halving schedule and clipping by
value -- each against bdhingra/coref-gru (lambada branch) as cited in the modules."""

from __future__ import annotations

import json
import math

import pytest
import torch

from flows import train_mage as mage_stage
from models.mage import train as tr
from models.mage.readers import BiGRUReader, GAReader, collate_graphs, glorot_init_
from tasks.core.settings import ConfigError, parse_settings
from tests.models.mage.test_readers import EXAMPLES, VOCAB, example
from tests.models.mage.test_train import FAST, TINY, graphs, syn1  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("local_flows")


# --------------------------------------------------------------------------- settings


def test_the_authors_recipe_fills_the_keys_a_model_does_not_set():
    cfg = tr.resolve_model({"encoder": "mage", "recipe": "authors"})
    assert (cfg.init, cfg.dropout_at, cfg.attention_sum) == (
        "glorot", "between_layers", "candidates")  # fmt: skip
    assert tr.resolve_model({"recipe": "authors", "init": "torch"}).init == "torch"
    default = tr.resolve_model({})
    assert (default.init, default.dropout_at, default.attention_sum) == (
        "torch", "all", "document")  # fmt: skip
    t = tr.resolve_train_cfg({"batch_size": 8}, {"recipe": "authors"})
    assert (t.lr, t.lr_halve_from, t.lr_halve_every, t.clip, t.clip_mode) == (
        5e-4, 2, 1, 10.0, "value")  # fmt: skip
    assert tr.resolve_train_cfg({"lr": 0.01}, {"recipe": "authors"}).lr == 0.01
    plain = tr.resolve_train_cfg({})
    assert (plain.lr, plain.lr_halve_from, plain.clip_mode) == (1e-3, None, "norm")
    assert tr.model_label({"encoder": "mage", "recipe": "authors"}) == "bigru+mage16+authors"
    with pytest.raises(ConfigError, match="lr_halve_every"):
        tr.resolve_train_cfg({"lr_halve_every": 0})


def test_in_the_stage_the_recipe_overrides_the_global_train_but_not_the_models_own(
    monkeypatch, tmp_path
):
    settings = {
        "models": {
            "plain": {"encoder": "mage"},
            "authors": {"encoder": "mage", "recipe": "authors"},
            "authors-lr": {"encoder": "mage", "recipe": "authors", "train": {"lr": 0.002}},
        },
        "train": {"lr": 0.001, "epochs": 3},
        "task_settings": {"qa2": {"clip": 5.0}},
    }
    from flows.train_mage import plan

    cfg = parse_settings(mage_stage.TrainMageSettings, settings, "train_mage")
    plain = plan(cfg, "plain", "qa2").train
    assert plain.lr == 0.001 and plain.clip == 5.0
    authors = plan(cfg, "authors", "qa2").train
    assert authors.lr == 5e-4 and authors.clip == 10.0
    assert authors.clip_mode == "value" and authors.epochs == 3
    own = plan(cfg, "authors-lr", "qa2").train
    assert own.lr == 0.002 and own.lr_halve_from == 2


def test_attention_over_edges_needs_a_split_mage_state():
    assert tr.resolve_model({"edge_combine": "attention"}).edge_combine == "concat"  # gru
    cfg = tr.resolve_model({"encoder": "mage", "edge_combine": "attention"})
    assert cfg.edge_combine == "attention"
    assert tr.model_label(cfg) == "bigru+mage16-attention"
    with pytest.raises(ConfigError, match="edge_combine"):
        tr.resolve_model({"encoder": "mage", "mage_mode": "shared", "edge_combine": "attention"})


def test_the_learning_rate_is_halved_after_every_epoch_from_the_third():
    """coref-gru train.py: ``if epoch >=2 and epoch % anneal_frequency == 0: m.anneal()``, at
    the END of epoch `epoch` (0-based): epochs 0-2 at 5e-4, epoch 3 at 2.5e-4, ..."""
    t = tr.resolve_train_cfg({}, {"recipe": "authors"})
    assert [tr.epoch_lr(t, e) for e in range(5)] == [5e-4, 5e-4, 5e-4, 2.5e-4, 1.25e-4]
    every2 = tr.resolve_train_cfg({"lr": 1.0, "lr_halve_from": 1, "lr_halve_every": 2})
    assert [tr.epoch_lr(every2, e) for e in range(7)] == [1, 1, 1, 0.5, 0.5, 0.25, 0.25]
    assert tr.epoch_lr(tr.resolve_train_cfg({}), 30) == 1e-3


# --------------------------------------------------------------------------- reader options


def test_glorot_initial_values_per_gate_with_zero_biases():
    torch.manual_seed(0)
    reader = BiGRUReader(400, 300, 200, encoder="mage", coref_size=40, edge_combine="attention")
    att = reader.rnn.forward_rnn.weight_att.detach().clone()
    glorot_init_(reader)
    emb = reader.embedding.weight
    assert torch.all(emb[0] == 0)  # padding row
    assert emb[1:].std().item() == pytest.approx(math.sqrt(6 / 700), rel=0.02)
    cell = reader.rnn.forward_rnn
    for gate in cell.weight_ih.chunk(3):  # [200, 300] per gate
        assert gate.std().item() == pytest.approx(math.sqrt(6 / 500), rel=0.03)
    for gate in cell.weight_hh.chunk(3):
        assert gate.std().item() == pytest.approx(math.sqrt(6 / 400), rel=0.03)
    assert torch.all(cell.bias_ih == 0) and torch.all(cell.bias_hh == 0)
    assert torch.equal(cell.weight_att, att)  # Watt keeps its own N(0, 0.1)
    gru = BiGRUReader(50, 8, 6, init="glorot")
    assert all(torch.all(p == 0) for n, p in gru.named_parameters() if "bias" in n)


@pytest.mark.parametrize("reader_cls", [BiGRUReader, GAReader])
def test_dropout_between_layers_only_leaves_a_one_layer_reader_deterministic(reader_cls):
    batch = collate_graphs(EXAMPLES)
    torch.manual_seed(0)
    between = reader_cls(VOCAB, 8, 6, coref_size=2, dropout=0.5, dropout_at="between_layers")
    eval_out = between.eval()(batch)
    train_out = between.train()(batch)
    if reader_cls is BiGRUReader:  # one layer: no dropout at all (GA.py: only if i < K-1)
        torch.testing.assert_close(train_out, eval_out, rtol=0, atol=0)
    else:  # the gated inputs of layers 2 and 3 are still dropped out
        assert not torch.allclose(train_out, eval_out)
    torch.manual_seed(0)
    everywhere = BiGRUReader(VOCAB, 8, 6, dropout=0.5).train()
    assert not torch.allclose(everywhere(batch), everywhere.eval()(batch))


def test_the_attention_sum_renormalised_over_candidate_positions():
    """GA.py: probm = probs * cmask + EPS, renormalised: the candidates' probabilities sum to
    1 and keep the ratios of the document-wide attention sum."""
    # documents [1, 2, 3, 7, 4] and [2, 5, 2, 6] with candidates {1, 2} and {5, 6}
    batch = collate_graphs([
        example([1, 2, 3, 7, 4, 9, 1], [0, -1, -1, -1, -1, -1, 0], (0, 5), (5, 7), [1, 2], 0),
        example([9, 2, 5, 2, 6], [-1, 3, 3, -1, -1], (1, 5), (0, 1), [5, 6], 1),
    ])  # fmt: skip
    torch.manual_seed(0)
    doc = BiGRUReader(VOCAB, 8, 6).eval()
    cand = BiGRUReader(VOCAB, 8, 6, attention_sum="candidates").eval()
    cand.load_state_dict(doc.state_dict())
    p_doc, p_cand = doc(batch).exp(), cand(batch).exp()
    for b in range(2):
        assert p_doc[b].sum() < 0.99  # some attention on non-candidate tokens
        torch.testing.assert_close(p_cand[b].sum(), torch.tensor(1.0))
        torch.testing.assert_close(p_cand[b], p_doc[b] / p_doc[b].sum())
    # no candidate in the document: the document's softmax, no NaN
    lone = collate_graphs([example([9, 8, 7, 1], [-1] * 4, (0, 3), (3, 4), [5, 6], 0)])
    out = cand(lone)
    assert torch.isfinite(out).all() and torch.allclose(out, doc(lone))


# --------------------------------------------------------------------------- training


def test_clipping_by_value_and_by_norm():
    recipe = tr.ReaderRecipe.__new__(tr.ReaderRecipe)
    recipe.model = torch.nn.Linear(3, 2)
    for mode in ("value", "norm"):
        recipe.tcfg = tr.resolve_train_cfg({"clip_mode": mode})
        recipe.model.weight.grad = torch.tensor([[30.0, -0.5, 2.0], [-12.0, 0.1, 0.0]])
        recipe.model.bias.grad = torch.tensor([4.0, -40.0])
        recipe.clip_gradients(10.0, list(recipe.model.parameters()))
        g = torch.cat([recipe.model.weight.grad.flatten(), recipe.model.bias.grad])
        if mode == "value":
            assert g.tolist() == pytest.approx([10, -0.5, 2, -10, 0.1, 0, 4, -10])
        else:
            assert g.norm().item() == pytest.approx(10.0, rel=1e-4)


def test_the_authors_recipe_trains_on_its_schedule_and_reruns_identically(graphs, syn1, tmp_path):  # noqa: F811
    mcfg = {**TINY, "encoder": "mage", "dropout": 0.2, "recipe": "authors"}
    tcfg = {**FAST, "epochs": 3, "patience": None, "lr_halve_from": 0}
    runs = [
        tr.train_and_evaluate(graphs, "syn1", mcfg, tcfg, tmp_path / str(i), data=syn1)  # fmt: skip
        for i in range(2)
    ]
    curves = [json.loads((tmp_path / str(i) / tr.HISTORY).read_text()) for i in range(2)]
    assert [h["learning_rate"] for h in curves[0]] == [0.005, 0.0025, 0.00125]
    strip = lambda c: [{k: v for k, v in h.items() if not k.endswith("_time_s")} for h in c]  # noqa: E731
    assert strip(curves[0]) == strip(curves[1])
    assert runs[0]["dev_acc"] == runs[1]["dev_acc"]
    state = tr.load_checkpoint(tmp_path / "0" / tr.BEST)
    assert state["config"]["model"]["init"] == "glorot"
    assert state["config"]["model"]["attention_sum"] == "candidates"
