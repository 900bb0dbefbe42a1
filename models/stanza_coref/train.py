"""Stanza's word-level coreference model (Dobrovolskii 2021, as CAW-coref in Stanza 1.15:
stanza/models/coref/) trained by Stanza's own loop on the project's corpora, in Stanza's own
checkpoint format, so that `stanza.Pipeline(..., coref_model_path=<model.pt>)` loads it.

What is Stanza's and what is the project's:
- Stanza's: the model, its training loop and model selection (CorefModel.train: one document
  per step, Adam with a linear schedule, dev span-level LEA F1 each epoch, the best epoch saved
  by save_weights), the checkpoint (state dicts + the Config as a dict; the encoder's weights
  only when it was fine-tuned without LoRA), and how it is loaded again
  (CorefModel.load_model, what the coref processor calls). Called here, as stanza/models/
  wl_coref.py's `train` mode does, with a Config built from params.yaml instead of a TOML file
  (the wheel ships no coref_config.toml; its [DEFAULT] values are StanzaConfigSettings').
- the project's: the data (data/docs/<corpus>/ through models/coref/data.py, converted by
  models/stanza_coref/convert.py), the encoder folder (encoder.py), seeds, the dev/test scores
  with the project's CoNLL scorer (tasks/evaluation/coref.py: MUC, B3, CEAF-e, CoNLL F1; the
  CoNLL-2012 convention of train_coref, clusters of one mention excluded), MLflow and DVC.

Outputs (artifacts/train_stanza_coref/): model.pt (Stanza's best-dev checkpoint), encoder/
(the tiny encoder, when it is the one), data/{train,dev,test}.json (the converted corpora:
Stanza's wl_coref CLI reads them too); metrics/train_stanza_coref/metrics.json. The paths in
the checkpoint's Config are relative to the repository (stages run from its root), so the
checkpoint has the same bytes in every checkout. Stanza's per-epoch resume file
(<name>.checkpoint.pt, with optimizer state) and its CoNLL logs are removed once training
ends: a run always starts afresh (persist: false).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch

from models.coref.data import CorefDocument, gold_clusters
from models.stanza_coref.convert import convert, sentence_ids
from models.stanza_coref.encoder import (
    EncoderFolder,
    TinyEncoderSettings,
    check_encoder,
    portable,
    prepare_encoder,
)
from tasks.annotation.annotators import stanza_windows as windows
from tasks.core import storage
from tasks.core.checkpoints import jsonable, pick_device
from tasks.core.errors import CorefreproError
from tasks.core.layout import check_write_target
from tasks.core.progress import Progress
from tasks.core.settings import ConfigError, WritePath, bounded, settings_to_dict
from tasks.evaluation.coref import as_metrics, score_coreference
from tasks.training.loop import torch_threads

log = logging.getLogger("corefrepro.train_stanza_coref")

SECTION = "train_stanza_coref"  # Stanza Config's section (saved in the checkpoint), the params key
MODEL_FILE = "model.pt"
EVAL_METRICS = ("muc", "bcub", "ceafe", "mentions")
# state dicts of a Stanza checkpoint that predicting does not need (coref_processor.py)
OPTIMIZER_STATES = frozenset(
    {"bert_optimizer", "general_optimizer", "bert_scheduler", "general_scheduler"}
)


@dataclass
class StanzaConfigSettings:
    """Stanza's coreference Config fields a user sets (stanza/models/coref/config.py). Defaults
    are Stanza's coref_config.toml [DEFAULT] (upstream stanza/models/coref/coref_config.toml)
    and wl_coref.py's; params.yaml gives the CPU-scale values. The paths, the device, the
    encoder (bert_model) and `singletons` (= not drop_singletons) are set by the stage."""

    bert_window_size: int = bounded(512, ge=8)  # subwords per encoder window (<= its positions)
    embedding_size: int = bounded(20, ge=1)
    sp_embedding_size: int = bounded(64, ge=1)
    a_scoring_batch_size: int = bounded(128, ge=1)
    hidden_size: int = bounded(1024, ge=1)  # the anaphoricity scorer's FFNN
    n_hidden_layers: int = bounded(1, ge=0)
    max_span_len: int = bounded(64, ge=1)
    rough_k: int = bounded(50, ge=1)  # antecedents kept per word after rough scoring
    full_pairwise: bool = False
    clusters_starts_are_singletons: bool = True
    bert_finetune: bool = True  # train the encoder too (params.yaml: false on CPU)
    dropout_rate: float = bounded(0.3, ge=0, lt=1)
    learning_rate: float = bounded(3e-4, gt=0)
    bert_learning_rate: float = bounded(1e-6, gt=0)
    bert_finetune_begin_epoch: float = bounded(0.5, ge=0)
    train_epochs: int = bounded(32, ge=1)
    plateau_epochs: int = bounded(0, ge=0)  # 0: never stop early
    bce_loss_weight: float = bounded(0.5, ge=0)
    max_train_len: int = bounded(5000, ge=1)  # longer training documents (subwords) skipped
    lora: bool = False  # LoRA adapters on the encoder (needs peft)
    lora_alpha: int = bounded(128, ge=1)
    lora_rank: int = bounded(64, ge=1)
    lora_dropout: float = bounded(0.1, ge=0, lt=1)
    lora_target_modules: list[str] = field(default_factory=list)
    lora_modules_to_save: list[str] = field(default_factory=list)

    def validate(self, path: str) -> None:
        if self.lora and not self.lora_target_modules:
            raise ConfigError(
                f"{path}.lora_target_modules: empty with lora: true (Stanza's roberta_lora "
                "section: [query, value, output.dense, intermediate.dense])"
            )


@dataclass
class StanzaRun:
    """One training run of Stanza's coreference model: the encoder, Stanza's Config fields, the
    seed and where it runs. The stage's settings section (flows/train_stanza_coref.py) adds the
    corpora it reads."""

    drop_singletons: bool = True  # train without clusters of one mention (CoNLL-2012)
    exclude_singletons: bool = True  # and score without them (train_coref's convention)
    encoder: str = "tiny"  # tiny | minilm | smollm2 | a local directory (encoder.py)
    tiny: TinyEncoderSettings = field(default_factory=TinyEncoderSettings)
    cache_dir: WritePath = "data/cache/pretrained"  # unpacked/converted encoders (not a DVC output)
    seed: int = 1
    device: Literal["cpu", "cuda", "auto"] = "cpu"
    threads: int | None = bounded(1, ge=1)  # torch intra-op threads (None: torch's default)
    eval_splits: list[Literal["dev", "test"]] = field(default_factory=lambda: ["dev", "test"])
    stanza: StanzaConfigSettings = field(default_factory=StanzaConfigSettings)

    def validate(self, path: str) -> None:
        check_encoder(self.encoder)
        if self.encoder == "tiny" and self.stanza.bert_window_size > self.tiny.max_positions:
            raise ConfigError(
                f"{path}.stanza.bert_window_size: {self.stanza.bert_window_size} exceeds "
                f"{path}.tiny.max_positions ({self.tiny.max_positions})"
            )


# --------------------------------------------------------------------------- Stanza's Config


def stanza_config(cfg: StanzaRun, encoder: Path, out_dir: Path,
                  files: Mapping[str, Path], device: str) -> Any:  # fmt: skip
    """Stanza's Config for one training run: cfg.stanza plus the stage's paths and encoder."""
    from stanza.models.coref.config import Config

    return Config(
        section=SECTION,
        data_dir=portable(out_dir / "data"),
        save_dir=portable(out_dir),
        save_name=MODEL_FILE,
        train_data=portable(files["train"]),
        dev_data=portable(files["dev"]),
        test_data=portable(files.get("test", files["dev"])),
        device=device,
        bert_model=portable(encoder),
        singletons=not cfg.drop_singletons,
        use_zeros=False,  # English has no zero anaphora
        tokenizer_kwargs={},
        conll_log_dir=portable(out_dir / "stanza_conll"),
        save_each_checkpoint=False,
        log_norms=False,
        lang_lr_attenuation="",
        lang_lr_weights="",
        **settings_to_dict(cfg.stanza),
    )


def write_stanza_data(splits: Mapping[str, Sequence[CorefDocument]], data_dir: Path
                      ) -> tuple[dict[str, Path], dict[str, dict[str, int]]]:  # fmt: skip
    """data/<split>.json in Stanza's coreference JSON; the conversion counts per split."""
    import json

    files, counts = {}, {}
    for split, docs in splits.items():
        if not docs:
            continue
        converted, counts[split] = convert(docs)
        files[split] = data_dir / f"{split}.json"
        storage.write_text(files[split], json.dumps(converted, ensure_ascii=False))
    return files, counts


# --------------------------------------------------------------------------- training


NO_SPANS = "zero division error because the model predicted no spans"


@contextlib.contextmanager
def _no_spans_said_once(epoch: int) -> Iterator[None]:
    """Stanza's scorer warns once per metric (MUC, B3, CEAFe) and document set when the model
    predicts no spans (an early epoch's, the embedded default's): one line of ours instead."""
    stanza_log = logging.getLogger("stanza")
    said: list[str] = []

    def folded(record: logging.LogRecord) -> bool:
        if NO_SPANS in record.getMessage():
            said.append(record.getMessage().split(" ", 1)[0])
            return False
        return True

    stanza_log.addFilter(folded)
    try:
        yield
    finally:
        stanza_log.removeFilter(folded)
    if said:
        log.info("epoch %d: the model predicted no spans on dev, so %s are 0 (Stanza's %d "
                 "zero-division warnings folded into this line)", epoch,
                 "/".join(dict.fromkeys(said)), len(said))  # fmt: skip


@contextlib.contextmanager
def watched(model: Any, progress: Progress, on_dev: Callable[[int, tuple], None]) -> Iterator[None]:
    """Progress lines and per-epoch dev scores from Stanza's own loop: its tqdm bars are hidden
    outside a terminal (stanza/utils/get_tqdm.py), so this instance's `run` (one call per
    document, training and evaluation) and `evaluate` (once per epoch) report through the
    project's Progress and MLflow. The loop itself is untouched."""
    run, evaluate = model.run, model.evaluate

    @functools.wraps(run)
    def counted(*args: Any, **kwargs: Any) -> Any:
        result = run(*args, **kwargs)  # evaluate() runs once `epochs_trained` counts the epoch
        epoch = model.epochs_trained + int(model.training)
        progress.update(note=f", epoch {epoch}" + ("" if model.training else " (dev)"))
        return result

    @functools.wraps(evaluate)
    def scored(*args: Any, **kwargs: Any) -> tuple:
        with _no_spans_said_once(model.epochs_trained):
            scores = evaluate(*args, **kwargs)
        on_dev(model.epochs_trained, scores)
        return scores

    model.run, model.evaluate = counted, scored
    try:
        yield
    finally:
        del model.run, model.evaluate


def stanza_dev_scores(scores: tuple) -> dict[str, float]:
    """CorefModel.evaluate's tuple, named: its selection rule is span_lea_f1 (scores[1])."""
    return {"stanza_dev_loss": float(scores[0]), "stanza_dev_span_lea_f1": float(scores[1]),
            "stanza_dev_word_lea_f1": float(scores[4]),
            "stanza_dev_span_conll": float(scores[-1])}  # fmt: skip


def fit(cfg: StanzaRun, config: Any, n_docs: int, label: str,
        sink: Callable[[Mapping[str, float], int | None], None] | None) -> list[dict]:  # fmt: skip
    """CorefModel(config).train(): Stanza's loop, seeded as stanza/models/wl_coref.py's train
    mode seeds it (set_random_seed, deterministic cuDNN); the per-epoch dev scores."""
    from stanza.models.common.utils import set_random_seed
    from stanza.models.coref.model import CorefModel
    from stanza.models.wl_coref import deterministic

    windows.install()  # Stanza's own window cutting never ends on a sentence > 2 windows
    set_random_seed(cfg.seed)
    deterministic()
    curve: list[dict] = []

    def on_dev(epoch: int, scores: tuple) -> None:
        curve.append({"epoch": epoch, **stanza_dev_scores(scores)})
        log.info("%s epoch %d: Stanza's dev span LEA F1 %.4f", label, epoch,
                 curve[-1]["stanza_dev_span_lea_f1"])  # fmt: skip
        if sink is not None:
            sink(curve[-1], epoch)

    model = CorefModel(config=config)
    total = n_docs * config.train_epochs
    with Progress(label, total, "docs", logger=log) as progress, watched(model, progress, on_dev):
        model.train()
    return curve


def predict(model: Any, doc: CorefDocument) -> list[list[tuple[int, int]]]:
    """One document's span clusters, with the input the coref processor builds
    (stanza/pipeline/coref_processor.py CorefProcessor.process) from the corpus's words."""
    words = {
        "document_id": doc.doc_id,
        "cased_words": list(doc.tokens),
        "sent_id": sentence_ids(doc),
        "speaker": list(doc.speakers) if doc.speakers else ["_"] * len(doc.tokens),
    }
    with torch.no_grad():
        result = model.run(model.build_doc(words))
    return [[(int(s), int(e)) for s, e in c] for c in result.span_clusters]


def evaluate(path: Path, docs: Sequence[CorefDocument], device: str, *,
             exclude_singletons: bool, label: str) -> dict[str, float]:  # fmt: skip
    """The checkpoint, loaded as the coref processor loads it, scored with the project's CoNLL
    scorer (micro over the documents)."""
    from stanza.models.coref.model import CorefModel

    windows.install()
    model = CorefModel.load_model(str(path), map_location=device, ignore=set(OPTIMIZER_STATES),
                                  config_update={"device": device})  # fmt: skip
    model.training = False
    response = {}
    with Progress(label, len(docs), "docs", logger=log) as progress:
        for doc in docs:
            response[doc.doc_id] = predict(model, doc)
            progress.update()
    scores = score_coreference(gold_clusters(docs), response, metrics=EVAL_METRICS,
                               exclude_singletons=exclude_singletons)  # fmt: skip
    return {**as_metrics(scores), "documents": len(docs)}


def fresh_dir(out_dir: Path) -> Path:
    """out_dir emptied (inside the data roots only): every run starts afresh."""
    target, _ = check_write_target(out_dir)
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    return target


def train_and_evaluate(
    splits: Mapping[str, Sequence[CorefDocument]],
    cfg: StanzaRun,
    out_dir: str | Path,
    *,
    label: str = SECTION,
    log_metrics: Callable[[Mapping[str, float], int | None], None] | None = None,
) -> dict[str, Any]:
    """Convert, prepare the encoder, train with Stanza's loop, score the best checkpoint.

    Writes <out_dir>/{model.pt, data/, encoder/ (tiny)}; returns the metrics."""
    if not splits.get("train") or not splits.get("dev"):
        raise CorefreproError(
            f"{SECTION}: training needs train and dev documents (got "
            f"{len(splits.get('train') or [])} train, {len(splits.get('dev') or [])} dev)"
        )
    started = time.perf_counter()
    out_dir = fresh_dir(Path(out_dir))
    device = str(pick_device(cfg.device))
    with torch_threads(cfg.threads):
        encoder = prepare_encoder(
            cfg.encoder, texts=[" ".join(d.tokens) for d in splits["train"]], tiny=cfg.tiny,
            cache_dir=cfg.cache_dir, out_dir=out_dir, seed=cfg.seed,
        )  # fmt: skip
        _check_window(cfg, encoder)
        files, conversion = write_stanza_data(splits, out_dir / "data")
        config = stanza_config(cfg, encoder.path, out_dir, files, device)
        n_docs = len(splits["train"]) + len(splits["dev"])
        curve = fit(cfg, config, n_docs, label, log_metrics)
        trained_s = time.perf_counter() - started
        _drop_resume_files(out_dir)
        scores = {split: evaluate(out_dir / MODEL_FILE, splits[split], device, label=f"{label} {split}",
                                  exclude_singletons=cfg.exclude_singletons)
                  for split in cfg.eval_splits if splits.get(split)}  # fmt: skip
    return jsonable({
        "encoder": encoder.provenance, "device": device, "seed": cfg.seed,
        "documents": {split: len(docs) for split, docs in splits.items()},
        "conversion": conversion, "stanza_curve": curve,
        "best_epoch": max(curve, key=lambda r: r["stanza_dev_span_lea_f1"])["epoch"] if curve else None,
        **scores, "train_time_s": trained_s, "wall_time_s": time.perf_counter() - started,
    })  # fmt: skip


def _check_window(cfg: StanzaRun, encoder: EncoderFolder) -> None:
    positions = encoder.max_positions
    if positions is not None and cfg.stanza.bert_window_size > positions:
        raise ConfigError(
            f"{SECTION}.stanza.bert_window_size: {cfg.stanza.bert_window_size} exceeds the "
            f"encoder's {positions} positions ({encoder.path})"
        )


def _drop_resume_files(out_dir: Path) -> None:
    """Stanza's last-epoch resume file (optimizer state) and its per-epoch CoNLL logs."""
    for path in out_dir.glob("*.checkpoint.pt"):
        path.unlink()
    shutil.rmtree(out_dir / "stanza_conll", ignore_errors=True)
    if not (out_dir / MODEL_FILE).is_file():
        raise CorefreproError(f"{SECTION}: Stanza's training wrote no {MODEL_FILE} in {out_dir}")


__all__ = [
    "MODEL_FILE",
    "SECTION",
    "StanzaConfigSettings",
    "StanzaRun",
    "evaluate",
    "stanza_config",
    "train_and_evaluate",
]
