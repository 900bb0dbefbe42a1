"""Reference language models whose every probability is written out, so tests can do the sums."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from tasks.core.registry import Registry
from tasks.evaluation import lm as lm_module
from tasks.evaluation.lm import TableLM

# A unigram over three words: P(the) = 1/2, P(cat) = P(sat) = 1/4.
UNIGRAM = {(): {"the": F(1, 2), "cat": F(1, 4), "sat": F(1, 4)}}

# A bigram whose tokenizer splits "sunshine" into "sun" + "##shine" (tokens != words).
# Greedy (argmax) next token after each history, for reading the tests: <s> -> the,
# the -> cat, a -> dog, cat -> sat, dog -> ran, sun -> ##shine, ##shine -> sat, sat -> a,
# ran -> the. No distribution has a tie for its maximum.
BIGRAM = {
    ("<s>",): {"the": F(3, 4), "a": F(1, 4)},
    ("the",): {"cat": F(1, 2), "sun": F(1, 4), "dog": F(1, 4)},
    ("a",): {"cat": F(1, 4), "dog": F(3, 4)},
    ("cat",): {"sat": F(2, 3), "the": F(1, 3)},
    ("dog",): {"sat": F(1, 3), "ran": F(2, 3)},
    ("sun",): {"##shine": F(3, 5), "sat": F(2, 5)},
    ("##shine",): {"sat": F(1)},
    ("sat",): {"the": F(1, 3), "a": F(2, 3)},
    ("ran",): {"the": F(1)},
}
SPLITS = {"sunshine": ("sun", "##shine")}


def as_floats(table: dict) -> dict:
    return {h: {w: float(p) for w, p in dist.items()} for h, dist in table.items()}


@pytest.fixture
def unigram() -> TableLM:
    return TableLM(as_floats(UNIGRAM), name="unigram")


@pytest.fixture
def bigram() -> TableLM:
    return TableLM(as_floats(BIGRAM), splits=SPLITS, name="bigram")


@pytest.fixture
def empty_registry(monkeypatch: pytest.MonkeyPatch) -> Registry:
    """A fresh, empty LM registry for the test (the module's own is restored after it)."""
    registry: Registry = Registry("language model", error=lm_module.UnknownLMError)
    monkeypatch.setattr(lm_module, "_REGISTRY", registry)
    return registry
