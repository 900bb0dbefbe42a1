"""Shared reader for the tokenized WikiText files (Merity et al. 2016, "Pointer Sentinel
Mixture Models"): wiki.{train,valid,test}.tokens of WikiText-2 and WikiText-103.

CoreLM (Table 1) reports zero-shot perplexity on both. Normalization:
- one document per Wikipedia article: an article starts at its top-level heading line
  " = Title = " (exactly one "=" on each side; " = = Section = = " lines stay inside the
  article as text). doc_id "<corpus>/<split>/<article index, 5 digits>_<title, spaces as _>".
  Blank lines before the first heading belong to the first article; text there is an error.
- tokens = the file's whitespace tokens, verbatim: heading "=" markers, "@-@"-style escapes
  and <unk> stay, since perplexity is normalized by the original token count.
- the <eos> convention: the published counts (e.g. WikiText-2 valid 217,646 tokens) are
  whitespace tokens + one <eos> per line, blank lines included (the word-level LM setup of
  Merity et al.). By default (cfg "eos": false) documents hold the text tokens only and blank
  lines vanish, so: text tokens + number of lines of the file = the published count (notes
  give both numbers per split). With "eos": true every line, blank ones too, gets a final
  "<eos>" token and the document tokens ARE the published count.
- sentences: every non-blank line (a paragraph or heading) starts a sentence; within a line
  cfg "sentences" = "punct" (default) also splits after standalone . ! ? tokens (plus
  closing quotes/brackets: the rule of tasks/corpora/base.py, punct_sentence_starts), "line"
  does not.
  With eos on, each <eos> ends its line's last sentence; a blank line is a sentence "<eos>".
- splits by file: train -> "train", valid -> "dev", test -> "test". A corpus module declares
  which files are optional; absent optional ones are skipped with a note.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.core.errors import CorefreproError, DataError, MissingSourceError
from tasks.core.fetch import Archive, Source
from tasks.corpora.base import Normalized, document_row, punct_sentence_starts, read_lines

EOS = "<eos>"
SPLIT_OF = {"train": "train", "valid": "dev", "test": "test"}


@dataclass(frozen=True)
class SplitFile:
    """One split's file as a corpus module declares it."""

    split: str  # train / valid / test (file naming); mapped through SPLIT_OF
    relpath: str
    required: bool = False
    sample_relpath: str | None = None  # mirror sample used only when relpath is absent


@dataclass
class FileStats:
    articles: int = 0
    lines: int = 0
    blank_lines: int = 0
    text_tokens: int = 0

    @property
    def published_tokens(self) -> int:
        """Merity et al.'s count: whitespace tokens + one <eos> per line."""
        return self.text_tokens + self.lines


def detokenize(page: str) -> str:
    """WikiText's tokenized text back to running text, the string a language model scores:
    lm-evaluation-harness's `wikitext_detokenizer` (lm_eval/tasks/wikitext/
    preprocess_wikitext.py, wikitext task 2.0), rule for rule, so that scores equal its."""
    string = page
    # contractions
    string = string.replace("s '", "s'")
    string = re.sub(r"/' [0-9]/", r"/'[0-9]/", string)
    # number separators
    string = string.replace(" @-@ ", "-")
    string = string.replace(" @,@ ", ",")
    string = string.replace(" @.@ ", ".")
    # punctuation
    for mark in ":;.!?,":
        string = string.replace(f" {mark} ", f"{mark} ")
    # double brackets
    string = re.sub(r"\(\s*([^\)]*?)\s*\)", r"(\1)", string)
    string = re.sub(r"\[\s*([^\]]*?)\s*\]", r"[\1]", string)
    string = re.sub(r"{\s*([^}]*?)\s*}", r"{\1}", string)
    string = re.sub(r"\"\s*([^\"]*?)\s*\"", r'"\1"', string)
    string = re.sub(r"'\s*([^']*?)\s*'", r"'\1'", string)
    # miscellaneous
    string = string.replace("= = = =", "====")
    string = string.replace("= = =", "===")
    string = string.replace("= =", "==")
    string = string.replace(" " + chr(176) + " ", chr(176))
    string = string.replace(" \n", "\n")
    string = string.replace("\n ", "\n")
    string = string.replace(" N ", " 1 ")
    string = string.replace(" 's", "'s")
    return string


def archive_sources(
    files: list[SplitFile],
    archive_url: str,
    archive_root: str,
    archive_sha256: str,
    sha256: dict[str, str] | None = None,
) -> list[Source]:
    """One Source per split file, each a member <archive_root>/<relpath> of the official
    archive; sha256: the file's own checksum by split, where one is published."""
    return [
        Source(
            f.relpath,
            (sha256 or {}).get(f.split),
            archive=Archive(archive_url, f"{archive_root}/{f.relpath}", archive_sha256),
            optional=not f.required,
        )
        for f in files
    ]


def is_article_heading(tokens: list[str]) -> bool:
    """' = Title = ' (top level), not ' = = Section = = '."""
    return (
        len(tokens) >= 3
        and tokens[0] == "="
        and tokens[-1] == "="
        and tokens[1] != "="
        and tokens[-2] != "="
    )


def read_tokens_file(
    path: Path, corpus: str, split: str, *, eos: bool = False, sentences: str = "punct"
) -> tuple[list[dict[str, Any]], FileStats]:
    """Articles of one wiki.*.tokens file as document rows, with the counts of the file."""
    if sentences not in ("punct", "line"):
        raise CorefreproError(
            f"normalize.{corpus}.sentences must be 'punct' or 'line', not {sentences!r}"
        )
    stats = FileStats()
    docs: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    pending: list[str] = []  # <eos> tokens of blank lines before the first heading

    for lineno, line in read_lines(path):
        stats.lines += 1
        words = line.split()
        stats.text_tokens += len(words)
        if not words:
            stats.blank_lines += 1
            if eos:
                if current is None:
                    pending.append(EOS)
                else:
                    current["sentence_starts"].append(len(current["tokens"]))
                    current["tokens"].append(EOS)
            continue
        if is_article_heading(words):
            title = "_".join(words[1:-1])
            current = document_row(f"{corpus}/{split}/{len(docs):05d}_{title}", split, [], [])
            docs.append(current)
            for _ in pending:
                current["sentence_starts"].append(len(current["tokens"]))
                current["tokens"].append(EOS)
            pending = []
        elif current is None:
            raise DataError(path, "text before the first article heading ' = Title = '", lineno)
        offset = len(current["tokens"])
        starts = [0] if sentences == "line" else punct_sentence_starts(words)
        current["sentence_starts"].extend(offset + s for s in starts)
        current["tokens"].extend(words)
        if eos:
            current["tokens"].append(EOS)
    if current is None and stats.lines:
        raise DataError(path, "no article heading ' = Title = ' in the file")
    stats.articles = len(docs)
    return docs, stats


def normalize_files(
    raw_dir: Path,
    cfg: dict[str, Any],
    corpus: str,
    files: list[SplitFile],
    *,
    include_train_default: bool = True,
) -> Normalized:
    """Normalize the declared split files of one WikiText corpus (see the module docstring).

    cfg: "eos" (false), "sentences" ("punct"), "include_train" (include_train_default).
    """
    raw_dir = Path(raw_dir)
    eos = bool(cfg.get("eos", False))
    sentences = str(cfg.get("sentences", "punct"))
    include_train = bool(cfg.get("include_train", include_train_default))
    notes: list[str] = []
    docs: list[dict[str, Any]] = []
    for spec in files:
        path = raw_dir / spec.relpath
        if spec.split == "train" and not include_train:
            notes.append(f"{spec.relpath}: not read (normalize.{corpus}.include_train is false)")
            continue
        if not path.exists():
            if spec.required:
                raise MissingSourceError(f"{path}: missing (run the download stage first)")
            if spec.sample_relpath and (raw_dir / spec.sample_relpath).exists():
                path = raw_dir / spec.sample_relpath
                notes.append(f"{spec.relpath} absent; used the mirror sample {spec.sample_relpath}")
            else:
                notes.append(
                    f"{spec.relpath} absent (optional); no {SPLIT_OF[spec.split]} documents"
                )
                continue
        found, stats = read_tokens_file(
            path, corpus, SPLIT_OF[spec.split], eos=eos, sentences=sentences
        )
        docs += found
        notes.append(
            f"{path.name}: {stats.articles} articles, {stats.lines} lines ({stats.blank_lines} "
            f"blank), {stats.text_tokens} text tokens + {stats.lines} <eos> = "
            f"{stats.published_tokens} tokens (Merity et al. count)"
        )
    docs.sort(key=lambda r: r["doc_id"])
    return Normalized(documents=docs, notes=notes)
