"""AMALGUM: sources at a pinned commit; a tiny hand-made file in its CoNLL-U format normalizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.core.errors import CorefreproError, DataError
from tasks.core.storage import check_mentions_in_range, to_table
from tasks.corpora import amalgum

# Hand-made, in the layout of amalgum/<genre>/dep/*.conllu (text invented for the test).
TINY = """# newdoc id = AMALGUM_{genre}_{x}
# sent_id = AMALGUM_{genre}_{x}-1
# text = Lena fixed her bike.
1\tLena\tLena\tPROPN\tNNP\tNumber=Sing\t2\tnsubj\t2:nsubj\tDiscourse=ROOT:1|Entity=(person-1)
2\tfixed\tfix\tVERB\tVBD\t_\t0\troot\t0:root\t_
3\ther\tshe\tPRON\tPRP$\t_\t4\tnmod:poss\t4:nmod:poss\tEntity=(object-2(person-1)
4\tbike\tbike\tNOUN\tNN\tNumber=Sing\t2\tobj\t2:obj\tEntity=object-2)|SpaceAfter=No
5\t.\t.\tPUNCT\t.\t_\t2\tpunct\t2:punct\t_

# sent_id = AMALGUM_{genre}_{x}-2
# text = It works.
1\tIt\tit\tPRON\tPRP\t_\t2\tnsubj\t2:nsubj\tEntity=(object-2)
2\tworks\twork\tVERB\tVBZ\t_\t0\troot\t0:root\tSpaceAfter=No
3\t.\t.\tPUNCT\t.\t_\t2\tpunct\t2:punct\t_
"""


def write_doc(raw: Path, genre: str, x: str, text: str | None = None) -> Path:
    name = f"AMALGUM_{genre}_{x}"
    path = raw / amalgum.relpath(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text is not None else TINY.format(genre=genre, x=x), encoding="utf-8")
    return path


def test_sources_default_and_configured():
    srcs = amalgum.sources({})
    assert len(srcs) == len(amalgum.DEFAULT_DOCUMENTS)
    assert all(s.sha256 is None and s.optional for s in srcs)
    first = srcs[0]
    assert first.relpath == "amalgum/academic/dep/AMALGUM_academic_adder.conllu"
    assert first.url == (
        f"https://raw.githubusercontent.com/gucorpling/amalgum/{amalgum.COMMIT}/amalgum/academic/dep/"
        "AMALGUM_academic_adder.conllu"
    )
    mine = amalgum.sources(
        {"documents": ["AMALGUM_news_khadr"], "commit": "abc", "optional": False}
    )
    assert [(s.relpath, s.url.split("/")[5], s.optional) for s in mine] == [
        ("amalgum/news/dep/AMALGUM_news_khadr.conllu", "abc", False)
    ]
    with pytest.raises(CorefreproError, match="unexpected document name"):
        amalgum.sources({"documents": ["GUM_news_khadr"]})


def test_normalize_tiny_files(tmp_path):
    for i in range(10):
        write_doc(tmp_path, "news" if i % 2 else "fiction", f"doc{i}")
    norm = amalgum.normalize(tmp_path, {"dev_fraction": 0.2, "seed": 3})
    docs = to_table("documents", norm.documents)
    mentions = to_table("mentions", norm.mentions)
    check_mentions_in_range(docs, mentions)
    assert docs.num_rows == 10
    assert sorted(d["split"] for d in norm.documents).count("dev") == 2
    assert {d["split"] for d in norm.documents} == {"train", "dev"}
    d0 = next(d for d in norm.documents if d["doc_id"] == "amalgum/AMALGUM_fiction_doc0")
    assert d0["genre"] == "fiction"
    assert d0["tokens"] == ["Lena", "fixed", "her", "bike", ".", "It", "works", "."]
    assert d0["sentence_starts"] == [0, 5]
    assert d0["speakers"] is None
    m0 = [
        (m["start"], m["end"], m["cluster"]) for m in norm.mentions if m["doc_id"] == d0["doc_id"]
    ]
    assert m0 == [(0, 1, 0), (2, 3, 0), (2, 4, 1), (5, 6, 1)]
    assert any("AUTOMATIC" in n for n in norm.notes)
    again = amalgum.normalize(tmp_path, {"dev_fraction": 0.2, "seed": 3})
    assert again.documents == norm.documents and again.mentions == norm.mentions


def test_no_documents_and_malformed(tmp_path):
    with pytest.raises(CorefreproError, match="no documents"):
        amalgum.normalize(tmp_path, {})
    bad = TINY.format(genre="news", x="bad").replace(
        "Entity=object-2)|SpaceAfter=No", "SpaceAfter=No"
    )
    write_doc(tmp_path, "news", "bad", bad)
    with pytest.raises(
        DataError,
        match=r"AMALGUM_news_bad.conllu:6: '\(object-2' opens a mention that is never closed",
    ):
        amalgum.normalize(tmp_path, {})
