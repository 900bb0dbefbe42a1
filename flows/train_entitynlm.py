"""Stage `train_entitynlm`: one language model of Ji et al. 2017 Table 1, all seeds.

    python -m flows.train_entitynlm --model entitynlm [--seed 3]
    python -m flows.train_entitynlm --model 5gram   # the KenLM-style 5-gram (no seeds)

params.yaml train_entitynlm names the annotation runs whose EntityNLM views are the data
(data/graphs/<run>/entitynlm.parquet), the model and training settings and the importance
sampling. The family (models/entitynlm, found through models/registry.py) trains each seed;
this stage parses the section, prepares the data once and places and records every seed
(tasks/training/stage.py): artifacts/train_entitynlm/<model>/seed<k>/{best.pt,history.json,
metrics.json} (EntityNLM also importance_documents.json: per document, the Eq. 11 estimate at
each N and its two lower bounds), one MLflow run per seed (experiment "train_entitynlm"), and
metrics/train_entitynlm/<model>.json summarizing the seeds.
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task, torchrun
from models import registry
from models.entitynlm import ngram
from models.entitynlm.train import MODELS, TrainEntityNLMSettings, prepare_data
from tasks.core.storage import write_metrics
from tasks.training.stage import (
    dataset_name,
    load_settings,
    metrics_path,
    seed_run_params,
    train_item,
    train_tracked_seed,
)

FAMILY = registry.get("entitynlm")
STAGE = FAMILY.stage


def settings() -> TrainEntityNLMSettings:
    return load_settings(FAMILY)


def train_seed(kind: str, seed: int, data, cfg: TrainEntityNLMSettings, *, track: bool = True):
    """One seed of one model under its MLflow run; metrics.json beside its checkpoints."""
    return train_tracked_seed(FAMILY, kind, seed, data, cfg, dataset=dataset_name(FAMILY, cfg),
                              run_params=seed_run_params(FAMILY, cfg, data), track=track)  # fmt: skip


train_seed_task = task(
    train_tracked_seed,
    name="train-entitynlm-seed",
    task_run_name="train_entitynlm@{item}/seed{seed}",
)
train_5gram = task(ngram.train_item, name="train-5gram", task_run_name="train_entitynlm@5gram")


@flow(name="train-entitynlm")
def train_entitynlm(model: str, seed: int | None = None) -> dict:
    if model != ngram.ITEM:  # the neural models: the generic stage, seed by seed
        return train_item(FAMILY, model, seed, train_one=train_seed_task)
    cfg = settings()  # every setting checked before any work
    splits, vocab = prepare_data(cfg)
    summary = train_5gram(splits, vocab, cfg)  # the count-based baseline: no seeds, one ARPA
    write_metrics(metrics_path(STAGE, model), summary)
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=[*MODELS, ngram.ITEM])
    parser.add_argument("--seed", type=int, default=None, help="one seed instead of params' seeds")
    args = parser.parse_args(argv)
    if not run_cli(torchrun, "flows.train_entitynlm", lambda: settings().train.nproc, argv):
        run_cli(train_entitynlm, args.model, args.seed)


if __name__ == "__main__":
    main()
