"""A Hugging Face causal LM, with or without CoreLM's Entity-Gating, as the project's
`LanguageModel` (tasks/evaluation/lm.py): every model of this family -- the backbone zero-shot,
FT, CoreLM with and without coreference at test time -- is scored by the same evaluations.

Entities at test time travel beside the text: `annotate(words, entity_ids)` registers a text's
word-level entity ids; a request whose tokens (context + continuation) are exactly a
registered text's tokens gets them per subword token, others get none (counted in `misses`).
A text with no context starts from `bos_id`; a continuation or text longer than the window is
scored in lm-evaluation-harness's rolling windows (tasks/evaluation/lm.py `window_spans`: full
windows of max_length input tokens, the later ones predicting `stride` tokens each): every
token predicted exactly once, each request cut as the harness's `_loglikelihood_tokens` cuts
it (input = the max_length tokens before the last scored one). Scores are memoised per
window for LAMBADA's second convention, in a bounded LRU (`memo_size` windows).

Entity vectors (entity_mode "running_mean", models/corelm/model.py): rolling scores (perplexity:
every token is scored) always use the causal mention mean; context/continuation requests
(LAMBADA, CBT: only the continuation is scored) use, with cloze_entities "entry_mean" (default),
App. B's average over the request's context -- "an average of the hidden representation of
all the entity mention in that entry (Section 3.2), excluding the last word and its entity
annotation which were to be predicted" -- and with "causal" the running mean as well.

Registered as "corelm" (`corelm`): the scorer of in-memory parts, or, with `checkpoint=`, of
a model train_corelm saved (`from_artifact`, models/corelm/artifact.py) -- how the
lm-evaluation-harness model "corefrepro" (models/harness.py) scores a trained
checkpoint on any harness task.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import torch

from models.corelm.artifact import load_corelm
from models.corelm.data import align
from models.corelm.model import CoreLM, EntityMode
from tasks.evaluation.lm import (
    LanguageModel,
    LMRequestError,
    RollingScore,
    TokenRequest,
    register_lm,
    window_spans,
)


class CoreLMScorer(LanguageModel):
    """model: a CoreLM (gating or not); entity_mode: how test-time entities get vectors;
    cloze_entities: the vectors of context/continuation requests (module docstring)."""

    def __init__(self, model: CoreLM, tokenizer, *, bos_id: int, max_length: int = 1024,
                 entity_mode: EntityMode = "none", batch_size: int = 8, name: str = "corelm",
                 device: str | torch.device = "cpu",
                 cloze_entities: Literal["entry_mean", "causal"] = "entry_mean",
                 stride: int | None = None, memo_size: int = 8192,
                 batch_tokens: int | None = 8192):  # fmt: skip
        self.model, self.tokenizer, self.bos_id = model.eval(), tokenizer, int(bos_id)
        self.max_length, self.entity_mode, self.batch_size = (
            int(max_length),
            entity_mode,
            batch_size,
        )
        self.name, self.device = name, torch.device(device)
        if cloze_entities not in ("entry_mean", "causal"):
            raise ValueError(f"cloze_entities: {cloze_entities!r} not entry_mean / causal")
        self.cloze_entities = cloze_entities
        if self.max_length < 1 or not 1 <= (stride or self.max_length) <= self.max_length:
            raise ValueError(f"max_length {max_length} < 1 or stride {stride} not in [1, it]")
        if memo_size < 0:
            raise ValueError(f"memo_size {memo_size} < 0")
        self.stride, self.memo_size = stride, int(memo_size)
        if batch_tokens is not None and batch_tokens < 1:
            raise ValueError(f"batch_tokens {batch_tokens} < 1")
        self.batch_tokens = batch_tokens
        self._entities: dict[tuple[int, ...], list[int]] = {}
        self.misses = 0
        self._memo: OrderedDict[tuple, dict[int, tuple[float, bool]]] = OrderedDict()

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def annotate(self, words: Sequence[str], entity_ids: Sequence[int], text: str | None = None
                 ) -> None:  # fmt: skip
        """Register the entity ids of the text " ".join(words), or of *text* holding the words
        in order with its own whitespace (LAMBADA as released) (0 = no entity)."""
        ids, ents = align(self.tokenizer, words, entity_ids, text)
        self._entities[tuple(ids)] = ents

    def clear_annotations(self) -> None:
        """Forget the registered texts (and the memo): CBT registers one text per candidate."""
        self._entities.clear()
        self._memo.clear()

    def _cloze_mode(self) -> EntityMode:
        if self.entity_mode == "running_mean" and self.cloze_entities == "entry_mean":
            return "context_mean"
        return self.entity_mode

    def _entity_ids(self, tokens: tuple[int, ...]) -> list[int]:
        if self.entity_mode == "none" or not self._entities:
            return [0] * len(tokens)
        ents = self._entities.get(tokens)
        if ents is None:
            self.misses += 1
            return [0] * len(tokens)
        return ents

    def _score(self, rows: list[tuple[list[int], list[int], int]], mode: EntityMode
               ) -> list[tuple[float, bool]]:  # fmt: skip
        """rows: (input ids, entity ids, number of trailing tokens scored). A row whose every
        position was scored before (same ids, entities and entity vectors: LAMBADA's
        last-token request after its full-word one) is answered from the memo, without a
        second forward pass."""
        out = [self._memo_get(r, mode) for r in rows]
        todo = [i for i, r in enumerate(out) if r is None]
        if todo:
            for i, r in zip(todo, self._forward([rows[i] for i in todo], mode), strict=True):
                out[i] = r
        return out

    @staticmethod
    def _memo_key(row, mode: EntityMode) -> tuple:
        x, e, n = row
        # context_mean: the vectors depend on where the context ends
        return (tuple(x), tuple(e), mode, len(x) - n if mode == "context_mean" else None)

    def _memo_get(self, row, mode: EntityMode) -> tuple[float, bool] | None:
        x, e, n = row
        key = self._memo_key(row, mode)
        seen = self._memo.get(key)
        if seen is None or any(p not in seen for p in range(len(x) - n, len(x))):
            return None
        self._memo.move_to_end(key)
        scores = [seen[p] for p in range(len(x) - n, len(x))]
        return sum(lp for lp, _ in scores), all(g for _, g in scores)

    @torch.no_grad()
    def _forward(self, rows: list[tuple[list[int], list[int], int]], mode: EntityMode
                 ) -> list[tuple[float, bool]]:  # fmt: skip
        """One forward pass over rows (x, e, n): the input is x[:-1] (at most max_length
        tokens), the last n tokens of x are scored; per row (sum, all greedy), also memoised."""
        width = max(len(r[0]) - 1 for r in rows)
        ids = torch.full((len(rows), width), self.bos_id, dtype=torch.long)
        ents = torch.zeros_like(ids)
        for i, (x, e, _) in enumerate(rows):
            ids[i, : len(x) - 1], ents[i, : len(e) - 1] = torch.tensor(x[:-1]), torch.tensor(e[:-1])
        context_len = torch.tensor([len(x) - n for x, _, n in rows], device=self.device)
        logits = self.model(ids.to(self.device), ents.to(self.device), entity_mode=mode,
                            context_len=context_len)  # fmt: skip
        logp = torch.log_softmax(logits.float(), -1)
        out = []
        for i, (x, e, n) in enumerate(rows):
            pos = torch.arange(len(x) - n - 1, len(x) - 1, device=logp.device)
            gold = torch.tensor(x[len(x) - n :], device=logp.device)
            lp = logp[i, pos]
            gold_lp = lp.gather(1, gold[:, None])[:, 0].tolist()
            greedy = (lp.argmax(-1) == gold).tolist()
            out.append((sum(gold_lp), all(greedy)))
            key = self._memo_key((x, e, n), mode)
            memo = self._memo.setdefault(key, {})
            self._memo.move_to_end(key)
            memo.update(zip(range(len(x) - n, len(x)), zip(gold_lp, greedy, strict=True),
                            strict=True))  # fmt: skip
            while len(self._memo) > self.memo_size:
                self._memo.popitem(last=False)
        return out

    def _rows(self, context: Sequence[int], continuation: Sequence[int], stride: int | None
              ) -> list[tuple[list[int], list[int], int]]:  # fmt: skip
        """The windows (x, e, n) of one request (`window_spans`); no context = `bos_id`."""
        ents = self._entity_ids(tuple(context) + tuple(continuation))
        prefix, ents = (list(context), ents) if context else ([self.bos_id], [0, *ents])
        whole = [*prefix, *continuation]
        spans = window_spans(len(prefix), len(continuation), self.max_length, stride)
        return [(whole[a:c], ents[a:c], c - b) for a, b, c in spans]

    def _score_requests(self, requests, mode: EntityMode, stride: int | None
                        ) -> list[tuple[float, bool]]:  # fmt: skip
        """Per (context, continuation): the sum over its windows, greedy iff every window is."""
        rows, owner = [], []
        for k, (context, continuation) in enumerate(requests):
            for row in self._rows(context, continuation, stride):
                rows.append(row)
                owner.append(k)
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i][0]))
        totals = [0.0] * len(requests)
        greedy = [True] * len(requests)
        for chunk in self._chunks(order, rows):
            for i, (ll, g) in zip(chunk, self._score([rows[i] for i in chunk], mode), strict=True):
                totals[owner[i]] += ll
                greedy[owner[i]] = greedy[owner[i]] and g
        return list(zip(totals, greedy, strict=True))

    def _chunks(self, order: list[int], rows) -> list[list[int]]:
        """Forward passes over rows (longest first): at most batch_size rows and, with
        batch_tokens, at most that many padded input tokens -- the logits of a pass are tokens x
        vocabulary floats (8 windows of SmolLM2's 8,192 tokens: ~13 GB), so long windows go
        fewer at a time; a row longer than the budget goes alone."""
        out: list[list[int]] = []
        for i in order:
            width = len(rows[out[-1][0]][0]) - 1 if out else 0  # the chunk's first is its widest
            full = out and (
                len(out[-1]) >= self.batch_size
                or (
                    self.batch_tokens is not None and (len(out[-1]) + 1) * width > self.batch_tokens
                )
            )
            if not out or full:
                out.append([i])
            else:
                out[-1].append(i)
        return out

    def _loglikelihood_tokens(self, requests: Sequence[TokenRequest]) -> list[tuple[float, bool]]:
        return self._score_requests(requests, self._cloze_mode(), None)

    def _loglikelihood_rolling_tokens(self, texts: Sequence[Sequence[int]]) -> list[RollingScore]:
        scores = self._score_requests([((), t) for t in texts], self.entity_mode, self.stride)
        return [RollingScore(ll, len(t)) for (ll, _), t in zip(scores, texts, strict=True)]


ENTITY_MODES = ("none", "running_mean", "table")  # what a scorer may be given (`corelm`)


@register_lm("corelm")
def corelm(*, checkpoint: str | Path | None = None, **options) -> CoreLMScorer:
    """The "corelm" factory (models/registry.py `language_model`): `CoreLMScorer(**options)`
    on in-memory parts (model=, tokenizer=, bos_id=, ...), or, with `checkpoint=` an artifact
    folder of train_corelm or its best.pt, the trained model (`from_artifact`)."""
    if checkpoint is None:
        if "model" not in options:
            raise LMRequestError("corelm: give checkpoint=<a train_corelm artifact folder or "
                                 "its best.pt>, or the in-memory model= and tokenizer=")  # fmt: skip
        return CoreLMScorer(**options)
    given = sorted({"model", "tokenizer", "bos_id"} & set(options))
    if given:
        raise LMRequestError(f"corelm: checkpoint={checkpoint} brings its own model, tokenizer "
                             f"and prefix token; {given} cannot be given with it")  # fmt: skip
    return from_artifact(checkpoint, **options)


def from_artifact(checkpoint: str | Path, *, device: str | torch.device = "cpu",
                  max_length: int | None = None, entity_mode: EntityMode | None = "none",
                  name: str | None = None, **options) -> CoreLMScorer:  # fmt: skip
    """A scorer of the CoreLM saved in *checkpoint* (models/corelm/artifact.py): conditioned
    on the backbone's prefix token at a text's start and windows of its whole context unless
    max_length says less, as train_corelm's own evaluation (models/corelm/evaluate.py) and
    lm-evaluation-harness's hf model score. entity_mode None (what the harness's model_args
    make of "none") is "none"; name defaults to the stage item (the folder's name)."""
    entity_mode = entity_mode or "none"
    if entity_mode not in ENTITY_MODES:
        raise LMRequestError(f"corelm: entity_mode {entity_mode!r} not in {list(ENTITY_MODES)}")
    trained = load_corelm(checkpoint, device=device)
    context = trained.backbone.max_length
    window = context if max_length is None else int(max_length)
    if not 1 <= window <= context:
        raise LMRequestError(f"corelm: max_length {max_length} outside [1, {context}] (the "
                             f"context of {trained.folder})")  # fmt: skip
    return CoreLMScorer(trained.model, trained.backbone.tokenizer,
                        bos_id=trained.backbone.prefix_id, max_length=window,
                        entity_mode=entity_mode, name=name or trained.name, device=device,
                        **options)  # fmt: skip


__all__ = ["CoreLMScorer", "corelm", "from_artifact"]
