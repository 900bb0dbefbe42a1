"""The one training loop: every model family trains through `fit`, nanoGPT's train.py style.

A family supplies a `Recipe` (its model, optimizer, training batches, loss, evaluation and
selection rule); the loop owns everything the families share: device and precision (CUDA with
bf16 autocast, else CPU in float32, or `precision` bf16/fp16/fp32 on either), intra-op threads, gradient clipping, the epoch loop with
early stopping and a time budget, best-on-dev selection, atomic checkpoints (best.pt, and
last.pt for resuming), one MLflow point per epoch, progress on a terminal and one log line per
epoch. Model selection reads the DEV split only; the test split is the family's business after
`fit` returns, with the best checkpoint (`load_best`).

Lanes (issue #15.1): a recipe that trains several models at once as one batched computation
(models/mage/stacked.py: K seeds stacked) declares `lanes` (their number) and reports per lane:
step() gives StepOutput.lane_stats, evaluate() a list of dev dicts, lane_model(k) the model
to checkpoint, checkpoint_info(k) its extras. `fit_lanes` then keeps for each lane what `fit`
keeps for one model -- learning curve, best-on-dev selection and checkpoint, early stopping --
in its own directory; a lane that stops early is left out of later epochs' bookkeeping (the
recipe may keep computing it). Its clip_gradients clips per lane.

Resume: with `resume`, last.pt is written after every epoch with the optimizer, schedule and
RNG states and a fingerprint of everything the result depends on (the recipe's and model's
code and this loop's, model and data encoding, data, training settings but the run-only ones). A later run continues from it only when the
fingerprint is the same; otherwise it trains from scratch and says why. The loop writes into
the folder it is given; the stages give it an untracked work folder and publish the results
from there (tasks/training/stage.py), so resume state never enters a tracked output.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import math
import sys
import time
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import torch

from tasks.core import numerics
from tasks.core.checkpoints import (
    config_diff,
    jsonable,
    load_checkpoint,
    pick_device,
    save_checkpoint,
)
from tasks.core.errors import CorefreproError
from tasks.core.progress import STAGE_CLOCK
from tasks.core.settings import Threads, bounded
from tasks.core.storage import write_metrics
from tasks.training import distributed

log = logging.getLogger("corefrepro.training")

BEST, LAST, HISTORY = "best.pt", "last.pt", "history.json"
# settings that change how fast or how visibly a run goes, not what it learns
# (precision, like device: a run may resume on a GPU or in bf16; nproc: the processes share
# each step's batches, so the result does not depend on their number; seeds_stacked: each
# stacked seed learns what it learns alone). The one list: the loop's resume fingerprint and
# the stages' settings fingerprints (flows/train_mage.py) leave these out.
RUN_ONLY = ("resume", "device", "threads", "log_every_s", "precision", "nproc", "seeds_stacked")
# how long a run trains: a run resumes under a longer budget (the resume fingerprint leaves it
# out; a settings fingerprint comparing finished runs keeps it)
BUDGET = ("epochs", "max_time_s")
SHOWN_DIFFS = 4  # differences a "not resuming" line names
CURVE_PREFIX = "curve_"  # the keys of Recipe.curve's points (logged at their own step)


@dataclass
class LoopSettings:
    """What the loop reads of a family's train settings (a family's class extends this)."""

    epochs: int = bounded(20, ge=1)
    patience: int | None = bounded(5, ge=1)  # epochs without a better dev value before
    # stopping (None: never)
    max_time_s: float | None = bounded(None, gt=0)  # stop after the epoch that passes this
    max_steps_per_epoch: int | None = bounded(None, ge=1)  # train on the first N batches of
    # each epoch's order only (a CPU budget; a preset's smoke run takes 1). None: every batch
    clip: float = bounded(5.0, gt=0)  # max gradient norm
    accumulate: int = bounded(1, ge=1)  # batches per optimizer step (gradient accumulation):
    # an effective batch of accumulate x the family's batch size in the memory of one batch
    device: Literal["auto", "cpu", "cuda"] = "auto"
    # auto: bf16 autocast on CUDA, float32 on CPU; bf16 / fp16: autocast on either device
    # (fp16 adds a GradScaler); fp32: none. Recurrent layers stay float32 on the CPU
    # (models/sequences.py run_recurrent)
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    # torch intra-op threads (None: leave as is); auto: this process's share of the cores, in
    # native mode only (the bytes depend on the count: tasks/core/numerics.py `threads`)
    threads: Threads = bounded(None, ge=1)
    # data-parallel processes (torchrun --nproc-per-node): they deal out each optimizer
    # step's `accumulate` batches, so accumulate must be a multiple (distributed.py)
    nproc: int = bounded(1, ge=1)
    log_every_s: float = bounded(60.0, ge=0)  # in-epoch progress lines when not on a terminal
    resume: bool = False  # continue from last.pt when its fingerprint matches
    seed: int = 1


@dataclass
class StepOutput:
    """One training batch: the loss to minimize (None: nothing to learn from this batch) and
    sums for the epoch's train metrics (loss_sum / loss_n -> train_loss, correct / seen ->
    train_acc)."""

    loss: torch.Tensor | None
    stats: dict[str, float] = field(default_factory=dict)
    lane_stats: list[dict[str, float]] | None = None  # per lane, for recipes with lanes


class Recipe(Protocol):
    """A family's part of training. The loop calls, in this order: optimizer() once,
    then per epoch batches(epoch) and step() per batch, evaluate("dev") after the epoch.

    A recipe class subclasses Recipe: it must define the abstract methods (a subclass that
    misses one cannot be instantiated: the TypeError names it) and inherits the optional hooks
    below (lanes, log_keys, steps_per_epoch, clip_gradients, lane_model), overriding the ones
    it needs."""

    model: torch.nn.Module
    lanes: int = 0  # > 0: that many models trained as one batched computation (fit_lanes)
    log_keys: tuple[str, ...] = ()  # the dev metrics of the epoch line; (): every dev_ key

    @abstractmethod
    def optimizer(self) -> tuple[torch.optim.Optimizer, Any]: ...  # (optimizer, scheduler|None)
    @abstractmethod
    def batches(self, epoch: int) -> Iterable[Any]: ...
    @abstractmethod
    def step(self, batch: Any, device: torch.device) -> StepOutput: ...
    @abstractmethod
    def evaluate(self, split: str, precision: Precision) -> dict[str, float]: ...
    @abstractmethod
    def selection(self, dev: Mapping[str, float]) -> tuple[tuple, float]: ...  # (key, patience)
    @abstractmethod
    def checkpoint_config(self) -> dict[str, Any]: ...
    @abstractmethod
    def checkpoint_info(self) -> dict[str, Any]: ...
    @abstractmethod
    def fingerprint(self) -> dict[str, Any]: ...
    @abstractmethod
    def state_dict(self) -> dict[str, Any]: ...
    @abstractmethod
    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...

    def steps_per_epoch(self) -> int | None:
        """Training batches per epoch, for the progress bar's total; None: unknown."""
        return None

    def clip_gradients(self, clip: float, params: list[torch.nn.Parameter]) -> None:
        """Clip before the optimizer step: the norm of `params` (the optimizer's) to `clip`;
        a recipe with lanes clips each lane apart, as it would alone."""
        torch.nn.utils.clip_grad_norm_(params, clip)

    def lane_model(self, k: int) -> torch.nn.Module:
        """The model of lane k, to checkpoint (recipes with lanes)."""
        raise NotImplementedError(f"{type(self).__name__} has no lanes")

    def curve(self, epoch: int, precision: Precision) -> dict[str, float]:
        """A learning curve's further points beside dev (e.g. a held-out figure): called once
        before the first epoch of a run from scratch (epoch 0, the untrained model) and after
        each epoch's dev evaluation. Its keys join the epoch's row (the step-0 point: Fit.start)
        and go to MLflow at the step `curve_step` names (optimizer steps; else the epoch).
        {}: none (the default; the rows stay as they were)."""
        return {}


@dataclass
class Precision:
    """Device and autocast (`precision`): auto is bfloat16 on CUDA and float32 on the CPU,
    whose bf16 matmuls are emulated without avx512_bf16/AMX; bf16 and fp16 ask for autocast
    on either device (torch.autocast("cpu", ...) included), fp32 for none."""

    device: torch.device
    enabled: bool
    dtype: torch.dtype

    @classmethod
    def choose(cls, settings: LoopSettings) -> Precision:
        device = pick_device(settings.device)
        mode = settings.precision
        if mode == "auto":
            mode = "bf16" if device.type == "cuda" else "fp32"
        dtype = torch.float16 if mode == "fp16" else torch.bfloat16
        return cls(device, mode != "fp32", dtype)

    def autocast(self) -> contextlib.AbstractContextManager:
        return torch.autocast(self.device.type, dtype=self.dtype, enabled=self.enabled)

    def scaler(self) -> torch.amp.GradScaler:
        return torch.amp.GradScaler(
            self.device.type, enabled=self.enabled and self.dtype == torch.float16
        )

    def describe(self) -> str:
        return self.device.type + (f" amp {str(self.dtype).split('.')[-1]}" if self.enabled else "")


@dataclass
class LoopState:
    """Everything the loop carries from epoch to epoch (saved in last.pt)."""

    epoch: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    best_key: tuple | None = None
    best_patience: float | None = None
    best_epoch: int = 0
    since_best: int = 0
    stopped_early: bool = False
    start: dict[str, Any] = field(default_factory=dict)  # Recipe.curve before training


@dataclass
class Fit:
    """What `fit` returns: the learning curve and where the best model is."""

    history: list[dict[str, Any]]
    best_epoch: int
    epochs_run: int
    stopped_early: bool
    train_time_s: float
    best_path: Path
    precision: Precision
    resumed_from: int = 0
    start: dict[str, Any] = field(default_factory=dict)  # Recipe.curve at epoch 0 ({}: none)


@contextlib.contextmanager
def torch_threads(threads: int | str | None, setting: str = "threads") -> Iterator[None]:
    """torch's intra-op thread count inside: `threads` as numerics.threads reads it (a number,
    auto: this process's share of the cores, None: as it is); the count before after."""
    before = torch.get_num_threads()
    count = numerics.threads(threads, setting)
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def threads_used(threads: int | str | None) -> int:
    """The torch thread count a run with this `threads` setting computes with (its record)."""
    return numerics.threads(threads, "threads") or torch.get_num_threads()


def _code_digest(recipe: Recipe) -> str:
    """sha256 of the code that shapes a run: the recipe's module, the model's, this loop and
    the numeric path (tasks/core/numerics.py: its kernels change the last bits of training)."""
    files = {inspect.getsourcefile(type(recipe)), inspect.getsourcefile(type(recipe.model)),
             numerics.__file__}  # fmt: skip
    digest = hashlib.sha256()
    for name in sorted({*(f for f in files if f), __file__}):
        digest.update(Path(name).read_bytes())
    return digest.hexdigest()


def fingerprint(recipe: Recipe, settings: LoopSettings) -> dict[str, Any]:
    """What a result depends on: the code, the numeric path (portable or native: a last.pt
    from the other continues with other bits), the recipe's model, data encoding and data, the
    training settings except the run-only ones and the budget (RUN_ONLY, BUDGET); "sha256"
    sums it up."""
    train = {k: v for k, v in vars(settings).items() if k not in (*RUN_ONLY, *BUDGET)}
    blob = jsonable({"code": _code_digest(recipe), "numerics": numerics.describe(),
                     "recipe": recipe.fingerprint(), "train": train})  # fmt: skip
    digest = hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()
    return {"sha256": digest, **blob}


def _progress(batches: Iterable[Any], label: str, total: int | None) -> Iterable[Any]:
    """A progress bar with rate and ETA (the recipe's steps_per_epoch) on a terminal; plain
    iteration in logs, which get the periodic lines of _train_epoch instead."""
    if not sys.stderr.isatty():
        return batches
    from tqdm.auto import tqdm

    return tqdm(batches, total=total, desc=label, leave=False, dynamic_ncols=True)


def _optimizer_step(optimizer, scheduler, scaler, params, clip: float, recipe) -> None:
    """Apply the gradients accumulated since the last step (clipped), then clear them."""
    scaler.unscale_(optimizer)
    recipe.clip_gradients(clip, params)
    scaler.step(optimizer)
    scaler.update()
    if scheduler is not None:
        scheduler.step()
    optimizer.zero_grad(set_to_none=True)


def _add(sums: dict[str, float], stats: Mapping[str, float]) -> None:
    for key, value in stats.items():
        sums[key] = sums.get(key, 0.0) + value


def _train_epoch(recipe, epoch, optimizer, scheduler, scaler, precision, settings, name,
                 ranks: distributed.Ranks):  # fmt: skip
    """One pass over the training batches; returns the summed step statistics (per lane for
    a recipe with lanes: a list, else one dict), over every process."""
    recipe.model.train()
    params = [p for group in optimizer.param_groups for p in group["params"]]
    sums: dict[str, float] = {}
    lane_sums: list[dict[str, float]] = [{} for _ in range(recipe.lanes)]
    started = last_log = time.perf_counter()
    total = recipe.steps_per_epoch()
    if total and settings.max_steps_per_epoch:
        total = min(total, settings.max_steps_per_epoch)
    batches = _progress(recipe.batches(epoch), f"{name} epoch {epoch}", total)
    optimizer.zero_grad(set_to_none=True)
    pending = 0  # batches whose gradients wait for the optimizer step
    b = 0
    for b, batch in enumerate(batches, 1):
        if ranks.mine(b - 1):  # one process: every batch; N: every N-th (distributed.py)
            with precision.autocast():
                out = recipe.step(batch, precision.device)
            if out.loss is not None:
                scaler.scale(out.loss / settings.accumulate).backward()
                pending += 1
            _add(sums, out.stats)
            for lane, stats in zip(lane_sums, out.lane_stats or [], strict=False):
                _add(lane, stats)
                _add(sums, stats)
        if b % settings.accumulate == 0:  # a group of `accumulate` batches: one step
            if distributed.all_reduce_gradients(params, pending, ranks):
                _optimizer_step(optimizer, scheduler, scaler, params, settings.clip, recipe)
            pending = 0
        now = time.perf_counter()
        if settings.log_every_s and now - last_log >= settings.log_every_s:
            last_log = now
            loss = sums.get("loss_sum", 0.0) / max(sums.get("loss_n", 0.0), 1.0)
            log.info("  %s epoch %d: batch %d, train loss %.4f (%.0f s)", name, epoch, b, loss,
                     now - started)  # fmt: skip
        if b == settings.max_steps_per_epoch:  # before the next batch is drawn
            break
    if b % settings.accumulate and distributed.all_reduce_gradients(params, pending, ranks):
        _optimizer_step(optimizer, scheduler, scaler, params, settings.clip, recipe)  # the
        # epoch's last, shorter group
    if lane_sums:
        return [distributed.merge_sums(lane, ranks) for lane in lane_sums]
    return distributed.merge_sums(sums, ranks)


def _epoch_row(epoch: int, sums: Mapping[str, float], dev: Mapping[str, Any], lr: float) -> dict:
    n = sums.get("loss_n", 0.0)
    row: dict[str, Any] = {"epoch": epoch, "train_loss": sums["loss_sum"] / n if n else math.nan}
    if "seen" in sums:
        row["train_acc"] = sums["correct"] / sums["seen"] if sums["seen"] else math.nan
    row.update({f"dev_{k}": v for k, v in dev.items() if isinstance(v, int | float)})
    row["learning_rate"] = lr
    return row


def _select(state: LoopState, key: tuple, patience_value: float) -> bool:
    """Best-on-dev: a higher key is a better model; patience counts epochs without a higher
    patience value (a tie-break gain alone does not keep a solved task training)."""
    improved = state.best_key is None or key > state.best_key
    if state.best_patience is None or patience_value > state.best_patience:
        state.since_best, state.best_patience = 0, patience_value
    else:
        state.since_best += 1
    if improved:
        state.best_key, state.best_epoch = key, state.epoch
    return improved


def _should_stop(state: LoopState, settings: LoopSettings, started: float, name: str) -> bool:
    if settings.patience is not None and state.since_best >= int(settings.patience):
        log.info("%s: no better dev value for %d epochs: stop", name, state.since_best)
        return True
    if settings.max_time_s and time.perf_counter() - started > float(settings.max_time_s):
        log.info("%s: time budget %.0f s spent: stop", name, settings.max_time_s)
        return True
    return False


def _log_epoch(name, settings, row: Mapping[str, Any], improved: bool, keys, timing) -> None:
    """One line per epoch: train loss (and accuracy), the recipe's log_keys of dev, time
    (the epoch's, and its training part's: a preset's cost per batch is the latter over
    train.max_steps_per_epoch)."""
    shown = [f"dev_{k}" for k in keys] if keys else [k for k in row if k.startswith("dev_")]
    devs = " ".join(f"{k[4:]} {row[k]:.4f}" for k in shown if k in row)
    acc = f" acc {row['train_acc']:.3f}" if "train_acc" in row else ""
    stage = STAGE_CLOCK.line()
    log.info("%s epoch %d/%d: train loss %.4f%s | dev %s | %.1f s (train %.1f s)%s%s", name,
             row["epoch"], settings.epochs, row["train_loss"], acc, devs,
             timing["epoch_time_s"], timing["train_time_s"], " *" if improved else "",
             f" | {stage}" if stage else "")  # fmt: skip


def _resume(
    recipe, optimizer, scheduler, scaler, last: Path, expected: dict, settings
) -> LoopState:
    """The saved state when last.pt continues this very run; a fresh state otherwise."""
    if not (settings.resume and last.exists()):
        return LoopState()
    try:
        ckpt = load_checkpoint(last)
    except CorefreproError as exc:  # resume state is a cache: a damaged one is not a failure
        log.warning("%s: not resuming (%s): training from scratch", last, exc)
        return LoopState()
    saved = LoopState(**ckpt["loop"])
    reason = None
    saved_print = ckpt.get("fingerprint") or {}
    if saved_print.get("sha256") != expected["sha256"]:
        diffs = config_diff(saved_print, expected)
        items = [d for d in diffs if not d.startswith("sha256")]
        # whole differences, never one cut mid-word: the first few and how many more
        changed = "; ".join(items[:SHOWN_DIFFS]) + (
            f"; and {len(items) - SHOWN_DIFFS} more" if len(items) > SHOWN_DIFFS else "")  # fmt: skip
        reason = f"code, data or settings changed since it was written: {changed or 'unknown'}"
    elif saved.epoch > int(settings.epochs):
        reason = f"it ran {saved.epoch} epochs, more than the {settings.epochs} requested"
    if reason:
        log.warning("%s: not resuming (%s): training from scratch", last, reason)
        return LoopState()
    recipe.model.load_state_dict(ckpt["state_dict"])
    optimizer.load_state_dict(ckpt["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(ckpt["scheduler"])
    scaler.load_state_dict(ckpt["scaler"])
    recipe.load_state_dict(ckpt["recipe"])
    torch.set_rng_state(ckpt["torch_rng"])
    log.info("resuming from %s after epoch %d", last, saved.epoch)
    saved.best_key = tuple(saved.best_key) if saved.best_key is not None else None
    # last.pt is written before the epoch's stop decision: a run that patience stopped must
    # not train on when resumed (a time budget's stop is not kept: a resume gives a new one)
    if settings.patience is not None and saved.since_best >= int(settings.patience):
        log.info("%s: patience had stopped it after epoch %d (best %d): nothing to train",
                 last, saved.epoch, saved.best_epoch)  # fmt: skip
        saved.stopped_early = True
    return saved


def _replay_history(lane: _Lane) -> None:
    """A resumed run's tracked run gets the epochs before the interruption too (the curve
    last.pt carries, without the wall-clock figures it does not keep), so its learning curve
    in MLflow is whole; the interrupted attempt stays beside it as KILLED."""
    if lane.log_metrics is None:
        return
    _log_curve(lane, lane.state.start, 0)
    for row in lane.state.history:
        _log_row(lane, {k: v for k, v in row.items() if k not in ("epoch", "best")}, row)


def _log_curve(lane: _Lane, point: Mapping[str, Any], epoch: int) -> None:
    """A Recipe.curve point to MLflow at its optimizer step (`curve_step`), else the epoch."""
    if lane.log_metrics is not None and point:
        lane.log_metrics(dict(point), int(point.get("curve_step", epoch)))


def _log_row(lane: _Lane, shown: Mapping[str, Any], row: Mapping[str, Any]) -> None:
    """An epoch's row to MLflow at the epoch, its curve keys (CURVE_PREFIX) at their step."""
    curve = {k: v for k, v in shown.items() if k.startswith(CURVE_PREFIX)}
    lane.log_metrics({k: v for k, v in shown.items() if k not in curve}, row["epoch"])
    _log_curve(lane, curve, row["epoch"])


def _save_last(path, recipe, optimizer, scheduler, scaler, state, expected: dict) -> None:
    save_checkpoint(
        path, recipe.model, recipe.checkpoint_config(),
        optimizer=optimizer.state_dict(),
        scheduler=scheduler.state_dict() if scheduler is not None else None,
        scaler=scaler.state_dict(), recipe=recipe.state_dict(),
        torch_rng=torch.get_rng_state(), loop=vars(state), fingerprint=expected,
    )  # fmt: skip


@dataclass
class _Lane:
    """One model the loop selects and checkpoints: its directory, name, metric sink, state."""

    out_dir: Path
    name: str
    log_metrics: Callable[[Mapping[str, float], int | None], None] | None
    state: LoopState = field(default_factory=LoopState)

    def active(self, settings: LoopSettings) -> bool:
        return self.state.epoch < int(settings.epochs) and not self.state.stopped_early


def fit(
    recipe: Recipe,
    settings: LoopSettings,
    out_dir: str | Path,
    *,
    name: str,
    log_metrics: Callable[[Mapping[str, float], int | None], None] | None = None,
) -> Fit:
    """Train `recipe.model` for settings.epochs epochs with best-on-dev selection; writes
    <out_dir>/best.pt (and last.pt with resume) and history.json. The recipe's model must be
    initialised (seeded) by the caller; the loop moves it to the chosen device."""
    if recipe.lanes:
        raise TypeError(f"{type(recipe).__name__} trains {recipe.lanes} lanes: use fit_lanes")
    return _fit(recipe, settings, [_Lane(Path(out_dir), name, log_metrics)])[0]


def fit_lanes(
    recipe: Recipe,
    settings: LoopSettings,
    out_dirs: list[str | Path],
    *,
    names: list[str],
    log_metrics: list[Callable[[Mapping[str, float], int | None], None] | None] | None = None,
) -> list[Fit]:
    """`fit` for a recipe with lanes (several models trained as one computation, e.g. seeds
    stacked): lane k is selected, stopped and checkpointed in out_dirs[k] as `fit` would do for
    it alone. No resume (last.pt) for lanes."""
    if recipe.lanes != len(out_dirs) or len(names) != len(out_dirs):
        raise ValueError(f"recipe has {recipe.lanes} lanes, {len(out_dirs)} out_dirs, "
                         f"{len(names)} names")  # fmt: skip
    if settings.resume:
        raise ValueError("resume is not supported for lanes (stacked seeds): set resume false")
    sinks = log_metrics or [None] * len(out_dirs)
    lanes = [_Lane(Path(d), n, f) for d, n, f in zip(out_dirs, names, sinks, strict=True)]
    return _fit(recipe, settings, lanes)


def _fit(recipe: Recipe, settings: LoopSettings, lanes: list[_Lane]) -> list[Fit]:
    precision, ranks = Precision.choose(settings), distributed.current()
    _check_ranks(settings, ranks)
    started = time.perf_counter()
    resumed_from = 0
    with torch_threads(settings.threads):
        distributed.join(ranks, precision.device)
        recipe.model.to(precision.device)
        distributed.broadcast_parameters(recipe.model, ranks)
        if not ranks.main:  # dropout masks of its own; the batches stay the global order
            torch.manual_seed(settings.seed * 1_000_003 + ranks.rank)
            lanes = [_Lane(lane.out_dir, lane.name, None, lane.state) for lane in lanes]
        optimizer, scheduler = recipe.optimizer()
        scaler = precision.scaler()
        expected = fingerprint(recipe, settings)
        last = lanes[0].out_dir / LAST
        if len(lanes) == 1 and not recipe.lanes:
            lanes[0].state = _resume(recipe, optimizer, scheduler, scaler, last, expected, settings)
            resumed_from = lanes[0].state.epoch
            if ranks.main:
                _replay_history(lanes[0])
        _barrier(ranks)  # every process has read last.pt before the main one rewrites it
        for lane in lanes if ranks.main else ():
            _drop_stale_best(lane)
        if len(lanes) == 1 and not recipe.lanes and lanes[0].state.epoch == 0:
            lanes[0].state.start = _start_point(recipe, precision)
            if ranks.main:
                _log_curve(lanes[0], lanes[0].state.start, 0)
        planned = int(settings.epochs)
        STAGE_CLOCK.run_started(planned * len(lanes), sum(lane.state.epoch for lane in lanes))
        while running := [lane for lane in lanes if lane.active(settings)]:
            STAGE_CLOCK.tick(len(running))  # this epoch counts in its own line
            _run_epoch(recipe, lanes, optimizer, scheduler, scaler, precision, settings, ranks)
            if settings.resume and ranks.main:
                _save_last(last, recipe, optimizer, scheduler, scaler, lanes[0].state, expected)
            for lane in running:
                lane.state.stopped_early = _should_stop(lane.state, settings, started, lane.name)
        for lane in lanes:
            STAGE_CLOCK.run_ended(planned - resumed_from, lane.state.epoch - resumed_from)
        for lane in lanes if ranks.main else ():
            write_metrics(lane.out_dir / HISTORY, jsonable(lane.state.history))
            _check_selected(lane)
        _barrier(ranks)  # the main process's checkpoints are in place for everyone
    return [
        Fit(
            history=lane.state.history,
            best_epoch=lane.state.best_epoch,
            epochs_run=lane.state.epoch,
            stopped_early=lane.state.stopped_early,
            train_time_s=time.perf_counter() - started,
            best_path=lane.out_dir / BEST,
            precision=precision,
            resumed_from=resumed_from,
            start=lane.state.start,
        )
        for lane in lanes
    ]


def _start_point(recipe: Recipe, precision: Precision) -> dict[str, Any]:
    """Recipe.curve of the untrained model (epoch 0), checked like every point."""
    with torch.no_grad():
        return _curve_point(recipe, 0, precision)


def _curve_point(recipe: Recipe, epoch: int, precision: Precision) -> dict[str, Any]:
    point = dict(recipe.curve(epoch, precision))
    bad = [k for k in point if not k.startswith(CURVE_PREFIX)]
    if bad:
        raise ValueError(f"{type(recipe).__name__}.curve: keys {bad} do not start with "
                         f"{CURVE_PREFIX!r}")  # fmt: skip
    return point


def _check_ranks(settings: LoopSettings, ranks: distributed.Ranks) -> None:
    if settings.accumulate % ranks.world:
        raise CorefreproError(
            f"train.accumulate ({settings.accumulate}) must be a multiple of the {ranks.world} "
            "processes: they share each optimizer step's batches (tasks/training/distributed.py)"
        )


def _barrier(ranks: distributed.Ranks) -> None:
    if ranks.world > 1:
        import torch.distributed as dist

        dist.barrier()


class NoCheckpointError(CorefreproError):
    """A training run ended without selecting a checkpoint of its own."""


def _drop_stale_best(lane: _Lane) -> None:
    """A run from scratch removes an earlier run's best.pt first (a work folder keeps an
    interrupted or finished run's): its scores must never be reported as this run's."""
    stale = lane.out_dir / BEST
    if lane.state.epoch == 0 and stale.exists():
        log.info("%s: removing %s of an earlier run before training from scratch", lane.name, stale)
        stale.unlink()


def _check_selected(lane: _Lane) -> None:
    if lane.state.best_epoch < 1 or not (lane.out_dir / BEST).exists():
        raise NoCheckpointError(
            f"{lane.name}: no epoch selected a checkpoint in {lane.out_dir} (epochs run: "
            f"{lane.state.epoch}); nothing to evaluate"
        )


def _run_epoch(recipe, lanes: list[_Lane], optimizer, scheduler, scaler, precision,
               settings, ranks: distributed.Ranks) -> None:  # fmt: skip
    """Train one epoch, evaluate on dev, keep each lane's best checkpoint, record the curves."""
    active = [k for k, lane in enumerate(lanes) if lane.active(settings)]
    for k in active:
        lanes[k].state.epoch += 1
    epoch = lanes[active[0]].state.epoch
    t0 = time.perf_counter()
    sums = _train_epoch(recipe, epoch, optimizer, scheduler, scaler, precision, settings,
                        lanes[0].name if len(lanes) == 1 else f"{len(active)} lanes",
                        ranks)  # fmt: skip
    train_time = time.perf_counter() - t0
    dev = recipe.evaluate("dev", precision)
    curve = {} if recipe.lanes else _curve_point(recipe, epoch, precision)
    sums, dev = (sums, dev) if recipe.lanes else ([sums], [dev])
    timing = {"train_time_s": train_time, "epoch_time_s": time.perf_counter() - t0}
    for k in active:
        _record(recipe, k, lanes[k], sums[k], dev[k], optimizer, settings, timing, ranks.main,
                curve)  # fmt: skip


def _record(recipe, k: int, lane: _Lane, sums, dev, optimizer, settings, timing,
            writes: bool = True, curve: Mapping[str, Any] | None = None) -> None:  # fmt: skip
    """One lane's epoch: the row of its curve, selection, its best checkpoint (when this
    process `writes`: the main one of a distributed run), its log."""
    state, lanes = lane.state, recipe.lanes
    row = _epoch_row(state.epoch, sums, dev, optimizer.param_groups[0]["lr"])
    row.update(curve or {})
    key, patience_value = recipe.selection(dev)
    improved = _select(state, key, patience_value)
    if improved and writes:
        model = recipe.lane_model(k) if lanes else recipe.model
        info = recipe.checkpoint_info(k) if lanes else recipe.checkpoint_info()
        save_checkpoint(
            lane.out_dir / BEST, model, recipe.checkpoint_config(), epoch=state.epoch,
            dev=jsonable(dict(dev)), **info,
        )  # fmt: skip
    row["best"] = improved
    state.history.append(row)  # no wall-clock figures: last.pt and history.json stay byte-stable
    if lane.log_metrics is not None:
        shown = {k: v for k, v in row.items() if k not in ("epoch", "best")}
        _log_row(lane, {**shown, **timing}, row)
    _log_epoch(lane.name, settings, row, improved, recipe.log_keys, timing)


def load_best(fit_result: Fit, recipe: Recipe) -> dict[str, Any]:
    """Load the best checkpoint into the recipe's model (checked against its configuration):
    what is evaluated on test is what was saved."""
    ckpt = load_checkpoint(fit_result.best_path, recipe.checkpoint_config())
    recipe.model.load_state_dict(ckpt["state_dict"])
    recipe.model.to(fit_result.precision.device)
    return ckpt
