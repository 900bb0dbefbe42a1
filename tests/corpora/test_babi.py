"""bAbI v1.2 reader: real-mirror counts (MANIFEST.md + published story counts) and bad input."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tasks.core.errors import CorefreproError, DataError, MissingSourceError
from tasks.core.fetch import fetch_source
from tasks.core.storage import to_table
from tasks.corpora import babi
from tests.corpora.conftest import fetch_and_normalize

# Stories per training file as published by HuggingFace datasets (babi_qa README.md,
# dataset_info splits.train.num_examples; one example = one story) -- an independent count.
STORIES_EN = {1: 200, 2: 200, 3: 200, 4: 1000, 5: 200, 6: 200, 7: 200, 8: 200, 9: 200,
              10: 200, 11: 200, 12: 200, 13: 200, 14: 200, 15: 250, 16: 1000, 17: 125,
              18: 198, 19: 1000, 20: 94}  # fmt: skip
STORIES_EN10K = {1: 2000, 2: 2000, 4: 10000, 5: 2000, 6: 2000, 7: 2000, 8: 2000, 9: 2000,
                 10: 2000, 11: 2000, 12: 2000, 13: 2000, 14: 2000, 15: 2500, 16: 10000,
                 17: 1250, 18: 1978, 19: 10000, 20: 933}  # fmt: skip


def _task_split(rows: list[dict], id_key: str) -> Counter:
    """(variant, task, split) -> count, from ids babi/<variant>/qa<N>/... and the split column."""
    out: Counter = Counter()
    for r in rows:
        _, variant, task = r[id_key].split("/")[:3]
        out[variant, int(task[2:]), r["split"]] += 1
    return out


@pytest.fixture(scope="module")
def en(mirror_session: Path, tmp_path_factory: pytest.TempPathFactory):
    got = fetch_and_normalize(babi, mirror_session, tmp_path_factory.mktemp("babi_en"))
    return got.raw, got.out, got.documents, got.items


@pytest.fixture(scope="module")
def en10k(mirror_session: Path, tmp_path_factory: pytest.TempPathFactory):
    cfg = {"variants": ["en-10k"]}
    got = fetch_and_normalize(babi, mirror_session, tmp_path_factory.mktemp("babi_en10k"), cfg)
    return got.raw, got.out, got.documents, got.items


# ---------------------------------------------------------------- real mirror


@pytest.mark.mirror
def test_sources_pin_the_manifest(mirror_session: Path):
    """Every mirrored file declared (both variants) with the MANIFEST's sha256, and vice versa."""
    manifest = (mirror_session / babi.MIRROR_DIR / "MANIFEST.md").read_text(encoding="utf-8")
    pinned = dict(
        re.findall(
            r"^\| ((?:en|en-10k|sample_test)/\S+) \| .*? \| ([0-9a-f]{64}) \|", manifest, re.M
        )
    )
    assert len(pinned) == 59  # 20 en + 19 en-10k train files + 20 samples
    srcs = babi.sources({"variants": ["en", "en-10k"]})
    declared = {s.relpath: s for s in srcs}
    assert len(declared) == len(srcs)  # no duplicates (samples shared by the variants)
    for rel, sha in pinned.items():
        assert declared[rel].sha256 == sha, rel
    missing = declared["en-10k/qa3_three-supporting-facts_train.txt"]
    assert missing.optional and missing.sha256 is None
    assert missing.archive.member == "tasks_1-20_v1-2/en-10k/qa3_three-supporting-facts_train.txt"
    for s in srcs:
        if s.relpath.startswith("sample_test/"):
            assert s.optional and s.url is None and s.archive is None
        else:
            assert s.archive.url == babi.ARCHIVE_URL and s.archive.sha256 == babi.ARCHIVE_SHA256
            assert s.optional == (s.relpath.endswith("_test.txt") or s.sha256 is None)


@pytest.mark.mirror
def test_en_counts_match_manifest(en):
    _, out, docs, items = en
    assert items.num_rows == 20 * 1000 + 200
    per = _task_split(out.items, "item_id")
    for task in range(1, 21):
        # MANIFEST: 1000 questions per en train file; 10 per test sample
        assert per["en", task, "train"] + per["en", task, "dev"] == 1000, task
        assert per["en", task, "test"] == 10, task
    stories = _task_split(out.documents, "doc_id")
    for task, n in STORIES_EN.items():
        dev = stories["en", task, "dev"]
        assert stories["en", task, "train"] + dev == n, task
        assert dev == round(0.1 * n), task  # ~10 % of the stories carved as dev
    assert docs.num_rows == sum(STORIES_EN.values()) + sum(
        v for (_, _, s), v in stories.items() if s == "test"
    )
    # the full test files are held back, so every task used its sample, each with a note
    assert sum("used the mirror's test sample" in n for n in out.notes) == 20


@pytest.mark.mirror
def test_en_first_story_of_qa1(en):
    _, out, _, _ = en
    doc = next(d for d in out.documents if d["doc_id"] == "babi/en/qa1/train/0")
    # 1 Mary moved to the bathroom. / 2 John went to the hallway. / 3 Where is Mary? ...
    first = ["Mary", "moved", "to", "the", "bathroom", ".", "John", "went", "to", "the", "hallway"]
    assert doc["tokens"][:12] == [*first, "."]
    assert doc["sentence_starts"][:3] == [0, 6, 12]
    assert len(doc["sentence_starts"]) == 10  # 15 lines, 5 of them questions
    qs = [i for i in out.items if i["doc_id"] == "babi/en/qa1/train/0"]
    assert [q["item_id"] for q in qs] == [f"babi/en/qa1/train/0/q{k}" for k in range(5)]
    assert qs[0]["query"] == ["Where", "is", "Mary", "?"]
    assert (qs[0]["answer"], qs[0]["context_end"], qs[0]["supporting"]) == ("bathroom", 12, [0])
    # "6 Where is Daniel? hallway 4": line 4 is the 3rd statement (line 3 was a question)
    assert (qs[1]["answer"], qs[1]["context_end"], qs[1]["supporting"]) == ("hallway", 25, [2])
    assert all(q["task"] == "qa1" and q["candidates"] is None for q in qs)


@pytest.mark.mirror
def test_en_items_consistent_with_documents(en):
    _, out, _, _ = en
    docs = {d["doc_id"]: d for d in out.documents}
    for item in out.items:
        doc = docs[item["doc_id"]]
        assert item["split"] == doc["split"]
        assert 0 < item["context_end"] <= len(doc["tokens"])
        ends = {*doc["sentence_starts"], len(doc["tokens"])}
        assert item["context_end"] in ends  # questions come between statements
        # a supporting statement was seen before the question
        for s in item["supporting"]:
            assert doc["sentence_starts"][s] < item["context_end"]
    # multi-word answers of tasks 8 and 19 kept as in the file
    answers = {i["task"]: set() for i in out.items}
    for i in out.items:
        answers[i["task"]].add(i["answer"])
    assert "football,apple" in answers["qa8"]  # sample_test qa8 line 16
    assert any(re.fullmatch(r"[nsew],[nsew]", a) for a in answers["qa19"])
    assert not any(
        "," in a for t, a_set in answers.items() if t not in ("qa8", "qa19") for a in a_set
    )


@pytest.mark.mirror
def test_en_deterministic_and_seeded(en):
    raw, out, _, _ = en
    cfg = {"tasks": [1, 8]}
    again = babi.normalize(raw, cfg)
    ids = [d["doc_id"] for d in out.documents if d["doc_id"].split("/")[2] in ("qa1", "qa8")]
    assert [d["doc_id"] for d in again.documents] == ids
    assert again.documents == [d for d in out.documents if d["doc_id"] in set(ids)]
    other = babi.normalize(raw, {"tasks": [1], "seed": 14})
    dev = {d["doc_id"] for d in out.documents if d["split"] == "dev" and "/qa1/" in d["doc_id"]}
    dev14 = {d["doc_id"] for d in other.documents if d["split"] == "dev"}
    assert len(dev14) == len(dev) == 20 and dev14 != dev


@pytest.mark.mirror
def test_en10k_counts_match_manifest(en10k):
    _, out, docs, items = en10k
    per = _task_split(out.items, "item_id")
    stories = _task_split(out.documents, "doc_id")
    for task in range(1, 21):
        train_q = per["en-10k", task, "train"] + per["en-10k", task, "dev"]
        # MANIFEST: 10000 questions per en-10k train file; qa3's train file is missing
        assert train_q == (0 if task == 3 else 10000), task
        assert per["en-10k", task, "test"] == 10, task  # en/ samples stand in (identical tests)
    for task, n in STORIES_EN10K.items():
        assert stories["en-10k", task, "train"] + stories["en-10k", task, "dev"] == n, task
    assert items.num_rows == 19 * 10000 + 200
    assert docs.num_rows == sum(STORIES_EN10K.values()) + sum(
        v for (_, _, s), v in stories.items() if s == "test"
    )
    qa3 = [n for n in out.notes if n.startswith("en-10k qa3: training file")]
    assert len(qa3) == 1 and "absent" in qa3[0]


# ---------------------------------------------------------------- small hand-made files

STORY = (
    "1 Mary moved to the bathroom.\n"
    "2 John went to the hallway.\n"
    "3 Where is Mary? \tbathroom\t1\n"
    "4 Daniel went back to the hallway.\n"
    "5 Where is Daniel? \thallway\t4\n"
    "1 Sandra travelled to the office.\n"
    "2 Where is Sandra? \toffice\t1\n"
)


def _write(raw: Path, rel: str, content: str | bytes) -> Path:
    path = raw / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


CFG = {"tasks": [1]}


def test_normalize_small_file(tmp_path: Path):
    _write(tmp_path, babi.train_relpath("en", 1), STORY)
    _write(tmp_path, babi.test_relpath("en", 1), STORY)
    _write(tmp_path, babi.sample_relpath(1), STORY.split("1 Sandra")[0])
    out = babi.normalize(tmp_path, {**CFG, "dev_fraction": 0.5})
    splits = [(d["doc_id"], d["split"]) for d in out.documents]
    assert [s for _, s in splits].count("dev") == 1  # one of the two training stories
    assert [d for d, s in splits if s == "test"] == ["babi/en/qa1/test/0", "babi/en/qa1/test/1"]
    test_items = [i for i in out.items if i["split"] == "test"]
    # the full test file wins over the sample, without a note
    assert len(test_items) == 3 and out.notes == []
    q = test_items[1]
    assert q["query"] == ["Where", "is", "Daniel", "?"]
    assert (q["context_end"], q["supporting"]) == (19, [2])  # 6 + 6 + 7 tokens
    doc = out.documents[0]
    assert doc["sentence_starts"] == [0, 6, 12]
    to_table("documents", out.documents)
    to_table("items", out.items)


def test_sample_used_only_when_full_test_absent(tmp_path: Path):
    _write(tmp_path, babi.train_relpath("en", 1), STORY)
    _write(tmp_path, babi.sample_relpath(1), STORY.split("1 Sandra")[0])
    out = babi.normalize(tmp_path, CFG)
    assert sum(i["split"] == "test" for i in out.items) == 2
    assert len(out.notes) == 1 and babi.sample_relpath(1) in out.notes[0]
    (tmp_path / babi.sample_relpath(1)).unlink()
    out = babi.normalize(tmp_path, CFG)
    assert not any(i["split"] == "test" for i in out.items)
    assert "no test file" in out.notes[0]


def test_an_empty_test_file_is_an_error_naming_it(tmp_path: Path):
    """Issue #14.4: an empty full test file gave 0 test documents and no error."""
    _write(tmp_path, babi.train_relpath("en", 1), STORY)
    empty = _write(tmp_path, babi.test_relpath("en", 1), "")
    with pytest.raises(DataError, match=re.escape(f"{empty}: no stories (the file is empty)")):
        babi.normalize(tmp_path, CFG)


def test_missing_required_train_file(tmp_path: Path):
    with pytest.raises(
        MissingSourceError, match=r"qa1_single-supporting-fact_train\.txt.*download\.babi"
    ):
        babi.normalize(tmp_path, CFG)


def test_missing_optional_en10k_qa3_is_a_note(tmp_path: Path):
    out = babi.normalize(tmp_path, {"variants": ["en-10k"], "tasks": [3]})
    assert out.documents == [] and len(out.notes) == 2
    assert "qa3_three-supporting-facts_train.txt absent" in out.notes[0]


def test_fetch_without_mirror_or_network_names_file_and_setting(tmp_path: Path):
    src = babi.sources(CFG)[0]
    with pytest.raises(
        MissingSourceError, match=r"en/qa1_single-supporting-fact_train\.txt.*download\.mirror"
    ):
        fetch_source(src, babi.NAME, tmp_path / "raw", mirror=None, mirror_dir=babi.MIRROR_DIR,
                     network=False, cache_dir=tmp_path / "cache")  # fmt: skip


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (STORY.replace("John went", "John w\xe9nt").encode("latin-1"), 2, "not valid utf-8"),
        (STORY.replace("\thallway\t4", "\thallway"), 5, "3 tab-separated fields"),
        (STORY.replace("4 Daniel", "6 Daniel"), 4, "line ID 6 does not follow ID 3"),
        (STORY.replace("\thallway\t4", "\thallway\t3"), 5, "'3' is not an earlier statement"),
        (STORY.replace("\tbathroom\t1", "\tbathroom\t4"), 3, "'4' is not an earlier statement"),
        (STORY.replace("4 Daniel went", "Daniel went"), 4, "expected '<ID> <text>'"),
        (
            STORY.replace("4 Daniel went back to the hallway.", "4 "),
            4,
            "statement line with no text",
        ),
        (STORY.replace("\toffice\t1", "\t\t1"), 7, "empty question or answer"),
        ("2 Mary moved.\n", 1, "line ID 2 does not follow ID 0"),
        ("1 Where is Mary? \tbathroom\t\n", 1, "story has no statements"),
    ],
)
def test_malformed_input_names_file_and_line(tmp_path: Path, content, line, message):
    path = _write(tmp_path, babi.train_relpath("en", 1), content)
    with pytest.raises(DataError) as err:
        babi.normalize(tmp_path, CFG)
    assert err.value.path == str(path) and err.value.line == line
    assert f"{path.name}:{line}:" in str(err.value) and message in str(err.value)


def test_bad_config():
    with pytest.raises(CorefreproError, match="variants"):
        babi.sources({"variants": ["hn"]})
    with pytest.raises(CorefreproError, match="task 21"):
        babi.sources({"tasks": [21]})
    first = babi.sources({"tasks": ["qa2"]})[0]
    assert first.relpath == "en/qa2_two-supporting-facts_train.txt"


def test_tokenize_keeps_case_and_splits_punctuation():
    words = ["How", "do", "you", "go", "from", "the", "kitchen", "to", "the", "garden", "?"]
    assert babi.tokenize("How do you go from the kitchen to the garden?") == words
    assert babi.tokenize("Mary, John went.") == ["Mary", ",", "John", "went", "."]
