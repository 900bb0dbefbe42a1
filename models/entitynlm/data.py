"""EntityNLM view -> preprocessed documents -> padded tensors (Ji et al. 2017, papers/000 §4).

Where each §4 rule lives (one place each):
- the view (tasks/graphs/views.py, stage view_entitynlm@<run>) keeps only the enclosing mention
  of nested ones (`resolve_nesting`, the rule the entity-prediction slots share), drops crossing
  mentions, truncates mentions to l_max = 25 and drops the annotation's singleton clusters for
  the CoNLL-style corpora (view_entitynlm.drop_singletons_for);
- this module (`preprocess`) does the rest, identically for EntityNLM, the RNNLM and the 5-gram:
  lowercase; drop punctuation-only tokens outside mentions; numbers -> `num`; entities left with
  a single kept mention become R = 0 ("we ignore the singleton mentions", §4 — applied after
  nesting, so also on corpora the view keeps singletons for); entities renumbered in order of
  first mention; then rare words -> `unk` with the vocabulary of the training split
  (`Vocab.build`: min_count and/or max_size, paper: 10K for CoNLL); the view's sentence starts
  are carried to the kept words (`sentence_positions`) for the sentence-scope LSTMs.

The stage's `token_documents(split, settings)` (flows/train_entitynlm.py) gives the very token
lists the three language models are scored on (the 5-gram estimator reads them), after
preprocessing and `unk`.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import torch

from tasks.core import storage
from tasks.core.errors import CorefreproError
from tasks.core.schema import ENTITYNLM_VIEW

UNK, NUM, PAD = "unk", "num", "<pad>"
_PUNCT = re.compile(r"^[^\w\s]+$|^_+$")
_NUMBER = re.compile(r"^[+-]?(\d+([.,:/-]\d+)*|\d*[.,]\d+)(st|nd|rd|th|s|%)?$")


@dataclass
class Document:
    """One preprocessed document: words, and per word R (is_mention), E (0-based entity or -1)
    and L (remaining mention length including this word; 0 outside mentions); the first word
    of every sentence (the LSTM restarts there in the sentence scope, model.py)."""

    doc_id: str
    split: str
    tokens: list[str]
    is_mention: list[bool]
    entity: list[int]
    remaining: list[int]
    sentence_starts: list[int] = field(default_factory=lambda: [0])

    @property
    def num_entities(self) -> int:
        return max(self.entity, default=-1) + 1


def normalize_token(token: str) -> str:
    token = token.lower()
    return NUM if _NUMBER.match(token) else token


def preprocess(row: Mapping, *, drop_singletons: bool = True) -> Document:
    """One ENTITYNLM_VIEW row -> Document under the §4 rules (module docstring)."""
    idx = kept_positions(row)
    tokens = [normalize_token(row["tokens"][i]) for i in idx]
    is_mention = [bool(row["is_mention"][i]) for i in idx]
    entity = [int(row["entity"][i]) for i in idx]
    remaining = [int(row["remaining"][i]) for i in idx]
    starts = Counter(e for i, e in enumerate(entity) if e >= 0 and remaining_is_start(remaining, i))
    renumber: dict[int, int] = {}
    for i, e in enumerate(entity):
        if e < 0:
            continue
        if drop_singletons and starts[e] < 2:
            is_mention[i], entity[i], remaining[i] = False, -1, 0
            continue
        entity[i] = renumber.setdefault(e, len(renumber))
    starts = sentence_positions(row.get("sentence_starts") or [0], idx)
    return Document(str(row["doc_id"]), str(row["split"]), tokens, is_mention, entity, remaining,
                    starts)  # fmt: skip


def sentence_positions(starts: Sequence[int], kept: Sequence[int]) -> list[int]:
    """The view's sentence starts as positions of the kept words (`kept_positions`): a sentence
    begins at its first kept word; one left without words (all punctuation) merges into the
    next. Position 0 always begins a sentence."""
    out = {0}
    for s in starts:
        p = bisect.bisect_left(kept, s)
        if p < len(kept):
            out.add(p)
    return sorted(out)


def kept_positions(row: Mapping) -> list[int]:
    """The view's token positions `preprocess` keeps, in order (position p of the Document is
    the view's kept_positions(row)[p]): punctuation-only words outside mentions are dropped."""
    return [i for i, (tok, m) in enumerate(zip(row["tokens"], row["is_mention"], strict=True))
            if m or not _PUNCT.match(tok)]  # fmt: skip


def remaining_is_start(remaining: Sequence[int], i: int) -> bool:
    """A mention starts at i when the word before ended a mention or was outside one."""
    return remaining[i] > 0 and (i == 0 or remaining[i - 1] <= 1)


def load_view(views: Mapping[str, Path], *, drop_singletons: bool = True) -> list[Document]:
    """Preprocessed documents of each annotation run's EntityNLM view (run -> its parquet
    file), in order; doc_ids are prefixed with the run so corpora cannot collide."""
    docs = []
    for run, path in views.items():
        for row in storage.read_table(path, ENTITYNLM_VIEW).to_pylist():
            row["doc_id"] = f"{run}/{row['doc_id']}"
            docs.append(preprocess(row, drop_singletons=drop_singletons))
    return docs


def run_of(doc_id: str) -> str:
    """The annotation run a document came from (`load_view`'s "<run>/" prefix): its corpus."""
    return doc_id.split("/", 1)[0]


def split_documents(docs: Iterable[Document], max_docs: Mapping[str, int | None] | None = None):
    """{split: documents} for train/dev/test; max_docs[split] keeps the first N documents (by
    doc_id) of each run ("<run>/..." prefix) in that split (None = all)."""
    out: dict[str, list[Document]] = {"train": [], "dev": [], "test": []}
    taken: Counter = Counter()
    for doc in sorted(docs, key=lambda d: d.doc_id):
        cap = (max_docs or {}).get(doc.split)
        key = (doc.split, run_of(doc.doc_id))
        if doc.split in out and (cap is None or taken[key] < int(cap)):
            out[doc.split].append(doc)
            taken[key] += 1
    return out


def document_text(doc: Document) -> str:
    """The text a scorer reads for *doc*: one line per sentence, words joined by spaces."""
    bad = next((t for t in doc.tokens if not t or any(c.isspace() for c in t)), None)
    if bad is not None:
        raise CorefreproError(f"{doc.doc_id}: the word {bad!r} is empty or holds whitespace")
    cuts = [*doc.sentence_starts, len(doc.tokens)]
    return "\n".join(" ".join(doc.tokens[a:b]) for a, b in pairwise(cuts) if b > a)


def text_document(text: str, index: int, word=None) -> Document:
    """A text as an unannotated Document (no mentions): sentences = its non-empty lines. The
    doc_id is the text's position, so batches form in the order the texts came in. word: a
    rewrite of each word (the scorers' `normalize_token`)."""
    tokens, starts = [], []
    for line in text.splitlines():
        words = [word(w) for w in line.split()] if word else line.split()
        if words:
            starts.append(len(tokens))
            tokens.extend(words)
    n = len(tokens)
    return Document(f"{index:09d}", "", tokens, [False] * n, [-1] * n, [0] * n, starts or [0])


class Vocab:
    """Word <-> id; index 0 is padding, 1 is `unk`. Built from the training split only."""

    def __init__(self, words: Sequence[str]):
        self.words = list(words)
        self.index = {w: i for i, w in enumerate(self.words)}
        if self.words[:2] != [PAD, UNK]:
            raise CorefreproError("vocabulary must start with <pad>, unk")

    @classmethod
    def build(cls, docs: Iterable[Document], min_count: int = 1, max_size: int | None = None):
        """Words of at least min_count occurrences, the max_size most frequent (ties by word)."""
        counts = Counter(t for d in docs for t in d.tokens)
        kept = sorted((w for w, c in counts.items() if c >= min_count and w not in (PAD, UNK)),
                      key=lambda w: (-counts[w], w))  # fmt: skip
        if max_size is not None:
            kept = kept[: max(0, max_size - 2)]
        return cls([PAD, UNK, *sorted(kept)])

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.index.get(t, 1) for t in tokens]

    def unk(self, tokens: Sequence[str]) -> list[str]:
        return [t if t in self.index else UNK for t in tokens]

    def to_dict(self) -> dict:
        return {"words": self.words}

    @classmethod
    def from_dict(cls, d: Mapping) -> Vocab:
        return cls(d["words"])


@dataclass
class Batch:
    """Padded documents (B x T): word ids, mask, and the annotation R/E/L (R given as
    is_mention; E -1 and L 0 outside mentions). `doc_ids` in batch order. sent_start: True at
    the first word of every sentence (None: each document is one sentence)."""

    tokens: torch.Tensor  # long
    mask: torch.Tensor  # bool
    is_mention: torch.Tensor  # bool
    entity: torch.Tensor  # long
    remaining: torch.Tensor  # long
    doc_ids: list[str]
    sent_start: torch.Tensor | None = None  # bool

    def to(self, device) -> Batch:
        moved = {k: v.to(device) for k, v in vars(self).items() if torch.is_tensor(v)}
        return Batch(**moved, doc_ids=self.doc_ids)

    @property
    def num_tokens(self) -> int:
        return int(self.mask.sum())


def collate(docs: Sequence[Document], vocab: Vocab) -> Batch:
    """Documents -> one padded Batch."""
    width = max(len(d.tokens) for d in docs)

    def pad(rows, value, dtype):
        return torch.tensor([list(r) + [value] * (width - len(r)) for r in rows], dtype=dtype)

    return Batch(
        tokens=pad([vocab.encode(d.tokens) for d in docs], 0, torch.long),
        mask=pad([[True] * len(d.tokens) for d in docs], False, torch.bool),
        is_mention=pad([d.is_mention for d in docs], False, torch.bool),
        entity=pad([d.entity for d in docs], -1, torch.long),
        remaining=pad([d.remaining for d in docs], 0, torch.long),
        doc_ids=[d.doc_id for d in docs],
        sent_start=pad([_start_flags(d) for d in docs], False, torch.bool),
    )


def _start_flags(doc: Document) -> list[bool]:
    flags = [False] * len(doc.tokens)
    for i in doc.sentence_starts:
        if i < len(flags):
            flags[i] = True
    return flags


def token_batches(docs: Sequence[Document], max_tokens: int) -> list[list[Document]]:
    """Documents grouped (in length order, so padding stays small) into batches of at most
    max_tokens padded words (a longer document is a batch of its own)."""
    order = sorted(docs, key=lambda d: (len(d.tokens), d.doc_id))
    batches: list[list[Document]] = []
    current: list[Document] = []
    for doc in order:
        if current and len(doc.tokens) * (len(current) + 1) > max_tokens:
            batches.append(current)
            current = []
        current.append(doc)
    return batches + ([current] if current else [])
