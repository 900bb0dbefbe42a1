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

Released targets (``released_slots``): where Modi et al.'s release is at hand
(humanPredictions.json, tasks/corpora/inscript.released_targets) the TEST slots are its
targets, keyed as the release keys them (``sentence_token``, 1-based, the XML's token id
"S-T"): each target token's slot is the kept mention (rule 2) that contains it; rules 3, 5
and 6 are the release's own then (rules 4 and 7 as above). The release covers test stories
only, so dev and train keep the rule. On the mirror's 10 sample stories the rule picks 216
slots for the release's 211 targets: it misses none and adds 5 (4 in bus_008's last
sentence, 1 in flight_015 past the release's last target there).

A model plugs in as a ``Predictor``: ``predict(doc, slots) -> list[entity id | NEW]`` for the
slots of one document (the slots carry the gold left-context mentions). ``evaluate`` scores
predictions. Baselines: ``AlwaysNew``; ``ShallowRanker``, Table 3 line 2 as papers/000 §5.3
states it ("a linear classification model using shallow features from Modi et al. (2017),
including the recency of an entity's last mention and the frequency": ``features:
recency_frequency``, the default ``shallow``), and the same ranker over Modi et al.'s whole
"shallow linguistic" group (``features: rich``, a named extra row such as ``shallow-rich``);
``HumanMajority``, Table 3 line 5 (the release's 20 human guesses per target, majority vote,
adapted as Ji et al. adapt it: a guess of a referent not mentioned before is "new").
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import pyarrow as pa
import torch

from tasks.core.errors import CorefreproError
from tasks.core.settings import ConfigError
from tasks.graphs.views import resolve_nesting

# The stage's "no EntityNLM row" (entity_prediction.entitynlm.checkpoint) under DVC: its dep is
# the checkpoint (dvc.yaml `${entity_prediction.entitynlm.checkpoint}`, so `dvc repro` trains it
# first and reruns when it changes) and DVC cannot parse a null dep, so "none" is this tracked
# file, which never changes; null means the same to a direct run
NO_CHECKPOINT = "models/entitynlm/no_checkpoint.txt"

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
    entity: int | None = None  # the mention's own cluster (gold when mentioned before)
    target: ReleasedTarget | None = field(repr=False, default=None)  # the release's, if any


@dataclass(frozen=True)
class ReleasedTarget:
    """One target of Modi et al. 2017's release: its key ``sentence_token`` (1-based, the
    XML's token id "S-T"), the true discourse-referent label and the 20 human guesses."""

    key: str
    label: str
    predictions: tuple[str, ...]

    def position(self) -> tuple[int, int]:
        """(sentence, token), both 0-based."""
        match = KEY_PATTERN.fullmatch(self.key)
        if match is None:
            raise CorefreproError(f"released target key {self.key!r} is not sentence_token")
        return int(match[1]) - 1, int(match[2]) - 1


KEY_PATTERN = re.compile(r"([1-9][0-9]*)_([1-9][0-9]*)")


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
    doc_id: str,
    sentence_starts: Sequence[int],
    mentions: Sequence[Mention],
    s: ProtocolSettings,
    released: Mapping[tuple[int, int], ReleasedTarget] | None = None,
) -> list[Slot]:
    """Rules 4-7 over one document's mentions (text order). `released`: the release's
    targets by the span of their mention (`released_slots`): those spans are the slots then,
    in place of rules 3, 5 and 6."""
    order: dict[int, None] = {}  # entities in first-mention order
    history: list[tuple[int, int, int]] = []
    out: list[Slot] = []
    for m in mentions:
        sentence = bisect.bisect_right(sentence_starts, m.start) - 1
        target = None if released is None else released.get((m.start, m.end))
        if target is not None or released is None and m.target and sentence >= s.skip_sentences:
            if released is None and s.max_slots is not None and len(out) >= s.max_slots:
                break
            gold = m.entity if m.entity in order else NEW
            out.append(Slot(doc_id, m.start, m.end, sentence, tuple(order), gold, tuple(history),
                            m.nested, m.entity, target))  # fmt: skip
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


def released_slots(
    documents: pa.Table | Iterable[Mapping[str, Any]],
    mentions: pa.Table | Iterable[Mapping[str, Any]],
    released: Mapping[str, Mapping[str, tuple[str, Sequence[str]]]],
    settings: ProtocolSettings | None = None,
    source: str = "the release",
) -> tuple[list[Slot], list[tuple[str, str]]]:
    """The slots of the documents `released` names (doc_id -> {``sentence_token``: (true
    label, human guesses)}), documents in doc_id order: each target token's slot is the kept
    mention (rule 2) containing it (the innermost where several do). Returns (slots,
    unmatched: (doc_id, key) of targets no kept mention contains). A key outside its
    document, or a document the table lacks, is an error naming `source`."""
    settings = settings or ProtocolSettings()
    by_doc: dict[str, list[dict[str, Any]]] = {}
    for r in _rows(mentions):
        by_doc.setdefault(r["doc_id"], []).append(r)
    docs = {d["doc_id"]: d for d in _rows(documents)}
    out: list[Slot] = []
    unmatched: list[tuple[str, str]] = []
    for doc_id in sorted(released):
        doc = docs.get(doc_id)
        if doc is None:
            raise CorefreproError(f"{source}: story {doc_id} is not among the documents")
        starts, n_tokens = doc["sentence_starts"], len(doc["tokens"])
        kept = doc_mentions(by_doc.get(doc_id, []), None, settings)
        at: dict[tuple[int, int], ReleasedTarget] = {}
        for key, (label, guesses) in released[doc_id].items():
            target = ReleasedTarget(key, label, tuple(guesses))
            try:
                sentence, token = target.position()
            except CorefreproError as exc:
                raise CorefreproError(f"{source}: {doc_id}: {exc}") from None
            end = starts[sentence + 1] if sentence + 1 < len(starts) else n_tokens
            index = starts[sentence] + token if sentence < len(starts) else n_tokens
            if index >= end:
                raise CorefreproError(f"{source}: {doc_id} target {key}: no such token "
                                      f"({len(starts)} sentences)")  # fmt: skip
            spans = [(m.end - m.start, (m.start, m.end)) for m in kept
                     if m.start <= index < m.end]  # fmt: skip
            if not spans:
                unmatched.append((doc_id, key))
                continue
            span = min(spans)[1]
            if span in at:
                raise CorefreproError(f"{source}: {doc_id} targets {at[span].key} and {key} "
                                      f"fall in one mention {span}")  # fmt: skip
            at[span] = target
        out += doc_slots(doc_id, starts, kept, settings, at)
    return out, unmatched


def compare_slot_sets(
    rule: Sequence[Slot], released: Sequence[Slot], unmatched: Sequence[tuple[str, str]] = ()
) -> dict[str, Any]:
    """How the rule's slots (rules 3, 5, 6) of the released documents relate to the release's:
    counts, the released targets the rule misses and the rule's slots the release lacks, each
    as (doc_id, start, end)."""  # fmt: skip
    docs = {s.doc_id for s in released} | {d for d, _ in unmatched}
    rule_spans = {(s.doc_id, s.start, s.end) for s in rule if s.doc_id in docs}
    released_spans = {(s.doc_id, s.start, s.end) for s in released}
    missed = sorted(released_spans - rule_spans)
    extra = sorted(rule_spans - released_spans)
    return {"documents": len(docs), "released": len(released) + len(unmatched),
            "unmatched": len(unmatched), "rule": len(rule_spans), "rule_misses": len(missed),
            "rule_extra": len(extra), "missed": [list(m) for m in missed],
            "extra": [list(e) for e in extra]}  # fmt: skip


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


FeatureSet = Literal["recency_frequency", "rich"]
# candidate and NEW-option feature counts per feature set (candidate_features, new_features)
N_FEATURES: dict[str, tuple[int, int]] = {"recency_frequency": (10, 1), "rich": (14, 5)}
N_CAND_FEATURES, N_NEW_FEATURES = N_FEATURES["rich"]
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


RECENCY_BINS = (0, 1, 2, 4)  # sentences since the last mention: 0 | 1 | 2 | 3-4 | 5+
FREQUENCY_BINS = (1, 2, 4, 8)  # mentions so far: 1 | 2 | 3-4 | 5-8 | 9+


def one_hot_bin(value: int, upper: Sequence[int]) -> list[float]:
    """One-hot of the bin holding `value`: (-inf, upper[0]], (upper[0], upper[1]], ..., and
    (upper[-1], inf)."""
    index = bisect.bisect_left(upper, value)
    return [float(i == index) for i in range(len(upper) + 1)]


def recency_frequency_features(doc: Mapping[str, Any], slot: Slot) -> np.ndarray:
    """Ji et al.'s two features (papers/000 §5.3) of each candidate (rows in slot.candidates
    order), one-hot over bins so that a linear score can follow them: the recency of its last
    mention, sentences from that mention's sentence to the slot's (`RECENCY_BINS`), and its
    frequency, its mentions so far (`FREQUENCY_BINS`). Modi et al.'s own definitions (TACL 5)
    are not in the papers folder; these are the plain readings of the two names. Measured on
    InScript dev (heads, 1,708 slots): 42.92 %; the same two as logged numbers (log tokens
    since the last mention, log mentions) 28.81 %, below always-new (33.20 %): a linear score
    in them cannot say "the protagonist or the entity just mentioned"."""
    starts = doc["sentence_starts"]
    last: dict[int, int] = {}
    count: dict[int, int] = {}
    for start, _, e in slot.history:
        last[e] = start
        count[e] = count.get(e, 0) + 1
    rows = []
    for e in slot.candidates:
        since = slot.sentence - (bisect.bisect_right(starts, last[e]) - 1)
        rows.append(one_hot_bin(since, RECENCY_BINS) + one_hot_bin(count[e], FREQUENCY_BINS))
    width = len(RECENCY_BINS) + len(FREQUENCY_BINS) + 2
    return np.asarray(rows, dtype=np.float32).reshape(len(slot.candidates), width)


def candidate_features(
    doc: Mapping[str, Any], slot: Slot, features: FeatureSet = "rich"
) -> np.ndarray:
    """The candidates' features of one feature set: ``recency_frequency``
    (`recency_frequency_features`, Ji et al.'s baseline) or ``rich`` (below).

    ``rich``: Modi et al. 2017's
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
    if features == "recency_frequency":
        return recency_frequency_features(doc, slot)
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


def new_features(doc: Mapping[str, Any], slot: Slot, features: FeatureSet = "rich") -> np.ndarray:
    """Features of the NEW option: ``recency_frequency``: a bias only (a linear classifier's
    threshold for "no candidate is recent or frequent enough"); ``rich``: a bias, log number
    of entities so far, log mentions so far, and the slot's grammatical function (subject /
    object; 0 without syntax)."""
    if features == "recency_frequency":
        return np.ones(1, np.float32)
    n_ent = len(slot.candidates)
    function = grammatical_function(doc.get("syntax"), (slot.start, slot.end))
    return np.asarray([1.0, math.log1p(n_ent), math.log1p(len(slot.history)),
                       float(function == "subject"), float(function == "object")],
                      np.float32)  # fmt: skip


RESERVED_NAMES = ("always_new", "shallow", "entitynlm", "human")  # predictor names taken
ROW_NAME = re.compile(r"[a-z][a-z0-9_-]*")


@dataclass
class ShallowSettings:
    """params.yaml entity_prediction.shallow: the ranker of Table 3 line 2 (``shallow``) and
    the extra rows of the same ranker over other feature sets (``extra_rows``: predictor
    name -> feature set; e.g. {shallow-rich: rich})."""

    seed: int = 13
    steps: int = 300  # full-batch L-BFGS iterations (the objective is convex)
    l2: float = 1e-3
    features: FeatureSet = "recency_frequency"  # Ji et al. §5.3: recency and frequency
    extra_rows: dict[str, FeatureSet] = field(default_factory=lambda: {"shallow-rich": "rich"})

    def validate(self, path: str) -> None:
        bad = [f"{path}.extra_rows.{name}: a row name is lower-case letters, digits, - and _ "
               f"and not one of {RESERVED_NAMES}" for name in self.extra_rows
               if name in RESERVED_NAMES or not ROW_NAME.fullmatch(name)]  # fmt: skip
        if bad:
            raise ConfigError(bad)


class ShallowRanker:
    """Log-linear ranker over {candidates, NEW}: score(e) = w . phi(e), score(NEW) = v . psi;
    softmax over the options, trained by maximum likelihood on training slots (convex, so
    the seed only fixes the start): a linear classifier over the options. Ji et al. 2017
    Table 3, line 2 with ``features`` recency_frequency (the default; candidate_features);
    ``name`` is the predictor's row (``shallow``, or an extra row's name)."""

    def __init__(self, settings: ShallowSettings | None = None,
                 features: FeatureSet | None = None, name: str = "shallow") -> None:  # fmt: skip
        self.settings = settings or ShallowSettings()
        self.features: FeatureSet = features or self.settings.features
        if self.features not in N_FEATURES:
            raise ConfigError(f"shallow features {self.features!r}: one of {sorted(N_FEATURES)}")
        self.name = name
        n_cand, n_new = N_FEATURES[self.features]
        self.w = torch.zeros(n_cand)
        self.v = torch.zeros(n_new)
        self.mean = torch.zeros(n_cand)
        self.std = torch.ones(n_cand)

    def _batch(self, docs: Mapping[str, Mapping[str, Any]], slot_list: Sequence[Slot]):
        feats, news, seg, gold = [], [], [], []
        for i, s in enumerate(slot_list):
            f = candidate_features(docs[s.doc_id], s, self.features)
            feats.append(f)
            news.append(new_features(docs[s.doc_id], s, self.features))
            seg += [i] * len(f)
            gold.append(len(s.candidates) if s.gold == NEW else s.candidates.index(s.gold))
        n_cand = N_FEATURES[self.features][0]
        cand = torch.from_numpy(
            np.concatenate(feats) if feats else np.zeros((0, n_cand), np.float32)
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
        n_cand, n_new = N_FEATURES[self.features]
        self.w = (0.01 * torch.randn(n_cand)).requires_grad_()
        self.v = (0.01 * torch.randn(n_new)).requires_grad_()
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

    def weights(self) -> dict[str, Any]:
        return {"features": self.features, "candidate": self.w.tolist(), "new": self.v.tolist()}


class HumanMajority:
    """Ji et al. 2017 Table 3, line 5: "For each entity slot, Modi et al. (2017) acquired 20
    human predictions, and the majority vote was selected" (papers/000 §5.3), adapted as
    their line 3 is: a guess of a referent not mentioned before the slot is "new entity".
    Reads the release's guesses on the slot (``slot.target``; `released_slots`), so it covers
    released slots only (`covers`).

    The vote: the most frequent of the 20 labels; a tie goes to the tied label listed first.
    Its answer: the slot's gold when the vote is the true label (the right referent, old or
    new); else the entity the voted label names if that entity was mentioned before the slot
    (a wrong old entity), else NEW. The release's labels name Modi et al.'s referents
    ("P1_drain"); a label is tied to our entities through the targets of the same story (each
    target's true label and the mention's cluster: one label may cover several of our
    clusters, never the reverse on the sample). A voted label that no target of its story
    carries is taken as new (`unmapped` counts those votes on slots whose gold is NEW, where
    that reading decides the score)."""

    name = "human"

    def __init__(self) -> None:
        self.ties = 0
        self.unmapped = 0

    @staticmethod
    def covers(slot_list: Sequence[Slot]) -> bool:
        return bool(slot_list) and all(s.target is not None for s in slot_list)

    @staticmethod
    def vote(guesses: Sequence[str]) -> tuple[str, bool]:
        """(the majority label, whether it was a tie)."""
        ranked = Counter(guesses).most_common()  # ties in first-listed order
        if not ranked:
            raise CorefreproError("a released target without human predictions")
        return ranked[0][0], len(ranked) > 1 and ranked[1][1] == ranked[0][1]

    def predict(self, doc: Mapping[str, Any], slots: Sequence[Slot]) -> list[int]:
        if not self.covers(slots):
            raise CorefreproError(f"{self.name}: {doc['doc_id']} has slots without the release's "
                                  "human predictions")  # fmt: skip
        entities: dict[str, list[int]] = {}
        for s in slots:
            entities.setdefault(s.target.label, [])
            if s.entity is not None and s.entity not in entities[s.target.label]:
                entities[s.target.label].append(s.entity)
        out = []
        for s in slots:
            label, tie = self.vote(s.target.predictions)
            self.ties += tie
            if label == s.target.label:
                out.append(s.gold)
                continue
            if label not in entities and s.gold == NEW:
                self.unmapped += 1
            last = {e: i for i, (_, _, e) in enumerate(s.history)}
            mentioned = [e for e in entities.get(label, ()) if e in last]
            out.append(max(mentioned, key=last.__getitem__) if mentioned else NEW)
        return out


__all__ = [
    "NEW",
    "AlwaysNew",
    "HumanMajority",
    "Mention",
    "Predictor",
    "ProtocolSettings",
    "ReleasedTarget",
    "ShallowRanker",
    "ShallowSettings",
    "Slot",
    "candidate_features",
    "compare_slot_sets",
    "doc_mentions",
    "doc_slots",
    "evaluate",
    "grammatical_function",
    "is_target",
    "new_features",
    "one_hot_bin",
    "predict_all",
    "recency_frequency_features",
    "released_slots",
    "slots",
    "span_head",
]
