"""Per-token views of coreference for the language-model papers.

- EntityNLM (Ji et al. 2017, papers/000 §2.1, §4 "Data preprocessing"): R_t, E_t, L_t per
  token. Embedded mentions: `resolve_nesting`, the one rule the view and the entity-prediction
  slots (tasks/evaluation/entity_prediction.py) share; default "enclosing" (§4: "only the
  enclosing entity mention is kept"), "heads" keeps the innermost spans; CoNLL singletons are
  ignored ("ignore the singleton mentions", §4); l_max = 25 (§2.1, "an empirical value derived
  from the training corpora"). The paper does not say what happens to a longer mention; we
  truncate it to its first l_max tokens (its remaining tokens become R=0 tokens) and count
  it, so L_t still runs l_max, l_max-1, ..., 1 as the generative story requires (§2.2 step 2:
  l_t = l_{t-1} - 1); long_mentions="skip" drops such mentions instead. The released code
  (jiyfeng/entitynlm, entitynlm.h) indexes a length softmax of men_length rows with
  mlen-1, so it too can only take lengths 1..l_max.
  Storage conventions (tasks/core/schema.py ENTITYNLM_VIEW): entity 0-based (paper 1-based),
  -1 and remaining 0 for tokens outside mentions (paper: E = clock symbol, L = 1).
- CoreLM (Stylianou & Vlahavas, papers/003 §3.2, §4.1): a second input stream of entity ids
  beside the tokens, 0 for tokens outside entities; one instance of the document per layer
  of nested entities ("we create multiple instances of the source files each annotated with
  a single layer of entity annotations ... the second instance ... only annotated with the
  entities that were identified within the span of text of first entity layer"): layer k
  holds the mentions nested inside exactly k others. Entity representations are "stored in a
  persistent set of entities ... through out the whole discourse scope" and LAMBADA entries
  were kept apart "so that coreference annotations did not point to entities on other
  unrelated entities" (App. B): ids are unique per (document, cluster) across the corpus by
  default (id_scope="corpus"); id_scope="document" restarts at 1 per document. The paper
  gives no cap on the number of entities; max_entities (None = none) maps ids beyond it to 0
  and counts them. An entity keeps one id in every layer.

The encoders here read no settings: the view stages (flows/view_entitynlm.py and
flows/view_corelm.py, params.yaml view_entitynlm / view_corelm) pass them, and EntityNLM's inference (models/entitynlm apply and
rerank) encodes its candidate spans with the same `entitynlm_row`.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from tasks.core.errors import CorefreproError
from tasks.graphs.dags import Span, as_rows, group_mentions

L_MAX = 25  # Ji et al. 2017 §2.1
LONG_MENTIONS = ("truncate", "skip")
NESTED_RULES = ("enclosing", "heads")
ID_SCOPES = ("corpus", "document")


@dataclass
class ViewBuild:
    """Rows of a view table and counts of everything changed on the way (for notes)."""

    rows: list[dict[str, Any]]
    stats: Counter


# --------------------------------------------------------------------------- nesting


def nesting_layers(spans: Iterable[Span]) -> tuple[list[list[Span]], int]:
    """Split mentions by nesting depth: layer k = mentions inside exactly k others.

    Spans sorted by (start, -end, cluster) and a stack of open mentions: a mention inside
    the top of the stack is nested in all of it. A mention crossing an open one (overlap,
    neither contains the other) fits no layer and is dropped; the count is returned. Of two
    identical spans (two clusters) the one with the smaller cluster id is the outer one.
    Each layer is a list of disjoint spans in text order.
    """
    layers: list[list[Span]] = []
    stack: list[Span] = []
    crossing = 0
    for span in sorted(set(spans), key=lambda m: (m[0], -m[1], m[2])):
        start, end, _ = span
        while stack and stack[-1][1] <= start:
            stack.pop()
        if stack and stack[-1][1] < end:
            crossing += 1
            continue
        depth = len(stack)
        if depth == len(layers):
            layers.append([])
        layers[depth].append(span)
        stack.append(span)
    return layers, crossing


def resolve_nesting(spans: Iterable[Span], rule: str = "enclosing") -> tuple[list[Span], Counter]:
    """Disjoint mentions out of possibly nested ones, in text order: the one rule shared by the
    EntityNLM view (training) and the entity-prediction slots (test), so a model is never
    trained on one kind of span and asked about another.

    - "enclosing" (Ji et al. 2017 §4, stated for CoNLL: "For embedded mentions, only the
      enclosing entity mention is kept"): nesting depth 0 of `nesting_layers`.
    - "heads": every span that encloses another is dropped, the innermost spans stay (InScript
      labels NP heads; a compound label over a labelled head, "tire tool" over "tool",
      mostly lies outside every chain while the head is linked).
    Either way a span listed for two clusters keeps the smaller cluster id, and of two
    crossing spans (overlap, neither inside the other) the later one is dropped. Stats:
    duplicate_spans_dropped, crossing_mentions_dropped, and embedded_mentions_dropped
    ("enclosing") or enclosing_mentions_dropped ("heads").
    """
    if rule not in NESTED_RULES:
        raise CorefreproError(f"nested must be one of {NESTED_RULES}, not {rule!r}")
    stats: Counter = Counter()
    first: dict[tuple[int, int], int] = {}
    for start, end, cluster in sorted(set(spans)):
        first.setdefault((start, end), cluster)
    unique = [(s, e, c) for (s, e), c in first.items()]
    stats["duplicate_spans_dropped"] = len(set(spans)) - len(unique)
    if rule == "heads":
        bounds = sorted(first)
        inner = [m for m in unique if not _encloses_another((m[0], m[1]), bounds)]
        stats["enclosing_mentions_dropped"] = len(unique) - len(inner)
        unique = inner
    layers, crossing = nesting_layers(unique)
    stats["crossing_mentions_dropped"] = crossing
    stats["embedded_mentions_dropped"] = sum(len(layer) for layer in layers[1:])
    return (layers[0] if layers else []), stats


def _encloses_another(span: tuple[int, int], bounds: Sequence[tuple[int, int]]) -> bool:
    """Whether another of the sorted (start, end) bounds lies inside span."""
    s, e = span
    i = bisect.bisect_left(bounds, (s, -1))
    for t, u in bounds[i:]:
        if t >= e:
            return False
        if (t, u) != span and u <= e:
            return True
    return False


def _drop_singletons(spans: Sequence[Span]) -> tuple[list[Span], int]:
    size = Counter(c for _, _, c in spans)
    kept = [m for m in spans if size[m[2]] > 1]
    return kept, len(spans) - len(kept)


def _docs_and_mentions(
    documents: pa.Table | Iterable[Mapping[str, Any]],
    mentions: pa.Table | Iterable[Mapping[str, Any]] | None,
    annotator: str | None,
) -> tuple[list[Mapping[str, Any]], dict[str, list[Span]]]:
    docs = sorted(as_rows(documents), key=lambda d: d["doc_id"])
    grouped = group_mentions(mentions, annotator=annotator)
    lengths = {d["doc_id"]: len(d["tokens"]) for d in docs}
    for doc_id, spans in grouped.items():
        if doc_id not in lengths:
            raise CorefreproError(f"mentions: document {doc_id} is not in the documents table")
        bad = [s for s in spans if s[1] > lengths[doc_id]]
        if bad:
            raise CorefreproError(
                f"mentions: span [{bad[0][0]}, {bad[0][1]}) beyond document {doc_id} "
                f"({lengths[doc_id]} tokens)"
            )
    return docs, grouped


# --------------------------------------------------------------------------- EntityNLM


def entitynlm_row(
    doc: Mapping[str, Any],
    spans: Sequence[Span],
    *,
    l_max: int = L_MAX,
    drop_singletons: bool = False,
    long_mentions: str = "truncate",
    nested: str = "enclosing",
    stats: Counter | None = None,
) -> dict[str, Any]:
    """R/E/L of one document (Ji et al. 2017 §2.1) as an ENTITYNLM_VIEW row; nested: the
    rule of `resolve_nesting`."""
    if long_mentions not in LONG_MENTIONS:
        raise CorefreproError(f"long_mentions must be one of {LONG_MENTIONS}")
    if l_max < 1:
        raise CorefreproError(f"l_max must be >= 1, not {l_max}")
    stats = stats if stats is not None else Counter()
    spans = sorted(set(spans))
    stats["mentions"] += len(spans)
    if drop_singletons:  # on the annotation's clusters, before nesting (§4: CoNLL has none)
        spans, dropped = _drop_singletons(spans)
        stats["singleton_mentions_dropped"] += dropped
    kept, dropped = resolve_nesting(spans, nested)
    stats.update({k: v for k, v in dropped.items() if k != "duplicate_spans_dropped"})
    stats["embedded_mentions_dropped"] += dropped["duplicate_spans_dropped"]
    n = len(doc["tokens"])
    is_mention = [False] * n
    entity = [-1] * n
    remaining = [0] * n
    index: dict[int, int] = {}  # cluster -> entity index, in order of first kept mention
    for start, end, cluster in kept:
        if end - start > l_max:
            if long_mentions == "skip":
                stats["long_mentions_skipped"] += 1
                continue
            stats["long_mentions_truncated"] += 1
            end = start + l_max
        e = index.setdefault(cluster, len(index))
        for t in range(start, end):
            is_mention[t] = True
            entity[t] = e
            remaining[t] = end - t  # L_t: words left in the mention including this one
        stats["mentions_kept"] += 1
    stats["entities"] += len(index)
    return {
        "doc_id": doc["doc_id"],
        "split": doc["split"],
        "tokens": list(doc["tokens"]),
        # the released EntityNLM restarts its LSTM per sentence and measures distances in
        # sentences, so the view carries the boundaries
        "sentence_starts": list(doc["sentence_starts"]),
        "is_mention": is_mention,
        "entity": entity,
        "remaining": remaining,
        "num_entities": len(index),
    }


def build_entitynlm_view(
    documents: pa.Table | Iterable[Mapping[str, Any]],
    mentions: pa.Table | Iterable[Mapping[str, Any]] | None,
    *,
    l_max: int = L_MAX,
    drop_singletons: bool = False,
    long_mentions: str = "truncate",
    nested: str = "enclosing",
    annotator: str | None = None,
) -> ViewBuild:
    """ENTITYNLM_VIEW rows, one per document, sorted by doc_id."""
    docs, grouped = _docs_and_mentions(documents, mentions, annotator)
    stats: Counter = Counter()
    rows = [
        entitynlm_row(
            d,
            grouped.get(d["doc_id"], []),
            l_max=l_max,
            drop_singletons=drop_singletons,
            long_mentions=long_mentions,
            nested=nested,
            stats=stats,
        )
        for d in docs
    ]
    stats["documents"] = len(rows)
    return ViewBuild(rows, stats)


# --------------------------------------------------------------------------- CoreLM


def corelm_rows(
    doc: Mapping[str, Any],
    spans: Sequence[Span],
    entity_ids: Mapping[int, int],
    *,
    stats: Counter | None = None,
) -> list[dict[str, Any]]:
    """One CORELM_VIEW row per nesting layer of one document (at least layer 0).

    entity_ids maps cluster -> id (>= 1; 0 or absent = no entity, e.g. over the cap).
    """
    stats = stats if stats is not None else Counter()
    layers, crossing = nesting_layers(spans)
    stats["crossing_mentions_dropped"] += crossing
    n = len(doc["tokens"])
    rows = []
    for depth, layer in enumerate(layers or [[]]):
        ids = [0] * n
        for start, end, cluster in layer:
            ids[start:end] = [entity_ids.get(cluster, 0)] * (end - start)
        rows.append(
            {"doc_id": doc["doc_id"], "layer": depth, "split": doc["split"], "entity_ids": ids}
        )
        stats[f"layer_{depth}_mentions"] += len(layer)
    return rows


def _first_mention_order(spans: Sequence[Span]) -> list[int]:
    seen: dict[int, None] = {}
    for _, _, cluster in sorted(spans, key=lambda m: (m[0], -m[1], m[2])):
        seen.setdefault(cluster, None)
    return list(seen)


def build_corelm_view(
    documents: pa.Table | Iterable[Mapping[str, Any]],
    mentions: pa.Table | Iterable[Mapping[str, Any]] | None,
    *,
    id_scope: str = "corpus",
    max_entities: int | None = None,
    drop_singletons: bool = False,
    annotator: str | None = None,
) -> ViewBuild:
    """CORELM_VIEW rows, (doc_id, layer) sorted; ids assigned in doc_id order, then first
    mention order within a document (module docstring for the scope and the cap)."""
    if id_scope not in ID_SCOPES:
        raise CorefreproError(f"id_scope must be one of {ID_SCOPES}, not {id_scope!r}")
    if max_entities is not None and max_entities < 1:
        raise CorefreproError(f"max_entities must be >= 1 or null, not {max_entities}")
    docs, grouped = _docs_and_mentions(documents, mentions, annotator)
    stats: Counter = Counter()
    rows: list[dict[str, Any]] = []
    next_id = 1
    for doc in docs:
        spans = grouped.get(doc["doc_id"], [])
        if drop_singletons:
            spans, dropped = _drop_singletons(spans)
            stats["singleton_mentions_dropped"] += dropped
        if id_scope == "document":
            next_id = 1
        ids: dict[int, int] = {}
        for cluster in _first_mention_order(spans):
            if max_entities is not None and next_id > max_entities:
                stats["entities_over_cap"] += 1
                continue
            ids[cluster] = next_id
            next_id += 1
        stats["entities"] += len(ids)
        rows.extend(corelm_rows(doc, spans, ids, stats=stats))
    stats["documents"] = len(docs)
    stats["instances"] = len(rows)
    stats["max_entity_id"] = max((max(r["entity_ids"], default=0) for r in rows), default=0)
    return ViewBuild(rows, stats)


__all__ = [
    "L_MAX",
    "NESTED_RULES",
    "ViewBuild",
    "build_corelm_view",
    "build_entitynlm_view",
    "corelm_rows",
    "entitynlm_row",
    "nesting_layers",
    "resolve_nesting",
]
