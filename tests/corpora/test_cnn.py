"""CNN cloze reader on a small hand-made cnn.tgz in the real .question layout, and bad input."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from tasks.core.errors import DataError, MissingSourceError
from tasks.core.fetch import fetch_source
from tasks.core.storage import to_table
from tasks.corpora import cnn


def question(
    context: str,
    query: str,
    answer: str,
    entities: dict[int, str],
    url: str = "http://web.archive.org/web/2015/http://www.cnn.com/2015/story",
) -> bytes:
    """A .question file as deepmind/rc-data writes it: URL, context, query, answer, mapping."""
    mapping = "\n".join(f"@entity{n}:{name}" for n, name in entities.items())
    return f"{url}\n\n{context}\n\n{query}\n\n{answer}\n\n{mapping}\n".encode()


GOOD = {
    # deliberately not in name order: the reader must sort by member name
    "cnn/questions/training/f00d.question": question(
        "( @entity10 ) -- @entity2 met @entity0 in @entity10 . they spoke ! did it help ?",
        "@placeholder met @entity0 in @entity10",
        "@entity2",
        {10: "Paris", 2: "Barack Obama", 0: "Angela Merkel"},
    ),
    "cnn/questions/training/0abc.question": question(
        "@entity1 won the match . @entity3 lost",
        "@placeholder won the match",
        "@entity1",
        {1: "Federer", 3: "Nadal"},
    ),
    "cnn/questions/validation/1234.question": question(
        "@entity0 said : it works .",
        "@placeholder said it works",
        "@entity0",
        {0: "Name: with colon"},
    ),
    "cnn/questions/test/beef.question": question(
        "@entity5 flew to @entity7 .", "@entity5 flew to @placeholder", "@entity7", {5: "A", 7: "B"}
    ),
}


def make_tgz(path: Path, members: dict[str, bytes], extra_dirs: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tf:
        if extra_dirs:
            for d in ("cnn", "cnn/questions", "cnn/questions/training"):
                info = tarfile.TarInfo(d)
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    make_tgz(tmp_path / "raw" / cnn.ARCHIVE, GOOD)
    return tmp_path / "raw"


def test_normalize_small_archive(raw: Path):
    out = cnn.normalize(raw, {})
    docs = to_table("documents", out.documents)
    items = to_table("items", out.items)
    assert docs.num_rows == items.num_rows == 4
    assert [d["doc_id"] for d in out.documents] == [
        "cnn/train/0abc",
        "cnn/train/f00d",
        "cnn/dev/1234",
        "cnn/test/beef",
    ]
    assert [i["split"] for i in out.items] == ["train", "train", "dev", "test"]
    assert [i["item_id"] for i in out.items] == [i["doc_id"] for i in out.items]
    doc, item = out.documents[1], out.items[1]
    assert doc["tokens"][:6] == ["(", "@entity10", ")", "--", "@entity2", "met"]
    # sentence-final ". ! ?" tokens end sentences; none starts past the last token
    assert doc["sentence_starts"] == [0, 10, 13]
    assert item["query"] == ["@placeholder", "met", "@entity0", "in", "@entity10"]
    assert item["answer"] == "@entity2"
    assert item["candidates"] == ["@entity0", "@entity2", "@entity10"]  # by entity number
    assert item["context_end"] == len(doc["tokens"])
    assert item["task"] == "cnn" and item["supporting"] is None
    assert out.documents[0]["sentence_starts"] == [0, 5]  # no final punctuation
    assert out.items[2]["candidates"] == ["@entity0"]  # a name containing ':' is fine
    assert out.notes == []


def test_max_items_keeps_first_names_per_split(raw: Path):
    out = cnn.normalize(raw, {"max_items": 1})
    assert [d["doc_id"] for d in out.documents] == [
        "cnn/train/0abc",
        "cnn/dev/1234",
        "cnn/test/beef",
    ]
    assert out.notes == ["max_items=1: kept the first 1 of 2 train questions (by file name)"]


def test_deterministic_whatever_the_archive_order(tmp_path: Path):
    a = cnn.normalize(make_tgz(tmp_path / "a" / cnn.ARCHIVE, GOOD).parent, {})
    reordered = dict(reversed(list(GOOD.items())))
    b = cnn.normalize(make_tgz(tmp_path / "b" / cnn.ARCHIVE, reordered, False).parent, {})
    assert a.documents == b.documents and a.items == b.items


def test_other_members_are_counted_not_silently_dropped(tmp_path: Path):
    members = {**GOOD, "cnn/questions/README": b"x", "cnn/stories/1.story": b"y"}
    out = cnn.normalize(make_tgz(tmp_path / cnn.ARCHIVE, members).parent, {})
    assert len(out.documents) == 4
    assert out.notes == [
        "2 archive members are not cnn/questions/<split>/*.question files and were skipped "
        "(first: cnn/questions/README)"
    ]


def _good(**change: str) -> dict:
    parts = {
        "context": "@entity0 met @entity1 .",
        "query": "@placeholder met @entity1",
        "answer": "@entity0",
    }
    parts.update(change)
    return parts


MEMBER = "cnn/questions/training/bad1.question"
OK = question(**_good(), entities={0: "A", 1: "B"})


@pytest.mark.parametrize(
    ("data", "line", "message"),
    [
        # the answer line is missing: line 7 holds the blank that followed it
        (
            OK.replace(b"@entity0\n\n@entity0:A", b"\n@entity0:A"),
            7,
            "expected the answer as @entityN",
        ),
        # answer and the blank after it missing: line 7 is a mapping line
        (
            OK.replace(b"@entity0\n\n@entity0:A", b"@entity0:A"),
            7,
            "expected the answer as @entityN",
        ),
        # truncated after the question
        (OK.split(b"@entity0\n\n@entity0:A")[0].rstrip(b"\n") + b"\n", 6, "file ends before"),
        (
            OK.replace(b"@entity0 met @entity1 .", b"@entity0 m\xe9t @entity1 ."),
            3,
            "not valid utf-8",
        ),
        (OK.replace(b"@placeholder met", b"@entity0 met"), 5, "no @placeholder"),
        (OK.replace(b"\n@entity1:B", b"\nentity1 B"), 10, "expected '@entityN:name'"),
        (OK.replace(b"\n@entity1:B", b"\n@entity0:B"), 10, "@entity0 mapped twice"),
        (
            OK.replace(b"\n\n@entity0:A\n@entity1:B\n", b"\n"),
            9,
            "file ends before the entity mapping",
        ),
        (OK.replace(b"@entity0:A\n", b""), 7, "answer @entity0 is not in the entity mapping"),
        (OK.replace(b".\n\n@placeholder", b".\nx\n@placeholder"), 4, "expected a blank line"),
    ],
)
def test_malformed_question_names_member_and_line(
    tmp_path: Path, data: bytes, line: int, message: str
):
    path = make_tgz(tmp_path / cnn.ARCHIVE, {**GOOD, MEMBER: data})
    with pytest.raises(DataError) as err:
        cnn.normalize(tmp_path, {})
    assert err.value.path == f"{path}!{MEMBER}" and err.value.line == line
    assert f"bad1.question:{line}:" in str(err.value) and message in str(err.value)


def test_truncated_archive_is_a_data_error(tmp_path: Path):
    path = make_tgz(tmp_path / cnn.ARCHIVE, GOOD)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(DataError, match=r"cnn\.tgz: archive is truncated or corrupt"):
        cnn.normalize(tmp_path, {})


def test_duplicate_member_is_a_data_error(tmp_path: Path):
    members = {
        **GOOD,
        "./cnn/questions/training/0abc.question": GOOD["cnn/questions/training/0abc.question"],
    }
    make_tgz(tmp_path / cnn.ARCHIVE, members)
    with pytest.raises(DataError, match=r"0abc\.question: duplicate"):
        cnn.normalize(tmp_path, {})


def test_sources_declare_the_archive():
    (src,) = cnn.sources({})
    assert src.relpath == "cnn.tgz" and not src.optional
    assert src.sha256 == "9405beb90c9267e7769c86fa42720b7e479bcf38c64217c0d3f456ce8cd122ce"
    assert "0BwmD_VLjROrfTTljRDVZMFJnVWM" in src.url


def test_fetch_without_mirror_or_network_names_file_and_setting(tmp_path: Path):
    (src,) = cnn.sources({})
    with pytest.raises(MissingSourceError) as err:
        fetch_source(src, cnn.NAME, tmp_path / "raw", mirror=None, mirror_dir=cnn.MIRROR_DIR,
                     network=False, cache_dir=tmp_path / "cache")  # fmt: skip
    msg = str(err.value)
    assert "cnn.tgz" in msg and "download.mirror" in msg and "network disabled" in msg
    assert not (tmp_path / "raw" / "cnn.tgz").exists()


def test_fetch_from_a_mirror_checks_the_pinned_hash(tmp_path: Path):
    """A mirror copy that is not the published archive is refused, not used."""
    from tasks.core.errors import ChecksumError

    make_tgz(tmp_path / "mirror" / cnn.MIRROR_DIR / cnn.ARCHIVE, GOOD)
    (src,) = cnn.sources({})
    with pytest.raises(ChecksumError):
        fetch_source(src, cnn.NAME, tmp_path / "raw", mirror=str(tmp_path / "mirror"),
                     mirror_dir=cnn.MIRROR_DIR, network=False, cache_dir=tmp_path / "cache")  # fmt: skip
    assert not (tmp_path / "raw" / "cnn.tgz").exists()


def test_normalize_without_archive(tmp_path: Path):
    with pytest.raises(MissingSourceError, match=r"cnn\.tgz missing.*download"):
        cnn.normalize(tmp_path, {})
