"""The 5-gram baseline of Ji et al. (2017) Table 1: modified Kneser-Ney as KenLM's `lmplz` builds it.

Ji et al. (papers/000 §5.1) compare with "5-gram language model implemented in KenLM (Heafield
et al., 2013)". `lmplz` (the estimator) is not in the package registries; the `kenlm` Python
module (the query side) is. So this module re-implements lmplz's estimation with numpy, writes
ARPA, and queries the ARPA through `kenlm.Model` -- or shells out to a real `lmplz` when the
user has one (`estimator="lmplz"`, params `ngram.estimator`).

What lmplz does (kpu/kenlm lm/builder: corpus_count.cc, adjust_counts.cc,
initial_probabilities.cc, interpolate.cc; Heafield, Pouzyrevsky, Clark & Koehn 2013, §3) and so
do we, for order N:
- Input: one sentence per line (here: one `Sequence[str]` per sentence), each wrapped in <s> ...
  </s>. N-grams never cross sentences; only one <s> starts an n-gram ("<s> <s> a" does not
  exist, the padded N-gram is collapsed to "<s> a"). The tokens <s>, </s>, <unk> may not occur
  in the text (lmplz's default refuses them too); vocabulary ids are <unk>=0, <s>=1, </s>=2, then
  words in order of first appearance.
- Adjusted counts (Chen & Goodman 1998, §3; Heafield et al. 2013, Eq. 1): the N-grams and the
  n-grams that start with <s> keep their raw counts; every other n-gram x gets the number of
  distinct words v such that v x occurs (<s> counts as such a word). <unk> and <s> are unigrams
  with adjusted count 0.
- Discounts per order from the count-of-counts t_k of adjusted counts (Chen & Goodman Eq. 26;
  Heafield et al. Eq. 2): Y = t1 / (t1 + 2 t2), D_k = k - (k + 1) Y t_{k+1} / t_k, k = 1, 2, 3+.
  lmplz quirk reproduced: for the last n-gram of each lower order in its suffix-sorted stream
  (the suffixes of the greatest N-gram in suffix order) the raw count, not the adjusted count,
  enters t_k (adjust_counts.cc flushes those with `actual_counts`). lmplz refuses discounts
  from data where some t_k = 0 or D_k falls outside [0, k] ("small or artificial data");
  `discount_fallback` substitutes fixed discounts then, like `lmplz --discount_fallback`.
- Initial probabilities (Heafield et al. Eq. 3-4): u(w | c) = (a(c w) - D(a(c w))) / sum_x a(c x),
  backoff b(c) = (D1 N1(c .) + D2 N2(c .) + D3 N3+(c .)) / sum_x a(c x).
- Interpolation (Heafield et al. Eq. 5): p(w | c) = u(w | c) + b(c) p(w | c'); the unigrams are
  interpolated with the uniform 1 / |V| over the vocabulary without <s> (with <unk>), so <unk>
  gets b(empty) / |V| (lmplz's default --interpolate_unigrams); p(<s>) = 1 (log10 0).
- ARPA: log10 p for every n-gram seen, log10 b for every context, 0 for n-grams ending in
  </s> or <unk> (never contexts). Arithmetic is float32 in lmplz's order of operations, so the
  ARPA agrees with lmplz's to the last printed digit but for rare 1-ulp differences of log10f.

Perplexity (`perplexity`) is what KenLM's `query` reports: every token and </s> is scored,
<s> is the context of the first word, OOV words score p(<unk>) and count as tokens.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from tasks.core.errors import CorefreproError

UNK, BOS, EOS = 0, 1, 2  # lmplz's fixed ids (lm/vocab.hh GrowableVocab)
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>")
DISCOUNT_FALLBACK = (0.5, 1.0, 1.5)  # lmplz --discount_fallback's defaults (D1, D2, D3+)
ESTIMATORS = ("builtin", "lmplz")
F32 = np.float32


class NgramError(CorefreproError, ValueError):
    """Text or data the estimator cannot build a model from (says which and why)."""


@dataclass
class NgramSettings:
    """params.yaml `ngram`: how the 5-gram baseline is estimated.

    estimator: "builtin" (this module) or "lmplz" (KenLM's binary on PATH, for users who have
    it); discount_fallback: D1, D2, D3+ to use where the data give no valid discounts (small
    corpora such as the embedded default), null to fail as lmplz does by default.
    """

    order: int = 5  # Ji et al. 2017 §5.1: "5-gram language model"
    estimator: Literal["builtin", "lmplz"] = "builtin"
    discount_fallback: list[float] | None = field(default_factory=lambda: list(DISCOUNT_FALLBACK))

    def validate(self, path: str) -> None:
        from tasks.core.settings import ConfigError

        if self.order < 2:
            raise ConfigError(f"{path}.order: must be >= 2, got {self.order}")
        if self.discount_fallback is not None and len(self.discount_fallback) != 3:
            raise ConfigError(f"{path}.discount_fallback: three values (D1, D2, D3+) or null")


# --------------------------------------------------------------------------- counting


@dataclass
class _Counts:
    """The n-grams of one order: uid = row; rows sorted by (prefix uid, last word)."""

    prefix: np.ndarray  # uid of the context (order n-1); for unigrams the word id itself
    suffix: np.ndarray  # uid of the (n-1)-gram suffix (order n-1); unused for unigrams
    last: np.ndarray  # word id of the last word
    first: np.ndarray  # word id of the first word
    raw: np.ndarray  # raw counts (int64)
    adjusted: np.ndarray | None = None


@dataclass
class _Corpus:
    vocab: np.ndarray  # id -> token (object array), specials first
    stream: np.ndarray  # word ids, each sentence as <s> w1 ... wm </s>
    start: np.ndarray  # per position: index of its sentence's <s>


def _corpus(sentences: Iterable[Sequence[str]]) -> _Corpus:
    sentences = [list(s) for s in sentences]
    lengths = np.array([len(s) for s in sentences], dtype=np.int64)
    tokens = np.array([t for s in sentences for t in s], dtype=object)
    bad = [
        t for t in pd.unique(tokens) if not isinstance(t, str) or not t or t != "".join(t.split())
    ]
    if bad:
        raise NgramError(f"tokens must be non-empty strings without whitespace, got {bad[:3]!r}")
    codes, vocab = pd.factorize(np.concatenate([np.array(SPECIAL_TOKENS, dtype=object), tokens]))
    codes = codes[len(SPECIAL_TOKENS) :]
    special = sorted({SPECIAL_TOKENS[c] for c in np.unique(codes[codes < len(SPECIAL_TOKENS)])})
    if special:
        raise NgramError(
            f"the text contains {special}: lmplz reserves <s>, </s> and <unk> and refuses them; "
            "rename the corpus's own unknown-word token to a plain word (Ji et al. 2017 §4 use 'unk')"
        )
    spans = lengths + 2
    bos_at = np.concatenate([[0], np.cumsum(spans)[:-1]]).astype(np.int64)
    stream = np.empty(int(spans.sum()), dtype=np.int64)
    is_word = np.ones(len(stream), dtype=bool)
    is_word[bos_at] = is_word[bos_at + spans - 1] = False
    stream[bos_at], stream[bos_at + spans - 1], stream[is_word] = BOS, EOS, codes
    return _Corpus(np.asarray(vocab, dtype=object), stream, np.repeat(bos_at, spans))


def _count(corpus: _Corpus, order: int) -> tuple[list[_Counts], list[np.ndarray]]:
    """Raw counts of every order, and per position the uid of the n-gram ending there (-1: none).

    An n-gram of order n is keyed by (uid of its (n-1)-prefix, last word): np.unique on that
    int64 key numbers the n-grams of each order in lexicographic order of their word ids.
    """
    stream, vocab_size = corpus.stream, len(corpus.vocab)
    positions = np.arange(len(stream))
    ends = stream != BOS  # an n-gram ends at every position but a <s>
    unigrams = _Counts(
        prefix=np.arange(vocab_size),
        suffix=np.arange(vocab_size),
        last=np.arange(vocab_size),
        first=np.arange(vocab_size),
        raw=np.bincount(stream[ends], minlength=vocab_size).astype(np.int64),
    )
    tables, uid_at = [unigrams], [stream.copy()]  # a <s> position is the unigram <s> as context
    for n in range(2, order + 1):
        valid = np.flatnonzero(ends & (positions - (n - 1) >= corpus.start))
        keys = uid_at[-1][valid - 1] * vocab_size + stream[valid]
        unique, inverse = np.unique(keys, return_inverse=True)
        uid = np.full(len(stream), -1, dtype=np.int64)
        uid[valid] = inverse
        suffix = np.empty(len(unique), dtype=np.int64)
        suffix[inverse] = uid_at[-1][valid]
        prefix = unique // vocab_size
        tables.append(
            _Counts(
                prefix=prefix,
                suffix=suffix,
                last=unique % vocab_size,
                first=tables[-1].first[prefix],
                raw=np.bincount(inverse, minlength=len(unique)).astype(np.int64),
            )
        )
        uid_at.append(uid)
    return tables, uid_at


def _adjust(tables: list[_Counts]) -> None:
    """Kneser-Ney adjusted counts (Chen & Goodman §3; Heafield et al. 2013 Eq. 1), in place."""
    for n, table in enumerate(tables[:-1], start=1):
        left_extensions = np.bincount(tables[n].suffix, minlength=len(table.raw))
        table.adjusted = np.where(table.first == BOS, table.raw, left_extensions)
    tables[-1].adjusted = tables[-1].raw
    tables[0].adjusted[[UNK, BOS]] = 0  # lmplz: <unk> and <s> are unigrams with count 0


def _last_in_suffix_order(corpus: _Corpus, order: int) -> int:
    """Position of the greatest padded N-gram in lmplz's suffix order (last word most significant)."""
    stream, start = corpus.stream, corpus.start
    candidates = np.flatnonzero(stream != BOS)
    for back in range(order):
        at = candidates - back
        words = np.where(at >= start[candidates], stream[np.maximum(at, 0)], BOS)  # <s> padding
        candidates = candidates[words == words.max()]
    return int(candidates[0])


def _count_of_counts(
    tables: list[_Counts], uid_at: list[np.ndarray], corpus: _Corpus
) -> np.ndarray:
    """t[n-1, k] = number of n-grams with adjusted count k (k = 1..4), with lmplz's quirk."""
    order = len(tables)
    t = np.zeros((order, 5), dtype=np.int64)
    last = _last_in_suffix_order(corpus, order)
    for n, table in enumerate(tables, start=1):
        counts = table.adjusted.copy()
        # adjust_counts.cc's final flush uses the raw count of these n-grams
        if n < order and last - corpus.start[last] + 1 >= n:
            uid = uid_at[n - 1][last]
            counts[uid] = table.raw[uid]
        t[n - 1] = np.bincount(np.minimum(counts, 5), minlength=6)[:5]
    return t


def _discounts(t: np.ndarray, fallback: Sequence[float] | None) -> np.ndarray:
    """D[n-1] = (0, D1, D2, D3+) per order (Chen & Goodman Eq. 26), float32 as lmplz."""
    discounts = np.zeros((len(t), 4), dtype=F32)
    for i, n in enumerate(t):
        problem = next(
            (f"no {i + 1}-grams with adjusted count {j}" for j in (1, 2, 3) if n[j] == 0), None
        )
        if problem is None:
            y = F32(n[1]) / F32(n[1] + 2.0 * n[2])
            for j in (1, 2, 3):
                discounts[i, j] = F32(j) - F32(j + 1) * y * F32(n[j + 1]) / F32(n[j])
            bad = [j for j in (1, 2, 3) if not 0 <= discounts[i, j] <= j]
            if bad:
                problem = f"{i + 1}-gram discount D{bad[0]} = {discounts[i, bad[0]]} outside [0, {bad[0]}]"
        if problem is not None:
            if fallback is None:
                raise NgramError(
                    f"cannot estimate Kneser-Ney discounts: {problem} (small or artificial data); "
                    "set discount_fallback (params ngram.discount_fallback) as lmplz's --discount_fallback"
                )
            discounts[i, 1:] = np.asarray(fallback, dtype=F32)
    return discounts


# --------------------------------------------------------------------------- probabilities


def _initial(
    adjusted: np.ndarray, context: np.ndarray, discount: np.ndarray, groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """u(w | c) per n-gram and b(c) per context (Heafield et al. Eq. 3-4), float32 in lmplz's
    order of operations. context: the context uid of each n-gram, in range(groups)."""
    denominator = np.bincount(context, weights=adjusted, minlength=groups).astype(F32)
    gamma = np.zeros(groups, dtype=F32)
    category = np.minimum(adjusted, 3)
    for j in (1, 2, 3):  # entry.gamma += D_j * count_j, j = 1, 2, 3
        n_j = np.bincount(context[category == j], minlength=groups).astype(F32)
        gamma = gamma + discount[j] * n_j
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = gamma / denominator
        u = (adjusted.astype(F32) - discount[category]) / denominator[context]
    return u, gamma


def _interpolate(
    tables: list[_Counts], discounts: np.ndarray, interpolate_unigrams: bool = True
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Interpolated p per n-gram and backoff b per n-gram (1 where not a context), float32."""
    vocab_size = len(tables[0].raw)
    uniform = F32(1.0 / F32(vocab_size - 1))  # interpolate.cc: includes <unk>, excludes <s>
    probs: list[np.ndarray] = []
    backoffs: list[np.ndarray] = []
    for n, table in enumerate(tables, start=1):
        if n == 1:
            context, groups = np.zeros(len(table.raw), dtype=np.int64), 1
        else:
            context, groups = table.prefix, len(tables[n - 2].raw)
        u, gamma = _initial(table.adjusted, context, discounts[n - 1], groups)
        if n == 1 and interpolate_unigrams:
            u[UNK] = 0.0  # <unk> is a zeroton (lmplz's default --interpolate_unigrams 1)
            p = u + gamma[0] * uniform
            p[BOS] = 1.0  # initial_probabilities.cc: <s> has probability 1, backoff weight 0
        elif n == 1:  # --interpolate_unigrams 0 (SRILM's way): all the leftover mass to <unk>
            u[UNK] = gamma[0]
            p = u
            p[BOS] = 1.0
        else:
            p = u + gamma[table.prefix] * probs[-1][table.suffix]
            backoffs[-1] = np.ones(groups, dtype=F32)
            is_context = np.bincount(table.prefix, minlength=groups) > 0
            backoffs[-1][is_context] = gamma[is_context]
        probs.append(p.astype(F32))
        backoffs.append(np.ones(len(table.raw), dtype=F32))
    for table, backoff in zip(tables, backoffs, strict=True):
        backoff[np.isin(table.last, (UNK, EOS))] = 1.0  # never contexts (interpolate.cc)
    return probs, backoffs


# --------------------------------------------------------------------------- ARPA


def _texts(tables: list[_Counts], vocab: np.ndarray) -> list[np.ndarray]:
    """The n-grams as strings: object arrays, so numpy concatenates in C without fixed widths."""
    words = np.asarray(vocab, dtype=object)
    texts = [words]
    for table in tables[1:]:
        texts.append(texts[-1][table.prefix] + " " + words[table.last])
    return texts


def _format(values: np.ndarray) -> list[str]:
    # %.9g round-trips a float32; + 0.0 turns a -0.0 into 0
    return [f"{v:.9g}" for v in (values.astype(np.float64) + 0.0).tolist()]


def _write_arpa(path: Path, tables: list[_Counts], vocab: np.ndarray, probs, backoffs) -> None:
    from tasks.core.storage import write_text

    texts = _texts(tables, vocab)
    order = len(tables)
    parts = ["\\data\\\n"] + [f"ngram {n}={len(t.raw)}\n" for n, t in enumerate(tables, 1)]
    for n in range(1, order + 1):
        with np.errstate(divide="ignore"):
            logp = np.minimum(F32(0.0), np.log10(probs[n - 1]))  # print.cc: min(0, log10f(p))
            logb = np.log10(backoffs[n - 1])
        columns = [_format(logp), texts[n - 1].tolist()] + ([_format(logb)] if n < order else [])
        parts.append(f"\n\\{n}-grams:\n")
        parts.append("\n".join(map("\t".join, zip(*columns, strict=True))) + "\n")
    parts.append("\n\\end\\\n")
    write_text(path, "".join(parts))


def estimate_arpa(
    sentences: Iterable[Sequence[str]],
    path: str | Path,
    order: int = 5,
    *,
    estimator: Literal["builtin", "lmplz"] = "builtin",
    discount_fallback: Sequence[float] | None = None,
    interpolate_unigrams: bool = True,
) -> Path:
    """Estimate an interpolated modified Kneser-Ney LM of `order` and write it as ARPA to `path`.

    sentences: one token sequence per sentence (lmplz's one line; <s>/</s> are added). To model
    a document as one unit pass it as one sequence. estimator="lmplz" runs KenLM's `lmplz -o
    <order>` from PATH instead (the same model, from the real tool). discount_fallback: (D1, D2,
    D3+) where the counts give no valid discounts (lmplz --discount_fallback), None to raise.
    interpolate_unigrams=False: lmplz --interpolate_unigrams 0, the leftover unigram mass all
    to <unk> (as SRILM and IRSTLM do) instead of spread uniformly over the vocabulary.
    """
    if order < 2:
        raise NgramError(f"order must be >= 2, got {order}")
    if estimator not in ESTIMATORS:
        raise NgramError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if estimator == "lmplz":
        return _run_lmplz(sentences, path, order, discount_fallback, interpolate_unigrams)
    corpus = _corpus(sentences)
    tables, uid_at = _count(corpus, order)
    _adjust(tables)
    discounts = _discounts(_count_of_counts(tables, uid_at, corpus), discount_fallback)
    probs, backoffs = _interpolate(tables, discounts, interpolate_unigrams)
    _write_arpa(path, tables, corpus.vocab, probs, backoffs)
    return path


def _run_lmplz(
    sentences: Iterable[Sequence[str]],
    path: Path,
    order: int,
    fallback: Sequence[float] | None,
    interpolate_unigrams: bool,
) -> Path:
    binary = shutil.which("lmplz")
    if binary is None:
        raise NgramError(
            "estimator 'lmplz' needs KenLM's lmplz on PATH (build kpu/kenlm with cmake); "
            "or use estimator 'builtin' (params ngram.estimator)"
        )
    command = [binary, "-o", str(order), "--arpa", str(path)]
    command += ["--interpolate_unigrams", "1" if interpolate_unigrams else "0"]
    if fallback is not None:
        command += ["--discount_fallback", *(str(d) for d in fallback)]
    with tempfile.TemporaryDirectory() as tmp:
        text = Path(tmp) / "text.txt"
        text.write_text("".join(" ".join(s) + "\n" for s in sentences), encoding="utf-8")
        command += ["--text", str(text), "-T", tmp, "-S", "10%"]
        proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        raise NgramError(f"{' '.join(command)} failed: {proc.stderr[-2000:]}")
    return path


# --------------------------------------------------------------------------- querying


def load(arpa_path: str | Path) -> Any:
    """The ARPA (or KenLM binary) file as a `kenlm.Model`."""
    import kenlm

    path = Path(arpa_path)
    if not path.is_file():
        raise NgramError(f"{path}: no such language model file")
    return kenlm.Model(str(path))


def perplexity(arpa_path: str | Path | Any, sentences: Iterable[Sequence[str]]) -> dict[str, float]:
    """Score sentences as KenLM's `query` does: {log10_prob, tokens (with </s>), oov, perplexity,
    perplexity_excluding_oov, sentences}.

    perplexity = 10 ** (-log10_prob / tokens), OOV tokens included (scored as p(<unk>)) as
    `query` prints it first; excluding OOVs drops their scores and counts.
    """
    model = arpa_path if hasattr(arpa_path, "full_scores") else load(arpa_path)
    total = oov_total = 0.0
    tokens = oovs = count = 0
    for sentence in sentences:
        count += 1
        for logprob, _, oov in model.full_scores(" ".join(sentence), bos=True, eos=True):
            total += logprob
            tokens += 1
            if oov:
                oovs += 1
                oov_total += logprob
    if tokens == 0:
        raise NgramError("no sentences to score")
    kept = tokens - oovs
    return {
        "log10_prob": total,
        "tokens": tokens,
        "oov": oovs,
        "sentences": count,
        "perplexity": 10.0 ** (-total / tokens),
        "perplexity_excluding_oov": 10.0 ** (-(total - oov_total) / kept) if kept else math.nan,
    }


def sentences_of(tokens: Sequence[str], sentence_starts: Sequence[int]) -> list[list[str]]:
    """Split a document's tokens at its sentence starts (the views' `sentence_starts`)."""
    bounds = [*sorted(set(sentence_starts) | {0}), len(tokens)]
    return [list(tokens[a:b]) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


__all__ = [
    "DISCOUNT_FALLBACK",
    "NgramError",
    "NgramSettings",
    "estimate_arpa",
    "load",
    "perplexity",
    "sentences_of",
]
