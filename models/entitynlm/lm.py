"""Ji et al. 2017's word-level models as the project's `LanguageModel` (tasks/evaluation/lm.py),
so that Table 1's perplexities come from the same `perplexity` as every other LM's (#28):

- `RNNLMScorer` ("rnnlm"): the LSTM baseline, exact log P(x);
- `EntityNLMScorer` ("entitynlm"): log P(x) with R, E, L marginalised by importance sampling
  (Eq. 11, N draws from the proposal Q) -- its `loglikelihood_rolling`. A context/continuation
  request would need P(x_t | x_<t) with the annotation marginalised, which Eq. 11's proposal (it
  reads the whole text, §5.1) does not give: the scorer refuses those requests.

A text is one document: its lines are its sentences (the sentence-scope LSTMs restart at each
line; `lstm_scope: document` models read on), its words are whitespace-separated and already
preprocessed as §4 says (data.py `document_text` writes a Document so); a raw text (a harness
task's) gets §4's word rule, lowercase and numbers -> `num` (punctuation is scored, not dropped),
and words outside the vocabulary score as `unk`. Tokens are words, so the contract's token perplexity is Table 1's word
perplexity: every word predicted, no end-of-sentence event.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from pathlib import Path

import torch

from models.entitynlm.data import (
    Document,
    Vocab,
    collate,
    document_text,
    normalize_token,
    text_document,
    token_batches,
)
from models.entitynlm.model import RNNLM, EntityNLM
from models.entitynlm.sampling import DRAW_READINGS, importance_readings, perplexity
from tasks.evaluation.lm import (
    LanguageModel,
    LMRequestError,
    RollingScore,
    TokenRequest,
    perplexity_of_scores,
    register_lm,
)


class WordLM(LanguageModel):
    """The family's common part: the vocabulary's ids, texts as Documents, batches of at most
    max_tokens padded words (`token_batches`, as training and evaluation batch them)."""

    def __init__(self, vocab: Vocab, *, max_tokens: int, device: str | torch.device, name: str):
        if max_tokens < 1:
            raise ValueError(f"max_tokens {max_tokens} < 1")
        self.vocab, self.max_tokens, self.name = vocab, int(max_tokens), name
        self.device = torch.device(device)

    def tokenize(self, text: str) -> list[int]:
        return self.vocab.encode([normalize_token(w) for w in text.split()])

    def _loglikelihood_rolling_texts(self, texts, token_lists) -> list[RollingScore]:
        """Per text (a document, lines = sentences): RollingScore(log P(text), words)."""
        return self._rolling(
            [text_document(text, i, normalize_token) for i, text in enumerate(texts)]
        )

    def _loglikelihood_rolling_tokens(self, texts: Sequence[Sequence[int]]) -> list[RollingScore]:
        """Ids without lines: each text one sentence."""
        return self._rolling(self._documents(texts))

    def _documents(self, token_lists: Sequence[Sequence[int]]) -> list[Document]:
        words = self.vocab.words
        return [text_document(" ".join(words[i] for i in ids), k)
                for k, ids in enumerate(token_lists)]  # fmt: skip

    def _rolling(self, docs: Sequence[Document]) -> list[RollingScore]:
        values: dict[str, float] = {}
        for group in token_batches(docs, self.max_tokens):
            batch = collate(group, self.vocab).to(self.device)
            values.update(zip(batch.doc_ids, self._log_probs(batch, group), strict=True))
        return [RollingScore(values[d.doc_id], len(d.tokens)) for d in docs]

    @abstractmethod
    def _log_probs(self, batch, group: Sequence[Document]) -> list[float]:
        """log P(document) of each document of the batch, in the batch's order."""


@register_lm("rnnlm")
class RNNLMScorer(WordLM):
    """The RNNLM baseline. model: an RNNLM (or `checkpoint=` a train_entitynlm@rnnlm best.pt)."""

    def __init__(self, model: RNNLM | None = None, vocab: Vocab | None = None, *,
                 checkpoint: str | Path | None = None, max_tokens: int = 4096,
                 device: str | torch.device = "cpu", name: str = "rnnlm"):  # fmt: skip
        if checkpoint is not None:
            from models.entitynlm.train import load_trained

            model, vocab = load_trained(checkpoint, "rnnlm")
        if model is None or vocab is None:
            raise ValueError("rnnlm: give model and vocab, or checkpoint")
        super().__init__(vocab, max_tokens=max_tokens, device=device, name=name)
        self.model = model.eval()

    @torch.no_grad()
    def _log_probs(self, batch, group) -> list[float]:
        return self.model.log_words(batch).tolist()

    @torch.no_grad()
    def _loglikelihood_tokens(self, requests: Sequence[TokenRequest]) -> list[tuple[float, bool]]:
        """Each request as one sentence from the start of a text (context first): the sum over
        the continuation's words, greedy iff each is the argmax given the words before it."""
        docs = self._documents([(*c, *x) for c, x in requests])
        out: dict[str, tuple[float, bool]] = {}
        for group in token_batches(docs, self.max_tokens):
            batch = collate(group, self.vocab).to(self.device)
            scores = self.model.token_log_probs(batch, greedy=True)
            for row, d in enumerate(group):
                k = int(d.doc_id)
                span = slice(len(requests[k][0]), len(d.tokens))
                out[d.doc_id] = (float(scores["x"][row, span].double().sum()),
                                 bool(scores["greedy"][row, span].all()))  # fmt: skip
        return [out[d.doc_id] for d in docs]


@register_lm("entitynlm")
class EntityNLMMarginal(WordLM):
    """EntityNLM's words-only log P(x) by Eq. 11: `samples` draws per document from the proposal,
    a fresh generator seeded with `seed` per call (documents batched as `token_batches`). After
    each call, `best_draws` holds per text the best draw's log P(x, r, e, l), a lower bound on
    log P(x) (sampling.py), and `readings` per text the word-only readings of Table 1 from the
    same draws (sampling.py `importance_readings`, issue #56.1): named evaluations that
    `importance_perplexity` reports beside the marginal; `loglikelihood_rolling` serves the
    marginal (Eq. 11) only. lm and proposal: EntityNLM and its proposal Q (or `checkpoint=` a
    train_entitynlm@entitynlm best.pt). progress: anything with update(k), told the documents
    done."""

    def __init__(self, lm: EntityNLM | None = None, proposal: EntityNLM | None = None,
                 vocab: Vocab | None = None, *, checkpoint: str | Path | None = None,
                 samples: int = 100, seed: int = 1, max_tokens: int = 2048,
                 device: str | torch.device = "cpu", name: str = "entitynlm", progress=None):  # fmt: skip
        if checkpoint is not None:
            from models.entitynlm.train import load_trained

            pair, vocab = load_trained(checkpoint, "entitynlm")
            lm, proposal = pair.lm, pair.proposal
        if lm is None or proposal is None or vocab is None:
            raise ValueError("entitynlm: give lm, proposal and vocab, or checkpoint")
        if samples < 1:
            raise ValueError(f"entitynlm: samples {samples} < 1")
        super().__init__(vocab, max_tokens=max_tokens, device=device, name=name)
        self.lm, self.proposal = lm.eval(), proposal.eval()
        self.samples, self.seed, self.progress = int(samples), int(seed), progress
        self.best_draws: list[float] = []
        self.readings: list[dict[str, float]] = []

    def _rolling(self, docs: Sequence[Document]) -> list[RollingScore]:
        self._generator = torch.Generator(device=self.device).manual_seed(int(self.seed))
        self._best: dict[str, float] = {}
        self._readings: dict[str, dict[str, float]] = {}
        scores = super()._rolling(docs)
        self.best_draws = [self._best[d.doc_id] for d in docs]
        self.readings = [self._readings[d.doc_id] for d in docs]
        return scores

    @torch.no_grad()
    def _log_probs(self, batch, group) -> list[float]:
        out = importance_readings(self.lm, self.proposal, batch, self.samples, self._generator)
        self._best.update(zip(batch.doc_ids, out["best_draw"].tolist(), strict=True))
        values = {k: out[k].tolist() for k in DRAW_READINGS}
        for i, doc_id in enumerate(batch.doc_ids):
            self._readings[doc_id] = {k: v[i] for k, v in values.items()}
        if self.progress is not None:
            self.progress.update(len(group))
        return out["marginal"].tolist()

    def importance_perplexity(self, docs: Sequence[Document]) -> dict:
        """Eq. 11 over documents: the perplexity as every LM's (`perplexity_of_scores`), and
        per document log P̂_N(x) and the best draw, the records sampling.document_records
        reads; "readings": {name: {ppl, log_prob}} of sampling.DRAW_READINGS, Table 1's
        word-only readings of the same draws over the same words. The documents' order
        decides their batches."""
        texts = [document_text(d) for d in docs]
        scores = self.loglikelihood_rolling(texts)
        ppl = perplexity_of_scores(scores, texts)
        per_doc = {d.doc_id: {"log_px": s.loglikelihood, "best_draw": best}
                   for d, s, best in zip(docs, scores, self.best_draws, strict=True)}  # fmt: skip
        readings = {}
        for name in DRAW_READINGS:
            total = sum(r[name] for r in self.readings)
            readings[name] = {"ppl": perplexity(total, ppl.n_tokens), "log_prob": total}
        return {"ppl": ppl.token_perplexity, "log_prob": ppl.loglikelihood,
                "tokens": ppl.n_tokens, "documents": per_doc, "readings": readings}  # fmt: skip

    def _loglikelihood_tokens(self, requests: Sequence[TokenRequest]) -> list[tuple[float, bool]]:
        raise LMRequestError(
            f"{self.name}: Eq. 11 estimates whole texts only (loglikelihood_rolling); a "
            "context/continuation request needs P(x_t | x_<t) with R, E, L marginalised, "
            "which the proposal (it reads the whole text) does not give"
        )


__all__ = ["EntityNLMMarginal", "RNNLMScorer", "WordLM"]
