"""Stage `compare_coref`: is one coreference encoder better than another, beyond chance?

    python -m flows.compare_coref

Luo & Glass (papers/001, Table 1) report ASL − baseline as a difference of CoNLL F1; issue
#27.2 asks for it with a paired test over documents. The stage loads every seed's best.pt of
train_coref@<a> and train_coref@<b> (train_coref.seeds), predicts the `split` documents of
train_coref.corpora (singletons as train_coref drops and scores them) and runs approximate
randomization over the documents (tasks/evaluation/significance.py; Ji et al. 2017 test
their Table 2 the same way):

- pooled: each system is its seeds together (a document's MUC / B³ / CEAF-e counts summed
  over the seeds), so a swap moves all of a document's seeds at once: the question "is b
  better than a on these documents, whatever the seed";
- per seed: seed k of a against seed k of b, one test each.

Writes metrics/compare_coref.json (CoNLL F1 of both per seed and pooled, b − a, p-values)
and one MLflow run (experiment "compare_coref"). params.yaml compare_coref names a, b, the
split, the trials and the threads.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from flows import train_coref
from flows.runtime import flow, run_cli, task
from models.coref.data import CorefDocument, gold_clusters, load_splits
from models.coref.features import checkpoint_features
from models.coref.train import BEST, load_checkpoint, predict, restore
from tasks.core import storage
from tasks.core.checkpoints import jsonable
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.layout import docs_dir
from tasks.core.settings import ConfigError, Threads, bounded, load_stage_settings, settings_to_dict
from tasks.evaluation.significance import (
    TRIALS,
    approximate_randomization,
    conll_counts,
    conll_f1_from_counts,
)
from tasks.training.loop import torch_threads
from tasks.training.stage import artifact_dir

log = logging.getLogger("corefrepro.compare_coref")
STAGE = "compare_coref"


@dataclass
class CompareCorefSettings:
    """params.yaml compare_coref."""

    a: str = "baseline"  # the reference encoder (a key of train_coref.encoders)
    b: str = "asl"  # the encoder tested against it: differences are b − a
    split: Literal["dev", "test"] = "test"
    trials: int = bounded(TRIALS, ge=1)  # approximate randomization shuffles
    seed: int = 0  # approximate randomization seed
    threads: Threads = bounded(1, ge=1)  # torch threads while predicting

    def validate(self, path: str) -> None:
        if self.a == self.b:
            raise ConfigError(f"{path}: a and b are both {self.a!r}: name two encoders")


def settings() -> CompareCorefSettings:
    return load_stage_settings(CompareCorefSettings, STAGE)


def metrics_path() -> Path:
    return resolve_path("metrics") / f"{STAGE}.json"


def predict_seed(encoder: str, seed: int, by_corpus: Mapping[str, Sequence[CorefDocument]]
                 ) -> dict[str, list]:  # fmt: skip
    """{doc_id: clusters} of train_coref@<encoder> seed <seed>'s best.pt over the documents;
    a features model reads each corpus's lm_features file (else runs its LM live)."""
    path = artifact_dir("train_coref", encoder, seed) / BEST
    if not path.is_file():
        raise CorefreproError(f"{path}: no checkpoint for compare_coref (encoder {encoder!r}, "
                              f"seed {seed}): train it with `dvc repro train_coref@{encoder}`")  # fmt: skip
    ckpt = load_checkpoint(path)
    model, vocab = restore(ckpt)
    response: dict[str, list] = {}
    for corpus, docs in by_corpus.items():
        features = checkpoint_features(ckpt["config"], str(path), corpus=corpus, documents=docs)
        response |= predict(model, docs, vocab, features=features)
    return response


def _test(counts_a: np.ndarray, counts_b: np.ndarray, cfg: CompareCorefSettings) -> dict:
    """CoNLL F1 of both (per-document counts rows), b − a and its two-sided p-value."""
    result = approximate_randomization(counts_b, counts_a, conll_f1_from_counts,
                                       trials=cfg.trials, seed=cfg.seed)  # fmt: skip
    return {cfg.a: result.metric_b, cfg.b: result.metric_a,
            "difference": result.difference, "p_value": result.p_value}  # fmt: skip


def compare(cfg: CompareCorefSettings, coref: train_coref.TrainCorefSettings) -> dict[str, Any]:
    """The stage's numbers: pooled over the seeds and seed by seed."""
    by_corpus = {c: load_splits([docs_dir(c)], drop_singletons=coref.drop_singletons)[cfg.split]
                 for c in coref.corpora}  # fmt: skip
    docs = [d for corpus_docs in by_corpus.values() for d in corpus_docs]
    if not docs:
        raise CorefreproError(f"train_coref.corpora {coref.corpora}: no {cfg.split} documents")
    key, order = gold_clusters(docs), [d.doc_id for d in docs]
    options = {"exclude_singletons": bool(coref.train.exclude_singletons)}
    counts: dict[str, list[np.ndarray]] = {cfg.a: [], cfg.b: []}
    for seed in coref.seeds:
        for encoder in (cfg.a, cfg.b):
            response = predict_seed(encoder, int(seed), by_corpus)
            counts[encoder].append(conll_counts(key, response, order, **options))
    per_seed = {str(s): _test(a, b, cfg)
                for s, a, b in zip(coref.seeds, counts[cfg.a], counts[cfg.b], strict=True)}  # fmt: skip
    pooled = _test(sum(counts[cfg.a]), sum(counts[cfg.b]), cfg)
    mean = {e: float(np.mean([r[e] for r in per_seed.values()])) for e in (cfg.a, cfg.b)}
    return {"a": cfg.a, "b": cfg.b, "split": cfg.split, "corpora": list(coref.corpora),
            "documents": len(docs), "seeds": [int(s) for s in coref.seeds],
            "trials": cfg.trials, "mean": mean, "pooled": pooled, "per_seed": per_seed}  # fmt: skip


def run(cfg: CompareCorefSettings | None = None, *, track: bool = True) -> dict[str, Any]:
    """The stage; returns the metrics written."""
    from tasks.core.tracking import log_metrics, tracked_run

    cfg = cfg or settings()
    coref = train_coref.settings()
    with torch_threads(cfg.threads, f"{STAGE}.threads"):
        metrics = jsonable(compare(cfg, coref))
    storage.write_metrics(metrics_path(), metrics)
    pooled = metrics["pooled"]
    if track:
        with tracked_run(STAGE, f"{cfg.b}-vs-{cfg.a}", dataset="+".join(coref.corpora),
                         seed=cfg.seed, run_params=settings_to_dict(cfg)):  # fmt: skip
            log_metrics({f"pooled.{k}": v for k, v in pooled.items()})
    log.info("%s − %s on %s %s (%d seeds, %d documents): CoNLL F1 %.4f − %.4f = %+.4f, p %.4f",
             cfg.b, cfg.a, "+".join(coref.corpora), cfg.split, len(coref.seeds),
             metrics["documents"], pooled[cfg.b], pooled[cfg.a], pooled["difference"],
             pooled["p_value"])  # fmt: skip
    return metrics


run_task = task(run, name="compare-coref", task_run_name="compare_coref")


@flow(name="compare_coref")
def compare_coref() -> dict:
    return run_task()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    run_cli(compare_coref)


if __name__ == "__main__":
    main()
