"""What every corpus module provides, and small helpers they share.

A corpus module (tasks/corpora/<name>.py) defines at module level:

    NAME: str          registry key, also data/raw/<NAME>/ and data/docs/<NAME>/
    MIRROR_DIR: str    its folder inside a mirror (../shared/data/<MIRROR_DIR>/...)
    LICENSE: str       one line: the license and where it is stated
    def sources(cfg: dict) -> list[Source]             files to fetch (tasks.core.fetch.Source)
    def normalize(raw_dir: Path, cfg: dict) -> Normalized
and optionally
    def generate(raw_dir: Path, cfg: dict) -> None     corpora the project makes itself;
                                                        replaces fetching when present

cfg is the corpus's namespace of params.yaml (download.<NAME> for sources/generate,
normalize.<NAME> merged over the shared normalize settings for normalize).

Shared helpers: reading lines (read_lines), table rows (join_sentences, document_row,
item_row), the sentence splitter for text without sentence markers (punct_sentence_starts),
one-file-per-document corpora pinned by a table (read_file_table, pinned_sources,
present_files, absent_note) and gc_paused. Deterministic splits are tasks/core/splits.py.
"""

from __future__ import annotations

import contextlib
import gc
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.core.errors import CorefreproError, DataError
from tasks.core.fetch import Source


@dataclass
class Normalized:
    """Rows of the three tables of tasks/core/schema.py (items/mentions may stay empty)."""

    documents: list[dict[str, Any]]
    items: list[dict[str, Any]] = field(default_factory=list)
    # the corpus's own coreference: annotator "gold" (human) or a name saying who made it
    mentions: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # human-readable facts (skips, samples used)


def read_lines(path: str | Path, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without newline); bad bytes raise DataError at that line."""
    path = Path(path)
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError as exc:
                raise DataError(
                    path, f"not valid {encoding} at byte {exc.start} of the line", lineno
                ) from None
            yield lineno, text.rstrip("\r\n")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while a reader builds millions of small lists that form no cycles:
    otherwise it rescans the growing lists over and over (bAbI en-10k normalize: 7 s -> 3 s)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# --------------------------------------------------------------------------- table rows


def join_sentences(sentences: Iterable[Sequence[str]]) -> tuple[list[str], list[int]]:
    """A document's tokens from its sentences, and the index where each sentence starts."""
    tokens: list[str] = []
    starts: list[int] = []
    for sentence in sentences:
        starts.append(len(tokens))
        tokens.extend(sentence)
    return tokens, starts


def document_row(
    doc_id: str,
    split: str,
    tokens: list[str],
    sentence_starts: list[int],
    *,
    genre: str | None = None,
    speakers: list[str] | None = None,
) -> dict[str, Any]:
    """A row of tasks/core/schema.py DOCUMENTS (the lists are used as given, not copied)."""
    return {
        "doc_id": doc_id,
        "split": split,
        "tokens": tokens,
        "sentence_starts": sentence_starts,
        "genre": genre,
        "speakers": speakers,
    }


def item_row(
    item_id: str,
    doc_id: str,
    split: str,
    task: str,
    context_end: int,
    query: list[str],
    answer: str,
    *,
    candidates: list[str] | None = None,
    supporting: list[int] | None = None,
) -> dict[str, Any]:
    """A row of tasks/core/schema.py ITEMS."""
    return {
        "item_id": item_id,
        "doc_id": doc_id,
        "split": split,
        "task": task,
        "context_end": context_end,
        "query": query,
        "answer": answer,
        "candidates": candidates,
        "supporting": supporting,
    }


# --------------------------------------------------------------------------- sentence split
#
# For text without sentence markers (LAMBADA passages, WikiText lines, CNN contexts, GUM's
# coref CoNLL files): a sentence ends after a token made only of . ! ? (".", "?!", "...")
# plus any closing quotes or brackets that follow it (''  '  "  ) ]). "..." counts as an end
# although it sometimes marks a pause; in PTB-style tokens abbreviations ("mr.") keep their
# period and never split. For detokenized text (LAMBADA's OpenAI file and novels) a token
# ENDING in . ! ? (then closers) also ends a sentence unless it is a known abbreviation or a
# single-letter initial. A corpus may pass its own end tokens and closers (CNN: only ". ! ?",
# no closers; GUM: its own sets, and a straight '"' only closes a quote opened in the sentence).

_PUNCT_ONLY = re.compile(r"[.!?]+")
_ENDS_IN_PUNCT = re.compile(r".*[.!?][\"'”’)\]]*")
_INITIAL = re.compile(r"[A-Za-z]\.")
CLOSERS = frozenset({"''", "'", '"', "”", "’", ")", "]", "-rrb-", "-RRB-"})
ABBREVIATIONS = frozenset(
    {
        "mr.",
        "mrs.",
        "ms.",
        "dr.",
        "st.",
        "jr.",
        "sr.",
        "prof.",
        "mt.",
        "vs.",
        "capt.",
        "lt.",
        "col.",
        "gen.",
        "sgt.",
        "rev.",
        "no.",
    }
)


def _attached_end(token: str) -> bool:
    """A detokenized word with final punctuation ("stone.", "go?'") that is no abbreviation."""
    return (
        _ENDS_IN_PUNCT.fullmatch(token) is not None
        and token.lower() not in ABBREVIATIONS
        and not _INITIAL.fullmatch(token)
    )


def punct_sentence_starts(
    tokens: Sequence[str],
    line_starts: Iterable[int] = (),
    *,
    detokenized: bool = False,
    enders: Collection[str] | None = None,
    closers: Collection[str] = CLOSERS,
    balance_quotes: bool = False,
) -> list[int]:
    """Sentence starts for text without sentence markers (the rule in the comment above).

    line_starts: token indices where a line of the source begins (always a new sentence).
    detokenized: also end sentences at tokens with attached final punctuation ("stone.").
    enders: the tokens that end a sentence (default: any run of . ! ?).
    closers: tokens that still belong to the sentence that just ended.
    balance_quotes: a straight '"' after an end closes the sentence only when the sentence
        holds an odd number of them (so it closes a quote rather than opening the next one).
    Always starts at 0 (also for no tokens); never a start past the last token.
    """
    if enders is None:
        ends = [i for i, t in enumerate(tokens) if _PUNCT_ONLY.fullmatch(t)]
    else:
        ends = [i for i, t in enumerate(tokens) if t in enders]
    if detokenized:
        ends = sorted({*ends, *(i for i, t in enumerate(tokens) if _attached_end(t))})
    n = len(tokens)
    starts = [0]
    j = 0  # first token of the current sentence
    for i in ends:
        if i < j:  # already taken as a closer
            continue
        quotes = tokens[j : i + 1].count('"') if balance_quotes else 0
        j = i + 1
        while j < n:
            t = tokens[j]
            if balance_quotes and t == '"':
                if quotes % 2 == 0:
                    break
                quotes += 1
            elif t not in closers:
                break
            j += 1
        if j < n:
            starts.append(j)  # increasing: j only grows
    lines = [s for s in line_starts if 0 < s < n]
    return sorted({*starts, *lines}) if lines else starts


# --------------------------------------------------------------------------- pinned files
#
# Corpora shipped as one file per document (GUM, LitBank) list every upstream file in a
# table of "<sha256 or -> <split> <name>" lines: the sha256 from the mirror MANIFEST, or "-"
# for a file held out of the mirror with no published checksum (an optional source).


def read_file_table(table: str) -> dict[str, tuple[str, str | None]]:
    """name -> (split, sha256 or None) from the lines of such a table."""
    files: dict[str, tuple[str, str | None]] = {}
    for row in table.strip().splitlines():
        sha, split, name = row.split()
        files[name] = (split, None if sha == "-" else sha)
    return files


def pinned_sources(
    files: Mapping[str, tuple[str, str | None]], relpath: str, url: str
) -> list[Source]:
    """One Source per file, by name (relpath and url are templates of {name}); the files
    without a checksum are optional."""
    return [
        Source(relpath.format(name=name), sha, url=url.format(name=name), optional=sha is None)
        for name, (_, sha) in sorted(files.items())
    ]


def present_files(
    raw_dir: Path,
    files: Mapping[str, tuple[str, str | None]],
    relpath: str,
    corpus: str,
    absent: list[str],
) -> Iterator[tuple[str, str, Path]]:
    """(name, split, path) of each listed file under raw_dir, by name. A missing pinned file
    raises; the names of missing optional ones are appended to *absent*."""
    for name, (split, sha) in sorted(files.items()):
        path = raw_dir / relpath.format(name=name)
        if path.exists():
            yield name, split, path
        elif sha is not None:
            raise CorefreproError(f"{corpus}: {path} is missing (run the download stage first)")
        else:
            absent.append(name)


def absent_note(absent: Sequence[str], total: int) -> str:
    """The note that names the listed files absent from raw_dir (see present_files)."""
    return (
        f"{len(absent)} of {total} documents absent (held out of the mirror, optional): "
        + ", ".join(absent)
    )
