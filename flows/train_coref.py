"""Stage `train_coref`: one encoder of Luo & Glass Table 1 (baseline, LSL, ASL), all seeds.

    python -m flows.train_coref --encoder asl [--seed 3]

params.yaml train_coref names the corpora (GUM + LitBank by default; data/docs/<corpus>/),
the shared model settings, each encoder's overrides, the training settings and the seeds.
Each seed trains the E2E model (models/coref/train.py) with dev-CoNLL-F1 model selection and
writes artifacts/train_coref/<encoder>/seed<k>/{best.pt,last.pt,history.json,metrics.json},
one MLflow run per seed (experiment "train_coref", run "train_coref@<encoder>/seed<k>");
metrics/train_coref/<encoder>.json summarizes the seeds run.
"""

from __future__ import annotations

import argparse
import logging

from flows.runtime import flow, run_cli, task, torchrun
from models.coref import train as stage
from models.coref.data import load_splits
from tasks.core.storage import write_metrics

log = logging.getLogger("corefrepro.train_coref")

train_seed = task(
    stage.train_seed, name="train-coref-seed", task_run_name="train_coref@{encoder}/seed{seed}"
)


train_seeds_stacked = task(
    stage.train_seeds_stacked, name="train-coref-seeds-stacked",
    task_run_name="train_coref@{encoder}/stacked",
)  # fmt: skip


@flow(name="train-coref")
def train_coref(encoder: str, seed: int | None = None) -> dict:
    cfg = stage.settings()  # every setting checked before any work
    stage.encoder_model_cfg(cfg, encoder)  # fail early on an unknown encoder
    splits = load_splits(cfg.corpora, drop_singletons=cfg.drop_singletons)
    log.info(
        "%s on %s: %s documents",
        encoder,
        "+".join(cfg.corpora),
        {split: len(docs) for split, docs in splits.items()},
    )
    seeds = [seed] if seed is not None else [int(s) for s in cfg.seeds]
    if stage.stacked(cfg, seeds):  # one computation, each seed as if alone (#15.1)
        results = train_seeds_stacked(encoder, seeds, splits, cfg)
    else:
        results = [train_seed(encoder, s, splits, cfg) for s in seeds]
    summary = stage.summarize(encoder, results)
    write_metrics(stage.metrics_path(encoder), summary)
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoder", required=True, choices=("baseline", "lsl", "asl"))
    parser.add_argument("--seed", type=int, default=None, help="one seed instead of params' seeds")
    args = parser.parse_args(argv)
    if not run_cli(
        torchrun, "flows.train_coref", lambda: stage.settings().train.get("nproc", 1), argv
    ):
        run_cli(train_coref, args.encoder, args.seed)


if __name__ == "__main__":
    main()
