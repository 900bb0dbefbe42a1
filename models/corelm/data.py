"""Documents + the CoreLM view -> subword token ids with one entity id per subword token.

The view (tasks/graphs/views.py, CORELM_VIEW) gives word-level entity ids, one row per
(document, nesting layer) -- the paper's "multiple instances of the source files each
annotated with a single layer of entity annotations" (papers/003 §4.1). A document's text is
its words joined by single spaces; a subword token takes the entity id of the word its first
non-space character belongs to (the tokenizer's offset mapping).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from tasks.core.errors import CorefreproError


def join_words(words: Sequence[str]) -> tuple[str, list[int]]:
    """(text, start offset of every word): words joined by single spaces."""
    starts, pos = [], 0
    for w in words:
        starts.append(pos)
        pos += len(w) + 1
    return " ".join(words), starts


def locate_words(text: str, words: Sequence[str]) -> list[int]:
    """Start offset of every word in *text*, whose words they are in order with only
    whitespace between them (a released text keeping its own, e.g. LAMBADA's line breaks)."""
    starts, end = [], 0
    for w in words:
        pos = text.find(w, end)
        if pos < 0 or text[end:pos].strip():
            raise CorefreproError(f"{w!r} is not the next word of the text {text[:60]!r}")
        starts.append(pos)
        end = pos + len(w)
    return starts


def token_words(
    tokenizer: Any, words: Sequence[str], text: str | None = None
) -> tuple[list[int], list[int]]:
    """(token ids, per token the index of the word its first non-space character is in, -1
    for a token of spaces only) for the space-joined *words*, or for *text* holding them."""
    text, starts = join_words(words) if text is None else (text, locate_words(text, words))
    enc = tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)
    word_of_char = np.full(len(text) + 1, -1, dtype=np.int64)
    for i, (s, w) in enumerate(zip(starts, words, strict=True)):
        word_of_char[s : s + len(w)] = i
    index = []
    for s, e in enc["offset_mapping"]:
        hits = word_of_char[s:e]
        hits = hits[hits >= 0]
        index.append(int(hits[0]) if len(hits) else -1)
    return list(enc["input_ids"]), index


def align(
    tokenizer: Any,
    words: Sequence[str],
    word_values: Sequence[int] | None = None,
    text: str | None = None,
) -> tuple[list[int], list[int]]:
    """(token ids, per token the value of its word; 0 for a token of no word)."""
    ids, index = token_words(tokenizer, words, text)
    return ids, spread(index, word_values)


def spread(index: Sequence[int], word_values: Sequence[int] | None) -> list[int]:
    if word_values is None:
        return [0] * len(index)
    return [word_values[w] if w >= 0 else 0 for w in index]


@dataclass
class Instance:
    """One (document, layer) copy: token ids and per-token entity ids (0 = none)."""

    doc_id: str
    layer: int
    split: str
    ids: list[int]
    entities: list[int]
    n_words: int
    words: list[str] = field(default_factory=list)
    word_entities: list[int] = field(default_factory=list)


def build_instances(tokenizer: Any, documents: Sequence[Mapping[str, Any]],
                    view: Sequence[Mapping[str, Any]], *, id_offset: int = 0
                    ) -> list[Instance]:  # fmt: skip
    """Instances of every view row (entity ids shifted by id_offset, so several runs share
    one persistent table)."""
    docs = {d["doc_id"]: d for d in documents}
    out, cache = [], {}
    for row in view:
        doc = docs.get(row["doc_id"])
        if doc is None:
            raise CorefreproError(f"CoreLM view: document {row['doc_id']} not in the documents")
        ents = [e + id_offset if e > 0 else 0 for e in row["entity_ids"]]
        if doc["doc_id"] not in cache:
            cache[doc["doc_id"]] = token_words(tokenizer, doc["tokens"])
        ids, index = cache[doc["doc_id"]]
        tok_ents = spread(index, ents)
        out.append(Instance(row["doc_id"], int(row["layer"]), row["split"],
                            ids, tok_ents, len(doc["tokens"]),
                            list(doc["tokens"]), ents))  # fmt: skip
    return out


@dataclass
class Blocks:
    """Fixed-length training windows: [BOS] + the instance's tokens, cut into block_size."""

    ids: list[list[int]] = field(default_factory=list)
    entities: list[list[int]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def n_tokens(self) -> int:
        return sum(len(x) - 1 for x in self.ids)


def to_blocks(instances: Sequence[Instance], bos_id: int, block_size: int) -> Blocks:
    """Disjoint windows of block_size tokens; each window after the first starts with the
    previous window's last token, so every token is predicted exactly once."""
    out = Blocks()
    for inst in instances:
        ids, ents = [bos_id, *inst.ids], [0, *inst.entities]
        start = 0
        while start < len(ids) - 1:
            out.ids.append(ids[start : start + block_size])
            out.entities.append(ents[start : start + block_size])
            start += block_size - 1
    return out


def pad_batch(blocks: Blocks, index: Sequence[int], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded input ids, entity ids and labels (-100 on padding). The model is causal,
    so right padding never changes a real position's output."""
    width = max(len(blocks.ids[i]) for i in index)
    ids = torch.full((len(index), width), pad_id, dtype=torch.long)
    ents = torch.zeros((len(index), width), dtype=torch.long)
    labels = torch.full((len(index), width), -100, dtype=torch.long)
    for r, i in enumerate(index):
        n = len(blocks.ids[i])
        ids[r, :n] = torch.tensor(blocks.ids[i])
        ents[r, :n] = torch.tensor(blocks.entities[i])
        labels[r, :n] = ids[r, :n]
    return {"input_ids": ids, "entity_ids": ents, "labels": labels, "index": torch.tensor(index)}


def batch_order(n: int, batch_size: int, *, seed: int, epoch: int, shuffle: bool
                ) -> Iterator[list[int]]:  # fmt: skip
    order = list(range(n))
    if shuffle:
        random.Random(seed * 1000 + epoch).shuffle(order)
    for i in range(0, n, batch_size):
        yield order[i : i + batch_size]


__all__ = [
    "Blocks",
    "Instance",
    "align",
    "build_instances",
    "pad_batch",
    "to_blocks",
    "token_words",
]
