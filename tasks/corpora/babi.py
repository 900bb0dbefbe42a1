"""bAbI QA tasks v1.2 (Weston et al. 2015, "Towards AI-Complete Question Answering").

MAGE-GRU (Dhingra et al. 2018, Table 1) evaluates on the 1k English split ("en"); the 10k
split ("en-10k") is available as an option (cfg "variants").

Normalization (one row per story and per question, so annotation is done once per story):
- document = the story's statements only, one sentence each (questions are not part of the
  text a reader sees; README.txt of the release: IDs restart at 1 for each new story).
  Tokens keep the original casing; "." "?" (and "," "!") are split off as tokens.
- item = one question: context_end = number of story tokens before it (statements seen so
  far), query = question tokens, answer as in the file (the comma-separated multi-word
  answers of tasks 8 and 19 stay one string, e.g. "football,apple"), supporting = indices of
  the supporting statements in the story's statement list (the file's line IDs count the
  question lines too, so they are mapped), task "qa<N>".
- doc_id "babi/<variant>/qa<N>/<train|test>/<story index in the file>": the source file, not
  the split, so ids survive a change of dev_fraction.
- dev: the release has no validation split for en/ (its en-valid/ is just a 90/10 cut of
  train), so ~dev_fraction of each task's training STORIES become dev (carve_dev, seeded).
- test: the full test files are held back from the developer mirror; its sample_test/en/
  files (each test file up to its 10th question) are used only when the full file is absent,
  with a note. en-10k test files are byte-identical to en/ ones (MANIFEST), so the same
  samples stand in for both.
- en-10k qa3 train is missing from the mirror: it is an optional source (from the upstream
  archive when the network is on); when absent that task's training data is skipped with a note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.core.errors import CorefreproError, DataError, MissingSourceError
from tasks.core.fetch import Archive, Source
from tasks.core.splits import carve_dev
from tasks.corpora.base import (
    Normalized,
    document_row,
    gc_paused,
    item_row,
    join_sentences,
    read_lines,
)

NAME = "babi"
MIRROR_DIR = "babi"
LICENSE = (
    "CC BY 3.0 Unported, Copyright (c) 2015-present Facebook, Inc. (LICENSE.txt of tasks_1-20_v1-2)"
)

# Canonical upstream: the bAbI page (research.fb.com/downloads/babi) links this tarball; the
# same file was earlier served from www.thespermwhale.com/jaseweston/babi/. Its sha256 and size
# (15,719,851 bytes) are published in HuggingFace datasets' babi_qa/dataset_infos.json
# (download_checksums, recorded for the thespermwhale URL of the same tarball).
ARCHIVE_URL = "https://dl.fbaipublicfiles.com/babi/tasks_1-20_v1-2.tar.gz"
ARCHIVE_SHA256 = "0364ebde659f14d11bc21744516c5ec49d3d06cb692733f66680771244998898"
ARCHIVE_ROOT = "tasks_1-20_v1-2"

VARIANTS = ("en", "en-10k")
TASKS = {
    1: "qa1_single-supporting-fact",
    2: "qa2_two-supporting-facts",
    3: "qa3_three-supporting-facts",
    4: "qa4_two-arg-relations",
    5: "qa5_three-arg-relations",
    6: "qa6_yes-no-questions",
    7: "qa7_counting",
    8: "qa8_lists-sets",
    9: "qa9_simple-negation",
    10: "qa10_indefinite-knowledge",
    11: "qa11_basic-coreference",
    12: "qa12_conjunction",
    13: "qa13_compound-coreference",
    14: "qa14_time-reasoning",
    15: "qa15_basic-deduction",
    16: "qa16_basic-induction",
    17: "qa17_positional-reasoning",
    18: "qa18_size-reasoning",
    19: "qa19_path-finding",
    20: "qa20_agents-motivations",
}

# sha256 of the mirrored files, from /work/shared/data/babi/MANIFEST.md (verbatim copies of
# the official tarball's members).
TRAIN_SHA256: dict[tuple[str, int], str] = {
    ("en", 1): "c64ba9b1a49bbb111ffc4cd2ae4f129d25c012399dd7ade9679eea464b9afb05",
    ("en", 2): "a4978af5bc0dc30191810e7c9949aaa6eae939ed0f6beb9fcb5f4330c2a27860",
    ("en", 3): "a6e78019f36a02a7ed71fe6aaded0b563ff09c8deec392931801fcd9c6af4d60",
    ("en", 4): "c9370502d85fa382f32d1fea2111e817f81ae9e3e79eb2924a1a5392a90417fa",
    ("en", 5): "086cd59c3ca9677bfac3d6a22ca5853c76a5c1fbae3159c7c4a6aef759a74ec0",
    ("en", 6): "5a133115ee35d475776df703ff605d145b11effbcdbf7e74861f9d5639246a5a",
    ("en", 7): "dca03bd91876951c49f1c971c83c9dd55404de60201b7b6435451cf7ddb4751c",
    ("en", 8): "058604df6f9440458317e8ae685d2b7b84261e1a80b4d6410a9140d16f81bf06",
    ("en", 9): "0c3b89921af0caea1c4059ee3f7b7f2a88869f924195a428da37820446b8c49f",
    ("en", 10): "0b7691689447bab05476c5b48c44999b41e747c3978df69c18fdd87b60d6e8b3",
    ("en", 11): "9468de9a1f256f43dfda693a5d07182d21149a82b65f7c2451c64e9cff5eb138",
    ("en", 12): "45c2764bb2d3c8f699d35e9d9aa7958fcd96379c6e907116cdf74526c108bb25",
    ("en", 13): "533a391edbda743e4c99504de88b40cdded5b1d5ef454d1390f0863f748a4cc9",
    ("en", 14): "b7561cbc624205c9c2fdbb8c843cfa8ad90edd65e78bb223fc6dea8113662df8",
    ("en", 15): "e856ebfdcce4dd7d617c1d10f985e96a0850c0ca18e9a19a017cb710d135ed3d",
    ("en", 16): "20121005137e3d4b061a086eb177a456303d5742b764eb8da2d0e480b6af4d28",
    ("en", 17): "20083bf56ff74f0e7cf5e3e2f8c3905cdb8ef09293c3e8cf7a96ed8b45ae2277",
    ("en", 18): "18b7dcf52c9a0e87e4e7dd3d65b7e5a630de039645f52a1294197af7481d739d",
    ("en", 19): "dcb788352a56effb7bea1449128f31cc9c342c8c327b6df2caeee0e379e6ad3a",
    ("en", 20): "29580ad55fb7b4b29ba014696056cc68f8f347dac3be88470fd692ad60150398",
    ("en-10k", 1): "749ea9f7c99070feb2d88c975a254417a0dcc8274add4435ae5ae24c7afc7e9d",
    ("en-10k", 2): "d4074c0c5d54f70ce2f538056ce2b6ef6a313da336da4245f1a24f1298e37ef3",
    # ("en-10k", 3): not in the mirror and no per-file hash is published; the archive's
    # sha256 (ARCHIVE_SHA256) vouches for it when it is extracted from upstream.
    ("en-10k", 4): "5d11b821d35234988ab907866aa7ce718e6b6d751acf63bdef52262afb59f12c",
    ("en-10k", 5): "2506910935b701bac64fc8b1d7ff12bd8d0f47ceefca183454282bec784c12a5",
    ("en-10k", 6): "602f379184bf3cb59660d0f7769d9c94ccdc1fc4d82dfe90bd460d985b1ff0c5",
    ("en-10k", 7): "4a2508733bef9b38cfce4b3108a91b83cdee378de4a7370e4d32fea2dacd3b7d",
    ("en-10k", 8): "9518da2d3aa5d98bec33335e0d5ba3a22c2bd1929ee679085d37eb50a7652e4a",
    ("en-10k", 9): "5f8949f6ef7d64516fc4dd5732b12b5932d057b1a614e8ac94e795fb020d4ff0",
    ("en-10k", 10): "c5c0788b0446095c07a0442784cad2b59c1d58e875ebe8ad852f5e3f628613f4",
    ("en-10k", 11): "edfcd97fecd4a5045af25e1790cf1408856ae362c39521b1b69cd32b88ec0ced",
    ("en-10k", 12): "39d58df3564916c66cebc98befb65d605c032181e51208730fd8837a77bc166a",
    ("en-10k", 13): "c530fdf122d26617a8a03ba5cdbacee87c22624ba7f50d1f07f9658c900e22d8",
    ("en-10k", 14): "c322e0814eef71f088af1aa1334e7ae4b1ee6ca18f2ee94c05e2189226964ed6",
    ("en-10k", 15): "0a86673f7fafa484f8ee394048f03de19405bdc40b58f21086969efad2862010",
    ("en-10k", 16): "27fef347ce0b25dd148efea2b15f154926e0e9069d4ea6ab9cfca3add492ab35",
    ("en-10k", 17): "8a383651e009db50d6c9effed5778b8646c28c55fadb1592b5f4d8d3a187bbce",
    ("en-10k", 18): "9e7c15107067d2070170ef12579a8bfe34dfc35a7ac9ebd13f2001dc1a7488f9",
    ("en-10k", 19): "6cfdc6f448e3cf0e3d8a390fa3add461935b033f89ede32aeef30812401ec91e",
    ("en-10k", 20): "36f20f3baf6bad2297d5b9fd877e633550c36106fe78bc10ddfb7b1eede62573",
}
SAMPLE_SHA256: dict[int, str] = {
    1: "62579b24fd91516e43b0f93adb94e5861df2859850b42f17af1f6cc325ef7418",
    2: "29349d4dc178f36576d2e936bdf5988f388491d490f5a2da5b3f008a50f8a37a",
    3: "accb65a07b832c4cec27f71d8e06f2ead2a5e63e1dba12b0d57f46e002fffd34",
    4: "368c283ba5bb6c493e861a238ec09f1f0c9673f823a4788727283a34114baac8",
    5: "4f4bae118c90ed4a4e0e0b0f6278314975b17d7a8ac4120f772617d7774a90a5",
    6: "55c0007b486db5413943d992da1aa5df09da22cee1cc151b30cdb35dcefafb43",
    7: "6b897183508f57bdaf4b76f9c1c995b6f35f47d8789df315b56db7f91a09f00e",
    8: "61cca2a004f39ab05d949a934a728d9bf68d6dd74e7f037f9d4ca68215e1919a",
    9: "b41610bd1aab652da8c28a313c761b4442225c97cc90d62cd5707b14629c1994",
    10: "830f6cfe0e7a58d0234ec3d96092c614c805b3e772aaca96c76c4f2dc1018205",
    11: "cf2ea94b832e548b4cd7e60da8cc8bf4bbac8432fedee31a39230a7541ee8ec1",
    12: "2e1dcd46ffee89c6a41c97fdb6b3866b1c7b6257bd26eb8dd8bfe88cc5ca614c",
    13: "9f3443b417d0a3e59acf1d8cb8b4d85f32f2190ff1e54f62fa935ad42dfcd1fa",
    14: "17f99302cb2e62b5a92c383ee443e3d6b10890cc9ed329fd38135a623acb9ab0",
    15: "38b7b19e55148172877adf175309c7192a4b9559b5b9696b1008c7469e799789",
    16: "1b60e954c4490244a01435d717f96f0c19927ef160fc8c3ddd37bfa8c15005b9",
    17: "2ec3b451aa74efdfb93134843e5f6d8e80fe98005b44508987b4ba80d3d0bcf5",
    18: "2ee4abc0d1d8213d053578ec1aa8790b3cb966ce5098edf69fd936af405c6d1e",
    19: "dea5d226d66018136f4732b41f28ff0cb941129abd61ded6d191dfb34daa022c",
    20: "6e75bc986a6f45dc426328e0ba9bdb51d6b406288887a8d73444eb0c8a6d117b",
}

_LINE = re.compile(r"(\d+) (.*)")
_TOKEN = re.compile(r"[^\s.?!,]+|[.?!,]")


def train_relpath(variant: str, task: int) -> str:
    return f"{variant}/{TASKS[task]}_train.txt"


def test_relpath(variant: str, task: int) -> str:
    return f"{variant}/{TASKS[task]}_test.txt"


def sample_relpath(task: int) -> str:
    return f"sample_test/en/{TASKS[task]}_test_sample.txt"


def _variants(cfg: dict[str, Any]) -> list[str]:
    value = cfg.get("variants", ["en"])
    if isinstance(value, str):
        value = [value]
    bad = [v for v in value if v not in VARIANTS]
    if bad or not value:
        raise CorefreproError(
            f"babi: variants {list(value)!r} invalid; choose from {list(VARIANTS)} "
            "(params.yaml download.babi.variants / normalize.babi.variants)"
        )
    return sorted(set(value), key=VARIANTS.index)


def _tasks(cfg: dict[str, Any]) -> list[int]:
    value = cfg.get("tasks", sorted(TASKS))
    out: set[int] = set()
    for t in [value] if isinstance(value, int | str) else value:
        s = str(t).removeprefix("qa")
        if not s.isdigit() or int(s) not in TASKS:
            raise CorefreproError(
                f"babi: task {t!r} invalid; use 1..20 or 'qa1'..'qa20' "
                "(params.yaml download.babi.tasks / normalize.babi.tasks)"
            )
        out.add(int(s))
    return sorted(out)


def _member(relpath: str) -> Archive:
    return Archive(url=ARCHIVE_URL, member=f"{ARCHIVE_ROOT}/{relpath}", sha256=ARCHIVE_SHA256)


def sources(cfg: dict[str, Any]) -> list[Source]:
    """Train files (pinned), full test files (optional, held back), test samples (optional)."""
    variants, tasks = _variants(cfg), _tasks(cfg)
    out: list[Source] = []
    for variant in variants:
        for task in tasks:
            rel = train_relpath(variant, task)
            out.append(
                Source(
                    rel,
                    TRAIN_SHA256.get((variant, task)),
                    archive=_member(rel),
                    # en-10k qa3 train is missing from the mirror (MANIFEST.md)
                    optional=(variant, task) not in TRAIN_SHA256,
                )
            )
            # full test files: held back from the mirror; no per-file hash is published
            rel = test_relpath(variant, task)
            out.append(Source(rel, None, archive=_member(rel), optional=True))
    for task in tasks:
        # the mirror's own excerpts; never downloaded (url None), used only as a fallback
        out.append(Source(sample_relpath(task), SAMPLE_SHA256[task], optional=True))
    return out


@dataclass
class _Question:
    line: int
    query: list[str]
    answer: str
    supporting: list[int]
    context_end: int


@dataclass
class _Story:
    line: int  # first line in the file
    sentences: list[list[str]] = field(default_factory=list)
    questions: list[_Question] = field(default_factory=list)


def tokenize(text: str) -> list[str]:
    """Whitespace tokens with sentence punctuation split off ("Mary?" -> "Mary", "?")."""
    return _TOKEN.findall(text)


def parse_stories(path: str | Path) -> list[_Story]:
    """Parse one bAbI task file (README.txt format) into stories; malformed lines -> DataError."""
    path = Path(path)
    stories: list[_Story] = []
    story: _Story | None = None
    prev_id = 0
    id_to_sentence: dict[int, int] = {}
    n_tokens = 0
    for lineno, line in read_lines(path):
        m = _LINE.fullmatch(line)
        if m is None:
            raise DataError(path, f"expected '<ID> <text>', found {line[:60]!r}", lineno)
        line_id, text = int(m.group(1)), m.group(2)
        if line_id == 1:
            story = _Story(line=lineno)
            stories.append(story)
            id_to_sentence, n_tokens = {}, 0
        elif story is None or line_id != prev_id + 1:
            raise DataError(
                path,
                f"line ID {line_id} does not follow ID {prev_id} "
                "(IDs count up from 1 within a story)",
                lineno,
            )
        prev_id = line_id
        if "\t" in text:
            fields = text.split("\t")
            if len(fields) != 3:
                raise DataError(
                    path,
                    f"question line needs 3 tab-separated fields (question, answer, supporting "
                    f"fact IDs), found {len(fields)}",
                    lineno,
                )
            question, answer, support = (f.strip() for f in fields)
            query = tokenize(question)
            if not query or not answer:
                raise DataError(path, "question line with an empty question or answer", lineno)
            supporting: list[int] = []
            for ref in support.split():
                if not ref.isdigit() or int(ref) not in id_to_sentence:
                    raise DataError(
                        path,
                        f"supporting fact ID {ref!r} is not an earlier statement of this story",
                        lineno,
                    )
                supporting.append(id_to_sentence[int(ref)])
            story.questions.append(_Question(lineno, query, answer, supporting, n_tokens))
        else:
            tokens = tokenize(text)
            if not tokens:
                raise DataError(path, "statement line with no text", lineno)
            id_to_sentence[line_id] = len(story.sentences)
            story.sentences.append(tokens)
            n_tokens += len(tokens)
    for s in stories:
        if not s.sentences:
            raise DataError(path, "story has no statements (only questions)", s.line)
    if not stories:  # an empty (or truncated to nothing) file would give 0 documents silently
        raise DataError(
            path, "no stories (the file is empty); fetch it again (dvc repro -f download@babi)"
        )
    return stories


def _rows(
    stories: Sequence[_Story], variant: str, task: int, source_split: str, dev: Iterable[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    dev = set(dev)
    docs: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    for index, story in enumerate(stories):
        doc_id = f"{NAME}/{variant}/qa{task}/{source_split}/{index}"
        split = "dev" if doc_id in dev else source_split
        docs.append(document_row(doc_id, split, *join_sentences(story.sentences)))
        for k, q in enumerate(story.questions):
            items.append(
                item_row(
                    f"{doc_id}/q{k}",
                    doc_id,
                    split,
                    f"qa{task}",
                    q.context_end,
                    q.query,
                    q.answer,
                    supporting=q.supporting,
                )
            )
    return docs, items


def _order(row_id: str) -> tuple[Any, ...]:
    """Natural order of babi/<variant>/qa<N>/<train|test>/<story>[/q<k>] ids."""
    parts = row_id.split("/")
    variant, task, source_split, story = parts[1], int(parts[2][2:]), parts[3], int(parts[4])
    q = int(parts[5][1:]) if len(parts) > 5 else -1
    return (VARIANTS.index(variant), task, source_split != "train", story, q)


def normalize(raw_dir: Path, cfg: dict[str, Any]) -> Normalized:
    """Stories -> documents, questions -> items; see the module docstring for the conventions."""
    with gc_paused():
        return _normalize(Path(raw_dir), cfg)


def _normalize(raw_dir: Path, cfg: dict[str, Any]) -> Normalized:
    fraction = float(cfg.get("dev_fraction", 0.1))
    seed = int(cfg.get("seed", 13))
    variants, tasks = _variants(cfg), _tasks(cfg)
    declared = {s.relpath: s for s in sources(cfg)}
    docs: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    notes: list[str] = []
    for variant in variants:
        for task in tasks:
            rel = train_relpath(variant, task)
            path = raw_dir / rel
            if path.exists():
                stories = parse_stories(path)
                ids = [f"{NAME}/{variant}/qa{task}/train/{i}" for i in range(len(stories))]
                d, it = _rows(stories, variant, task, "train", carve_dev(ids, fraction, seed))
                docs += d
                items += it
            elif declared[rel].optional:
                notes.append(
                    f"{variant} qa{task}: training file {rel} absent (not in the mirror; "
                    f"fetch it from {ARCHIVE_URL} with the network on); no train/dev data"
                )
            else:
                raise MissingSourceError(
                    f"babi: {path} missing; run the download stage with the same "
                    "variants/tasks as normalize.babi (params.yaml download.babi)"
                )
            rel = test_relpath(variant, task)
            path = raw_dir / rel
            if not path.exists():
                sample = raw_dir / sample_relpath(task)
                if sample.exists():
                    notes.append(
                        f"{variant} qa{task}: full test file {rel} absent; used the mirror's "
                        f"test sample {sample_relpath(task)} (first 10 test questions)"
                    )
                    path = sample
                else:
                    notes.append(
                        f"{variant} qa{task}: no test file ({rel} nor sample); no test data"
                    )
                    continue
            d, it = _rows(parse_stories(path), variant, task, "test", ())
            docs += d
            items += it
    docs.sort(key=lambda r: _order(r["doc_id"]))
    items.sort(key=lambda r: _order(r["item_id"]))
    return Normalized(documents=docs, items=items, notes=notes)
