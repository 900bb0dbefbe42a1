"""The shared reader for coreference in CoNLL bracket notation (CoNLL-2012, GUM, LitBank, CoNLL-U).

One reader serves every coreference corpus of the project and the CoNLL scorer, so a span is
read the same way wherever it is counted. Formats handled:

- CoNLL-2011/2012 (Pradhan et al. 2012): ``#begin document (NAME); part NNN`` ...
  ``#end document``, one token per line, whitespace-separated columns (column 3 the word,
  column 9 the speaker, the LAST column the coreference brackets), blank line between
  sentences. The reference scorer's test files (conll/reference-coreference-scorers,
  test/DataFiles) use ``#begin document (LuoTestCase);`` with no part, tab-separated, and some
  have only two columns (document name, coreference): read those with ``token_column=None``.
- GUM (amir-zeldes/gum, coref/gum/conll): ``# begin document NAME`` (no brackets), three tab
  columns (index, word, coreference), no blank lines between sentences, cluster labels carry
  the entity type and sometimes a Wikipedia identifier (``(person-6``,
  ``place-10-United_Kingdom)``) and brackets follow each other with no ``|``:
  ``(abstract-4(object-5)``, ``abstract-3)abstract-4)``.
- LitBank (dbamman/litbank, coref/conll): CoNLL-2012 layout with 13 tab columns whose last
  (index 12) is EMPTY where a token starts or ends no mention; read with ``coref_column=12``.
- CoNLL-U with GUM-style ``Entity=`` brackets in the MISC column (AMALGUM, GUM's dep/ files):
  :func:`parse_conllu`.

Bracket semantics follow the reference scorer (lib/CorScorer.pm, GetCoreference): within one
cell, one-token mentions ``(X)`` are read first, then openings ``(X``, then closings ``X)``;
a closing ends the most recent open mention of the same label (a stack per label). Labels are
kept exactly as written; the corpus module decides what identifies a cluster.

Strictness: an unclosed or unopened bracket, a token line with too few columns (or fewer than
the other lines of its sentence: a truncated line), text outside a document, a document with
no ``#end document`` or no tokens, and bad UTF-8 all raise DataError(path, message, line).
Nested mentions and one span in several clusters are kept. The same span twice in ONE cluster
is kept once and counted in ConllDocument.duplicates (and logged), as the reference scorer
reports "Repeated mention" and drops the repeat.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.core.errors import DataError
from tasks.corpora import base
from tasks.corpora.base import read_lines

log = logging.getLogger("corefrepro.conll")

_BEGIN = re.compile(r"^#\s*begin document\b(.*)$")
_END = re.compile(r"^#\s*end document\b")
# "(NAME); part NNN", "(NAME);", "(NAME)", "NAME", "NAME; part NNN"
_DOC_NAME = re.compile(r"^\(?(?P<name>.*?)\)?\s*;?\s*(?:part\s+(?P<part>\S+))?\s*$")
# one bracket item: "(X)" one-token mention, "(X" opening, "X)" closing; "|" separates items
_ITEM = re.compile(r"\((?P<single>[^()|]+)\)|\((?P<open>[^()|]+)|(?P<close>[^()|]+)\)|\|")
_FIELD = re.compile(r"(?:\([^()|]+\)|\([^()|]+|[^()|]+\)|\|)+")
_EMPTY = frozenset({"", "-", "_"})


@dataclass
class ConllDocument:
    """One ``#begin document`` ... ``#end document`` block (or one CoNLL-U ``newdoc``)."""

    doc_id: str  # "(NAME); part NNN" -> "NAME/part_NNN"; "NAME" when there is no part
    tokens: list[str]
    sentence_starts: list[int]  # blank lines separate sentences; [0] when there are none
    speakers: list[str] | None  # one per token from speaker_column, else None
    mentions: list[tuple[int, int, str]]  # (start, end exclusive, cluster label), sorted
    first_line: int  # 1-based line of the "#begin document" (or "# newdoc") line
    duplicates: int = 0  # same span written twice in one cluster (kept once)


def parse_coref_field(
    field: str, path: str | Path, line: int
) -> tuple[list[str], list[str], list[str]]:
    """Split one coreference cell into (one-token labels, opening labels, closing labels)."""
    field = field.strip()
    if field in _EMPTY:
        return [], [], []
    if not _FIELD.fullmatch(field):
        raise DataError(
            path, f"malformed coreference field {field!r} (expected '(X', 'X)', '(X)' or '-')", line
        )
    singles: list[str] = []
    opens: list[str] = []
    closes: list[str] = []
    for m in _ITEM.finditer(field):
        if m.group("single") is not None:
            singles.append(m.group("single"))
        elif m.group("open") is not None:
            opens.append(m.group("open"))
        elif m.group("close") is not None:
            closes.append(m.group("close"))
    return singles, opens, closes


def doc_id_from_begin(rest: str, index: int) -> str:
    """The document id from what follows "#begin document" (see ConllDocument.doc_id).

    A begin line with no name at all gets "document_<index>" (index of the document in its
    file), so key and response files written the same way still pair up.
    """
    m = _DOC_NAME.match(rest.strip())
    name = (m.group("name") if m else rest).strip()
    part = m.group("part") if m else None
    if not name:
        return f"document_{index}"
    return f"{name}/part_{part}" if part is not None else name


class _DocBuilder:
    """Accumulates one document's tokens, sentences and bracket state."""

    def __init__(self, path: str | Path, doc_id: str, first_line: int, with_speakers: bool):
        self.path = path
        self.doc_id = doc_id
        self.first_line = first_line
        self.tokens: list[str] = []
        self.speakers: list[str] | None = [] if with_speakers else None
        self.sentence_starts: list[int] = []
        self.sentence_open = False
        self.stacks: dict[str, list[tuple[int, int]]] = {}  # label -> [(start token, line)]
        self.spans: dict[tuple[int, int, str], int] = {}  # (start, end, label) -> line
        self.duplicates = 0
        # column-count bookkeeping of the current sentence (truncated-line detection)
        self.min_width: tuple[int, int] | None = None  # (fields incl. trailing empty, line)
        self.max_core: tuple[int, int] | None = None  # (fields without trailing empty, line)

    def end_sentence(self) -> None:
        self.sentence_open = False
        self.min_width = None
        self.max_core = None

    def check_width(self, n_fields: int, n_core: int, line: int) -> None:
        """All lines of one sentence have the same columns (trailing empty fields aside)."""
        if self.max_core is not None and n_fields < self.max_core[0]:
            raise DataError(
                self.path,
                f"line has {n_fields} columns but line {self.max_core[1]} of the same sentence has "
                f"{self.max_core[0]} (truncated line?)",
                line,
            )
        if self.min_width is not None and n_core > self.min_width[0]:
            raise DataError(
                self.path,
                f"line has only {self.min_width[0]} columns but line {line} of the same sentence has "
                f"{n_core} (truncated line?)",
                self.min_width[1],
            )
        if self.min_width is None or n_fields < self.min_width[0]:
            self.min_width = (n_fields, line)
        if self.max_core is None or n_core > self.max_core[0]:
            self.max_core = (n_core, line)

    def add_token(self, token: str, speaker: str | None, coref: str, line: int) -> None:
        if not self.sentence_open:
            self.sentence_starts.append(len(self.tokens))
            self.sentence_open = True
        i = len(self.tokens)
        self.tokens.append(token)
        if self.speakers is not None:
            self.speakers.append(speaker if speaker is not None else "-")
        singles, opens, closes = parse_coref_field(coref, self.path, line)
        for label in singles:
            self._add_span(i, i + 1, label, line)
        for label in opens:
            self.stacks.setdefault(label, []).append((i, line))
        for label in closes:
            stack = self.stacks.get(label)
            if not stack:
                raise DataError(
                    self.path,
                    f"'{label})' closes a mention of cluster {label!r} that was never opened "
                    f"(document {self.doc_id})",
                    line,
                )
            start, _ = stack.pop()
            self._add_span(start, i + 1, label, line)

    def _add_span(self, start: int, end: int, label: str, line: int) -> None:
        key = (start, end, label)
        if key in self.spans:
            self.duplicates += 1
        else:
            self.spans[key] = line

    def finish(self, end_line: int) -> ConllDocument:
        unclosed = sorted(
            (line, label) for label, stack in self.stacks.items() for _, line in stack
        )
        if unclosed:
            line, label = unclosed[0]
            raise DataError(
                self.path,
                f"'({label}' opens a mention that is never closed in document {self.doc_id} "
                f"(document ends at line {end_line}; {len(unclosed)} unclosed in all)",
                line,
            )
        if not self.tokens:
            raise DataError(self.path, f"document {self.doc_id} has no tokens", self.first_line)
        if self.duplicates:
            log.warning(
                "%s: document %s: %d mention(s) written twice in the same cluster, kept once",
                self.path,
                self.doc_id,
                self.duplicates,
            )
        return ConllDocument(
            doc_id=self.doc_id,
            tokens=self.tokens,
            sentence_starts=self.sentence_starts,
            speakers=self.speakers,
            mentions=sorted(self.spans),
            first_line=self.first_line,
            duplicates=self.duplicates,
        )


def _split_fields(line: str) -> list[str]:
    """Tab-separated when the line has tabs (fields may be empty), else runs of spaces."""
    if "\t" in line:
        return [f.strip(" ") for f in line.split("\t")]
    return line.strip(" ").split()


def _required(column: int | None, *, negative: bool) -> int:
    """Fields a line needs for *column* (a negative one counts from the last non-empty field)."""
    if column is None or (column < 0) != negative:
        return 0
    return -column if negative else column + 1


def parse_conll(
    path: str | Path,
    *,
    token_column: int | None = 3,
    coref_column: int = -1,
    speaker_column: int | None = None,
) -> list[ConllDocument]:
    """Every document of a CoNLL coreference file, in file order.

    token_column None: the file has no word column (two-column scorer files); tokens are "_".
    A negative coref_column counts from the last NON-EMPTY field, as the reference scorer's
    whitespace split does (a stray trailing tab is ignored); a non-negative one indexes the
    tab-separated fields as they are, where an empty cell means "no mention" (LitBank).
    """
    path = Path(path)
    columns = (token_column, coref_column, speaker_column)
    need_fields = max(_required(c, negative=False) for c in columns)
    need_core = max(1, *(_required(c, negative=True) for c in columns))
    docs: list[ConllDocument] = []
    seen: dict[str, int] = {}
    cur: _DocBuilder | None = None
    last_line = 0
    for lineno, raw in read_lines(path):
        last_line = lineno
        text = raw.strip()
        if not text:
            if cur is not None:
                cur.end_sentence()
            continue
        begin = _BEGIN.match(text)
        if begin:
            if cur is not None:
                raise DataError(
                    path,
                    f"'#begin document' inside document {cur.doc_id} (begun at line {cur.first_line}, "
                    "no '#end document')",
                    lineno,
                )
            doc_id = doc_id_from_begin(begin.group(1), len(docs))
            if doc_id in seen:
                raise DataError(
                    path, f"document {doc_id} appears twice (first at line {seen[doc_id]})", lineno
                )
            seen[doc_id] = lineno
            cur = _DocBuilder(path, doc_id, lineno, speaker_column is not None)
            continue
        if _END.match(text):
            if cur is None:
                raise DataError(path, "'#end document' without a '#begin document'", lineno)
            docs.append(cur.finish(lineno))
            cur = None
            continue
        if cur is None:
            raise DataError(
                path,
                f"text outside a document (no '#begin document' before it): {text[:60]!r}",
                lineno,
            )
        if text.startswith("#"):
            raise DataError(
                path, f"unexpected comment line inside document {cur.doc_id}: {text[:60]!r}", lineno
            )
        fields = _split_fields(raw)
        core = list(fields)
        while core and core[-1] == "":
            core.pop()
        if len(fields) < need_fields or len(core) < need_core:
            raise DataError(
                path,
                f"token line has {len(core)} columns, needs at least {max(need_fields, need_core)} "
                f"(token column {token_column}, coreference column {coref_column}"
                + (f", speaker column {speaker_column}" if speaker_column is not None else "")
                + ")",
                lineno,
            )
        cur.check_width(len(fields), len(core), lineno)
        coref = core[coref_column] if coref_column < 0 else fields[coref_column]
        if token_column is None:
            token = "_"
        else:
            token = fields[token_column]
            if not token:
                raise DataError(path, f"empty token in column {token_column}", lineno)
        speaker = None
        if speaker_column is not None:
            speaker = fields[speaker_column]
            if not speaker:
                raise DataError(path, f"empty speaker in column {speaker_column}", lineno)
        cur.add_token(token, speaker, coref, lineno)
    if cur is not None:
        raise DataError(
            path,
            f"document {cur.doc_id} (begun at line {cur.first_line}) has no '#end document': truncated file?",
            last_line,
        )
    return docs


_CONLLU_NEWDOC = re.compile(r"^#\s*newdoc(?:\s+id\s*=\s*(?P<id>.*))?$")
_CONLLU_SPEAKER = re.compile(r"^#\s*speaker\s*=\s*(?P<speaker>.*)$")


def parse_conllu(path: str | Path, *, misc_key: str = "Entity") -> list[ConllDocument]:
    """Documents of a CoNLL-U file whose MISC column holds GUM-style ``Entity=`` brackets.

    Documents start at ``# newdoc id = X`` (the whole file is one document named after the
    file when there is none); ``# speaker = X`` sentence comments give per-token speakers
    (None when the document has no speaker comment at all). Multi-word token lines ("3-4")
    are skipped because their words follow as their own lines; empty nodes ("5.1") are
    skipped too, but one carrying an entity bracket raises DataError rather than be lost.
    """
    path = Path(path)
    docs: list[ConllDocument] = []
    seen: dict[str, int] = {}
    cur: _DocBuilder | None = None
    sentence_speaker: str | None = None
    doc_has_speakers = False
    prefix = f"{misc_key}="

    def close(end_line: int) -> None:
        nonlocal cur
        if cur is None:
            return
        doc = cur.finish(end_line)
        if not doc_has_speakers:
            doc.speakers = None
        docs.append(doc)
        cur = None

    def start(doc_id: str, line: int) -> None:
        nonlocal cur, doc_has_speakers
        if doc_id in seen:
            raise DataError(
                path, f"document {doc_id} appears twice (first at line {seen[doc_id]})", line
            )
        seen[doc_id] = line
        cur = _DocBuilder(path, doc_id, line, with_speakers=True)
        doc_has_speakers = False

    last_line = 0
    for lineno, raw in read_lines(path):
        last_line = lineno
        text = raw.strip()
        if not text:
            if cur is not None:
                cur.end_sentence()
            sentence_speaker = None
            continue
        if text.startswith("#"):
            newdoc = _CONLLU_NEWDOC.match(text)
            if newdoc:
                close(lineno - 1)
                start((newdoc.group("id") or "").strip() or f"{path.stem}_{len(docs)}", lineno)
                continue
            speaker = _CONLLU_SPEAKER.match(text)
            if speaker:
                sentence_speaker = speaker.group("speaker").strip()
                doc_has_speakers = True
            continue  # other comments are sentence metadata (sent_id, text, ...)
        fields = raw.split("\t")
        if len(fields) != 10:
            raise DataError(
                path,
                f"CoNLL-U token line has {len(fields)} tab-separated columns, needs 10",
                lineno,
            )
        if cur is None:
            start(path.stem, lineno)
        word_id = fields[0]
        entity = ""
        for item in fields[9].split("|"):
            if item.startswith(prefix):
                entity = item[len(prefix) :]
        if "-" in word_id:
            if entity:
                raise DataError(
                    path, f"{misc_key}= on multi-word token line {word_id} is not supported", lineno
                )
            continue
        if "." in word_id:
            if entity:
                raise DataError(
                    path, f"{misc_key}= on empty node {word_id} is not supported", lineno
                )
            continue
        if not fields[1]:
            raise DataError(path, "empty FORM column", lineno)
        assert cur is not None
        cur.add_token(fields[1], sentence_speaker, entity, lineno)
    close(last_line)
    return docs


def cluster_ids(
    mentions: Iterable[tuple[int, int, str]], key: Callable[[str], Any] | None = None
) -> dict[Any, int]:
    """Cluster key -> int, numbered by first mention in document order (deterministic)."""
    ids: dict[Any, int] = {}
    for _, _, label in sorted(mentions):
        k = key(label) if key else label
        if k not in ids:
            ids[k] = len(ids)
    return ids


def mention_rows(
    doc_id: str,
    doc: ConllDocument,
    *,
    key: Callable[[str], Any] | None = None,
    annotator: str = "gold",
) -> list[dict[str, Any]]:
    """Rows for tasks/core/schema.py MENTIONS, sorted by (start, end, cluster), one per distinct span+cluster."""
    ids = cluster_ids(doc.mentions, key)
    spans = {(s, e, ids[key(label) if key else label]) for s, e, label in doc.mentions}
    return [
        {"doc_id": doc_id, "start": s, "end": e, "cluster": c, "annotator": annotator}
        for s, e, c in sorted(spans)
    ]


def document_row(
    doc_id: str,
    split: str,
    doc: ConllDocument,
    *,
    genre: str | None,
    sentence_starts: list[int] | None = None,
) -> dict[str, Any]:
    """A row for tasks/core/schema.py DOCUMENTS from a parsed document (its own sentence starts
    unless others are given)."""
    starts = sentence_starts if sentence_starts is not None else doc.sentence_starts
    return base.document_row(doc_id, split, doc.tokens, starts, genre=genre, speakers=doc.speakers)


def single_document(
    path: str | Path, docs: list[ConllDocument], name: str, *, ignore_part: bool = False
) -> ConllDocument:
    """The document of a one-document file, which must be named *name* (ignore_part: its
    "/part_N" suffix aside); anything else is a DataError at line 1."""
    doc_name = docs[0].doc_id if len(docs) == 1 else None
    if doc_name is not None and ignore_part:
        doc_name = doc_name.split("/part_")[0]
    if doc_name != name:
        found = ", ".join(d.doc_id for d in docs)
        raise DataError(path, f"expected exactly one document named {name}, found: {found}", 1)
    return docs[0]


__all__ = [
    "ConllDocument",
    "cluster_ids",
    "doc_id_from_begin",
    "document_row",
    "mention_rows",
    "parse_conll",
    "parse_conllu",
    "parse_coref_field",
    "single_document",
]
