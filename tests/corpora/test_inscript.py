"""InScript reader: MANIFEST counts on the real mirror, mention semantics on a hand-written
story, and malformed XML / split files that must fail with file and line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tasks.core.errors import DataError, MissingSourceError
from tasks.core.storage import check_mentions_in_range, to_table
from tasks.corpora import inscript
from tests.corpora.conftest import fetch_and_normalize

# ----------------------------------------------------------------------------- declaration


def test_sources_declare_every_story_once():
    srcs = inscript.sources({})
    relpaths = [s.relpath for s in srcs]
    assert len(relpaths) == len(set(relpaths)) == 2 + 728 + 182 + 10 + 3  # + Modi et al.'s
    required = [s for s in srcs if not s.optional]
    assert len(required) == 2 + 728
    assert all(s.sha256 and len(s.sha256) == 64 for s in required)
    assert all(s.url and inscript.CORPUS_COMMIT in s.url for s in required[1:])
    split_src = next(s for s in srcs if s.relpath == "clean_data_split.json")
    assert split_src.url.endswith(f"{inscript.SPLIT_COMMIT}/data/clean_data_split.json")
    tests = [s for s in srcs if s.optional and s.url and s.relpath.startswith("corpus/")]
    assert len(tests) == 182 and sum(1 for s in tests if s.sha256) == 10
    samples = [s for s in srcs if s.relpath.startswith("sample_test/")]
    assert len(samples) == 10 and all(s.optional and s.url is None and s.sha256 for s in samples)
    counts = Counter(inscript.declared_splits().values())
    assert counts == {"train": 637, "dev": 91, "test": 182}


def test_the_release_is_pinned_to_the_source_repository():
    """Modi et al.'s humanPredictions.json: the raw file of parkervg/discourse-referent-api at
    the MANIFEST's commit, pinned by the MANIFEST's sha256; optional (held back from the
    developer mirror; without it the sample or the rule serves)."""
    srcs = {s.relpath: s for s in inscript.sources({})}
    full = srcs["modi2017/humanPredictions.json"]
    assert full.url == (
        "https://raw.githubusercontent.com/parkervg/discourse-referent-api/"
        "69af044da900bb28b6158dd0eccc252fcd918547/data/taclData/humanPredictions.json"
    )
    assert full.sha256 == "158b0fef7d5938f7d6d96386d999e2d42842bf1df448c16b2b979dee3743d623"
    assert full.optional and srcs["modi2017/dataSplit.json"].url.endswith("taclData/dataSplit.json")
    sample = srcs["modi2017/humanPredictions.sample.json"]
    assert sample.optional and sample.url is None and len(sample.sha256) == 64


@pytest.fixture
def release_server(monkeypatch):
    """A 127.0.0.1 server standing in for raw.githubusercontent.com: the module's release
    URLs point at it; serves a small targets file (and counts requests)."""
    import hashlib
    import http.server
    import threading

    body = json.dumps({"bath_005": {"3_16": {"P1_drain": ["P1_drain"] * 20}}}).encode()
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            hits.append(self.path)
            path = f"/x/{inscript.RELEASE_COMMIT}/data/taclData/{inscript.RELEASE_FILE}"
            if self.path != path:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setattr(
        inscript, "RELEASE_REPO_URL", f"http://127.0.0.1:{httpd.server_address[1]}/x"
    )
    monkeypatch.setattr(inscript, "RELEASE_SHA256", hashlib.sha256(body).hexdigest())
    yield body, hits
    httpd.shutdown()


def _fetch_release(tmp_path, mirror=None, network=True):
    from tasks.core.fetch import fetch_source

    src = next(s for s in inscript.release_sources() if s.relpath.endswith(inscript.RELEASE_FILE))
    return fetch_source(src, "inscript", tmp_path / "raw", mirror=mirror, mirror_dir="inscript",
                        network=network, cache_dir=tmp_path / "cache", timeout=5)  # fmt: skip


def test_the_full_release_is_fetched_from_the_source_url_and_checked(tmp_path, release_server,
                                                                     caplog):  # fmt: skip
    import logging

    from tasks.core.errors import ChecksumError

    caplog.set_level(logging.INFO, logger="corefrepro.fetch")
    body, hits = release_server
    target = tmp_path / "raw" / "modi2017" / inscript.RELEASE_FILE
    assert _fetch_release(tmp_path) == inscript.RELEASE_SHA256
    assert target.read_bytes() == body and len(hits) == 1
    # the mirror first: a mirror holding the file serves it, the network is not asked
    mirror = tmp_path / "mirror"
    (mirror / "inscript" / "modi2017").mkdir(parents=True)
    (mirror / "inscript" / "modi2017" / inscript.RELEASE_FILE).write_bytes(body)
    target.unlink()
    assert _fetch_release(tmp_path, mirror=str(mirror)) == inscript.RELEASE_SHA256
    assert len(hits) == 1
    # another file under the pinned name is refused, nothing written
    (mirror / "inscript" / "modi2017" / inscript.RELEASE_FILE).write_bytes(body + b" ")
    target.unlink()
    with pytest.raises(ChecksumError, match="does not match the pinned"):
        _fetch_release(tmp_path, mirror=str(mirror))
    assert not target.exists()
    # offline and not mirrored: optional, skipped with a log line
    assert _fetch_release(tmp_path / "off", network=False) is None
    assert "optional file modi2017/humanPredictions.json not available" in caplog.text
    # and what was fetched reads as the release
    assert _fetch_release(tmp_path) == inscript.RELEASE_SHA256
    targets, path = inscript.released_targets(tmp_path / "raw")
    assert path == target and targets == {
        "inscript/bath/005": {"3_16": ("P1_drain", ("P1_drain",) * 20)}
    }


def _write_release(directory: Path, name: str, obj) -> Path:
    path = directory / "modi2017" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj, indent=1))
    return path


def test_released_targets_prefer_the_full_file_and_say_when_the_sample_serves(tmp_path, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="corefrepro.inscript")
    assert inscript.released_targets(tmp_path) is None
    assert "no released targets" in caplog.text and "test slots follow the rule" in caplog.text
    sample = {"bath_005": {"3_16": {"P1_drain": ["P1_drain", "P1_bather"]}}}
    _write_release(tmp_path, inscript.RELEASE_SAMPLE_FILE, sample)
    targets, path = inscript.released_targets(tmp_path)
    assert path.name == inscript.RELEASE_SAMPLE_FILE
    assert targets == {"inscript/bath/005": {"3_16": ("P1_drain", ("P1_drain", "P1_bather"))}}
    assert "humanPredictions.json absent; the released test targets are the sample's" in caplog.text
    assert "1 stories, 1 targets" in caplog.text
    _write_release(tmp_path, inscript.RELEASE_FILE, {**sample, "bus_008": {}})
    targets, path = inscript.released_targets(tmp_path)
    assert path.name == inscript.RELEASE_FILE and set(targets) == {"inscript/bath/005",
                                                                   "inscript/bus/008"}  # fmt: skip


def test_a_bad_release_names_the_file_and_line(tmp_path):
    path = _write_release(tmp_path, "h.json", '{"bath_005": {\n "3_16": {"P1_drain": [}}}')
    with pytest.raises(DataError, match=r"h.json:2: malformed JSON"):
        inscript.parse_release(path)
    bad = {"bath_005": {"3_16": {"P1_drain": ["P1_drain"]}, "4_2": {"P1_a": "P1_a"}}}
    path = _write_release(tmp_path, "h.json", bad)
    with pytest.raises(
        DataError,
        match=r"h.json:8: bath_005 target '4_2': expected \{true label: \[human guesses\]\}$",
    ):
        inscript.parse_release(path)
    path = _write_release(tmp_path, "h.json", {"bath": {}})
    with pytest.raises(DataError, match=r"h.json:2: story 'bath': expected <scenario>_<NNN>"):
        inscript.parse_release(path)
    path = _write_release(tmp_path, "h.json", [1])
    with pytest.raises(DataError, match=r"h.json: expected an object"):
        inscript.parse_release(path)


# ----------------------------------------------------------------------------- real mirror


@pytest.fixture(scope="module")
def real(mirror_session, tmp_path_factory):
    # every label a mention (no singleton excluded) and every story, as the MANIFEST counts them
    got = fetch_and_normalize(inscript, mirror_session, tmp_path_factory.mktemp("inscript"),
                              {"singleton_exclude": [], "train_stories": "all"})  # fmt: skip
    return got.fetched, got.out, got.documents, got.mentions


def _per_split(norm):
    split_of = {d["doc_id"]: d["split"] for d in norm.documents}
    spans: dict[str, set] = {"train": set(), "dev": set(), "test": set()}
    sizes: Counter = Counter()
    for m in norm.mentions:
        spans[split_of[m["doc_id"]]].add((m["doc_id"], m["start"], m["end"]))
        sizes[(m["doc_id"], m["cluster"])] += 1
    chains: Counter = Counter(split_of[doc] for (doc, _), n in sizes.items() if n > 1)
    return {s: len(v) for s, v in spans.items()}, chains


@pytest.mark.mirror
def test_fetch_takes_train_dev_and_sample_only(real):
    fetched, norm, docs, _ = real
    got = [k for k, v in fetched.items() if v is not None]
    assert len(got) == 2 + 728 + 10 + 2  # + Modi et al.'s split and the targets' sample
    assert sum(1 for k in got if k.startswith("sample_test/")) == 10
    assert sorted(k for k in got if k.startswith("modi2017/")) == [
        "modi2017/dataSplit.json", "modi2017/humanPredictions.sample.json"]  # fmt: skip
    assert fetched["modi2017/humanPredictions.json"] is None  # held back from the mirror
    assert any("used 10 sample stories" in n for n in norm.notes)
    assert any("172 test stories not available" in n for n in norm.notes)


@pytest.mark.mirror
def test_manifest_counts(real):
    _, norm, docs, mentions = real
    check_mentions_in_range(docs, mentions)
    assert Counter(docs.column("split").to_pylist()) == {"train": 637, "dev": 91, "test": 10}
    labels, chains = _per_split(norm)
    # MANIFEST.md: participant-labelled mentions and coreference chains per split
    assert labels["train"] == 43436 and chains["train"] == 4651
    assert labels["dev"] == 6369 and chains["dev"] == 710
    genres = Counter(docs.column("genre").to_pylist())
    assert len(genres) == 10 and genres["bath"] == 94 - 18 + 1  # 1 sampled test story
    ids = docs.column("doc_id").to_pylist()
    assert ids == sorted(ids) and ids[0] == "inscript/bath/001"
    keys = [(m["doc_id"], m["start"], m["end"], m["cluster"]) for m in norm.mentions]
    assert keys == sorted(keys)


@pytest.mark.mirror
def test_entity_inventory_matches_the_papers_count(mirror_session):
    """Ji et al. 2017 §4: 24.9 entities per story. Default (NPart singletons out, the 619
    training stories): 24.5 on train; every singleton kept (the earlier default): 33.0."""
    raw = mirror_session / inscript.MIRROR_DIR
    paper = inscript.normalize(raw, {"multi_chain": "first"})
    every = inscript.normalize(raw, {"multi_chain": "first", "singleton_exclude": []})
    assert "entities per story: train 24.53, dev 25.30, test 26.30" in paper.notes
    assert "entities per story: train 32.99, dev 33.04, test 33.60" in every.notes


@pytest.mark.mirror
def test_train_leaves_out_the_18_stories_modi_et_al_ignore(mirror_session):
    """Ji et al.'s 619 training stories: Modi et al. 2017's split lists 18 more under test and
    releases nothing for them; the split file here has them in train."""
    raw = mirror_session / inscript.MIRROR_DIR
    ids = {d["doc_id"] for d in inscript.normalize(raw, {}).documents if d["split"] == "train"}
    every = inscript.normalize(raw, {"train_stories": "all"}).documents
    assert len(ids) == 619 and sum(d["split"] == "train" for d in every) == 637
    ignored = {f"inscript/{s.rsplit('_', 1)[0]}/{s.rsplit('_', 1)[1]}"
               for s in inscript.MODI_IGNORED_STORIES}  # fmt: skip
    assert len(ignored) == 18 and not ignored & ids


def _doc(norm, doc_id):
    doc = next(d for d in norm.documents if d["doc_id"] == doc_id)
    rows = [m for m in norm.mentions if m["doc_id"] == doc_id]
    return doc, rows


@pytest.mark.mirror
@pytest.mark.parametrize(
    ("doc_id", "split", "labels", "chains"),
    [
        ("inscript/bath/001", "train", 67, 11),
        ("inscript/bath/002", "train", 48, 6),
        ("inscript/bath/006", "dev", 53, 5),
        ("inscript/tree/100", "train", 53, 7),
    ],
)
def test_story_counts(real, doc_id, split, labels, chains):
    _, norm, _, _ = real
    doc, rows = _doc(norm, doc_id)
    assert doc["split"] == split
    assert len({(m["start"], m["end"]) for m in rows}) == labels
    sizes = Counter(m["cluster"] for m in rows)
    assert sum(1 for n in sizes.values() if n > 1) == chains
    assert sorted(c for c, n in sizes.items() if n > 1) == list(range(chains))


@pytest.mark.mirror
def test_bath_002_spans(real):
    _, norm, _, _ = real
    doc, rows = _doc(norm, "inscript/bath/002")
    toks = doc["tokens"]
    assert toks[:8] == ["Yesterday", "was", "a", "long", "and", "stressful", "day", "."]
    assert len(doc["sentence_starts"]) == 9 and doc["sentence_starts"][:2] == [0, 8]
    text = {
        c: [" ".join(toks[m["start"] : m["end"]]) for m in rows if m["cluster"] == c]
        for c in range(6)
    }
    assert len(text[0]) == 13 and set(text[0]) == {"I", "my", "myself"}  # the bather chain
    assert text[1] == ["bubble bath"] * 3  # multi-token mentions ("from".."to")
    assert text[3] == ["water", "it", "water", "water"]


@pytest.mark.mirror
def test_label_in_two_chains_kept_in_both(real):
    _, norm, _, _ = real
    _, rows = _doc(norm, "inscript/bath/028")
    by_span: dict = {}
    for m in rows:
        by_span.setdefault((m["start"], m["end"]), set()).add(m["cluster"])
    assert {0, 6} in by_span.values()  # label 11 "I" is listed by chains 0 and 6


# ----------------------------------------------------------------------------- hand-written story

STORY = """<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE story SYSTEM "../InScript.dtd">
<story id="{num}" scenario="bath">
    <text>
        <content>I took a bubble bath .
It filled my tub today .
I relaxed .</content>
        <sentences>
            <sentence id="1">
                <token content="I" id="1-1"/>
                <token content="took" id="1-2"/>
                <token content="a" id="1-3"/>
                <token content="bubble" id="1-4"><pos type="NN"/></token>
                <token content="bath" id="1-5"/>
                <token content="." id="1-6"/>
            </sentence>
            <sentence id="2">
                <token content="It" id="2-1"/>
                <token content="filled" id="2-2"/>
                <token content="my" id="2-3"/>
                <token content="tub" id="2-4"/>
                <token content="today" id="2-5"/>
                <token content="." id="2-6"/>
            </sentence>
            <sentence id="3">
                <token content="I" id="3-1"/>
                <token content="relaxed" id="3-2"/>
                <token content="." id="3-3"/>
            </sentence>
        </sentences>
    </text>
    <annotations>
        <participants>
            <label from="1-1" id="0" name="ScrPart_bather" text="I" type="participant"/>
            <label from="1-4" id="1" name="ScrPart_bath_means" text="bubble bath" to="1-5" type="participant"/>
            <label from="2-1" id="2" name="ScrPart_bath_means" text="It" type="participant"/>
            <label from="2-3" id="3" name="ScrPart_bather" text="my" type="participant"/>
            <label from="2-4" id="4" name="ScrPart_bathtub" text="tub" type="participant"/>
            <label from="2-5" id="5" name="NPart" text="today" type="participant"/>
            <label from="3-1" id="6" name="ScrPart_bather" text="I" type="participant"/>
        </participants>
        <events>
            <label from="1-2" id="7" name="ScrEv_prepare_bath" text="took" type="event"/>
        </events>
        <chains>
            <chain elements="0 3"/>
            <chain elements="1 2"/>
            <chain elements="3 6"/>
        </chains>
    </annotations>
</story>
"""


def story_text(num: str = "002") -> str:
    return STORY.replace("{num}", num)


def line_of(text: str, marker: str) -> int:
    return text[: text.index(marker)].count("\n") + 1


def make_raw(tmp_path: Path, split: dict, files: dict[str, str | bytes]) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "clean_data_split.json").write_text(json.dumps(split))
    for rel, content in files.items():
        path = raw / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        path.write_bytes(content)
    return raw


def spans(norm):
    return [(m["start"], m["end"], m["cluster"]) for m in norm.mentions]


def test_handwritten_story_default(tmp_path):
    raw = make_raw(tmp_path, {"train": ["bath_002"]}, {"corpus/bath/bath_002.xml": story_text()})
    norm = inscript.normalize(raw, {})
    (doc,) = norm.documents
    assert doc["doc_id"] == "inscript/bath/002" and doc["split"] == "train"
    assert doc["genre"] == "bath" and doc["speakers"] is None
    assert doc["sentence_starts"] == [0, 6, 12] and len(doc["tokens"]) == 15
    assert doc["tokens"][3:5] == ["bubble", "bath"]
    # chains 0..2 in file order; label 3 ("my") is in chains 0 and 2; singletons follow,
    # except the NPart one ("today", the inventory of Ji et al. §4's 24.9 entities per story)
    assert spans(norm) == [
        (0, 1, 0), (3, 5, 1), (6, 7, 1), (8, 9, 0), (8, 9, 2), (9, 10, 3), (12, 13, 2)
    ]  # fmt: skip
    assert all(m["annotator"] == "gold" for m in norm.mentions)
    assert any("1 labels listed in more than one chain" in n for n in norm.notes)
    assert "entities per story: train 4.00" in norm.notes
    to_table("mentions", norm.mentions)


def test_handwritten_story_options(tmp_path):
    raw = make_raw(tmp_path, {"train": ["bath_002"]}, {"corpus/bath/bath_002.xml": story_text()})
    first = inscript.normalize(raw, {"multi_chain": "first"})
    assert (8, 9, 2) not in spans(first) and (8, 9, 0) in spans(first)
    no_single = inscript.normalize(raw, {"singletons": False})
    assert [s for s in spans(no_single) if s[2] >= 3] == []
    every = inscript.normalize(raw, {"singleton_exclude": []})  # the earlier default
    assert (9, 10, 3) in spans(every) and (10, 11, 4) in spans(every)
    assert "entities per story: train 5.00" in every.notes
    with pytest.raises(ValueError, match="multi_chain"):
        inscript.normalize(raw, {"multi_chain": "merge"})
    with pytest.raises(ValueError, match="train_stories"):
        inscript.normalize(raw, {"train_stories": "some"})


def test_story_syntax_reads_pos_dependencies_and_events(tmp_path):
    """The per-token annotation entity prediction's slot rule reads: POS, dependency head and
    relation, and the event label over each token."""
    text = story_text().replace(
        '<token content="I" id="1-1"/>',
        '<token content="I" id="1-1"><pos type="PRP"/><dep head="1-2" type="nsubj"/></token>',
    )
    raw = make_raw(tmp_path, {"train": ["bath_002"]}, {"corpus/bath/bath_002.xml": text})
    syntax = inscript.story_syntax(raw)["inscript/bath/002"]
    assert syntax["pos"][:5] == ["PRP", None, None, "NN", None]
    assert syntax["dep_head"][:3] == [1, -1, -1] and syntax["dep_rel"][:2] == ["nsubj", None]
    assert syntax["event"][:3] == [None, "ScrEv_prepare_bath", None]
    bad = text.replace('<dep head="1-2"', '<dep head="9-9"')
    (raw / "corpus/bath/bath_002.xml").write_text(bad)
    with pytest.raises(DataError, match="unknown head '9-9'"):
        inscript.story_syntax(raw)


def test_sample_used_only_without_full_test_story(tmp_path):
    sample = "sample_test/corpus/bath/bath_005.xml"
    raw = make_raw(tmp_path, {"test": ["bath_005"]}, {sample: story_text("005")})
    norm = inscript.normalize(raw, {})
    assert [d["split"] for d in norm.documents] == ["test"]
    assert any("used 1 sample stories" in n for n in norm.notes)
    # the full story wins over the sample when both are present
    full = raw / "corpus/bath/bath_005.xml"
    full.parent.mkdir(parents=True)
    full.write_text(story_text("005").replace('content="tub"', 'content="bathtub"'))
    norm = inscript.normalize(raw, {})
    assert "bathtub" in norm.documents[0]["tokens"]
    assert not any("sample" in n for n in norm.notes)


# ----------------------------------------------------------------------------- malformed input


def _parse_error(tmp_path: Path, content: str | bytes) -> DataError:
    path = tmp_path / "bath_002.xml"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    with pytest.raises(DataError) as info:
        inscript.parse_story(path)
    assert "bath_002.xml" in str(info.value)
    return info.value


def test_truncated_file(tmp_path):
    text = story_text()
    cut = text[: text.index('name="ScrPart_bathtub"')]
    err = _parse_error(tmp_path, cut)
    assert err.line == cut.count("\n") + 1 == line_of(text, 'name="ScrPart_bathtub"')
    assert "malformed XML" in err.message


def test_bad_utf8(tmp_path):
    text = story_text()
    data = text.encode().replace(b'content="filled"', b'content="fill\xffed"')
    err = _parse_error(tmp_path, data)
    assert err.line == line_of(text, 'content="filled"') and "utf-8" in err.message


def test_chain_refers_to_unknown_label(tmp_path):
    text = story_text().replace('<chain elements="1 2"/>', '<chain elements="1 99"/>')
    err = _parse_error(tmp_path, text)
    assert err.line == line_of(text, 'elements="1 99"') and "'99'" in err.message


def test_chain_refers_to_event(tmp_path):
    text = story_text().replace('<chain elements="1 2"/>', '<chain elements="1 7"/>')
    err = _parse_error(tmp_path, text)
    assert err.line == line_of(text, 'elements="1 7"') and "event" in err.message


def test_label_refers_to_unknown_token(tmp_path):
    text = story_text().replace('to="1-5"', 'to="1-9"')
    err = _parse_error(tmp_path, text)
    assert err.line == line_of(text, 'to="1-9"') and "'1-9'" in err.message


def test_missing_fields(tmp_path):
    text = story_text().replace('<label from="2-4" id="4"', '<label id="4"')
    err = _parse_error(tmp_path, text)
    assert err.line == line_of(text, '<label id="4"') and "'from'" in err.message
    text = story_text().replace('<token content="my" id="2-3"/>', '<token id="2-3"/>')
    err = _parse_error(tmp_path, text)
    assert err.line == line_of(text, '<token id="2-3"/>') and "'content'" in err.message
    text = story_text().replace("<annotations>", "<notes>").replace("</annotations>", "</notes>")
    assert "no <annotations>" in _parse_error(tmp_path, text).message


def test_entities_refused_without_network(tmp_path):
    doctype = '<!DOCTYPE story SYSTEM "../InScript.dtd">'
    text = story_text().replace(
        doctype, '<!DOCTYPE story [\n<!ENTITY ext SYSTEM "http://example.invalid/x">\n]>'
    )
    err = _parse_error(tmp_path, text)
    assert err.line == 3 and "entity declaration" in err.message
    text = story_text().replace("I relaxed .</content>", "I relaxed &nbsp;.</content>")
    err = _parse_error(tmp_path, text)
    assert err.line == line_of(text, "&nbsp;") and "&nbsp;" in err.message


def test_story_id_must_match_file(tmp_path):
    raw = make_raw(
        tmp_path, {"train": ["bath_001"]}, {"corpus/bath/bath_001.xml": story_text("002")}
    )
    with pytest.raises(DataError) as info:
        inscript.normalize(raw, {})
    assert "bath_001.xml:3:" in str(info.value)


def test_bad_split_file(tmp_path):
    raw = make_raw(tmp_path, {}, {})
    (raw / "clean_data_split.json").write_text('{"train": ["bath_001",\n "bath_002" "x"]}')
    with pytest.raises(DataError) as info:
        inscript.normalize(raw, {})
    assert "clean_data_split.json:2:" in str(info.value)
    (raw / "clean_data_split.json").write_text('{"train": ["bath_005"]}')  # a test story
    with pytest.raises(DataError, match="not a declared train story"):
        inscript.normalize(raw, {})


def test_missing_required_story(tmp_path):
    raw = make_raw(tmp_path, {"dev": ["bath_006"]}, {})
    with pytest.raises(MissingSourceError, match="bath_006.xml"):
        inscript.normalize(raw, {})
