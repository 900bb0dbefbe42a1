"""The builtin modified Kneser-Ney estimator against hand sums, normalisation, lmplz and IRSTLM."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tasks.evaluation.ngram import NgramError, estimate_arpa, load, perplexity, sentences_of

IRSTLM_BIN = Path("/usr/lib/irstlm/bin")  # Debian's irstlm puts its tools here, not on PATH


def read_arpa(path: Path) -> dict[str, tuple[float, float]]:
    """{n-gram: (log10 p, log10 backoff)} of an ARPA file (backoff 0.0 where none is given)."""
    entries, order = {}, 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("\\") and line.endswith("-grams:"):
            order = int(line[1:].split("-")[0])
        elif order and line and not line.startswith("\\"):
            fields = line.split("\t")
            entries[fields[1]] = (float(fields[0]), float(fields[2]) if len(fields) > 2 else 0.0)
    return entries


def markov_text(sentences: int, vocab: int, seed: int) -> list[list[str]]:
    """Text from a random sparse bigram chain with Zipf-like unigrams: real n-gram structure,
    a long tail of rare words, every adjusted count-of-count non-zero."""
    rng = np.random.default_rng(seed)
    zipf = 1 / np.arange(1, vocab + 1)
    successors = [rng.choice(vocab, size=12, p=zipf / zipf.sum()) for _ in range(vocab)]
    out = []
    for _ in range(sentences):
        word, sentence = int(rng.choice(vocab, p=zipf / zipf.sum())), []
        while len(sentence) < 25 and (not sentence or rng.random() > 0.12):
            sentence.append(f"w{word}")
            word = int(rng.choice(successors[word]))
        out.append(sentence)
    return out


@pytest.fixture(scope="module")
def corpus() -> tuple[list[list[str]], list[list[str]]]:
    text = markov_text(1500, 800, seed=11)
    train, test = text[:1350], text[1350:]
    vocab = {w for s in train for w in s}
    closed = [[w if w in vocab else "w0" for w in s] for s in test]  # same vocabulary, no OOV
    # the lmplz quirk (raw count in the count-of-counts for the suffixes of the greatest
    # N-gram in suffix order) needs a last-seen word whose raw and adjusted counts differ
    train += [["w1", "zlast"], ["w1", "zlast", "w2"]]
    return train, closed


# --------------------------------------------------------------------------- hand-computed


def test_bigram_by_hand(tmp_path: Path):
    """Chen & Goodman (1998) Eq. 26 and Heafield et al. (2013) Eq. 1-5 worked through by hand.

    Text: "a b" / "a b" / "b". Bigrams (raw = adjusted at the top order): <s> a 2, a b 2,
    b </s> 3, <s> b 1 -> t1 = 1, t2 = 2, t3 = 1, t4 = 0 -> Y = 1/5, D1 = 1 - 2 Y 2/1 = 0.2,
    D2 = 2 - 3 Y 1/2 = 1.7, D3+ = 3 - 4 Y 0/1 = 3. Unigram adjusted counts (left extensions):
    a 1 ({<s>}), b 2 ({a, <s>}), </s> 1 ({b}); t2 = 0, so lmplz's fallback (0.5, 1, 1.5)
    applies to the unigrams. Unigrams: denominator 4, b() = (0.5*2 + 1*1)/4 = 0.5, uniform 1/4
    over {<unk>, a, b, </s>}: p(a) = 0.5/4 + 0.5/4 = 0.25, p(b) = 1/4 + 1/8 = 0.375,
    p(</s>) = 0.25, p(<unk>) = 0.125 (sum 1).
    Context <s>: b(<s>) = (0.2 + 1.7)/3, p(a|<s>) = 0.3/3 + b(<s>) 0.25, p(b|<s>) = 0.8/3 +
    b(<s>) 0.375. Context a: b(a) = 1.7/2, p(b|a) = 0.3/2 + b(a) 0.375. Context b: b(b) = 3/3,
    p(</s>|b) = 0/3 + 1 * 0.25.
    """
    arpa = read_arpa(estimate_arpa([["a", "b"], ["a", "b"], ["b"]], tmp_path / "m.arpa", 2,
                                   discount_fallback=(0.5, 1.0, 1.5)))  # fmt: skip
    b_bos, b_a, b_b = 1.9 / 3, 1.7 / 2, 1.0
    expected = {
        "<unk>": (0.125, None),
        "<s>": (1.0, b_bos),
        "a": (0.25, b_a),
        "b": (0.375, b_b),
        "</s>": (0.25, None),
        "<s> a": (0.1 + b_bos * 0.25, None),
        "<s> b": (0.8 / 3 + b_bos * 0.375, None),
        "a b": (0.15 + b_a * 0.375, None),
        "b </s>": (0.25, None),
    }
    assert set(arpa) == set(expected)
    for gram, (p, b) in expected.items():
        assert arpa[gram][0] == pytest.approx(math.log10(p), abs=2e-7), gram
        assert arpa[gram][1] == pytest.approx(0.0 if b is None else math.log10(b), abs=2e-7)


def test_contexts_sum_to_one(tmp_path: Path, corpus):
    train, _ = corpus
    path = estimate_arpa(train[:400], tmp_path / "m.arpa", 3)
    model = load(path)
    vocab = [g for g in read_arpa(path) if " " not in g and g != "<s>"]
    contexts = [["<s>"], ["<s>", "w1"], [], ["w1"], ["w3", "w1"], ["zzz-unseen"], ["w5", "w5"]]
    import kenlm

    for context in contexts:
        state = kenlm.State()
        if context[:1] == ["<s>"]:
            model.BeginSentenceWrite(state)
            context = context[1:]
        else:
            model.NullContextWrite(state)
        for word in context:
            nxt = kenlm.State()
            model.BaseScore(state, word, nxt)
            state = nxt
        total = sum(10 ** model.BaseScore(state, w, kenlm.State()) for w in vocab)
        assert total == pytest.approx(1.0, abs=2e-5), context


def test_perplexity_counts_tokens_and_oovs(tmp_path: Path):
    path = estimate_arpa([["a", "b"], ["a", "b"], ["b"]], tmp_path / "m.arpa", 2,
                         discount_fallback=(0.5, 1.0, 1.5))  # fmt: skip
    result = perplexity(path, [["a", "b"], ["c"]])
    # a|<s>, b|a, </s>|b ; c = <unk> (OOV), </s>|<unk> backs off to p(</s>)
    expected = math.log10(0.1 + 1.9 / 3 * 0.25) + math.log10(0.15 + 0.85 * 0.375)
    expected += math.log10(0.25) + math.log10(1.9 / 3 * 0.125) + math.log10(0.25)
    assert result["tokens"] == 5 and result["oov"] == 1 and result["sentences"] == 2
    assert result["log10_prob"] == pytest.approx(expected, abs=1e-5)
    assert result["perplexity"] == pytest.approx(10 ** (-expected / 5), rel=1e-5)


def test_input_errors(tmp_path: Path):
    with pytest.raises(NgramError, match="reserves"):
        estimate_arpa([["a", "<unk>"]], tmp_path / "m.arpa", 2)
    with pytest.raises(NgramError, match="whitespace"):
        estimate_arpa([["a b"]], tmp_path / "m.arpa", 2)
    with pytest.raises(NgramError, match="discount_fallback"):
        estimate_arpa([["a", "b"]], tmp_path / "m.arpa", 2)


def test_sentences_of():
    assert sentences_of(list("abcde"), [0, 2, 4]) == [["a", "b"], ["c", "d"], ["e"]]


def test_deterministic(tmp_path: Path, corpus):
    train, _ = corpus
    a = estimate_arpa(train[:300], tmp_path / "a.arpa", 4)
    b = estimate_arpa(train[:300], tmp_path / "b.arpa", 4)
    assert a.read_bytes() == b.read_bytes()


# --------------------------------------------------------------------------- real toolkits


@pytest.mark.skipif(shutil.which("lmplz") is None, reason="KenLM's lmplz is not on PATH")
@pytest.mark.parametrize("interpolate_unigrams", [True, False])
def test_same_arpa_as_lmplz(tmp_path: Path, corpus, interpolate_unigrams: bool):
    """Every n-gram, probability and backoff as lmplz writes them (it prints ~7 digits)."""
    train, _ = corpus
    ours = read_arpa(estimate_arpa(train, tmp_path / "ours.arpa", 5,
                                   interpolate_unigrams=interpolate_unigrams))  # fmt: skip
    theirs = read_arpa(estimate_arpa(train, tmp_path / "lmplz.arpa", 5, estimator="lmplz",
                                     interpolate_unigrams=interpolate_unigrams))  # fmt: skip
    assert set(ours) == set(theirs)
    worst = max(abs(ours[g][i] - theirs[g][i]) for g in ours for i in (0, 1))
    assert worst < 2e-6


def irstlm_tool(name: str) -> str | None:
    return shutil.which(name) or (str(IRSTLM_BIN / name) if (IRSTLM_BIN / name).is_file() else None)


@pytest.mark.skipif(
    irstlm_tool("tlm") is None,
    reason="IRSTLM's tlm not found (apt-get install irstlm; /usr/lib/irstlm/bin)",
)
def test_perplexity_close_to_irstlm(tmp_path: Path, corpus):
    """IRSTLM's improved Kneser-Ney (tlm -lm=ikn) on the same text, queried the same way.

    Not the same algorithm, so not the same numbers: IRSTLM gives the unigram leftover mass
    to <unk> (as lmplz --interpolate_unigrams 0) and pads sentences with N-1 <s> that it
    counts as n-grams ("<s> <s> w"). Its perplexity lies between ours with and without unigram
    interpolation, close to the latter (WikiText-2 valid 90/10, 5-gram: 250.2 / 266.2 /
    275.5, docs/families/entitynlm.md).
    """
    train, test = corpus
    text = tmp_path / "train.txt"
    text.write_text("".join("<s> " + " ".join(s) + " </s>\n" for s in train), encoding="utf-8")
    irst = tmp_path / "irst.arpa"
    proc = subprocess.run(
        [irstlm_tool("tlm"), f"-tr={text}", "-n=5", "-lm=ikn", "-ps=no", f"-o={irst}"],
        capture_output=True,
        text=True,
        env={**os.environ, "IRSTLM": str(IRSTLM_BIN.parent)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = perplexity(estimate_arpa(train, tmp_path / "ours.arpa", 5), test)["perplexity"]
    sri = perplexity(
        estimate_arpa(train, tmp_path / "sri.arpa", 5, interpolate_unigrams=False), test
    )["perplexity"]
    theirs = perplexity(irst, test)["perplexity"]
    assert ours < theirs < sri * 1.02
    assert theirs / ours < 1.15
