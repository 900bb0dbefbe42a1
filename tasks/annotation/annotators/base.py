"""The annotator contract: documents in, coreference mentions and clusters out.

One annotation stage feeds all four model families (MAGE graphs, EntityNLM, E2E coref and
CoreLM views read the same mentions table), so swapping the annotator changes every downstream
model the same way. An annotator sees `Doc`s (a document with its sentences, its corpus's own
gold mentions where it has them, and the queries of the items asked over it) and returns one
`Annotation` per document: the document's mentions and, per item, the query's mentions in the
SAME cluster space as the document, so a query token can link to a context chain (MAGE
Dhingra et al. §4 connect question and document mentions of one entity).

Spans are token offsets [start, end) of the corpus tokens (end exclusive, as in
tasks/core/schema.py). Cluster ids are any ints chosen by the annotator; tasks/annotation/annotate.py checks
the spans and renumbers clusters densely per document.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tasks.core.settings import parse_settings

Span = tuple[int, int, int]  # (start, end exclusive, cluster)


class Query(NamedTuple):
    """An item's query over a document prefix: the context is tokens[:context_end]."""

    item_id: str
    tokens: list[str]
    context_end: int


@dataclass
class Doc:
    """One document as an annotator sees it (a row of the documents table, plus)."""

    doc_id: str
    tokens: list[str]
    sentence_starts: list[int]
    genre: str | None = None
    speakers: list[str] | None = None
    # the corpus's own mentions (None: the corpus has no gold coreference at all)
    gold: list[Span] | None = None
    # the queries of the items over this document, in items-table order
    queries: list[Query] = field(default_factory=list)

    def sentences(self) -> list[list[str]]:
        """The tokens split at sentence_starts."""
        bounds = [*self.sentence_starts, len(self.tokens)]
        return [self.tokens[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]

    def sentence_of(self, position: int) -> int:
        """Index of the sentence holding token `position`."""
        return bisect.bisect_right(self.sentence_starts, position) - 1


@dataclass
class Annotation:
    """An annotator's answer for one document.

    mentions: (start, end, cluster) over the document tokens. query_mentions: item_id ->
    (start, end, cluster) over that item's query tokens, clusters from the document's space
    (a cluster seen only in queries is allowed: an entity the context never names).
    counts: annotator-specific tallies (e.g. skipped zero-anaphora mentions) that
    tasks/annotation/annotate.py adds to the stage report, so nothing is dropped silently.
    """

    mentions: list[Span]
    query_mentions: dict[str, list[Span]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)


class Annotator:
    """Base class. Subclasses set `name` and override annotate_doc, or annotate for batching.

    The pipeline only relies on `name` (the annotator column of the mentions table) and
    `annotate(batch) -> one Annotation per Doc, in order`; a plug-in (tasks/annotation/annotators/model.py)
    may be any object with those two.
    """

    name: str = ""

    def annotate(self, batch: list[Doc]) -> list[Annotation]:
        return [self.annotate_doc(doc) for doc in batch]

    def annotate_doc(self, doc: Doc) -> Annotation:
        raise NotImplementedError(f"{type(self).__name__} must override annotate or annotate_doc")


def link_queries(
    doc: Doc, mentions: Iterable[Span], *, casefold: bool = True
) -> dict[str, list[Span]]:
    """The generic query linker: exact string match of query spans against mention strings.

    For each query, the table of mention strings is built from the document mentions that lie
    in the item's context (end <= context_end); a string used by several clusters means the
    cluster of its most recent mention (the one closest to the query, which follows the
    context). Query spans are then matched longest first, left to right, without overlap: a
    longer name ("the pink rectangle") wins over a shorter one inside it. Matching ignores case
    (casefold) because questions re-case names: bAbI qa15/qa20 ask "What is emily afraid of ?"
    about "Emily". Pronouns match only other identical pronouns (the most recent one): a
    recency guess, so annotators that resolve queries themselves should do so instead.
    Every item of doc.queries gets an entry (possibly empty).
    """
    ordered = sorted(mentions, key=lambda m: (m[0], m[1]))
    out: dict[str, list[Span]] = {}
    for query in doc.queries:
        table: dict[tuple[str, ...], int] = {}
        for start, end, cluster in ordered:  # later mentions overwrite earlier ones
            if end <= query.context_end:
                table[_key(doc.tokens[start:end], casefold)] = cluster
        out[query.item_id] = match_strings(query.tokens, table, casefold=casefold)
    return out


def match_strings(
    tokens: Sequence[str], table: Mapping[tuple[str, ...], int], *, casefold: bool = True
) -> list[Span]:
    """Non-overlapping spans of `tokens` whose string is a key of `table`, longest first."""
    if not table or not tokens:
        return []
    longest = min(max(len(k) for k in table), len(tokens))
    taken = [False] * len(tokens)
    found: list[Span] = []
    folded = [t.casefold() if casefold else t for t in tokens]
    for length in range(longest, 0, -1):
        for i in range(len(tokens) - length + 1):
            if any(taken[i : i + length]):
                continue
            cluster = table.get(tuple(folded[i : i + length]))
            if cluster is not None:
                found.append((i, i + length, cluster))
                taken[i : i + length] = [True] * length
    return sorted(found)


def _key(tokens: Sequence[str], casefold: bool) -> tuple[str, ...]:
    return tuple(t.casefold() for t in tokens) if casefold else tuple(tokens)


def check_settings(name: str, cfg: Mapping[str, Any], known: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of cfg parsed strictly (tasks.core.settings): an unknown key (a typo in
    params.yaml) names the closest known one; a key whose default is a bool or a number must
    be one. `known` is the module's SETTINGS (key -> default)."""
    where = f"annotate.annotators.{name}"  # or a run's settings, merged over them
    parsed = parse_settings(_settings_class(name, known), dict(cfg), where)
    return {k: getattr(parsed, k) for k in cfg}


_CLASSES: dict[tuple[str, str], type] = {}


def _typed(default: Any) -> Any:
    if type(default) is bool:
        return bool
    return type(default) | None if type(default) in (int, float) else Any


def _settings_class(name: str, known: Mapping[str, Any]) -> type:
    """A settings dataclass of an annotator's SETTINGS: bool defaults typed bool, int/float
    defaults typed so or None (None = the documented "leave as is", e.g. threads)."""
    key = (name, repr(sorted(known.items())))
    if key not in _CLASSES:
        fields = [
            (
                k,
                _typed(v),
                dataclasses.field(default_factory=lambda v=v: copy.deepcopy(v)),
            )
            for k, v in sorted(known.items())
        ]
        _CLASSES[key] = dataclasses.make_dataclass(f"{name.replace('-', '_')}_settings", fields)
    return _CLASSES[key]


__all__ = [
    "Annotation",
    "Annotator",
    "Doc",
    "Query",
    "Span",
    "check_settings",
    "link_queries",
    "match_strings",
]
