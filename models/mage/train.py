"""Training and evaluation of the MAGE paper's readers (models/mage/readers.py) through the one
training loop (tasks/training/loop.py): ReaderRecipe is this family's part of it, and every
setting is a field of MageModel / MageTrain (params.yaml train_mage, parsed strictly).

Protocol (Dhingra et al., papers/004, §4.2): model selection and early stopping on the DEV
split only; the test split is evaluated once, at the end, with the best-dev checkpoint (the
paper: "we ran 10 random initializations of the model and report the test set performance for
the model with the best validation set performance", after Seo et al. 2017; the stage below
applies the same rule across seeds). Total hidden size fixed at 256 for every model, MAGE
splitting it into sequential and coreference parts (§4.2, 240 + 16 for "MAGE (16)").

Settings the paper does not give (optimizer, learning rate, dropout, clipping, batch size)
default to the authors' released reader code (bdhingra/coref-gru config.py: Adam, gradient
clipping 10, dropout 0.2, 256 hidden units) with learning rate 1e-3 and batch size 32; all
are train_cfg keys.

recipe "authors" (a model setting) trains as the released code does where this project
chose otherwise (bdhingra/coref-gru, lambada branch; AUTHORS_RECIPE): Adam at 5e-4
(config.py learning_rate) halved after every epoch from the third on (train.py: ``if epoch >=2
and epoch % params['anneal_frequency'] == 0: m.anneal()``, anneal_frequency 1; GA.py
Model.anneal: ``self.learning_rate /= 2``), gradients clipped by value at 10 (GA.py
``tf.clip_by_value(gg, -params['grad_clip'], params['grad_clip'])``, config.py grad_clip 10),
Glorot-normal weights and zero biases, dropout only between reader layers (none in a one-layer
reader) and the attention sum renormalised over candidate positions (models/mage/readers.py,
module docstring). Its values are defaults: a key a model entry sets itself (model keys, or
its own `train:` keys) wins; the global train / task_settings values do not.

Devices: CUDA with autocast (bfloat16 by default; float16 uses a GradScaler) when available,
else CPU in float32. MAGE's recurrence always runs in float32 (models/mage/mage_gru.py).

LAMBADA (Table 3): where the reader extracts among document tokens and some answers are not
in the document (ReaderData.has_subsets), dev and test accuracy are also reported on the
'context' subset (answer in the passage) beside 'all' (metrics key "subsets", MLflow
context_dev_acc ... all_test_acc). A training portion carved from dev (train_from_dev) is
named in the metrics' "split_notes"; the dev numbers are then on the held-out rest of dev.

Training runs through the one loop (tasks/training/loop.py) with ReaderRecipe below; it
writes <out_dir>/best.pt atomically whenever dev accuracy improves, with the model and data
configuration it was trained under; loading it under a different configuration is refused
(CheckpointMismatchError names every differing key).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from models.mage.data import (
    ReaderData,
    ReaderDataSettings,
    batch_order,
    iterate_batches,
    load_reader_data,
    make_batch,
)
from models.mage.readers import BiGRUReader, GAReader
from models.mage.stacked import StackedReader
from tasks.core.checkpoints import (
    CheckpointMismatchError,
    load_checkpoint,
    seed_everything,
)
from tasks.core.errors import CorefreproError
from tasks.core.settings import (
    ConfigError,
    bounded,
    parse_settings,
    settings_to_dict,
)
from tasks.core.storage import sha256_of
from tasks.evaluation.qa import QAScore, subset_metrics
from tasks.training.loop import (
    BEST,
    HISTORY,
    Fit,
    LoopSettings,
    Precision,
    Recipe,
    StepOutput,
    fit,
    fit_lanes,
    load_best,
    torch_threads,
)

log = logging.getLogger("corefrepro.train_mage")

READERS = {"bigru": BiGRUReader, "ga": GAReader}


# --------------------------------------------------------------------------- configuration


@dataclass
class MageModel:
    """One reader of Table 1 (params.yaml train_mage.model_defaults + models.<name>)."""

    reader: Literal["bigru", "ga"] = "bigru"
    encoder: Literal["gru", "mage", "dagrnn"] = "gru"  # dagrnn = mage with mage_mode dagrnn
    mage_mode: Literal["split", "shared", "dagrnn"] = "split"
    coref_size: int = bounded(16, ge=0)  # d of "MAGE (d)": coreference part of the hidden state
    hidden_size: int = bounded(256, ge=1)  # total per direction, fixed for all models (§4.2)
    embed_dim: int = bounded(128, ge=1)
    one_hot: bool = False  # the "+ one-hot" baseline (§4.1)
    dropout: float = bounded(0.2, ge=0, lt=1)
    num_layers: int = bounded(3, ge=1)  # GA reader layers
    # incoming edges: Eq. 4's concatenation, or the released CorefGRU's attention over edge
    # types (models/mage/mage_gru.py); MAGE split encoders only
    edge_combine: Literal["concat", "attention"] = "concat"
    # choices the paper leaves open (models/mage/readers.py): ours, or the released code's
    init: Literal["torch", "glorot"] = "torch"
    dropout_at: Literal["all", "between_layers"] = "all"
    attention_sum: Literal["document", "candidates"] = "document"
    # the GA Reader's token-in-query feature at the last layer (released code, not the paper)
    token_in_query: bool = False
    # the released code's structure (models/mage/readers.py, bi-GRU reader): document and query
    # MAGE-GRUs with their own weights, the query read from the document's memory
    separate_query: bool = False
    # character features (the released char CNN): filters (0: none), char embedding size,
    # convolution width, characters kept per word
    char_filters: int = bounded(0, ge=0)
    char_dim: int = bounded(10, ge=1)
    char_width: int = bounded(5, ge=1)
    max_word_len: int = bounded(15, ge=1)
    # "authors": the released code's optimisation recipe (module docstring, AUTHORS_RECIPE)
    recipe: Literal["project", "authors"] = "project"


@dataclass
class MageTrain(LoopSettings, ReaderDataSettings):
    """Training and data settings of one reader (train_mage.train, task_settings.<task>)."""

    epochs: int = 30
    patience: int | None = 5  # epochs without a higher dev accuracy before stopping
    clip: float = 10.0  # max gradient norm (the authors' coref-gru config)
    batch_size: int = bounded(32, ge=1)
    eval_batch_size: int = bounded(64, ge=1)
    lr: float = bounded(1e-3, gt=0)
    # learning rate halved after every epoch e (0-based) with e >= lr_halve_from and
    # e % lr_halve_every == 0 (the authors' train.py schedule: 2, 1); None: constant
    lr_halve_from: int | None = bounded(None, ge=0)
    lr_halve_every: int = bounded(1, ge=1)
    clip_mode: Literal["norm", "value"] = "norm"  # clip the gradient's norm, or each element
    weight_decay: float = bounded(0.0, ge=0)
    pool_batches: int = bounded(20, ge=1)  # length-bucketing pool (models.mage.data.batch_order)
    # train the stage's seeds as one batched model (models/mage/stacked.py); each seed's
    # result is the one it gets alone (to float tolerance), so this is a run-only setting
    seeds_stacked: bool = False


# recipe "authors" (module docstring): the released code's values, model and train parts
AUTHORS_RECIPE: dict[str, dict[str, Any]] = {
    "model": {"init": "glorot", "dropout_at": "between_layers", "attention_sum": "candidates"},
    "train": {
        "lr": 5e-4,
        "lr_halve_from": 2,
        "lr_halve_every": 1,
        "clip": 10.0,
        "clip_mode": "value",
    },  # fmt: skip
}


def recipe_train(model_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The train settings a model's recipe supplies ({} for the project's)."""
    return dict(AUTHORS_RECIPE["train"]) if model_cfg.get("recipe") == "authors" else {}


def resolve_model(model_cfg: Mapping[str, Any] | MageModel) -> MageModel:
    """The one MageModel a reader is built from: defaults filled in (the recipe's under the
    keys given), unknown keys refused, aliases resolved (encoder dagrnn) and settings that
    play no part normalized away, so equal models compare (and fingerprint) equal."""
    if isinstance(model_cfg, MageModel):
        cfg = model_cfg
    else:
        raw = dict(model_cfg)
        if raw.get("recipe") == "authors":
            raw = {**AUTHORS_RECIPE["model"], **raw}
        cfg = parse_settings(MageModel, raw, "train_mage model")
    if cfg.encoder == "dagrnn":
        cfg = dataclasses.replace(cfg, encoder="mage", mage_mode="dagrnn")
    if cfg.encoder == "gru":  # MAGE-only settings play no part
        cfg = dataclasses.replace(cfg, mage_mode="split", coref_size=0, edge_combine="concat")
    elif cfg.mage_mode != "split":
        cfg = dataclasses.replace(cfg, coref_size=0)
        if cfg.edge_combine != "concat":
            raise ConfigError(
                f"train_mage model: edge_combine {cfg.edge_combine!r} weighs the per-type "
                f"slices of a split MAGE state; mage_mode {cfg.mage_mode!r} has none"
            )
    return dataclasses.replace(cfg, num_layers=1) if cfg.reader == "bigru" else cfg


def resolve_train_cfg(
    train_cfg: Mapping[str, Any] | MageTrain, model_cfg: Mapping[str, Any] | None = None
) -> MageTrain:
    """Train settings; a model's recipe supplies the keys train_cfg does not give (settings
    already resolved, a MageTrain, pass as they are)."""
    if isinstance(train_cfg, MageTrain):
        return train_cfg
    merged = {**recipe_train(model_cfg or {}), **train_cfg}
    return parse_settings(MageTrain, merged, "train_mage train")


def epoch_lr(tcfg: MageTrain, epoch: int) -> float:
    """The learning rate of epoch `epoch` (0-based): lr halved after every earlier epoch e
    with e >= lr_halve_from and e % lr_halve_every == 0 (none if lr_halve_from is None)."""
    start = tcfg.lr_halve_from
    if start is None:
        return tcfg.lr
    halvings = sum(1 for e in range(start, epoch) if e % tcfg.lr_halve_every == 0)
    return tcfg.lr * 0.5**halvings


def model_label(model_cfg: Mapping[str, Any] | MageModel) -> str:
    """The row name of Table 1: bigru, bigru+onehot, bigru+mage16, ga+mage-shared, ga+dagrnn."""
    cfg = resolve_model(model_cfg)
    name = cfg.reader + ("+onehot" if cfg.one_hot else "")
    if cfg.encoder == "mage":
        modes = {"split": f"+mage{cfg.coref_size}", "shared": "+mage-shared"}
        name += modes.get(cfg.mage_mode, "+dagrnn")
        name += "-attention" if cfg.edge_combine == "attention" else ""
    name += "+inquery" if cfg.token_in_query else ""
    name += "+sepquery" if cfg.separate_query else ""
    name += "+chars" if cfg.char_filters else ""
    return name + ("+authors" if cfg.recipe == "authors" else "")


def build_model(model_cfg: Mapping[str, Any] | MageModel, data: ReaderData) -> torch.nn.Module:
    cfg = resolve_model(model_cfg)
    kwargs: dict[str, Any] = dict(
        embed_dim=cfg.embed_dim,
        hidden_size=cfg.hidden_size,
        encoder=cfg.encoder,
        num_edge_types=data.num_edge_types,
        coref_size=cfg.coref_size or 16,
        mage_mode=cfg.mage_mode,
        one_hot_coref=cfg.one_hot,
        max_chains=data.max_chains if cfg.one_hot else 0,
        output=data.output,
        num_classes=len(data.classes) or None,
        dropout=cfg.dropout,
        edge_combine=cfg.edge_combine,
        init=cfg.init,
        dropout_at=cfg.dropout_at,
        attention_sum=cfg.attention_sum,
        token_in_query=cfg.token_in_query,
        **released_options(cfg, data),
    )
    if cfg.reader == "ga":
        kwargs["num_layers"] = cfg.num_layers
    return READERS[cfg.reader](len(data.vocab), **kwargs)


# settings added after checkpoints were written (#58.2): left out of a checkpoint's config
# at their defaults, so the checkpoints of every model without them stay as they were
RELEASED_KEYS = ("separate_query", "char_filters", "char_dim", "char_width", "max_word_len")
RELEASED_DEFAULTS = {key: getattr(MageModel(), key) for key in RELEASED_KEYS}


def released_options(cfg: MageModel, data: ReaderData) -> dict[str, Any]:
    """The reader keywords of the released structure's settings (none at their defaults)."""
    given = {
        k: getattr(cfg, k) for k in RELEASED_DEFAULTS if getattr(cfg, k) != RELEASED_DEFAULTS[k]
    }
    if cfg.char_filters:
        given.update(char_dim=cfg.char_dim, char_width=cfg.char_width,
                     max_word_len=cfg.max_word_len, words=list(data.vocab.itos))  # fmt: skip
    return given


def checkpoint_config(model_cfg: Mapping[str, Any] | MageModel, data: ReaderData) -> dict[str, Any]:
    """What the weights mean: the model architecture and the data encoding (vocabulary,
    classes, one-hot width). Training hyperparameters are stored beside it, not compared."""
    model = settings_to_dict(resolve_model(model_cfg))
    for key, default in RELEASED_DEFAULTS.items():
        if model[key] == default:
            del model[key]
    return {"model": model, "data": data.signature()}


# --------------------------------------------------------------------------- evaluation


def to_device(batch: Mapping[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device, non_blocking=True) for k, v in batch.items()}


def nll(log_probs: torch.Tensor, answer: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(per-item negative log-likelihood, mask of items with a producible answer >= 0)."""
    valid = answer >= 0
    gold = log_probs.float().gather(1, answer.clamp(min=0).unsqueeze(1)).squeeze(1)
    return -gold, valid


@torch.no_grad()
def evaluate(
    model: torch.nn.Module,
    data: ReaderData,
    split: str,
    *,
    batch_size: int,
    device: torch.device,
    autocast: Any,
) -> dict[str, float]:
    """Accuracy over ALL items of the split (an answer the model cannot produce is an error)
    and the mean loss over the items whose answer it can produce; where data.has_subsets,
    also context_acc / context_n over the items whose answer is a document token."""
    model.eval()
    score = QAScore(subsets=data.has_subsets)
    examples = data.splits[split]
    for idx, batch in iterate_batches(data, split, batch_size):
        batch = to_device(batch, device)
        with autocast():
            log_p = model(batch)
        answer = batch["answer"]
        hit = ((log_p.argmax(-1) == answer) & (answer >= 0)).cpu()
        inside = torch.tensor([examples[i]["in_context"] for i in idx], dtype=torch.bool)
        item_loss, valid = nll(log_p, answer)
        score.add(hit, inside, item_loss, valid)
    return score.result()


# --------------------------------------------------------------------------- training


class ReaderRecipe(Recipe):
    """The MAGE readers' part of the shared loop (tasks/training/loop.py): Adam, seeded
    length-bucketed batches, the answer's negative log-likelihood, dev accuracy (ties broken
    by the lower dev loss) as the selection rule."""

    log_keys = ("acc", "loss")

    def __init__(self, data: ReaderData, mcfg: MageModel | Mapping[str, Any], tcfg: MageTrain,
                 graphs: str | Path):  # fmt: skip
        self.data, self.mcfg, self.tcfg, self.graphs = data, resolve_model(mcfg), tcfg, graphs
        self.model = build_model(self.mcfg, data)
        self._optimizer: torch.optim.Optimizer | None = None

    def optimizer(self) -> tuple[torch.optim.Optimizer, None]:
        params = self.model.parameters()
        self._optimizer = torch.optim.Adam(
            params, lr=self.tcfg.lr, weight_decay=self.tcfg.weight_decay
        )
        return self._optimizer, None

    def clip_gradients(self, clip: float, params: list[torch.nn.Parameter]) -> None:
        """clip_mode "norm": the gradient's norm (as the loop would); "value": each element
        into [-clip, clip] (the authors' GA.py)."""
        _clip(list(self.model.parameters()), clip, self.tcfg.clip_mode)

    def batches(self, epoch: int) -> Iterator[dict[str, torch.Tensor]]:
        t = self.tcfg
        _set_lr(self._optimizer, epoch_lr(t, epoch - 1))  # the loop counts epochs from 1
        for _, batch in iterate_batches(self.data, "train", t.batch_size, shuffle=True,
                                        seed=t.seed, epoch=epoch, pool_batches=t.pool_batches):  # fmt: skip
            yield batch

    def steps_per_epoch(self) -> int:
        return math.ceil(len(self.data.splits["train"]) / self.tcfg.batch_size)

    def step(self, batch: Mapping[str, torch.Tensor], device: torch.device) -> StepOutput:
        batch = to_device(batch, device)
        log_p = self.model(batch)
        item_loss, valid = nll(log_p, batch["answer"])
        correct = int(((log_p.argmax(-1) == batch["answer"]) & valid).sum())
        stats = {"correct": correct, "seen": batch["answer"].numel()}
        n_valid = int(valid.sum())
        if not n_valid:
            return StepOutput(None, stats)
        loss = item_loss[valid].mean()
        return StepOutput(
            loss, {**stats, "loss_sum": float(loss.detach()) * n_valid, "loss_n": n_valid}
        )

    def evaluate(self, split: str, precision: Precision) -> dict[str, float]:
        return evaluate(self.model, self.data, split, batch_size=self.tcfg.eval_batch_size,
                        device=precision.device, autocast=precision.autocast)  # fmt: skip

    def selection(self, dev: Mapping[str, float]) -> tuple[tuple, float]:
        return (dev["acc"], -nan_to(dev["loss"])), dev["acc"]

    def checkpoint_config(self) -> dict[str, Any]:
        return checkpoint_config(self.mcfg, self.data)

    def checkpoint_info(self) -> dict[str, Any]:
        return {"train_cfg": settings_to_dict(self.tcfg), "vocab": list(self.data.vocab.itos),
                "classes": list(self.data.classes)}  # fmt: skip

    def fingerprint(self) -> dict[str, Any]:
        return {"config": self.checkpoint_config(), "graphs": sha256_of(self.graphs)}

    def state_dict(self) -> dict[str, Any]:
        return {}  # batch order is a function of (seed, epoch): nothing to carry

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        return None


def _clip(params: Sequence[torch.nn.Parameter], clip: float, mode: str) -> None:
    if mode == "value":
        torch.nn.utils.clip_grad_value_(params, clip)
    else:
        torch.nn.utils.clip_grad_norm_(params, clip)


def _set_lr(optimizer: torch.optim.Optimizer | None, lr: float) -> None:
    """Set at the start of each epoch, so a resumed run continues at its epoch's rate."""
    for group in optimizer.param_groups if optimizer is not None else ():
        group["lr"] = lr


def train_and_evaluate(
    graphs_path: str | Path,
    task: str | Sequence[str],
    model_cfg: Mapping[str, Any] | MageModel,
    train_cfg: Mapping[str, Any] | MageTrain,
    out_dir: str | Path,
    *,
    model_name: str | None = None,
    data: ReaderData | None = None,
    log_metrics: Callable[..., None] | None = None,
) -> dict[str, Any]:
    """Train on `task`'s train items, select on dev, report test once; returns the metrics.

    Writes <out_dir>/best.pt (best dev) and <out_dir>/history.json (learning curve);
    log_metrics, when given, receives the curve (one step per epoch) and the final figures.
    `data` may be passed pre-loaded (it must come from the same graphs and settings).
    """
    tcfg = resolve_train_cfg(train_cfg, model_cfg)
    mcfg = resolve_model(model_cfg)
    name = model_name or model_label(mcfg)
    if data is None:
        data = load_data(graphs_path, task, tcfg)
    dataset = f"{data.corpus}/{task_name(task)}"  # what the run reads: a task group's members
    return _train(data, mcfg, tcfg, Path(out_dir), name, dataset, log_metrics, graphs_path)


def task_name(task: str | Sequence[str]) -> str:
    return task if isinstance(task, str) else "+".join(task)


def load_data(graphs_path: str | Path, task: str | Sequence[str], tcfg: MageTrain) -> ReaderData:
    """The reader data of a task (or task group's labels) under the data settings of tcfg."""
    with torch_threads(tcfg.threads):
        return load_reader_data(graphs_path, task, tcfg)


def _train(data, mcfg: MageModel, tcfg: MageTrain, out_dir: Path, name, dataset, log_fn, graphs):
    started = time.perf_counter()
    if not data.splits["dev"]:
        raise CorefreproError(f"{dataset}: no dev items: model selection needs a dev split")
    seed_everything(tcfg.seed)
    recipe = ReaderRecipe(data, mcfg, tcfg, graphs)
    n_params = sum(p.numel() for p in recipe.model.parameters())
    log.info("%s on %s (seed %d): %d train / %d dev / %d test items, %d parameters, output %s",
             name, dataset, tcfg.seed, len(data.splits["train"]), len(data.splits["dev"]),
             len(data.splits["test"]), n_params, data.output)  # fmt: skip
    result = fit(recipe, tcfg, out_dir, name=f"{name} {dataset}", log_metrics=log_fn)
    with torch_threads(tcfg.threads):
        load_best(result, recipe)
        kwargs = {"device": result.precision.device, "autocast": result.precision.autocast}
        dev = evaluate(recipe.model, data, "dev", batch_size=tcfg.eval_batch_size, **kwargs)
        test = (
            evaluate(recipe.model, data, "test", batch_size=tcfg.eval_batch_size, **kwargs)
            if data.splits["test"]
            else None
        )
    metrics = _metrics(name, dataset, tcfg, result, dev, test, data, n_params, started)
    if log_fn is not None:
        log_fn(_final_mlflow(metrics), None)
    log.info("%s %s: best dev acc %.3f (epoch %d of %d), test acc %s, %.0f s", name, dataset,
             metrics["dev_acc"], metrics["best_epoch"], metrics["epochs_run"],
             f"{metrics['test_acc']:.3f} ({metrics['test_n']} items)" if test else "n/a",
             metrics["wall_time_s"])  # fmt: skip
    return metrics


def _metrics(name, dataset, tcfg, result: Fit, dev, test, data, n_params, started) -> dict:
    metrics: dict[str, Any] = {
        "model": name,
        "dataset": dataset,
        "seed": tcfg.seed,
        "best_epoch": result.best_epoch,
        "epochs_run": result.epochs_run,
        "stopped_early": result.stopped_early,
        "dev_acc": dev["acc"],
        "dev_error": 1 - dev["acc"],
        "dev_loss": dev["loss"],
        "dev_n": dev["n"],
        "test_acc": test["acc"] if test else None,
        "test_error": 1 - test["acc"] if test else None,
        "test_loss": test["loss"] if test else None,
        "test_n": test["n"] if test else 0,
        "train_n": len(data.splits["train"]),
        "parameters": n_params,
        "device": result.precision.device.type,
        "wall_time_s": round(time.perf_counter() - started, 2),
        "train_time_s": round(result.train_time_s, 2),
        "sec_per_epoch": round(result.train_time_s / max(result.epochs_run, 1), 2),
    }
    if data.has_subsets:
        metrics["subsets"] = subset_metrics(dev, test)
    if data.split_notes:
        metrics["split_notes"] = dict(data.split_notes)
    return metrics


def _final_mlflow(metrics: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("test_acc", "test_error", "wall_time_s", "best_epoch")
    out = {"best_dev_acc": metrics["dev_acc"], **{k: metrics[k] for k in keys}}
    for subset, values in (metrics.get("subsets") or {}).items():
        out.update({f"{subset}_{k}": v for k, v in values.items() if v is not None})
    return out


# --------------------------------------------------------------------------- seeds stacked


def _seed_rows(k: int, items: int, per_seed: int) -> slice:
    return slice(k * per_seed, k * per_seed + items)


class StackedReaderRecipe(Recipe):
    """ReaderRecipe for K seeds trained as one batched model (models/mage/stacked.py), one lane
    of the loop per seed (tasks/training/loop.py fit_lanes). Seed k is initialised, ordered
    (its own batch order), dropped out (its own generator), clipped and selected as alone;
    every batch folds the K seeds' own batches into one."""

    log_keys = ("acc", "loss")

    def __init__(self, data: ReaderData, mcfg: MageModel | Mapping[str, Any],
                 tcfgs: Sequence[MageTrain], graphs):  # fmt: skip
        differ = {k for t in tcfgs for k, v in settings_to_dict(t).items()
                  if k != "seed" and v != getattr(tcfgs[0], k)}  # fmt: skip
        if differ:
            raise CorefreproError(f"stacked seeds must share every setting but the seed: {differ}")
        self.data, self.tcfgs, self.graphs = data, list(tcfgs), graphs
        self.mcfg = resolve_model(mcfg)
        readers, generators = [], []
        for t in tcfgs:  # each seed's model and dropout stream start as in a separate run
            seed_everything(t.seed)
            readers.append(build_model(self.mcfg, data))
            generators.append(torch.Generator().manual_seed(0))
            generators[-1].set_state(torch.get_rng_state())
        self.model = StackedReader(readers, generators)
        self.single = readers[0]  # reused to hand one seed's weights to a checkpoint
        self.lanes = len(tcfgs)
        self._optimizer: torch.optim.Optimizer | None = None

    def optimizer(self) -> tuple[torch.optim.Optimizer, None]:
        t = self.tcfgs[0]  # Adam is element-wise: stacked, each seed's update is its own
        self._optimizer = torch.optim.Adam(
            self.model.parameters(), lr=t.lr, weight_decay=t.weight_decay
        )
        return self._optimizer, None

    def batches(self, epoch: int) -> Iterator[dict[str, Any]]:
        _set_lr(self._optimizer, epoch_lr(self.tcfgs[0], epoch - 1))  # epochs from 1
        examples = self.data.splits["train"]
        lengths = [e["length"] for e in examples]
        orders = [batch_order(lengths, t.batch_size, shuffle=True, seed=t.seed, epoch=epoch,
                              pool_batches=t.pool_batches) for t in self.tcfgs]  # fmt: skip
        for idx in zip(*orders, strict=True):
            yield self._fold([[examples[i] for i in part] for part in idx])

    def _fold(self, parts: list[list[Mapping[str, Any]]]) -> dict[str, Any]:
        """The seeds' batches as one, seed-major, each padded to b items with its first item;
        the layout says where each seed's real part is (SeedDropout)."""
        per_seed = max(len(part) for part in parts)
        folded = [ex for part in parts for ex in part + [part[0]] * (per_seed - len(part))]
        batch = make_batch(folded, len(self.data.classes))
        widths = {
            int(batch["tokens"].shape[1]): [max(len(ex["tokens"]) for ex in p) for p in parts],
            int((batch["doc_span"][:, 1] - batch["doc_span"][:, 0]).max()): [
                max(ex["doc_span"][1] - ex["doc_span"][0] for ex in p) for p in parts
            ],
        }
        return {"batch": batch, "items": [len(p) for p in parts], "per_seed": per_seed,
                "widths": widths}  # fmt: skip

    def steps_per_epoch(self) -> int:
        return math.ceil(len(self.data.splits["train"]) / self.tcfgs[0].batch_size)

    def step(self, folded: Mapping[str, Any], device: torch.device) -> StepOutput:
        batch = to_device(folded["batch"], device)
        self.model.set_layout(folded["items"], folded["widths"])
        log_p = self.model(batch)
        total, lane_stats = None, []
        for k, items in enumerate(folded["items"]):
            rows = _seed_rows(k, items, folded["per_seed"])
            item_loss, valid = nll(log_p[rows], batch["answer"][rows])
            correct = int(((log_p[rows].argmax(-1) == batch["answer"][rows]) & valid).sum())
            stats: dict[str, float] = {"correct": correct, "seen": items}
            n_valid = int(valid.sum())
            if n_valid:  # (a seed with nothing to learn from still takes Adam's step)
                loss = item_loss[valid].mean()
                total = loss if total is None else total + loss
                stats |= {"loss_sum": float(loss.detach()) * n_valid, "loss_n": n_valid}
            lane_stats.append(stats)
        return StepOutput(total, {}, lane_stats)

    def clip_gradients(self, clip: float, params: list[torch.nn.Parameter]) -> None:
        """Each seed's gradient norm clipped on its own, as clip_grad_norm_ does alone (by
        value: element-wise, so the same stacked or alone)."""
        if self.tcfgs[0].clip_mode == "value":
            _clip(list(self.model.parameters()), clip, "value")
            return
        grads = [p.grad for p in self.model.parameters() if p.grad is not None]
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads]).norm(dim=0)  # [K]
        scale = (clip / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale.view(-1, *([1] * (g.dim() - 1))))

    @torch.no_grad()
    def evaluate(self, split: str, precision: Precision) -> list[dict[str, float]]:
        """Every seed on the same evaluation batches: each batch repeated once per seed."""
        self.model.eval()
        scores = [QAScore(subsets=self.data.has_subsets) for _ in self.tcfgs]
        examples = self.data.splits[split]
        size = self.tcfgs[0].eval_batch_size
        for idx in batch_order([e["length"] for e in examples], size):
            part = [examples[i] for i in idx]
            batch = to_device(make_batch(part * self.lanes, len(self.data.classes)),
                              precision.device)  # fmt: skip
            with precision.autocast():
                log_p = self.model(batch)
            inside = torch.tensor([ex["in_context"] for ex in part], dtype=torch.bool)
            for k, score in enumerate(scores):
                rows = _seed_rows(k, len(part), len(part))
                answer = batch["answer"][rows]
                hit = ((log_p[rows].argmax(-1) == answer) & (answer >= 0)).cpu()
                item_loss, valid = nll(log_p[rows], answer)
                score.add(hit, inside, item_loss, valid)
        return [score.result() for score in scores]

    def selection(self, dev: Mapping[str, float]) -> tuple[tuple, float]:
        return (dev["acc"], -nan_to(dev["loss"])), dev["acc"]

    def lane_model(self, k: int) -> torch.nn.Module:
        self.single.load_state_dict(self.model.seed_state_dict(k))
        return self.single

    def checkpoint_config(self) -> dict[str, Any]:
        return checkpoint_config(self.mcfg, self.data)

    def checkpoint_info(self, k: int) -> dict[str, Any]:
        return {"train_cfg": settings_to_dict(self.tcfgs[k]), "vocab": list(self.data.vocab.itos),
                "classes": list(self.data.classes)}  # fmt: skip

    def fingerprint(self) -> dict[str, Any]:
        return {"config": self.checkpoint_config(), "graphs": sha256_of(self.graphs),
                "seeds": [t.seed for t in self.tcfgs]}  # fmt: skip

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        return None


def train_stacked(
    graphs_path: str | Path,
    task: str | Sequence[str],
    model_cfg: Mapping[str, Any] | MageModel,
    train_cfgs: Sequence[Mapping[str, Any] | MageTrain],
    out_dirs: Sequence[str | Path],
    *,
    model_name: str | None = None,
    data: ReaderData | None = None,
    log_metrics: Sequence[Callable[..., None] | None] | None = None,
) -> list[dict[str, Any]]:
    """train_and_evaluate for several seeds (train_cfgs differing only in seed) trained as one
    stacked model; each seed gets its own out_dir, metrics and log_metrics sink, as if alone."""
    tcfgs = [resolve_train_cfg(t, model_cfg) for t in train_cfgs]
    mcfg = resolve_model(model_cfg)
    name = model_name or model_label(mcfg)
    if data is None:
        data = load_data(graphs_path, task, tcfgs[0])
    dataset = f"{data.corpus}/{task_name(task)}"
    sinks = list(log_metrics or [None] * len(tcfgs))
    return _train_stacked(data, mcfg, tcfgs, [Path(d) for d in out_dirs], name, dataset,
                          sinks, graphs_path)  # fmt: skip


def _train_stacked(data, mcfg, tcfgs, out_dirs, name, dataset, sinks, graphs) -> list[dict]:
    started = time.perf_counter()
    if not data.splits["dev"]:
        raise CorefreproError(f"{dataset}: no dev items: model selection needs a dev split")
    recipe = StackedReaderRecipe(data, mcfg, tcfgs, graphs)
    n_params = sum(p.numel() for p in recipe.single.parameters())
    log.info("%s on %s: seeds %s stacked, %d train / %d dev items, %d parameters each", name,
             dataset, [t.seed for t in tcfgs], len(data.splits["train"]),
             len(data.splits["dev"]), n_params)  # fmt: skip
    names = [f"{name} {dataset} seed {t.seed}" for t in tcfgs]
    fits = fit_lanes(recipe, tcfgs[0], out_dirs, names=names, log_metrics=sinks)
    results = []
    for k, (tcfg, result) in enumerate(zip(tcfgs, fits, strict=True)):
        model = recipe.single  # the seed alone, from its best checkpoint, as load_best does
        ckpt = load_checkpoint(result.best_path, recipe.checkpoint_config())
        model.load_state_dict(ckpt["state_dict"])
        model.to(result.precision.device)
        with torch_threads(tcfg.threads):
            kwargs = {"device": result.precision.device, "autocast": result.precision.autocast}
            dev = evaluate(model, data, "dev", batch_size=tcfg.eval_batch_size, **kwargs)
            test = (
                evaluate(model, data, "test", batch_size=tcfg.eval_batch_size, **kwargs)
                if data.splits["test"]
                else None
            )
        metrics = _metrics(name, dataset, tcfg, result, dev, test, data, n_params, started)
        metrics["stacked_with"] = [t.seed for t in tcfgs]
        if sinks[k] is not None:
            sinks[k](_final_mlflow(metrics), None)
        results.append(metrics)
    return results


def restore(
    checkpoint: str | Path, model_cfg: Mapping[str, Any] | MageModel, data: ReaderData
) -> torch.nn.Module:
    """A model rebuilt from a checkpoint, which must match (model_cfg, data)."""
    ckpt = load_checkpoint(checkpoint, checkpoint_config(model_cfg, data))
    model = build_model(model_cfg, data)
    model.load_state_dict(ckpt["state_dict"])
    return model.eval()


def check_split(mcfg: MageModel, where: str) -> None:
    """A split MAGE state needs room for both parts (§4.2: the total fixed, d of it for
    coreference): refused before any data is read, not when the layer is built; `where`
    names the setting the model came from."""
    split = mcfg.encoder == "mage" and mcfg.mage_mode == "split"
    if split and not 1 <= mcfg.coref_size < mcfg.hidden_size:
        raise ConfigError(
            f"{where}: coref_size {mcfg.coref_size} must be in [1, hidden_size "
            f"{mcfg.hidden_size}) (MAGE (d): d of the hidden size for coreference, §4.2)"
        )


def nan_to(x: float | None, value: float = math.inf) -> float:
    """x, or `value` where x is None or NaN (a loss that ranks last)."""
    return value if x is None or math.isnan(x) else x


__all__ = [
    "CheckpointMismatchError",
    "build_model",
    "check_split",
    "checkpoint_config",
    "evaluate",
    "load_checkpoint",
    "model_label",
    "restore",
    "BEST",
    "HISTORY",
    "subset_metrics",
    "train_and_evaluate",
    "train_stacked",
]
