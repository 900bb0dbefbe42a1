"""A trained EntityNLM applied to other tasks' documents (Ji et al. 2017 §5.2, §5.3).

- `EntityNLMScorer`: log P(X, R, E, L) (Eq. 9) of each k-best antecedent tree of a document,
  the generative score of coreference reranking (Eq. 12, models/entitynlm/rerank.py). The
  candidates of one document share its words, so the LSTM states are computed once and shared
  (`contexts`) by the batch of candidates.
- `EntityNLMPredictor`: entity prediction (Table 3, the protocol of
  tasks/evaluation/entity_prediction.py): R and the gold E of the left context given, the
  answer at each slot is the argmax of P(E_t | ...) over the earlier entities and "new".

Both take documents as the pipeline stores them (DOCUMENTS rows, their own tokenisation): the
candidate/gold spans become an ENTITYNLM_VIEW row (tasks/graphs/views.entitynlm_row), which is
preprocessed as the training data were (§4: punctuation outside mentions dropped, lowercase,
numbers, words outside the checkpoint's vocabulary -> `unk`). Positions are mapped through
`kept_positions`, the preprocessing's own index map.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from models.entitynlm import train
from models.entitynlm.data import Document, Vocab, collate, kept_positions, preprocess
from tasks.graphs.views import entitynlm_row

NEW = -1  # the protocol's "new entity" (tasks/evaluation/entity_prediction.NEW)


def load_entitynlm(checkpoint: str | Path):
    """(EntityNLMPair in eval mode, its vocabulary) from a train_entitynlm@entitynlm best.pt."""
    return train.load_trained(checkpoint, "entitynlm")


def as_document(doc: Mapping[str, Any], spans: Sequence[tuple[int, int, int]], l_max: int):
    """(preprocessed Document, kept positions) of a DOCUMENTS row annotated with (start, end
    exclusive, cluster) spans; no singleton dropping (a candidate's or a left context's
    entities are what they are)."""
    row = {**entitynlm_row(doc, spans, l_max=l_max), "split": doc.get("split", "")}
    return preprocess(row, drop_singletons=False), kept_positions(row)


class EntityNLMScorer:
    """Reranking scorer: log P(X, R, E, L) per candidate clustering (Eq. 9, 12)."""

    def __init__(self, pair, vocab: Vocab, *, batch: int = 32):
        self.lm, self.vocab, self.batch = pair.lm, vocab, max(1, int(batch))
        self.l_max = self.lm.config.l_max
        self.unscored: list[str] = []  # documents with no words to score (all scored 0)

    def document(self, doc: Mapping[str, Any], clusters) -> Document:
        spans = [(s, e, c) for c, chain in enumerate(clusters) for s, e in chain]
        return as_document(doc, spans, self.l_max)[0]

    @torch.no_grad()
    def score_many(self, doc: Mapping[str, Any], clusterings: Sequence) -> list[float]:
        """Candidates with the same preprocessed words share one `contexts` pass (§4 keeps
        punctuation inside mentions, so a tree with a mention over punctuation has a few more
        words: it forms its own group, scored on its own words as in training)."""
        if not self.document(doc, []).tokens:  # e.g. GUM's reddit texts, masked as "___"
            self.unscored.append(str(doc["doc_id"]))
            return [0.0] * len(clusterings)  # a tie: every reranker keeps the 1-best
        docs = [self.document(doc, c) for c in clusterings]
        groups: dict[tuple, list[int]] = {}
        for i, d in enumerate(docs):
            groups.setdefault((tuple(d.tokens), tuple(d.sentence_starts)), []).append(i)
        out = [0.0] * len(docs)
        for members in groups.values():
            first = collate([docs[members[0]]], self.vocab)
            pred, upd = self.lm.contexts(first.tokens, first.mask, first.sent_start)  # shared
            for j in range(0, len(members), self.batch):
                chunk = members[j : j + self.batch]
                batch = collate([docs[i] for i in chunk], self.vocab)
                n = len(chunk)
                shared = (pred.expand(n, *pred.shape[1:]).contiguous(),
                          upd.expand(n, *upd.shape[1:]).contiguous())  # fmt: skip
                for i, v in zip(chunk, self.lm.log_joint(batch, contexts=shared).tolist(),
                                strict=True):  # fmt: skip
                    out[i] = v
        return out

    def __call__(self, doc: Mapping[str, Any], clusters) -> float:
        return self.score_many(doc, [clusters])[0]


class EntityNLMPredictor:
    """Table 3 "EntityNLM": argmax over the earlier entities and new of P(E_t | R_t = 1, left
    context with gold R, E, L) at each slot (`EntityNLM.entity_predictions`)."""

    name = "entitynlm"

    def __init__(self, pair, vocab: Vocab):
        self.lm, self.vocab = pair.lm, vocab
        self.unscored = 0  # slots whose mention the view could not keep (crossing/nested)

    @staticmethod
    def annotation(slots) -> list[tuple[int, int, int]]:
        """The gold spans up to the last slot: its history and the slot itself (a NEW slot
        gets a fresh cluster id; its own E is never part of its own left context)."""
        last = max(slots, key=lambda s: s.start)
        fresh = max([e for _, _, e in last.history], default=-1) + 1
        return [*last.history, (last.start, last.end, fresh if last.gold == NEW else last.gold)]

    @torch.no_grad()
    def predict(self, doc: Mapping[str, Any], slots) -> list[int]:
        if not slots:
            return []
        spans = self.annotation(slots)
        document, kept = as_document(doc, spans, self.lm.config.l_max)
        position = {orig: p for p, orig in enumerate(kept)}
        cluster_at = {s: c for s, _, c in spans}
        cluster_of = {}  # the model's entity index -> the protocol's entity id
        for p, e in enumerate(document.entity):
            if e >= 0 and e not in cluster_of and kept[p] in cluster_at:
                cluster_of[e] = cluster_at[kept[p]]
        dists = dict(self.lm.entity_predictions(collate([document], self.vocab))[0])
        answers = []
        for s in slots:
            lp = dists.get(position.get(s.start, -1))
            if lp is None:
                self.unscored += 1
                answers.append(NEW)
                continue
            k = int(torch.argmax(lp))
            answers.append(NEW if k == lp.numel() - 1 else int(cluster_of[k]))
        return answers


def entity_predictors(checkpoint: str | None) -> list[EntityNLMPredictor]:
    """The stage's EntityNLM predictor from params' checkpoint path ([] for null)."""
    if not checkpoint:
        return []
    from tasks.core.config import resolve_path

    return [EntityNLMPredictor(*load_entitynlm(resolve_path(checkpoint)))]


__all__ = ["EntityNLMPredictor", "EntityNLMScorer", "as_document", "entity_predictors",
           "load_entitynlm"]  # fmt: skip
