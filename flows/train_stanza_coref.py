"""Stage `train_stanza_coref`: Stanza's coreference model trained by Stanza's own loop.

    python -m flows.train_stanza_coref

params.yaml train_stanza_coref names the corpora (data/docs/<corpus>/, converted to Stanza's
coreference JSON), the encoder (tiny | minilm | smollm2 | a local directory) and Stanza's
model and training settings. Writes artifacts/train_stanza_coref/model.pt (Stanza's checkpoint:
what `stanza.Pipeline(coref_model_path=...)` and the `stanza` annotator load) and
metrics/train_stanza_coref/metrics.json (dev/test CoNLL F1 with the project's scorer); one MLflow
run train_stanza_coref@<encoder>/seed<k> in the experiment train_stanza_coref. Not a family of
models/registry.py: the training loop is Stanza's (models/stanza_coref/train.py drives it).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flows.runtime import flow, run_cli, task
from models.coref.data import load_splits
from models.stanza_coref.encoder import portable
from models.stanza_coref.train import (
    MODEL_FILE,
    STAGE,
    TrainStanzaCorefSettings,
    encoder_label,
    run_params,
    sample_documents,
    train_and_evaluate,
)
from tasks.core import storage
from tasks.core.config import resolve_path
from tasks.core.settings import load_stage_settings
from tasks.core.tracking import log_checkpoint, log_metrics, log_params, tracked_run

log = logging.getLogger("corefrepro.train_stanza_coref")


def settings() -> TrainStanzaCorefSettings:
    return load_stage_settings(TrainStanzaCorefSettings, STAGE)


def artifact_dir() -> Path:
    return resolve_path(f"artifacts/{STAGE}")


def metrics_path() -> Path:
    return resolve_path(f"metrics/{STAGE}") / "metrics.json"


def train_stage(cfg: TrainStanzaCorefSettings, *, track: bool = True) -> dict[str, Any]:
    """The stage: corpora -> Stanza's model, under the MLflow run train_stanza_coref@<encoder>;
    metrics/train_stanza_coref/metrics.json."""
    splits = load_splits(cfg.corpora, drop_singletons=cfg.drop_singletons)
    splits = sample_documents(splits, cfg.max_documents, cfg.seed)
    dataset, item = "+".join(cfg.corpora), encoder_label(cfg)
    log.info("%s on %s: %s documents", item, dataset,
             {split: len(docs) for split, docs in splits.items()})  # fmt: skip
    label = f"{STAGE}@{item}"
    if not track:
        metrics = train_and_evaluate(splits, cfg, artifact_dir(), label=label)
    else:
        with tracked_run(STAGE, item, dataset=dataset, seed=cfg.seed,
                         run_params=run_params(cfg, splits)):  # fmt: skip
            metrics = train_and_evaluate(splits, cfg, artifact_dir(), label=label,
                                         log_metrics=log_metrics)  # fmt: skip
            _log_final(metrics)
    metrics = {**metrics, "dataset": dataset, "checkpoint": portable(artifact_dir() / MODEL_FILE)}
    storage.write_metrics(metrics_path(), metrics)
    return metrics


def _log_final(metrics: Mapping[str, Any]) -> None:
    """The final scores, the encoder's provenance and the checkpoint, into the MLflow run."""
    final = {f"final_{split}_{k}": v for split in ("dev", "test")
             for k, v in (metrics.get(split) or {}).items()}  # fmt: skip
    log_metrics({**final, "train_time_s": metrics["train_time_s"]}, None)
    log_params({f"encoder_{k}": v for k, v in metrics["encoder"].items()})
    log_checkpoint(artifact_dir() / MODEL_FILE)


train_model = task(train_stage, name="train-stanza-coref", task_run_name="train_stanza_coref")


@flow(name="train-stanza-coref")
def train_stanza_coref() -> dict:
    return train_model(settings())  # every setting checked before any work


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    run_cli(train_stanza_coref)


if __name__ == "__main__":
    main()
