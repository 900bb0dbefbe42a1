"""`entity-id`: entity chains read off the surface, the links MAGE uses where no tool is needed.

MAGE (Dhingra et al. 2017, §4): on bAbI "we connect consecutive mentions of the same entity
with coreference links, which are easily extracted due to the synthetic nature of the
language"; on CNN the articles are anonymised (@entity24) and mentions of one placeholder are
linked "without the use of any external tools". Chains here are exactly that: mentions with
the same entity key form one cluster (the graph stage connects consecutive ones). Pronouns are
never resolved -- that is what the synthetic corpus's "_coref" questions test.

Modes (setting `mentions`):

text (default; bAbI, the synthetic corpus): a rule over closed-class English words, no
    per-task word list. Each kind of entity the bAbI generators write (people, objects,
    places, shapes, animals, groups) has a surface signature:
    - names: capitalised words that are not function words (FUNCTION_WORDS: determiners,
      pronouns, prepositions, conjunctions, auxiliaries, wh-words, sentence adverbs such as
      "Then", "Afterwards", "Yesterday"); consecutive ones form one name. bAbI names are
      sentence-initial, so capitalisation alone cannot tell "Mary" from "Then"; the list can.
      (qa15's generic plurals "Cats", "Sheep" count as names: kinds are its entities.)
    - noun phrases: "the"/"a"/"an" + the following open-class words. A run of several open
      words ("the pink rectangle", qa17; "The chocolate fits", qa18) ends at its last word
      that the document or its questions also end a noun phrase with, right before
      punctuation or an auxiliary ("... the pink rectangle .", "The blue square is") -- a
      noun -- else after its first word. "the box of chocolates" (qa18) takes its "of"
      complement; "the left of the square" (qa17) is relational and not an entity (its
      complement "the square" is). The span includes the determiner, as in the gold of the
      synthetic corpus, GUM and OntoNotes; the key does not ("the apple" = "an apple").
    - placeholders: tokens matching `placeholder` (CNN's @entityN).
    - coordinations: "Mary and John" (two names joined by "and") is a group entity (bAbI
      qa12/qa13, the synthetic corpus), keyed by the sorted names.
    The key is the lower-cased words; one key = one cluster.
placeholders (CNN): only placeholder tokens are mentions, keyed by the placeholder.
gold: the corpus's own mention spans clustered by identical lower-cased string -- the
    "exact string match" baseline, so the rule's idea can be scored on GUM, LitBank,
    InScript, handmade and synthetic. Pronoun mentions (PRONOUNS) stay singletons by default
    (`pronouns: singleton`; `string` clusters them by string too, `drop` removes them).

Queries: the generic linker (base.link_queries: query spans matching a context mention's
string, case-insensitively -- bAbI re-cases names in questions), then, in text and placeholder
modes, the same rules on the query for what is left (a CNN query's @entity that the article
never names gets a query-only cluster).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any, NamedTuple

from tasks.annotation.annotators.base import (
    Annotation,
    Annotator,
    Doc,
    Span,
    check_settings,
    link_queries,
)
from tasks.core.errors import CorefreproError

NAME = "entity-id"
SETTINGS: dict[str, Any] = {
    "mentions": "text",  # text | placeholders | gold
    "placeholder": r"@entity\d+",  # CNN (Hermann et al. 2015) anonymised entities
    "pronouns": "singleton",  # gold mode: singleton | string | drop
}
MODES = ("text", "placeholders", "gold")
PRONOUN_POLICIES = ("singleton", "string", "drop")

DETERMINERS = frozenset({"the", "a", "an"})


# Closed-class English words: what a capitalised sentence-initial word must not be to be a
# name, and where a noun phrase ends. General English, not a list of bAbI entities.
def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


PRONOUNS = _wordset(
    """i me my mine myself you your yours yourself yourselves he him his himself she her hers
    herself it its itself we us our ours ourselves they them their theirs themselves one
    oneself this that these those who whom whose which what"""
)
FUNCTION_WORDS = PRONOUNS | _wordset(
    """the a an some any no every each all both either neither another other such
    whoever whatever someone somebody something anyone anybody anything everyone everybody
    everything nobody nothing none
    about above across after against along among around at before behind below beneath
    beside besides between beyond but by despite down during except for from in inside into
    like near of off on onto out outside over past since than through throughout till to
    toward towards under underneath until up upon with within without
    and or nor so yet if because although though while whereas unless whether as
    am is are was were be been being have has had having do does did doing will would shall
    should can could may might must not n't 's 're 've 'd 'll 'm
    where when why how there here then now afterwards afterward later finally next also too
    very just only still again already ago yesterday today tomorrow tonight following back
    away longer yes"""
)

AUXILIARIES = _wordset(
    """am is are was were be been being has have had will would shall should can could may
    might must do does did"""
)

_WORD = re.compile(r"[^\W\d_][\w'-]*")


class Found(NamedTuple):
    start: int
    end: int
    key: tuple[str, ...]


def _is_word(token: str) -> bool:
    return _WORD.fullmatch(token) is not None


def _is_open(token: str) -> bool:
    return _is_word(token) and token.lower() not in FUNCTION_WORDS


def _is_name(token: str) -> bool:
    return _is_open(token) and token[0].isupper()


def _sentence_bounds(n: int, sentence_starts: Sequence[int]) -> list[tuple[int, int]]:
    bounds = [s for s in sentence_starts if 0 <= s < n] or [0]
    ends = [*bounds[1:], n]
    return [(a, b) for a, b in zip(bounds, ends, strict=True) if b > a]


def _open_run(tokens: Sequence[str], i: int, stop: int) -> int:
    """End of the run of open-class words starting at i (i itself when there is none)."""
    while i < stop and _is_open(tokens[i]):
        i += 1
    return i


def nominal_words(
    tokens: Sequence[str], sentence_starts: Sequence[int], nouns: set[str] | None = None
) -> set[str]:
    """Words used as the last open word after a determiner (or "of") right before punctuation,
    the sentence end or an auxiliary: nouns by their distribution ("the pink rectangle ." and
    "The blue square is" -> rectangle, square; "The chocolate fits inside" tells nothing)."""
    nouns = set() if nouns is None else nouns
    for a, b in _sentence_bounds(len(tokens), sentence_starts):
        for i in range(a, b):
            if tokens[i].lower() in DETERMINERS or tokens[i].lower() == "of":
                end = _open_run(tokens, i + 1, b)
                if end > i + 1 and (
                    end == b or not _is_word(tokens[end]) or tokens[end].lower() in AUXILIARIES
                ):
                    nouns.add(tokens[end - 1].lower())
    return nouns


def _head_end(tokens: Sequence[str], start: int, run_end: int, nouns: Collection[str]) -> int:
    """End of a noun phrase whose open words are tokens[start:run_end] (see module doc)."""
    for j in range(run_end - 1, start, -1):
        if tokens[j].lower() in nouns:
            return j + 1
    return start + 1


def detect_mentions(
    tokens: Sequence[str],
    sentence_starts: Sequence[int],
    *,
    placeholder: re.Pattern[str] | None,
    text_rules: bool = True,
    nouns: Collection[str] | None = None,
) -> list[Found]:
    """Mentions found by the text rules (module doc), sorted by (start, end)."""
    if nouns is None:
        nouns = nominal_words(tokens, sentence_starts) if text_rules else set()
    found: list[Found] = []
    for a, b in _sentence_bounds(len(tokens), sentence_starts):
        names: list[Found] = []
        i = a
        while i < b:
            token = tokens[i]
            if placeholder is not None and placeholder.fullmatch(token):
                found.append(Found(i, i + 1, (token.lower(),)))
                i += 1
                continue
            if not text_rules:
                i += 1
                continue
            if token.lower() in DETERMINERS:
                run_end = _open_run(tokens, i + 1, b)
                if run_end == i + 1:
                    i += 1
                    continue
                end = _head_end(tokens, i + 1, run_end, nouns)
                if end + 1 < b and tokens[end].lower() == "of":
                    if tokens[end + 1].lower() in DETERMINERS:  # relational: "the left of the X"
                        i = end
                        continue
                    of_end = _open_run(tokens, end + 1, b)
                    if of_end > end + 1:
                        end = _head_end(tokens, end + 1, of_end, nouns)
                key = tuple(t.lower() for t in tokens[i + 1 : end])
                found.append(Found(i, end, key))
                i = end
                continue
            if _is_name(token):
                j = i + 1
                while j < b and _is_name(tokens[j]):
                    j += 1
                names.append(Found(i, j, tuple(t.lower() for t in tokens[i:j])))
                i = j
                continue
            i += 1
        found.extend(names)
        for left, right in zip(names, names[1:], strict=False):
            if right.start == left.end + 1 and tokens[left.end].lower() == "and":
                group = ("&", *sorted([" ".join(left.key), " ".join(right.key)]))
                found.append(Found(left.start, right.end, group))
    return sorted(found, key=lambda f: (f.start, -f.end))


class EntityIdAnnotator(Annotator):
    name = NAME

    def __init__(self, mentions: str, placeholder: str, pronouns: str):
        if mentions not in MODES:
            raise CorefreproError(
                f"annotator '{NAME}': mentions must be one of {list(MODES)}, not {mentions!r}"
            )
        if pronouns not in PRONOUN_POLICIES:
            raise CorefreproError(
                f"annotator '{NAME}': pronouns must be one of {list(PRONOUN_POLICIES)}, "
                f"not {pronouns!r}"
            )
        try:
            self.placeholder = re.compile(placeholder) if placeholder else None
        except re.error as exc:
            raise CorefreproError(
                f"annotator '{NAME}': placeholder {placeholder!r} is not a regex: {exc}"
            ) from None
        self.mode = mentions
        self.pronouns = pronouns

    def annotate_doc(self, doc: Doc) -> Annotation:
        if self.mode == "gold":
            return self._from_gold(doc)
        text_rules = self.mode == "text"
        nouns: set[str] = set()
        if text_rules:  # the questions' noun phrases are evidence too ("the blue square ?")
            nominal_words(doc.tokens, doc.sentence_starts, nouns)
            for query in doc.queries:
                nominal_words(query.tokens, [0], nouns)
        found = detect_mentions(
            doc.tokens,
            doc.sentence_starts,
            placeholder=self.placeholder,
            text_rules=text_rules,
            nouns=nouns,
        )
        ids: dict[tuple[str, ...], int] = {}
        mentions = [(f.start, f.end, ids.setdefault(f.key, len(ids))) for f in found]
        queries = link_queries(doc, mentions)
        for query in doc.queries:
            linked = queries[query.item_id]
            taken = [False] * len(query.tokens)
            for start, end, _ in linked:
                taken[start:end] = [True] * (end - start)
            extra = [
                (f.start, f.end, ids.setdefault(f.key, len(ids)))
                for f in detect_mentions(
                    query.tokens,
                    [0],
                    placeholder=self.placeholder,
                    text_rules=text_rules,
                    nouns=nouns,
                )
                if not any(taken[f.start : f.end])
            ]
            queries[query.item_id] = sorted(linked + extra)
        return Annotation(mentions, queries)

    def _from_gold(self, doc: Doc) -> Annotation:
        if doc.gold is None:
            raise CorefreproError(
                f"annotator '{NAME}' (mentions: gold): document {doc.doc_id} comes from a "
                "corpus without gold mentions; use mentions: text or placeholders"
            )
        ids: dict[tuple[str, ...], int] = {}
        mentions: list[Span] = []
        dropped = 0
        for start, end, _ in sorted(doc.gold, key=lambda m: (m[0], m[1])):
            words = tuple(t.lower() for t in doc.tokens[start:end])
            if self.pronouns != "string" and len(words) == 1 and words[0] in PRONOUNS:
                if self.pronouns == "drop":
                    dropped += 1
                    continue
                words = ("#pronoun", str(start))  # a singleton of its own
            mentions.append((start, end, ids.setdefault(words, len(ids))))
        counts = {"entity_id_pronouns_dropped": dropped} if self.pronouns == "drop" else {}
        return Annotation(mentions, link_queries(doc, mentions), counts)


def build(cfg: dict[str, Any]) -> EntityIdAnnotator:
    cfg = {**SETTINGS, **check_settings(NAME, cfg, SETTINGS)}
    return EntityIdAnnotator(str(cfg["mentions"]), cfg["placeholder"], str(cfg["pronouns"]))
