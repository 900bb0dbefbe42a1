"""Entity prediction (Ji et al. 2017 §5.3, Table 3; protocol of Modi et al. 2017, TACL 5).

At a mention slot, given the left context and the gold coreference of every earlier mention
(EntityNLM: "R_t is always given and EntityNLM only needs to predict E_t"), predict which
previously mentioned entity the mention refers to, or NEW. Accuracy over slots.

Slot rules, each with where it comes from (papers/000 = Ji et al. 2017):
1. Mentions and entities: the corpus's gold mentions (data/docs/<corpus>/mentions.parquet);
   an entity is a gold cluster (InScript: a coreference chain, or a participant label outside
   every chain as its own entity; tasks/corpora/inscript.py). "Each entity mention is labeled
   with its entity index" (papers/000 §4).
2. Nested mentions: the EntityNLM view's own rule, `tasks.graphs.views.resolve_nesting`, so
   the slots are the spans the model was trained on (``nested``; the view_entitynlm stage
   builds "enclosing", so another value here needs a view built with it).
   Default "enclosing": Ji et al.'s "only the enclosing entity mention is kept" (§4), the one
   nesting rule the paper states (for CoNLL; its InScript preprocessing is "similar"). The
   alternative "heads" keeps the innermost spans: InScript labels NP heads, and a
   compound/coordination label over a labelled head ("tire tool" over "tool") mostly lies
   outside every chain while the head is linked (train+dev: 3,101 of 3,209 enclosing labels),
   so "enclosing" turns a linked head into a singleton compound. Slots that either rule
   decides (the span encloses or lies inside another mention) are flagged ``nested`` and
   scored apart as well (`evaluate`).
3. Which mentions are slots (``targets``). Default ``script_event_arguments``: the targets
   of Modi et al. 2017's own referent-prediction release ("Modeling Semantic Expectations",
   ashutosh-modi.github.io/datasets: humanPredictions.json, 3,346 targets in the 182 test
   stories, whose always-new share is exactly Ji et al.'s 31.08 % and whose human majority
   vote is their 77.35 %). The release lists targets, not the rule that chose them; the rule
   read off it: a script-participant label (``target_kinds``: ``ScrPart_*``; NPart,
   No_label, ... are context) other than the time labels (``target_exclude``: no released
   target carries one), whose syntactic head (`span_head`) is not a possessive pronoun
   (PRP$: none released) and depends (the XML's <dep head>) on a token of a script-event
   label (``ScrEv_*``; their model predicts a referent from the event that governs it).
   Pronouns are targets (1,388 of the 3,346). On the 10 test stories the mirror carries, the
   rule with rules 5-6 selects 216 slots, among them all 211 released targets. ``participants``
   (the earlier reading): every ScrPart_* label. Corpora without label kinds or syntax
   (synthetic) have every mention as a target under either.
4. Context: every kept mention (any kind) before the slot makes its entity a candidate;
   candidates are listed in first-mention order.
5. ``skip_sentences`` (2): no released target lies in the first two sentences of its story,
   and 110 of the 182 test stories have one in the third, so "after the first three
   sentences" (papers/000 Fig. 3) counts the slot's sentence among the three: a slot's first
   token lies in sentence index >= 2 (0-based) of the document's own segmentation.
6. "a maximum of 30 entities" per story (papers/000 Fig. 3): the first 30 slots in text
   order (``max_slots``; the release has 2-33 targets per story, ten stories over 30).
7. Gold: the slot's entity if it was mentioned before the slot (rule 4), else NEW.

Rule 2 (for InScript) is this project's reading; rules 3 and 5 come from Modi et al.'s
release (its targets are single head tokens, so it has no nesting). Measured always-new
accuracy under these rules: see the stage metrics (metrics/entity_prediction/<corpus>.json).

A model plugs in as a ``Predictor``: ``predict(doc, slots) -> list[entity id | NEW]`` for the
slots of one document (the slots carry the gold left-context mentions). ``evaluate`` scores
predictions. Baselines: ``AlwaysNew`` and ``ShallowRanker`` (the "linear classification
model using shallow features from Modi et al. (2017), including the recency of an entity's
last mention and the frequency", papers/000 §5.3).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import pyarrow as pa
import torch

from tasks.core.errors import CorefreproError
from tasks.core.settings import ConfigError
from tasks.graphs.views import resolve_nesting

NEW = -1  # the "new entity" answer
# InScript's time labels: none of Modi et al.'s 3,346 released targets carries one (rule 3)
TIME_LABELS = ("ScrPart_time", "ScrPart_time/date", "ScrPart_time_date")
SCRIPT_EVENT = "ScrEv"  # InScript's script-event label prefix


@dataclass(frozen=True)
class Mention:
    start: int
    end: int  # exclusive
    entity: int
    target: bool = True  # may be a slot (rule 3)
    nested: bool = False  # the span encloses or lies inside another gold mention (rule 2)


@dataclass(frozen=True)
class Slot:
    """One prediction point: the mention [start, end) of `doc_id`, to be resolved from the left
    context. `history` holds the earlier mentions with their gold entities (R and E given);
    `candidates` their entities in first-mention order; `gold` an entity id or NEW."""

    doc_id: str
    start: int
    end: int
    sentence: int
    candidates: tuple[int, ...]
    gold: int
    history: tuple[tuple[int, int, int], ...] = field(repr=False, default=())  # (start, end, e)
    nested: bool = False  # a span the nesting rule chose between (rule 2)


class Predictor(Protocol):
    """What a model implements: one answer (an id from slot.candidates, or NEW) per slot."""

    name: str

    def predict(self, doc: Mapping[str, Any], slots: Sequence[Slot]) -> list[int]: ...


@dataclass
class ProtocolSettings:
    """params.yaml entity_prediction (the slot rules; module docstring)."""

    skip_sentences: int = 2  # rule 5: Modi et al.'s targets start in the third sentence
    max_slots: int | None = 30  # Ji et al. 2017 Fig. 3: "a maximum of 30 entities"
    target_kinds: list[str] = field(default_factory=lambda: ["ScrPart"])  # label prefixes
    nested: Literal["enclosing", "heads"] = "enclosing"  # views.resolve_nesting (rule 2)
    targets: Literal["script_event_arguments", "participants"] = "script_event_arguments"
    target_exclude: list[str] = field(default_factory=lambda: list(TIME_LABELS))  # rule 3

    def validate(self, path: str) -> None:
        bad = []
        if self.skip_sentences < 0:
            bad.append(f"{path}.skip_sentences: must be >= 0, got {self.skip_sentences}")
        if self.max_slots is not None and self.max_slots < 1:
            bad.append(f"{path}.max_slots: must be >= 1, got {self.max_slots}")
        if bad:
            raise ConfigError(bad)


# --------------------------------------------------------------------------------- slots


def _rows(table: pa.Table | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return table.to_pylist() if isinstance(table, pa.Table) else [dict(r) for r in table]


def doc_mentions(
    rows: Iterable[Mapping[str, Any]],
    kinds: Mapping[tuple[int, int], str] | None,
    settings: ProtocolSettings,
    syntax: Mapping[str, Sequence] | None = None,
) -> list[Mention]:
    """One document's mentions after rules 1-3, in text order. A span listed twice (a label in
    two chains) keeps its smaller cluster id (`resolve_nesting`). `syntax`: the document's
    per-token ``pos``/``dep_head``/``event`` (tasks/corpora/inscript.story_syntax) where the
    corpus has them; rule 3's default reads them."""
    triples = [(int(r["start"]), int(r["end"]), int(r["cluster"])) for r in rows]
    kept, _ = resolve_nesting(triples, settings.nested)
    bounds = sorted({(s, e) for s, e, _ in triples})
    out = []
    for start, end, cluster in kept:
        target = True
        if kinds is not None:
            kind = kinds.get((start, end))
            if kind is None:
                raise CorefreproError(f"mention {(start, end)} has no label kind")
            target = is_target(kind, (start, end), settings, syntax)
        out.append(Mention(start, end, cluster, target, _in_nesting((start, end), bounds)))
    return out


def is_target(
    kind: str, span: tuple[int, int], settings: ProtocolSettings,
    syntax: Mapping[str, Sequence] | None,
) -> bool:  # fmt: skip
    """Rule 3 for a labelled span."""
    if not kind.startswith(tuple(settings.target_kinds)):
        return False
    if settings.targets == "participants" or syntax is None:
        return True
    if kind in settings.target_exclude:
        return False
    head = span_head(span, syntax["dep_head"])
    if syntax["pos"][head] == "PRP$":
        return False
    governor = syntax["dep_head"][head]
    return governor >= 0 and (syntax["event"][governor] or "").startswith(SCRIPT_EVENT)


def span_head(span: tuple[int, int], dep_head: Sequence[int]) -> int:
    """The span's syntactic head: its last token whose dependency head lies outside the span
    (an English NP's head is its last such token), else its last token."""
    start, end = span
    for i in range(end - 1, start - 1, -1):
        if not start <= dep_head[i] < end:
            return i
    return end - 1


def _in_nesting(span: tuple[int, int], bounds: Sequence[tuple[int, int]]) -> bool:
    """Whether another of the distinct (start, end) bounds lies inside span or contains it:
    a span the nesting rule decides (the rules keep different spans there)."""
    s, e = span
    return any((t, u) != span and (s <= t and u <= e or t <= s and e <= u) for t, u in bounds)


def doc_slots(
    doc_id: str, sentence_starts: Sequence[int], mentions: Sequence[Mention], s: ProtocolSettings
) -> list[Slot]:
    """Rules 4-7 over one document's mentions (text order)."""
    order: dict[int, None] = {}  # entities in first-mention order
    history: list[tuple[int, int, int]] = []
    out: list[Slot] = []
    for m in mentions:
        sentence = bisect.bisect_right(sentence_starts, m.start) - 1
        if m.target and sentence >= s.skip_sentences:
            if s.max_slots is not None and len(out) >= s.max_slots:
                break
            gold = m.entity if m.entity in order else NEW
            out.append(
                Slot(doc_id, m.start, m.end, sentence, tuple(order), gold, tuple(history), m.nested)
            )
        order.setdefault(m.entity, None)
        history.append((m.start, m.end, m.entity))
    return out


def slots(
    documents: pa.Table | Iterable[Mapping[str, Any]],
    mentions: pa.Table | Iterable[Mapping[str, Any]],
    split: str | None,
    settings: ProtocolSettings | None = None,
    kinds: Mapping[str, Mapping[tuple[int, int], str]] | None = None,
) -> list[Slot]:
    """Every slot of the documents of `split` (None: all), documents in doc_id order.
    `kinds`: doc_id -> {(start, end): label kind} where the corpus has label kinds (InScript,
    tasks/corpora/inscript.mention_kinds); None makes every mention a target. A document's
    per-token annotation under "syntax" (tasks/corpora/inscript.story_syntax), where the
    corpus has one, serves rule 3."""
    settings = settings or ProtocolSettings()
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for r in _rows(mentions):
        by_doc.setdefault(r["doc_id"], []).append(r)
    out: list[Slot] = []
    for doc in sorted(_rows(documents), key=lambda d: d["doc_id"]):
        if split is not None and doc["split"] != split:
            continue
        doc_kinds = None if kinds is None else kinds.get(doc["doc_id"], {})
        ms = doc_mentions(by_doc.get(doc["doc_id"], []), doc_kinds, settings, doc.get("syntax"))
        out += doc_slots(doc["doc_id"], doc["sentence_starts"], ms, settings)
    return out


def evaluate(predictions: Sequence[int], slots: Sequence[Slot]) -> dict[str, Any]:
    """Accuracy of one answer per slot (ids compared exactly; NEW is -1), and the same
    figures on the slots the nesting rule chose (``nested``: rule 2) and on the others."""
    if len(predictions) != len(slots):
        raise CorefreproError(f"{len(predictions)} predictions for {len(slots)} slots")

    def score(pairs):
        n = len(pairs)
        correct = sum(int(p) == s.gold for p, s in pairs)
        return {"accuracy": correct / n if n else float("nan"), "n": n, "correct": correct,
                "n_new": sum(s.gold == NEW for _, s in pairs)}  # fmt: skip

    pairs = list(zip(predictions, slots, strict=True))
    return {**score(pairs), "nested": score([(p, s) for p, s in pairs if s.nested]),
            "not_nested": score([(p, s) for p, s in pairs if not s.nested])}  # fmt: skip


def predict_all(
    predictor: Predictor, documents: Iterable[Mapping[str, Any]], slot_list: Sequence[Slot]
) -> list[int]:
    """Run a predictor document by document over `slot_list` (in its order)."""
    by_doc: dict[str, list[int]] = {}
    for i, s in enumerate(slot_list):
        by_doc.setdefault(s.doc_id, []).append(i)
    docs = {d["doc_id"]: d for d in documents}
    out = [NEW] * len(slot_list)
    for doc_id, idx in by_doc.items():
        answers = predictor.predict(docs[doc_id], [slot_list[i] for i in idx])
        if len(answers) != len(idx):
            raise CorefreproError(f"{predictor.name}: {len(answers)} answers, {len(idx)} slots")
        for i, a in zip(idx, answers, strict=True):
            out[i] = int(a)
    return out


# ---------------------------------------------------------------------------- baselines


class AlwaysNew:
    """Ji et al. 2017 Table 3, line 1."""

    name = "always_new"

    def predict(self, doc: Mapping[str, Any], slots: Sequence[Slot]) -> list[int]:
        return [NEW] * len(slots)


N_CAND_FEATURES = 14
N_NEW_FEATURES = 5
SUBJECT_RELATIONS = ("nsubj", "nsubjpass", "csubj", "csubjpass", "xsubj", "agent")
OBJECT_RELATIONS = ("dobj", "iobj")
PRONOUN_TAGS = ("PRP", "PRP$", "WP", "WP$", "WDT")
PROPER_TAGS = ("NNP", "NNPS")


def grammatical_function(syntax: Mapping[str, Sequence] | None, span: tuple[int, int]) -> str:
    """subject | object | oblique (a collapsed prep_* relation) | other | "" (no syntax) of
    the span's head."""
    if syntax is None:
        return ""
    rel = syntax["dep_rel"][span_head(span, syntax["dep_head"])] or ""
    if rel in SUBJECT_RELATIONS:
        return "subject"
    if rel in OBJECT_RELATIONS:
        return "object"
    return "oblique" if rel.startswith(("prep", "pobj")) else "other"


def _re_type(syntax: Mapping[str, Sequence] | None, span: tuple[int, int]) -> str:
    """The referring expression's type from its head's tag: pronoun | name | noun | ""."""
    if syntax is None:
        return ""
    tag = syntax["pos"][span_head(span, syntax["dep_head"])] or ""
    return "pronoun" if tag in PRONOUN_TAGS else "name" if tag in PROPER_TAGS else "noun"


def candidate_features(doc: Mapping[str, Any], slot: Slot) -> np.ndarray:
    """Shallow features of each candidate (rows in slot.candidates order), Modi et al. 2017's
    "shallow linguistic" group as far as its names go (recency, frequency, grammatical
    function, previous subject, previous object, previous referring-expression type; the TACL
    text is not in the papers folder, so each is our reading of the name):
    recency of the last mention (log tokens, log sentences, recency rank), frequency (log
    count, share of the mentions so far), whether it was the story's first entity (an
    InScript story's protagonist), whether its last mention is in the slot's sentence; where
    the document has syntax (``doc["syntax"]``, InScript): its last mention was a subject /
    an object, it was mentioned as a subject / object in the sentence before the slot's, its
    last mention was a pronoun / a name, and its last mention's grammatical function is the
    slot's (parallelism). The slot's own words are never read: the model predicts the
    referent before the mention (R given, E predicted)."""
    starts = doc["sentence_starts"]
    syntax = doc.get("syntax")
    last: dict[int, tuple[int, int]] = {}
    count: dict[int, int] = {}
    previous = {"subject": set(), "object": set()}
    for start, end, e in slot.history:
        last[e] = (start, end)
        count[e] = count.get(e, 0) + 1
        if bisect.bisect_right(starts, start) - 1 == slot.sentence - 1:
            previous.get(grammatical_function(syntax, (start, end)), set()).add(e)
    ranked = sorted(slot.candidates, key=lambda e: -last[e][0])
    rank = {e: i for i, e in enumerate(ranked)}
    total = max(len(slot.history), 1)
    first = slot.candidates[0] if slot.candidates else None
    slot_function = grammatical_function(syntax, (slot.start, slot.end))
    rows = []
    for e in slot.candidates:
        dist = slot.start - last[e][0]
        sent_dist = slot.sentence - (bisect.bisect_right(starts, last[e][0]) - 1)
        function = grammatical_function(syntax, last[e])
        re_type = _re_type(syntax, last[e])
        rows.append(
            [
                math.log1p(dist),
                math.log1p(sent_dist),
                math.log1p(rank[e]),
                math.log1p(count[e]),
                count[e] / total,
                float(e == first),
                float(sent_dist == 0),
                float(function == "subject"),
                float(function == "object"),
                float(e in previous["subject"]),
                float(e in previous["object"]),
                float(re_type == "pronoun"),
                float(re_type == "name"),
                float(bool(function) and function == slot_function),
            ]
        )
    return np.asarray(rows, dtype=np.float32).reshape(len(slot.candidates), N_CAND_FEATURES)


def new_features(doc: Mapping[str, Any], slot: Slot) -> np.ndarray:
    """Features of the NEW option: a bias, log number of entities so far, log mentions so
    far, and the slot's grammatical function (subject / object; 0 without syntax)."""
    n_ent = len(slot.candidates)
    function = grammatical_function(doc.get("syntax"), (slot.start, slot.end))
    return np.asarray([1.0, math.log1p(n_ent), math.log1p(len(slot.history)),
                       float(function == "subject"), float(function == "object")],
                      np.float32)  # fmt: skip


@dataclass
class ShallowSettings:
    """params.yaml entity_prediction.shallow."""

    seed: int = 13
    steps: int = 300  # full-batch L-BFGS iterations (the objective is convex)
    l2: float = 1e-3


class ShallowRanker:
    """Log-linear ranker over {candidates, NEW}: score(e) = w . phi(e), score(NEW) = v . psi;
    softmax over the options, trained by maximum likelihood on training slots (convex, so
    the seed only fixes the start). Ji et al. 2017 Table 3, line 2 (features: see
    candidate_features)."""

    name = "shallow"

    def __init__(self, settings: ShallowSettings | None = None) -> None:
        self.settings = settings or ShallowSettings()
        self.w = torch.zeros(N_CAND_FEATURES)
        self.v = torch.zeros(N_NEW_FEATURES)
        self.mean = torch.zeros(N_CAND_FEATURES)
        self.std = torch.ones(N_CAND_FEATURES)

    def _batch(self, docs: Mapping[str, Mapping[str, Any]], slot_list: Sequence[Slot]):
        feats, news, seg, gold = [], [], [], []
        for i, s in enumerate(slot_list):
            f = candidate_features(docs[s.doc_id], s)
            feats.append(f)
            news.append(new_features(docs[s.doc_id], s))
            seg += [i] * len(f)
            gold.append(len(s.candidates) if s.gold == NEW else s.candidates.index(s.gold))
        cand = torch.from_numpy(
            np.concatenate(feats) if feats else np.zeros((0, N_CAND_FEATURES), np.float32)
        )
        return cand, torch.from_numpy(np.stack(news)), torch.tensor(seg), torch.tensor(gold)

    def _scores(self, cand, new, seg, n: int) -> list[torch.Tensor]:
        s_cand = ((cand - self.mean) / self.std) @ self.w
        s_new = new @ self.v
        counts = torch.bincount(seg, minlength=n).tolist()
        parts = torch.split(s_cand, counts)
        return [torch.cat([p, s_new[i : i + 1]]) for i, p in enumerate(parts)]

    def fit(
        self, documents: Iterable[Mapping[str, Any]], slot_list: Sequence[Slot]
    ) -> ShallowRanker:
        docs = {d["doc_id"]: d for d in documents}
        cand, new, seg, gold = self._batch(docs, slot_list)
        torch.manual_seed(self.settings.seed)
        self.mean = cand.mean(0)
        self.std = cand.std(0).clamp_min(1e-6)
        self.w = (0.01 * torch.randn(N_CAND_FEATURES)).requires_grad_()
        self.v = (0.01 * torch.randn(N_NEW_FEATURES)).requires_grad_()
        n = len(slot_list)
        # pad to a dense [n, max options] matrix: one log-softmax per slot
        width = int(torch.bincount(seg, minlength=n).max()) + 1 if len(seg) else 1
        pos = (
            torch.arange(len(seg))
            - torch.cumsum(torch.nn.functional.pad(torch.bincount(seg, minlength=n), (1, 0)), 0)[
                seg
            ]
        )
        counts = torch.bincount(seg, minlength=n)
        opt = torch.optim.LBFGS([self.w, self.v], max_iter=self.settings.steps,
                                line_search_fn="strong_wolfe")  # fmt: skip

        def closure() -> torch.Tensor:
            opt.zero_grad()
            scores = torch.full((n, width), -math.inf)
            scores = scores.index_put((seg, pos), ((cand - self.mean) / self.std) @ self.w)
            scores = scores.index_put((torch.arange(n), counts), new @ self.v)
            nll = torch.nn.functional.cross_entropy(scores, gold)
            loss = nll + self.settings.l2 * (self.w.square().sum() + self.v.square().sum())
            loss.backward()
            return loss

        opt.step(closure)
        self.w, self.v = self.w.detach(), self.v.detach()
        return self

    def predict(self, doc: Mapping[str, Any], slots: Sequence[Slot]) -> list[int]:
        if not slots:
            return []
        cand, new, seg, _ = self._batch({doc["doc_id"]: doc}, slots)
        out = []
        for s, scores in zip(slots, self._scores(cand, new, seg, len(slots)), strict=True):
            best = int(torch.argmax(scores))
            out.append(NEW if best == len(s.candidates) else s.candidates[best])
        return out

    def weights(self) -> dict[str, list[float]]:
        return {"candidate": self.w.tolist(), "new": self.v.tolist()}


__all__ = [
    "NEW",
    "AlwaysNew",
    "Mention",
    "Predictor",
    "ProtocolSettings",
    "ShallowRanker",
    "ShallowSettings",
    "Slot",
    "candidate_features",
    "doc_mentions",
    "doc_slots",
    "evaluate",
    "grammatical_function",
    "is_target",
    "new_features",
    "predict_all",
    "slots",
    "span_head",
]
