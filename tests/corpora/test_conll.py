"""The shared CoNLL coreference reader: formats, bracket semantics, strictness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.core.errors import DataError
from tasks.corpora.conll import (
    ConllDocument,
    cluster_ids,
    doc_id_from_begin,
    mention_rows,
    parse_conll,
    parse_conllu,
    parse_coref_field,
)
from tests.conftest import mirror_dir


def write(tmp_path: Path, text: str, name: str = "doc.conll") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def conll2012(
    *sentences: list[tuple[str, str]],
    doc: str = "(nw/test/00/t_0001); part 000",
    speaker: str = "-",
) -> str:
    """A CoNLL-2012-style block: sentences of (word, coref)."""
    lines = [f"#begin document {doc}"]
    for sent in sentences:
        for i, (word, coref) in enumerate(sent):
            lines.append(
                f"nw/test/00/t_0001   0   {i}   {word}   NN   *   -   -   -   {speaker}   *   {coref}"
            )
        lines.append("")
    lines.append("#end document")
    return "\n".join(lines) + "\n"


def test_conll2012_brackets_sentences_and_speakers(tmp_path):
    text = conll2012(
        [("John", "(1)"), ("saw", "-"), ("his", "(2|(1)"), ("dog", "2)"), (".", "-")],
        [("It", "(2)"), ("barked", "-"), (".", "-")],
        speaker="Speaker#1",
    )
    [doc] = parse_conll(write(tmp_path, text), speaker_column=9)
    assert doc.doc_id == "nw/test/00/t_0001/part_000"
    assert doc.tokens == ["John", "saw", "his", "dog", ".", "It", "barked", "."]
    assert doc.sentence_starts == [0, 5]
    assert doc.speakers == ["Speaker#1"] * 8
    # nested "his" inside "his dog"; sorted by (start, end, label)
    assert doc.mentions == [(0, 1, "1"), (2, 3, "1"), (2, 4, "2"), (5, 6, "2")]
    assert doc.first_line == 1
    assert doc.duplicates == 0


def test_multi_token_mention_across_lines_and_same_label_nesting(tmp_path):
    # "(1" twice then "1)" twice: a stack per label, the inner closes first
    text = conll2012([("a", "(1"), ("b", "(1"), ("c", "1)"), ("d", "1)")])
    [doc] = parse_conll(write(tmp_path, text))
    assert doc.mentions == [(0, 4, "1"), (1, 3, "1")]


def test_same_span_twice_in_one_cluster_is_kept_once_and_counted(tmp_path, caplog):
    text = conll2012([("a", "(1(1"), ("b", "-"), ("c", "1)1)"), ("d", "(2)|(2)")])
    with caplog.at_level("WARNING", logger="corefrepro.conll"):
        [doc] = parse_conll(write(tmp_path, text))
    assert doc.mentions == [(0, 3, "1"), (3, 4, "2")]
    assert doc.duplicates == 2
    assert "written twice" in caplog.text


def test_same_span_in_two_clusters_is_kept(tmp_path):
    text = conll2012([("a", "(1)|(2)"), ("b", "-")])
    [doc] = parse_conll(write(tmp_path, text))
    assert doc.mentions == [(0, 1, "1"), (0, 1, "2")]


def test_gum_style_labels_and_unseparated_brackets(tmp_path):
    text = (
        "# begin document GUM_test_x\n"
        "0\tDurham\t(organization-13-Durham_University(place-14-Durham%2C_England)\n"
        "1\tUniversity\t_\n"
        "2\tin\t_\n"
        "3\tthe\t(place-10-United_Kingdom\n"
        "4\tUK\tplace-10-United_Kingdom)organization-13-Durham_University)\n"
        "# end document\n"
    )
    [doc] = parse_conll(write(tmp_path, text), token_column=1)
    assert doc.doc_id == "GUM_test_x"
    assert doc.sentence_starts == [0]
    assert doc.speakers is None
    assert doc.mentions == [
        (0, 1, "place-14-Durham%2C_England"),
        (0, 5, "organization-13-Durham_University"),
        (3, 5, "place-10-United_Kingdom"),
    ]


def test_litbank_style_empty_coref_column(tmp_path):
    blank = "\t".join(["_"] * 8)
    text = (
        "#begin document (105_x_brat); part 0\n"
        f"105_x_brat\t0\t0\tSir\t{blank}\t(0\n"
        f"105_x_brat\t0\t1\tWalter\t{blank}\t0)\n"
        f"105_x_brat\t0\t2\tslept\t{blank}\t\n"
        "\n"
        f"105_x_brat\t0\t0\tHe\t{blank}\t(0)\n"
        "#end document\n"
    )
    [doc] = parse_conll(write(tmp_path, text), coref_column=12)
    assert doc.doc_id == "105_x_brat/part_0"
    assert doc.tokens == ["Sir", "Walter", "slept", "He"]
    assert doc.sentence_starts == [0, 3]
    assert doc.mentions == [(0, 2, "0"), (3, 4, "0")]


@pytest.mark.parametrize(
    ("rest", "expected"),
    [
        (" (nw/xinhua/00/chtb_0009); part 000", "nw/xinhua/00/chtb_0009/part_000"),
        (" (LuoTestCase); ", "LuoTestCase"),
        (" (105_persuasion_brat); part 0", "105_persuasion_brat/part_0"),
        (" GUM_academic_art", "GUM_academic_art"),
        ("", "document_3"),
    ],
)
def test_doc_ids(rest, expected):
    assert doc_id_from_begin(rest, 3) == expected


def test_several_documents_in_one_file_and_first_line(tmp_path):
    one = conll2012([("a", "(1)")], doc="(d1);")
    two = conll2012([("b", "(1)")], doc="(d2);")
    docs = parse_conll(write(tmp_path, one + "\n" + two))
    assert [d.doc_id for d in docs] == ["d1", "d2"]
    assert [d.first_line for d in docs] == [1, 6]


def test_parse_coref_field():
    assert parse_coref_field("-", "f", 1) == ([], [], [])
    assert parse_coref_field("(3|(4)|5)", "f", 1) == (["4"], ["3"], ["5"])
    assert parse_coref_field("(a-1(b-2)", "f", 1) == (["b-2"], ["a-1"], [])
    with pytest.raises(DataError, match=r"f:7: malformed coreference field '12'"):
        parse_coref_field("12", "f", 7)


def test_mention_rows_number_clusters_by_first_mention():
    doc = ConllDocument("d", list("abcdef"), [0], None, [(0, 1, "9"), (2, 3, "4"), (4, 6, "9")], 1)
    assert cluster_ids(doc.mentions) == {"9": 0, "4": 1}
    rows = mention_rows("x/d", doc)
    assert [(r["start"], r["end"], r["cluster"]) for r in rows] == [(0, 1, 0), (2, 3, 1), (4, 6, 0)]
    assert {r["annotator"] for r in rows} == {"gold"}


# ---------------------------------------------------------------- malformed input


def expect_error(path: Path, line: int, match: str, **kwargs) -> None:
    with pytest.raises(DataError, match=match) as info:
        parse_conll(path, **kwargs)
    assert info.value.line == line, str(info.value)
    assert path.name in str(info.value)


def test_unclosed_bracket(tmp_path):
    path = write(tmp_path, conll2012([("a", "-"), ("b", "(7"), ("c", "-")]))
    expect_error(path, 3, r"'\(7' opens a mention that is never closed")


def test_unopened_bracket(tmp_path):
    path = write(tmp_path, conll2012([("a", "-"), ("b", "7)")]))
    expect_error(path, 3, r"'7\)' closes a mention .* never opened")


def test_too_few_columns(tmp_path):
    path = write(tmp_path, "#begin document (d);\nx 0 0\n#end document\n")
    expect_error(path, 2, "token line has 3 columns, needs at least 4")


def test_truncated_line_within_a_sentence(tmp_path):
    text = conll2012([("a", "(1)"), ("b", "-"), ("c", "-")]).splitlines()
    text[2] = "nw/test/00/t_0001   0   1   b   NN   *"  # cut after the parse column
    path = write(tmp_path, "\n".join(text) + "\n")
    expect_error(path, 3, "line has 6 columns but line 2 of the same sentence has 12")


def test_truncated_first_line_of_a_sentence_is_blamed(tmp_path):
    text = conll2012([("a", "-"), ("b", "-")]).splitlines()
    text[1] = "nw/test/00/t_0001   0   0   a   NN   *   -"
    path = write(tmp_path, "\n".join(text) + "\n")
    expect_error(path, 2, "line has only 7 columns but line 3")


def test_text_outside_a_document(tmp_path):
    path = write(tmp_path, conll2012([("a", "-")]) + "stray 0 0 word - -\n")
    expect_error(path, 5, "text outside a document")


def test_missing_end_document_is_truncation(tmp_path):
    text = conll2012([("a", "(1)"), ("b", "-")]).replace("#end document\n", "")
    path = write(tmp_path, text)
    expect_error(path, 4, "has no '#end document': truncated file")


def test_bad_utf8(tmp_path):
    path = tmp_path / "bad.conll"
    path.write_bytes(b"#begin document (d);\nd 0 0 caf\xe9 -\n#end document\n")
    expect_error(path, 2, "not valid utf-8")


def test_duplicate_document_and_nested_begin(tmp_path):
    one = conll2012([("a", "-")], doc="(d);")
    expect_error(write(tmp_path, one + one), 5, "document d appears twice")
    nested = one.replace("#end document\n", "") + one
    expect_error(write(tmp_path, nested, "n.conll"), 4, "'#begin document' inside document d")


# ---------------------------------------------------------------- reference scorer test files


def scorer_files() -> list[Path]:
    root = mirror_dir()
    folder = root / "conll_scorer_tests" / "DataFiles" if root else None
    if folder is None or not folder.is_dir():
        pytest.skip("conll_scorer_tests not in the mirror (set COREFREPRO_MIRROR)")
    return sorted(folder.iterdir())


@pytest.mark.mirror
def test_every_reference_scorer_file_parses():
    files = scorer_files()
    expected = json.loads((files[0].parent.parent / "expected.json").read_text(encoding="utf-8"))
    named = {c["key_file"] for c in expected} | {c["response_file"] for c in expected}
    assert named <= {f.name for f in files}
    assert len(expected) == 36
    total_mentions = 0
    for path in files:
        docs = parse_conll(path, token_column=None)
        assert len(docs) == 1, path.name
        doc = docs[0]
        assert doc.doc_id in {"LuoTestCase", "nw/xinhua/00/chtb_0009/part_000"}
        assert all(0 <= s < e <= len(doc.tokens) for s, e, _ in doc.mentions), path.name
        total_mentions += len(doc.mentions)
    assert total_mentions > 0
    # TC-A-9's response repeats one span ten times in cluster 3: kept once, nine counted
    [a9] = parse_conll(files[0].parent / "TC-A-9.response", token_column=None)
    assert a9.duplicates == 9
    assert a9.mentions.count((3, 7, "3")) == 1
    assert (3, 7, "1") in a9.mentions


@pytest.mark.mirror
def test_scorer_key_with_words_and_two_column_key():
    folder = scorer_files()[0].parent
    [key] = parse_conll(folder / "TC-A.key")  # 5 columns: the word is column 3
    assert key.tokens[:3] == ["a1", "a2", "junk"]
    assert key.sentence_starts == [0, 9]
    assert key.mentions[:2] == [(0, 2, "0"), (3, 7, "1")]
    # TC-B.key has only (document, coreference): a word column is an error, None reads it
    with pytest.raises(DataError, match="TC-B.key:2: token line has 2 columns") as info:
        parse_conll(folder / "TC-B.key")
    assert info.value.line == 2
    [b] = parse_conll(folder / "TC-B.key", token_column=None)
    assert set(b.tokens) == {"_"}


# ---------------------------------------------------------------- CoNLL-U (AMALGUM / GUM dep)

CONLLU = """# newdoc id = AMALGUM_news_tiny
# sent_id = AMALGUM_news_tiny-1
# text = Ann met Bo.
1\tAnn\tAnn\tPROPN\tNNP\t_\t2\tnsubj\t_\tEntity=(person-1)
2\tmet\tmeet\tVERB\tVBD\t_\t0\troot\t_\t_
3\tBo\tBo\tPROPN\tNNP\t_\t2\tobj\t_\tEntity=(person-2)|SpaceAfter=No
4\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

# sent_id = AMALGUM_news_tiny-2
# speaker = Ann
1-2\tHe's\t_\t_\t_\t_\t_\t_\t_\t_
1\tHe\the\tPRON\tPRP\t_\t3\tnsubj\t_\tEntity=(person-2)
2\t's\tbe\tAUX\tVBZ\t_\t3\tcop\t_\t_
3\tmy\tmy\tPRON\tPRP$\t_\t4\tnmod:poss\t_\tEntity=(person-3(person-1)
4\tfriend\tfriend\tNOUN\tNN\t_\t0\troot\t_\tEntity=person-3)
"""


def test_conllu_entities_multiword_and_speakers(tmp_path):
    [doc] = parse_conllu(write(tmp_path, CONLLU, "tiny.conllu"))
    assert doc.doc_id == "AMALGUM_news_tiny"
    assert doc.tokens == ["Ann", "met", "Bo", ".", "He", "'s", "my", "friend"]
    assert doc.sentence_starts == [0, 4]
    assert doc.speakers == ["-"] * 4 + ["Ann"] * 4
    assert doc.mentions == [
        (0, 1, "person-1"),
        (2, 3, "person-2"),
        (4, 5, "person-2"),
        (6, 7, "person-1"),
        (6, 8, "person-3"),
    ]


def test_conllu_errors(tmp_path):
    short = CONLLU.replace("2\tmet\tmeet\tVERB\tVBD\t_\t0\troot\t_\t_", "2\tmet\tmeet")
    with pytest.raises(DataError, match="needs 10") as info:
        parse_conllu(write(tmp_path, short, "short.conllu"))
    assert info.value.line == 5
    unclosed = CONLLU.replace("Entity=person-3)", "_")
    with pytest.raises(
        DataError, match=r"'\(person-3' opens a mention that is never closed"
    ) as info:
        parse_conllu(write(tmp_path, unclosed, "unclosed.conllu"))
    assert info.value.line == 14
