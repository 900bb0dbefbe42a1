"""Training and evaluation of the E2E coreference model (models/coref/model.py) through the one
training loop (tasks/training/loop.py): CorefRecipe is this family's part of it.

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

A library (issue #54.4): it takes settings and documents as arguments, reads no params.yaml,
knows no output path and logs nothing to MLflow; the stage train_coref (its settings section,
plan, outputs and FAMILY) is flows/train_coref.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any

import torch

from models.coref.data import (
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
from models.coref.features import EXTRACTOR_KEY, FeatureSpec, WordFeatures
from models.coref.features import SETTING as FEATURES_SETTING
from models.coref.model import CorefConfig, CorefModel
from models.coref.stacked import SeedStreams, StackedCoref
from tasks.core import checkpoints as _ckpt
from tasks.core.checkpoints import (
    CheckpointMismatchError,
    jsonable,
    seed_everything,
)
from tasks.core.errors import CorefreproError
from tasks.core.settings import bounded, parse_settings, settings_to_dict
from tasks.evaluation.coref import as_metrics, score_coreference
from tasks.training.loop import (
    BEST,
    HISTORY,
    LAST,
    LoopSettings,
    Precision,
    Recipe,
    StepOutput,
    fit,
    fit_lanes,
    load_best,
    torch_threads,
)

log = logging.getLogger("corefrepro.train_coref")

EVAL_METRICS = ("muc", "bcub", "ceafe", "mentions")


@dataclass
class CorefEmbeddings:
    """Settings of the model that are not CorefConfig fields (vocabulary and embeddings)."""

    glove_path: str | None = None  # GloVe text file, a GloVe name (data.GLOVE_NAMES), or null
    freeze_embeddings: bool | None = None  # None: frozen with GloVe, trained when random
    min_count: int = bounded(1, ge=1)  # train-word frequency for the vocabulary
    # with lm_features: read the lm_features stage's files (true), or run the LM live on each
    # document (false: the GPU path, no cache needed); the features are the same either way
    lm_cache: bool = True


# from the data, not params.yaml: the vocabulary sizes and the LM features' layers and dim
_VOCAB_FIELDS = ("vocab_size", "num_chars", "num_genres", "lm_layers", "lm_dim")
# params.yaml train_coref.model (+ encoders.<name>): CorefConfig's fields but the vocabulary
# sizes, plus the embedding settings; parsed strictly (a typo is refused, with the key path)
CorefModelSettings = make_dataclass(
    "CorefModelSettings",
    [(f.name, f.type, field(default=f.default, metadata=f.metadata)) for f in fields(CorefConfig)
     if f.name not in _VOCAB_FIELDS]
    + [(f.name, f.type, field(default=f.default, metadata=f.metadata))
       for f in fields(CorefEmbeddings)],
)  # fmt: skip
CorefModelSettings.__module__ = __name__  # its annotations resolve here (builtins only)
EMBEDDING_DEFAULTS: dict[str, Any] = settings_to_dict(CorefEmbeddings())
# Memory-only settings: results do not depend on them, so a checkpoint may be loaded with others.
RUNTIME_KEYS = ("encode_window", "pair_chunk")
# How the LM features are obtained, not what the model is: not in the checkpoint's config.
SOURCE_KEYS = ("lm_cache",)


@dataclass
class CorefTrain(LoopSettings):
    """params.yaml train_coref.train (Lee et al. 2017 §7.1, their released code; L&G §4.1)."""

    epochs: int = 20
    patience: int | None = None  # epochs without a better dev CoNLL F1 (None: never stop)
    lr: float = bounded(1e-3, gt=0)
    decay_rate: float = bounded(
        0.999, gt=0, le=1
    )  # learning rate x decay_rate every decay_frequency steps
    decay_frequency: int = bounded(100, ge=1)  # optimizer steps
    clip: float = 5.0  # max gradient norm
    max_sentences: int = bounded(40, ge=1)  # training crop (L&G §4.1)
    exclude_singletons: bool = True  # CoNLL-2012 scoring convention
    resume: bool = True  # continue from <out_dir>/last.pt when its fingerprint matches
    # train the stage's seeds as one computation (models/coref/stacked.py); each seed's result
    # is the one it gets alone (to float tolerance), so this is a run-only setting
    seeds_stacked: bool = False


# --------------------------------------------------------------------------- configuration


def resolve_model(model_cfg: Mapping[str, Any] | CorefModelSettings) -> CorefModelSettings:
    """The one CorefModelSettings a run builds from: parsed strictly (a typo refused with
    its key path), `freeze_embeddings` null resolved (frozen with GloVe vectors)."""
    cfg = model_cfg if isinstance(model_cfg, CorefModelSettings) else parse_settings(
        CorefModelSettings, model_cfg, "train_coref model")  # fmt: skip
    frozen = cfg.glove_path is not None if cfg.freeze_embeddings is None else cfg.freeze_embeddings
    return dataclasses.replace(cfg, freeze_embeddings=frozen,
                               char_filter_widths=list(cfg.char_filter_widths))  # fmt: skip


def _values(mcfg: CorefModelSettings, keys: Sequence[str] | None = None) -> dict[str, Any]:
    """The model settings' values by name (all, or *keys*), for the architecture's config."""
    names = [f.name for f in fields(mcfg)] if keys is None else list(keys)
    return {k: getattr(mcfg, k) for k in names}


def resolve_train_cfg(train_cfg: CorefTrain | Mapping[str, Any]) -> CorefTrain:
    """The typed settings as they are, a mapping of CorefTrain keys parsed (tests, benches)."""
    if isinstance(train_cfg, CorefTrain):
        return train_cfg
    return parse_settings(CorefTrain, train_cfg, "train_coref train")


def model_config(
    mcfg: CorefModelSettings, vocab: CorefVocab, spec: FeatureSpec | None = None
) -> CorefConfig:
    """The architecture: the model settings (resolve_model), the vocabulary sizes and, with
    lm_features, the features' layers and dim (`spec`, from the features the run reads)."""
    arch = {k: v for k, v in _values(mcfg).items() if k not in EMBEDDING_DEFAULTS}
    if mcfg.lm_features is not None:
        if spec is None or spec.encoder != mcfg.lm_features:
            raise CorefreproError(f"{FEATURES_SETTING}={mcfg.lm_features!r}: no features of "
                                  f"that encoder given (got {spec})")  # fmt: skip
        arch.update(lm_layers=list(spec.layers), lm_dim=spec.dim)
    return CorefConfig.from_dict(
        {
            **arch,
            "vocab_size": len(vocab.words),
            "num_chars": len(vocab.chars),
            "num_genres": len(vocab.genres),
        }
    )


def checkpoint_config(
    mcfg: CorefModelSettings, vocab: CorefVocab, features: WordFeatures | None = None
) -> dict[str, Any]:
    """What a checkpoint is checked against: the model settings, vocabulary sizes and (only
    with lm_features, so a model without keeps its bytes) the features' encoder/layers/dim
    and how they were computed (EXTRACTOR_KEY: what the annotator rebuilds them from)."""
    spec = features.spec if features is not None else None
    cfg = {
        k: v for k, v in model_config(mcfg, vocab, spec).to_dict().items() if k not in RUNTIME_KEYS
    }
    cfg.update(_values(mcfg, [k for k in EMBEDDING_DEFAULTS if k not in SOURCE_KEYS]))
    if features is not None and mcfg.lm_features is not None:
        cfg[EXTRACTOR_KEY] = dict(features.recorded)
    return cfg


# --------------------------------------------------------------------------- utilities


def load_checkpoint(path: str | Path, config: Mapping | None = None) -> dict[str, Any]:
    return _ckpt.load_checkpoint(path, config, train_hint=": flows.train_coref")


def restore(ckpt: Mapping[str, Any], **runtime: Any) -> tuple[CorefModel, CorefVocab]:
    """Model (eval mode, CPU) and vocabulary from a loaded checkpoint; runtime overrides the
    memory-only settings (encode_window, pair_chunk)."""
    unknown = sorted(set(runtime) - set(RUNTIME_KEYS))
    if unknown:
        raise CorefreproError(f"not runtime settings: {unknown} (only {RUNTIME_KEYS})")
    arch = {k: v for k, v in ckpt["config"].items()
            if k not in EMBEDDING_DEFAULTS and k != EXTRACTOR_KEY}  # fmt: skip
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
    features: WordFeatures | None = None,
) -> dict[str, list[list[tuple[int, int]]]]:
    """{doc_id: predicted clusters} (whole documents; the model windows long ones); `features`:
    the LM features of a model trained on them (models/coref/features.py)."""
    model.eval()
    out = {}
    for doc in docs:
        with autocast():
            output = model(tensorize(doc, vocab, features).to(device))
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
    features: WordFeatures | None = None,
) -> dict[str, float]:
    """MUC, B3, CEAF-e, mention identification and CoNLL F1 (tasks/evaluation/coref.py), micro over
    the documents; plus the number of documents."""
    response = predict(model, docs, vocab, device, autocast, features)
    scores = score_coreference(
        gold_clusters(docs), response, metrics=EVAL_METRICS, exclude_singletons=exclude_singletons
    )
    return {**as_metrics(scores), "documents": len(docs)}


# --------------------------------------------------------------------------- training


def prepare_vocab(
    mcfg: CorefModelSettings,
    train_docs: Sequence[CorefDocument],
    other_docs: Sequence[CorefDocument] = (),
    vectors: tuple[Path | None, str] | None = None,
) -> tuple[CorefVocab, Any, dict[str, Any]]:
    """(vocabulary, pretrained vectors or None, embeddings info for MLflow); `vectors`: the
    stage's resolve_vectors of glove_path (with download settings and mirror), else resolved
    here with the library's defaults."""
    glove, source = vectors if vectors is not None else resolve_vectors(mcfg.glove_path)
    if glove is None and mcfg.glove_path is not None:
        log.warning("pretrained vectors: %s", source)
    extra: set[str] = set()
    if glove is not None:
        extra = pretrained_words(glove, {t for d in [*train_docs, *other_docs] for t in d.tokens})
    vocab = build_vocab(train_docs, min_count=int(mcfg.min_count), extra_words=extra)
    if glove is None:
        return (
            vocab,
            None,
            {
                "embeddings": "random",
                "embeddings_source": source,
                "embedding_dim": mcfg.embedding_dim,
            },
        )
    pretrained = load_pretrained(glove, vocab, int(mcfg.embedding_dim))
    info = {
        "embeddings": "glove",
        "glove_path": str(glove),
        "embeddings_source": source,
        "embedding_dim": mcfg.embedding_dim,
        "glove_coverage": round(pretrained.coverage, 6),
        "frozen": bool(mcfg.freeze_embeddings),
    }
    return vocab, pretrained, info


def decayed_adam(model: torch.nn.Module, tcfg: CorefTrain) -> tuple[torch.optim.Optimizer, Any]:
    """Adam over the trainable parameters, learning rate x decay_rate every decay_frequency
    steps (Lee et al.'s released code)."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=tcfg.lr)
    rate, every = tcfg.decay_rate, tcfg.decay_frequency
    return optimizer, torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: rate ** (step // every)
    )


class CorefRecipe(Recipe):
    """The coreference model's part of the shared loop (tasks/training/loop.py): one
    (cropped) document per step in a seeded order, Adam with Lee et al.'s step decay, the
    marginal log-likelihood of gold antecedents, dev CoNLL F1 as the selection rule."""

    log_keys = ("conll_f1", "mentions_f1")

    def __init__(self, splits, mcfg: CorefModelSettings | Mapping[str, Any], tcfg: CorefTrain, vocab, pretrained,
                 features: WordFeatures | None = None):  # fmt: skip
        self.splits, self.mcfg, self.tcfg, self.vocab = splits, resolve_model(mcfg), tcfg, vocab
        self.features = features
        self.spec = features.spec if features is not None else None
        self.model = CorefModel(model_config(self.mcfg, vocab, self.spec))
        if pretrained is not None:
            self.model.load_pretrained(
                pretrained.vectors, pretrained.found, bool(self.mcfg.freeze_embeddings)
            )
        self.rng = random.Random(tcfg.seed)
        self.info: dict[str, Any] = {}

    def optimizer(self) -> tuple[torch.optim.Optimizer, Any]:
        return decayed_adam(self.model, self.tcfg)

    def batches(self, epoch: int) -> Iterator[CorefDocument]:
        train = self.splits["train"]
        order = list(range(len(train)))
        self.rng.shuffle(order)
        for index in order:  # the loop stops after train.max_steps_per_epoch documents
            yield crop_document(train[index], self.tcfg.max_sentences, self.rng)

    def steps_per_epoch(self) -> int:
        return len(self.splits["train"])

    def step(self, doc: CorefDocument, device: torch.device) -> StepOutput:
        loss = self.model(tensorize(doc, self.vocab, self.features).to(device)).loss
        return StepOutput(loss, {"loss_sum": float(loss.detach()), "loss_n": 1})

    def evaluate(self, split: str, precision: Precision) -> dict[str, float]:
        return evaluate(self.model, self.splits[split], self.vocab, device=precision.device,
                        exclude_singletons=self.tcfg.exclude_singletons,
                        autocast=precision.autocast, features=self.features)  # fmt: skip

    def selection(self, dev: Mapping[str, float]) -> tuple[tuple, float]:
        return (dev["conll_f1"],), dev["conll_f1"]

    def checkpoint_config(self) -> dict[str, Any]:
        return checkpoint_config(self.mcfg, self.vocab, self.features)

    def checkpoint_info(self) -> dict[str, Any]:
        return {"vocab": self.vocab.to_dict(), **self.info}

    def fingerprint(self) -> dict[str, Any]:
        return {"config": self.checkpoint_config(), "data": documents_fingerprint(self.splits)}

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.getstate()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.rng.setstate(state["rng"])


class StackedCorefRecipe(Recipe):
    """CorefRecipe for K seeds trained as one computation (models/coref/stacked.py), one lane
    of the loop per seed (tasks/training/loop.py fit_lanes). Seed k is one CorefRecipe built
    as a separate run builds it (seeded, then its model, then its document order and crops),
    with its own dropout stream, clipping, selection and best checkpoint."""

    log_keys = CorefRecipe.log_keys

    def __init__(self, splits, mcfg: CorefModelSettings | Mapping[str, Any], tcfgs: Sequence[CorefTrain], vocab,
                 pretrained, features: WordFeatures | None = None) -> None:  # fmt: skip
        differ = {k for t in tcfgs for k, v in settings_to_dict(t).items()
                  if k != "seed" and v != getattr(tcfgs[0], k)}  # fmt: skip
        if differ:
            raise CorefreproError(f"stacked seeds must share every setting but the seed: {differ}")
        self.recipes, states = [], []
        for t in tcfgs:
            seed_everything(t.seed)
            self.recipes.append(CorefRecipe(splits, mcfg, t, vocab, pretrained, features))
            states.append(SeedStreams.capture())  # where the seed's dropout stream starts
        self.model = StackedCoref([r.model for r in self.recipes], SeedStreams(states))
        self.vocab, self.lanes, self.features = vocab, len(tcfgs), features

    def optimizer(self) -> tuple[torch.optim.Optimizer, Any]:
        return decayed_adam(self.model, self.recipes[0].tcfg)  # element-wise: per seed

    def batches(self, epoch: int) -> Iterator[tuple[CorefDocument, ...]]:
        return zip(*(r.batches(epoch) for r in self.recipes), strict=True)

    def steps_per_epoch(self) -> int:
        return self.recipes[0].steps_per_epoch()

    def step(self, docs: Sequence[CorefDocument], device: torch.device) -> StepOutput:
        outputs = self.model([tensorize(d, self.vocab, self.features).to(device) for d in docs])
        losses = [out.loss for out in outputs]
        lane_stats = [{"loss_sum": float(loss.detach()), "loss_n": 1} for loss in losses]
        return StepOutput(torch.stack(losses).sum(), {}, lane_stats)

    def clip_gradients(self, clip: float, params: list[torch.nn.Parameter]) -> None:
        """Each seed's gradient norm clipped on its own, as clip_grad_norm_ does alone."""
        for r in self.recipes:
            torch.nn.utils.clip_grad_norm_([p for p in r.model.parameters() if p.requires_grad],
                                           clip)  # fmt: skip

    def evaluate(self, split: str, precision: Precision) -> list[dict[str, float]]:
        return [r.evaluate(split, precision) for r in self.recipes]

    def selection(self, dev: Mapping[str, float]) -> tuple[tuple, float]:
        return self.recipes[0].selection(dev)

    def lane_model(self, k: int) -> torch.nn.Module:
        return self.recipes[k].model

    def checkpoint_config(self) -> dict[str, Any]:
        return self.recipes[0].checkpoint_config()

    def checkpoint_info(self, k: int) -> dict[str, Any]:
        return self.recipes[k].checkpoint_info()

    def fingerprint(self) -> dict[str, Any]:
        return {**self.recipes[0].fingerprint(), "seeds": [r.tcfg.seed for r in self.recipes]}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        return None


def documents_fingerprint(splits: Mapping[str, Sequence[CorefDocument]]) -> str:
    """sha256 of the documents a run trains and selects on (tokens and gold clusters)."""
    digest = hashlib.sha256()
    for split in sorted(splits):
        for doc in splits[split]:
            blob = [split, doc.doc_id, list(doc.tokens), [list(map(list, c)) for c in doc.clusters]]
            digest.update(json.dumps(blob).encode())
    return digest.hexdigest()


def train_and_evaluate(
    train_docs: Sequence[CorefDocument],
    dev_docs: Sequence[CorefDocument],
    test_docs: Sequence[CorefDocument],
    model_cfg: Mapping[str, Any],
    train_cfg: CorefTrain | Mapping[str, Any],
    out_dir: str | Path,
    *,
    log_metrics: Callable[[Mapping[str, float], int | None], None] | None = None,
    features: WordFeatures | None = None,
    vectors: tuple[Path | None, str] | None = None,
) -> dict[str, Any]:
    """Train on train_docs, select on dev CoNLL F1, score dev and test with the best model.

    Writes <out_dir>/{best.pt,last.pt,history.json}. log_metrics(metrics, step) receives one
    point of the learning curve per epoch (step = epoch) and the final scores (step None);
    the stage passes MLflow's. `features`: the LM features of the documents, required with
    model setting lm_features (models/coref/features.py); `vectors`: glove_path resolved
    (prepare_vocab). Returns the metrics (dev, test, curve, embeddings, timings).
    """
    tcfg = resolve_train_cfg(train_cfg)
    mcfg = resolve_model(model_cfg)
    started = time.perf_counter()
    splits = _splits(train_docs, dev_docs, test_docs)
    with torch_threads(tcfg.threads):
        seed_everything(tcfg.seed)
        vocab, pretrained, embeddings = prepare_vocab(mcfg, train_docs, [*dev_docs, *test_docs],
                                                      vectors)  # fmt: skip
        embeddings.update(features_info(mcfg, features))
        recipe = CorefRecipe(splits, mcfg, tcfg, vocab, pretrained, features)
        recipe.info = {"embeddings": embeddings}
    result = fit(recipe, tcfg, out_dir, name=f"{mcfg.encoder} seed {tcfg.seed}",
                 log_metrics=log_metrics)  # fmt: skip
    return _final(recipe, result, embeddings, started, log_metrics)


def train_and_evaluate_stacked(
    train_docs: Sequence[CorefDocument],
    dev_docs: Sequence[CorefDocument],
    test_docs: Sequence[CorefDocument],
    model_cfg: Mapping[str, Any],
    train_cfgs: Sequence[CorefTrain | Mapping[str, Any]],
    out_dirs: Sequence[str | Path],
    *,
    log_metrics: Sequence[Callable[[Mapping[str, float], int | None], None] | None] | None = None,
    features: WordFeatures | None = None,
    vectors: tuple[Path | None, str] | None = None,
) -> list[dict[str, Any]]:
    """train_and_evaluate for several seeds (train_cfgs differing only in seed) trained as one
    computation (StackedCorefRecipe): each seed's out_dir, curve and metrics as if alone."""
    tcfgs = [resolve_train_cfg(t) for t in train_cfgs]
    mcfg = resolve_model(model_cfg)
    started = time.perf_counter()
    splits = _splits(train_docs, dev_docs, test_docs)
    with torch_threads(tcfgs[0].threads):
        vocab, pretrained, embeddings = prepare_vocab(mcfg, train_docs, [*dev_docs, *test_docs],
                                                      vectors)  # fmt: skip
        embeddings.update(features_info(mcfg, features))
        recipe = StackedCorefRecipe(splits, mcfg, tcfgs, vocab, pretrained, features)
        for r in recipe.recipes:
            r.info = {"embeddings": embeddings}
    sinks = list(log_metrics or [None] * len(tcfgs))
    names = [f"{mcfg.encoder} seed {t.seed} (stacked)" for t in tcfgs]
    loop = dataclasses.replace(tcfgs[0], resume=False)  # lanes do not resume
    fits = fit_lanes(recipe, loop, list(out_dirs), names=names, log_metrics=sinks)
    results = []
    for seed_recipe, result, sink in zip(recipe.recipes, fits, sinks, strict=True):
        metrics = _final(seed_recipe, result, embeddings, started, sink)
        metrics["stacked_with"] = [t.seed for t in tcfgs]
        results.append(metrics)
    return results


def features_info(mcfg: CorefModelSettings, features: WordFeatures | None) -> dict[str, Any]:
    """The LM features a run reads, for its metrics and MLflow ({} for a model without)."""
    if mcfg.lm_features is None:
        return {}
    if features is None:
        raise CorefreproError(f"{FEATURES_SETTING}={mcfg.lm_features!r}: the run was given no "
                              "features (models/coref/features.py training_features)")  # fmt: skip
    spec = features.spec
    return {"lm_features": {"encoder": spec.encoder, "layers": list(spec.layers), "dim": spec.dim,
                            "cache": bool(mcfg.lm_cache)}}  # fmt: skip


def _splits(train_docs, dev_docs, test_docs) -> dict[str, Sequence[CorefDocument]]:
    if not train_docs or not dev_docs:
        raise CorefreproError(
            f"coreference training needs train and dev documents "
            f"(got {len(train_docs)} train, {len(dev_docs)} dev)"
        )
    return {"train": train_docs, "dev": dev_docs, "test": test_docs}


def _final(recipe: CorefRecipe, result, embeddings, started: float, log_metrics) -> dict:
    """The best checkpoint scored on dev and test (once), as the seed's metrics."""
    tcfg = recipe.tcfg
    with torch_threads(tcfg.threads):
        load_best(result, recipe)
        dev = recipe.evaluate("dev", result.precision)
        test = recipe.evaluate("test", result.precision) if recipe.splits["test"] else {}
    metrics = {
        "encoder": recipe.mcfg.encoder,
        "seed": tcfg.seed,
        "dev": dev,
        "test": test,
        "best_epoch": result.best_epoch,
        "epochs_run": result.epochs_run,
        "train_documents": len(recipe.splits["train"]),
        "vocab_size": len(recipe.vocab.words),
        "device": str(result.precision.device),
        "wall_time_s": time.perf_counter() - started,
        **embeddings,
    }
    if log_metrics is not None:
        final = {f"final_dev_{k}": v for k, v in dev.items()}
        final.update({f"final_test_{k}": v for k, v in test.items()})
        log_metrics(final, None)
    return jsonable(metrics)


__all__ = [
    "BEST",
    "HISTORY",
    "LAST",
    "CheckpointMismatchError",
    "checkpoint_config",
    "evaluate",
    "load_checkpoint",
    "predict",
    "prepare_vocab",
    "restore",
    "train_and_evaluate",
    "train_and_evaluate_stacked",
]
