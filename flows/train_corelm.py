"""Stage `train_corelm`: one of the three models of CoreLM's Tables 1-2, trained and evaluated.

    python -m flows.train_corelm --model corelm     # zeroshot | ft | corelm

params.yaml train_corelm names the backbone (tiny | gpt2 | smollm2 | a directory), the
training data (annotate runs with a CoreLM view, or corpora with gold mentions), the gating
and training settings (Stylianou & Vlahavas, App. A) and what to evaluate. The family
(models/corelm, found through models/registry.py) trains and evaluates the model; this stage
parses the section, prepares the backbone and data and places and records the run:
artifacts/train_corelm/<model>/ (best.pt, history.json, items.json: per-item LAMBADA / CBT
correctness for paired t-tests) and metrics/train_corelm/<model>.json; the fine-tuned models
are MLflow runs train_corelm@<model>/seed<k> in the experiment train_corelm.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from flows.runtime import flow, run_cli, task, torchrun
from models import registry
from models.corelm.train import MODELS, TrainCoreLMSettings, check_model, prepare_data, run_params
from tasks.core.config import resolve_path
from tasks.core.fetch import mirror_setting
from tasks.core.tracking import log_checkpoint, log_metrics, tracked_run
from tasks.training.loop import BEST
from tasks.training.stage import load_settings, record_history, write_summary

FAMILY = registry.get("corelm")
STAGE = FAMILY.stage


def settings() -> TrainCoreLMSettings:
    return load_settings(FAMILY)


def train_model(model: str, cfg: TrainCoreLMSettings | None = None, *,
                out_dir: Path | None = None, track: bool = True) -> dict:  # fmt: skip
    """The stage item: the model trained (unless zeroshot) under its MLflow run and evaluated
    into artifacts/train_corelm/<model>/ (or out_dir); the metrics the summary is made of.
    One seed per model (train.seed): the artifacts sit in the model's folder, not seed<k>/."""
    cfg = cfg or settings()  # every setting checked before any work
    check_model(model)  # before the backbone is built
    data = prepare_data(cfg, mirror=mirror_setting())
    out_dir = Path(out_dir or resolve_path(f"artifacts/{STAGE}") / model)
    seed = cfg.train.seed
    tracking = (
        tracked_run(
            STAGE, model, dataset="+".join(cfg.data), seed=seed, run_params=run_params(cfg)
        )  # fmt: skip
        if track and model != "zeroshot"  # zeroshot trains nothing: no run
        else contextlib.nullcontext(None)
    )
    with tracking as run:
        sink = log_metrics if run is not None else None
        metrics = FAMILY.train_seed(model, seed, data, cfg, out_dir, log_metrics=sink)
        if run is not None:
            record_history(out_dir)
            log_checkpoint(out_dir / BEST)
    return metrics


train_model_task = task(
    train_model, name="train-corelm-model", task_run_name="train_corelm@{model}"
)


@flow(name="train-corelm")
def train_corelm(model: str) -> dict:
    return write_summary(FAMILY, model, [train_model_task(model)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=MODELS)
    model = parser.parse_args(argv).model
    if not run_cli(torchrun, "flows.train_corelm", lambda: settings().train.nproc, argv):
        run_cli(train_corelm, model)


if __name__ == "__main__":
    main()
