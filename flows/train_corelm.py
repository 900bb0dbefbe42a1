"""Stage `train_corelm`: one of the three models of CoreLM's Tables 1-2, trained and evaluated.

    python -m flows.train_corelm --model corelm     # zeroshot | ft | corelm

params.yaml train_corelm names the backbone (tiny | gpt2 | smollm2 | a directory), the
training data (annotate runs with a CoreLM view, or corpora with gold mentions), the gating
and training settings (Stylianou & Vlahavas, App. A) and what to evaluate. Writes
artifacts/train_corelm/<model>/ (best.pt, history.json, items.json: per-item LAMBADA / CBT
correctness for paired t-tests) and metrics/train_corelm/<model>.json; the fine-tuned models
are MLflow runs train_corelm@<model>/seed<k> in the experiment train_corelm.
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task, torchrun
from models.corelm import train as stage

settings = stage.settings  # the section's parser (still in models/, issue #31)

run_model = task(
    stage.run_model, name="train-corelm-model", task_run_name="train_corelm@{model_name}"
)


@flow(name="train-corelm")
def train_corelm(model: str) -> dict:
    return run_model(model)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=stage.MODELS)
    model = parser.parse_args(argv).model
    if not run_cli(torchrun, "flows.train_corelm", lambda: stage.settings().train.nproc, argv):
        run_cli(train_corelm, model)


if __name__ == "__main__":
    main()
