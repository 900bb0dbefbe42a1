"""The project's coreference documents (data/docs/<corpus>/, read by models/coref/data.py) as
Stanza's coreference JSON: the file format `stanza.models.coref.dataset.CorefDataset` reads.

Why not Stanza's own converters (stanza/utils/datasets/coref/): both take a mention's HEAD
word from a dependency parse. `convert_udcoref.process_documents` reads CorefUD CoNLL-U files,
whose HEAD column it uses; `convert_ontonotes` (via utils.process_document) runs a Stanza
depparse pipeline, i.e. downloaded tokenize/pos/lemma/depparse models, which this project
cannot fetch. The normalized Parquet keeps tokens, sentences, speakers and gold clusters, no
syntax, and every corpus (GUM, LitBank, the generated and handmade ones) goes through it; so
the conversion is done here, to the same JSON fields `process_documents` writes:

    document_id, part_id, cased_words, sent_id, speaker,
    span_clusters  [[[start, end), ...], ...]   the gold clusters, unchanged
    word_clusters  [[head, ...], ...]           one head word per span, same order
    head2span      [[head, start, end], ...]    sorted

Heads (the word-level model scores words, then a span predictor grows each head into its
span): without a parse, the head of a span is its last word before the first word that opens
an English post-modifier ("the president [of France]", "the man [who ...]"), else its last
word -- English noun phrases are head-final. A coordinated span ("Mary and John") is headed by
its conjunction, CAW-coref's rule that Stanza's converters apply from the parse
(utils.find_cconj_head). Two mentions given one head word would share the word's cluster id
(WordEncoder._cluster_ids keeps the last), so a taken head moves to the nearest free word of
its span (shortest spans choose first); `heads_shared` counts the spans left with none.

word_clusters[i] are the heads of span_clusters[i] in the same order; `process_documents`
sorts the two lists separately, which misaligns them when a cluster's first mention nests
around another cluster's (only its CoNLL logs read them together).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from models.coref.data import CorefDocument

Span = tuple[int, int]

# words that open a post-modifier of an English noun phrase (lower-cased)
POSTMODIFIER_OPENERS = frozenset(
    {"of", "in", "on", "at", "for", "with", "from", "by", "to", "about", "into", "over",
     "under", "than", "like", "near", "without", "within", "that", "which", "who", "whom",
     "whose", "where", "when", ",", "(", "-lrb-", ":", ";", "--"}
)  # fmt: skip
CONJUNCTIONS = frozenset({"and", "or", "nor"})


def span_head(words: Sequence[str], start: int, end: int) -> int:
    """The head word of span [start, end): its conjunction when coordinated, else its last word
    before a post-modifier opener (a span's first word opens nothing)."""
    lowered = [w.lower() for w in words[start:end]]
    for k in range(1, len(lowered)):
        if lowered[k] in CONJUNCTIONS:
            return start + k
        if lowered[k] in POSTMODIFIER_OPENERS:
            return start + k - 1
    return end - 1


def assign_heads(words: Sequence[str], spans: Iterable[Span]) -> tuple[dict[Span, int], int]:
    """{span: head} with distinct heads where the spans allow, and how many spans share one."""
    heads: dict[Span, int] = {}
    taken: set[int] = set()
    shared = 0
    for start, end in sorted(set(spans), key=lambda s: (s[1] - s[0], s)):
        head = span_head(words, start, end)
        if head in taken:
            free = [w for w in range(start, end) if w not in taken]
            if free:
                head = min(free, key=lambda w: (abs(w - head), -w))
            else:
                shared += 1
        heads[(start, end)] = head
        taken.add(head)
    return heads, shared


def sentence_ids(doc: CorefDocument) -> list[int]:
    """The sentence index of every word (Stanza's sent_id)."""
    bounds = [*doc.sentence_starts, len(doc.tokens)]
    return [
        k for k, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False)) for _ in range(a, b)
    ]


def to_stanza(doc: CorefDocument, stats: Counter | None = None) -> dict[str, Any]:
    """One document as Stanza's coreference JSON (the fields of the module docstring)."""
    clusters = sorted(sorted({tuple(s) for s in c}) for c in doc.clusters if c)
    heads, shared = assign_heads(doc.tokens, [s for c in clusters for s in c])
    sent_id = sentence_ids(doc)
    if stats is not None:
        stats["documents"] += 1
        stats["mentions"] += len(heads)
        stats["heads_shared"] += shared
        stats["cross_sentence_mentions"] += sum(sent_id[s] != sent_id[e - 1] for s, e in heads)
    return {
        "document_id": doc.doc_id,
        "part_id": 0,
        "cased_words": list(doc.tokens),
        "sent_id": sent_id,
        "speaker": list(doc.speakers) if doc.speakers else ["_"] * len(doc.tokens),
        "span_clusters": [[list(s) for s in c] for c in clusters],
        "word_clusters": [[heads[s] for s in c] for c in clusters],
        "head2span": sorted([heads[s], *s] for s in heads),
    }


def clusters_of(stanza_doc: dict[str, Any]) -> list[list[Span]]:
    """The span clusters of a Stanza coreference JSON document (the way back)."""
    return [[(int(s), int(e)) for s, e in c] for c in stanza_doc["span_clusters"]]


def convert(docs: Sequence[CorefDocument]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """A split as Stanza's JSON list, with the conversion's counts (for the metrics)."""
    stats: Counter = Counter()
    out = [to_stanza(doc, stats) for doc in docs]
    return out, {k: int(stats[k]) for k in ("documents", "mentions", "heads_shared",
                                             "cross_sentence_mentions")}  # fmt: skip


__all__ = ["assign_heads", "clusters_of", "convert", "sentence_ids", "span_head", "to_stanza"]
