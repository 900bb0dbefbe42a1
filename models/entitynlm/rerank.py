"""Coreference reranking with a generative scorer (Ji et al. 2017, papers/000 §5.2, Eq. 12).

The `kbest` stage (models/coref/kbest.py) exports per document up to k antecedent trees of the
project's coreference model with their scores (data/kbest/<corpus>/kbest.parquet, rank 0 = the
system's 1-best). Each tree is a clustering of the document's mentions; a scorer gives it a
number -- EntityNLM's log P(X, R, E, L), once the model exists -- and
- "Rerank: EntityNLM" picks argmax_y score(x, y) over the k trees (Eq. 12);
- "Rerank: EntityNLM + cort" picks argmax_y alpha * coref(y) + (1 - alpha) * score(x, y), with
  alpha grid-searched on the dev documents' CoNLL F1 ("the coefficients were found via grid
  search with the CoNLL score on the development set").
Both are compared with the 1-best on the test documents (MUC, B3, CEAF-e, CoNLL F1 from
tasks/evaluation/coref.py) and with the approximate randomization test the paper uses
(tasks/evaluation/significance.py, paired over documents).

A scorer is `score(doc, clusters) -> float` (doc: a DOCUMENTS_SCHEMA row; clusters: tuple of
chains of (start, end) spans); one with a `score_many(doc, list_of_clusters) -> list[float]`
method is called once per document instead (batching the k candidates). `entitynlm_view` turns
a candidate into the R/E/L rows EntityNLM reads, with the view stage's own function.
Padded trees (copies of the last distinct one) are dropped: they cannot change the choice.
Ties go to the better (lower) rank, so a scorer that agrees with the coreference model
reproduces the 1-best exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from tasks.core.progress import track
from tasks.evaluation.coref import CONLL_METRICS, as_metrics, score_coreference
from tasks.evaluation.significance import TRIALS, conll_randomization
from tasks.graphs.views import entitynlm_row

Span = tuple[int, int]
Clusters = tuple[tuple[Span, ...], ...]
ALPHAS = tuple(round(a, 2) for a in np.linspace(0.0, 1.0, 21))  # alpha grid, step 0.05


class Scorer(Protocol):
    def __call__(self, doc: Mapping[str, Any], clusters: Clusters) -> float: ...


@dataclass(frozen=True)
class Candidate:
    """One antecedent tree of a k-best list, as chains of spans."""

    rank: int
    coref_score: float
    clusters: Clusters


@dataclass
class Reranked:
    """Per document the chosen candidate's rank, and the corpus response built from them."""

    choice: dict[str, int]
    response: dict[str, Clusters]


@dataclass
class RerankReport:
    """Everything Table 2 needs: test scores before/after, alpha, dev grid and p-values."""

    alpha: float
    dev_grid: dict[float, float]
    test: dict[str, dict[str, float]]  # system -> as_metrics(...) flat scores
    p_values: dict[str, float]  # reranked system -> AR p-value against the 1-best
    changed: dict[str, int]  # reranked system -> test documents whose choice moved off rank 0
    documents: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- reading


def read_kbest(table: pa.Table | str | Path) -> dict[str, list[Candidate]]:
    """KBEST_SCHEMA rows -> {doc_id: distinct candidates by rank} (padded copies dropped)."""
    if not isinstance(table, pa.Table):
        from tasks.core import storage
        from tasks.core.schema import KBEST

        table = storage.read_table(table, KBEST)
    out: dict[str, list[Candidate]] = {}
    for row in table.to_pylist():
        if row["padded"]:
            continue
        chains: dict[int, list[Span]] = {}
        for m in row["mentions"]:
            chains.setdefault(m["cluster"], []).append((m["start"], m["end"]))
        clusters = tuple(tuple(sorted(c)) for _, c in sorted(chains.items()))
        out.setdefault(row["doc_id"], []).append(Candidate(row["rank"], row["score"], clusters))
    for candidates in out.values():
        candidates.sort(key=lambda c: c.rank)
        if candidates[0].rank != 0:
            raise ValueError("a k-best list lacks its rank-0 tree (the system's 1-best)")
    return out


def entitynlm_view(doc: Mapping[str, Any], clusters: Clusters, **options: Any) -> dict[str, Any]:
    """A candidate as an ENTITYNLM_VIEW row (R/E/L per token; tasks/graphs/views.py).

    options as entitynlm_row (l_max, long_mentions); singletons never occur in a tree's chains.
    """
    spans = [(s, e, c) for c, chain in enumerate(clusters) for s, e in chain]
    return entitynlm_row(doc, spans, **options)


# --------------------------------------------------------------------------- scoring, choosing


def lm_scores(
    candidates: Mapping[str, Sequence[Candidate]],
    documents: Mapping[str, Mapping[str, Any]],
    scorer: Scorer | Any,
) -> dict[str, np.ndarray]:
    """The scorer's number for every candidate, per document, in candidate order (a
    progress line with rate and ETA: a k = 100 list of long documents takes minutes)."""
    out = {}
    for doc_id, cands in track(candidates.items(), "rerank: LM scores", len(candidates), "docs"):
        doc = documents[doc_id]
        clusterings = [c.clusters for c in cands]
        if hasattr(scorer, "score_many"):
            scores = scorer.score_many(doc, clusterings)
        else:
            scores = [scorer(doc, clusters) for clusters in clusterings]
        out[doc_id] = np.asarray(scores, dtype=np.float64)
        if out[doc_id].shape != (len(cands),):
            raise ValueError(f"{doc_id}: scorer gave {out[doc_id].shape} scores for {len(cands)}")
    return out


def rerank(
    candidates: Mapping[str, Sequence[Candidate]],
    scores: Mapping[str, np.ndarray],
    alpha: float = 0.0,
    doc_ids: Iterable[str] | None = None,
) -> Reranked:
    """argmax alpha * coref + (1 - alpha) * score per document (alpha = 0: Eq. 12 alone).

    Ties go to the lowest rank (np.argmax takes the first maximum; candidates are by rank).
    """
    choice, response = {}, {}
    for doc_id in candidates if doc_ids is None else doc_ids:
        cands = candidates[doc_id]
        coref = np.array([c.coref_score for c in cands])
        combined = coref if alpha == 1.0 else alpha * coref + (1.0 - alpha) * scores[doc_id]
        best = int(np.argmax(combined))
        choice[doc_id], response[doc_id] = cands[best].rank, cands[best].clusters
    return Reranked(choice, response)


def conll(key: Mapping[str, Any], response: Mapping[str, Any], **options: Any) -> float:
    scores = score_coreference(key, response, metrics=CONLL_METRICS, **options)
    return float(np.mean([scores[m].f1 for m in CONLL_METRICS]))


def grid_search(
    candidates: Mapping[str, Sequence[Candidate]],
    scores: Mapping[str, np.ndarray],
    key: Mapping[str, Any],
    alphas: Sequence[float] = ALPHAS,
    **options: Any,
) -> tuple[float, dict[float, float]]:
    """alpha maximising CoNLL F1 on `key`'s documents; ties go to the largest alpha (the
    mix closest to the coreference model alone). Returns (alpha, {alpha: F1})."""
    grid = {
        float(a): conll(key, rerank(candidates, scores, float(a), key).response, **options)
        for a in alphas
    }
    best = max(grid.values())
    return max(a for a, f in grid.items() if f == best), grid


def evaluate(
    candidates: Mapping[str, Sequence[Candidate]],
    scores: Mapping[str, np.ndarray],
    dev_key: Mapping[str, Any],
    test_key: Mapping[str, Any],
    *,
    alphas: Sequence[float] = ALPHAS,
    trials: int = TRIALS,
    seed: int = 0,
    exclude_singletons: bool = True,
) -> RerankReport:
    """Table 2: the 1-best, the scorer alone, and the dev-tuned mix on the test documents.

    dev_key/test_key: gold {doc_id: clusters}; every key document needs a k-best list.
    exclude_singletons: the CoNLL-2012 convention (key singletons ignored), as train_coref.
    """
    missing = [d for d in [*dev_key, *test_key] if d not in candidates]
    if missing:
        raise ValueError(
            f"{len(missing)} gold document(s) without a k-best list, e.g. {missing[:3]}"
        )
    options = {"exclude_singletons": exclude_singletons}
    alpha, grid = grid_search(candidates, scores, dev_key, alphas, **options)
    systems = {
        "baseline": rerank(candidates, scores, 1.0, test_key),
        "rerank_lm": rerank(candidates, scores, 0.0, test_key),
        "rerank_combined": rerank(candidates, scores, alpha, test_key),
    }
    test = {
        name: as_metrics(score_coreference(test_key, s.response, metrics=CONLL_METRICS, **options))
        for name, s in systems.items()
    }
    p_values = {
        name: conll_randomization(
            test_key,
            systems[name].response,
            systems["baseline"].response,
            trials=trials,
            seed=seed,
            **options,
        ).p_value
        for name in ("rerank_lm", "rerank_combined")
    }
    changed = {n: sum(r != 0 for r in systems[n].choice.values()) for n in p_values}
    return RerankReport(
        alpha, grid, test, p_values, changed, {"dev": len(dev_key), "test": len(test_key)}
    )


# --------------------------------------------------------------------------- a corpus on disk


def load_corpus(
    kbest_file: Path, docs_folder: Path, *, annotator: str = "gold"
) -> tuple[dict[str, list[Candidate]], dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(k-best candidates, documents by id, {split: gold key}) of a corpus's k-best export and
    its documents' folder."""
    from tasks.core import storage
    from tasks.core.schema import DOCUMENTS, MENTIONS
    from tasks.evaluation.coref import clusters_from_mentions

    candidates = read_kbest(kbest_file)
    docs = storage.read_table(docs_folder / f"{DOCUMENTS}.parquet", DOCUMENTS).to_pylist()
    mentions = storage.read_table(docs_folder / f"{MENTIONS}.parquet", MENTIONS)
    gold = clusters_from_mentions(mentions, annotator=annotator)
    keys: dict[str, dict[str, Any]] = {}
    for doc in docs:
        keys.setdefault(doc["split"], {})[doc["doc_id"]] = gold.get(doc["doc_id"], [])
    return candidates, {d["doc_id"]: d for d in docs}, keys


def rerank_corpus(
    kbest_file: Path, docs_folder: Path, scorer: Scorer | Any, **options: Any
) -> RerankReport:
    """evaluate() on a corpus's kbest export with its gold dev and test documents."""
    candidates, documents, keys = load_corpus(kbest_file, docs_folder)
    scores = lm_scores(candidates, documents, scorer)
    return evaluate(candidates, scores, keys.get("dev", {}), keys.get("test", {}), **options)


def coref_scorer(candidates: Mapping[str, Sequence[Candidate]]) -> Callable[..., float]:
    """The coreference model's own tree score as a scorer (reranking by it gives the 1-best)."""
    lookup = {(d, c.clusters): c.coref_score for d, cands in candidates.items() for c in cands}
    return lambda doc, clusters: lookup[doc["doc_id"], clusters]


def oracle_scorer(gold: Mapping[str, Any], **options: Any) -> Callable[..., float]:
    """Negative distance to gold (CoNLL F1 of the candidate against its document's key):
    an upper bound for any reranker over the same k-best lists."""
    return lambda doc, clusters: conll(
        {doc["doc_id"]: gold[doc["doc_id"]]}, {doc["doc_id"]: clusters}, **options
    )


__all__ = [
    "ALPHAS",
    "Candidate",
    "RerankReport",
    "Reranked",
    "coref_scorer",
    "entitynlm_view",
    "evaluate",
    "grid_search",
    "lm_scores",
    "load_corpus",
    "oracle_scorer",
    "read_kbest",
    "rerank",
    "rerank_corpus",
]
