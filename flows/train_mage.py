"""Stage `train_mage`: train and evaluate one MAGE-paper reader on one task, every seed.

    python -m flows.train_mage --model bigru+mage16 --task syn1 [--seed 3]

params.yaml train_mage names the graph run (data), the model settings (models.<name>), the
training settings (train, with per-task overrides in task_settings) and the seeds; a task is
a task label of the graph table, or a name of task_groups (several labels trained jointly).
Trains through the one loop (tasks/training/loop.py). Writes
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

from flows.runtime import Runner, flow, run_cli, task, torchrun
from models.mage import train as stage

settings = stage.settings  # the section's parser (still in models/, issue #31)


# one seed after the other: training already uses every core it is given
def _seed_run_name() -> str:
    """train_mage@<model>-<task>/seed<k>: the name of the seed's MLflow run too."""
    from prefect.runtime import task_run

    p = task_run.parameters
    return f"train_mage@{p['model']}-{p['task']}/seed{p['train_cfg']['seed']}"


train_seed = task(stage.train_seed, name="train-reader", task_run_name=_seed_run_name)


def _stacked_run_name() -> str:
    """train_mage@<model>-<task>/seeds1-2-3: the seeds trained together."""
    from prefect.runtime import task_run

    plans = task_run.parameters["plans"]
    seeds = "-".join(str(p["train_cfg"]["seed"]) for p in plans)
    return f"train_mage@{plans[0]['model']}-{plans[0]['task']}/seeds{seeds}"


train_stacked = task(
    stage.train_seeds_stacked, name="train-readers-stacked", task_run_name=_stacked_run_name
)


@flow(name="train-mage", runner=Runner("threads", 1))
def train_mage(model: str, task: str, seeds: list[int] | None = None) -> dict:
    plans = stage.seed_plan(model, task, seeds)
    if stage.stacked(plans):  # train.seeds_stacked: all seeds as one batched model
        return stage.summarize(model, task, train_stacked(plans))
    results = [train_seed(**kwargs) for kwargs in plans]
    return stage.summarize(model, task, results)


@flow(name="collect-mage-seeds")
def collect_mage(model: str, task: str, seeds: list[int] | None = None) -> dict:
    """Summarize the seeds of <model>-<task> trained apart (`--collect`); trains nothing."""
    return stage.collect_seeds(model, task, seeds)


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
    nproc = (lambda: 1) if args.collect else (lambda: stage.settings().train.get("nproc", 1))
    if not run_cli(torchrun, "flows.train_mage", nproc, argv):
        run_cli(collect_mage if args.collect else train_mage, args.model, args.task, seeds)


if __name__ == "__main__":
    main()
