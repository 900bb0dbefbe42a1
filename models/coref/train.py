"""Training and evaluation of the E2E coreference model (models/coref/model.py): one plain loop.

Protocol (Lee et al. 2017 §7.1 and their released code; Luo & Glass papers/001 §4.1):
- one document (or random crop of <= max_sentences sentences, L&G: 40) per step;
- Adam, learning rate 1e-3 multiplied by 0.999 every 100 steps (Lee et al.'s code:
  decay_rate 0.999, decay_frequency 100; L&G print "decays 0.001% every 100 steps", which we
  read as the same schedule), gradients clipped to norm 5 (max_gradient_norm);
- dropout 0.2 on hidden layers, 0.5 on word embeddings (lexical dropout);
- model selection on the DEV CoNLL F1 (tasks/evaluation/coref.py, the reference scorer's rules); the
  test split is scored once, at the end, with the best-dev checkpoint;
- CoNLL-2012 convention: clusters of one mention are excluded from key and response
  (exclude_singletons), as the reference scorer is run on CoNLL-2012.

Embeddings: GloVe's text format when `glove_path` names a file or a GloVe release that the
mirror has or the network delivers (coref_data.resolve_vectors; frozen by default, as Lee et
al. keep GloVe fixed), random initialisation (trained) otherwise; which one was used, and why,
is part of the returned metrics ("embeddings", "embeddings_source") and logged to MLflow.

Checkpoints: <out_dir>/best.pt (best dev, what the annotator and k-best lists load) and
<out_dir>/last.pt (also optimizer, schedule and RNG state, for resuming), both written
atomically with the model configuration and vocabulary they were trained under. Loading one
under a different configuration is refused (CheckpointMismatchError names the differences).

Devices: CUDA with autocast (float16 + GradScaler) when available, else CPU in float32.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from models.coref.data import (
    DEFAULT_CORPORA,
    CorefDocument,
    CorefVocab,
    build_vocab,
    crop_document,
    gold_clusters,
    load_pretrained,
    pretrained_words,
    resolve_vectors,
    tensorize,
)
from models.coref.model import CorefConfig, CorefModel
from tasks.annotation.annotators.base import (
    Annotation,
    Annotator,
    Doc,
    check_settings,
    link_queries,
)
from tasks.core import checkpoints as _ckpt
from tasks.core import storage
from tasks.core.checkpoints import (
    CheckpointMismatchError,
    pick_device,
    seed_everything,
)
from tasks.core.checkpoints import (
    config_diff as _diff,
)
from tasks.core.checkpoints import (
    jsonable as _jsonable,
)
from tasks.core.config import with_defaults
from tasks.core.errors import CorefreproError
from tasks.evaluation.coref import as_metrics, score_coreference

log = logging.getLogger("corefrepro.train_coref")

BEST, LAST, CURVE = "best.pt", "last.pt", "curve.json"
EVAL_METRICS = ("muc", "bcub", "ceafe", "mentions")
# Settings of the model that are not CorefConfig fields (they shape the vocabulary/embeddings).
EMBEDDING_DEFAULTS: dict[str, Any] = {
    "glove_path": None,  # GloVe text file, a GloVe name to fetch (coref_data.GLOVE_NAMES), or null
    "freeze_embeddings": None,  # None: frozen with GloVe, trained when random
    "min_count": 1,  # train-word frequency for the vocabulary
}
MODEL_DEFAULTS: dict[str, Any] = {
    **{
        k: v
        for k, v in CorefConfig(vocab_size=2, num_chars=2, num_genres=1).to_dict().items()
        if k not in ("vocab_size", "num_chars", "num_genres")
    },
    **EMBEDDING_DEFAULTS,
}
# Memory-only settings: results do not depend on them, so a checkpoint may be loaded with others.
RUNTIME_KEYS = ("encode_window", "pair_chunk")
TRAIN_DEFAULTS: dict[str, Any] = {
    "epochs": 20,
    "learning_rate": 1e-3,
    "decay_rate": 0.999,
    "decay_frequency": 100,  # optimizer steps
    "max_gradient_norm": 5.0,
    "max_sentences": 40,  # training crop (L&G §4.1)
    "seed": 1,
    "patience": None,  # epochs without a better dev CoNLL F1 before stopping (None: never)
    "exclude_singletons": True,  # CoNLL-2012 scoring convention
    "device": "auto",  # auto | cpu | cuda
    "amp": True,  # float16 autocast on CUDA
    "threads": None,  # torch intra-op threads on CPU (None: leave as is)
    "resume": True,  # continue from <out_dir>/last.pt when present (same configuration)
    "max_steps_per_epoch": None,  # cap documents per epoch (quick runs); None = all
    "log_every_s": 60.0,
}


# --------------------------------------------------------------------------- configuration


def resolve_model_cfg(model_cfg: Mapping[str, Any]) -> dict[str, Any]:
    cfg = with_defaults(MODEL_DEFAULTS, model_cfg, "train_coref model")
    if cfg["freeze_embeddings"] is None:
        cfg["freeze_embeddings"] = cfg["glove_path"] is not None
    cfg["char_filter_widths"] = list(cfg["char_filter_widths"])
    return cfg


def resolve_train_cfg(train_cfg: Mapping[str, Any]) -> dict[str, Any]:
    return with_defaults(TRAIN_DEFAULTS, train_cfg, "train_coref train")


def model_config(mcfg: Mapping[str, Any], vocab: CorefVocab) -> CorefConfig:
    arch = {k: v for k, v in mcfg.items() if k not in EMBEDDING_DEFAULTS}
    return CorefConfig.from_dict(
        {
            **arch,
            "vocab_size": len(vocab.words),
            "num_chars": len(vocab.chars),
            "num_genres": len(vocab.genres),
        }
    )


def checkpoint_config(mcfg: Mapping[str, Any], vocab: CorefVocab) -> dict[str, Any]:
    """What a checkpoint is checked against: the model settings and vocabulary sizes."""
    cfg = {k: v for k, v in model_config(mcfg, vocab).to_dict().items() if k not in RUNTIME_KEYS}
    cfg.update({k: mcfg[k] for k in EMBEDDING_DEFAULTS})
    return cfg


# --------------------------------------------------------------------------- utilities


def save_checkpoint(
    path: str | Path, model: CorefModel, config: Mapping, vocab: CorefVocab, **info: Any
) -> None:
    _ckpt.save_checkpoint(path, model, config, vocab=vocab.to_dict(), **info)


def load_checkpoint(path: str | Path, config: Mapping | None = None) -> dict[str, Any]:
    return _ckpt.load_checkpoint(path, config, train_hint=": flows.train_coref")


def restore(ckpt: Mapping[str, Any], **runtime: Any) -> tuple[CorefModel, CorefVocab]:
    """Model (eval mode, CPU) and vocabulary from a loaded checkpoint; runtime overrides the
    memory-only settings (encode_window, pair_chunk)."""
    unknown = sorted(set(runtime) - set(RUNTIME_KEYS))
    if unknown:
        raise CorefreproError(f"not runtime settings: {unknown} (only {RUNTIME_KEYS})")
    arch = {k: v for k, v in ckpt["config"].items() if k not in EMBEDDING_DEFAULTS}
    model = CorefModel(CorefConfig.from_dict({**arch, **runtime}))
    model.load_state_dict(ckpt["state_dict"])
    return model.eval(), CorefVocab.from_dict(ckpt["vocab"])


# --------------------------------------------------------------------------- evaluation


@torch.no_grad()
def predict(
    model: CorefModel,
    docs: Sequence[CorefDocument],
    vocab: CorefVocab,
    device: torch.device | str = "cpu",
    autocast: Callable[[], Any] = contextlib.nullcontext,
) -> dict[str, list[list[tuple[int, int]]]]:
    """{doc_id: predicted clusters} (whole documents; the model windows long ones)."""
    model.eval()
    out = {}
    for doc in docs:
        with autocast():
            output = model(tensorize(doc, vocab).to(device))
        out[doc.doc_id] = output.clusters()
    return out


def evaluate(
    model: CorefModel,
    docs: Sequence[CorefDocument],
    vocab: CorefVocab,
    *,
    device: torch.device | str = "cpu",
    exclude_singletons: bool = True,
    autocast: Callable[[], Any] = contextlib.nullcontext,
) -> dict[str, float]:
    """MUC, B3, CEAF-e, mention identification and CoNLL F1 (tasks/evaluation/coref.py), micro over
    the documents; plus the number of documents."""
    response = predict(model, docs, vocab, device, autocast)
    scores = score_coreference(
        gold_clusters(docs), response, metrics=EVAL_METRICS, exclude_singletons=exclude_singletons
    )
    return {**as_metrics(scores), "documents": len(docs)}


# --------------------------------------------------------------------------- training


def prepare_vocab(
    mcfg: Mapping[str, Any],
    train_docs: Sequence[CorefDocument],
    other_docs: Sequence[CorefDocument] = (),
) -> tuple[CorefVocab, Any, dict[str, Any]]:
    """(vocabulary, pretrained vectors or None, embeddings info for MLflow)."""
    glove, source = resolve_vectors(mcfg["glove_path"])
    if glove is None and mcfg["glove_path"] is not None:
        log.warning("pretrained vectors: %s", source)
    extra: set[str] = set()
    if glove is not None:
        extra = pretrained_words(glove, {t for d in [*train_docs, *other_docs] for t in d.tokens})
    vocab = build_vocab(train_docs, min_count=int(mcfg["min_count"]), extra_words=extra)
    if glove is None:
        return (
            vocab,
            None,
            {
                "embeddings": "random",
                "embeddings_source": source,
                "embedding_dim": mcfg["embedding_dim"],
            },
        )
    pretrained = load_pretrained(glove, vocab, int(mcfg["embedding_dim"]))
    info = {
        "embeddings": "glove",
        "glove_path": str(glove),
        "embeddings_source": source,
        "embedding_dim": mcfg["embedding_dim"],
        "glove_coverage": round(pretrained.coverage, 6),
        "frozen": bool(mcfg["freeze_embeddings"]),
    }
    return vocab, pretrained, info


# Training settings a run may NOT change when it resumes (epochs may grow; device, threads and
# amp do not change what is learned beyond float noise; resume itself is the switch).
_NOT_RESUME_KEYS = ("epochs", "resume", "device", "threads", "amp")


def _resume_signature(tcfg: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sorted(tcfg.items()) if k not in _NOT_RESUME_KEYS}


def _check_resumable(path: Path, ckpt: Mapping[str, Any], tcfg: Mapping[str, Any]) -> None:
    """A last.pt continues this run only if it was trained under the same training settings
    and has not already passed the requested epochs (fewer epochs = a different run)."""
    saved = ckpt.get("train")
    diffs = [] if saved is None else _diff(saved, _resume_signature(tcfg))
    if ckpt["state"]["epoch"] > int(tcfg["epochs"]):
        diffs.append(f"epochs: {ckpt['state']['epoch']} done > {tcfg['epochs']} requested")
    if diffs:
        raise CheckpointMismatchError(
            f"{path}: trained under other training settings: " + "; ".join(diffs)
        )


def train_and_evaluate(
    train_docs: Sequence[CorefDocument],
    dev_docs: Sequence[CorefDocument],
    test_docs: Sequence[CorefDocument],
    model_cfg: Mapping[str, Any],
    train_cfg: Mapping[str, Any],
    out_dir: str | Path,
    *,
    log_metrics: Callable[[Mapping[str, float], int | None], None] | None = None,
) -> dict[str, Any]:
    """Train on train_docs, select on dev CoNLL F1, score dev and test with the best model.

    Writes <out_dir>/{best.pt,last.pt,curve.json}. log_metrics(metrics, step) receives one
    point of the learning curve per epoch (step = epoch) and the final scores (step None);
    the flow passes MLflow's. Returns the metrics (dev, test, curve, embeddings, timings).
    """
    tcfg = resolve_train_cfg(train_cfg)
    mcfg = resolve_model_cfg(model_cfg)
    if not train_docs or not dev_docs:
        raise CorefreproError(
            f"coreference training needs train and dev documents "
            f"(got {len(train_docs)} train, {len(dev_docs)} dev)"
        )
    threads_before = torch.get_num_threads()
    if tcfg["threads"]:
        torch.set_num_threads(int(tcfg["threads"]))
    try:
        return _train(train_docs, dev_docs, test_docs, mcfg, tcfg, Path(out_dir), log_metrics)
    finally:
        torch.set_num_threads(threads_before)


def _train(
    train_docs: Sequence[CorefDocument],
    dev_docs: Sequence[CorefDocument],
    test_docs: Sequence[CorefDocument],
    mcfg: dict[str, Any],
    tcfg: dict[str, Any],
    out_dir: Path,
    log_metrics: Callable[[Mapping[str, float], int | None], None] | None,
) -> dict[str, Any]:
    started = time.perf_counter()
    seed = int(tcfg["seed"])
    seed_everything(seed)
    device = pick_device(tcfg["device"])
    use_amp = bool(tcfg["amp"]) and device.type == "cuda"

    def autocast() -> Any:
        return torch.autocast(device.type, dtype=torch.float16, enabled=use_amp)

    vocab, pretrained, embeddings = prepare_vocab(mcfg, train_docs, [*dev_docs, *test_docs])
    config = checkpoint_config(mcfg, vocab)
    model = CorefModel(model_config(mcfg, vocab))
    if pretrained is not None:
        model.load_pretrained(pretrained.vectors, pretrained.found, bool(mcfg["freeze_embeddings"]))
    model.to(device)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=float(tcfg["learning_rate"]))
    rate, every = float(tcfg["decay_rate"]), int(tcfg["decay_frequency"])
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: rate ** (step // every))
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    rng = random.Random(seed)

    state = {"epoch": 0, "best_f1": -1.0, "best_epoch": -1, "curve": [], "bad_epochs": 0}
    last_path = out_dir / LAST
    ckpt = None
    if tcfg["resume"] and last_path.exists():
        try:
            ckpt = load_checkpoint(last_path, config)
            _check_resumable(last_path, ckpt, tcfg)
        except CheckpointMismatchError as exc:
            # the settings changed (e.g. dvc repro after a params.yaml edit): this is a new
            # run, not a continuation; last.pt is overwritten after the first epoch
            log.warning("not resuming: %s", exc)
            ckpt = None
    if ckpt is not None:
        model.load_state_dict(ckpt["state_dict"])
        optimizer.load_state_dict(ckpt["optimizer"])
        schedule.load_state_dict(ckpt["schedule"])
        rng.setstate(ckpt["rng"])
        torch.set_rng_state(ckpt["torch_rng"])
        state = ckpt["state"]
        log.info("resuming from %s after epoch %d", last_path, state["epoch"])

    while state["epoch"] < int(tcfg["epochs"]):
        epoch = state["epoch"] + 1
        epoch_start = time.perf_counter()
        model.train()
        order = list(range(len(train_docs)))
        rng.shuffle(order)
        if tcfg["max_steps_per_epoch"]:
            order = order[: int(tcfg["max_steps_per_epoch"])]
        total_loss, last_log = 0.0, time.perf_counter()
        for step, index in enumerate(order, start=1):
            doc = crop_document(train_docs[index], int(tcfg["max_sentences"]), rng)
            with autocast():
                loss = model(tensorize(doc, vocab).to(device)).loss
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(trainable, float(tcfg["max_gradient_norm"]))
            scaler.step(optimizer)
            scaler.update()
            schedule.step()
            total_loss += float(loss.detach())
            if time.perf_counter() - last_log > float(tcfg["log_every_s"]):
                last_log = time.perf_counter()
                log.info(
                    "epoch %d: %d/%d documents, mean loss %.3f",
                    epoch,
                    step,
                    len(order),
                    total_loss / step,
                )
        train_seconds = time.perf_counter() - epoch_start
        dev = evaluate(
            model, dev_docs, vocab, device=device,
            exclude_singletons=bool(tcfg["exclude_singletons"]), autocast=autocast,
        )  # fmt: skip
        point = {
            "epoch": epoch,
            "train_loss": total_loss / max(len(order), 1),
            "dev_conll_f1": dev["conll_f1"],
            "dev_muc_f1": dev["muc_f1"],
            "dev_bcub_f1": dev["bcub_f1"],
            "dev_ceafe_f1": dev["ceafe_f1"],
            "dev_mentions_f1": dev["mentions_f1"],
            "learning_rate": schedule.get_last_lr()[0],
            "train_seconds": train_seconds,
            "epoch_seconds": time.perf_counter() - epoch_start,
        }
        state["curve"].append(point)
        state["epoch"] = epoch
        if log_metrics is not None:
            log_metrics({k: v for k, v in point.items() if k != "epoch"}, epoch)
        log.info(
            "epoch %d: loss %.3f, dev CoNLL F1 %.2f (%.0fs)",
            epoch, point["train_loss"], 100 * dev["conll_f1"], point["epoch_seconds"],
        )  # fmt: skip
        if dev["conll_f1"] > state["best_f1"]:
            state.update(best_f1=dev["conll_f1"], best_epoch=epoch, bad_epochs=0)
            save_checkpoint(
                out_dir / BEST, model, config, vocab, epoch=epoch, dev=dev, embeddings=embeddings
            )
        else:
            state["bad_epochs"] += 1
        save_checkpoint(
            last_path, model, config, vocab,
            optimizer=optimizer.state_dict(), schedule=schedule.state_dict(),
            rng=rng.getstate(), torch_rng=torch.get_rng_state(), state=state,
            train=_resume_signature(tcfg),
        )  # fmt: skip
        storage.write_json(out_dir / CURVE, _jsonable(state["curve"]))
        if tcfg["patience"] is not None and state["bad_epochs"] >= int(tcfg["patience"]):
            log.info("no dev improvement for %d epochs: stopping", state["bad_epochs"])
            break

    best, _ = restore(load_checkpoint(out_dir / BEST, config))
    best.to(device)
    scoring = {"device": device, "exclude_singletons": bool(tcfg["exclude_singletons"])}
    dev = evaluate(best, dev_docs, vocab, autocast=autocast, **scoring)
    test = evaluate(best, test_docs, vocab, autocast=autocast, **scoring) if test_docs else {}
    metrics = {
        "encoder": mcfg["encoder"],
        "seed": seed,
        "dev": dev,
        "test": test,
        "best_epoch": state["best_epoch"],
        "epochs_run": state["epoch"],
        "train_documents": len(train_docs),
        "vocab_size": len(vocab.words),
        "device": str(device),
        "wall_time_s": time.perf_counter() - started,
        **embeddings,
    }
    if log_metrics is not None:
        final = {f"final_dev_{k}": v for k, v in dev.items()}
        final.update({f"final_test_{k}": v for k, v in test.items()})
        log_metrics(final, None)
    return _jsonable(metrics)


# --------------------------------------------------------------------------- the annotator

ANNOTATOR_SETTINGS: dict[str, Any] = {
    "checkpoint": None,  # required: a best.pt written by train_and_evaluate
    "name": "model",  # the mentions table's annotator column
    "device": "cpu",  # cpu | cuda | auto
    "expect": {},  # model settings the checkpoint must have (e.g. {encoder: asl})
    "encode_window": 64,  # sentences per encoder window (memory only)
    "pair_chunk": 256,
    # torch intra-op threads of the process (None: leave as is). The stage's workers are the
    # parallelism: 2 workers x 1 thread fill 2 cores, 2 x torch's default would oversubscribe.
    "threads": 1,
}


class CorefAnnotator(Annotator):
    """The trained model as the `model` annotator (tasks/annotation/annotators/model.py plug-in).

    Predicted clusters become the document's mentions; queries are linked to them with the
    generic string linker (tasks/annotation/annotators/base.py link_queries).
    """

    def __init__(self, model: CorefModel, vocab: CorefVocab, name: str, device: torch.device):
        self.model = model.to(device).eval()
        self.vocab = vocab
        self.name = name
        self.device = device

    def annotate_doc(self, doc: Doc) -> Annotation:
        document = CorefDocument(
            doc.doc_id, "", list(doc.tokens), list(doc.sentence_starts), doc.genre, doc.speakers
        )
        clusters = predict(self.model, [document], self.vocab, self.device)[doc.doc_id]
        mentions = [(s, e, c) for c, cluster in enumerate(clusters) for s, e in cluster]
        counts = {"model_clusters": len(clusters), "model_mentions": len(mentions)}
        return Annotation(mentions, link_queries(doc, mentions), counts)


def load_annotator(cfg: Mapping[str, Any]) -> CorefAnnotator:
    """Factory for params.yaml annotate.annotators.model.factory = models.coref.train:load_annotator.

    cfg: {"checkpoint": path, **settings} (ANNOTATOR_SETTINGS); `expect` entries are checked
    against the checkpoint's configuration (CheckpointMismatchError on any difference).
    """
    cfg = {**ANNOTATOR_SETTINGS, **check_settings("model", dict(cfg), ANNOTATOR_SETTINGS)}
    if not cfg["checkpoint"]:
        raise CorefreproError(
            "annotator 'model': no checkpoint given (annotate.annotators.model.checkpoint, "
            "e.g. artifacts/coref/asl/seed1/best.pt)"
        )
    ckpt = load_checkpoint(cfg["checkpoint"])
    expect = dict(cfg["expect"] or {})
    if expect:
        check_expected(cfg["checkpoint"], ckpt["config"], expect)
    model, vocab = restore(ckpt, encode_window=cfg["encode_window"], pair_chunk=cfg["pair_chunk"])
    if cfg["threads"]:
        torch.set_num_threads(int(cfg["threads"]))
    return CorefAnnotator(model, vocab, str(cfg["name"]), pick_device(cfg["device"]))


def check_expected(path: str | Path, saved: Mapping, expect: Mapping) -> None:
    """Refuse a checkpoint whose configuration differs from `expect` on any key it names."""
    diffs = _diff({k: saved.get(k, "<absent>") for k in expect}, dict(expect))
    if diffs:
        raise CheckpointMismatchError(
            f"{path}: checkpoint was trained under a different configuration: " + "; ".join(diffs)
        )


# --------------------------------------------------------------------------- the DVC stage
# params.yaml train_coref: corpora, drop_singletons, seeds, model (shared model settings),
# encoders {name: model overrides}, train (TRAIN_DEFAULTS keys).


STAGE_DEFAULTS: dict[str, Any] = {
    "corpora": list(DEFAULT_CORPORA),
    "drop_singletons": True,
    "seeds": [1],
    "model": {},
    "encoders": {"baseline": {}, "lsl": {}, "asl": {}},
    "train": {},
}


def settings() -> dict[str, Any]:
    from tasks.core.config import params

    return {**STAGE_DEFAULTS, **dict(params("train_coref") or {})}


def artifact_dir(encoder: str, seed: int) -> Path:
    from tasks.core.config import resolve_path

    return resolve_path("artifacts/coref") / encoder / f"seed{seed}"


def metrics_path(encoder: str) -> Path:
    from tasks.core.config import resolve_path

    return resolve_path("metrics/coref") / f"{encoder}.json"


def encoder_model_cfg(cfg: Mapping[str, Any], encoder: str) -> dict[str, Any]:
    encoders = cfg.get("encoders") or {}
    if encoder not in encoders:
        raise CorefreproError(
            f"params.yaml train_coref.encoders: no '{encoder}'; known: {sorted(encoders)}"
        )
    return {"encoder": encoder, **(cfg.get("model") or {}), **(encoders[encoder] or {})}


def train_seed(
    encoder: str,
    seed: int,
    splits: Mapping[str, Sequence[CorefDocument]],
    cfg: Mapping[str, Any],
    *,
    track: bool = True,
) -> dict[str, Any]:
    """One seed of one encoder: train_and_evaluate under its MLflow run; metrics.json beside
    the checkpoints in artifacts/coref/<encoder>/seed<k>/."""
    model_cfg = encoder_model_cfg(cfg, encoder)
    train_cfg = {**(cfg.get("train") or {}), "seed": int(seed)}
    dataset = "+".join(cfg["corpora"])
    out_dir = artifact_dir(encoder, seed)
    run_params = {
        "model": resolve_model_cfg(model_cfg),
        "train": resolve_train_cfg(train_cfg),
        "corpora": list(cfg["corpora"]),
        "drop_singletons": cfg["drop_singletons"],
        "documents": {split: len(docs) for split, docs in splits.items()},
    }
    if not track:
        metrics = train_and_evaluate(
            splits["train"], splits["dev"], splits["test"], model_cfg, train_cfg, out_dir
        )
    else:
        import mlflow

        from tasks.core.tracking import tracked_run

        def log_metrics(values: Mapping[str, float], step: int | None) -> None:
            finite = {k: float(v) for k, v in values.items() if _finite_number(v)}
            mlflow.log_metrics(finite, step=step)

        with tracked_run("coref", encoder, dataset, seed=int(seed), run_params=run_params):
            metrics = train_and_evaluate(
                splits["train"], splits["dev"], splits["test"], model_cfg, train_cfg, out_dir,
                log_metrics=log_metrics,
            )  # fmt: skip
            recorded = ("embeddings", "embeddings_source", "device")
            mlflow.log_params({k: str(metrics[k])[:6000] for k in recorded if k in metrics})
    metrics["dataset"] = dataset
    storage.write_json(out_dir / "metrics.json", metrics)
    return metrics


def _finite_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def summarize(encoder: str, results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """metrics/coref/<encoder>.json: mean and spread over seeds of the dev and test scores,
    the seed with the best dev CoNLL F1, and each seed's numbers."""
    if not results:
        raise CorefreproError(f"{encoder}: no seed was trained")
    keys = ("conll_f1", "muc_f1", "bcub_f1", "ceafe_f1", "mentions_f1")

    def spread(split: str, key: str) -> dict[str, float | None]:
        values = [r[split][key] for r in results if r.get(split) and r[split].get(key) is not None]
        if not values:
            return {"mean": None, "std": None}
        return {"mean": float(np.mean(values)), "std": float(np.std(values))}

    chosen = max(results, key=lambda r: (r["dev"]["conll_f1"], -r["seed"]))
    out = {
        "encoder": encoder,
        "dataset": chosen.get("dataset"),
        "seeds": len(results),
        "embeddings": chosen.get("embeddings"),
        "dev": {k: spread("dev", k) for k in keys},
        "test": {k: spread("test", k) for k in keys},
        "selected_seed": chosen["seed"],
        "selected": {"dev": chosen["dev"], "test": chosen["test"]},
        "wall_time_s": sum(r["wall_time_s"] for r in results),
        "per_seed": {
            str(r["seed"]): {
                "dev_conll_f1": r["dev"]["conll_f1"],
                "test_conll_f1": (r["test"] or {}).get("conll_f1"),
                "best_epoch": r["best_epoch"],
                "epochs_run": r["epochs_run"],
                "wall_time_s": r["wall_time_s"],
            }
            for r in results
        },
    }
    return _jsonable(out)


__all__ = [
    "MODEL_DEFAULTS",
    "TRAIN_DEFAULTS",
    "CheckpointMismatchError",
    "CorefAnnotator",
    "checkpoint_config",
    "encoder_model_cfg",
    "evaluate",
    "load_annotator",
    "load_checkpoint",
    "predict",
    "prepare_vocab",
    "restore",
    "save_checkpoint",
    "settings",
    "summarize",
    "train_and_evaluate",
    "train_seed",
]
