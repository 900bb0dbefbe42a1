"""The trained coreference model as the `model` annotator (tasks/annotation/annotators/model.py
loads it by the factory name `models.coref.annotator:load_annotator`): LAMBADA and CBT can be
annotated offline by the project's own model, with the same interface as Stanza."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from models.coref.data import CorefDocument, CorefVocab
from models.coref.features import WordFeatures, checkpoint_features
from models.coref.model import CorefModel
from models.coref.train import load_checkpoint, predict, restore
from tasks.annotation.annotators.base import (
    Annotation,
    Annotator,
    Doc,
    check_settings,
    link_queries,
)
from tasks.core.checkpoints import CheckpointMismatchError, config_diff, pick_device
from tasks.core.errors import CorefreproError

ANNOTATOR_SETTINGS: dict[str, Any] = {
    "checkpoint": None,  # required: a best.pt written by train_and_evaluate
    "name": "model",  # the mentions table's annotator column
    "device": "cpu",  # cpu | cuda | auto
    "expect": {},  # model settings the checkpoint must have (e.g. {encoder: asl})
    "encode_window": 64,  # sentences per encoder window (memory only)
    "pair_chunk": 2048,  # antecedent pairs scored at once (memory only)
    # torch intra-op threads of the process (None: leave as is). The stage's workers are the
    # parallelism: 2 workers x 1 thread fill 2 cores, 2 x torch's default would oversubscribe.
    "threads": 1,
}


class CorefAnnotator(Annotator):
    """The trained model as the `model` annotator (tasks/annotation/annotators/model.py plug-in).

    Predicted clusters become the document's mentions; queries are linked to them with the
    generic string linker (tasks/annotation/annotators/base.py link_queries).
    """

    def __init__(self, model: CorefModel, vocab: CorefVocab, name: str, device: torch.device,
                 features: WordFeatures | None = None):  # fmt: skip
        self.model = model.to(device).eval()
        self.vocab = vocab
        self.name = name
        self.device = device
        self.features = features  # a model trained on LM features: computed live per document

    def annotate_doc(self, doc: Doc) -> Annotation:
        document = CorefDocument(
            doc.doc_id, "", list(doc.tokens), list(doc.sentence_starts), doc.genre, doc.speakers
        )
        clusters = predict(self.model, [document], self.vocab, self.device,
                           features=self.features)[doc.doc_id]  # fmt: skip
        mentions = [(s, e, c) for c, cluster in enumerate(clusters) for s, e in cluster]
        counts = {"model_clusters": len(clusters), "model_mentions": len(mentions)}
        return Annotation(mentions, link_queries(doc, mentions), counts)


def load_annotator(cfg: Mapping[str, Any]) -> CorefAnnotator:
    """Factory for params.yaml annotate.annotators.model.factory = models.coref.annotator:load_annotator.

    cfg: {"checkpoint": path, **settings} (ANNOTATOR_SETTINGS); `expect` entries are checked
    against the checkpoint's configuration (CheckpointMismatchError on any difference). A
    checkpoint trained on LM features gets them computed live on the annotator's device
    (params.yaml lm_features.encoders.<its encoder>; refused if they differ from its own).
    """
    cfg = {**ANNOTATOR_SETTINGS, **check_settings("model", dict(cfg), ANNOTATOR_SETTINGS)}
    if not cfg["checkpoint"]:
        raise CorefreproError(
            "annotator 'model': no checkpoint given (annotate.annotators.model.checkpoint, "
            "e.g. artifacts/train_coref/asl/seed1/best.pt)"
        )
    ckpt = load_checkpoint(cfg["checkpoint"])
    expect = dict(cfg["expect"] or {})
    if expect:
        check_expected(cfg["checkpoint"], ckpt["config"], expect)
    model, vocab = restore(ckpt, encode_window=cfg["encode_window"], pair_chunk=cfg["pair_chunk"])
    if cfg["threads"]:
        torch.set_num_threads(int(cfg["threads"]))
    device = pick_device(cfg["device"])
    features = checkpoint_features(ckpt["config"], str(cfg["checkpoint"]), device=device)
    return CorefAnnotator(model, vocab, str(cfg["name"]), device, features)


def check_expected(path: str | Path, saved: Mapping, expect: Mapping) -> None:
    """Refuse a checkpoint whose configuration differs from `expect` on any key it names."""
    diffs = config_diff({k: saved.get(k, "<absent>") for k in expect}, dict(expect))
    if diffs:
        raise CheckpointMismatchError(
            f"{path}: checkpoint was trained under a different configuration: " + "; ".join(diffs)
        )
