"""The project's one language-model scoring interface, and the evaluations built on it.

Why one interface: the word-level LSTM RNNLM, the 5-gram, EntityNLM, GPT-2 / SmolLM2 and CoreLM
are judged by the same numbers (perplexity, LAMBADA, CBT). Each model implements two primitives;
every evaluation here is written once against them, so two models' numbers differ only by the
model, never by the evaluation code.

The contract (lm-evaluation-harness, lm_eval/api/model.py, `LM.loglikelihood` and
`LM.loglikelihood_rolling`, whose semantics are kept):

- `loglikelihood(requests)`: requests = [(context, continuation), ...] strings; returns, per
  request, (sum of the natural-log probabilities of the continuation's tokens given the context
  and the continuation tokens before them, is_greedy). is_greedy is True iff every continuation
  token is the model's argmax given the gold prefix (teacher-forced, token by token), exactly as
  the harness's `max_equal`. An empty context means "the start of a text": the model conditions
  on whatever it uses there (GPT-2's <|endoftext|>, an n-gram's <s>).
- `loglikelihood_rolling(texts)`: per text, the log probability of the whole text from its start
  (no context), as a `RollingScore(loglikelihood, n_tokens)`. The harness returns the float only;
  the token count is added here because token-level perplexity needs it and only the model knows
  it (an n-gram that scores </s> counts it). How a text longer than the model's window is scored
  (disjoint or strided windows) is the model's business; each token is predicted exactly once.

Token boundaries. A model's tokens are integer ids (as the harness's `tok_encode`), produced by
`tokenize(text)`: ids, not strings, because byte-level BPE pieces are not readable strings and
every model (word-level ones through their vocabulary) already works in ids. The primitive every model implements is the token-level form of the contract,
`_loglikelihood_tokens([(context_ids, continuation_ids), ...])` (the harness's own internal name),
and `loglikelihood` is a string helper on top of it: it splits a (context, continuation) pair into
tokens as the harness's `TemplateLM._encode_pair` does (trailing spaces of the context move to the
continuation; continuation ids = tokens of context + continuation after the context's tokens).
The token-level form is public (`loglikelihood_tokens`) because some evaluations need to place
the boundary inside a word: the LAMBADA last-BPE-token convention conditions on the context plus
all but the last token of the target word and asks whether the last token is the argmax -- one
token-level request (context_ids + word_ids[:-1], word_ids[-1:]) whose is_greedy is the answer.

Evaluations (all send their requests in ONE call, so a model may batch and sort them):
- `perplexity`: token-level and word-level perplexity (and bits per byte) of texts.
- `lambada`: last-word accuracy, full-word greedy (the harness's lambada_openai) or
  last-BPE-token (how OpenAI computed GPT-2's number; openai/gpt-2 issue #131).
- `cbt`: Children's Book Test cloze by candidate likelihood (Radford et al. 2019, §3.2).
Per-item correctness is returned with every accuracy, for paired significance tests.

Registry: model families register a factory with `@register_lm("name")`; `get_lm(name, **kw)`
builds one. `TableLM` (a fixed n-gram probability table over whitespace tokens) is the reference
implementation of the contract: its numbers can be computed by hand, and it lets the evaluations
run without torch. Nothing here imports torch or transformers.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Literal

from tasks.core.errors import CorefreproError
from tasks.core.registry import Registry

TokenRequest = tuple[Sequence[int], Sequence[int]]  # (context ids, continuation ids)
BLANK = "XXXXX"  # the CBT blank (Hill et al. 2015), as in tasks/corpora/cbt.py


class LMRequestError(CorefreproError, ValueError):
    """A request or evaluation input a language model cannot score (says which one and why)."""


class UnknownLMError(CorefreproError, LookupError):
    """No language model is registered under this name (the message lists the known names)."""


class LMRegistryError(CorefreproError, ValueError):
    """A bad registration: an empty name, or two different factories under one name."""


@dataclass(frozen=True)
class RollingScore:
    """Log probability (natural log) of a whole text, and how many tokens were predicted."""

    loglikelihood: float
    n_tokens: int


# ============================================================================================
# The interface
# ============================================================================================


class LanguageModel(ABC):
    """What every LM of the project implements: `tokenize` and `_loglikelihood_tokens`.

    Override `_loglikelihood_rolling_tokens` for a model with a bounded context window (the
    default scores each text as one request with an empty context). The public methods check
    the inputs and the number of results, so implementations can trust them.
    """

    name: str = "lm"

    @abstractmethod
    def tokenize(self, text: str) -> list[int]:
        """The model's token ids for *text* (no begin/end-of-text tokens)."""

    @abstractmethod
    def _loglikelihood_tokens(self, requests: Sequence[TokenRequest]) -> list[tuple[float, bool]]:
        """Per (context ids, non-empty continuation ids): (sum of log probs, is_greedy)."""

    def _loglikelihood_rolling_tokens(self, texts: Sequence[Sequence[int]]) -> list[RollingScore]:
        """Per token list: its log probability from the start of a text."""
        scores = self.loglikelihood_tokens([((), tokens) for tokens in texts])
        return [RollingScore(ll, len(t)) for (ll, _), t in zip(scores, texts, strict=True)]

    def loglikelihood_tokens(self, requests: Sequence[TokenRequest]) -> list[tuple[float, bool]]:
        """Token-level `loglikelihood`: requests are (context ids, continuation ids) pairs."""
        checked = [_check_token_request(self, i, r) for i, r in enumerate(_sequence(requests))]
        if not checked:
            return []
        return _same_length(
            self, "_loglikelihood_tokens", self._loglikelihood_tokens(checked), checked
        )

    def loglikelihood(self, requests: Sequence[tuple[str, str]]) -> list[tuple[float, bool]]:
        """Per (context, continuation) string pair: (log P(continuation | context), is_greedy)."""
        return self.loglikelihood_tokens(
            [self.encode_pair(*_pair(self, i, r)) for i, r in enumerate(_sequence(requests))]
        )

    def loglikelihood_rolling(self, requests: Sequence[str]) -> list[RollingScore]:
        """Per text: RollingScore(log P(text), number of tokens predicted)."""
        token_lists = []
        for i, text in enumerate(_sequence(requests)):
            if not isinstance(text, str):
                raise LMRequestError(f"{self.name}: text {i} is a {type(text).__name__}, not a str")
            tokens = self.tokenize(text)
            if not tokens:
                raise LMRequestError(f"{self.name}: text {i} ({text!r}) has no tokens to score")
            token_lists.append(tokens)
        if not token_lists:
            return []
        scores = self._loglikelihood_rolling_texts(requests, token_lists)
        return _same_length(self, "_loglikelihood_rolling_texts", scores, token_lists)

    def _loglikelihood_rolling_texts(
        self, texts: Sequence[str], token_lists: Sequence[Sequence[int]]
    ) -> list[RollingScore]:
        """The texts and their ids: override where a model reads more of a text than its ids
        (a word model restarting at each of its lines, models/entitynlm/lm.py)."""
        return self._loglikelihood_rolling_tokens(token_lists)

    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """(context ids, continuation ids) as the harness's `_encode_pair` splits them.

        Trailing whitespace of the context moves to the continuation; the continuation's ids are
        the ids of context + continuation after the context's own ids. Where the context's ids
        are not a prefix of the whole's (a merge across the boundary), the continuation is
        tokenized on its own, so the scored text is still exactly context + continuation (the
        harness would cut the whole's ids at len(context ids) regardless).
        """
        n_spaces = len(context) - len(context.rstrip())
        if n_spaces:
            context, continuation = context[:-n_spaces], context[-n_spaces:] + continuation
        context_ids = self.tokenize(context)
        whole = self.tokenize(context + continuation)
        if whole[: len(context_ids)] == context_ids:
            return context_ids, whole[len(context_ids) :]
        return context_ids, self.tokenize(continuation)


def _sequence(requests: object) -> Sequence:
    if isinstance(requests, (str, bytes)) or not isinstance(requests, Sequence):
        raise LMRequestError(f"requests must be a list, not a {type(requests).__name__}")
    return requests


def _pair(lm: LanguageModel, i: int, request: object) -> tuple[str, str]:
    if not (
        isinstance(request, tuple | list)
        and len(request) == 2
        and all(isinstance(s, str) for s in request)
    ):
        raise LMRequestError(f"{lm.name}: request {i} is not a (context, continuation) str pair")
    if not request[1]:
        raise LMRequestError(f"{lm.name}: request {i} has an empty continuation")
    return request[0], request[1]


def _check_token_request(lm: LanguageModel, i: int, request: object) -> TokenRequest:
    if not (isinstance(request, tuple | list) and len(request) == 2):
        raise LMRequestError(f"{lm.name}: token request {i} is not a (context, continuation) pair")
    context, continuation = (tuple(part) for part in request)
    if not continuation:
        raise LMRequestError(f"{lm.name}: token request {i} has an empty continuation")
    if not all(isinstance(t, Integral) for t in context + continuation):
        raise LMRequestError(f"{lm.name}: token request {i} holds something other than int ids")
    return tuple(map(int, context)), tuple(map(int, continuation))  # numpy ints become ints


def _same_length(lm: LanguageModel, method: str, results: list, requests: Sequence) -> list:
    if len(results) != len(requests):
        raise CorefreproError(
            f"{lm.name}.{method} returned {len(results)} results for {len(requests)} requests"
        )
    return results


def window_spans(
    n_context: int, n_continuation: int, max_length: int, stride: int | None = None
) -> list[tuple[int, int, int]]:
    """(start, split, end) per window over context + continuation: the window's request is
    (whole[start:split], whole[split:end]); each continuation token is predicted exactly once.

    lm-evaluation-harness's rolling windows (lm_eval/utils.py `get_rolling_token_windows`
    then `make_disjoint_window`, as `HFLM.loglikelihood_rolling` calls them with context =
    [prefix token]): the first window predicts min(max_length, n) tokens, every later one the
    next `stride` tokens (the harness's max_seq_len - context_len + 1; stride None =
    max_length, the harness's context_len 1), and every window is full: its input is the
    max_length tokens before its last predicted token, reaching back into the context. A
    continuation that fits is one request cut as the harness's `_loglikelihood_tokens` cuts
    it: input = (context + continuation)[-(max_length + 1):][:-1]. The context must hold at
    least one token (the model's prefix for "the start of a text").
    """
    if max_length < 1 or n_context < 1:
        raise LMRequestError(
            f"window_spans: max_length {max_length} < 1 or an empty context ({n_context})"
        )
    stride = max_length if stride is None else stride
    if not 1 <= stride <= max_length:
        raise LMRequestError(f"window_spans: stride {stride} outside [1, {max_length}]")
    out, done = [], 0
    while done < n_continuation:
        size = min(n_continuation - done, max_length if done == 0 else stride)
        end = n_context + done + size
        out.append((max(0, end - max_length - 1), end - size, end))
        done += size
    return out


def token_windows(
    context: Sequence[int], continuation: Sequence[int], max_length: int, stride: int | None = None
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The (context ids, continuation chunk) requests of `window_spans`."""
    whole = (*context, *continuation)
    return [
        (whole[a:b], whole[b:c])
        for a, b, c in window_spans(len(context), len(continuation), max_length, stride)
    ]


# ============================================================================================
# Registry
# ============================================================================================
#
# A family registers a factory (a LanguageModel subclass or a function returning one) in its own
# module; the registry knows a family once that module has been imported.

_REGISTRY: Registry[Callable[..., LanguageModel]] = Registry("language model", error=UnknownLMError)


def register_lm(
    name: str,
) -> Callable[[Callable[..., LanguageModel]], Callable[..., LanguageModel]]:
    """Decorator: make `get_lm(name, **kwargs)` call the decorated class or factory."""
    if not isinstance(name, str) or not name.strip():
        raise LMRegistryError(f"a language model name must be a non-empty string, not {name!r}")

    def register(factory: Callable[..., LanguageModel]) -> Callable[..., LanguageModel]:
        known = _REGISTRY.get(name)
        if known is not None and known is not factory:
            raise LMRegistryError(
                f"language model {name!r} is already registered (by {_qualname(known)}); "
                f"{_qualname(factory)} cannot take the name"
            )
        return _REGISTRY.register(name, factory)

    return register


def get_lm(name: str, /, **kwargs: object) -> LanguageModel:
    """Build the language model registered as *name* with *kwargs*."""
    factory = _REGISTRY.get(name)
    if factory is None:
        known = ", ".join(repr(n) for n in available_lms()) or "none"
        raise UnknownLMError(f"no language model registered as {name!r}; known: {known}")
    lm = factory(**kwargs)
    if not isinstance(lm, LanguageModel):
        raise LMRegistryError(
            f"{_qualname(factory)} (registered as {name!r}) returned a {type(lm).__name__}, "
            "not a LanguageModel"
        )
    return lm


def lm_factory(name: str) -> Callable[..., LanguageModel] | None:
    """The factory registered as *name* (None if none is): what a caller reads to see which
    keywords it takes (models/harness.py)."""
    return _REGISTRY.get(name)


def available_lms() -> tuple[str, ...]:
    """The registered names, sorted."""
    return tuple(_REGISTRY.names())


def _qualname(factory: Callable) -> str:
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', factory)}"


# ============================================================================================
# Reference model: a fixed n-gram probability table
# ============================================================================================


@register_lm("table")
class TableLM(LanguageModel):
    """An n-gram LM given as its probability table, over whitespace-separated tokens.

    probs: {history: {token: P(token | history)}}, every history a tuple of the previous
    order - 1 tokens (all the same length: () for a unigram, (prev,) for a bigram), padded at the
    start of a text with BOS ("<s>"); each distribution must sum to 1. splits: {word: pieces}, a
    toy subword tokenizer (a word split into several tokens, so tokens and words differ).
    Token ids are positions in the sorted vocabulary; the greedy token of a history is its most
    probable one, ties going to the lowest id (as argmax does). A history missing from the
    table is an error; a token missing from a distribution has probability 0 (log prob -inf).
    """

    BOS = "<s>"

    def __init__(
        self,
        probs: Mapping[tuple[str, ...], Mapping[str, float]],
        *,
        splits: Mapping[str, Sequence[str]] | None = None,
        name: str = "table",
    ):
        self.name = name
        self.probs = {tuple(h): dict(dist) for h, dist in _check_table(name, probs).items()}
        self.order = len(next(iter(self.probs))) + 1
        self.splits = {word: tuple(pieces) for word, pieces in (splits or {}).items()}
        words = {w for h, dist in self.probs.items() for w in (*h, *dist)} - {self.BOS}
        words |= {piece for pieces in self.splits.values() for piece in pieces}
        self.vocab: tuple[str, ...] = tuple(sorted(words))
        self.ids = {w: i for i, w in enumerate(self.vocab)}
        self.greedy = {
            h: min(dist, key=lambda w: (-dist[w], self.ids[w])) for h, dist in self.probs.items()
        }

    def tokenize(self, text: str) -> list[int]:
        pieces = [p for word in text.split() for p in self.splits.get(word, (word,))]
        unknown = [p for p in pieces if p not in self.ids]
        if unknown:
            raise LMRequestError(f"{self.name}: {unknown[0]!r} is not in the vocabulary")
        return [self.ids[p] for p in pieces]

    def _loglikelihood_tokens(self, requests: Sequence[TokenRequest]) -> list[tuple[float, bool]]:
        return [self._score(context, continuation) for context, continuation in requests]

    def _score(self, context: Sequence[int], continuation: Sequence[int]) -> tuple[float, bool]:
        words = [self.BOS] * (self.order - 1) + [self._word(i) for i in context]
        total, greedy = 0.0, True
        for i in continuation:
            history = tuple(words[len(words) - self.order + 1 :])
            dist = self.probs.get(history)
            if dist is None:
                raise LMRequestError(f"{self.name}: no distribution for the history {history}")
            word = self._word(i)
            p = dist.get(word, 0.0)
            total += math.log(p) if p > 0 else -math.inf
            greedy = greedy and self.greedy[history] == word
            words.append(word)
        return total, greedy

    def _word(self, i: int) -> str:
        if not 0 <= i < len(self.vocab):
            raise LMRequestError(f"{self.name}: token id {i} is outside the vocabulary")
        return self.vocab[i]


def _check_table(name: str, probs: object) -> Mapping[tuple[str, ...], Mapping[str, float]]:
    if not isinstance(probs, Mapping) or not probs:
        raise LMRequestError(f"{name}: the probability table is empty")
    if len({len(h) for h in probs}) != 1:
        raise LMRequestError(f"{name}: histories of different lengths in one table")
    for history, dist in probs.items():
        if not dist or any(p < 0 for p in dist.values()):
            raise LMRequestError(f"{name}: the distribution after {history} is empty or negative")
        if not math.isclose(sum(dist.values()), 1.0, abs_tol=1e-9):
            raise LMRequestError(
                f"{name}: the distribution after {history} sums to {sum(dist.values())}, not 1"
            )
    return probs


# ============================================================================================
# Evaluations
# ============================================================================================


@dataclass(frozen=True)
class AccuracyResult:
    """Accuracy over n items, and each item's correctness (for paired significance tests)."""

    accuracy: float
    n: int
    correct: tuple[bool, ...]


def _accuracy(correct: Sequence[bool]) -> dict:
    correct = tuple(bool(c) for c in correct)
    return {"accuracy": sum(correct) / len(correct), "n": len(correct), "correct": correct}


def _exp_per_unit(neg_loglikelihood: float, units: int) -> float:
    try:
        return math.exp(neg_loglikelihood / units)
    except OverflowError:
        return math.inf


# --- perplexity ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Perplexity:
    """Perplexity of a set of texts, per model token, per word and per byte.

    token_perplexity = exp(-loglikelihood / n_tokens), n_tokens = tokens the model predicted
    (its own tokenization: compare it only between models sharing a tokenizer).
    word_perplexity = exp(-loglikelihood / n_words), byte_perplexity = exp(-loglikelihood /
    n_bytes), bits_per_byte = -loglikelihood / n_bytes / ln 2 (lm-evaluation-harness's
    `word_perplexity`, `byte_perplexity`, `bits_per_byte`, aggregations `weighted_perplexity`
    and `bits_per_byte`): comparable across tokenizers. Words and bytes are counted on the
    texts, or on their originals (`perplexity`). loglikelihood: natural-log total.
    """

    token_perplexity: float
    word_perplexity: float
    byte_perplexity: float
    bits_per_byte: float
    loglikelihood: float
    n_tokens: int
    n_words: int
    n_bytes: int
    n_texts: int


def perplexity(
    lm: LanguageModel, texts: Sequence[str], *, originals: Sequence[str] | None = None
) -> Perplexity:
    r"""Token-, word- and byte-level perplexity of *texts*, each scored from its start (rolling).

    originals: per text, the string its words and bytes are counted on, where the scored text
    is a rewriting of it -- lm-evaluation-harness's wikitext task scores the detokenized page
    and counts `len(re.split(r"\s+", page))` words and the UTF-8 bytes of the page "before
    detokenization" (lm_eval/tasks/wikitext/preprocess_wikitext.py `process_results`), which
    is exactly what is counted then. Without originals: the whitespace-separated words of the
    texts (the same count as the harness's for a text not starting or ending with whitespace).
    """
    texts = _sequence(texts)
    if not texts:
        raise LMRequestError("perplexity: no texts to score")
    if originals is not None and len(_sequence(originals)) != len(texts):
        raise LMRequestError("perplexity: originals must be one str per text")
    return perplexity_of_scores(lm.loglikelihood_rolling(texts), texts, originals=originals)


def perplexity_of_scores(
    scores: Sequence[RollingScore], texts: Sequence[str], *, originals: Sequence[str] | None = None
) -> Perplexity:
    """`perplexity` from the texts' rolling scores, for a caller that keeps each text's score
    as well (EntityNLM's per-document Eq. 11 estimates): the one token/word/byte accounting."""
    texts = _sequence(texts)
    if not texts or len(scores) != len(texts):
        raise LMRequestError(f"perplexity: {len(scores)} scores for {len(texts)} texts")
    if originals is None:
        n_words = sum(len(text.split()) for text in texts)
        counted = texts
    else:
        counted = _sequence(originals)
        if len(counted) != len(texts) or not all(isinstance(o, str) for o in counted):
            raise LMRequestError("perplexity: originals must be one str per text")
        n_words = sum(len(re.split(r"\s+", original)) for original in counted)
    total = sum(s.loglikelihood for s in scores)
    n_tokens = sum(s.n_tokens for s in scores)
    n_bytes = sum(len(text.encode("utf-8")) for text in counted)
    return Perplexity(
        token_perplexity=_exp_per_unit(-total, n_tokens),
        word_perplexity=_exp_per_unit(-total, n_words),
        byte_perplexity=_exp_per_unit(-total, n_bytes),
        bits_per_byte=-total / n_bytes / math.log(2),
        loglikelihood=total,
        n_tokens=n_tokens,
        n_words=n_words,
        n_bytes=n_bytes,
        n_texts=len(texts),
    )


# --- LAMBADA ---------------------------------------------------------------------------------

LambadaConvention = Literal["full_word", "last_token"]


@dataclass(frozen=True)
class LambadaResult(AccuracyResult):
    """LAMBADA last-word accuracy under one convention, with each target's log probability.

    loglikelihoods: per passage, log P(target) -- the whole " word" (full_word) or its last
    token given the rest (last_token).
    """

    convention: LambadaConvention
    loglikelihoods: tuple[float, ...]

    @property
    def perplexity(self) -> float:
        """exp(-mean target log prob): lambada_openai's `perplexity` metric (full_word)."""
        return _exp_per_unit(-sum(self.loglikelihoods), self.n)


def split_lambada(passage: str) -> tuple[str, str]:
    """(context, last word): the passage split at its last space, as lambada_openai does."""
    context, _, word = passage.rpartition(" ")
    if not context or not word:
        raise LMRequestError(
            f"LAMBADA passage {passage[:60]!r} has no context and last word separated by a space"
        )
    return context, word


def lambada(
    lm: LanguageModel, passages: Sequence[str], *, convention: LambadaConvention = "full_word"
) -> LambadaResult:
    """Last-word prediction accuracy on LAMBADA passages (Paperno et al. 2016).

    full_word (lm-evaluation-harness lambada_openai: doc_to_text = the passage without its last
    word, doc_to_target = " " + last word, acc = is_greedy): correct iff every token of the
    word is the argmax. last_token (how OpenAI computed GPT-2's LAMBADA accuracy, Radford et al.
    2019, §3.3, as told in github.com/openai/gpt-2 issue #131 and lm-evaluation-harness issue
    #356): condition on the context plus all but the last token of the word; correct iff the
    word's last token is the argmax. A one-token word is scored the same way by both.
    """
    if convention not in ("full_word", "last_token"):
        raise LMRequestError(f"unknown LAMBADA convention {convention!r}; use full_word/last_token")
    passages = _sequence(passages)
    if not passages:
        raise LMRequestError("lambada: no passages to score")
    requests = []
    for i, passage in enumerate(passages):
        if not isinstance(passage, str):
            raise LMRequestError(f"lambada: passage {i} is a {type(passage).__name__}, not a str")
        context, word = split_lambada(passage)
        context_ids, word_ids = lm.encode_pair(context, " " + word)
        if convention == "last_token":
            context_ids, word_ids = context_ids + word_ids[:-1], word_ids[-1:]
        requests.append((context_ids, word_ids))
    scores = lm.loglikelihood_tokens(requests)
    return LambadaResult(
        **_accuracy([greedy for _, greedy in scores]),
        convention=convention,
        loglikelihoods=tuple(ll for ll, _ in scores),
    )


# --- Children's Book Test --------------------------------------------------------------------


@dataclass(frozen=True)
class ClozeItem:
    """One CBT question: context sentences, a question with one XXXXX, candidates, answer."""

    context: Sequence[str]
    question: str
    candidates: Sequence[str]
    answer: str


@dataclass(frozen=True)
class ClozeResult(AccuracyResult):
    """CBT accuracy; per item the chosen candidate and every candidate's log probability."""

    predictions: tuple[str, ...]
    scores: tuple[tuple[float, ...], ...]


def cbt(lm: LanguageModel, items: Sequence[ClozeItem]) -> ClozeResult:
    """Children's Book Test accuracy by candidate likelihood.

    Radford et al. 2019, §3.2: "compute the probability of each choice and the rest of the
    sentence conditioned on this choice according to the LM, and predict the one with the
    highest probability". Per candidate: context = the context sentences and the question up to
    the blank, continuation = the candidate and the rest of the question. Ties go to the
    earliest candidate.
    """
    items = _sequence(items)
    if not items:
        raise LMRequestError("cbt: no items to score")
    requests = [r for i, item in enumerate(items) for r in _cloze_requests(i, item)]
    lls = iter(ll for ll, _ in lm.loglikelihood(requests))
    scores = tuple(tuple(next(lls) for _ in item.candidates) for item in items)
    predictions = tuple(
        item.candidates[max(range(len(s)), key=lambda k, s=s: (s[k], -k))]
        for item, s in zip(items, scores, strict=True)
    )
    return ClozeResult(
        **_accuracy([p == item.answer for p, item in zip(predictions, items, strict=True)]),
        predictions=predictions,
        scores=scores,
    )


def _cloze_requests(i: int, item: object) -> list[tuple[str, str]]:
    if not isinstance(item, ClozeItem):
        raise LMRequestError(f"cbt: item {i} is a {type(item).__name__}, not a ClozeItem")
    if item.question.count(BLANK) != 1:
        raise LMRequestError(
            f"cbt: item {i}'s question must hold {BLANK} exactly once: {item.question!r}"
        )
    if not item.candidates or not all(isinstance(c, str) and c for c in item.candidates):
        raise LMRequestError(f"cbt: item {i} has no candidates, or an empty one")
    if item.answer not in item.candidates:
        raise LMRequestError(f"cbt: item {i}'s answer {item.answer!r} is not a candidate")
    before, after = item.question.split(BLANK)
    context = " ".join([*item.context, before])
    return [(context, candidate + after) for candidate in item.candidates]
