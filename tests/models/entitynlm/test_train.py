"""EntityNLM training recipe: the proposal is optimised and clipped as its own model; the
importance-sampling evaluation at several N (issue #33.8)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import flows.train_entitynlm as stage
from models.entitynlm import train
from models.entitynlm.data import Vocab
from tasks.core.settings import ConfigError, parse_settings
from tests.models.entitynlm.test_stage import _splits


def _recipe(clip_scope: str, optimizer: str = "adam", lr: float = 1e-3,
            entity_weight: float = 1.0) -> train.LMRecipe:  # fmt: skip
    splits = _splits()
    vocab = Vocab.build(splits["train"])
    mcfg = train.ModelSettings(embed_dim=8, hidden_size=8, l_max=3, min_count=1)
    tcfg = train.TrainSettings(batch_tokens=64, threads=1, device="cpu", clip_scope=clip_scope,
                               optimizer=optimizer, lr=lr, entity_weight=entity_weight)  # fmt: skip
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


@pytest.mark.parametrize("kind", ["adam", "adagrad"])
def test_each_model_has_its_own_group_covering_exactly_its_parameters(kind):
    recipe = _recipe("per_model", kind)
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
    # Adam makes its moments at the first step, AdaGrad its sums up front: none has moved
    untouched = [all(not torch.is_tensor(v) or not v.any() for v in optimizer.state[p].values())
                 for p in recipe.model.lm.parameters()]  # fmt: skip
    assert all(untouched)


def test_adagrad_takes_the_papers_first_step():
    """§5.1's AdaGrad at lr 0.1: the first step moves every weight by lr * g / (|g| + eps),
    i.e. by 0.1 against the gradient's sign, whatever its size (Adam's first step is lr too,
    so the step after it tells them apart: AdaGrad's shrinks by 1/sqrt(2))."""
    recipe = _recipe("per_model", "adagrad", lr=0.1)
    optimizer, _ = recipe.optimizer()
    assert isinstance(optimizer, torch.optim.Adagrad)
    weight = next(recipe.model.lm.parameters())
    start = weight.detach().clone()
    for _ in range(2):
        for p in recipe.model.parameters():
            p.grad = torch.full_like(p, 3.0)
        optimizer.step()
    assert torch.allclose(start - weight.detach(), torch.full_like(start, 0.1 * (1 + 2**-0.5)))


def test_the_entity_weight_scales_the_r_e_l_terms_of_the_loss_only():
    """Issue #56.4, the authors' --entityweight (entitynlm.h:421-428): the loss is
    -(x + w (r + e + l)) + the proposal's NLL, per word; the logged joint stays Eq. 9's."""
    losses, stats = {}, {}
    for weight in (1.0, 3.0):
        recipe = _recipe("per_model", entity_weight=weight)
        recipe.model.eval()  # no dropout, no Eq. 7 noise: the same terms for both weights
        batch = next(recipe.batches(0))
        out = recipe.step(batch, torch.device("cpu"))
        losses[weight], stats[weight] = float(out.loss.detach()) * batch.num_tokens, out.stats
        with torch.no_grad():
            terms = recipe.model.lm.token_log_probs(batch)
    structure = float(sum(terms[k].sum() for k in "rel"))
    assert structure < 0 and stats[1.0]["loss_sum"] == pytest.approx(stats[3.0]["loss_sum"])
    assert losses[3.0] - losses[1.0] == pytest.approx(-2.0 * structure, rel=1e-4)


def test_an_unknown_model_variant_is_refused_naming_the_setting():
    with pytest.raises(ConfigError, match="distance_feature"):
        parse_settings(train.ModelSettings, {"distance_feature": "words"}, "train_entitynlm.model")
    with pytest.raises(ConfigError, match="entity_weight"):
        parse_settings(train.TrainSettings, {"entity_weight": 0}, "train_entitynlm.train")


def test_an_unknown_optimizer_is_refused_naming_the_setting():
    with pytest.raises(ConfigError, match="optimizer"):
        parse_settings(train.TrainSettings, {"optimizer": "sgd"}, "train_entitynlm.train")


def test_the_proposals_gradient_does_not_shrink_entitynlms_clip():
    """Clip 5: EntityNLM's gradient of norm 3 stays as it is however large the proposal's is
    (per_model); under the earlier joint clip it shrinks to 5 * 3 / sqrt(3^2 + 400^2)."""
    recipe = _recipe("per_model")
    _fill_gradients(recipe, 3.0, 400.0)
    recipe.clip_gradients(5.0, list(recipe.model.parameters()))
    assert abs(_norm(recipe.model.lm) - 3.0) < 1e-4
    assert abs(_norm(recipe.model.proposal) - 5.0) < 1e-4

    joint = _recipe("joint")
    _fill_gradients(joint, 3.0, 400.0)
    joint.clip_gradients(5.0, list(joint.model.parameters()))
    assert abs(_norm(joint.model.lm) - 5 * 3 / (3**2 + 400**2) ** 0.5) < 1e-4


def test_rnnlm_is_clipped_as_one_model():
    splits = _splits()
    vocab = Vocab.build(splits["train"])
    mcfg = train.ModelSettings(embed_dim=8, hidden_size=8, l_max=3, min_count=1)
    recipe = train.LMRecipe("rnnlm", splits, vocab, mcfg, train.TrainSettings(device="cpu"))
    for p in recipe.model.parameters():
        p.grad = torch.full_like(p, 10.0)
    recipe.clip_gradients(1.0, list(recipe.model.parameters()))
    assert abs(_norm(recipe.model) - 1.0) < 1e-4


# --------------------------------------------------------------------------- IS at several N (#33.8)


def _evaluate(grid, samples=5):
    recipe = _recipe("per_model")
    recipe.splits["test"][1].doc_id = "other/test1"  # a second corpus among the test documents
    ecfg = train.EvalSettings(samples=samples, samples_grid=grid, sampling_seeds=[1, 2],
                              batch_tokens=64)  # fmt: skip
    return train.importance_evaluation(recipe, ecfg, SimpleNamespace(device=torch.device("cpu")))


def test_each_n_of_the_grid_gets_its_figure_and_the_headline_does_not_move_with_the_grid():
    out, records = _evaluate([2, 5])
    test = out["test"]
    assert list(test["is_grid"]) == ["2", "5"] and test["is_samples"] == 5
    assert test["is_ppl"] == test["is_grid"]["5"]["is_ppl"] and test["is_ppl"]["n"] == 2
    assert sorted(test["is_grid"]["2"]["is_ppl_per_seed"]) == ["1", "2"]
    assert sorted(test["is_by_corpus"]) == ["other", "run"]
    assert test["is_by_corpus"]["other"]["documents"] == 1 and test["is_bounds"]["estimates"] == 4
    assert sorted(test["is_bounds"]["under_bound"]) == ["2", "5"]
    assert [r["doc_id"] for r in records["test"]] == ["run/test0", "other/test1"]
    assert all(r["bound"] >= r["gold_joint"] for r in records["test"])
    alone, _ = _evaluate([5])
    assert alone["test"]["is_ppl_per_seed"] == test["is_ppl_per_seed"]
    assert list(alone["test"]["is_grid"]) == ["5"]
    result = {"model": "entitynlm", "seed": 1, "vocab_size": 9, "documents": {}, "tokens": {},
              "epochs_run": 1, "best_epoch": 1, "train_tokens_per_s": None, "device": "cpu",
              **{s: {**f, "joint_ppl": 10.0} for s, f in out.items()}}  # fmt: skip
    summary = stage.summarize("entitynlm", [result])
    assert summary["is_samples"] == 5 and sorted(summary["test_ppl_by_samples"]) == ["2", "5"]
    assert summary["test_ppl_by_samples"]["5"] == summary["test_ppl"]
    dev_2 = out["dev"]["is_grid"]["2"]["is_ppl"]["mean"]
    assert summary["dev_ppl_by_samples"]["2"]["mean"] == pytest.approx(dev_2, abs=1e-6)


@pytest.mark.parametrize(("grid", "problem"), [
    ([], "needs at least 1 item(s), got 0"),
    ([0, 100], "every N must be >= 1, got 0"),
    ([10, 10, 100], "an N is listed twice"),
    ([10, 1000], "must hold the headline N, samples = 100"),
])  # fmt: skip
def test_the_grid_is_checked_before_any_work(grid, problem):
    with pytest.raises(ConfigError) as err:
        parse_settings(train.EvalSettings, {"samples_grid": grid}, "train_entitynlm.evaluation")
    assert any(p.startswith(f"train_entitynlm.evaluation.samples_grid: {problem}")
               for p in err.value.problems), err.value.problems  # fmt: skip
    assert parse_settings(train.EvalSettings, {"samples_grid": [10, 100, 1000]},
                          "x").sample_sizes() == [10, 100, 1000]  # fmt: skip
