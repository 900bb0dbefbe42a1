"""Stage `kbest`: k-best antecedent trees of one corpus, for EntityNLM's reranking experiment.

    python -m flows.kbest --corpus inscript

Runs the checkpoint artifacts/train_coref/<kbest.encoder>/seed<kbest.seed>/best.pt (written by
train_coref) over data/docs/<corpus>/ with the heuristic of models/coref/kbest.py (Ji et al.
2017 §5.2, k = 100) and writes data/kbest/<corpus>/kbest.parquet (tasks/core/schema.py KBEST)
+ metrics/kbest/<corpus>.json. params.yaml kbest also names the splits (default: every
document), the device and threads.
"""

from __future__ import annotations

import argparse
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch

from flows.runtime import flow, run_cli, task
from models.coref.data import load_corpus
from models.coref.features import checkpoint_features
from models.coref.kbest import Tree, kbest_for_documents
from models.coref.train import BEST, load_checkpoint, restore
from tasks.core import numerics, storage
from tasks.core.checkpoints import pick_device
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.layout import docs_dir, kbest_dir
from tasks.core.progress import Progress
from tasks.core.schema import KBEST
from tasks.core.settings import (
    ConfigError,
    Name,
    Threads,
    bounded,
    load_stage_settings,
)
from tasks.core.storage import sha256_of
from tasks.training.stage import artifact_dir

log = logging.getLogger("corefrepro.kbest")

# --------------------------------------------------------------------------- the DVC stage
# params.yaml kbest: corpora (the dvc.yaml foreach), encoder + seed (which checkpoint), k,
# splits, device and threads (scores differ in the last bits with them), and settings that do
# not change the output (encode_window, pair_chunk: memory; log_every_s).


@dataclass
class KbestSettings:
    """params.yaml kbest, checked whole before any work."""

    corpora: list[Name] = field(default_factory=list)
    encoder: str = "asl"
    seed: int = 1
    k: int = bounded(100, ge=1)  # Ji et al. (2017) §5.2: "In our experiments, k = 100"
    splits: list[Literal["train", "dev", "test"]] | None = None  # None: every document
    device: Literal["cpu", "cuda", "auto"] = "cpu"
    threads: Threads = bounded(
        1, ge=1
    )  # torch intra-op threads (None: torch's default); last bits vary
    encode_window: int = bounded(64, ge=1)  # sentences per encoder window (memory only)
    pair_chunk: int = bounded(2048, ge=1)  # antecedent pairs scored at once (memory only)
    log_every_s: float = bounded(30.0, ge=0)  # in logs, a progress line (rate, ETA) every N seconds

    def validate(self, path: str) -> None:
        bad = []
        if self.splits is not None and not self.splits:
            bad.append(f"{path}.splits: an empty list selects nothing (null = every document)")
        if bad:
            raise ConfigError(bad)


def settings() -> KbestSettings:
    return load_stage_settings(KbestSettings, "kbest")


def checkpoint_path(cfg: KbestSettings) -> Path:
    """artifacts/train_coref/<kbest.encoder>/seed<kbest.seed>/best.pt (what train_coref writes)."""
    return artifact_dir("train_coref", cfg.encoder, cfg.seed) / BEST


def metrics_path(corpus: str) -> Path:
    return resolve_path("metrics/kbest") / f"{corpus}.json"


def export_corpus(corpus: str) -> dict[str, Any]:
    """The stage: k-best trees of every (selected) document of one corpus; returns metrics."""
    cfg = settings()
    k, splits = cfg.k, cfg.splits
    path = checkpoint_path(cfg)
    if not path.is_file():
        raise CorefreproError(
            f"{path}: no checkpoint for params.yaml kbest.encoder={cfg.encoder!r}, "
            f"kbest.seed={cfg.seed!r}; train it with `dvc repro train_coref@{cfg.encoder}` "
            "(train_coref.seeds must include the seed) or change kbest.encoder / kbest.seed"
        )
    docs = load_corpus(docs_dir(corpus), drop_singletons=False)
    if splits is not None:
        docs = [d for d in docs if d.split in splits]
    if not docs:
        where = f" in splits {splits} (params.yaml kbest.splits)" if splits else ""
        raise CorefreproError(f"{docs_dir(corpus)}: no documents{where}")
    ckpt = load_checkpoint(path)
    model, vocab = restore(ckpt, encode_window=cfg.encode_window, pair_chunk=cfg.pair_chunk)
    device = pick_device(cfg.device)
    model.to(device)
    # a model trained on LM features: lm_features@<corpus>'s file where it exists, else live
    features = checkpoint_features(
        ckpt["config"], str(path), corpus=corpus, documents=docs, device=device
    )
    threads_before = torch.get_num_threads()
    if count := numerics.threads(cfg.threads, "kbest.threads"):
        torch.set_num_threads(count)
    log.info(
        "%s: %d documents, k = %d, checkpoint %s (%s, encode_window %d)",
        corpus, len(docs), k, path, device, model.config.encode_window,
    )  # fmt: skip
    started = time.perf_counter()
    distinct: list[int] = []
    bar = Progress(f"kbest@{corpus}", len(docs), "docs", every_s=cfg.log_every_s, logger=log)

    def progress(count: int, trees: list[Tree]) -> None:
        distinct.append(sum(not t.padded for t in trees))
        bar.update()

    try:
        with bar:
            table = kbest_for_documents(model, vocab, docs, k, device, on_document=progress,
                                        features=features)  # fmt: skip
    finally:
        torch.set_num_threads(threads_before)
    seconds = time.perf_counter() - started
    meta = {
        "corpus": corpus,
        "encoder": cfg.encoder,
        "seed": cfg.seed,
        "k": k,
        "checkpoint_sha256": sha256_of(path),
    }
    with storage.atomic_dir(kbest_dir(corpus)) as tmp:
        storage.write_table(tmp / f"{KBEST}.parquet", KBEST, table, meta)
    metrics = {
        "corpus": corpus,
        "encoder": cfg.encoder,
        "seed": cfg.seed,
        "k": k,
        "splits": splits,
        "documents": len(docs),
        "trees": table.num_rows,
        "trees_per_doc": table.num_rows / len(docs),
        "distinct_trees_per_doc": round(sum(distinct) / len(docs), 3),
        "docs_with_k_distinct": sum(n == k for n in distinct),
        "seconds": round(seconds, 3),
        "docs_per_s": round(len(docs) / seconds, 2) if seconds > 0 else None,
        "device": str(device),
    }
    storage.write_metrics(metrics_path(corpus), metrics)
    log.info(
        "%s: %d trees (%.1f distinct per document) in %.1fs",
        corpus, table.num_rows, metrics["distinct_trees_per_doc"], seconds,
    )  # fmt: skip
    return metrics


export = task(export_corpus, name="kbest-export", task_run_name="kbest@{corpus}")


@flow(name="kbest")
def kbest(corpus: str) -> dict:
    return export(corpus)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a corpus of data/docs/ (kbest.corpora)")
    args = parser.parse_args(argv)
    run_cli(kbest, args.corpus)


if __name__ == "__main__":
    main()
