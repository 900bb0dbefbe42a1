"""What every training stage does around a family's seeds (flows/train_<name>.py): its
settings parsed, the artifact folder artifacts/<stage>/<item>/seed<k>/, the seed's MLflow run
<stage>@<item>/seed<k> around the family's training, the seed's metrics.json beside its
checkpoints, and the summary metrics/<stage>/<item>.json. The family (tasks/training/family.py)
trains; this module only places and records, so every family's outputs sit where the report,
DVC and MLflow expect them.

Why a seed trains in a work folder (data/cache/resume/<stage>/<item>/seed<k>/, issue #54.2):
its resume state (last.pt: optimizer, RNG, the pickled loop state) and its checkpoints as they
come stay out of the tracked outputs, so a resumed run, or a refactor that leaves best.pt
bit-identical, leaves the artifact's hash as it was; and the seed folder under artifacts/ is
always one finished run's, replaced whole (publish_seed) only when the new one is complete."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tasks.core import numerics, storage
from tasks.core.checkpoints import jsonable
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.progress import STAGE_CLOCK
from tasks.core.settings import settings_to_dict, stage_settings
from tasks.core.tracking import (
    log_checkpoint,
    log_dict,
    log_metrics,
    log_params,
    tracked_run,
    tracked_runs,
)
from tasks.training.family import Family
from tasks.training.loop import BEST, HISTORY, LAST, threads_used

log = logging.getLogger("corefrepro.training")


def load_settings(family: Family) -> Any:
    """params.yaml train_<name> parsed into family.settings: every key checked before any work,
    once per process (tasks/core/settings.py stage_settings)."""
    return stage_settings(family.settings, family.stage)


RESUME_ROOT = "data/cache/resume"  # untracked: resume state and checkpoints in the making
RESUME_ONLY = (LAST,)  # what a work folder holds that is no result (not published)
SEED_METRICS = "metrics.json"


def artifact_dir(stage: str, item: str, seed: int) -> Path:
    return resolve_path(f"artifacts/{stage}") / item / f"seed{seed}"


def work_dir(stage: str, item: str, seed: int) -> Path:
    """Where the seed trains (best.pt, last.pt, history.json as they come): outside every
    tracked output, so it survives a kill, a restart and DVC's removal of the stage's outs."""
    return resolve_path(RESUME_ROOT) / stage / item / f"seed{seed}"


def publish_seed(work: Path, out_dir: Path, metrics: Mapping[str, Any] | None) -> None:
    """The finished seed's results (the work folder but its resume state) and its metrics.json
    (metrics None: none, for a stage whose metrics live elsewhere: train_corelm) as the
    artifact folder, replacing the old one whole only once the new one is written (a full disk
    or a kill leaves the earlier result as it was)."""
    kept, timings = storage.split_timings(metrics) if metrics is not None else ({}, {})
    with storage.atomic_dir(out_dir) as tmp:
        for path in sorted(Path(work).iterdir()):
            if path.name in (*RESUME_ONLY, SEED_METRICS):
                continue
            if path.is_dir():
                shutil.copytree(path, tmp / path.name)
            else:
                shutil.copyfile(path, tmp / path.name)
        if metrics is not None:
            storage.write_json(tmp / SEED_METRICS, kept)
    if timings:
        storage.write_json(storage.timings_path(Path(out_dir) / SEED_METRICS), timings)


def drop_other_seeds(stage: str, item: str, seeds: Sequence[int]) -> None:
    """An artifact folder kept from an earlier run outside DVC (a stage command run by hand)
    also keeps the seed folders of an earlier `seeds` list; a run of the whole list removes
    them, so the folder (its DVC hash, the report's learning curves) holds this run's seeds
    only. A run of one seed (`--seed k`, a lane) leaves the others alone."""
    keep = {artifact_dir(stage, item, s).name for s in seeds}
    root = resolve_path(f"artifacts/{stage}") / item
    for path in sorted(root.glob("seed*")) if root.is_dir() else []:
        if path.is_dir() and path.name not in keep:
            log.info("%s@%s: removing %s (not in seeds %s)", stage, item, path, list(seeds))
            shutil.rmtree(path)


def seeds_to_train(stage: str, item: str, seeds: Sequence[int], seed: int | None) -> list[int]:
    """`--seed k` trains that seed alone (a lane; the other seed folders stay); otherwise every
    seed of the settings, and the item's folder keeps those only (drop_other_seeds)."""
    if seed is not None:
        return [int(seed)]
    chosen = [int(s) for s in seeds]
    drop_other_seeds(stage, item, chosen)
    return chosen


def metrics_path(stage: str, item: str) -> Path:
    return resolve_path(f"metrics/{stage}") / f"{item}.json"


def dataset_name(family: Family, settings: Any) -> str:
    return family.dataset(settings) if family.dataset else family.name


def seed_run_params(family: Family, settings: Any, data: Any) -> dict[str, Any]:
    return family.run_params(settings, data) if family.run_params else settings_to_dict(settings)


def train_item(family: Family, item: str, seed: int | None = None, *,
               train_one: Callable[..., dict[str, Any]] | None = None) -> dict[str, Any]:  # fmt: skip
    """The generic training stage of `family`'s `item` (flows/train.py; flows/train_entitynlm.py
    for its seeded models): the settings parsed, family.prepare_data once, each seed by
    `train_one(family, item, seed, data, settings, dataset=..., run_params=...)`
    (train_tracked_seed; a flow passes it as its step, which runs the seeds on the settings'
    `workers` processes at once when there are more than one), the summary written."""
    if family.prepare_data is None:
        raise CorefreproError(
            f"family {family.name!r} declares no prepare_data (tasks/training/family.py): "
            f"its stage is its own flow module, flows/{family.stage}.py"
        )
    settings = load_settings(family)  # every setting checked before any work
    items = getattr(settings, "items", None)
    if items is not None and item not in items:
        raise CorefreproError(f"params.yaml {family.stage}.items: no item {item!r}; known: "
                              f"{', '.join(items)}")  # fmt: skip
    data = family.prepare_data(settings)
    dataset, params = dataset_name(family, settings), seed_run_params(family, settings, data)
    log.info("%s@%s on %s", family.stage, item, dataset)
    train_one = train_one or train_tracked_seed
    seeds = seeds_to_train(family.stage, item, settings.seeds, seed)
    epochs = getattr(getattr(settings, "train", None), "epochs", None)
    if isinstance(epochs, int):  # the stage's ETA in each epoch's line: every seed's epochs
        STAGE_CLOCK.plan(len(seeds) * epochs)
    calls = [{"family": family, "item": item, "seed": s, "data": data, "settings": settings,
              "dataset": dataset, "run_params": params} for s in seeds]  # fmt: skip
    results = each_seed(train_one, calls, getattr(settings, "workers", 1))
    return write_summary(family, item, results)


def each_seed(step: Callable[..., Any], calls: Sequence[Mapping[str, Any]],
              workers: int) -> list[Any]:  # fmt: skip
    """`step(**call)` for each seed's call, in order: one after the other in this process, or,
    with `workers` > 1, that many at once on the stage's process pool (step is then a flow's
    step, whose flow runs on Runner("processes", workers): flows/runtime.py map_kwargs). Each
    seed process computes with its own `threads` (1 in portable mode), so a seed's bytes are
    the ones it gets alone (tests/training/test_workers.py)."""
    if workers > 1 and len(calls) > 1:
        return step.map_kwargs([dict(call) for call in calls], max_workers=workers)
    return [step(**call) for call in calls]


def train_tracked_seed(family: Family, item: str, seed: int, data: Any, settings: Any, *,
                       dataset: str, run_params: Mapping[str, Any],
                       recorded: Sequence[str] = (), facts: Mapping[str, Any] | None = None,
                       track: bool = True) -> dict[str, Any]:  # fmt: skip
    """family.train_seed in the seed's work folder under its MLflow run (run_params its params,
    the learning curve history.json an artifact; the metrics keys in `recorded` logged as
    params after training); the metrics, with `dataset` and the stage's `facts` about the seed,
    published with the results to the seed's artifact folder (metrics.json) and returned."""
    out_dir = work_dir(family.stage, item, seed)
    if track:
        tags = {"paper": family.paper, **parallel_tags(settings)}
        with tracked_run(family.stage, item, dataset=dataset, seed=int(seed),
                         run_params=run_params, tags=tags):  # fmt: skip
            metrics = family.train_seed(item, seed, data, settings, out_dir,
                                        log_metrics=log_metrics)  # fmt: skip
            if recorded:
                log_params({k: str(metrics[k])[:6000] for k in recorded if k in metrics})
            record_history(out_dir)
            published = _publish(family, item, seed, out_dir, metrics, dataset, facts)
            log_checkpoint(published / BEST)  # the tracked path, not the work folder's
    else:
        metrics = family.train_seed(item, seed, data, settings, out_dir)
        _publish(family, item, seed, out_dir, metrics, dataset, facts)
    return metrics


def _publish(family: Family, item: str, seed: int, work: Path, metrics: dict[str, Any],
             dataset: str, facts: Mapping[str, Any] | None) -> Path:  # fmt: skip
    metrics["dataset"] = dataset
    metrics.update(facts or {})
    out_dir = artifact_dir(family.stage, item, seed)
    publish_seed(work, out_dir, jsonable(metrics))
    return out_dir


def train_tracked_seeds_stacked(family: Family, item: str, seeds: Sequence[int], data: Any,
                                settings: Any, *, dataset: str,
                                run_params: Callable[[int], Mapping[str, Any]],
                                recorded: Sequence[str] = (),
                                facts: Callable[[int], Mapping[str, Any]] | None = None,
                                track: bool = True) -> list[dict[str, Any]]:  # fmt: skip
    """train_tracked_seed for every seed at once, trained as one batched model
    (family.train_seeds_stacked): the same artifacts per seed (best.pt, history.json,
    metrics.json in seed<k>/) and one MLflow run per seed, open together."""
    specs = [{"item": item, "dataset": dataset, "seed": int(s), "run_params": run_params(s),
              "tags": parallel_tags(settings)} for s in seeds]  # fmt: skip
    out_dirs = [work_dir(family.stage, item, s) for s in seeds]
    tracking = tracked_runs(family.stage, specs) if track else contextlib.nullcontext(None)
    with tracking as run_ids:
        sinks = [(lambda m, step, r=r: log_metrics(m, step, run_id=r)) if r else None
                 for r in (run_ids or [None] * len(seeds))]  # fmt: skip
        results = family.train_seeds_stacked(item, seeds, data, settings, out_dirs,
                                             log_metrics=sinks)  # fmt: skip
        for run_id, out_dir, metrics in zip(run_ids or [], out_dirs, results, strict=False):
            if recorded:
                log_params({k: str(metrics[k])[:6000] for k in recorded if k in metrics}, run_id)
            record_history(out_dir, run_id)
    for seed, out_dir, metrics in zip(seeds, out_dirs, results, strict=True):
        _publish(family, item, seed, out_dir, metrics, dataset, facts(seed) if facts else None)
    return results


def parallel_tags(settings: Any) -> dict[str, str]:
    """How a seed used the machine, as its MLflow run records it (issue #57.4): `threads`,
    torch's intra-op threads (the count its results depend on); `workers`, the stage's
    processes training at once (its seeds in parallel: check_workers); `cores`, each one's
    share of the CPUs."""
    train = getattr(settings, "train", None)
    return {"threads": str(threads_used(getattr(train, "threads", None))),
            "workers": os.environ.get(numerics.JOBS_ENV) or "1",
            "cores": str(numerics.cores())}  # fmt: skip


def check_workers(workers: int, train: Any, path: str) -> list[str]:
    """The problems of a training stage's `workers` (its seeds trained at once, each in a
    process of its own) beside its train settings: the data-parallel processes (train.nproc)
    and stacked seeds (train.seeds_stacked) are the other ways to use the cores; one at a time."""
    if workers <= 1 or train is None:
        return []
    where = f"{path}.workers: {workers} seed processes"
    problems = []
    if getattr(train, "nproc", 1) > 1:
        problems.append(f"{where} and {path}.train.nproc: {train.nproc} data-parallel processes "
                        "each: set one of them to 1")  # fmt: skip
    if getattr(train, "seeds_stacked", False):
        problems.append(f"{where} and {path}.train.seeds_stacked (the seeds as one model in one "
                        "process): set one of them off")  # fmt: skip
    return problems


def record_history(out_dir: Path, run_id: str | None = None) -> None:
    """The seed's learning curve (out_dir/history.json, written by the loop) as an artifact of
    its MLflow run (the active one, or run_id)."""
    path = Path(out_dir) / HISTORY
    if path.is_file():
        log_dict(json.loads(path.read_text()), HISTORY, run_id=run_id)


def write_summary(family: Family, item: str, results: Sequence[Mapping[str, Any]]) -> dict:
    """family.summarize over the seeds -> metrics/<stage>/<item>.json."""
    summary = family.summarize(item, results)
    storage.write_metrics(metrics_path(family.stage, item), summary)
    return summary
