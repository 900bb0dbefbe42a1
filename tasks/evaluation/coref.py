"""The project's one scoring module: every number a model is judged by is computed here.

Sections
--------
- Coreference metrics: MUC, B-cubed, CEAF-m, CEAF-e, BLANC, LEA, mention identification and
  the CoNLL average F1, computed the way the official CoNLL-2011/2012 reference scorer v8.01
  does (github.com/conll/reference-coreference-scorers, lib/CorScorer.pm; Pradhan et al., 2014,
  "Scoring Coreference Partitions of Predicted Mentions: A Reference Implementation"), because
  the papers we reproduce report numbers from that scorer.
- (accuracy / perplexity for the QA, cloze and language-modelling tasks go below, in their own
  sections.)
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from tasks.core.errors import CorefreproError

# ============================================================================================
# Coreference metrics
# ============================================================================================
#
# Input: per document, a clustering = a sequence of clusters, each a sequence of mentions; a
# mention is a token span (start, end) -- any hashable works, only equality matters (end is
# exclusive in this project, the scorer only compares spans). A corpus is a mapping
# doc_id -> clustering; every public function also takes a single clustering (one document).
#
# How the reference scorer v8.01 treats the awkward inputs (and so do we):
# - Documents: scored are the documents of the KEY. A key document missing from the response is
#   scored against an empty response; a response document missing from the key is ignored
#   (pass strict_documents=True to make that an error instead).
# - Aggregation over documents is micro: numerators and denominators of recall and precision are
#   summed over documents, then R = sum num / sum den (BLANC sums its 8 counts first, too).
# - Empty clusters carry no mentions and are dropped.
# - A span repeated in the RESPONSE is kept only where it first occurs (clusters in input order,
#   then mentions in cluster order; the scorer keeps it in the entity whose label appears first
#   in the file) and the later copies are removed; a cluster left empty disappears. v8.01
#   refuses to score a run with more than 10 repeated response mentions: we raise
#   DuplicateMentionsError once more than `max_duplicates` (default 10) are found over all the
#   documents of one call (v8.01's counter also runs on across metrics -- a quirk not copied).
# - A span in two KEY clusters stays in both, as v8.01 keeps it (it only warns): one mention
#   counted in both clusters' sizes, whose own cluster, when looked up, is the LAST one listing
#   it (v8.01's Indexa). A span repeated WITHIN one key cluster is kept once: v8.01 would count
#   it twice and can then print CEAF above 1, and the project's CoNLL reader keeps it once too.
# - Singletons: kept unless exclude_singletons=True, which drops every cluster with a single
#   distinct span from key and response BEFORE the above (the CoNLL-2012 convention of the
#   papers: the key has no singletons and the response's singletons are ignored). MUC ignores
#   singletons by construction; B3, CEAF, BLANC and LEA do not.
# - Zero denominators give 0 (recall, precision and F1), never NaN, as the scorer prints them.

Span = Hashable
Cluster = Sequence[Span]
Clustering = Sequence[Cluster]
Corpus = Mapping[str, Clustering]

# Metric names as the reference scorer spells them (plus LEA and mention identification).
COREF_METRICS: tuple[str, ...] = ("muc", "bcub", "ceafm", "ceafe", "blanc", "lea", "mentions")
CONLL_METRICS: tuple[str, ...] = ("muc", "bcub", "ceafe")
MAX_RESPONSE_DUPLICATES = 10  # v8.01 refuses to score beyond this many repeated mentions


class DuplicateMentionsError(CorefreproError, ValueError):
    """The response repeats more spans than the reference scorer accepts (a systematic bug)."""


@dataclass(frozen=True)
class Score:
    """Recall, precision, F1 and the summed counts they come from.

    counts = (recall_num, recall_den, precision_num, precision_den); for BLANC the coreference
    link counts followed by the non-coreference link counts (8 numbers), as v8.01 returns them.
    """

    recall: float
    precision: float
    f1: float
    counts: tuple[float, ...] = ()


def score_coreference(
    key: Corpus | Clustering,
    response: Corpus | Clustering,
    *,
    metrics: Iterable[str] = COREF_METRICS,
    exclude_singletons: bool = False,
    max_duplicates: int | None = MAX_RESPONSE_DUPLICATES,
    strict_documents: bool = False,
) -> dict[str, Score]:
    """Score a response clustering against the key: {metric name: Score}, micro over documents.

    key/response: {doc_id: clusters} or the clusters of a single document. metrics: names from
    COREF_METRICS. max_duplicates=None accepts any number of repeated response spans.
    """
    metrics = tuple(metrics)
    unknown = [m for m in metrics if m not in _COUNTERS]
    if unknown:
        raise ValueError(f"unknown coreference metric(s) {unknown}; known: {COREF_METRICS}")
    key_docs, response_docs = _as_corpora(key, response)
    extra = [doc_id for doc_id in response_docs if doc_id not in key_docs]
    if extra and strict_documents:
        raise ValueError(f"{len(extra)} response document(s) not in the key, e.g. {extra[:3]}")

    totals = {m: np.zeros(8 if m == "blanc" else 4) for m in metrics}
    repeated = 0
    for doc_id, key_clusters in key_docs.items():
        doc = _Document.build(key_clusters, response_docs.get(doc_id, ()), exclude_singletons)
        repeated += doc.repeated
        if max_duplicates is not None and repeated > max_duplicates:
            raise DuplicateMentionsError(
                f"more than {max_duplicates} repeated mentions in the response (reached in "
                f"document {doc_id!r}); the reference scorer refuses to score such a run"
            )
        for m in metrics:
            totals[m] += _COUNTERS[m](doc)
    return {m: _FINALIZERS.get(m, _rpf)(tuple(float(x) for x in totals[m])) for m in metrics}


def conll_f1(scores: Mapping[str, Score]) -> float:
    """The CoNLL score: unweighted mean of the MUC, B3 and CEAF-e F1 (Pradhan et al., 2012)."""
    missing = [m for m in CONLL_METRICS if m not in scores]
    if missing:
        raise ValueError(f"the CoNLL F1 needs {missing} too")
    return sum(scores[m].f1 for m in CONLL_METRICS) / len(CONLL_METRICS)


def as_metrics(scores: Mapping[str, Score]) -> dict[str, float]:
    """Flat {"<metric>_r"/"_p"/"_f1": value, "conll_f1": ...} for DVC metrics files and MLflow."""
    flat: dict[str, float] = {}
    for name, s in scores.items():
        flat[f"{name}_r"], flat[f"{name}_p"], flat[f"{name}_f1"] = s.recall, s.precision, s.f1
    if all(m in scores for m in CONLL_METRICS):
        flat["conll_f1"] = conll_f1(scores)
    return flat


def _single_metric(name: str) -> Callable[..., Score]:
    def score(key: Corpus | Clustering, response: Corpus | Clustering, **options: Any) -> Score:
        return score_coreference(key, response, metrics=(name,), **options)[name]

    score.__name__ = name
    score.__doc__ = f"The {name} Score alone; options as score_coreference."
    return score


muc = _single_metric("muc")  # Vilain et al. (1995)
b_cubed = _single_metric("bcub")  # Bagga & Baldwin (1998)
ceaf_m = _single_metric("ceafm")  # Luo (2005), mention-based phi3
ceaf_e = _single_metric("ceafe")  # Luo (2005), entity-based phi4
blanc = _single_metric("blanc")  # Recasens & Hovy (2011), Luo et al. (2014) for system mentions
lea = _single_metric("lea")  # Moosavi & Strube (2016)
mention_identification = _single_metric("mentions")


# --- mentions tables (tasks/core/schema.py MENTIONS_SCHEMA) ----------------------------------------


def clusters_from_mentions(mentions: Any, *, annotator: str | None = None) -> dict[str, list]:
    """Group mention rows (doc_id, start, end, cluster[, annotator]) into {doc_id: clusters}.

    mentions: a pyarrow Table of MENTIONS_SCHEMA or an iterable of row dicts. Documents, clusters
    and mentions keep the order of first appearance in the rows (which decides which copy of a
    repeated response span is kept). Rows of several annotators must be told apart: pass
    `annotator`, else mixing them is an error rather than a silent union.
    """
    columns = _columns(mentions, ("doc_id", "start", "end", "cluster"))
    annotators = columns.get("annotator")
    if annotator is not None and annotators is None:
        raise ValueError("mentions have no 'annotator' column to select from")
    if annotator is None and annotators is not None and len(set(annotators)) > 1:
        raise ValueError(f"mentions of several annotators {sorted(set(annotators))}: pick one")
    grouped: dict[str, dict[Hashable, list[tuple[int, int]]]] = {}
    for i, (doc_id, start, end, cluster) in enumerate(
        zip(columns["doc_id"], columns["start"], columns["end"], columns["cluster"], strict=True)
    ):
        if annotator is not None and annotators[i] != annotator:
            continue
        grouped.setdefault(doc_id, {}).setdefault(cluster, []).append((int(start), int(end)))
    return {doc_id: list(clusters.values()) for doc_id, clusters in grouped.items()}


def score_mention_tables(
    key_mentions: Any,
    response_mentions: Any,
    *,
    documents: Iterable[str] | None = None,
    key_annotator: str | None = None,
    response_annotator: str | None = None,
    **options: Any,
) -> dict[str, Score]:
    """score_coreference on two mentions tables (e.g. annotator "gold" vs a model's output).

    documents: the doc_ids to score (e.g. the test split of the documents table). A mentions
    table has no row for a document without mentions, so without this list a document with no
    gold mention would not be scored and the response's mentions in it would be ignored.
    """
    key = clusters_from_mentions(key_mentions, annotator=key_annotator)
    response = clusters_from_mentions(response_mentions, annotator=response_annotator)
    if documents is not None:
        key = {doc_id: key.get(doc_id, []) for doc_id in documents}
    return score_coreference(key, response, **options)


def _columns(mentions: Any, required: Sequence[str]) -> dict[str, list]:
    if hasattr(mentions, "column_names") and hasattr(mentions, "column"):  # pyarrow Table
        names = list(mentions.column_names)
        missing = [c for c in required if c not in names]
        if missing:
            raise ValueError(f"mentions table lacks column(s) {missing}")
        wanted = [*required, "annotator"] if "annotator" in names else list(required)
        return {c: mentions.column(c).to_pylist() for c in wanted}
    rows = list(mentions)
    missing = sorted({c for row in rows for c in required if c not in row})
    if missing:
        raise ValueError(f"mention rows lack field(s) {missing}")
    columns = {c: [row[c] for row in rows] for c in required}
    if rows and all("annotator" in row for row in rows):
        columns["annotator"] = [row["annotator"] for row in rows]
    return columns


# --- one document, prepared once for all metrics ----------------------------------------------


@dataclass
class _Document:
    key: list[list[Span]]  # non-empty key clusters; a span may be in several of them
    response: list[list[Span]]  # non-empty response clusters, repeated spans removed
    key_of: dict[Span, int]  # span -> the LAST key cluster listing it (v8.01 Indexa)
    response_of: dict[Span, int]  # span -> its response cluster
    overlap: Counter  # (i, j) -> |key cluster i ∩ response cluster j|, non-zero only
    key_repeats: bool  # some span is in more than one key cluster
    repeated: int  # response copies removed

    @classmethod
    def build(cls, key: Clustering, response: Clustering, exclude_singletons: bool) -> _Document:
        key_clusters = [list(dict.fromkeys(_span(m) for m in c)) for c in key]
        response_clusters = [[_span(m) for m in c] for c in response]
        key_clusters = [c for c in key_clusters if c]
        response_clusters = [c for c in response_clusters if c]
        if exclude_singletons:
            key_clusters = [c for c in key_clusters if len(set(c)) > 1]
            response_clusters = [c for c in response_clusters if len(set(c)) > 1]

        seen: set[Span] = set()
        deduplicated: list[list[Span]] = []
        repeated = 0
        for cluster in response_clusters:
            kept = []
            for m in cluster:
                if m in seen:
                    repeated += 1
                else:
                    seen.add(m)
                    kept.append(m)
            if kept:
                deduplicated.append(kept)

        key_of = {m: i for i, c in enumerate(key_clusters) for m in c}
        response_of = {m: j for j, c in enumerate(deduplicated) for m in c}
        overlap: Counter = Counter()
        for i, cluster in enumerate(key_clusters):
            for m in cluster:
                j = response_of.get(m)
                if j is not None:
                    overlap[i, j] += 1
        key_repeats = sum(len(c) for c in key_clusters) != len(key_of)
        return cls(key_clusters, deduplicated, key_of, response_of, overlap, key_repeats, repeated)

    def key_groups(self, cluster: list[Span]) -> Counter:
        """How many spans of a response cluster fall in each key cluster (via key_of)."""
        return Counter(self.key_of[m] for m in cluster if m in self.key_of)


def _span(mention: Any) -> Span:
    return tuple(mention) if isinstance(mention, list) else mention


def _as_corpora(
    key: Any, response: Any
) -> tuple[Mapping[str, Clustering], Mapping[str, Clustering]]:
    if isinstance(key, Mapping) != isinstance(response, Mapping):
        raise TypeError("key and response must both be {doc_id: clusters} or both one clustering")
    if isinstance(key, Mapping):
        return key, response
    return {"": key}, {"": response}


def _pairs(n: int) -> int:
    return n * (n - 1) // 2


# --- per-document counts of each metric ------------------------------------------------------


def _muc_counts(d: _Document) -> tuple[float, ...]:
    """Vilain et al. (1995): links. The correct links of a response cluster r are
    |r ∩ key| - (number of key clusters r touches); the same total counts for recall and
    precision (both equal sum over (k, r) of |k ∩ r| minus the number of overlapping pairs)."""
    correct = sum(sum(g.values()) - len(g) for g in map(d.key_groups, d.response))
    key_links = sum(len(c) - 1 for c in d.key)
    response_links = sum(len(c) - 1 for c in d.response)
    return (correct, key_links, correct, response_links)


def _bcub_counts(d: _Document) -> tuple[float, ...]:
    """Bagga & Baldwin (1998): per mention, the overlap of its key and response clusters
    relative to each: recall sums |k ∩ r|² / |k|, precision |k ∩ r|² / |r| over pairs (k, r);
    twinless mentions count in the denominators only (v8.01 = B3 without Cai & Strube)."""
    recall = precision = 0.0
    for r in d.response:
        r_set = set(r) if d.key_repeats else None
        for i, g in d.key_groups(r).items():
            # g spans of r have key cluster i; each shares |r ∩ set(k_i)| spans with it (= g
            # unless the key repeats a span across clusters)
            common = g if r_set is None else len(r_set.intersection(d.key[i]))
            precision += g * common / len(r)
            recall += g * common / len(d.key[i])
    key_mentions = sum(len(c) for c in d.key)
    response_mentions = sum(len(c) for c in d.response)
    return (recall, key_mentions, precision, response_mentions)


def _ceaf_counts(d: _Document, entity: bool) -> tuple[float, ...]:
    """Luo (2005): the best one-to-one alignment of key and response clusters (Kuhn-Munkres),
    similarity phi3 = |k ∩ r| (CEAF-m) or phi4 = 2|k ∩ r| / (|k| + |r|) (CEAF-e)."""
    similarity = 0.0
    if d.overlap:
        # clusters without any overlap can only be aligned at similarity 0: leave them out
        rows = {i: n for n, i in enumerate(sorted({i for i, _ in d.overlap}))}
        cols = {j: n for n, j in enumerate(sorted({j for _, j in d.overlap}))}
        sim = np.zeros((len(rows), len(cols)))
        for (i, j), n in d.overlap.items():
            sim[rows[i], cols[j]] = 2 * n / (len(d.key[i]) + len(d.response[j])) if entity else n
        row_ind, col_ind = linear_sum_assignment(sim, maximize=True)
        similarity = float(sim[row_ind, col_ind].sum())
    if entity:
        return (similarity, len(d.key), similarity, len(d.response))
    key_mentions = sum(len(c) for c in d.key)
    response_mentions = sum(len(c) for c in d.response)
    return (similarity, key_mentions, similarity, response_mentions)


def _blanc_counts(d: _Document) -> tuple[float, ...]:
    """Recasens & Hovy (2011) with Luo et al. (2014)'s system mentions: coreference links (pairs
    in one cluster) and non-coreference links (pairs across clusters) of key and response,
    counted by combinatorics instead of enumerating the pairs."""
    if d.key_repeats:
        return _blanc_counts_by_enumeration(d)
    key_coref = sum(_pairs(len(c)) for c in d.key)
    response_coref = sum(_pairs(len(c)) for c in d.response)
    key_noncoref = _pairs(len(d.key_of)) - key_coref
    response_noncoref = _pairs(len(d.response_of)) - response_coref
    both_coref = sum(_pairs(n) for n in d.overlap.values())
    # non-coreference links of both: pairs of mentions in key and response, in different key
    # clusters and in different response clusters (inclusion-exclusion)
    in_key_cluster: Counter = Counter()
    in_response_cluster: Counter = Counter()
    for (i, j), n in d.overlap.items():
        in_key_cluster[i] += n
        in_response_cluster[j] += n
    both_noncoref = (
        _pairs(sum(d.overlap.values()))
        - sum(_pairs(n) for n in in_key_cluster.values())
        - sum(_pairs(n) for n in in_response_cluster.values())
        + both_coref
    )
    return (
        both_coref, key_coref, both_coref, response_coref,
        both_noncoref, key_noncoref, both_noncoref, response_noncoref,
    )  # fmt: skip


def _links(clusters: list[list[Span]]) -> tuple[set[frozenset], set[frozenset]]:
    """v8.01's link sets; a span in two clusters links to itself across them ({a} here)."""
    coref = {frozenset(p) for c in clusters for p in itertools.combinations(c, 2)}
    noncoref = {
        frozenset((a, b)) for c1, c2 in itertools.combinations(clusters, 2) for a in c1 for b in c2
    }
    return coref, noncoref


def _blanc_counts_by_enumeration(d: _Document) -> tuple[float, ...]:
    """BLANC counts from explicit link sets (quadratic): only for keys with a span in two
    clusters, where the combinatorial counts would not hold."""
    key_coref, key_noncoref = _links(d.key)
    response_coref, response_noncoref = _links(d.response)
    both_coref = len(key_coref & response_coref)
    both_noncoref = len(key_noncoref & response_noncoref)
    return (
        both_coref, len(key_coref), both_coref, len(response_coref),
        both_noncoref, len(key_noncoref), both_noncoref, len(response_noncoref),
    )  # fmt: skip


def _lea_counts(d: _Document) -> tuple[float, ...]:
    """Moosavi & Strube (2016): each entity weighs its size (importance) times the fraction of
    its links the other side resolves. LEA is not in v8.01 itself; as in the authors' scorer
    (github.com/ns-moosavi/coval), a singleton has one self-link, resolved when the other
    side has that mention as a singleton too."""
    by_key: dict[int, list[int]] = {}
    for (i, _), n in d.overlap.items():
        by_key.setdefault(i, []).append(n)
    recall_num = 0.0
    for i, k in enumerate(d.key):
        if len(k) == 1:
            j = d.response_of.get(k[0])
            recall_num += 1.0 if j is not None and len(d.response[j]) == 1 else 0.0
        else:
            resolved = sum(_pairs(n) for n in by_key.get(i, ()))
            recall_num += len(k) * resolved / _pairs(len(k))
    precision_num = 0.0
    for r in d.response:
        if len(r) == 1:
            i = d.key_of.get(r[0])
            precision_num += 1.0 if i is not None and len(d.key[i]) == 1 else 0.0
        else:
            resolved = sum(_pairs(g) for g in d.key_groups(r).values())
            precision_num += len(r) * resolved / _pairs(len(r))
    key_mentions = sum(len(c) for c in d.key)
    response_mentions = sum(len(c) for c in d.response)
    return (recall_num, key_mentions, precision_num, response_mentions)


def _mention_counts(d: _Document) -> tuple[float, ...]:
    """Mention identification (the scorer's first line): exact span matches, distinct spans."""
    found = sum(1 for m in d.response_of if m in d.key_of)
    return (found, len(d.key_of), found, len(d.response_of))


_COUNTERS: dict[str, Callable[[_Document], tuple[float, ...]]] = {
    "muc": _muc_counts,
    "bcub": _bcub_counts,
    "ceafm": lambda d: _ceaf_counts(d, entity=False),
    "ceafe": lambda d: _ceaf_counts(d, entity=True),
    "blanc": _blanc_counts,
    "lea": _lea_counts,
    "mentions": _mention_counts,
}


# --- from summed counts to scores -------------------------------------------------------------


def _ratios(counts: tuple[float, ...]) -> tuple[float, float, float]:
    recall_num, recall_den, precision_num, precision_den = counts
    recall = recall_num / recall_den if recall_den else 0.0
    precision = precision_num / precision_den if precision_den else 0.0
    f1 = 2 * recall * precision / (recall + precision) if recall + precision else 0.0
    return recall, precision, f1


def _rpf(counts: tuple[float, ...]) -> Score:
    return Score(*_ratios(counts), counts=counts)


def _blanc_score(counts: tuple[float, ...]) -> Score:
    """v8.01 ScoreBLANC: the mean of the coreference and non-coreference scores; when the key
    has no link of one kind, the score of the other kind alone; 0 when it has no link at all."""
    coref, noncoref = _ratios(counts[:4]), _ratios(counts[4:])
    key_coref_links, key_noncoref_links = counts[1], counts[5]
    if not key_coref_links and not key_noncoref_links:
        return Score(0.0, 0.0, 0.0, counts)
    if not key_coref_links:
        return Score(*noncoref, counts=counts)
    if not key_noncoref_links:
        return Score(*coref, counts=counts)
    return Score(*((a + b) / 2 for a, b in zip(coref, noncoref, strict=True)), counts=counts)


_FINALIZERS: dict[str, Callable[[tuple[float, ...]], Score]] = {"blanc": _blanc_score}
