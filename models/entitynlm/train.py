"""Training and evaluation of EntityNLM (with its proposal) and the RNNLM baseline through the
one training loop (tasks/training/loop.py): LMRecipe is this family's part of it.

Protocol (Ji et al. 2017, papers/000 §3, §5.1):
- both models maximise the log-likelihood of the training documents (EntityNLM: Eq. 9, the joint
  of X, R, E, L; the proposal Q(R, E, L | X) is trained alongside on the same annotation, its
  negative log-likelihood added to the loss; RNNLM: the words), Adam (lr 1e-3) or AdaGrad
  (lr 0.1), §5.1's two candidate optimizers (`train.optimizer`), dropout, gradients clipped.
  The proposal is a separate model in
  the paper (§5.1 "Proposal distribution"): it has its own parameter group and its own
  gradient-norm clip (`train.clip_scope: per_model`), so its gradients never scale
  EntityNLM's; `joint` is the earlier single clip over both;
- model selection on DEV: EntityNLM by the joint perplexity 2^(-1/T sum log P(X, R, E, L)) (§5.1
  "Results"), the RNNLM by its perplexity;
- with the best checkpoint: the RNNLM's exact perplexity on dev and test; EntityNLM's words-only
  perplexity with R, E, L marginalised by importance sampling (Eq. 11, N draws per document
  from Q, models/entitynlm/sampling.py) for several sampling seeds (mean and spread), at each
  N of `evaluation.samples_grid` (the headline: `evaluation.samples`, the paper's N = 100),
  beside two lower bounds on log P(x) per document (the best draw, the gold annotation; issue
  #33.8), over all documents and per corpus, and its joint perplexity;
- Table 1's other readings of EntityNLM's test perplexity (issue #56.1; sampling.READINGS):
  from the same draws, the word terms alone under Eq. 11 (words_is, the paper's §5.1 text read
  literally) and averaged without the importance weight (words_q_mix, words_q_mean); and the
  words given the gold annotation (words_given_rel_ppl: the released code's `evalobj 1`, which
  reads the test coreference). Each per seed (`readings` of a split's scores) and over the
  training seeds (`summarize`'s `readings`); the headline stays the marginal.
Both models use the same preprocessed documents and vocabulary (models/entitynlm/data.py).

A library (issue #54.4): it takes settings and documents as arguments, reads no params.yaml,
knows no output path and logs nothing to MLflow; the stage train_entitynlm (its settings
section, plan, outputs, summary and FAMILY) is flows/train_entitynlm.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from models.entitynlm.data import (
    Batch,
    Document,
    Vocab,
    collate,
    document_text,
    load_view,
    split_documents,
    token_batches,
)
from models.entitynlm.model import RNNLM, EntityNLMConfig, EntityNLMPair
from models.entitynlm.sampling import (
    DRAW_READINGS,
    document_records,
    importance_bounds,
    importance_bounds_by_run,
    joint_perplexity,
    log_joint_documents,
    spread,
)
from models.registry import language_model
from tasks.core import storage
from tasks.core.checkpoints import jsonable, load_checkpoint, seed_everything
from tasks.core.errors import CorefreproError
from tasks.core.progress import Progress
from tasks.core.settings import ConfigError, bounded, key_path, parse_settings, settings_to_dict
from tasks.evaluation.lm import perplexity
from tasks.training.loop import (
    LoopSettings,
    Precision,
    Recipe,
    StepOutput,
    fit,
    load_best,
    torch_threads,
)

log = logging.getLogger("corefrepro.train_entitynlm")

STAGE = "train_entitynlm"
MODELS = ("entitynlm", "rnnlm")
IS_DOCUMENTS = "importance_documents.json"  # per-document Eq. 11 estimates and bounds (#33.8)


@dataclass
class ModelSettings:
    """params.yaml train_entitynlm.model: shared by EntityNLM, its proposal and the RNNLM."""

    embed_dim: int = bounded(32, ge=1)  # paper: grid over its §3 settings
    hidden_size: int = bounded(32, ge=1)
    dropout: float = bounded(0.2, ge=0, lt=1)  # paper candidates {0.2, 0.5}
    l_max: int = bounded(25, ge=1)  # §2.1 (the view truncates longer mentions)
    distance_buckets: int = bounded(10, ge=1)
    proposal_bidirectional: bool = True  # False: the paper's left-to-right proposal
    # sentence: every LSTM (EntityNLM, proposal, RNNLM) restarts at each sentence, EntityNLM's
    # non-mention words see the authors' context vector (model.py `word_channel`); document:
    # one LSTM pass over the whole document (the earlier behaviour)
    lstm_scope: Literal["sentence", "document"] = "sentence"
    # the authors' code where it differs from the paper's text (model.py, issue #56.4): Eq. 4's
    # distance term, a new entity's embedding, what Eq. 8 moves an entity towards
    distance_feature: Literal["word_buckets", "sentence_exp"] = "word_buckets"
    new_entity: Literal["r1", "learned"] = "r1"
    entity_input: Literal["state", "projected"] = "state"
    min_count: int = bounded(2, ge=1)  # training-split frequency below which a word is `unk`
    max_vocab: int | None = bounded(None, ge=3)  # paper: 10K (CoNLL)


@dataclass
class TrainSettings(LoopSettings):
    """params.yaml train_entitynlm.train (the loop's settings and the optimiser's)."""

    epochs: int = 3
    patience: int | None = None
    # §5.1's two candidate optimizers: Adam (lr 0.001) and AdaGrad (lr 0.1); `lr` is either's
    optimizer: Literal["adam", "adagrad"] = "adam"
    lr: float = bounded(1e-3, gt=0)
    batch_tokens: int = bounded(2048, ge=1)  # padded words per training batch
    threads: int | None = bounded(1, ge=1)
    # per_model: EntityNLM and its proposal each clipped to `clip` (separate models, §5.1);
    # joint: one norm over both (the earlier behaviour)
    clip_scope: Literal["per_model", "joint"] = "per_model"
    # EntityNLM's R, E and L terms of Eq. 9 weighted in the training loss: the authors'
    # `--entityweight` (jiyfeng/entitynlm entitynlm.h:421-428, main.cc:68, default 1); model
    # selection stays the unweighted dev joint perplexity
    entity_weight: float = bounded(1.0, gt=0)


@dataclass
class EvalSettings:
    """params.yaml train_entitynlm.evaluation: importance sampling (§5.1). log P̂_N(x) is low in
    expectation, less so as N grows (sampling.py, issue #33.8), so the estimate is measured at
    each N of samples_grid; the headline (Table 1) is `samples`, the paper's N = 100. The cost
    is the grid's sum of N: [10, 100] is 1.1x N = 100 alone, [10, 100, 1000] 11.1x."""

    samples: int = bounded(100, ge=1)  # N draws per document of the headline figure (Eq. 11)
    samples_grid: list[int] = bounded([10, 100], min_items=1)  # every N measured; holds samples
    sampling_seeds: list[int] = bounded([1, 2, 3, 4, 5], min_items=1)
    batch_tokens: int = bounded(1024, ge=1)  # words per sampling batch before the N-fold expansion

    def validate(self, path: str) -> None:
        where, grid = key_path(path, "samples_grid"), self.samples_grid
        problems = [f"{where}: every N must be >= 1, got {n!r}" for n in grid if n < 1]
        if len(set(grid)) < len(grid):
            problems.append(f"{where}: an N is listed twice: {grid}")
        if self.samples not in grid:
            problems.append(f"{where}: must hold the headline N, samples = {self.samples}; "
                            f"got {grid}")  # fmt: skip
        if problems:
            raise ConfigError(problems)

    def sample_sizes(self) -> list[int]:
        """The Ns measured, ascending (the headline's even in an unvalidated instance)."""
        return sorted({*self.samples_grid, self.samples})


def load_data(
    views: Mapping[str, Path],
    model: ModelSettings,
    *,
    drop_singletons: bool = True,
    max_documents: Mapping[str, int | None] | None = None,
) -> tuple[dict, Vocab]:
    """({split: documents}, vocabulary of the training split): the EntityNLM views (annotation
    run -> its entitynlm.parquet) preprocessed (§4), split and capped (`max_documents` per split), the
    vocabulary as the model settings say (min_count, max_vocab)."""
    docs = load_view(views, drop_singletons=drop_singletons)
    splits = split_documents(docs, dict(max_documents or {}))
    runs = list(views)
    if not splits["train"] or not splits["dev"]:
        raise CorefreproError(f"{STAGE}: runs {runs} give no train or no dev documents")
    vocab = Vocab.build(splits["train"], model.min_count, model.max_vocab)
    log.info("%s: documents %s, vocabulary %d", "+".join(runs),
             {s: len(d) for s, d in splits.items()}, len(vocab))  # fmt: skip
    return splits, vocab


def model_config(mcfg: ModelSettings, vocab: Vocab) -> EntityNLMConfig:
    return EntityNLMConfig(vocab_size=len(vocab), embed_dim=mcfg.embed_dim,
                           hidden_size=mcfg.hidden_size, l_max=mcfg.l_max, dropout=mcfg.dropout,
                           distance_buckets=mcfg.distance_buckets, lstm_scope=mcfg.lstm_scope,
                           distance_feature=mcfg.distance_feature, new_entity=mcfg.new_entity,
                           entity_input=mcfg.entity_input)  # fmt: skip


def build_model(kind: str, mcfg: ModelSettings, vocab: Vocab) -> torch.nn.Module:
    if kind not in MODELS:
        raise CorefreproError(f"{STAGE}: unknown model {kind!r}; known: {list(MODELS)}")
    config = model_config(mcfg, vocab)
    if kind == "rnnlm":
        return RNNLM(config)
    return EntityNLMPair(config, proposal_bidirectional=mcfg.proposal_bidirectional)


def load_trained(checkpoint: str | Path, kind: str = "entitynlm"):
    """(the model of *kind* in eval mode -- an EntityNLMPair for entitynlm, an RNNLM for
    rnnlm --, its vocabulary) from a train_entitynlm best.pt."""
    ckpt = load_checkpoint(checkpoint, train_hint=f": dvc repro train_entitynlm@{kind}")
    config = dict(ckpt["config"])
    if config.get("kind") != kind or "vocab" not in ckpt:
        raise CorefreproError(f"{checkpoint}: not a {kind} checkpoint of train_entitynlm")
    config.setdefault("lstm_scope", "document")  # checkpoints from before the setting
    fields = set(ModelSettings.__dataclass_fields__)
    mcfg = parse_settings(ModelSettings, {k: v for k, v in config.items() if k in fields},
                          f"{checkpoint}:config")  # fmt: skip
    vocab = Vocab.from_dict(ckpt["vocab"])
    model = build_model(kind, mcfg, vocab)
    model.load_state_dict(ckpt["state_dict"])
    return model.eval(), vocab


def documents_fingerprint(splits: Mapping[str, Sequence[Document]]) -> str:
    digest = hashlib.sha256()
    for split in sorted(splits):
        for d in splits[split]:
            digest.update(json.dumps([split, d.doc_id, d.tokens, d.entity, d.remaining,
                                      d.sentence_starts]).encode())  # fmt: skip
    return digest.hexdigest()


class LMRecipe(Recipe):
    """One of the two models' part of the shared loop: token-budget batches of documents in a
    seeded order, per-word negative log-likelihood, dev perplexity as the selection rule."""

    def __init__(self, kind: str, splits, vocab: Vocab, mcfg: ModelSettings, tcfg: TrainSettings):
        self.kind, self.splits, self.vocab, self.mcfg, self.tcfg = kind, splits, vocab, mcfg, tcfg
        self.model = build_model(kind, mcfg, vocab)
        self.rng = random.Random(tcfg.seed)
        self.log_keys = ("joint_ppl", "proposal_ppl") if kind == "entitynlm" else ("ppl",)

    def parts(self) -> list[torch.nn.Module]:
        """The separately optimised models: EntityNLM and its proposal, or the RNNLM."""
        if self.kind == "entitynlm":
            return [self.model.lm, self.model.proposal]
        return [self.model]

    def optimizer(self):
        """Adam or AdaGrad (§5.1's candidates, `train.optimizer`) with one parameter group per
        model (`parts`). torch keeps both optimizers' state per tensor, so each group's state is
        that model's own: the same updates as one optimizer per model, in the one optimizer
        object the loop steps."""
        groups = [{"params": list(m.parameters())} for m in self.parts()]
        kind = {"adam": torch.optim.Adam, "adagrad": torch.optim.Adagrad}[self.tcfg.optimizer]
        return kind(groups, lr=self.tcfg.lr), None

    def clip_gradients(self, clip: float, params: list[torch.nn.Parameter]) -> None:
        """The loop's clip (tasks/training/loop.py): each model's gradient norm to `clip`
        (clip_scope per_model), or one norm over all of them (joint)."""
        if self.tcfg.clip_scope == "joint":
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
            return
        for part in self.parts():
            torch.nn.utils.clip_grad_norm_(part.parameters(), clip)

    def batches(self, epoch: int) -> Iterator[Batch]:
        groups = token_batches(self.splits["train"], self.tcfg.batch_tokens)
        self.rng.shuffle(groups)
        for group in groups:
            yield collate(group, self.vocab)

    def steps_per_epoch(self) -> int:
        return len(token_batches(self.splits["train"], self.tcfg.batch_tokens))

    def step(self, batch: Batch, device: torch.device) -> StepOutput:
        batch = batch.to(device)
        tokens = batch.num_tokens
        if self.kind == "rnnlm":
            nll = -self.model.log_words(batch).sum()
            return StepOutput(nll / tokens, {"loss_sum": float(nll.detach()), "loss_n": tokens})
        pred, upd = self.model.lm.contexts(batch.tokens, batch.mask, batch.sent_start)
        terms = self.model.lm.token_log_probs(batch, contexts=(pred, upd))
        nll = -sum(v.sum(1) for v in terms.values()).sum()  # Eq. 9
        weight = self.tcfg.entity_weight  # x 1.0 is exact: weight 1 is Eq. 9's bits
        objective = -sum(v.sum(1) * (1.0 if k == "x" else weight) for k, v in terms.items()).sum()
        q_nll = -self.model.proposal.log_joint(batch).sum()
        stats = {"loss_sum": float(nll.detach()), "loss_n": tokens,
                 "proposal_loss_sum": float(q_nll.detach())}  # fmt: skip
        return StepOutput((objective + q_nll) / tokens, stats)

    @torch.no_grad()
    def evaluate(self, split: str, precision: Precision) -> dict[str, float]:
        docs, dev = self.splits[split], precision.device
        self.model.eval()
        with precision.autocast():
            if self.kind == "rnnlm":
                lm = language_model("rnnlm", model=self.model, vocab=self.vocab, device=dev)
                out = perplexity(lm, [document_text(d) for d in docs])
                return {"ppl": out.token_perplexity, "tokens": out.n_tokens}
            out = joint_perplexity(self.model.lm, docs, self.vocab, device=dev)
            q = joint_perplexity(self.model.proposal, docs, self.vocab, device=dev)
        return {**out, "proposal_ppl": q["joint_ppl"]}

    def selection(self, dev: Mapping[str, float]) -> tuple[tuple, float]:
        value = dev["ppl"] if self.kind == "rnnlm" else dev["joint_ppl"]
        return (-value,), -value

    def checkpoint_config(self) -> dict[str, Any]:
        return {"kind": self.kind, **settings_to_dict(self.mcfg), "vocab_size": len(self.vocab)}

    def checkpoint_info(self) -> dict[str, Any]:
        return {"vocab": self.vocab.to_dict()}

    def fingerprint(self) -> dict[str, Any]:
        return {"config": self.checkpoint_config(), "data": documents_fingerprint(self.splits)}

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.getstate()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.rng.setstate(state["rng"])


def importance_run(recipe: LMRecipe, docs, n: int, seed: int, max_tokens: int, device,
                   progress) -> dict[str, Any]:  # fmt: skip
    """One (N, sampling seed) of Eq. 11, the LM built by the registry (models/entitynlm/lm.py)."""
    pair = recipe.model
    lm = language_model("entitynlm", lm=pair.lm, proposal=pair.proposal, vocab=recipe.vocab,
                        samples=n, seed=seed, max_tokens=max_tokens, device=device,
                        progress=progress)  # fmt: skip
    return lm.importance_perplexity(docs)


def draw_readings(runs: Sequence[Mapping[str, Any]], seeds: Sequence[int]) -> dict[str, Any]:
    """Table 1's word-only readings of the draws (sampling.DRAW_READINGS, issue #56.1) of one N,
    one `importance_run` per sampling seed: {reading: {ppl: mean ± sd over the sampling seeds,
    ppl_per_seed}}."""
    return {name: {"ppl": spread([r["readings"][name]["ppl"] for r in runs]),
                   "ppl_per_seed": {str(s): r["readings"][name]["ppl"]
                                    for s, r in zip(seeds, runs, strict=True)}}
            for name in DRAW_READINGS}  # fmt: skip


def importance_evaluation(recipe: LMRecipe, ecfg: EvalSettings, precision: Precision):
    """Eq. 11 words-only perplexity of dev and test for each N and sampling seed (mean ± sd over
    the seeds; the headline N's as is_ppl), and the estimate against the two lower bounds on
    log P(x) (sampling.importance_bounds), over all documents and per corpus. Returns (figures
    by split, per-document records by split). Each N draws afresh from the seed's stream, so
    the headline does not depend on the grid."""
    out: dict[str, Any] = {}
    records: dict[str, list] = {}
    seeds = list(ecfg.sampling_seeds)
    for split in ("dev", "test"):
        docs = recipe.splits[split]
        if not docs:
            continue
        runs, grid = {}, {}
        for n in ecfg.sample_sizes():
            started = time.perf_counter()
            label = f"importance sampling {split} (N = {n}, seeds {seeds})"
            with Progress(label, len(docs) * len(seeds), "docs", logger=log) as progress:
                runs[n] = [importance_run(recipe, docs, n, s, ecfg.batch_tokens, precision.device,
                                          progress) for s in seeds]  # fmt: skip
            grid[str(n)] = {"is_ppl": spread([r["ppl"] for r in runs[n]]),
                            "is_ppl_per_seed": {str(s): r["ppl"]
                                                for s, r in zip(seeds, runs[n], strict=True)},
                            "is_time_s": time.perf_counter() - started,
                            "readings": draw_readings(runs[n], seeds)}  # fmt: skip
        gold = log_joint_documents(recipe.model.lm, docs, recipe.vocab,
                                   max_tokens=ecfg.batch_tokens, device=precision.device)  # fmt: skip
        records[split] = document_records(docs, runs, gold)
        head = grid[str(ecfg.samples)]
        out[split] = {"is_ppl": head["is_ppl"], "is_ppl_per_seed": head["is_ppl_per_seed"],
                      "is_samples": ecfg.samples, "is_grid": grid,
                      "readings": head["readings"],
                      "is_bounds": importance_bounds(records[split]),
                      "is_by_corpus": importance_bounds_by_run(records[split]),
                      "tokens": runs[ecfg.samples][0]["tokens"], "documents": len(docs),
                      "is_time_s": head["is_time_s"]}  # fmt: skip
    return out, records


def train_and_evaluate(kind, splits, vocab, mcfg: ModelSettings, train: TrainSettings,
                       evaluation: EvalSettings, seed: int, out_dir, *,
                       log_fn=None) -> dict[str, Any]:  # fmt: skip
    """Train one model with dev selection, then score dev and test with the best checkpoint."""
    tcfg = dataclasses.replace(train, seed=int(seed))
    started = time.perf_counter()
    with torch_threads(tcfg.threads):
        seed_everything(tcfg.seed)
        recipe = LMRecipe(kind, splits, vocab, mcfg, tcfg)
    result = fit(recipe, tcfg, out_dir, name=f"{kind} seed {seed}", log_metrics=log_fn)
    with torch_threads(tcfg.threads):
        load_best(result, recipe)
        scores = {s: recipe.evaluate(s, result.precision) for s in ("dev", "test") if splits[s]}
        if kind == "entitynlm":
            figures, records = importance_evaluation(recipe, evaluation, result.precision)
            for split, extra in figures.items():
                scores[split].update(extra)
            storage.write_json(Path(out_dir) / IS_DOCUMENTS, jsonable(records))
    train_tokens = sum(len(d.tokens) for d in splits["train"])
    train_time = result.train_time_s  # the loop keeps no wall-clock figures in its history
    epochs_now = result.epochs_run - result.resumed_from  # epochs this call trained
    metrics = {
        "model": kind, "seed": int(seed), **scores,
        "best_epoch": result.best_epoch, "epochs_run": result.epochs_run,
        "vocab_size": len(vocab),
        "documents": {s: len(d) for s, d in splits.items()},
        "tokens": {s: sum(len(x.tokens) for x in d) for s, d in splits.items()},
        "train_tokens_per_s": train_tokens * epochs_now / train_time if train_time else None,
        "device": result.precision.describe(),
        "wall_time_s": time.perf_counter() - started,
    }  # fmt: skip
    if log_fn is not None:
        log_fn({f"final_{k}_{m}": v for k in ("dev", "test") for m, v in scores.get(k, {}).items()
                if isinstance(v, int | float)}, None)  # fmt: skip
    return jsonable(metrics)
