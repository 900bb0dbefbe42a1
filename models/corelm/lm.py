"""A Hugging Face causal LM, with or without CoreLM's Entity-Gating, as the project's
`LanguageModel` (tasks/evaluation/lm.py): every model of this family -- the backbone zero-shot,
FT, CoreLM with and without coreference at test time -- is scored by the same evaluations.

Entities at test time travel beside the text: `annotate(words, entity_ids)` registers a text's
word-level entity ids; a request whose tokens (context + continuation) are exactly a
registered text's tokens gets them per subword token, others get none (counted in `misses`).
A text with no context starts from the backbone's BOS (GPT-2's <|endoftext|>); a text longer
than the window is scored in disjoint windows, each conditioned on the previous token
(lm-evaluation-harness's rolling windows with context length 1): every token predicted once.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from models.corelm.data import align
from models.corelm.model import CoreLM, EntityMode
from tasks.evaluation.lm import LanguageModel, RollingScore, TokenRequest, register_lm


@register_lm("corelm")
class CoreLMScorer(LanguageModel):
    """model: a CoreLM (gating or not); entity_mode: how test-time entities get vectors."""

    def __init__(self, model: CoreLM, tokenizer, *, bos_id: int, max_length: int = 1024,
                 entity_mode: EntityMode = "none", batch_size: int = 8, name: str = "corelm",
                 device: str | torch.device = "cpu"):  # fmt: skip
        self.model, self.tokenizer, self.bos_id = model.eval(), tokenizer, int(bos_id)
        self.max_length, self.entity_mode, self.batch_size = (
            int(max_length),
            entity_mode,
            batch_size,
        )
        self.name, self.device = name, torch.device(device)
        self._entities: dict[tuple[int, ...], list[int]] = {}
        self.misses = 0
        self._memo: dict[tuple, dict[int, tuple[float, bool]]] = {}

    def tokenize(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def annotate(self, words: Sequence[str], entity_ids: Sequence[int]) -> None:
        """Register the entity ids of the text " ".join(words) (0 = no entity)."""
        ids, ents = align(self.tokenizer, words, entity_ids)
        self._entities[tuple(ids)] = ents

    def _entity_ids(self, tokens: tuple[int, ...]) -> list[int]:
        if self.entity_mode == "none" or not self._entities:
            return [0] * len(tokens)
        ents = self._entities.get(tokens)
        if ents is None:
            self.misses += 1
            return [0] * len(tokens)
        return ents

    def _score(self, rows: list[tuple[list[int], list[int], int]]) -> list[tuple[float, bool]]:
        """rows: (input ids, entity ids, number of trailing tokens scored). A row whose every
        position was scored before (same ids and entities: LAMBADA's last-token request after
        its full-word one) is answered from the memo, without a second forward pass."""
        todo = [r for r in rows if self._memo_get(r) is None]
        if todo:
            self._forward(todo)
        return [self._memo_get(r) for r in rows]

    def _memo_get(self, row) -> tuple[float, bool] | None:
        x, e, n = row
        seen = self._memo.get((tuple(x), tuple(e)))
        if seen is None or any(p not in seen for p in range(len(x) - n, len(x))):
            return None
        scores = [seen[p] for p in range(len(x) - n, len(x))]
        return sum(lp for lp, _ in scores), all(g for _, g in scores)

    @torch.no_grad()
    def _forward(self, rows: list[tuple[list[int], list[int], int]]) -> None:
        width = max(len(r[0]) for r in rows)
        ids = torch.full((len(rows), width), self.bos_id, dtype=torch.long)
        ents = torch.zeros_like(ids)
        for i, (x, e, _) in enumerate(rows):
            ids[i, : len(x)], ents[i, : len(e)] = torch.tensor(x), torch.tensor(e)
        logits = self.model(ids.to(self.device), ents.to(self.device),
                            entity_mode=self.entity_mode)  # fmt: skip
        logp = torch.log_softmax(logits.float(), -1)
        for i, (x, e, n) in enumerate(rows):
            pos = torch.arange(len(x) - n - 1, len(x) - 1, device=logp.device)
            gold = ids[i, len(x) - n : len(x)].to(logp.device)
            lp = logp[i, pos]
            gold_lp = lp.gather(1, gold[:, None])[:, 0].tolist()
            greedy = (lp.argmax(-1) == gold).tolist()
            memo = self._memo.setdefault((tuple(x), tuple(e)), {})
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
            for i, r in zip(chunk, self._score([rows[i] for i in chunk]), strict=True):
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
            res.extend(self._score(rows[s : s + self.batch_size]))
        return res


__all__ = ["CoreLMScorer"]
