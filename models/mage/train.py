"""Training and evaluation of the MAGE paper's readers (models/mage/readers.py), nanoGPT style:
one plain loop, every setting in a dict, nothing hidden in a framework.

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

Devices: CUDA with autocast (bfloat16 by default; float16 uses a GradScaler) when available,
else CPU in float32. MAGE's recurrence always runs in float32 (models/mage/mage_gru.py).

LAMBADA (Table 3): where the reader extracts among document tokens and some answers are not
in the document (ReaderData.has_subsets), dev and test accuracy are also reported on the
'context' subset (answer in the passage) beside 'all' (metrics key "subsets", MLflow
context_dev_acc ... all_test_acc). A training portion carved from dev (train_from_dev) is
named in the metrics' "split_notes"; the dev numbers are then on the held-out rest of dev.

Checkpoint: <out_dir>/checkpoint.pt, written atomically whenever dev accuracy improves, with
the model and data configuration it was trained under; loading it under a different
configuration is refused (CheckpointMismatchError names every differing key).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.mage.data import DATA_DEFAULTS, ReaderData, iterate_batches, load_reader_data
from models.mage.readers import BiGRUReader, GAReader
from tasks.core import checkpoints as _ckpt
from tasks.core import storage
from tasks.core.checkpoints import (
    CheckpointMismatchError,
    pick_device,
    seed_everything,
)
from tasks.core.checkpoints import (
    jsonable as _jsonable,
)
from tasks.core.config import params, resolve_path, with_defaults
from tasks.core.errors import CorefreproError
from tasks.core.fetch import sha256_of

log = logging.getLogger("corefrepro.train")

CHECKPOINT = "checkpoint.pt"
HISTORY = "history.json"
SEED_METRICS = "metrics.json"
PER_SEED_KEYS = ("dev_acc", "test_acc", "best_epoch", "epochs_run", "wall_time_s", "subsets")
READERS = {"bigru": BiGRUReader, "ga": GAReader}
MODEL_DEFAULTS: dict[str, Any] = {
    "reader": "bigru",  # bigru | ga
    "encoder": "gru",  # gru | mage | dagrnn (= mage with mage_mode dagrnn)
    "mage_mode": "split",  # split | shared | dagrnn
    "coref_size": 16,  # d of "MAGE (d)": coreference part of the hidden state
    "hidden_size": 256,  # total per direction, fixed for all models (§4.2)
    "embed_dim": 128,
    "one_hot": False,  # the "+ one-hot" baseline (§4.1)
    "dropout": 0.2,
    "num_layers": 3,  # GA reader layers
}
TRAIN_DEFAULTS: dict[str, Any] = {
    "epochs": 30,
    "batch_size": 32,
    "eval_batch_size": 64,
    "lr": 1e-3,
    "weight_decay": 0.0,
    "clip": 10.0,  # max gradient norm
    "patience": 5,  # epochs without a higher dev accuracy before stopping
    "max_time_s": None,  # stop after the epoch that passes this wall time (machine-dependent)
    "seed": 1,
    "pool_batches": 20,  # length-bucketing pool (models.mage.data.batch_order)
    "device": "auto",  # auto | cpu | cuda
    "amp": True,  # autocast on CUDA
    "amp_dtype": "bfloat16",  # or float16 (with a GradScaler)
    "threads": None,  # torch intra-op threads on CPU (None: leave as is)
    "log_every_s": 60.0,  # in-epoch progress lines for long epochs
    **DATA_DEFAULTS,  # data settings (models.mage.data)
}


# --------------------------------------------------------------------------- configuration


def resolve_model_cfg(model_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults filled in, aliases resolved (encoder dagrnn), unknown keys refused."""
    cfg = with_defaults(MODEL_DEFAULTS, model_cfg, "train_mage model")
    if cfg["reader"] not in READERS:
        raise CorefreproError(f"reader must be one of {sorted(READERS)}, not {cfg['reader']!r}")
    if cfg["encoder"] == "dagrnn":
        cfg["encoder"], cfg["mage_mode"] = "mage", "dagrnn"
    if cfg["encoder"] not in ("gru", "mage"):
        raise CorefreproError(f"encoder must be gru, mage or dagrnn, not {cfg['encoder']!r}")
    if cfg["encoder"] == "gru":  # MAGE-only settings play no part: normalize them away
        cfg["mage_mode"], cfg["coref_size"] = "split", 0
    elif cfg["mage_mode"] != "split":
        cfg["coref_size"] = 0
    if cfg["reader"] == "bigru":
        cfg["num_layers"] = 1
    return cfg


def resolve_train_cfg(train_cfg: Mapping[str, Any]) -> dict[str, Any]:
    return with_defaults(TRAIN_DEFAULTS, train_cfg, "train_mage train")


def model_label(model_cfg: Mapping[str, Any]) -> str:
    """The row name of Table 1: bigru, bigru+onehot, bigru+mage16, ga+mage-shared, ga+dagrnn."""
    cfg = resolve_model_cfg(model_cfg)
    name = cfg["reader"]
    if cfg["one_hot"]:
        name += "+onehot"
    if cfg["encoder"] == "mage":
        mode = cfg["mage_mode"]
        name += (
            f"+mage{cfg['coref_size']}"
            if mode == "split"
            else ("+mage-shared" if mode == "shared" else "+dagrnn")
        )
    return name


def build_model(model_cfg: Mapping[str, Any], data: ReaderData) -> torch.nn.Module:
    cfg = resolve_model_cfg(model_cfg)
    kwargs: dict[str, Any] = dict(
        embed_dim=cfg["embed_dim"],
        hidden_size=cfg["hidden_size"],
        encoder=cfg["encoder"],
        num_edge_types=data.num_edge_types,
        coref_size=cfg["coref_size"] or 16,
        mage_mode=cfg["mage_mode"],
        one_hot_coref=cfg["one_hot"],
        max_chains=data.max_chains if cfg["one_hot"] else 0,
        output=data.output,
        num_classes=len(data.classes) or None,
        dropout=cfg["dropout"],
    )
    if cfg["reader"] == "ga":
        kwargs["num_layers"] = cfg["num_layers"]
    return READERS[cfg["reader"]](len(data.vocab), **kwargs)


def checkpoint_config(model_cfg: Mapping[str, Any], data: ReaderData) -> dict[str, Any]:
    """What the weights mean: the model architecture and the data encoding (vocabulary,
    classes, one-hot width). Training hyperparameters are stored beside it, not compared."""
    return {"model": resolve_model_cfg(model_cfg), "data": data.signature()}


# --------------------------------------------------------------------------- utilities


def save_checkpoint(path: str | Path, model: torch.nn.Module, config: Mapping, **info: Any) -> None:
    _ckpt.save_checkpoint(path, model, config, **info)


def load_checkpoint(path: str | Path, config: Mapping | None = None) -> dict[str, Any]:
    return _ckpt.load_checkpoint(path, config)


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
    correct = total = scored = 0
    in_correct = in_total = 0
    loss_sum = 0.0
    examples = data.splits[split]
    for idx, batch in iterate_batches(data, split, batch_size):
        batch = to_device(batch, device)
        with autocast():
            log_p = model(batch)
        answer = batch["answer"]
        hit = ((log_p.argmax(-1) == answer) & (answer >= 0)).cpu()
        correct += int(hit.sum())
        total += answer.numel()
        inside = torch.tensor([examples[i]["in_context"] for i in idx], dtype=torch.bool)
        in_correct += int((hit & inside).sum())
        in_total += int(inside.sum())
        item_loss, valid = nll(log_p, answer)
        finite = valid & torch.isfinite(item_loss)
        loss_sum += float(item_loss[finite].sum())
        scored += int(finite.sum())
    out = {
        "acc": correct / total if total else math.nan,
        "loss": loss_sum / scored if scored else math.nan,
        "n": total,
    }
    if data.has_subsets:
        out["context_acc"] = in_correct / in_total if in_total else math.nan
        out["context_n"] = in_total
    return out


def subset_metrics(dev: Mapping[str, Any], test: Mapping[str, Any] | None) -> dict[str, Any]:
    """The "subsets" metrics: {"context": {dev_acc, test_acc, dev_n, test_n}, "all": {...}}
    (MAGE paper Table 3's column groups; test None where there is no test split)."""
    out: dict[str, Any] = {}
    for name, prefix in (("context", "context_"), ("all", "")):
        out[name] = {
            "dev_acc": dev[f"{prefix}acc"],
            "test_acc": test[f"{prefix}acc"] if test else None,
            "dev_n": dev[f"{prefix}n"],
            "test_n": test[f"{prefix}n"] if test else 0,
        }
    return out


# --------------------------------------------------------------------------- training


def train_and_evaluate(
    graphs_path: str | Path,
    task: str | Sequence[str],
    model_cfg: Mapping[str, Any],
    train_cfg: Mapping[str, Any],
    out_dir: str | Path,
    *,
    model_name: str | None = None,
    track: bool = True,
    data: ReaderData | None = None,
) -> dict[str, Any]:
    """Train on `task`'s train items, select on dev, report test once; returns the metrics.

    Writes <out_dir>/checkpoint.pt (best dev) and <out_dir>/history.json (learning curve);
    with track, logs the run to MLflow (experiment of paper "mage", one step per epoch).
    `data` may be passed pre-loaded (it must come from the same graphs and settings).
    """
    tcfg = resolve_train_cfg(train_cfg)
    mcfg = resolve_model_cfg(model_cfg)
    name = model_name or model_label(mcfg)
    out_dir = Path(out_dir)
    threads_before = torch.get_num_threads()
    if tcfg["threads"]:
        torch.set_num_threads(int(tcfg["threads"]))
    try:
        if data is None:
            data = load_reader_data(graphs_path, task, {k: tcfg[k] for k in DATA_DEFAULTS})
        task_name = task if isinstance(task, str) else "+".join(task)
        dataset = f"{data.corpus}/{task_name}"
        run_params = {"model": mcfg, "train": tcfg, "data": data.signature() | data.stats}
        run_params["data"].pop("classes", None)
        tracking = (
            _tracked(name, dataset, int(tcfg["seed"]), run_params)
            if track
            else contextlib.nullcontext(None)
        )
        with tracking as mlflow_run:
            metrics = _train(data, mcfg, tcfg, out_dir, name, dataset, mlflow_run)
    finally:
        torch.set_num_threads(threads_before)
    return metrics


@contextlib.contextmanager
def _tracked(name: str, dataset: str, seed: int, run_params: dict) -> Iterator[Any]:
    from tasks.core.tracking import tracked_run

    with tracked_run("mage", name, dataset, seed=seed, run_params=run_params) as run:
        yield run


def _log_metrics(mlflow_run: Any, metrics: Mapping[str, float], step: int | None = None) -> None:
    if mlflow_run is None:
        return
    import mlflow

    finite = {k: float(v) for k, v in metrics.items() if v is not None and math.isfinite(v)}
    mlflow.log_metrics(finite, step=step)


def _train(
    data: ReaderData,
    mcfg: dict[str, Any],
    tcfg: dict[str, Any],
    out_dir: Path,
    name: str,
    dataset: str,
    mlflow_run: Any,
) -> dict[str, Any]:
    started = time.perf_counter()
    seed = int(tcfg["seed"])
    seed_everything(seed)
    device = pick_device(tcfg["device"])
    amp_dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}[tcfg["amp_dtype"]]
    use_amp = bool(tcfg["amp"]) and device.type == "cuda"

    def autocast() -> Any:
        return torch.autocast(device.type, dtype=amp_dtype, enabled=use_amp)

    scaler = torch.amp.GradScaler(device.type, enabled=use_amp and amp_dtype == torch.float16)
    model = build_model(mcfg, data).to(device)
    config = checkpoint_config(mcfg, data)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=tcfg["lr"], weight_decay=tcfg["weight_decay"]
    )
    n_params = sum(p.numel() for p in model.parameters())
    train_items = data.splits["train"]
    if not data.splits["dev"]:
        raise CorefreproError(f"{dataset}: no dev items: model selection needs a dev split")
    log.info(
        "%s on %s (seed %d, %s%s): %d train / %d dev / %d test items, %d parameters, output %s",
        name,
        dataset,
        seed,
        device.type,
        f" amp {tcfg['amp_dtype']}" if use_amp else "",
        len(train_items),
        len(data.splits["dev"]),
        len(data.splits["test"]),
        n_params,
        data.output,
    )
    ckpt_path = out_dir / CHECKPOINT
    history: list[dict[str, Any]] = []
    best: dict[str, Any] | None = None
    since_best = 0
    stopped_early = False
    n_batches = math.ceil(len(train_items) / tcfg["batch_size"])
    for epoch in range(1, int(tcfg["epochs"]) + 1):
        model.train()
        t0 = time.perf_counter()
        last_log = t0
        loss_sum, n_loss, correct, seen = 0.0, 0, 0, 0
        batches = iterate_batches(
            data,
            "train",
            tcfg["batch_size"],
            shuffle=True,
            seed=seed,
            epoch=epoch,
            pool_batches=tcfg["pool_batches"],
        )
        for b, (_, batch) in enumerate(batches, 1):
            batch = to_device(batch, device)
            with autocast():
                log_p = model(batch)
            item_loss, valid = nll(log_p, batch["answer"])
            if bool(valid.any()):
                loss = item_loss[valid].mean()
                optimizer.zero_grad(set_to_none=True)
                scaler.scale(loss).backward()
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg["clip"])
                scaler.step(optimizer)
                scaler.update()
                loss_sum += float(loss.detach()) * int(valid.sum())
                n_loss += int(valid.sum())
            correct += int(((log_p.argmax(-1) == batch["answer"]) & valid).sum())
            seen += batch["answer"].numel()
            now = time.perf_counter()
            if tcfg["log_every_s"] and now - last_log >= tcfg["log_every_s"]:
                last_log = now
                log.info(
                    "  epoch %d: batch %d/%d, train loss %.4f, %.1f items/s",
                    epoch,
                    b,
                    n_batches,
                    loss_sum / max(n_loss, 1),
                    seen / (now - t0),
                )
        train_time = time.perf_counter() - t0
        dev = evaluate(
            model, data, "dev", batch_size=tcfg["eval_batch_size"], device=device, autocast=autocast
        )
        row = {
            "epoch": epoch,
            "train_loss": loss_sum / n_loss if n_loss else math.nan,
            "train_acc": correct / seen if seen else math.nan,
            "dev_acc": dev["acc"],
            "dev_loss": dev["loss"],
            **({"dev_context_acc": dev["context_acc"]} if "context_acc" in dev else {}),
            "epoch_time_s": time.perf_counter() - t0,
        }
        # selection on dev only: higher accuracy, ties broken by lower dev loss; patience
        # counts epochs without a higher dev ACCURACY (a loss-only gain at 100% accuracy
        # would otherwise keep a solved task training)
        improved = best is None or (row["dev_acc"], -_nan_to(row["dev_loss"])) > (
            best["dev_acc"],
            -_nan_to(best["dev_loss"]),
        )
        since_best = 0 if best is None or row["dev_acc"] > best["dev_acc"] else since_best + 1
        if improved:
            best = dict(row)
            save_checkpoint(
                ckpt_path,
                model,
                config,
                epoch=epoch,
                dev_acc=row["dev_acc"],
                train_cfg=tcfg,
                vocab=list(data.vocab.itos),
                classes=list(data.classes),
                model_name=name,
                dataset=dataset,
            )
        row["best"] = improved
        history.append(row)
        _log_metrics(
            mlflow_run, {k: v for k, v in row.items() if k not in ("epoch", "best")}, epoch
        )
        log.info(
            "%s %s epoch %d/%d: train loss %.4f acc %.3f | dev acc %.3f loss %.4f | "
            "%.1f s (%.0f items/s)%s",
            name,
            dataset,
            epoch,
            tcfg["epochs"],
            row["train_loss"],
            row["train_acc"],
            row["dev_acc"],
            row["dev_loss"],
            row["epoch_time_s"],
            len(train_items) / max(train_time, 1e-9),
            " *" if improved else "",
        )
        if since_best >= int(tcfg["patience"]):
            stopped_early = True
            log.info("%s %s: no better dev accuracy for %d epochs: stop", name, dataset, since_best)
            break
        if tcfg["max_time_s"] and time.perf_counter() - started > float(tcfg["max_time_s"]):
            stopped_early = True
            log.info("%s %s: time budget %.0f s spent: stop", name, dataset, tcfg["max_time_s"])
            break
    train_time = time.perf_counter() - started
    storage.write_json(out_dir / HISTORY, _jsonable(history))

    # test once, with the best-dev checkpoint (reloaded: what is evaluated is what was saved)
    ckpt = load_checkpoint(ckpt_path, config)
    model.load_state_dict(ckpt["state_dict"])
    kwargs = dict(batch_size=tcfg["eval_batch_size"], device=device, autocast=autocast)
    dev = evaluate(model, data, "dev", **kwargs)
    test = evaluate(model, data, "test", **kwargs) if data.splits["test"] else None
    assert best is not None
    metrics: dict[str, Any] = {
        "model": name,
        "dataset": dataset,
        "seed": seed,
        "best_epoch": best["epoch"],
        "epochs_run": len(history),
        "stopped_early": stopped_early,
        "dev_acc": dev["acc"],
        "dev_error": 1 - dev["acc"],
        "dev_loss": dev["loss"],
        "dev_n": dev["n"],
        "test_acc": test["acc"] if test else None,
        "test_error": 1 - test["acc"] if test else None,
        "test_loss": test["loss"] if test else None,
        "test_n": test["n"] if test else 0,
        "train_n": len(train_items),
        "parameters": n_params,
        "device": device.type,
        "wall_time_s": round(time.perf_counter() - started, 2),
        "train_time_s": round(train_time, 2),
        "sec_per_epoch": round(train_time / len(history), 2),
    }
    if data.has_subsets:
        metrics["subsets"] = subset_metrics(dev, test)
    if data.split_notes:
        metrics["split_notes"] = dict(data.split_notes)
    _log_metrics(
        mlflow_run,
        {
            "best_dev_acc": metrics["dev_acc"],
            "best_epoch": metrics["best_epoch"],
            "test_acc": metrics["test_acc"],
            "test_error": metrics["test_error"],
            "wall_time_s": metrics["wall_time_s"],
            **{
                f"{name}_{key}": value
                for name, sub in (metrics.get("subsets") or {}).items()
                for key, value in sub.items()
                if value is not None
            },
        },
    )
    if mlflow_run is not None:
        import mlflow

        mlflow.log_dict(_jsonable(history), HISTORY)
    log.info(
        "%s %s: best dev acc %.3f (epoch %d of %d), test acc %s, %.0f s",
        name,
        dataset,
        metrics["dev_acc"],
        metrics["best_epoch"],
        metrics["epochs_run"],
        f"{metrics['test_acc']:.3f} ({metrics['test_n']} items)" if test else "n/a",
        metrics["wall_time_s"],
    )
    return metrics


def _nan_to(x: float, value: float = math.inf) -> float:
    return value if x is None or math.isnan(x) else x


def restore(
    checkpoint: str | Path, model_cfg: Mapping[str, Any], data: ReaderData
) -> torch.nn.Module:
    """A model rebuilt from a checkpoint, which must match (model_cfg, data)."""
    ckpt = load_checkpoint(checkpoint, checkpoint_config(model_cfg, data))
    model = build_model(model_cfg, data)
    model.load_state_dict(ckpt["state_dict"])
    return model.eval()


# --------------------------------------------------------------------------- the DVC stage
# params.yaml train_mage: data (a graph run), run {models, tasks} (the dvc.yaml matrix),
# model_defaults (under every model), models {name: model cfg, optionally with train: {train
# cfg overrides}}, task_groups {name: [task labels]}, task_settings {task: train cfg
# overrides}, seeds, train (train cfg). Precedence: train < task_settings < a model's train.


def settings() -> dict[str, Any]:
    return dict(params("train_mage"))


def graphs_path(cfg: Mapping[str, Any]) -> Path:
    return resolve_path("data/graphs") / str(cfg["data"]) / "graphs.parquet"


def artifact_dir(model: str, task: str, seed: int) -> Path:
    return resolve_path("artifacts/mage") / model / task / f"seed{seed}"


def metrics_path(model: str, task: str) -> Path:
    return resolve_path("metrics/mage") / model / f"{task}.json"


def seed_plan(model: str, task: str, seeds: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """One train_seed call (keyword arguments) per seed: the settings resolved from params."""
    cfg = settings()
    models = cfg.get("models") or {}
    if model not in models:
        raise CorefreproError(
            f"params.yaml train_mage.models: no model '{model}'; known: {sorted(models)}"
        )
    groups = cfg.get("task_groups") or {}
    labels = list(groups.get(task, [task]))
    model_cfg = {**(cfg.get("model_defaults") or {}), **(models[model] or {})}
    # a model entry may override train settings, so an ablation that changes the data the
    # model reads (edge_types: [sequential]) is a row of the matrix like any other model
    train_cfg = {
        **(cfg.get("train") or {}),
        **((cfg.get("task_settings") or {}).get(task) or {}),
        **(model_cfg.pop("train", None) or {}),
    }
    seeds = list(seeds) if seeds else [int(s) for s in cfg.get("seeds", [1])]
    return [
        {
            "graphs": str(graphs_path(cfg)),
            "model": model,
            "task": task,
            "labels": labels,
            "model_cfg": model_cfg,
            "train_cfg": {**train_cfg, "seed": int(s)},
            "out_dir": str(artifact_dir(model, task, int(s))),
        }
        for s in seeds
    ]


def train_seed(
    graphs: str,
    model: str,
    task: str,
    labels: list[str],
    model_cfg: dict,
    train_cfg: dict,
    out_dir: str,
) -> dict[str, Any]:
    """One seed of one (model, task): train_and_evaluate, metrics kept beside the checkpoint."""
    metrics = train_and_evaluate(
        graphs,
        labels if labels != [task] else task,
        model_cfg,
        train_cfg,
        out_dir,
        model_name=model,
    )
    metrics["task"] = task
    metrics["settings_fingerprint"] = settings_fingerprint(
        sha256_of(graphs), labels, model_cfg, train_cfg
    )
    storage.write_json(Path(out_dir) / SEED_METRICS, _jsonable(metrics))
    return metrics


# train settings that do not change what a seed learns (how fast, or how it logs)
_RUN_ONLY_KEYS = ("seed", "threads", "log_every_s", "device")


def settings_fingerprint(
    graphs_sha256: str, labels: Sequence[str], model_cfg: Mapping, train_cfg: Mapping
) -> str:
    """sha256 of everything a seed's result depends on but the seed: the graph table's
    content (its sha256), the task labels, the model and train settings. Seeds trained apart
    (one per GPU, one per lane) are summarized together only if their fingerprints agree with
    the current plan."""
    train = {k: v for k, v in train_cfg.items() if k not in _RUN_ONLY_KEYS}
    settings = {"graphs": graphs_sha256, "labels": list(labels), "model": dict(model_cfg)}
    settings["train"] = train
    return hashlib.sha256(json.dumps(_jsonable(settings), sort_keys=True).encode()).hexdigest()


def collect_seeds(model: str, task: str, seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """The (model, task) metrics from seeds trained separately (`--seed k` runs, in parallel
    lanes or on several GPUs), without training again: each seed's metrics.json must exist
    and match the current settings (settings_fingerprint), else the error names the seed."""
    results = []
    graph_hashes: dict[str, str] = {}  # one read of the (large) graph table, not one per seed
    for plan in seed_plan(model, task, seeds):
        seed = plan["train_cfg"]["seed"]
        path = Path(plan["out_dir"]) / SEED_METRICS
        retrain = f"python -m flows.train_mage --model {model} --task {task} --seed {seed}"
        if not path.is_file():
            raise CorefreproError(f"{model} {task} seed {seed}: no {path}; train it: {retrain}")
        metrics = json.loads(path.read_text())
        if plan["graphs"] not in graph_hashes:
            graph_hashes[plan["graphs"]] = sha256_of(plan["graphs"])
        expected = settings_fingerprint(
            graph_hashes[plan["graphs"]], plan["labels"], plan["model_cfg"], plan["train_cfg"]
        )
        if metrics.get("settings_fingerprint") != expected:
            raise CorefreproError(
                f"{model} {task} seed {seed}: {path} was trained under other settings or "
                f"graphs than params.yaml names now (settings fingerprint differs); "
                f"retrain it: {retrain}"
            )
        results.append(metrics)
    return summarize(model, task, results)


def summarize(model: str, task: str, results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The DVC metrics of (model, task): the seed with the best dev accuracy (ties: lower dev
    loss, then lower seed) gives the reported test numbers (paper protocol), plus the spread
    of test error over seeds."""
    if not results:
        raise CorefreproError(f"{model} {task}: no seed was trained")
    chosen = min(results, key=lambda m: (-m["dev_acc"], _nan_to(m["dev_loss"]), m["seed"]))
    errors = [m["test_error"] for m in results if m["test_error"] is not None]
    out = {
        "model": model,
        "task": task,
        "dataset": chosen["dataset"],
        "selected_seed": chosen["seed"],
        "dev_acc": chosen["dev_acc"],
        "dev_error": chosen["dev_error"],
        "test_acc": chosen["test_acc"],
        "test_error": chosen["test_error"],
        "test_n": chosen["test_n"],
        "dev_n": chosen["dev_n"],
        "best_epoch": chosen["best_epoch"],
        "epochs_run": chosen["epochs_run"],
        "seeds": len(results),
        "test_error_mean": float(np.mean(errors)) if errors else None,
        "test_error_std": float(np.std(errors)) if errors else None,
        "wall_time_s": round(sum(m["wall_time_s"] for m in results), 2),
        **{k: chosen[k] for k in ("subsets", "split_notes") if chosen.get(k)},
        "per_seed": {str(m["seed"]): {k: m[k] for k in PER_SEED_KEYS if k in m} for m in results},
    }
    out = _jsonable(out)
    storage.write_json(metrics_path(model, task), out)
    return out


__all__ = [
    "MODEL_DEFAULTS",
    "TRAIN_DEFAULTS",
    "CheckpointMismatchError",
    "build_model",
    "checkpoint_config",
    "collect_seeds",
    "evaluate",
    "load_checkpoint",
    "model_label",
    "restore",
    "save_checkpoint",
    "seed_plan",
    "settings_fingerprint",
    "subset_metrics",
    "summarize",
    "train_and_evaluate",
    "train_seed",
]
