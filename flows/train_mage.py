"""Stage `train_mage`: train and evaluate one MAGE-paper reader on one task, every seed.

    python -m flows.train_mage --model bigru+mage16 --task syn1 [--seed 3]

params.yaml train_mage names the graph run (data), the model settings (models.<name>), the
training settings (train, with per-task overrides in task_settings) and the seeds; a task is
a task label of the graph table, or a name of task_groups (several labels trained jointly).
The family (models/mage, found through models/registry.py) trains each seed through the one
loop (tasks/training/loop.py); this stage resolves the item's settings (plan), loads its data
once and places and records every seed (tasks/training/stage.py):
artifacts/train_mage/<model>-<task>/seed<k>/{best.pt,history.json,metrics.json} and
metrics/train_mage/<model>-<task>.json (the best-dev seed's dev/test numbers, Dhingra et al.
§4.2); every seed is an MLflow run train_mage@<model>-<task>/seed<k> in the experiment
train_mage, with its learning curve.
Without --seed, the seeds of params.yaml; with it, only that seed (the metrics file then
summarizes that seed alone). Seeds trained apart (`--seed k` in parallel lanes, one per GPU)
are summarized afterwards with `--collect`, which trains nothing:

    python -m flows.train_mage --model ga-mage16 --task qa2 --collect
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flows.runtime import Runner, flow, run_cli, task, torchrun
from models import registry
from models.mage.data import ReaderData
from models.mage.train import (
    GRAPH_VARIANT_KEYS,
    ReaderItem,
    TrainMageSettings,
    check_split,
    recipe_train,
    resolve_model,
    resolve_train_cfg,
    run_params,
)
from tasks.core.checkpoints import jsonable
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.progress import STAGE_CLOCK
from tasks.core.storage import sha256_of
from tasks.training.loop import RUN_ONLY
from tasks.training.stage import (
    artifact_dir,
    load_settings,
    train_tracked_seed,
    train_tracked_seeds_stacked,
    write_summary,
)

FAMILY = registry.get("mage")
STAGE = FAMILY.stage
SEED_METRICS = "metrics.json"


def settings() -> TrainMageSettings:
    return load_settings(FAMILY)


def graphs_path(cfg: TrainMageSettings, run: str | None = None) -> Path:
    return resolve_path("data/graphs") / (run or cfg.data) / "graphs.parquet"


def variant(model: str, task: str) -> str:
    """The stage's item name, as DVC's matrix writes it: train_mage@<model>-<task>."""
    return f"{model}-{task}"


def plan(cfg: TrainMageSettings, model: str, task: str) -> ReaderItem:
    """The settings every seed of <model>-<task> trains under. Precedence of train keys:
    train < task_settings.<task> < the model's recipe < the model entry's own train."""
    if model not in cfg.models:
        raise CorefreproError(
            f"params.yaml train_mage.models: no model '{model}'; known: {sorted(cfg.models)}"
        )
    model_cfg = {**cfg.model_defaults, **(cfg.models[model] or {})}
    # a model entry may override train settings, so an ablation that changes the data the
    # model reads (edge_types: [sequential]) is a row of the matrix like any other model
    own_train = model_cfg.pop("train", None) or {}
    # a model entry may read its own graph run (data: <run>), e.g. the coreference placement
    # ablation (graphs@<run>-sentence) trained beside the paper's placement
    graphs = graphs_path(cfg, model_cfg.pop("data", None))
    given = {**cfg.train, **(cfg.task_settings.get(task) or {}),
             **recipe_train(model_cfg), **own_train}  # fmt: skip
    reader = resolve_model(model_cfg)
    check_split(reader, f"train_mage.models.{model}")
    labels = list(cfg.task_groups.get(task, [task]))
    train = resolve_train_cfg(given, model_cfg)  # the one MageTrain every seed starts from
    return ReaderItem(model, task, labels, str(graphs), model_cfg, reader, train, given)


def seeds_of(cfg: TrainMageSettings, seeds: Sequence[int] | None) -> list[int]:
    return [int(s) for s in seeds] if seeds else [int(s) for s in cfg.seeds]


def _placement(graphs: str | Path) -> dict[str, str]:
    """{"coref_placement": ..., "segment_order": ..., "mention_span": ...} for the graph
    table's settings off the paper's reading (tasks/graphs/dags.py PLACEMENTS, ORDERS,
    MENTION_SPANS; the report's ablation reads coref_placement); {} for the paper's."""
    import pyarrow.parquet as pq

    meta = pq.read_schema(graphs).metadata or {}
    placement = meta.get(b"coreference_placement", b"paper").decode()
    out = {} if placement == "paper" else {"coref_placement": placement}
    for key in GRAPH_VARIANT_KEYS[1:]:
        if key.encode() in meta:
            out[key] = meta[key.encode()].decode()
    return out


def settings_fingerprint(graphs_sha256: str, item: ReaderItem) -> str:
    """sha256 of everything a seed's result depends on but the seed: the graph table's
    content (its sha256), the task labels, the model and train settings. Seeds trained apart
    (one per GPU, one per lane) are summarized together only if their fingerprints agree with
    the current plan. Leaves out the seed and the run-only settings (tasks/training/loop.py
    RUN_ONLY); keeps the budget (epochs): seeds compared must have had the same."""
    train = {k: v for k, v in item.given_train.items() if k not in ("seed", *RUN_ONLY)}
    fields = {"graphs": graphs_sha256, "labels": list(item.labels), "model": dict(item.model_cfg)}
    fields["train"] = train
    return hashlib.sha256(json.dumps(jsonable(fields), sort_keys=True).encode()).hexdigest()


def seed_facts(item: ReaderItem, graphs_sha256: str) -> dict[str, Any]:
    """What the stage records with each seed's metrics: the graph table's variant and the
    settings fingerprint that --collect checks."""
    return {**_placement(item.graphs),
            "settings_fingerprint": settings_fingerprint(graphs_sha256, item)}  # fmt: skip


def _dataset(item: ReaderItem, data: ReaderData) -> str:
    return f"{data.corpus}/{'+'.join(item.labels)}"  # what the run reads: the group's members


def train_seed(model: str, task: str, seed: int, data: ReaderData, item: ReaderItem,
               graphs_sha256: str, *, track: bool = True) -> dict[str, Any]:  # fmt: skip
    """One seed under its MLflow run; metrics.json beside its checkpoints."""
    return train_tracked_seed(FAMILY, variant(model, task), seed, data, item,
                              dataset=_dataset(item, data), run_params=run_params(item, seed, data),
                              facts=seed_facts(item, graphs_sha256), track=track)  # fmt: skip


def train_stacked(model: str, task: str, seeds: list[int], data: ReaderData, item: ReaderItem,
                  graphs_sha256: str, *, track: bool = True) -> list[dict]:  # fmt: skip
    """Every seed at once (models/mage/stacked.py), each recorded as train_seed records it."""
    return train_tracked_seeds_stacked(
        FAMILY, variant(model, task), seeds, data, item, dataset=_dataset(item, data),
        run_params=lambda s: run_params(item, s, data),
        facts=lambda _: seed_facts(item, graphs_sha256), track=track,
    )  # fmt: skip


train_seed_task = task(
    train_seed, name="train-reader", task_run_name="train_mage@{model}-{task}/seed{seed}"
)
train_stacked_task = task(
    train_stacked, name="train-readers-stacked", task_run_name="train_mage@{model}-{task}/stacked"
)


# one seed after the other: training already uses every core it is given
@flow(name="train-mage", runner=Runner("threads", 1))
def train_mage(model: str, task: str, seeds: list[int] | None = None) -> dict:
    cfg = settings()  # every setting checked before any work
    item = plan(cfg, model, task)
    seeds = seeds_of(cfg, seeds)
    data = item.load_data()
    graphs_sha256 = sha256_of(item.graphs)
    STAGE_CLOCK.plan(len(seeds) * int(item.train.epochs))  # the stage's ETA in each epoch's line
    if len(seeds) > 1 and item.train.seeds_stacked:  # one batched model
        results = train_stacked_task(model, task, seeds, data, item, graphs_sha256)
    else:
        results = [train_seed_task(model, task, s, data, item, graphs_sha256) for s in seeds]
    return write_summary(FAMILY, variant(model, task), results)


@flow(name="collect-mage-seeds")
def collect_mage(model: str, task: str, seeds: list[int] | None = None) -> dict:
    """Summarize the seeds of <model>-<task> trained apart (`--collect`); trains nothing: each
    seed's metrics.json must exist and match the current settings (settings_fingerprint),
    else the error names the seed."""
    cfg = settings()
    item = plan(cfg, model, task)
    graphs_sha256 = sha256_of(item.graphs)  # one read of the (large) graph table
    results = [_collected(item, s, graphs_sha256) for s in seeds_of(cfg, seeds)]
    return write_summary(FAMILY, variant(model, task), results)


def _collected(item: ReaderItem, seed: int, graphs_sha256: str) -> Mapping[str, Any]:
    path = artifact_dir(STAGE, variant(item.model, item.task), seed) / SEED_METRICS
    retrain = f"python -m flows.train_mage --model {item.model} --task {item.task} --seed {seed}"
    where = f"{item.model} {item.task} seed {seed}"
    if not path.is_file():
        raise CorefreproError(f"{where}: no {path}; train it: {retrain}")
    metrics = json.loads(path.read_text())
    if metrics.get("settings_fingerprint") != settings_fingerprint(graphs_sha256, item):
        raise CorefreproError(
            f"{where}: {path} was trained under other settings or graphs than params.yaml "
            f"names now (settings fingerprint differs); retrain it: {retrain}"
        )
    return metrics


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a key of train_mage.models in params.yaml")
    parser.add_argument("--task", required=True, help="a task label (e.g. qa2) or task_groups key")
    parser.add_argument(
        "--seed", type=int, default=None, help="one seed (default: train_mage.seeds)"
    )
    parser.add_argument(
        "--collect",
        action="store_true",
        help="train nothing: summarize the seeds' existing per-seed metrics (trained apart)",
    )
    args = parser.parse_args(argv)
    seeds = [args.seed] if args.seed is not None else None
    nproc = (lambda: 1) if args.collect else (lambda: settings().train.get("nproc", 1))
    if not run_cli(torchrun, "flows.train_mage", nproc, argv):
        run_cli(collect_mage if args.collect else train_mage, args.model, args.task, seeds)


if __name__ == "__main__":
    main()
