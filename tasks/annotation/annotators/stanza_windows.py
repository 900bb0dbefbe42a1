"""The encoder windows of Stanza's coreference model, with its long-sentence case fixed.

Stanza 1.15's `stanza.models.coref.bert.get_subwords_batches` cuts a document's subwords into
windows of `bert_window_size - 2` that end on a sentence boundary, and chops a sentence that
does not fit one window. But it looks for the boundary back from the window's end without
stopping at the window's start: in the second window of a sentence longer than two windows
the search runs back into the first, the window's length turns negative and the loop never
ends (its list of windows grows until memory runs out). GUM's reddit documents, whose masked
text is one ~1,200-word "sentence", hit it in training, scoring and the `stanza` annotator.

`subword_windows` is the same rule with the search bounded by the window's start: where
Stanza's function returns, both return the same array (tests/annotation/test_stanza_windows.py); where it
loops, this one chops the sentence into full windows. `install()` puts it in Stanza's module,
which CorefModel calls through (`bert.get_subwords_batches(...)`), before any model is built.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def subword_windows(doc: Any, config: Any, tok: Any) -> np.ndarray:
    """[windows, bert_window_size] token ids: [CLS] window [SEP] padding ([EOS] ... [EOS]
    where the tokenizer has no CLS/SEP), each window ending on a sentence boundary unless one
    sentence is longer than a window."""
    size = config.bert_window_size - 2  # room for the two framing tokens
    subwords = doc["subwords"]
    sentence = [doc["sent_id"][w] for w in doc["word_id"]]
    if tok.cls_token is None or tok.sep_token is None:
        first, last = tok.eos_token, tok.eos_token
    else:
        first, last = tok.cls_token, tok.sep_token
    windows, start = [], 0
    while start < len(subwords):
        end = min(start + size, len(subwords))
        if end < len(subwords):
            cut = end
            while cut > start and sentence[cut - 1] == sentence[cut]:
                cut -= 1
            end = cut if cut > start else end  # no boundary inside: chop the sentence
        window = [first, *subwords[start:end], last] + [tok.pad_token] * (size - (end - start))
        windows.append([tok.convert_tokens_to_ids(t) for t in window])
        start = end
    return np.array(windows)


_REPLACED: list[Any] = []  # Stanza's own function, once install() has replaced it


def install() -> None:
    """Stanza's coreference model cuts its windows with `subword_windows` (idempotent)."""
    from stanza.models.coref import bert

    if bert.get_subwords_batches is not subword_windows:
        _REPLACED[:] = [bert.get_subwords_batches]
        bert.get_subwords_batches = subword_windows


def stanzas_own() -> Any:
    """Stanza's get_subwords_batches, installed over or not (the tests compare with it)."""
    from stanza.models.coref import bert

    return _REPLACED[0] if _REPLACED else bert.get_subwords_batches
