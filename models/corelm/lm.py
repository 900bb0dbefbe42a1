"""A Hugging Face causal LM, with or without CoreLM's Entity-Gating, as the project's
`LanguageModel` (tasks/evaluation/lm.py): every model of this family -- the backbone zero-shot,
FT, CoreLM with and without coreference at test time -- is scored by the same evaluations.

Entities at test time travel beside the text: `annotate(words, entity_ids)` registers a text's
word-level entity ids; a request whose tokens (context + continuation) are exactly a
registered text's tokens gets them per subword token, others get none (counted in `misses`).
A text with no context starts from the backbone's BOS (GPT-2's <|endoftext|>); a text longer
than the window is scored in disjoint windows, each conditioned on the previous token
(lm-evaluation-harness's rolling windows with context length 1): every token predicted once.

Entity vectors (entity_mode "running_mean", models/corelm/model.py): rolling scores (perplexity:
every token is scored) always use the causal mention mean; context/continuation requests
(LAMBADA, CBT: only the continuation is scored) use, with cloze_entities "entry_mean" (default),
App. B's average over the request's context -- "an average of the hidden representation of
all the entity mention in that entry (Section 3.2), excluding the last word and its entity
annotation which were to be predicted" -- and with "causal" the running mean as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch

from models.corelm.data import align
from models.corelm.model import CoreLM, EntityMode
from tasks.evaluation.lm import LanguageModel, RollingScore, TokenRequest, register_lm


@register_lm("corelm")
class CoreLMScorer(LanguageModel):
    """model: a CoreLM (gating or not); entity_mode: how test-time entities get vectors;
    cloze_entities: the vectors of context/continuation requests (module docstring)."""

    def __init__(self, model: CoreLM, tokenizer, *, bos_id: int, max_length: int = 1024,
                 entity_mode: EntityMode = "none", batch_size: int = 8, name: str = "corelm",
                 device: str | torch.device = "cpu",
                 cloze_entities: Literal["entry_mean", "causal"] = "entry_mean"):  # fmt: skip
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
        self._entities: dict[tuple[int, ...], list[int]] = {}
        self.misses = 0
        self._memo: dict[tuple, dict[int, tuple[float, bool]]] = {}

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def annotate(self, words: Sequence[str], entity_ids: Sequence[int]) -> None:
        """Register the entity ids of the text " ".join(words) (0 = no entity)."""
        ids, ents = align(self.tokenizer, words, entity_ids)
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
        todo = [r for r in rows if self._memo_get(r, mode) is None]
        if todo:
            self._forward(todo, mode)
        return [self._memo_get(r, mode) for r in rows]

    @staticmethod
    def _memo_key(row, mode: EntityMode) -> tuple:
        x, e, n = row
        # context_mean: the vectors depend on where the context ends
        return (tuple(x), tuple(e), mode, len(x) - n if mode == "context_mean" else None)

    def _memo_get(self, row, mode: EntityMode) -> tuple[float, bool] | None:
        x, e, n = row
        seen = self._memo.get(self._memo_key(row, mode))
        if seen is None or any(p not in seen for p in range(len(x) - n, len(x))):
            return None
        scores = [seen[p] for p in range(len(x) - n, len(x))]
        return sum(lp for lp, _ in scores), all(g for _, g in scores)

    @torch.no_grad()
    def _forward(self, rows: list[tuple[list[int], list[int], int]], mode: EntityMode) -> None:
        width = max(len(r[0]) for r in rows)
        ids = torch.full((len(rows), width), self.bos_id, dtype=torch.long)
        ents = torch.zeros_like(ids)
        for i, (x, e, _) in enumerate(rows):
            ids[i, : len(x)], ents[i, : len(e)] = torch.tensor(x), torch.tensor(e)
        context_len = torch.tensor([len(x) - n for x, _, n in rows], device=self.device)
        logits = self.model(ids.to(self.device), ents.to(self.device), entity_mode=mode,
                            context_len=context_len)  # fmt: skip
        logp = torch.log_softmax(logits.float(), -1)
        for i, (x, e, n) in enumerate(rows):
            pos = torch.arange(len(x) - n - 1, len(x) - 1, device=logp.device)
            gold = ids[i, len(x) - n : len(x)].to(logp.device)
            lp = logp[i, pos]
            gold_lp = lp.gather(1, gold[:, None])[:, 0].tolist()
            greedy = (lp.argmax(-1) == gold).tolist()
            memo = self._memo.setdefault(self._memo_key((x, e, n), mode), {})
            memo.update(
                zip(range(len(x) - n, len(x)), zip(gold_lp, greedy, strict=True), strict=False)
            )

    def _loglikelihood_tokens(self, requests: Sequence[TokenRequest]) -> list[tuple[float, bool]]:
        rows = []
        for context, continuation in requests:
            seq = (tuple(context) or (self.bos_id,)) + tuple(continuation)
            ents = self._entity_ids(tuple(context) + tuple(continuation))
            ents = ents if context else [0, *ents]
            seq, ents = list(seq[-self.max_length :]), list(ents[-self.max_length :])
            rows.append((seq, ents, len(continuation)))
        order = sorted(range(len(rows)), key=lambda i: -len(rows[i][0]))
        results: list = [None] * len(rows)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            scored = self._score([rows[i] for i in chunk], self._cloze_mode())
            for i, r in zip(chunk, scored, strict=True):
                results[i] = r
        return results

    def _loglikelihood_rolling_tokens(self, texts: Sequence[Sequence[int]]) -> list[RollingScore]:
        out = []
        for tokens in texts:
            tokens = tuple(tokens)
            ents = [0, *self._entity_ids(tokens)]
            seq = [self.bos_id, *tokens]
            rows, start = [], 0
            while start < len(seq) - 1:
                window = seq[start : start + self.max_length]
                rows.append((window, ents[start : start + self.max_length], len(window) - 1))
                start += self.max_length - 1
            total = sum(ll for ll, _ in self._score_batched(rows))
            out.append(RollingScore(total, len(tokens)))
        return out

    def _score_batched(self, rows):
        res = []
        for s in range(0, len(rows), self.batch_size):
            res.extend(self._score(rows[s : s + self.batch_size], self.entity_mode))
        return res


__all__ = ["CoreLMScorer"]
