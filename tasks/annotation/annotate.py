"""Run an annotator over a corpus's tables and check what it returns.

`annotate_documents` builds one `Doc` per document (its gold mentions and the queries of its
items attached), runs the annotator in batches, and validates every answer before it becomes
rows of tasks/core/schema.py MENTIONS / QUERY_MENTIONS. Whatever is wrong is either an error or
kept/dropped WITH a count in the report -- never dropped silently. The policy, per case (the
counts are what the real corpora show, tests/annotators/test_annotate.py checks them):

- span outside the document (start < 0, end > length, end <= start), or outside its query:
  CorefreproError naming the annotator, the document (or item) and the span -- an annotator
  bug (off-by-one, a misaligned tokenisation) that would corrupt every model downstream.
- malformed answer (not one Annotation per Doc, a mention that is not three ints, query
  mentions for an item that is not the document's): CorefreproError.
- the same span twice in one cluster: the copy is dropped (duplicate_same_cluster).
- the same span in two or more clusters: kept once, in the cluster whose first mention comes
  first in the document (the scorer's rule: the entity that appears first keeps it; on a tie,
  the smaller cluster id); counted (duplicate_two_clusters = copies dropped). A cluster left
  empty disappears. The result depends on the set of mentions, not on their order.
- a mention crossing a sentence boundary: kept, counted (cross_sentence). GUM has 28 such
  gold mentions, where its sentence split falls inside a mention ("a word like ' Huh ? '").
- nested mentions (inside another mention): kept, counted (nested = mentions that lie inside
  another one). Normal: "Mary" in "Mary and John"; a third of GUM's gold mentions.
- crossing brackets (partial overlap, neither inside the other): kept, counted (crossing =
  mentions, not already nested, that partially overlap an earlier-starting one; LitBank gold
  has 3).
- empty document (no tokens): not given to the annotator, no rows, counted
  (empty_documents); its items get no query mentions.
Clusters are renumbered densely per document, 0.. in order of first mention (start, end);
query-only clusters (an entity the context never names) continue the numbering in order of
first appearance over the document's items. Rows are sorted by (start, end): the output
depends only on the inputs.
"""

from __future__ import annotations

import bisect
import logging
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from tasks.annotation.annotators.base import Annotation, Annotator, Doc, Query, Span
from tasks.core.errors import CorefreproError

log = logging.getLogger("corefrepro.annotate")

# every report has these keys (0 when nothing happened), then annotator-specific counts
REPORT_KEYS = (
    "documents",
    "empty_documents",
    "items",
    "mentions",
    "clusters",
    "singletons",
    "query_mentions",
    "query_only_clusters",
    "cross_sentence",
    "nested",
    "crossing",
    "duplicate_same_cluster",
    "duplicate_two_clusters",
    "query_duplicate_same_cluster",
    "query_duplicate_two_clusters",
)


def annotate_documents(
    annotator: Annotator,
    documents: pa.Table,
    items: pa.Table | None,
    gold: pa.Table | None,
    *,
    batch_size: int = 16,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, int]]:
    """Annotate every document; returns (mention rows, query mention rows, report counts).

    documents / items / gold: tables of tasks/core/schema.py DOCUMENTS / ITEMS / MENTIONS (items
    and gold may be None). A gold table with no rows means the corpus has no gold coreference
    (Doc.gold is None, which the gold annotator refuses); otherwise a document without gold
    rows gets Doc.gold == []. Gold rows of documents not in `documents` are ignored (a shard
    may pass a wider table). Rows follow the order of `documents`.
    """
    if batch_size < 1:
        raise CorefreproError(f"annotate: batch_size must be >= 1, not {batch_size}")
    name = getattr(annotator, "name", "") or type(annotator).__name__
    docs = _build_docs(documents, items, gold)
    report: Counter[str] = Counter({k: 0 for k in REPORT_KEYS})
    report["documents"] = len(docs)
    report["items"] = sum(len(d.queries) for d in docs)
    mention_rows: list[dict[str, Any]] = []
    query_rows: list[dict[str, Any]] = []
    todo = [d for d in docs if d.tokens]
    report["empty_documents"] = len(docs) - len(todo)
    results: dict[str, tuple[list[Span], dict[str, list[Span]]]] = {}
    for i in range(0, len(todo), batch_size):
        batch = todo[i : i + batch_size]
        answers = annotator.annotate(batch)
        if not isinstance(answers, list | tuple) or len(answers) != len(batch):
            got = len(answers) if isinstance(answers, list | tuple) else type(answers).__name__
            raise CorefreproError(
                f"annotator '{name}' returned {got} annotations for a batch of {len(batch)} "
                f"documents (first {batch[0].doc_id})"
            )
        for doc, answer in zip(batch, answers, strict=True):
            results[doc.doc_id] = check_annotation(name, doc, answer, report)
    for doc in docs:
        mentions, queries = results.get(doc.doc_id, ([], {}))
        mention_rows.extend(
            {"doc_id": doc.doc_id, "start": s, "end": e, "cluster": c, "annotator": name}
            for s, e, c in mentions
        )
        for query in doc.queries:
            query_rows.extend(
                {"item_id": query.item_id, "start": s, "end": e, "cluster": c, "annotator": name}
                for s, e, c in queries.get(query.item_id, [])
            )
    anomalies = {
        k: report[k]
        for k in (
            "empty_documents",
            "cross_sentence",
            "crossing",
            "duplicate_same_cluster",
            "duplicate_two_clusters",
            "query_duplicate_same_cluster",
            "query_duplicate_two_clusters",
        )
        if report[k]
    }
    if anomalies:
        log.info("annotator '%s': kept/dropped with counts %s", name, anomalies)
    return mention_rows, query_rows, dict(sorted(report.items()))


def check_annotation(
    name: str, doc: Doc, answer: Annotation, report: Counter[str]
) -> tuple[list[Span], dict[str, list[Span]]]:
    """Validate one document's answer (module doc); returns renumbered, sorted spans."""
    if not isinstance(answer, Annotation):
        raise CorefreproError(
            f"annotator '{name}': document {doc.doc_id}: expected an Annotation, "
            f"got {type(answer).__name__}"
        )
    where = f"annotator '{name}': document {doc.doc_id}"
    mentions = _checked_spans(where, answer.mentions, len(doc.tokens), "tokens")
    mentions, same, two = _dedup(mentions)
    report["duplicate_same_cluster"] += same
    report["duplicate_two_clusters"] += two
    order: dict[int, int] = {}
    for _, _, cluster in mentions:  # sorted by (start, end): first mention order
        order.setdefault(cluster, len(order))
    doc_mentions = [(s, e, order[c]) for s, e, c in mentions]
    sizes = Counter(c for _, _, c in doc_mentions)
    report["mentions"] += len(doc_mentions)
    report["clusters"] += len(sizes)
    report["singletons"] += sum(1 for n in sizes.values() if n == 1)
    report["cross_sentence"] += sum(
        1
        for s, e, _ in doc_mentions
        if bisect.bisect_right(doc.sentence_starts, s)
        != bisect.bisect_right(doc.sentence_starts, e - 1)
    )
    nested, crossing = _overlaps([(s, e) for s, e, _ in doc_mentions])
    report["nested"] += nested
    report["crossing"] += crossing

    known = {q.item_id: q for q in doc.queries}
    unknown = sorted(set(answer.query_mentions or {}) - set(known))
    if unknown:
        raise CorefreproError(
            f"{where}: query mentions for item(s) {unknown[:3]} that are not over this document"
        )
    queries: dict[str, list[Span]] = {}
    for query in doc.queries:
        spans = _checked_spans(
            f"annotator '{name}': item {query.item_id}",
            (answer.query_mentions or {}).get(query.item_id, []),
            len(query.tokens),
            "query tokens",
        )
        spans, same, two = _dedup(spans)
        report["query_duplicate_same_cluster"] += same
        report["query_duplicate_two_clusters"] += two
        renumbered = []
        for s, e, c in spans:
            if c not in order:
                order[c] = len(order)
                report["query_only_clusters"] += 1
            renumbered.append((s, e, order[c]))
        queries[query.item_id] = renumbered
        report["query_mentions"] += len(renumbered)
    for key, value in (answer.counts or {}).items():
        if not isinstance(value, int) or isinstance(value, bool):
            raise CorefreproError(f"{where}: count {key!r} is not an int ({value!r})")
        report[key] += value
    return doc_mentions, queries


def _checked_spans(where: str, spans: Sequence[Any], length: int, unit: str) -> list[Span]:
    out: list[Span] = []
    for m in spans:
        if (
            not isinstance(m, tuple | list)
            or len(m) != 3
            or not all(isinstance(x, int) and not isinstance(x, bool) for x in m)
        ):
            raise CorefreproError(f"{where}: mention {m!r} is not (start, end, cluster) ints")
        s, e, c = m
        if s < 0 or e > length or e <= s:
            raise CorefreproError(
                f"{where}: mention span [{s}, {e}) outside its {length} {unit} "
                f"(end is exclusive; cluster {c})"
            )
        out.append((s, e, c))
    return out


def _dedup(spans: list[Span]) -> tuple[list[Span], int, int]:
    """One cluster per span (module doc); returns (spans sorted by (start, end), same, two)."""
    first: dict[int, tuple[int, int, int]] = {}
    for s, e, c in spans:
        first[c] = min(first.get(c, (s, e, c)), (s, e, c))
    clusters_of: dict[tuple[int, int], list[int]] = defaultdict(list)
    for s, e, c in spans:
        clusters_of[(s, e)].append(c)
    same = two = 0
    kept: list[Span] = []
    for (s, e), clusters in clusters_of.items():
        distinct = sorted(set(clusters), key=lambda c: first[c])
        same += len(clusters) - len(distinct)
        two += len(distinct) - 1
        kept.append((s, e, distinct[0]))
    kept.sort()
    return kept, same, two


def _overlaps(spans: list[tuple[int, int]]) -> tuple[int, int]:
    """(mentions inside another mention, mentions partially overlapping an earlier one);
    spans are distinct and sorted by (start, end)."""
    nested = crossing = 0
    ordered = sorted(spans, key=lambda x: (x[0], -x[1]))  # outer before inner at one start
    open_: list[tuple[int, int]] = []
    for s, e in ordered:
        open_ = [(a, b) for a, b in open_ if b > s]
        if any(b >= e for _, b in open_):
            nested += 1
        elif any(a < s for a, _ in open_):
            crossing += 1
        open_.append((s, e))
    return nested, crossing


def _build_docs(documents: pa.Table, items: pa.Table | None, gold: pa.Table | None) -> list[Doc]:
    cols = {
        k: documents.column(k).to_pylist()
        for k in ("doc_id", "tokens", "sentence_starts", "genre", "speakers")
    }
    lengths = dict(zip(cols["doc_id"], (len(t) for t in cols["tokens"]), strict=True))
    has_gold = gold is not None and gold.num_rows > 0
    gold_rows: dict[str, list[Span]] = defaultdict(list)
    if has_gold:
        annotators = set(gold.column("annotator").to_pylist())
        if len(annotators) > 1:
            raise CorefreproError(
                f"annotate: the gold mentions table mixes annotators {sorted(annotators)}"
            )
        for doc_id, s, e, c in zip(
            *(gold.column(k).to_pylist() for k in ("doc_id", "start", "end", "cluster")),
            strict=True,
        ):
            if doc_id in lengths:
                gold_rows[doc_id].append((s, e, c))
    queries: dict[str, list[Query]] = defaultdict(list)
    if items is not None and items.num_rows:
        for item_id, doc_id, query, end in zip(
            *(items.column(k).to_pylist() for k in ("item_id", "doc_id", "query", "context_end")),
            strict=True,
        ):
            if doc_id not in lengths:
                raise CorefreproError(
                    f"annotate: item {item_id} is over document {doc_id}, which is not in the "
                    "documents table"
                )
            if not 0 <= end <= lengths[doc_id]:
                raise CorefreproError(
                    f"annotate: item {item_id}: context_end {end} outside document {doc_id} "
                    f"({lengths[doc_id]} tokens)"
                )
            queries[doc_id].append(Query(item_id, list(query), int(end)))
    return [
        Doc(
            doc_id=doc_id,
            tokens=tokens,
            sentence_starts=starts,
            genre=genre,
            speakers=speakers,
            gold=gold_rows.get(doc_id, []) if has_gold else None,
            queries=queries.get(doc_id, []),
        )
        for doc_id, tokens, starts, genre, speakers in zip(
            *(cols[k] for k in ("doc_id", "tokens", "sentence_starts", "genre", "speakers")),
            strict=True,
        )
    ]


__all__ = ["REPORT_KEYS", "annotate_documents", "check_annotation"]
