"""Stage `lm_features`: frozen pretrained-LM word features of one corpus, computed once.

    python -m flows.lm_features --corpus gum

params.yaml lm_features names the encoder (tiny | smollm2 | minilm | a local Hugging Face
folder, with its layers, window and stride); data/docs/<corpus>/ is read and
data/features/<encoder>/<corpus>/features.safetensors + metrics/lm_features/<encoder>/<corpus>.json
are written. The coreference model reads them with train_coref.model.lm_features
(models/coref/features.py says how words, windows and layers are handled, and why
safetensors). A stopped run resumes from the documents it had finished (ResumeParts).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import shutil
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import Tensor

from flows.runtime import flow, run_cli, task
from models.coref import features
from models.coref.data import load_corpus
from models.coref.features import (
    FEATURES_FILE,
    META_KEY,
    STAGE,
    LMFeaturesSettings,
    WordFeatureExtractor,
    build_extractor,
    features_dir,
    metrics_path,
    recorded_extractor,
    weights_digest,
)
from tasks.core import numerics, storage
from tasks.core.checkpoints import pick_device
from tasks.core.config import resolve_path
from tasks.core.layout import docs_dir
from tasks.core.progress import Progress
from tasks.core.settings import load_stage_settings

log = logging.getLogger("corefrepro.lm_features")

RESUME_ROOT = "data/cache/lm_features"
# how often finished documents are saved for a resume: an interrupted stage (a session's end,
# a killed job) redoes at most this much work; not a setting, since it changes no byte
RESUME_EVERY_S = 60.0


class ResumeParts:
    """The documents an interrupted `lm_features@<corpus>` run had finished, as part files
    under data/cache/lm_features/<encoder>/<corpus>/<key>/ (key: everything the features'
    bytes depend on), so the next run computes only the rest and writes the same file."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.pending: dict[str, Tensor] = {}
        self.pending_counts: Counter[str] = Counter()
        self.saved_at = time.perf_counter()

    def load(self) -> tuple[dict[str, Tensor], Counter[str]]:
        """The finished documents' features and the extractor counts they added."""
        tensors: dict[str, Tensor] = {}
        counts: Counter[str] = Counter()
        for part in sorted(self.folder.glob("part-*.safetensors")):
            with safe_open(str(part), framework="pt") as f:
                tensors.update({k: f.get_tensor(k) for k in f.keys()})  # noqa: SIM118
                counts.update(json.loads(f.metadata()["counts"]))
        return tensors, counts

    def add(self, doc_id: str, features: Tensor, counts: Counter[str]) -> None:
        self.pending[doc_id] = features
        self.pending_counts.update(counts)
        if time.perf_counter() - self.saved_at >= RESUME_EVERY_S:
            self.save()

    def save(self) -> None:
        if self.pending:
            self.folder.mkdir(parents=True, exist_ok=True)
            index = len(list(self.folder.glob("part-*.safetensors")))
            with storage.atomic_path(self.folder / f"part-{index:05d}.safetensors") as tmp:
                save_file(self.pending, str(tmp),
                          {"counts": json.dumps(dict(sorted(self.pending_counts.items())))})  # fmt: skip
        self.pending, self.pending_counts = {}, Counter()
        self.saved_at = time.perf_counter()

    def clear(self) -> None:
        shutil.rmtree(self.folder.parent, ignore_errors=True)  # this and stale keys alike


def settings() -> LMFeaturesSettings:
    """params.yaml lm_features, checked whole (this stage, and train_coref's features)."""
    return load_stage_settings(LMFeaturesSettings, STAGE)


def resume_parts(meta: Mapping[str, Any], cfg: LMFeaturesSettings, device: torch.device,
                 documents: Path) -> ResumeParts:  # fmt: skip
    """The part files of this exact computation: the settings and weights (meta), the
    documents table, the things that move the last bits (threads, batching, device) and
    the extractor's code (models/coref/features.py)."""
    key = hashlib.sha256(json.dumps({
        "meta": meta, "documents": storage.sha256_of(documents), "threads": cfg.threads,
        "batch_windows": cfg.batch_windows, "device": str(device),
        "code": storage.sha256_of(Path(features.__file__)),
    }, sort_keys=True).encode()).hexdigest()[:16]  # fmt: skip
    return ResumeParts(resolve_path(RESUME_ROOT) / meta["encoder"] / meta["corpus"] / key)


def features_meta(name: str, cfg: LMFeaturesSettings, extractor: WordFeatureExtractor,
                  corpus: str) -> dict[str, Any]:  # fmt: skip
    """What the features are (the file's metadata, the metrics' head)."""
    return {"encoder": name, **recorded_extractor(cfg, name),
            "layers": list(cfg.encoders[name].layers), "dim": extractor.spec.dim,
            "bidirectional": extractor.encoder.bidirectional, "corpus": corpus,
            "weights_sha256": weights_digest(extractor.encoder)}  # fmt: skip


def export_corpus(corpus: str) -> dict[str, Any]:
    """lm_features@<corpus>: every document of data/docs/<corpus> through lm_features.encoder
    once -> data/features/<encoder>/<corpus>/features.safetensors + metrics. An interrupted
    run resumes from the documents it had finished (ResumeParts), to the same bytes."""
    cfg = settings()
    name = cfg.encoder
    docs = load_corpus(docs_dir(corpus), drop_singletons=False)
    threads_before = torch.get_num_threads()
    if count := numerics.threads(cfg.threads, f"{STAGE}.threads"):
        torch.set_num_threads(count)
    try:
        extractor = build_extractor(name, cfg, pick_device(cfg.device), f"{STAGE}.encoder")
        meta = features_meta(name, cfg, extractor, corpus)
        parts = resume_parts(meta, cfg, extractor.device, docs_dir(corpus) / "documents.parquet")
        tensors, counts = parts.load()
        if tensors:
            log.info("%s: %d of %d documents reused from an interrupted run (%s)", corpus,
                     len(tensors), len(docs), parts.folder)  # fmt: skip
        todo = [doc for doc in docs if doc.doc_id not in tensors]
        started = time.perf_counter()
        with Progress(f"{STAGE}@{corpus}", len(todo), "docs", every_s=cfg.log_every_s,
                      logger=log) as bar:  # fmt: skip
            for doc in todo:
                before = Counter(extractor.counts)
                tensors[doc.doc_id] = extractor(doc.tokens)
                added = Counter({k: v - before[k] for k, v in extractor.counts.items()})
                parts.add(doc.doc_id, tensors[doc.doc_id], added)  # zero counts kept as keys
                bar.update(note=f", {extractor.counts['words']} words")
        parts.save()
        seconds = time.perf_counter() - started
    finally:
        torch.set_num_threads(threads_before)
    computed_words = extractor.counts["words"]
    counts.update(extractor.counts)
    target = features_dir(name, corpus)
    with storage.atomic_dir(target) as tmp:
        save_file(tensors, str(tmp / FEATURES_FILE), {META_KEY: json.dumps(meta, sort_keys=True)})
    parts.clear()
    size = (target / FEATURES_FILE).stat().st_size
    metrics = {**meta, "documents": len(docs), **dict(sorted(counts.items())),
               "bytes": size, "device": str(extractor.device), "seconds": round(seconds, 3),
               "words_per_s": round(computed_words / seconds, 1) if seconds else None}  # fmt: skip
    storage.write_metrics(metrics_path(name, corpus), metrics)
    log.info("%s: %d documents, %d words, %.1f MB in %.1f s", corpus, len(docs),
             counts["words"], size / 1e6, seconds)  # fmt: skip
    return metrics


export = task(export_corpus, name="lm-features-export", task_run_name="lm_features@{corpus}")


@flow(name="lm_features")
def lm_features(corpus: str) -> dict:
    return export(corpus)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--corpus", required=True, help="a corpus of data/docs/ (lm_features.corpora)"
    )
    run_cli(lm_features, parser.parse_args(argv).corpus)


if __name__ == "__main__":
    main()
