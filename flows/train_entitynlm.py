"""Stage `train_entitynlm`: one language model of Ji et al. 2017 Table 1, all seeds.

    python -m flows.train_entitynlm --model entitynlm [--seed 3]
    python -m flows.train_entitynlm --model 5gram   # the KenLM-style 5-gram (no seeds)

params.yaml train_entitynlm names the annotation runs whose EntityNLM views are the data
(data/graphs/<run>/entitynlm.parquet), the model and training settings and the importance
sampling. Each seed writes artifacts/train_entitynlm/<model>/seed<k>/{best.pt,history.json,
metrics.json} (EntityNLM also importance_documents.json: per document, the Eq. 11 estimate at
each N and its two lower bounds) and one MLflow run (experiment "train_entitynlm"); metrics/train_entitynlm/
<model>.json summarizes the seeds.
"""

from __future__ import annotations

import argparse
import logging

from flows.runtime import flow, run_cli, task, torchrun
from models.entitynlm import ngram
from models.entitynlm import train as stage
from tasks.core.storage import write_metrics

log = logging.getLogger("corefrepro.train_entitynlm")

train_seed = task(
    stage.train_seed, name="train-entitynlm-seed", task_run_name="train_entitynlm@{kind}/seed{seed}"
)

train_5gram = task(ngram.train_item, name="train-5gram", task_run_name="train_entitynlm@5gram")


@flow(name="train-entitynlm")
def train_entitynlm(model: str, seed: int | None = None) -> dict:
    cfg = stage.settings()  # every setting checked before any work
    splits, vocab = stage.prepare_data(cfg)
    log.info("%s on %s: documents %s, vocabulary %d", model, "+".join(cfg.runs),
             {s: len(d) for s, d in splits.items()}, len(vocab))  # fmt: skip
    if model == ngram.ITEM:  # the count-based baseline: no seeds, one ARPA
        summary = train_5gram(splits, vocab, cfg)
        write_metrics(stage.metrics_path(model), summary)
        return summary
    seeds = [seed] if seed is not None else [int(s) for s in cfg.seeds]
    results = [train_seed(model, s, (splits, vocab), cfg) for s in seeds]
    summary = stage.summarize(model, results)
    write_metrics(stage.metrics_path(model), summary)
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=[*stage.MODELS, ngram.ITEM])
    parser.add_argument("--seed", type=int, default=None, help="one seed instead of params' seeds")
    args = parser.parse_args(argv)
    if not run_cli(torchrun, "flows.train_entitynlm", lambda: stage.settings().train.nproc, argv):
        run_cli(train_entitynlm, args.model, args.seed)


if __name__ == "__main__":
    main()
