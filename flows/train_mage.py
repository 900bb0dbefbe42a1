"""Stage `train_mage`: train and evaluate one MAGE-paper reader on one task, every seed.

    python -m flows.train_mage --model bigru+mage16 --task syn1 [--seed 3]

Without --seed, the seeds of params.yaml; with it, only that seed (the metrics file then
summarizes that seed alone). Seeds trained apart (`--seed k` in parallel lanes, one per GPU)
are summarized afterwards with `--collect`, which trains nothing:

    python -m flows.train_mage --model ga-mage16 --task qa2 --collect

Layout (issue #54.4): this module is the stage's one home, read top to bottom:

1. its settings section, params.yaml `train_mage` (TrainMageSettings), typed and parsed once
   per process (`settings()`); every model entry and per-task setting checked before any work;
2. its paths: the graph table a model reads (data/graphs/<run>/graphs.parquet) and the item
   name <model>-<task> that names artifacts/train_mage/<item>/seed<k>/ and
   metrics/train_mage/<item>.json (placed by tasks/training/stage.py);
3. its plan: `plan(cfg, model, task)` resolves an item's settings (ReaderItem), once, for
   every seed;
4. its outputs: what each seed's metrics.json adds (graph variant, settings fingerprint), the
   params of a seed's MLflow run (train_mage@<model>-<task>/seed<k> in the experiment
   train_mage, with its learning curve), and the summary (the best-dev seed's dev/test
   numbers, Dhingra et al. §4.2);
5. the family declaration (FAMILY, found through models/registry.py) and the flows.

The library, models/mage/ (train.py: MageModel / MageTrain, the recipe, train_and_evaluate,
train_stacked; data.py, readers.py, stacked.py), takes arguments: it reads no params.yaml,
knows no output path and logs nothing to MLflow. What every training stage shares (the seed's
work folder, artifact folder, MLflow run and summary file: tasks/training/stage.py; the one
loop: tasks/training/loop.py) takes this stage's family and paths as arguments.

Precedence of train keys, per item: train < task_settings.<task> < the model's recipe < the
model entry's own train. A task is a task label of the graph table, or a name of task_groups
(several labels trained jointly). A model entry may read its own graph run (`data: <run>`).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from flows.runtime import Runner, flow, run_cli, task, torchrun
from models.mage.data import ReaderData
from models.mage.train import (
    MageModel,
    MageTrain,
    ReaderRecipe,
    check_split,
    load_data,
    nan_to,
    recipe_train,
    resolve_model,
    resolve_train_cfg,
    train_and_evaluate,
    train_stacked,
)
from tasks.core.checkpoints import jsonable
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.progress import STAGE_CLOCK
from tasks.core.settings import (
    ConfigError,
    Name,
    bounded,
    override_settings,
    parse_settings,
    settings_to_dict,
    stage_settings,
)
from tasks.core.storage import sha256_of
from tasks.core.tracking import PAPERS
from tasks.training.family import Family
from tasks.training.loop import RUN_ONLY
from tasks.training.stage import (
    artifact_dir,
    check_workers,
    each_seed,
    train_tracked_seed,
    train_tracked_seeds_stacked,
    write_summary,
)

STAGE = "train_mage"
SEED_METRICS = "metrics.json"

# --------------------------------------------------------------------------- 1. settings
# params.yaml train_mage: data (a graph run), run {models, tasks} (the dvc.yaml matrix),
# model_defaults (under every model), models {name: model settings, optionally with train:
# {train overrides} and data: <run>}, task_groups {name: [task labels]}, task_settings {task:
# train overrides}, seeds, train (MageTrain keys).


@dataclass
class RunMatrix:
    models: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)


@dataclass
class TrainMageSettings:
    """params.yaml train_mage, checked whole before any training starts."""

    data: Name = "synthetic-gold"  # data/graphs/<annotation run>/graphs.parquet
    run: RunMatrix = field(default_factory=RunMatrix)
    model_defaults: dict[str, Any] = field(default_factory=dict)
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    task_groups: dict[str, list[str]] = field(default_factory=dict)
    task_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [1])
    train: dict[str, Any] = field(default_factory=dict)
    # seeds trained at once, each in a process of its own (issue #57.4): each seed's bytes are
    # the ones it gets alone, so the count is run-only (tasks/training/stage.py check_workers)
    workers: int = bounded(1, ge=1)

    def validate(self, path: str) -> None:
        """Every model entry and per-task setting parses (typos refused up front); the
        section's `train` is parsed once here and each entry's layers applied to it."""
        problems: list[str] = []

        def check(fn: Any) -> Any:
            try:
                return fn()
            except ConfigError as exc:
                problems.extend(exc.problems)
                return None

        check(lambda: parse_settings(MageModel, self.model_defaults, f"{path}.model_defaults"))
        base = check(lambda: parse_settings(MageTrain, self.train, f"{path}.train"))
        problems.extend(check_workers(self.workers, base, path))
        for name, entry in self.models.items():
            where = f"{path}.models.{name}"
            check(lambda e=entry, w=where: _model_entry(self, e, w, base))
        for task_name, overrides in self.task_settings.items():
            where = f"{path}.task_settings.{task_name}"
            if base is not None:
                check(lambda o=overrides, w=where: override_settings(base, o, w))
        if problems:
            raise ConfigError(problems)


def _model_entry(cfg: TrainMageSettings, entry: Mapping[str, Any], where: str,
                 base: MageTrain | None) -> None:  # fmt: skip
    """One model entry checked: its model settings (over model_defaults) and its train layers
    over the section's parsed `train` (`base`; None when that failed, reported already)."""
    entry = dict(entry or {})
    train = entry.pop("train", None)
    entry.pop("data", None)  # a graph run of the model's own (plan)
    model_cfg = {**cfg.model_defaults, **entry}
    parse_settings(MageModel, model_cfg, where)
    try:
        resolve_model(model_cfg)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {p.split(': ', 1)[-1]}" for p in exc.problems) from exc
    if base is not None:
        base = override_settings(base, recipe_train(model_cfg) or None, f"{where}.recipe")
        override_settings(base, train, f"{where}.train")


def settings() -> TrainMageSettings:
    """params.yaml train_mage, parsed once per process: a later call returns the same
    settings while the section is the one parsed (a test that gives other params gets them
    parsed; tasks/core/settings.py stage_settings)."""
    return stage_settings(TrainMageSettings, STAGE)


# --------------------------------------------------------------------------- 2. paths


def graphs_path(cfg: TrainMageSettings, run: str | None = None) -> Path:
    return resolve_path("data/graphs") / (run or cfg.data) / "graphs.parquet"


def model_entry(cfg: TrainMageSettings, model: str) -> dict[str, Any]:
    """train_mage.models.<model> over model_defaults (its own `train:` and `data:` still in)."""
    if model not in cfg.models:
        raise CorefreproError(
            f"params.yaml train_mage.models: no model '{model}'; known: {sorted(cfg.models)}"
        )
    return {**cfg.model_defaults, **(cfg.models[model] or {})}


def model_graphs(cfg: TrainMageSettings, model: str) -> Path:
    """The graph table <model> reads: its own graph run (`data: <run>`) or train_mage.data
    (flows/inputs.py makes it the item's data dep)."""
    return graphs_path(cfg, model_entry(cfg, model).get("data"))


def variant(model: str, task: str) -> str:
    """The stage's item name, as DVC's matrix writes it: train_mage@<model>-<task>."""
    return f"{model}-{task}"


# --------------------------------------------------------------------------- 3. plan


@dataclass
class ReaderItem:
    """One item <model>-<task> of the stage, resolved by `plan`: what every seed of it
    trains under (the `settings` of train_seed)."""

    model: str  # the key of train_mage.models (the metrics' and the MLflow run's name)
    task: str  # a task label, or a key of task_groups
    labels: list[str]  # the task labels trained jointly
    graphs: str  # data/graphs/<run>/graphs.parquet
    model_cfg: dict[str, Any]  # model_defaults + the entry (its train and data keys out):
    # the keys params.yaml sets, which the stage's settings fingerprint hashes
    reader: MageModel  # model_cfg resolved (resolve_model): what every seed builds
    train: MageTrain  # the train settings, every layer applied; each seed replaces `seed`
    # the train keys params.yaml sets, layered as above: what the stage's settings
    # fingerprint hashes (a new default in MageTrain then invalidates no seed trained apart)
    given_train: dict[str, Any]

    @property
    def task_arg(self) -> str | list[str]:
        return self.labels if self.labels != [self.task] else self.task

    def seed_train(self, seed: int) -> MageTrain:
        return dataclasses.replace(self.train, seed=int(seed))

    def load_data(self) -> ReaderData:
        return load_data(self.graphs, self.task_arg, self.train)


def plan(cfg: TrainMageSettings, model: str, task: str) -> ReaderItem:
    """The settings every seed of <model>-<task> trains under. Precedence of train keys:
    train < task_settings.<task> < the model's recipe < the model entry's own train."""
    model_cfg = model_entry(cfg, model)
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


# --------------------------------------------------------------------------- 4. outputs

# metrics keys of a graph table off the paper's reading (recorded per seed)
GRAPH_VARIANT_KEYS = ("coref_placement", "segment_order", "mention_span")
PER_SEED_KEYS = ("dev_acc", "test_acc", "best_epoch", "epochs_run", "wall_time_s", "subsets")


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


def run_params(item: ReaderItem, seed: int, data: ReaderData) -> dict[str, Any]:
    """A seed's model and train settings and its data, as its MLflow run records them."""
    data_params = {k: v for k, v in (data.signature() | data.stats).items() if k != "classes"}
    return {"model": settings_to_dict(item.reader),
            "train": settings_to_dict(item.seed_train(seed)), "data": data_params}  # fmt: skip


def summarize(item: str, results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """metrics/train_mage/<item>.json: the seed with the best dev accuracy (ties: lower dev
    loss, then lower seed) gives the reported test numbers (paper protocol), plus the spread
    of test error over seeds."""
    if not results:
        raise CorefreproError(f"{item}: no seed was trained")
    chosen = min(results, key=lambda m: (-m["dev_acc"], nan_to(m["dev_loss"]), m["seed"]))
    errors = [m["test_error"] for m in results if m["test_error"] is not None]
    out = {
        "model": chosen["model"],
        "task": chosen["task"],
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
        "device": chosen.get("device"),
        "test_error_mean": float(np.mean(errors)) if errors else None,
        "test_error_std": float(np.std(errors)) if errors else None,
        # timings go to logs/timings (storage.write_metrics); collected seeds have none
        "wall_time_s": round(sum(m.get("wall_time_s") or 0.0 for m in results), 2),
        **{k: chosen[k] for k in ("subsets", "split_notes", *GRAPH_VARIANT_KEYS) if chosen.get(k)},
        "per_seed": {str(m["seed"]): {k: m[k] for k in PER_SEED_KEYS if k in m} for m in results},
    }
    return jsonable(out)


# --------------------------------------------------------------------------- 5. the family


def train_one_seed(item: str, seed: int, data: ReaderData, settings: ReaderItem,
                   out_dir: str | Path, *, log_metrics=None) -> dict[str, Any]:  # fmt: skip
    """One seed of one (model, task) into out_dir (tasks/training/family.py SeedTrainer)."""
    metrics = train_and_evaluate(settings.graphs, settings.task_arg, settings.reader,
                                 settings.seed_train(seed), out_dir, model_name=settings.model,
                                 data=data, log_metrics=log_metrics)  # fmt: skip
    metrics["task"] = settings.task
    return metrics


def train_seeds_stacked(item: str, seeds: Sequence[int], data: ReaderData, settings: ReaderItem,
                        out_dirs: Sequence[str | Path], *, log_metrics=None) -> list[dict]:  # fmt: skip
    """train_one_seed for every seed at once (models/mage/train.py train_stacked): out_dirs[i]
    and log_metrics[i] (one sink per seed, or None) are seed i's."""
    results = train_stacked(settings.graphs, settings.task_arg, settings.reader,
                            [settings.seed_train(s) for s in seeds], out_dirs,
                            model_name=settings.model, data=data, log_metrics=log_metrics)  # fmt: skip
    for metrics in results:
        metrics["task"] = settings.task
    return results


FAMILY = Family(
    name="mage",
    paper=PAPERS[STAGE],
    settings=TrainMageSettings,
    recipe=ReaderRecipe,
    train_seed=train_one_seed,
    summarize=summarize,
    train_seeds_stacked=train_seeds_stacked,
)


# --------------------------------------------------------------------------- 6. the flows


def _dataset(item: ReaderItem, data: ReaderData) -> str:
    return f"{data.corpus}/{'+'.join(item.labels)}"  # what the run reads: the group's members


def train_seed(model: str, task: str, seed: int, data: ReaderData, item: ReaderItem,
               graphs_sha256: str, *, track: bool = True) -> dict[str, Any]:  # fmt: skip
    """One seed under its MLflow run; metrics.json beside its checkpoints."""
    return train_tracked_seed(FAMILY, variant(model, task), seed, data, item,
                              dataset=_dataset(item, data), run_params=run_params(item, seed, data),
                              facts=seed_facts(item, graphs_sha256), track=track)  # fmt: skip


def train_stacked_seeds(model: str, task: str, seeds: list[int], data: ReaderData,
                        item: ReaderItem, graphs_sha256: str, *,
                        track: bool = True) -> list[dict]:  # fmt: skip
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
    train_stacked_seeds, name="train-readers-stacked",
    task_run_name="train_mage@{model}-{task}/stacked",
)  # fmt: skip


def seed_runner(model: str, task: str, seeds: list[int] | None = None) -> Runner:
    """Where the seeds train: train_mage.workers processes at once (1: one after the other,
    in this process)."""
    return Runner("processes", settings().workers)


@flow(name="train-mage", runner=seed_runner)
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
        calls = [{"model": model, "task": task, "seed": s, "data": data, "item": item,
                  "graphs_sha256": graphs_sha256} for s in seeds]  # fmt: skip
        results = each_seed(train_seed_task, calls, cfg.workers)
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
