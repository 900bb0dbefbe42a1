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

The DVC stage `kbest@<corpus>` (export_corpus; params.yaml kbest) runs the checkpoint
artifacts/train_coref/<encoder>/seed<seed>/best.pt over data/docs/<corpus>/ and writes
data/kbest/<corpus>/kbest.parquet + metrics/kbest/<corpus>.json. Long documents go through
the model's windowed encoder (CorefConfig.encode_window sentences at a time).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import torch

from models.coref.data import CorefDocument, CorefVocab, tensorize
from models.coref.model import CorefModel, CorefOutput
from tasks.core.errors import CorefreproError
from tasks.core.progress import Progress
from tasks.core.schema import KBEST, KBEST_SCHEMA
from tasks.core.settings import ConfigError, Name, bounded, parse_settings, settings_to_dict

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


# --------------------------------------------------------------------------- the DVC stage
# params.yaml kbest: corpora (the dvc.yaml foreach), encoder + seed (which checkpoint), k,
# splits, device and threads (scores differ in the last bits with them), and settings that do
# not change the output (encode_window, pair_chunk: memory; log_every_s).


@dataclass
class KbestSettings:
    """params.yaml kbest, checked whole before any work."""

    corpora: list[Name] = field(default_factory=list)
    encoder: str = "asl"
    seed: int = 1
    k: int = bounded(100, ge=1)  # Ji et al. (2017) §5.2: "In our experiments, k = 100"
    splits: list[Literal["train", "dev", "test"]] | None = None  # None: every document
    device: Literal["cpu", "cuda", "auto"] = "cpu"
    threads: int | None = bounded(
        1, ge=1
    )  # torch intra-op threads (None: torch's default); last bits vary
    encode_window: int = bounded(64, ge=1)  # sentences per encoder window (memory only)
    pair_chunk: int = bounded(256, ge=1)  # spans per antecedent-scoring chunk (memory only)
    log_every_s: float = bounded(30.0, ge=0)  # in logs, a progress line (rate, ETA) every N seconds

    def validate(self, path: str) -> None:
        bad = []
        if self.splits is not None and not self.splits:
            bad.append(f"{path}.splits: an empty list selects nothing (null = every document)")
        if bad:
            raise ConfigError(bad)


def settings() -> dict[str, Any]:
    from tasks.core.config import params

    return settings_to_dict(parse_settings(KbestSettings, params("kbest"), "kbest"))


def checkpoint_path(cfg: Mapping[str, Any]) -> Path:
    """artifacts/train_coref/<kbest.encoder>/seed<kbest.seed>/best.pt (what train_coref writes)."""
    from models.coref.train import BEST, artifact_dir

    return artifact_dir(str(cfg["encoder"]), int(cfg["seed"])) / BEST


def kbest_dir(corpus: str) -> Path:
    from tasks.core.config import resolve_path

    return resolve_path("data/kbest") / corpus


def metrics_path(corpus: str) -> Path:
    from tasks.core.config import resolve_path

    return resolve_path("metrics/kbest") / f"{corpus}.json"


def _checked(cfg: Mapping[str, Any]) -> tuple[int, list[str] | None, int]:
    return int(cfg["k"]), cfg["splits"], float(cfg["log_every_s"])


def export_corpus(corpus: str) -> dict[str, Any]:
    """The stage: k-best trees of every (selected) document of one corpus; returns metrics."""
    from models.coref.data import load_corpus
    from models.coref.features import checkpoint_features
    from models.coref.train import load_checkpoint, restore
    from tasks.core import storage
    from tasks.core.checkpoints import pick_device
    from tasks.core.fetch import sha256_of
    from tasks.core.layout import docs_dir

    cfg = settings()
    k, splits, every = _checked(cfg)
    path = checkpoint_path(cfg)
    if not path.is_file():
        raise CorefreproError(
            f"{path}: no checkpoint for params.yaml kbest.encoder={cfg['encoder']!r}, "
            f"kbest.seed={cfg['seed']!r}; train it with `dvc repro train_coref@{cfg['encoder']}` "
            "(train_coref.seeds must include the seed) or change kbest.encoder / kbest.seed"
        )
    docs = load_corpus(docs_dir(corpus), drop_singletons=False)
    if splits is not None:
        docs = [d for d in docs if d.split in splits]
    if not docs:
        where = f" in splits {splits} (params.yaml kbest.splits)" if splits else ""
        raise CorefreproError(f"{docs_dir(corpus)}: no documents{where}")
    ckpt = load_checkpoint(path)
    model, vocab = restore(
        ckpt, encode_window=int(cfg["encode_window"]), pair_chunk=int(cfg["pair_chunk"])
    )
    device = pick_device(str(cfg["device"]))
    model.to(device)
    # a model trained on LM features: lm_features@<corpus>'s file where it exists, else live
    features = checkpoint_features(
        ckpt["config"], str(path), corpus=corpus, documents=docs, device=device
    )
    threads_before = torch.get_num_threads()
    if cfg["threads"]:
        torch.set_num_threads(int(cfg["threads"]))
    log.info(
        "%s: %d documents, k = %d, checkpoint %s (%s, encode_window %d)",
        corpus, len(docs), k, path, device, model.config.encode_window,
    )  # fmt: skip
    started = time.perf_counter()
    distinct: list[int] = []
    bar = Progress(f"kbest@{corpus}", len(docs), "docs", every_s=every, logger=log)

    def progress(count: int, trees: list[Tree]) -> None:
        distinct.append(sum(not t.padded for t in trees))
        bar.update()

    try:
        with bar:
            table = kbest_for_documents(model, vocab, docs, k, device, on_document=progress,
                                        features=features)  # fmt: skip
    finally:
        torch.set_num_threads(threads_before)
    seconds = time.perf_counter() - started
    meta = {
        "corpus": corpus,
        "encoder": cfg["encoder"],
        "seed": cfg["seed"],
        "k": k,
        "checkpoint_sha256": sha256_of(path),
    }
    with storage.atomic_dir(kbest_dir(corpus)) as tmp:
        storage.write_table(tmp / f"{KBEST}.parquet", KBEST, table, meta)
    metrics = {
        "corpus": corpus,
        "encoder": cfg["encoder"],
        "seed": cfg["seed"],
        "k": k,
        "splits": splits,
        "documents": len(docs),
        "trees": table.num_rows,
        "trees_per_doc": table.num_rows / len(docs),
        "distinct_trees_per_doc": round(sum(distinct) / len(docs), 3),
        "docs_with_k_distinct": sum(n == k for n in distinct),
        "seconds": round(seconds, 3),
        "docs_per_s": round(len(docs) / seconds, 2) if seconds > 0 else None,
        "device": str(device),
    }
    storage.write_metrics(metrics_path(corpus), metrics)
    log.info(
        "%s: %d trees (%.1f distinct per document) in %.1fs",
        corpus, table.num_rows, metrics["distinct_trees_per_doc"], seconds,
    )  # fmt: skip
    return metrics


__all__ = [
    "KbestSettings",
    "Tree",
    "chains",
    "checkpoint_path",
    "export_corpus",
    "kbest_for_documents",
    "kbest_trees",
    "tree_rows",
    "trees_from_output",
]
