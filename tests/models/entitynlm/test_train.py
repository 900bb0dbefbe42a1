"""EntityNLM training recipe: the proposal is optimised and clipped as its own model."""

from __future__ import annotations

import torch

from models.entitynlm import train
from models.entitynlm.data import Vocab
from tests.models.entitynlm.test_stage import _splits


def _recipe(clip_scope: str) -> train.LMRecipe:
    splits = _splits()
    vocab = Vocab.build(splits["train"])
    mcfg = train.ModelSettings(embed_dim=8, hidden_size=8, l_max=3, min_count=1)
    tcfg = train.TrainSettings(batch_tokens=64, threads=1, device="cpu", clip_scope=clip_scope)
    torch.manual_seed(0)
    return train.LMRecipe("entitynlm", splits, vocab, mcfg, tcfg)


def _fill_gradients(recipe: train.LMRecipe, lm_norm: float, proposal_norm: float) -> None:
    """Gradients of the given total norm on each model (same direction as a real step)."""
    for part, norm in ((recipe.model.lm, lm_norm), (recipe.model.proposal, proposal_norm)):
        params = list(part.parameters())
        for p in params:
            p.grad = torch.ones_like(p)
        total = torch.sqrt(sum((p.grad**2).sum() for p in params))
        for p in params:
            p.grad *= norm / total


def _norm(module: torch.nn.Module) -> float:
    return float(torch.sqrt(sum((p.grad**2).sum() for p in module.parameters())))


def test_each_model_has_its_own_adam_group_covering_exactly_its_parameters():
    recipe = _recipe("per_model")
    optimizer, _ = recipe.optimizer()
    groups = [{id(p) for p in g["params"]} for g in optimizer.param_groups]
    assert groups == [{id(p) for p in recipe.model.lm.parameters()},
                      {id(p) for p in recipe.model.proposal.parameters()}]  # fmt: skip
    # a step on the proposal's gradients alone leaves EntityNLM's weights and moments alone
    before = [p.detach().clone() for p in recipe.model.lm.parameters()]
    for p in recipe.model.proposal.parameters():
        p.grad = torch.ones_like(p)
    optimizer.step()
    assert all(torch.equal(a, b) for a, b in zip(before, recipe.model.lm.parameters(), strict=True))
    assert not any(p in optimizer.state for p in recipe.model.lm.parameters())


def test_the_proposals_gradient_does_not_shrink_entitynlms_clip():
    """Clip 5: EntityNLM's gradient of norm 3 stays as it is however large the proposal's is
    (per_model); under the earlier joint clip it shrinks to 5 * 3 / sqrt(3^2 + 400^2)."""
    recipe = _recipe("per_model")
    _fill_gradients(recipe, 3.0, 400.0)
    recipe.clip_gradients(5.0)
    assert abs(_norm(recipe.model.lm) - 3.0) < 1e-4
    assert abs(_norm(recipe.model.proposal) - 5.0) < 1e-4

    joint = _recipe("joint")
    _fill_gradients(joint, 3.0, 400.0)
    joint.clip_gradients(5.0)
    assert abs(_norm(joint.model.lm) - 5 * 3 / (3**2 + 400**2) ** 0.5) < 1e-4


def test_rnnlm_is_clipped_as_one_model():
    splits = _splits()
    vocab = Vocab.build(splits["train"])
    mcfg = train.ModelSettings(embed_dim=8, hidden_size=8, l_max=3, min_count=1)
    recipe = train.LMRecipe("rnnlm", splits, vocab, mcfg, train.TrainSettings(device="cpu"))
    for p in recipe.model.parameters():
        p.grad = torch.full_like(p, 10.0)
    recipe.clip_gradients(1.0)
    assert abs(_norm(recipe.model) - 1.0) < 1e-4
