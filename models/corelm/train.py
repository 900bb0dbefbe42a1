"""Fine-tuning CoreLM and its baselines through the one loop (tasks/training/loop.py), and the
evaluation of one of the three models of Tables 1-2 (papers/003):

- zeroshot: the backbone as it is (no training);
- ft: the backbone fine-tuned without entities;
- corelm: the backbone + Entity-Gating (models/corelm/model.py), fine-tuned with entities.
FT and CoreLM see the same training windows in the same order for the same number of steps.

App. A: backbone blocks frozen, gradients to the input embeddings, the LM head, the gating
layer; RAdam, warm-up steps then a linear decay from lr (1e-5), batch size 128, 10 epochs.
Settings default to those; params.yaml's embedded default overrides them for the tiny backbone.
FT (our choice, train.ft_backbone): App. A's freezing is stated for CoreLM; of FT the paper
says only "a fine-tuned version of GPT2 without any changes" (§4.1). Default "frozen" trains
FT's same parts (embeddings + head), so the gating layer is the only difference; "full"
fine-tunes every backbone parameter (the usual meaning of fine-tuning GPT-2).

Model selection and reporting (eval.heldout_split): the best epoch is chosen on the dev split;
the held-out perplexity is reported on the test split ("test", default), never on the split
that selected the checkpoint ("dev" = the old behaviour, kept as an option). The paper: "we
held out 10% of the data for evaluation" (§4.1) and trains a fixed 10 epochs (App. A).

Modes (train.mode): "paper" as above; "cached" computes the backbone's final hidden states of
every window once (<out>/hidden_cache.pt) and trains only the gating layer (+ the table option) and
an untied copy of the LM head for many cheap epochs -- the input embeddings are then FROZEN (a
different, labelled setting: metrics "mode": "cached").

A library (issue #54.4): it takes its settings sections (gating, train, eval) and the data as
arguments, reads no params.yaml and logs nothing to MLflow; the stage train_corelm (its
settings section TrainCoreLMSettings, plan, outputs and FAMILY) is flows/train_corelm.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow.parquet as pq
import torch

from models.corelm import data as cdata
from models.corelm.artifact import checkpoint_config, save_artifact
from models.corelm.backbone import Backbone, TinySettings, load_backbone
from models.corelm.model import (
    CoreLM,
    EntityVectors,
    GateForm,
    GateNorm,
    MentionMean,
    causal_lm_loss,
    entity_parameter_count,
    gate_figures,
)
from tasks.core.checkpoints import seed_everything
from tasks.core.errors import CorefreproError
from tasks.core.settings import bounded, settings_to_dict
from tasks.core.storage import read_table
from tasks.training.loop import (
    LoopSettings,
    Precision,
    Recipe,
    StepOutput,
    fit,
    load_best,
    torch_threads,
)

log = logging.getLogger("corefrepro.train_corelm")

STAGE = "train_corelm"
MODELS = ("zeroshot", "ft", "corelm")


# --------------------------------------------------------------------------- settings


@dataclass
class GatingSettings:
    """train_corelm.gating (models/corelm/model.py's docstring quotes the paper's readings)."""

    n_heads: int = bounded(12, ge=1)  # App. A
    flow_rate: float = bounded(0.5, ge=0.0, le=1.0)  # r, App. A
    dropout: float = bounded(0.1, ge=0, lt=1)
    gate_init: float = 0.0  # w of Eq. 14 at the start (sigmoid(0) = 0.5)
    # Eq. 14: entity_floor = Z's share >= 1 - r (paper); entity_ceiling = <= r (old)
    gate: GateForm = "entity_floor"
    # Eq. 15: after_gate = LN of the gate's output (paper); entity_path = LN(Z) before (old)
    norm: GateNorm = "after_gate"
    # §3.2 / App. B: mention_mean = mean of the mentions' hidden states in training and test
    # (paper); table = a trained per-entity parameter table in training (old)
    entity_vectors: EntityVectors = "mention_mean"
    # previous = the entity's earlier tokens, ones before the first (§3.2); inclusive = + own
    mention_mean: MentionMean = "previous"


@dataclass
class CoreLMTrain(LoopSettings):
    """train_corelm.train (App. A values as defaults)."""

    epochs: int = 10
    patience: int | None = None
    clip: float = 1.0
    mode: Literal["paper", "cached"] = "paper"
    batch_size: int = bounded(128, ge=1)
    block_size: int = bounded(1024, ge=2)  # tokens per training window (GPT-2's context)
    lr: float = bounded(1e-5, gt=0)
    warmup_steps: int = bounded(100, ge=0)
    dev_max_windows: int | None = bounded(None, ge=1)  # a CPU budget: model selection on
    # the first N dev windows
    eval_batch_size: int = bounded(8, ge=1)
    ft_backbone: Literal["frozen", "full"] = "frozen"  # FT: App. A's parts, or every parameter


@dataclass
class EvalSettings:
    # scoring window in input tokens; null = the backbone's context (lm-evaluation-harness's
    # max_length); a longer text is scored in the harness's rolling windows (full windows)
    block_size: int | None = bounded(None, ge=1)
    # tokens a rolling window after the first predicts; null = the window (the harness's
    # context_len 1); smaller = more context per token, more forward passes
    stride: int | None = bounded(None, ge=1)
    batch_size: int = bounded(8, ge=1)
    # padded input tokens per forward pass, at most (memory: the logits are tokens x vocabulary
    # floats); null = batch_size windows whatever their length
    batch_tokens: int | None = bounded(8192, ge=1)
    heldout_split: str = "test"  # the reported held-out part of the training corpora (layer
    # 0); "dev" = the split that selects the checkpoint (the old behaviour)
    heldout_max_docs: int | None = bounded(None, ge=1)
    # a learning curve (issue #58.4): after every epoch (train.max_steps_per_epoch batches) and
    # before the first, held-out word perplexity on the first N documents of heldout_split
    # (CoreLM: with and without its entities), the gate's value and the entity path's share,
    # into the history, MLflow and the metrics' "curve"; null: none
    curve_docs: int | None = bounded(None, ge=1)
    wikitext2: str | None = None  # data/docs/<corpus>, e.g. wikitext2 (null: skipped)
    wikitext2_split: str = "dev"
    wikitext2_max_words: int | None = bounded(None, ge=1)
    wikitext103: str | None = None  # e.g. wikitext103 (data/docs/wikitext103; its valid = dev)
    wikitext103_split: str = "dev"
    wikitext103_max_words: int | None = bounded(None, ge=1)
    lambada: str | None = None  # e.g. lambada
    lambada_split: str = "dev"
    # which release of the split: the test split holds the plain tokenized passages (task
    # lambada) and OpenAI's detokenized ones (lambada_openai, the paper's App. A and the
    # harness's); auto = lambada_openai for test, lambada otherwise (dev has one release)
    lambada_task: Literal["auto", "lambada", "lambada_openai"] = "auto"
    lambada_max_items: int | None = bounded(None, ge=1)
    lambada_coref_run: str | None = None  # an annotate run of lambada: CoreLM +coref
    cbt: str | None = None  # e.g. cbt (scored when its question files gave items)
    cbt_max_items: int | None = bounded(None, ge=1)
    cbt_coref_run: str | None = None  # an annotate run of the cbt corpus: CoreLM +coref on CBT
    # +coref on LAMBADA/CBT: entry_mean = App. B's average over the item's context mentions;
    # causal = the running mean used for perplexity (the old behaviour)
    cloze_entities: Literal["entry_mean", "causal"] = "entry_mean"
    # books left out of CBT: normalize.cbt.exclude_books (App. A drops The Jungle Book)


def tiny_size_problems(tiny, gating, train, evaluation, path: str) -> list[str]:
    """Sizes that cannot fit together: heads that do not divide the width, windows longer
    than the model's context. Checked before any work (for a pretrained backbone, by
    check_sizes once its config is read)."""
    problems = _size_problems(tiny.n_embd, tiny.n_positions, gating, train, evaluation, path,
                              f"{path}.tiny")  # fmt: skip
    if tiny.n_embd % tiny.n_head:
        problems.append(f"{path}.tiny.n_head: {tiny.n_head} does not divide n_embd {tiny.n_embd}")
    return problems


def _size_problems(width, context, gating, train, evaluation, path, where) -> list[str]:
    problems = []
    if width % gating.n_heads:
        problems.append(f"{path}.gating.n_heads: {gating.n_heads} does not divide the "
                        f"backbone's width {width} ({where})")  # fmt: skip
    for key, value in (("train.block_size", train.block_size),
                       ("eval.block_size", evaluation.block_size)):  # fmt: skip
        if value is not None and value > context:
            problems.append(f"{path}.{key}: {value} is longer than the backbone's context "
                            f"{context} ({where})")  # fmt: skip
    window = min(evaluation.block_size or context, context)
    if evaluation.stride is not None and evaluation.stride > window:
        problems.append(f"{path}.eval.stride: {evaluation.stride} is longer than the scoring "
                        f"window {window} ({where})")  # fmt: skip
    return problems


def check_sizes(backbone: Backbone, gating: GatingSettings, train: CoreLMTrain,
                evaluation: EvalSettings, path: str = STAGE) -> None:  # fmt: skip
    """The size checks of tiny_size_problems against a loaded backbone (before training)."""
    from tasks.core.settings import ConfigError

    width = int(getattr(backbone.model.config, "hidden_size", None) or backbone.model.config.n_embd)
    problems = _size_problems(width, backbone.max_length, gating, train, evaluation,
                              path, f"backbone {backbone.name}")  # fmt: skip
    if problems:
        raise ConfigError(problems)


# --------------------------------------------------------------------------- data


def view_corpus(view: Path, name: str) -> str:
    """The corpus an annotate run's CoreLM view annotates (the view stage writes it into the
    table's metadata)."""
    corpus = (pq.read_schema(view).metadata or {}).get(b"corpus")
    if not corpus:
        raise CorefreproError(f"{view}: no corpus in its metadata; rebuild it with "
                              f"`dvc repro -f view_corelm@{name}`")  # fmt: skip
    return corpus.decode()


@dataclass(frozen=True)
class Source:
    """One training source: its documents' folder and its CoreLM view (an annotation run's
    view file; None: a corpus whose gold mentions make the view here, with the view_corelm
    defaults)."""

    name: str
    docs: Path
    view: Path | None = None


def _view_rows(source: Source, documents: Any) -> list[dict]:
    """The source's CoreLM view rows (documents: its documents table, read once by the caller)."""
    if source.view is not None:
        return read_table(source.view).to_pylist()
    from tasks.graphs.views import build_corelm_view

    return build_corelm_view(documents, read_table(source.docs / "mentions.parquet")).rows


@dataclass
class CoreLMData:
    instances: list[cdata.Instance]
    documents: dict[str, dict]
    n_entities: int
    names: list[str]

    def split(self, split: str, *, layer0: bool = False) -> list[cdata.Instance]:
        return [i for i in self.instances if i.split == split and (i.layer == 0 or not layer0)]


def load_data(sources: Sequence[Source], tokenizer: Any) -> CoreLMData:
    instances, documents, top = [], {}, 0
    for source in sources:
        table = read_table(source.docs / "documents.parquet")
        rows, docs = _view_rows(source, table), table.to_pylist()
        documents.update({d["doc_id"]: d for d in docs})
        inst = cdata.build_instances(tokenizer, docs, rows, id_offset=top)
        instances.extend(inst)
        top = max([top, *(max(i.entities, default=0) for i in inst)])
    return CoreLMData(instances, documents, top, [s.name for s in sources])


def train_texts(sources: Sequence[Source]) -> list[str]:
    """The training documents' texts (the tiny backbone's tokenizer is trained on them)."""
    texts = []
    for source in sources:
        for d in read_table(source.docs / "documents.parquet").to_pylist():
            if d["split"] == "train":
                texts.append(" ".join(d["tokens"]))
    return texts


def build_backbone(name: str, data: Sequence[Source], *, tiny: TinySettings, cache_dir: str | Path,
                   seed: int, mirror: str | None = None) -> Backbone:  # fmt: skip
    """The backbone `name` (tiny | gpt2 | smollm2 | a directory); the tiny one's tokenizer
    trained on the training texts of `data`."""
    texts = train_texts(data) if name == "tiny" else ()
    return load_backbone(name, texts=texts, tiny=tiny, cache_dir=cache_dir, seed=seed,
                         mirror=mirror)  # fmt: skip


def build_model(
    backbone: Backbone, gating: GatingSettings, seed: int, model: str, n_entities: int
) -> CoreLM:
    g = gating
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return CoreLM(backbone.model, n_entities, gating=model == "corelm", n_heads=g.n_heads,
                      flow_rate=g.flow_rate, dropout=g.dropout, gate_init=g.gate_init,
                      gate=g.gate, norm=g.norm, entity_vectors=g.entity_vectors,
                      mention_mean=g.mention_mean)  # fmt: skip


# --------------------------------------------------------------------------- recipe


class CoreLMRecipe(Recipe):
    """FT or CoreLM on the shared loop: RAdam with warm-up and linear decay (App. A), seeded
    window order, next-token cross-entropy; dev = mean token loss (lower is better)."""

    log_keys = ("loss", "ppl")

    def __init__(self, model: CoreLM, data: CoreLMData, backbone: Backbone, tcfg: CoreLMTrain,
                 out_dir: Path, *, evaluation: EvalSettings | None = None,
                 name: str = "corelm"):  # fmt: skip
        self.model, self.data, self.tcfg, self.backbone = model, data, tcfg, backbone
        # the learning curve (eval.curve_docs; None: none) and the model's name for its scorers
        self.evaluation, self.name = evaluation, name
        self.curve_docs = evaluation.curve_docs if evaluation is not None else None
        self.first_step_loss: float | None = None  # the loss of the first batch, untrained
        self.cached = tcfg.mode == "cached"
        full = model.gating is None and tcfg.ft_backbone == "full"  # FT's option (docstring)
        model.freeze_for_training(embeddings=not self.cached, backbone=full)
        if self.cached:
            model.untie_head()
            model.freeze_for_training(embeddings=False)
        bos = backbone.bos_id
        self.train = cdata.to_blocks(data.split("train"), bos, tcfg.block_size)
        self.dev = cdata.to_blocks(data.split("dev", layer0=True), bos, tcfg.block_size)
        if tcfg.dev_max_windows:
            n = tcfg.dev_max_windows
            self.dev = cdata.Blocks(self.dev.ids[:n], self.dev.entities[:n])
        if not len(self.train) or not len(self.dev):
            raise CorefreproError(f"{'+'.join(data.names)}: no train or no dev documents")
        self.cache_path = out_dir / "hidden_cache.pt"
        self.hidden: dict[str, list[torch.Tensor]] = {}
        if self.curve_docs and not data.split(evaluation.heldout_split, layer0=True):
            raise CorefreproError(f"{STAGE}.eval.curve_docs: {'+'.join(data.names)} has no "
                                  f"{evaluation.heldout_split} documents (eval.heldout_split) "
                                  "to score the curve on")  # fmt: skip

    def trainable(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def steps_per_epoch(self) -> int:
        n = math.ceil(len(self.train) / self.tcfg.batch_size)
        return min(n, self.tcfg.max_steps_per_epoch or n)

    def optimizer_steps_per_epoch(self) -> int:
        """Optimizer steps of an epoch: one per `train.accumulate` batches (the last group
        may be shorter); the warm-up and the linear decay count these."""
        return math.ceil(self.steps_per_epoch() / self.tcfg.accumulate)

    def schedule_steps(self) -> int:
        """The optimizer steps the warm-up and the linear decay span: the whole run (every
        epoch's), never one epoch's."""
        return max(self.optimizer_steps_per_epoch() * self.tcfg.epochs, 1)

    def optimizer(self):
        opt = torch.optim.RAdam(self.trainable(), lr=self.tcfg.lr)
        total = self.schedule_steps()
        warm = self.tcfg.warmup_steps

        def factor(step: int) -> float:  # App. A: warm-up, then linear decay to 0
            if step < warm:
                return (step + 1) / warm
            return max(0.0, (total - step) / max(total - warm, 1))

        return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)

    def _cache(self, device: torch.device) -> None:
        """Cached mode: the final hidden states of every window, computed once."""
        if self.hidden:
            return
        key = hashlib.sha256(repr((self.train.ids, self.dev.ids)).encode()).hexdigest()
        if self.cache_path.is_file():
            saved = torch.load(self.cache_path, weights_only=True)
            if saved.get("key") == key:
                self.hidden = {"train": saved["train"], "dev": saved["dev"]}
                return
        self.model.eval()
        with torch.no_grad():
            for split, blocks in (("train", self.train), ("dev", self.dev)):
                self.hidden[split] = [
                    self.model.hidden(torch.tensor([ids], device=device))[0].to(
                        "cpu", torch.bfloat16
                    )
                    for ids in blocks.ids
                ]
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"key": key, **self.hidden}, self.cache_path)
        self.model.train()

    def _hidden(self, split: str, index, width: int, device) -> torch.Tensor | None:
        if not self.cached:
            return None
        self._cache(device)
        rows = [self.hidden[split][i] for i in index]
        out = torch.zeros(len(rows), width, rows[0].shape[-1], device=device)
        for r, h in enumerate(rows):
            out[r, : len(h)] = h.to(device, torch.float32)
        return out

    def batches(self, epoch: int) -> Iterator[dict[str, torch.Tensor]]:
        order = cdata.batch_order(len(self.train), self.tcfg.batch_size, seed=self.tcfg.seed,
                                  epoch=epoch, shuffle=True)  # fmt: skip
        for index in order:  # the loop stops after train.max_steps_per_epoch batches
            yield cdata.pad_batch(self.train, index, self.backbone.bos_id)

    def _loss(self, batch, device, split: str, entity_mode) -> tuple[torch.Tensor, int]:
        ids = batch["input_ids"].to(device)
        hidden = self._hidden(split, batch["index"].tolist(), ids.shape[1], device)
        logits = self.model(ids, batch["entity_ids"].to(device), hidden=hidden,
                            entity_mode=entity_mode)  # fmt: skip
        return causal_lm_loss(logits, batch["labels"].to(device))

    def step(self, batch, device: torch.device) -> StepOutput:
        if self.cached and self.model.training:
            self.model.backbone.eval()  # no dropout in the frozen part either way
        loss, n = self._loss(batch, device, "train", self.model.train_entity_mode)
        if self.first_step_loss is None:
            self.first_step_loss = float(loss.detach())
        return StepOutput(loss, {"loss_sum": float(loss.detach()) * n, "loss_n": n})

    @torch.no_grad()
    def evaluate(self, split: str, precision: Precision) -> dict[str, float]:
        self.model.eval()
        total, count = 0.0, 0
        for index in cdata.batch_order(len(self.dev), self.tcfg.eval_batch_size, seed=0, epoch=0,
                                       shuffle=False):  # fmt: skip
            batch = cdata.pad_batch(self.dev, index, self.backbone.bos_id)
            with precision.autocast():
                loss, n = self._loss(batch, precision.device, "dev", "running_mean")
            total, count = total + float(loss) * n, count + n
        mean = total / max(count, 1)
        return {"loss": mean, "ppl": math.exp(mean), "n_tokens": count}

    def selection(self, dev: Mapping[str, float]) -> tuple[tuple, float]:
        return (-dev["loss"],), -dev["loss"]

    @torch.no_grad()
    def curve(self, epoch: int, precision: Precision) -> dict[str, float]:
        """eval.curve_docs: a point of the learning curve after `epoch` epochs (0: untrained):
        held-out word perplexity on the first curve_docs documents of eval.heldout_split (the
        model's reported figure, CoreLM's with the data's entities, and CoreLM's without
        them), the gate (models/corelm/model.py gate_figures) and the loss of the first
        training batch (from epoch 1 on)."""
        if not self.curve_docs:
            return {}
        from models.corelm import evaluate as ev

        self.model.eval()
        capped = dataclasses.replace(self.evaluation, heldout_max_docs=self.curve_docs)
        lms = ev.scorers(self.name, self.model, self.backbone, capped, precision.device)
        scored = ev.heldout(lms, self.data, capped)  # as the final evaluation: no autocast
        ppl = {name: r["word_perplexity"] for name, r in scored.items()}
        point = {"curve_step": epoch * self.optimizer_steps_per_epoch(),
                 "curve_heldout_words": next(iter(scored.values()))["n_words"]}  # fmt: skip
        if self.model.gating is None:
            point["curve_heldout_word_ppl"] = ppl[self.name]
        else:  # the reported cell is scored with the entities (evaluate.py)
            point["curve_heldout_word_ppl"] = ppl[f"{self.name}+coref"]
            point["curve_heldout_word_ppl_no_entities"] = ppl[self.name]
            point.update({f"curve_{k}": v for k, v in gate_figures(self.model.gating).items()})
            point["curve_entity_norm_share"] = self._entity_norm_share(precision)
        if self.first_step_loss is not None:
            point["curve_first_step_loss"] = self.first_step_loss
        return point

    def _entity_norm_share(self, precision: Precision) -> float:
        """How much the entity path carries on the first dev batch: per token
        |g * Z| / (|(1 - g) * H| + |g * Z|) (Eq. 14's two terms, EntityGating.mix_parts),
        averaged over the scored tokens (the gate's nominal share says how they are weighed,
        this how large what they weigh is)."""
        index = list(range(min(len(self.dev), self.tcfg.eval_batch_size)))
        batch = cdata.pad_batch(self.dev, index, self.backbone.bos_id)
        ids = batch["input_ids"].to(precision.device)
        with precision.autocast():
            h = self.model.hidden(ids)
            context = self.model.entity_context(h, batch["entity_ids"].to(precision.device),
                                                "running_mean")  # fmt: skip
            kept, entity = self.model.gating.mix_parts(h, context)
        a, b = kept.float().norm(dim=-1), entity.float().norm(dim=-1)
        mask = batch["labels"].to(precision.device) != -100
        return float((b / (a + b).clamp(min=1e-12))[mask].mean())

    def checkpoint_config(self) -> dict[str, Any]:
        return checkpoint_config(self.model, self.backbone.name, mode=self.tcfg.mode,
                                 ft_backbone=self.tcfg.ft_backbone)  # fmt: skip

    def checkpoint_info(self) -> dict[str, Any]:
        return {"train_cfg": settings_to_dict(self.tcfg)}

    def fingerprint(self) -> dict[str, Any]:
        digest = hashlib.sha256(repr((self.train.ids, self.train.entities)).encode()).hexdigest()
        return {"config": self.checkpoint_config(), "data": digest}

    def state_dict(self) -> dict[str, Any]:
        return {"first_step_loss": self.first_step_loss, "schedule_steps": self.schedule_steps()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """A resumed run's recipe state (last.pt): the first batch's loss, and a warning when
        the schedule's span changed (train.epochs, which resume leaves free): the learning
        rate then follows the new span from here, not an uninterrupted run's."""
        self.first_step_loss = state.get("first_step_loss")
        saved, now = state.get("schedule_steps"), self.schedule_steps()
        if saved is not None and saved != now:
            log.warning("resuming with the warm-up and decay over %d optimizer steps (train."
                        "epochs) where the run began with %d: the learning rate follows the new "
                        "span from here, so its curve is not an uninterrupted run's", now, saved)  # fmt: skip


def trainable_state(model: CoreLM) -> dict[str, torch.Tensor]:
    return {k: v for k, v in model.state_dict().items()}


# --------------------------------------------------------------------------- one model


def train_model(model_name: str, gating: GatingSettings, train: CoreLMTrain, backbone: Backbone,
                data: CoreLMData, out_dir: Path, *,
                log_metrics: Callable[..., None] | None = None,
                evaluation: EvalSettings | None = None,
                ) -> tuple[CoreLM, dict[str, Any]]:  # fmt: skip
    """Fine-tune FT or CoreLM (zeroshot: the backbone as is); (model, training facts).
    log_metrics, when given, receives the learning curve; evaluation.curve_docs adds the
    held-out and gate points to it (CoreLMRecipe.curve; the facts' "curve")."""
    model = build_model(backbone, gating, train.seed, model_name, data.n_entities)
    if model_name == "zeroshot":
        return model.eval(), {"steps": 0, "train_tokens": 0, "train_time_s": 0.0}
    seed_everything(train.seed)
    recipe = CoreLMRecipe(model, data, backbone, train, out_dir, evaluation=evaluation,
                          name=model_name)  # fmt: skip
    result = fit(recipe, train, out_dir, name=f"{STAGE} {model_name}", log_metrics=log_metrics)
    load_best(result, recipe)
    batches = recipe.steps_per_epoch() * result.epochs_run
    windows = min(len(recipe.train), recipe.steps_per_epoch() * train.batch_size)
    facts = {
        "steps": recipe.optimizer_steps_per_epoch() * result.epochs_run,  # optimizer steps
        "batches": batches,
        "effective_batch_size": train.batch_size * train.accumulate,
        "epochs": result.epochs_run,
        "best_epoch": result.best_epoch,
        "train_windows": len(recipe.train),
        "train_tokens_per_epoch": _tokens_seen(recipe),
        "train_time_s": round(result.train_time_s, 2),
        "dev_token_ppl": result.history[result.best_epoch - 1]["dev_ppl"],
        "trainable_parameters": sum(p.numel() for p in recipe.trainable()),
        "entity_parameters": entity_parameter_count(model),
        "windows_seen_per_epoch": windows,
        "history": result.history,
    }
    if recipe.curve_docs:
        facts["curve"] = curve_record(recipe, result.start, result.history)
    return model.eval(), facts


def curve_record(recipe: CoreLMRecipe, start: Mapping[str, Any],
                 history: Sequence[Mapping[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """The learning curve as a compact record (the metrics' "curve"): one point per epoch
    and the untrained one (step 0), each with its optimizer step, held-out word perplexity
    (with and without entities for CoreLM), the gate's figures, the dev loss and the
    learning rate; the first batch's loss beside the gate's initial value."""
    strip = len("curve_")
    points = [{k[strip:]: v for k, v in start.items()}]
    for row in history:
        point = {k[strip:]: v for k, v in row.items() if k.startswith("curve_")}
        point.pop("first_step_loss", None)
        point.update(epoch=row["epoch"], dev_loss=row["dev_loss"], train_loss=row["train_loss"],
                     learning_rate=row["learning_rate"])  # fmt: skip
        points.append(point)
    return {
        "every_steps": recipe.optimizer_steps_per_epoch(),
        "schedule_steps": recipe.schedule_steps(),
        "heldout_docs": recipe.curve_docs,
        "heldout_split": recipe.evaluation.heldout_split,
        "first_step_loss": recipe.first_step_loss,
        "initial": {
            k: v for k, v in points[0].items() if k.startswith(("gate_", "entity_", "heldout_word"))
        },  # fmt: skip
        "points": points,
    }


def _tokens_seen(recipe: CoreLMRecipe) -> int:
    n = recipe.steps_per_epoch() * recipe.tcfg.batch_size
    return sum(len(x) - 1 for x in recipe.train.ids[: min(n, len(recipe.train))])


def save_standalone(model_name: str, model: CoreLM, backbone: Backbone, out_dir: Path) -> None:
    """The artifact load_corelm rebuilds the model from (models/corelm/artifact.py): the
    backbone's config and tokenizer beside best.pt, and best.pt itself for zeroshot (no
    training loop wrote one), so that every model is scored the same way outside the stage
    (python -m models.harness --model corefrepro ...)."""
    config = None
    if model_name == "zeroshot":
        config = checkpoint_config(model, backbone.name, mode="none", ft_backbone=None)
    save_artifact(out_dir, backbone, model, config)


def check_model(item: str) -> None:
    """Refuse a model name outside MODELS (the stage checks before building the backbone)."""
    if item not in MODELS:
        raise CorefreproError(f"train_corelm: unknown model {item!r}; known {list(MODELS)}")


def train_and_evaluate(item: str, backbone: Backbone, corpus: CoreLMData, gating: GatingSettings,
                       train: CoreLMTrain, evaluation: EvalSettings, out_dir: str | Path, *,
                       eval_data: Any, backbone_name: str,
                       log_metrics: Callable[..., None] | None = None) -> dict[str, Any]:  # fmt: skip
    """One model of Tables 1-2 (item: zeroshot | ft | corelm) on the backbone `backbone_name`
    and the windows of `corpus`: train it (unless zeroshot), save the standalone artifact,
    evaluate every available benchmark (eval_data: evaluate.EvalData, where they are); its
    metrics, with the training seed (`seed`) and what each benchmark was scored on
    (`eval_splits`, evaluate.eval_splits), all a results record reads."""
    from models.corelm import evaluate as ev

    check_model(item)
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with torch_threads(train.threads):
        model, facts = train_model(item, gating, train, backbone, corpus, out_dir,
                                   log_metrics=log_metrics, evaluation=evaluation)  # fmt: skip
        save_standalone(item, model, backbone, out_dir)
        device = Precision.choose(train).device
        model.to(device)
        results = ev.evaluate_all(
            item, model, backbone, corpus, evaluation, eval_data, device, out_dir
        )
    return {
        "model": item,
        "backbone": backbone_name,
        "mode": train.mode if item != "zeroshot" else "none",
        "data": corpus.names,
        "seed": train.seed,  # train.seed: the record's seed (no seed<k>/ folder)
        "selection_split": "dev",  # the best epoch is chosen on dev (CoreLMRecipe.evaluate)
        "heldout_split": evaluation.heldout_split,
        "gating": settings_to_dict(gating) if item == "corelm" else None,
        "ft_backbone": train.ft_backbone if item == "ft" else None,
        "device": str(device),
        "training": {k: v for k, v in facts.items() if k not in ("history", "curve")},
        **({"curve": facts["curve"]} if "curve" in facts else {}),
        **results,
        "wall_time_s": round(time.perf_counter() - started, 2),
    }


__all__ = [
    "CoreLMRecipe",
    "MODELS",
    "check_model",
    "train_and_evaluate",
    "train_model",
]
