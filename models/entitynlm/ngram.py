"""The 5-gram baseline of Ji et al. 2017 Table 1 as the third item of stage `train_entitynlm`.

It reads the very tokens the RNNLM and EntityNLM are scored on (`prepare_data`: §4
preprocessing, the training split's vocabulary, `unk` elsewhere), ONE DOCUMENT = ONE SEQUENCE
(§4 drops the sentence-final punctuation; the neural models' default sentence scope is given
the boundaries and restarts its LSTMs there, model.py, but predicts no </s> either).
Perplexity counts the same tokens as the RNNLM's: every word, `</s>` NOT counted (the neural
models have no end-of-document or end-of-sentence event); KenLM `query`'s own figure (with
`</s>`) is kept beside it as `ppl_with_eos`.

The stage (flows/train_entitynlm.py) names the ARPA's path and runs the item under its MLflow
run; this module takes them as arguments.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from models.entitynlm.data import PAD, UNK, Vocab, normalize_token
from tasks.core.checkpoints import jsonable
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.settings import settings_to_dict
from tasks.evaluation import ngram
from tasks.evaluation.lm import (
    LanguageModel,
    RollingScore,
    TokenRequest,
    perplexity,
    register_lm,
)
from tasks.evaluation.ngram import NgramSettings

ITEM = "5gram"
LN10 = math.log(10.0)


@register_lm("5gram")
class NgramLM(LanguageModel):
    """The 5-gram (a `kenlm.Model` over the family's words) as the project's LanguageModel.

    A text is one sequence from <s>, its lines ignored (one document = one sequence), no </s>
    scored: the words the neural models predict. Words outside the vocabulary are `unk`, the
    word the ARPA was estimated with (KenLM's own <unk> never occurs). is_greedy compares each
    word with the most probable vocabulary word in its state (V KenLM look-ups per word).
    model and vocab, or `checkpoint=` a model.arpa (its unigrams are the vocabulary).
    """

    def __init__(self, model: Any = None, vocab: Vocab | None = None, *,
                 checkpoint: str | Path | None = None, name: str = ITEM):  # fmt: skip
        if checkpoint is not None:
            model, vocab = ngram.load(checkpoint), Vocab([PAD, *arpa_words(checkpoint)])
        if model is None or vocab is None:
            raise ValueError("5gram: give model and vocab, or checkpoint")
        self.model, self.vocab, self.name = model, vocab, name

    def tokenize(self, text: str) -> list[int]:
        return self.vocab.encode([normalize_token(w) for w in text.split()])

    def _loglikelihood_rolling_tokens(self, texts: Sequence[Sequence[int]]) -> list[RollingScore]:
        words = self.vocab.words
        return [RollingScore(self._log10(" ".join(words[i] for i in ids)) * LN10, len(ids))
                for ids in texts]  # fmt: skip

    def _log10(self, sentence: str) -> float:
        return sum(s[0] for s in self.model.full_scores(sentence, bos=True, eos=False))

    def _loglikelihood_tokens(self, requests: Sequence[TokenRequest]) -> list[tuple[float, bool]]:
        return [self._request(context, continuation) for context, continuation in requests]

    def _request(self, context: Sequence[int], continuation: Sequence[int]) -> tuple[float, bool]:
        import kenlm

        state, out = kenlm.State(), kenlm.State()
        self.model.BeginSentenceWrite(state)
        for i in context:
            self.model.BaseScore(state, self.vocab.words[i], out)
            state, out = out, state
        total, greedy = 0.0, True
        for i in continuation:
            word = self.vocab.words[i]
            greedy = greedy and self._best(state) == word
            total += self.model.BaseScore(state, word, out)
            state, out = out, state
        return total * LN10, greedy

    def _best(self, state) -> str:
        import kenlm

        scratch = kenlm.State()
        candidates = self.vocab.words[1:]  # unk and the words; not the padding
        return max(candidates, key=lambda w: self.model.BaseScore(state, w, scratch))


def arpa_words(path: str | Path) -> list[str]:
    """The words of an ARPA file's unigram section (no <s>, </s>, <unk>), `unk` first."""
    words, inside = [], False
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if line.startswith("\\"):
                if inside:
                    break
                inside = line == "\\1-grams:"
            elif inside and line:
                word = line.split("\t")[1]
                if word not in ngram.SPECIAL_TOKENS:
                    words.append(word)
    if not words:
        raise CorefreproError(f"{path}: no unigrams (not an ARPA file?)")
    return [UNK, *sorted(set(words) - {UNK})]


def scores_of(lm: NgramLM, model: Any, documents: Sequence[Sequence[str]]) -> dict[str, Any]:
    """Table 1's 5-gram perplexity through the LM contract (every word, no </s>), and KenLM
    query's own figure beside it (with </s>: `ppl_with_eos`, and the OOV count)."""
    ppl = perplexity(lm, [" ".join(d) for d in documents])
    with_eos = ngram.perplexity(model, documents)
    return {"ppl": ppl.token_perplexity, "log_prob": ppl.loglikelihood, "tokens": ppl.n_tokens,
            "ppl_with_eos": with_eos["perplexity"], "oov": with_eos["oov"]}  # fmt: skip


def train_ngram(splits, vocab, ncfg: NgramSettings, arpa_path: str | Path, *,
                dataset: str) -> dict[str, Any]:  # fmt: skip
    """Estimate the ARPA at `arpa_path` (relative to the repository, or absolute) on the
    training documents, score dev and test (Table 1 row "5-gram"); `dataset` names the runs."""
    text = {s: [vocab.unk(x.tokens) for x in d] for s, d in splits.items()}
    path = ngram.estimate_arpa(text["train"], resolve_path(arpa_path), ncfg.order, estimator=ncfg.estimator,
                               discount_fallback=ncfg.discount_fallback)  # fmt: skip
    model = ngram.load(path)
    from models.registry import language_model  # the registry imports this module

    lm = language_model(ITEM, model=model, vocab=vocab)
    scores = {s: scores_of(lm, model, text[s]) for s in ("dev", "test") if text[s]}
    stat = {s: {"mean": v["ppl"], "std": 0.0, "n": 1} for s, v in scores.items()}
    return jsonable({
        "model": ITEM, "dataset": dataset, "seeds": 1,
        "vocab_size": len(vocab), "documents": {s: len(d) for s, d in splits.items()},
        "tokens": {s: sum(len(x) for x in d) for s, d in text.items()},
        "dev_ppl": stat.get("dev"), "test_ppl": stat.get("test"),
        "selected": scores, "settings": settings_to_dict(ncfg),
        "sequence": "document", "eos_counted": False, "arpa": str(arpa_path),
    })  # fmt: skip
