"""Stage `train_stanza_coref`: Stanza's coreference model trained by Stanza's own loop.

    python -m flows.train_stanza_coref

params.yaml train_stanza_coref names the corpora (data/docs/<corpus>/, converted to Stanza's
coreference JSON), the encoder (tiny | minilm | smollm2 | a local directory) and Stanza's
model and training settings. Writes artifacts/train_stanza_coref/model.pt (Stanza's checkpoint:
what `stanza.Pipeline(coref_model_path=...)` and the `stanza` annotator load) and
metrics/train_stanza_coref/metrics.json (dev/test CoNLL F1 with the project's scorer); one MLflow
run train_stanza_coref@<encoder>/seed<k> in the experiment train_stanza_coref. Not a family of
models/registry.py: the training loop is Stanza's (models/stanza_coref/train.py drives it).
This module owns the stage's settings section (TrainStanzaCorefSettings: the corpora and their
per-split caps beside the run's settings, StanzaRun), the sampling plan, paths and outputs.
"""

from __future__ import annotations

import argparse
import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from flows.runtime import flow, run_cli, task
from models.coref.data import CorefDocument, load_splits
from models.stanza_coref.encoder import portable
from models.stanza_coref.train import MODEL_FILE, StanzaRun, train_and_evaluate
from tasks.core import storage
from tasks.core.config import resolve_path
from tasks.core.layout import docs_dir
from tasks.core.settings import ConfigError, Name, bounded, load_stage_settings, settings_to_dict
from tasks.core.tracking import log_checkpoint, log_metrics, log_params, tracked_run

log = logging.getLogger("corefrepro.train_stanza_coref")


STAGE = "train_stanza_coref"


@dataclass
class TrainStanzaCorefSettings(StanzaRun):
    """params.yaml train_stanza_coref, checked whole before any work: the corpora it reads and
    the run (models/stanza_coref/train.py StanzaRun)."""

    corpora: list[Name] = bounded(["synthetic", "handmade"], min_items=1)
    # per split, N documents of each corpus drawn with the seed (a CPU budget); None = all
    max_documents: dict[Literal["train", "dev", "test"], int | None] = field(default_factory=dict)

    def validate(self, path: str) -> None:
        super().validate(path)
        small = {k: v for k, v in self.max_documents.items() if v is not None and v < 1}
        if small:
            raise ConfigError(f"{path}.max_documents: must be >= 1 or null, got {small}")


def settings() -> TrainStanzaCorefSettings:
    return load_stage_settings(TrainStanzaCorefSettings, STAGE)


def artifact_dir() -> Path:
    return resolve_path(f"artifacts/{STAGE}")


def metrics_path() -> Path:
    return resolve_path(f"metrics/{STAGE}") / "metrics.json"


def encoder_label(cfg: TrainStanzaCorefSettings) -> str:
    """The MLflow item: the encoder's name, or its folder's name."""
    return cfg.encoder if "/" not in cfg.encoder else Path(cfg.encoder).name


def sample_documents(
    splits: Mapping[str, Sequence[CorefDocument]], caps: Mapping[str, int | None], seed: int
) -> dict[str, list[CorefDocument]]:
    """Per split, at most caps[split] documents of each corpus (the doc_id's "<corpus>/"
    prefix), drawn with `seed` from the doc_id order and kept in that order."""
    out: dict[str, list[CorefDocument]] = {}
    for split, docs in splits.items():
        cap = caps.get(split)
        by_corpus: dict[str, list[CorefDocument]] = {}
        for doc in sorted(docs, key=lambda d: d.doc_id):
            by_corpus.setdefault(doc.doc_id.split("/")[0], []).append(doc)
        kept = [d for group in by_corpus.values() for d in _draw(group, cap, seed)]
        out[split] = sorted(kept, key=lambda d: d.doc_id) if cap is not None else list(docs)
    return out


def _draw(group: list[CorefDocument], cap: int | None, seed: int) -> list[CorefDocument]:
    if cap is None or len(group) <= cap:
        return group
    return random.Random(seed).sample(group, cap)


def run_params(cfg: TrainStanzaCorefSettings, splits) -> dict[str, Any]:
    """What the MLflow run records as parameters."""
    return {
        "corpora": list(cfg.corpora), "encoder": cfg.encoder, "seed": cfg.seed,
        "drop_singletons": cfg.drop_singletons, "device": cfg.device, "threads": cfg.threads,
        "stanza": settings_to_dict(cfg.stanza),
        **({"tiny": settings_to_dict(cfg.tiny)} if cfg.encoder == "tiny" else {}),
        "documents": {split: len(docs) for split, docs in splits.items()},
    }  # fmt: skip


def train_stage(cfg: TrainStanzaCorefSettings, *, track: bool = True) -> dict[str, Any]:
    """The stage: corpora -> Stanza's model, under the MLflow run train_stanza_coref@<encoder>;
    metrics/train_stanza_coref/metrics.json."""
    splits = load_splits(map(docs_dir, cfg.corpora), drop_singletons=cfg.drop_singletons)
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
