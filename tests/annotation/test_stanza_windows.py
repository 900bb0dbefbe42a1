"""tasks/annotation/annotators/stanza_windows.py: Stanza's encoder windows, its long-sentence loop fixed."""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest

from tasks.annotation.annotators.stanza_windows import install, stanzas_own, subword_windows


def tokenizer(framed: bool) -> SimpleNamespace:
    ids = {"[CLS]": 1, "[SEP]": 2, "[PAD]": 0, "</s>": 3}
    return SimpleNamespace(
        cls_token="[CLS]" if framed else None, sep_token="[SEP]" if framed else None,
        pad_token="[PAD]", eos_token="</s>",
        convert_tokens_to_ids=lambda t: ids[t] if t in ids else int(t[1:]) + 10,
    )  # fmt: skip


def document(sentence_lengths: list[int], pieces_per_word: int = 1) -> dict:
    sent_id, word_id, subwords = [], [], []
    for s, n in enumerate(sentence_lengths):
        for _ in range(n):
            sent_id.append(s)
            word_id += [len(sent_id) - 1] * pieces_per_word
    subwords = [f"w{i}" for i in range(len(word_id))]
    return {"subwords": subwords, "word_id": word_id, "sent_id": sent_id}


@pytest.mark.parametrize("framed", [True, False])
def test_where_stanza_returns_the_windows_are_stanzas(framed):
    stanzas = stanzas_own()
    assert stanzas is not subword_windows
    rng = random.Random(7)
    config = SimpleNamespace(bert_window_size=34)
    for _ in range(50):  # sentences of up to two windows (64 pieces): Stanza returns
        doc = document([rng.randint(1, 32) for _ in range(rng.randint(1, 12))],
                       pieces_per_word=rng.randint(1, 2))  # fmt: skip
        ours = subword_windows(doc, config, tokenizer(framed))
        np.testing.assert_array_equal(ours, stanzas(doc, config, tokenizer(framed)))


def test_a_sentence_longer_than_two_windows_is_chopped_into_full_windows():
    """The case Stanza's function never returns from (a 300-piece sentence, windows of 128)."""
    doc = document([10, 300, 10])
    windows = subword_windows(doc, SimpleNamespace(bert_window_size=130), tokenizer(True))
    assert windows.shape[1] == 130
    inner = [[int(t) - 10 for t in w if t >= 10] for w in windows]
    assert [i for w in inner for i in w] == list(range(320))  # every piece once, in order
    assert [len(w) for w in inner] == [10, 128, 128, 54]  # boundary, chops, the rest
    assert all(w[0] == 1 and 2 in w for w in windows.tolist())


def test_install_puts_it_where_the_coref_model_calls_it():
    from stanza.models.coref import bert, model

    install()
    install()  # idempotent
    assert (
        bert.get_subwords_batches is subword_windows and stanzas_own().__module__ == bert.__name__
    )
    assert model.bert is bert  # CorefModel._bertify calls bert.get_subwords_batches
