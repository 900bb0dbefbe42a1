"""tasks/training/loop.py with a toy recipe: selection on dev, patience, time budget,
resume only under the same fingerprint, atomic outputs."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from tasks.core.settings import ConfigError, parse_settings
from tasks.training.loop import (
    BEST,
    HISTORY,
    LAST,
    LoopSettings,
    NoCheckpointError,
    Recipe,
    StepOutput,
    fit,
    load_best,
)


class ToyRecipe(Recipe):
    """Logistic regression on a fixed random problem; dev accuracy is the selection key."""

    log_keys = ("acc",)

    def __init__(self, seed: int = 0, dev_accs: list[float] | None = None, batch: int = 16):
        torch.manual_seed(seed)
        self.batch = batch
        self.model = torch.nn.Linear(4, 2)
        gen = torch.Generator().manual_seed(123)
        self.x = torch.randn(64, 4, generator=gen)
        self.y = (self.x[:, 0] > 0).long()
        self.rng = random.Random(seed)
        self.dev_accs = dev_accs  # scripted dev accuracies (None: measured)
        self.evaluations = 0

    def optimizer(self):
        return torch.optim.SGD(self.model.parameters(), lr=0.5), None

    def batches(self, epoch):
        order = list(range(64))
        self.rng.shuffle(order)
        for i in range(0, 64, self.batch):
            yield order[i : i + self.batch]

    def step(self, idx, device):
        loss = torch.nn.functional.cross_entropy(self.model(self.x[idx]), self.y[idx])
        return StepOutput(loss, {"loss_sum": float(loss.detach()) * len(idx), "loss_n": len(idx)})

    def evaluate(self, split, precision):
        self.evaluations += 1
        if self.dev_accs is not None:
            return {"acc": self.dev_accs[self.evaluations - 1]}
        with torch.no_grad():
            acc = (self.model(self.x).argmax(-1) == self.y).float().mean().item()
        return {"acc": acc}

    def selection(self, dev):
        return (dev["acc"],), dev["acc"]

    def checkpoint_config(self):
        return {"in": 4, "out": 2}

    def checkpoint_info(self):
        return {"note": "toy"}

    def fingerprint(self):
        return {"config": self.checkpoint_config(), "data": float(self.x.sum())}

    def state_dict(self):
        return {"rng": self.rng.getstate()}

    def load_state_dict(self, state):
        self.rng.setstate(state["rng"])


def settings(**kw) -> LoopSettings:
    return LoopSettings(**{"epochs": 4, "patience": None, "device": "cpu", "log_every_s": 0, **kw})


def test_a_recipe_missing_a_required_method_cannot_be_built():
    """Recipe's required methods are abstract: a family that forgets one fails at once,
    naming it, not later with a None where the loop expected an optimizer or a score."""

    class Partial(Recipe):
        def optimizer(self):
            return None, None

    with pytest.raises(TypeError, match="abstract methods.*batches") as error:
        Partial()
    assert "optimizer" not in str(error.value) and "checkpoint_info" in str(error.value)
    assert not ToyRecipe.__abstractmethods__  # a complete recipe builds


def test_best_on_dev_is_kept_and_patience_stops(tmp_path):
    recipe = ToyRecipe(dev_accs=[0.5, 0.8, 0.7, 0.8, 0.6, 0.9])
    result = fit(recipe, settings(epochs=6, patience=2), tmp_path, name="toy")
    # 0.8 at epoch 2 is best; 0.7 and 0.8 (a tie is no gain) -> two epochs without gain: stop
    assert result.best_epoch == 2 and result.epochs_run == 4 and result.stopped_early
    history = json.loads((tmp_path / HISTORY).read_text())
    assert [h["best"] for h in history] == [True, True, False, False]
    assert torch.load(tmp_path / BEST, weights_only=False)["epoch"] == 2
    assert not (tmp_path / LAST).exists()  # resume off: no last.pt
    assert sorted(p.name for p in tmp_path.iterdir()) == [BEST, HISTORY]  # no temporaries


def test_time_budget_stops_after_the_epoch_that_passes_it(tmp_path):
    result = fit(ToyRecipe(), settings(epochs=50, max_time_s=1e-9), tmp_path, name="toy")
    assert result.epochs_run == 1 and result.stopped_early


def test_resume_continues_exactly_as_one_run(tmp_path):
    straight = fit(ToyRecipe(), settings(epochs=4, resume=True), tmp_path / "a", name="toy")
    fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path / "b", name="toy")
    resumed = fit(ToyRecipe(), settings(epochs=4, resume=True), tmp_path / "b", name="toy")
    assert resumed.resumed_from == 2 and resumed.epochs_run == 4
    assert resumed.history == straight.history
    a, b = ToyRecipe(), ToyRecipe()
    load_best(straight, a), load_best(resumed, b)
    assert torch.equal(a.model.weight, b.model.weight)


def test_a_resumed_run_logs_the_whole_learning_curve(tmp_path):
    """The MLflow run of a resumed seed gets the epochs before the interruption (replayed
    from last.pt, the numbers first logged) and then its own: the curve is whole in one run."""
    first, resumed = [], []
    fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path, name="toy",
        log_metrics=lambda m, step: first.append((step, dict(m))))  # fmt: skip
    fit(ToyRecipe(), settings(epochs=4, resume=True), tmp_path, name="toy",
        log_metrics=lambda m, step: resumed.append((step, dict(m))))  # fmt: skip
    assert [step for step, _ in resumed] == [1, 2, 3, 4]
    for (step, logged), (again_step, replayed) in zip(first, resumed[:2], strict=True):
        assert step == again_step and "epoch_time_s" in logged and "epoch_time_s" not in replayed
        assert replayed == {k: v for k, v in logged.items() if k in replayed}
        assert set(logged) - set(replayed) == {"train_time_s", "epoch_time_s"}


def test_a_run_that_patience_stopped_does_not_train_on_when_resumed(tmp_path):
    """last.pt is written before the epoch's stop decision; resuming a run that patience
    stopped (a lane killed during its test evaluation) used to train past the stop and could
    replace best.pt. It stays stopped."""
    stopped = fit(ToyRecipe(dev_accs=[0.5, 0.8, 0.7, 0.8]),
                  settings(epochs=6, patience=2, resume=True), tmp_path, name="toy")  # fmt: skip
    assert stopped.stopped_early and stopped.epochs_run == 4 and stopped.best_epoch == 2
    best = (tmp_path / BEST).read_bytes()
    again_recipe = ToyRecipe(dev_accs=[0.99, 0.99])  # it would improve if it trained
    again = fit(again_recipe, settings(epochs=6, patience=2, resume=True), tmp_path, name="toy")
    assert again.resumed_from == 4 and again.epochs_run == 4 and again.stopped_early
    assert again.best_epoch == 2 and again.history == stopped.history
    assert again_recipe.evaluations == 0 and (tmp_path / BEST).read_bytes() == best


def test_changed_settings_train_from_scratch_and_say_why(tmp_path, caplog):
    fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path, name="toy")
    with caplog.at_level("WARNING", logger="corefrepro.training"):
        again = fit(ToyRecipe(), settings(epochs=2, resume=True, clip=1.0), tmp_path, name="toy")
    assert again.resumed_from == 0 and again.epochs_run == 2
    assert "not resuming" in caplog.text and "train.clip: 5.0 (checkpoint) != 1.0" in caplog.text


def test_a_checkpoint_of_another_configuration_is_refused(tmp_path):
    from tasks.core.checkpoints import CheckpointMismatchError

    result = fit(ToyRecipe(), settings(epochs=1), tmp_path, name="toy")
    other = ToyRecipe()
    other.checkpoint_config = lambda: {"in": 4, "out": 3}
    with pytest.raises(CheckpointMismatchError, match="out: 2 \\(checkpoint\\) != 3"):
        load_best(result, other)


def test_changed_code_trains_from_scratch(tmp_path, caplog, monkeypatch):
    """A resumed run must be the same run: after an edit of the recipe's, the model's or the
    loop's code (dvc repro after a code change), last.pt is not continued."""
    from tasks.training import loop

    fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path, name="toy")
    monkeypatch.setattr(loop, "_code_digest", lambda recipe: "edited")
    with caplog.at_level("WARNING", logger="corefrepro.training"):
        again = fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path, name="toy")
    assert again.resumed_from == 0 and again.epochs_run == 2
    assert "not resuming" in caplog.text and "(requested)" in caplog.text and "code:" in caplog.text


def test_a_last_pt_of_another_numeric_path_trains_from_scratch(tmp_path, caplog, monkeypatch):
    """The numeric path (tasks/core/numerics.py: its code and the mode) shapes the bits of
    training as the code does: a last.pt written before a change of it, or under
    COREFREPRO_NUMERICS=native, is not continued (a resumed run of the embedded default kept
    the old kernels' weights after the exact-sqrt change, and its outputs differed from a
    fresh clone's)."""
    from tasks.core import numerics

    fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path / "mode", name="toy")
    monkeypatch.setenv(numerics.MODE_ENV, "native")
    with caplog.at_level("WARNING", logger="corefrepro.training"):
        again = fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path / "mode", name="toy")
    assert again.resumed_from == 0 and "!= 'native' (requested)" in caplog.text
    monkeypatch.delenv(numerics.MODE_ENV)
    fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path / "code", name="toy")
    real = Path.read_bytes
    edited = lambda path: real(path) + (b"#" if path.name == "numerics.py" else b"")  # noqa: E731
    monkeypatch.setattr(Path, "read_bytes", edited)
    caplog.clear()
    with caplog.at_level("WARNING", logger="corefrepro.training"):
        again = fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path / "code", name="toy")
    assert again.resumed_from == 0 and "code:" in caplog.text


def test_outputs_hold_no_wall_clock_figures_so_a_rerun_writes_the_same_bytes(tmp_path):
    """history.json, last.pt and best.pt are DVC outputs: a timing in them would change their
    hash (and dvc.lock) on every identical rerun; timings go to MLflow instead."""
    logged: list[dict] = []
    for run in ("a", "b"):
        fit(ToyRecipe(), settings(epochs=3, resume=True), tmp_path / run, name="toy",
            log_metrics=lambda m, step: logged.append(m))  # fmt: skip
    for name in ("history.json", "last.pt", "best.pt"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert "epoch_time_s" not in (tmp_path / "a" / "history.json").read_text()
    assert all(m["epoch_time_s"] > 0 and "train_loss" in m for m in logged)


def test_accumulating_two_half_batches_is_one_whole_batch(tmp_path):
    """train.accumulate: 2 x 8 examples per optimizer step trains what 16 per step trains (the
    recipe's loss is a mean, the halves are equal), clipping included."""
    whole, halves = ToyRecipe(batch=16), ToyRecipe(batch=8)
    fit(whole, settings(clip=0.05), tmp_path / "whole", name="toy")
    fit(halves, settings(clip=0.05, accumulate=2), tmp_path / "halves", name="toy")
    for a, b in zip(whole.model.parameters(), halves.model.parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-6)
    plain = ToyRecipe(batch=8)
    fit(plain, settings(clip=0.05), tmp_path / "plain", name="toy")
    assert not torch.allclose(plain.model.weight, halves.model.weight, atol=1e-3)


def test_max_steps_per_epoch_trains_the_first_batches_and_draws_no_more(tmp_path):
    """train.max_steps_per_epoch: N batches of each epoch's order, the same N a full epoch
    starts with; the recipe's generator is not advanced past them (its RNG draws, e.g. coref's
    crops, stay those of a run over the first N batches), and accumulate's last group steps."""
    drawn: list[int] = []

    class Counted(ToyRecipe):
        def batches(self, epoch):
            for b, batch in enumerate(super().batches(epoch), 1):
                drawn.append(b)
                yield batch

    capped = Counted(batch=8)
    fit(capped, settings(epochs=2, max_steps_per_epoch=3, accumulate=2), tmp_path / "a",
        name="toy")  # fmt: skip
    assert drawn == [1, 2, 3, 1, 2, 3]  # of 8 batches per epoch
    # the same first 3 batches by hand: one step on batches 1-2, one on batch 3, per epoch
    manual = ToyRecipe(batch=8)
    optimizer, _ = manual.optimizer()
    for epoch in (1, 2):
        batches = list(manual.batches(epoch))[:3]
        for group in (batches[:2], batches[2:]):
            for idx in group:
                (manual.step(idx, torch.device("cpu")).loss / 2).backward()
            torch.nn.utils.clip_grad_norm_(list(manual.model.parameters()), 5.0)
            optimizer.step()
            optimizer.zero_grad()
    for a, b in zip(capped.model.parameters(), manual.model.parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("accumulate", 0, "train.accumulate: must be >= 1, got 0"),
        ("epochs", 0, "train.epochs: must be >= 1, got 0"),
        ("clip", -1.0, "train.clip: must be > 0, got -1.0"),
        ("patience", 0, "train.patience: must be >= 1, got 0"),
        ("threads", 0, "train.threads: must be >= 1, got 0"),
    ],
)
def test_loop_settings_out_of_range_are_config_errors(key, value, message):
    with pytest.raises(ConfigError) as err:
        parse_settings(LoopSettings, {key: value}, "train")
    assert err.value.problems == (message,)
    assert parse_settings(LoopSettings, {"patience": None}, "train").patience is None


def test_a_run_never_reports_an_earlier_runs_checkpoint(tmp_path):
    """`epochs: 0` is refused by the parser; and a run from scratch first removes an earlier
    run's best.pt (a work folder keeps the last run's), so the best.pt after it is its own."""
    fit(ToyRecipe(), settings(epochs=2), tmp_path, name="toy")
    earlier = (tmp_path / BEST).read_bytes()
    recipe = ToyRecipe(dev_accs=[0.1])
    result = fit(recipe, settings(epochs=1), tmp_path, name="toy")
    assert result.best_epoch == 1
    assert (tmp_path / BEST).read_bytes() != earlier
    assert torch.load(tmp_path / BEST, weights_only=False)["dev"] == {"acc": 0.1}


def test_a_run_that_selects_nothing_fails_instead_of_reporting(tmp_path):
    fit(ToyRecipe(), settings(epochs=1), tmp_path, name="toy")
    with pytest.raises(NoCheckpointError, match="no epoch selected a checkpoint"):
        fit(ToyRecipe(), settings(epochs=0), tmp_path, name="toy")
    assert not (tmp_path / BEST).exists()


def test_the_reason_not_to_resume_names_whole_differences(tmp_path, caplog):
    """Issue #59 row 22: the reason was cut at 500 characters, mid-word
    (`train.max_steps_per_epoc)`); it names the first differences whole and counts the rest."""
    from tasks.training.loop import SHOWN_DIFFS

    fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path, name="toy")
    changed = {"clip": 1.0, "seed": 2, "patience": 3, "accumulate": 2, "max_steps_per_epoch": 7}
    with caplog.at_level("WARNING", logger="corefrepro.training"):
        fit(ToyRecipe(), settings(epochs=2, resume=True, **changed), tmp_path, name="toy")
    (line,) = [r.getMessage() for r in caplog.records if "not resuming" in r.getMessage()]
    reason = line.split("written: ", 1)[1].rsplit("): training from scratch", 1)[0]
    shown, _, more = reason.rpartition("; and ")
    assert more == f"{len(changed) - SHOWN_DIFFS} more"
    parts = shown.split("; ")
    assert len(parts) == SHOWN_DIFFS
    assert all(p.startswith("train.") and p.endswith(" (requested)") for p in parts), parts


def test_each_epoch_line_carries_the_stage_eta(tmp_path, caplog, monkeypatch):
    """Issue #59 row 20: the epoch lines of a stage's seeds say where the whole stage is."""
    from tasks.core.progress import STAGE_CLOCK

    monkeypatch.setattr(STAGE_CLOCK, "total", 0)
    monkeypatch.setattr(STAGE_CLOCK, "done", 0)
    monkeypatch.setattr(STAGE_CLOCK, "planned", False)
    monkeypatch.setattr(STAGE_CLOCK, "started", None)
    STAGE_CLOCK.plan(2 * 3)  # the stage: two seeds of three epochs
    with caplog.at_level("INFO", logger="corefrepro.training"):
        for seed in (1, 2):
            fit(ToyRecipe(), settings(epochs=3, seed=seed), tmp_path / f"seed{seed}", name="toy")
    lines = [r.getMessage() for r in caplog.records if " epoch " in r.getMessage()]
    stages = [line.rsplit(" | ", 1)[1] for line in lines]
    assert [s.split(",")[0] for s in stages] == [f"stage {k}/6 epochs" for k in range(1, 7)]
    assert all(", ETA " in s for s in stages[:-1]) and stages[-1] == "stage 6/6 epochs"


def test_a_damaged_last_pt_trains_from_scratch(tmp_path, caplog):
    """#59, own round on the resume folder: a truncated last.pt (a full disk, a copy cut
    short) failed the stage ("Remove it and rerun"); resume state is a cache, so the run
    starts over with one warning."""
    fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path, name="toy")
    (tmp_path / "last.pt").write_bytes(b"garbage")
    with caplog.at_level("WARNING", logger="corefrepro.training"):
        again = fit(ToyRecipe(), settings(epochs=2, resume=True), tmp_path, name="toy")
    assert again.resumed_from == 0 and again.epochs_run == 2
    assert "not resuming" in caplog.text and "unreadable checkpoint" in caplog.text
