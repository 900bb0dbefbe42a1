"""OntoNotes / CoNLL-2012: never downloaded; a user directory in the standard layout is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.core.errors import DataError, MissingSourceError
from tasks.core.fetch import fetch_source
from tasks.core.storage import check_mentions_in_range, to_table
from tasks.corpora import ontonotes

# A hand-written file in the *_gold_conll layout (text invented for the test): two parts,
# speakers in column 9, a variable number of predicate-argument columns per sentence.
TRAIN_FILE = """#begin document (bc/test/00/test_0001); part 000
bc/test/00/test_0001   0   0   Did      VBD  (TOP(SQ*   do     -   -   Speaker#1   *   (V*)   -
bc/test/00/test_0001   0   1   you      PRP  (NP*)      -      -   -   Speaker#1   *   (ARG0*)   (12)
bc/test/00/test_0001   0   2   see      VB   (VP*       see    01  1   Speaker#1   *   *   -
bc/test/00/test_0001   0   3   Maria    NNP  (NP*)))    -      -   -   Speaker#1   (PERSON)   (ARG1*)   (7)

bc/test/00/test_0001   0   0   I        PRP  (TOP(S(NP*) -     -   -   Speaker#2   *   (12)
bc/test/00/test_0001   0   1   saw      VBD  (VP*       see    01  1   Speaker#2   *   -
bc/test/00/test_0001   0   2   her      PRP  (NP*)))    -      -   -   Speaker#2   *   (7)

#end document
#begin document (bc/test/00/test_0001); part 001
bc/test/00/test_0001   1   0   She      PRP  (TOP(S(NP*) -     -   -   Speaker#1   *   (7)
bc/test/00/test_0001   1   1   left     VBD  (VP*)))    leave  01  1   Speaker#1   *   -

#end document
"""

TEST_FILE = """#begin document (nw/wsj/00/wsj_0002); part 000
nw/wsj/00/wsj_0002   0   0   The      DT   (TOP(S(NP*    -   -   -   -   *   (3
nw/wsj/00/wsj_0002   0   1   firm     NN   *)            -   -   -   -   *   3)
nw/wsj/00/wsj_0002   0   2   said     VBD  (VP*          say 01  1   -   *   -
nw/wsj/00/wsj_0002   0   3   its      PRP$ (NP*          -   -   -   -   *   (3)
nw/wsj/00/wsj_0002   0   4   profit   NN   *)))          -   -   -   -   *   -

#end document
"""


def make_user_dir(root: Path) -> Path:
    base = root / "conll-2012" / "v4" / "data"
    files = {
        base / "train/data/english/annotations/bc/test/00/test_0001.v4_gold_conll": TRAIN_FILE,
        base / "test/data/english/annotations/nw/wsj/00/wsj_0002.v4_gold_conll": TEST_FILE,
        base / "train/data/chinese/annotations/bc/zh/00/zh_0001.v4_gold_conll": TEST_FILE,
        base / "train/data/english/annotations/bc/test/00/test_0001.v4_auto_conll": TEST_FILE,
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "conll-2012"


def test_without_path_says_where_the_data_comes_from():
    for cfg in ({}, {"path": None}, {"path": ""}):
        with pytest.raises(MissingSourceError, match=r"download\.ontonotes\.path.*LDC2013T19"):
            ontonotes.sources(cfg)


def test_path_must_hold_gold_files(tmp_path):
    with pytest.raises(MissingSourceError, match="not a directory"):
        ontonotes.sources({"path": str(tmp_path / "nope")})
    with pytest.raises(MissingSourceError, match="no \\*_gold_conll files"):
        ontonotes.sources({"path": str(tmp_path)})


def test_sources_fetch_and_normalize(tmp_path):
    user = make_user_dir(tmp_path / "user")
    srcs = ontonotes.sources({"path": str(user)})
    assert [s.relpath for s in srcs] == [
        "v4/data/test/data/english/annotations/nw/wsj/00/wsj_0002.v4_gold_conll",
        "v4/data/train/data/english/annotations/bc/test/00/test_0001.v4_gold_conll",
    ]
    assert all(s.sha256 is None and s.url.startswith("file://") and not s.optional for s in srcs)
    raw = tmp_path / "raw"
    for src in srcs:
        # file:// URLs are copied by _fetch_url; no network traffic happens
        fetch_source(
            src,
            ontonotes.NAME,
            raw,
            mirror=None,
            mirror_dir=ontonotes.MIRROR_DIR,
            network=True,
            cache_dir=tmp_path / "cache",
        )
    norm = ontonotes.normalize(raw, {})
    docs = to_table("documents", norm.documents)
    mentions = to_table("mentions", norm.mentions)
    check_mentions_in_range(docs, mentions)
    by_id = {d["doc_id"]: d for d in norm.documents}
    assert sorted(by_id) == [
        "ontonotes/bc/test/00/test_0001/part_000",
        "ontonotes/bc/test/00/test_0001/part_001",
        "ontonotes/nw/wsj/00/wsj_0002/part_000",
    ]
    p0 = by_id["ontonotes/bc/test/00/test_0001/part_000"]
    assert (p0["split"], p0["genre"]) == ("train", "bc")
    assert p0["tokens"] == ["Did", "you", "see", "Maria", "I", "saw", "her"]
    assert p0["sentence_starts"] == [0, 4]
    assert p0["speakers"] == ["Speaker#1"] * 4 + ["Speaker#2"] * 3
    m0 = [
        (m["start"], m["end"], m["cluster"]) for m in norm.mentions if m["doc_id"] == p0["doc_id"]
    ]
    assert m0 == [(1, 2, 0), (3, 4, 1), (4, 5, 0), (6, 7, 1)]  # you=I, Maria=her
    wsj = by_id["ontonotes/nw/wsj/00/wsj_0002/part_000"]
    assert (wsj["split"], wsj["genre"]) == ("test", "nw")
    mw = [
        (m["start"], m["end"], m["cluster"]) for m in norm.mentions if m["doc_id"] == wsj["doc_id"]
    ]
    assert mw == [(0, 2, 0), (3, 4, 0)]


def test_language_filter(tmp_path):
    user = make_user_dir(tmp_path / "user")
    zh = ontonotes.sources({"path": str(user), "language": "chinese"})
    assert [s.relpath for s in zh] == [
        "v4/data/train/data/chinese/annotations/bc/zh/00/zh_0001.v4_gold_conll"
    ]


def test_split_from_path_is_required(tmp_path):
    path = tmp_path / "misc" / "x.v4_gold_conll"
    path.parent.mkdir()
    path.write_text(TEST_FILE, encoding="utf-8")
    with pytest.raises(DataError, match="cannot tell the split"):
        ontonotes.normalize(tmp_path, {})


def test_truncated_ontonotes_line(tmp_path):
    lines = TEST_FILE.splitlines()
    lines[3] = "nw/wsj/00/wsj_0002   0   2   said     VBD  (VP*"
    path = tmp_path / "data" / "train" / "x.v4_gold_conll"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        DataError, match=r"x.v4_gold_conll:4: token line has 6 columns, needs at least 10"
    ) as info:
        ontonotes.normalize(tmp_path, {})
    assert info.value.line == 4
