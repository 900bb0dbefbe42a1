"""The Entity-Gating layer and the CoreLM wrapper (papers/003 §3.2-3.3, App. A)."""

from __future__ import annotations

import pytest
import torch

from models.corelm.model import (
    CoreLM,
    EntityGating,
    causal_lm_loss,
    context_entity_means,
    entity_parameter_count,
    running_entity_means,
)

OLD_GATE = dict(gate="entity_ceiling", norm="entity_path")  # the old reading, an option


def test_gating_keeps_shapes_and_is_causal():
    torch.manual_seed(0)
    layer = EntityGating(16, 4).eval()
    h, c = torch.randn(2, 7, 16), torch.randn(2, 7, 16)
    out = layer(h, c)
    assert out.shape == h.shape
    h2, c2 = h.clone(), c.clone()
    h2[:, 5:], c2[:, 5:] = torch.randn(2, 2, 16), torch.randn(2, 2, 16)  # change the future only
    assert torch.allclose(layer(h2, c2)[:, :5], out[:, :5], atol=1e-6)


def _share(layer: EntityGating, w: float) -> float:
    with torch.no_grad():
        layer.gate.fill_(w)
    return float(layer.entity_share().detach()[0])


def test_flow_rate_half_is_a_floor_on_the_entity_share():
    """§3.3: r = 0.5 "enforces at least a fifty-fifty split" and is there "to ensure that the
    entity information is considered": the entity path's share is >= 50 % whatever w."""
    layer = EntityGating(8, 2, flow_rate=0.5)
    assert _share(layer, 0.0) == pytest.approx(0.75)  # w's initial value
    assert _share(layer, 50.0) == pytest.approx(0.5) and _share(layer, -50.0) == pytest.approx(1)
    none = EntityGating(8, 2, flow_rate=0.0)  # "r=0 results in no pass-through"
    assert _share(none, 50.0) == pytest.approx(1.0)
    old = EntityGating(8, 2, flow_rate=0.5, **OLD_GATE)  # the old ceiling: <= 50 %, 25 % at w=0
    assert _share(old, 0.0) == pytest.approx(0.25) and _share(old, 50.0) == pytest.approx(0.5)


def test_layer_norm_is_applied_to_the_gate_output():
    """§3.3: the gate combines its inputs "before applying a layer normalization to the
    output": every position of the output is normalized (LN's initial gain 1, bias 0)."""
    torch.manual_seed(0)
    h, c = 3 * torch.randn(2, 5, 16) + 1, torch.randn(2, 5, 16)
    out = EntityGating(16, 4).eval()(h, c)
    assert torch.allclose(out.mean(-1), torch.zeros(2, 5), atol=1e-5)
    assert torch.allclose(out.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-3)
    old = EntityGating(16, 4, **OLD_GATE).eval()(h, c)  # LN(Z) inside: the mix is not normed
    assert not torch.allclose(old.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-1)


def test_old_gate_at_flow_rate_zero_gives_the_backbone_logits_exactly(tiny):
    model = CoreLM(tiny.model, n_entities=3, n_heads=2, flow_rate=0.0, **OLD_GATE).eval()
    ids = torch.tensor([tiny.tokenizer("Mary went to the kitchen .")["input_ids"]])
    ents = torch.tensor([[1] * ids.shape[1]])
    with torch.no_grad():
        expected = tiny.model(ids).logits
        got = model(ids, ents)
    assert torch.equal(got, expected)


def test_table_entities_change_the_output_when_the_gate_is_open(tiny):
    torch.manual_seed(0)
    model = CoreLM(tiny.model, n_entities=3, n_heads=2, entity_vectors="table").eval()
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
    assert model.gating.entity.weight.grad.abs().sum() > 0  # W_E sees the mention means
    tiny.model.zero_grad(set_to_none=True)


def test_the_old_table_is_trained_as_an_option(tiny):
    model = CoreLM(tiny.model, n_entities=3, n_heads=2, entity_vectors="table")
    model.freeze_for_training()
    ids = torch.tensor([tiny.tokenizer("Mary went to the kitchen . She")["input_ids"]])
    loss, _ = causal_lm_loss(model(ids, torch.ones_like(ids)), ids)
    loss.backward()
    assert model.entities.grad is not None and model.entities.grad[0].abs().sum() > 0
    tiny.model.zero_grad(set_to_none=True)


def test_training_builds_entity_vectors_from_mention_states_as_at_test_time(tiny):
    """§3.2 / App. B: entity vectors are averages of the mentions' hidden states, in training
    as at test time. The old table starts at ones, the non-entity vector: at the start of
    training its entities carried no signal at all (the gating layer saw none)."""
    torch.manual_seed(0)
    ids = torch.tensor([tiny.tokenizer("Mary went to the kitchen . She picked up the apple .")
                        ["input_ids"]])  # fmt: skip
    ents = torch.zeros_like(ids)
    ents[0, [0, 1, 6, 7]] = 1  # one entity, mentioned twice
    model = CoreLM(tiny.model, n_entities=1, n_heads=2).eval()
    with torch.no_grad():
        train = model(ids, ents)  # the training forward (its default entity mode)
        test = model(ids, ents, entity_mode="running_mean")
        plain = model(ids, entity_mode="none")
    assert torch.equal(train, test) and not torch.allclose(train, plain)
    old = CoreLM(tiny.model, n_entities=1, n_heads=2, entity_vectors="table").eval()
    with torch.no_grad():
        assert torch.equal(old(ids, ents), old(ids, entity_mode="none"))


def test_the_first_token_of_an_entity_has_the_initial_vector_of_ones(tiny):
    """§3.2: "initialized as a vector of ones [...] less noise during the first occurrence of
    an entity mention": the first token sees ones, later ones the mean of earlier states."""
    model = CoreLM(tiny.model, n_entities=1, n_heads=2)
    h = torch.randn(1, 5, tiny.model.config.n_embd)
    ents = torch.tensor([[0, 1, 0, 1, 1]])
    c = model.entity_context(h, ents, "running_mean")
    assert torch.equal(c[0, 1], torch.ones_like(c[0, 1])) and torch.equal(c[0, 0], c[0, 1])
    assert torch.allclose(c[0, 3], h[0, 1]) and torch.allclose(c[0, 4], (h[0, 1] + h[0, 3]) / 2)
    inclusive = CoreLM(tiny.model, n_entities=1, n_heads=2, mention_mean="inclusive")
    assert torch.allclose(inclusive.entity_context(h, ents, "running_mean")[0, 1], h[0, 1])


def test_no_per_entity_table_in_the_parameter_count(tiny):
    """App. A: 132M parameters "after the addition of the Entity-Gating layer and the entity
    representations" = GPT-2 small's 124.44M + the layer's 7.09M: nothing per entity."""
    layer = sum(p.numel() for p in EntityGating(768, 12).parameters())
    assert layer == 7_090_176 and round((124_439_808 + layer) / 1e6) == 132
    paper = CoreLM(tiny.model, n_entities=500, n_heads=2)
    assert paper.entities is None
    assert entity_parameter_count(paper) == sum(p.numel() for p in paper.gating.parameters())
    old = CoreLM(tiny.model, n_entities=500, n_heads=2, entity_vectors="table")
    assert entity_parameter_count(old) - entity_parameter_count(paper) == 500 * 32


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
    out, has = running_entity_means(h, ids)
    assert torch.equal(out[0, 0], h[0, 0])
    assert torch.equal(out[0, 2], (h[0, 0] + h[0, 2]) / 2)
    assert torch.equal(out[0, 4], (h[0, 0] + h[0, 2] + h[0, 4]) / 3)
    assert torch.equal(out[0, 3], h[0, 3]) and torch.equal(out[0, 1], torch.zeros(2))
    prev, has = running_entity_means(h, ids, inclusive=False)
    assert has.tolist() == [[False, False, True, False, True, False]]
    assert torch.equal(prev[0, 4], (h[0, 0] + h[0, 2]) / 2)


def test_running_means_match_a_loop_across_rows_and_many_entities():
    torch.manual_seed(0)
    h = torch.randn(3, 40, 4)
    ids = torch.randint(0, 6, (3, 40))
    ids[1] *= 100  # large ids; equal ids in different rows are different entities
    for inclusive in (True, False):
        out, _ = running_entity_means(h, ids, inclusive=inclusive)
        for b in range(3):
            for t in range(40):
                k = int(ids[b, t])
                prev = [s for s in range(t + inclusive) if k and int(ids[b, s]) == k]
                want = h[b, prev].mean(0) if prev else torch.zeros(4)
                assert torch.allclose(out[b, t], want, atol=1e-6), (b, t, inclusive)


def test_context_means_average_the_whole_context_and_never_the_continuation():
    """App. B: "an average of the hidden representation of all the entity mention in that
    entry [...], excluding the last word and its entity annotation which were to be
    predicted": every mention gets the mean over the context's mentions."""
    h = torch.arange(12, dtype=torch.float32).view(1, 6, 2)
    ids = torch.tensor([[1, 0, 1, 2, 0, 1]])  # position 5 is the continuation
    out, has = context_entity_means(h, ids, torch.tensor([5]))
    assert torch.equal(out[0, 0], (h[0, 0] + h[0, 2]) / 2) and torch.equal(out[0, 2], out[0, 0])
    assert torch.equal(out[0, 5], out[0, 0])  # the continuation's own state is left out
    assert torch.equal(out[0, 3], h[0, 3]) and not has[0, 1]
