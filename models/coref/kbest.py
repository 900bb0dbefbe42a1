"""Approximate k-best antecedent trees per document, for EntityNLM reranking.

Ji, Tan, Martschat, Choi & Smith (2017), papers/000 §5.2 "Approximate k-best decoding": the
k highest-scoring trees by summed edge score would repeat the same coreference chains, so
instead, starting from the system's best tree,
1. for every mention pair (m_j, m_i) compute the gap between the score of m_i as m_j's
   antecedent and the score of m_j's optimal antecedent;
2. sort the pairs by gap, ascending, and go through them: the tree t_{j,i} is the best tree
   with m_j's antecedent replaced by m_i; it joins the list if it encodes coreference chains
   different from those of every tree already in it;
3. if fewer than k trees come out (short documents), pad with the last tree added.

Here the system is the E2E model (models/coref/model.py): the mentions are its kept spans, the
antecedent choices its candidate antecedents plus the dummy (a mention with the dummy as
antecedent is non-anaphoric, the paper's "empty mention"), and edge scores s(i, j) with
s(i, eps) = 0. A tree's score is the sum of its chosen edges' scores, so t_{j,i} scores
best - gap and the list comes out sorted by score (descending). Chains are the transitive
closure of the links; two trees are the same when they induce the same set of chains
(clusters of >= 2 mentions, compared as sets of spans).

Output rows, one per (document, rank): see KBEST_SCHEMA.

The DVC stage `kbest@<corpus>` (flows/kbest.py) runs a coreference checkpoint through
kbest_for_documents. Long documents go through the model's windowed encoder
(CorefConfig.encode_window sentences at a time).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import torch

from models.coref.data import CorefDocument, CorefVocab, tensorize
from models.coref.model import CorefModel, CorefOutput
from tasks.core.schema import KBEST_SCHEMA

log = logging.getLogger("corefrepro.kbest")

# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """One antecedent tree: antecedents[j] = index of m_j's antecedent, -1 for the dummy."""

    antecedents: tuple[int, ...]
    score: float
    clusters: tuple[tuple[tuple[int, int], ...], ...]  # chains, each sorted, sorted by first
    padded: bool = False


def chains(spans: Sequence[tuple[int, int]], antecedents: Sequence[int]) -> tuple:
    """Chains of an antecedent tree (antecedents[j] < j or -1), in canonical order."""
    root = list(range(len(antecedents)))
    for j, a in enumerate(antecedents):
        if a >= 0:
            root[j] = root[a]
    groups: dict[int, list[tuple[int, int]]] = {}
    for j, r in enumerate(root):
        groups.setdefault(r, []).append(tuple(spans[j]))
    return tuple(sorted(tuple(sorted(g)) for g in groups.values() if len(g) > 1))


def kbest_trees(
    spans: Sequence[tuple[int, int]],
    candidates: Sequence[Sequence[int]],
    scores: Sequence[Sequence[float]],
    k: int,
) -> list[Tree]:
    """Ji et al. (2017) §5.2 on one document.

    spans: the mentions in document order; candidates[j]: m_j's candidate antecedents (indices
    < j); scores[j]: [s(j, eps), s(j, candidates[j][0]), ...] (the dummy first, as
    models.coref.model.CorefOutput.scores; -inf marks an unavailable choice). Returns exactly k
    trees (k >= 1), best first.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    options: list[list[tuple[int, float]]] = []  # per mention: (antecedent or -1, score)
    for j in range(len(spans)):
        row = [(-1, float(scores[j][0]))]
        row += [
            (int(a), float(s))
            for a, s in zip(candidates[j], scores[j][1:], strict=False)
            if s != float("-inf")
        ]
        if any(a >= j for a, _ in row):
            raise ValueError(f"mention {j} has a candidate antecedent that does not precede it")
        options.append(row)
    # the best tree: every mention takes its highest-scoring choice (first on ties)
    best_choice = [max(row, key=lambda o: o[1]) for row in options]
    best = [a for a, _ in best_choice]
    best_score = sum(s for _, s in best_choice)
    trees = [Tree(tuple(best), best_score, chains(spans, best))]
    seen = {trees[0].clusters}
    # every suboptimal choice, by its gap to the mention's optimal choice
    swaps = sorted(
        (best_choice[j][1] - s, j, a)
        for j, row in enumerate(options)
        for a, s in row
        if a != best[j]
    )
    for gap, j, a in swaps:
        if len(trees) == k:
            break
        antecedents = list(best)
        antecedents[j] = a
        clusters = chains(spans, antecedents)
        if clusters in seen:
            continue
        seen.add(clusters)
        trees.append(Tree(tuple(antecedents), best_score - gap, clusters))
    last = trees[-1]
    trees += [
        Tree(last.antecedents, last.score, last.clusters, padded=True)
        for _ in range(k - len(trees))
    ]
    return trees


def trees_from_output(output: CorefOutput, k: int) -> tuple[list[tuple[int, int]], list[Tree]]:
    """(mention spans, k trees) from the model's scores of one document."""
    spans = list(zip(output.starts.tolist(), output.ends.tolist(), strict=True))
    mask = output.antecedent_mask.tolist()
    candidates = [
        [a for a, ok in zip(row, ok_row, strict=True) if ok]
        for row, ok_row in zip(output.antecedents.tolist(), mask, strict=True)
    ]
    scores = [
        [row[0]] + [s for s, ok in zip(row[1:], ok_row, strict=True) if ok]
        for row, ok_row in zip(output.scores.float().tolist(), mask, strict=True)
    ]
    return spans, kbest_trees(spans, candidates, scores, k)


def tree_rows(doc_id: str, trees: Iterable[Tree]) -> list[dict]:
    """KBEST_SCHEMA rows of one document."""
    return [
        {
            "doc_id": doc_id,
            "rank": rank,
            "score": tree.score,
            "padded": tree.padded,
            "mentions": [
                {"start": s, "end": e, "cluster": c}
                for c, cluster in enumerate(tree.clusters)
                for s, e in cluster
            ],
        }
        for rank, tree in enumerate(trees)
    ]


@torch.no_grad()
def kbest_for_documents(
    model: CorefModel,
    vocab: CorefVocab,
    docs: Iterable[CorefDocument],
    k: int = 100,
    device: torch.device | str = "cpu",
    on_document: Callable[[int, list[Tree]], None] | None = None,
    features: Any = None,
) -> pa.Table:
    """k-best lists (Ji et al. used k = 100) for every document, as one KBEST_SCHEMA table.

    Built one Arrow table per document (k x mentions rows of Python dicts would not fit for a
    corpus at once); on_document(count so far, trees) reports progress; `features`: the LM
    features of a model trained on them (models/coref/features.py).
    """
    parts: list[pa.Table] = []
    for count, doc in enumerate(docs, start=1):
        output = model.predict(tensorize(doc, vocab, features).to(device))
        _, trees = trees_from_output(output, k)
        parts.append(pa.Table.from_pylist(tree_rows(doc.doc_id, trees), schema=KBEST_SCHEMA))
        if on_document is not None:
            on_document(count, trees)
    if not parts:
        return KBEST_SCHEMA.empty_table()
    return pa.concat_tables(parts).combine_chunks()


__all__ = [
    "Tree",
    "chains",
    "kbest_for_documents",
    "kbest_trees",
    "tree_rows",
    "trees_from_output",
]
