"""The Entity-Gating layer and the CoreLM wrapper (papers/003 §3.2-3.3, App. A)."""

from __future__ import annotations

import torch

from models.corelm.model import CoreLM, EntityGating, causal_lm_loss, running_entity_means


def test_gating_keeps_shapes_and_is_causal():
    torch.manual_seed(0)
    layer = EntityGating(16, 4).eval()
    h, c = torch.randn(2, 7, 16), torch.randn(2, 7, 16)
    out = layer(h, c)
    assert out.shape == h.shape
    h2, c2 = h.clone(), c.clone()
    h2[:, 5:], c2[:, 5:] = torch.randn(2, 2, 16), torch.randn(2, 2, 16)  # change the future only
    assert torch.allclose(layer(h2, c2)[:, :5], out[:, :5], atol=1e-6)


def test_gate_flow_rate_bounds_the_gate():
    layer = EntityGating(8, 2, flow_rate=0.5)
    with torch.no_grad():
        layer.gate.fill_(50.0)
    assert torch.allclose(layer.gate_value(), torch.full((8,), 0.5))  # Eq. 14: alpha * sigmoid


def test_gate_zero_gives_the_backbone_logits_exactly(tiny):
    model = CoreLM(tiny.model, n_entities=3, n_heads=2, flow_rate=0.0).eval()
    ids = torch.tensor([tiny.tokenizer("Mary went to the kitchen .")["input_ids"]])
    ents = torch.tensor([[1] * ids.shape[1]])
    with torch.no_grad():
        expected = tiny.model(ids).logits
        got = model(ids, ents)
    assert torch.equal(got, expected)


def test_entities_change_the_output_when_the_gate_is_open(tiny):
    torch.manual_seed(0)
    model = CoreLM(tiny.model, n_entities=3, n_heads=2).eval()
    with torch.no_grad():
        model.entities[1].normal_()
    ids = torch.tensor([tiny.tokenizer("Mary went to the kitchen .")["input_ids"]])
    ents = torch.zeros_like(ids)
    ents[0, 0] = 2  # row 1 of the table
    with torch.no_grad():
        a, b = model(ids, ents), model(ids, entity_mode="none")
    assert not torch.allclose(a, b)


def test_frozen_parameters_get_no_gradient(tiny):
    model = CoreLM(tiny.model, n_entities=3, n_heads=2)
    model.freeze_for_training()
    ids = torch.tensor([tiny.tokenizer("Mary went to the kitchen . She")["input_ids"]])
    ents = torch.ones_like(ids)
    loss, _ = causal_lm_loss(model(ids, ents), ids)
    loss.backward()
    for name, p in model.backbone.named_parameters():
        if ".h." in name or "ln_f" in name:  # decoder blocks and the final norm: frozen
            assert not p.requires_grad and p.grad is None, name
    assert model.backbone.transformer.wte.weight.grad is not None  # input (+ tied head)
    assert model.backbone.transformer.wpe.weight.grad is not None
    assert model.gating.query.weight.grad is not None
    assert model.entities.grad is not None and model.entities.grad[0].abs().sum() > 0
    tiny.model.zero_grad(set_to_none=True)


def test_cached_mode_freezes_the_input_embeddings_and_unties_the_head(tiny):
    import copy

    model = CoreLM(copy.deepcopy(tiny.model), n_entities=2, n_heads=2)
    model.untie_head()
    model.freeze_for_training(embeddings=False)
    assert not model.backbone.transformer.wte.weight.requires_grad
    assert model.head.weight.requires_grad
    assert model.head.weight is not model.backbone.transformer.wte.weight


def test_running_entity_means_are_causal_means():
    h = torch.arange(12, dtype=torch.float32).view(1, 6, 2)
    ids = torch.tensor([[1, 0, 1, 2, 1, 0]])
    out = running_entity_means(h, ids)
    assert torch.equal(out[0, 0], h[0, 0])
    assert torch.equal(out[0, 2], (h[0, 0] + h[0, 2]) / 2)
    assert torch.equal(out[0, 4], (h[0, 0] + h[0, 2] + h[0, 4]) / 3)
    assert torch.equal(out[0, 3], h[0, 3]) and torch.equal(out[0, 1], torch.zeros(2))
