"""Stage `train_<family>` of a model family without a flow module of its own: one item of its
params.yaml section, all seeds.

    python -m flows.train <family> --item <item> [--seed 3]

The family is a folder models/<family>/ registered in models/registry.py FAMILIES whose
FAMILY declares prepare_data (tasks/training/family.py); its section params.yaml
train_<family> holds `items` (the dvc.yaml foreach), `seeds` and its settings. dvc.yaml's
stage is written by `python -m tasks.core.stage_deps` from the registry. Outputs as every
training stage's (tasks/training/stage.py): artifacts/train_<family>/<item>/seed<k>/{best.pt,
history.json,metrics.json}, one MLflow run per seed (experiment "train_<family>"), and
metrics/train_<family>/<item>.json summarizing the seeds. The four paper families have their
own modules (flows/train_mage.py, ...), which call the same tasks/training/stage.py.
"""

from __future__ import annotations

import argparse

from flows.runtime import Runner, flow, run_cli, task, torchrun
from models import registry
from tasks.training.stage import load_settings, train_item, train_tracked_seed

train_seed_task = task(
    train_tracked_seed, name="train-family-seed",
    task_run_name="{family.stage}@{item}/seed{seed}",
)  # fmt: skip


def seed_runner(family: str, item: str, seed: int | None = None) -> Runner:
    """Where the seeds train: train_<family>.workers processes at once, when the family's
    settings have that key (tasks/training/stage.py train_item)."""
    return Runner("processes", getattr(load_settings(registry.get(family)), "workers", 1))


@flow(name="train-family", runner=seed_runner)
def train(family: str, item: str, seed: int | None = None) -> dict:
    return train_item(registry.get(family), item, seed, train_one=train_seed_task)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "family", help=f"a family of models/registry.py ({', '.join(registry.names())})"
    )
    parser.add_argument("--item", required=True, help="one of params.yaml train_<family>.items")
    parser.add_argument("--seed", type=int, default=None, help="one seed instead of params' seeds")
    args = parser.parse_args(argv)
    nproc = lambda: load_settings(run_cli(registry.get, args.family)).train.nproc  # noqa: E731
    if not run_cli(torchrun, "flows.train", nproc, argv):
        run_cli(train, args.family, args.item, args.seed)


if __name__ == "__main__":
    main()
