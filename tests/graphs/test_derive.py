"""tasks/graphs/derive.py + flows/derive.py: bAbI-Mix (MAGE paper §4.2) as a derived corpus, made by
the derive stage from another corpus's normalized tables (the synthetic corpus here, real bAbI
from the mirror), with normalize's layout so annotate/graphs take it like any corpus."""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

import flows.derive as derive
from tasks.core import storage
from tasks.core.errors import CorefreproError
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.corpora import ingest
from tasks.graphs.babi_mix import BABI_ALTERNATES
from tests.conftest import copy_checkout, run_ok

MIX = {"from": "synthetic", "kind": "babi_mix", "seed": 13}


@pytest.fixture(scope="module")
def docs_root(tmp_path_factory) -> Path:
    """data/docs/synthetic as normalize@synthetic writes it (params.yaml settings)."""
    from tasks.core.config import params
    from tasks.corpora import synthetic

    root = tmp_path_factory.mktemp("docs")
    raw = root / "raw"
    synthetic.generate(raw, params("download").get("synthetic"))
    result = synthetic.normalize(raw, params("normalize").get("synthetic"))
    ingest.write_docs("synthetic", result, root / "synthetic", synthetic.LICENSE)
    return root


@pytest.fixture
def derive_env(docs_root, monkeypatch):
    """derive.* settings given by the test; data/docs/<corpus> under docs_root."""
    settings: dict = {}
    monkeypatch.setattr(derive, "params", lambda section: settings)
    monkeypatch.setattr(derive, "docs_dir", lambda corpus: docs_root / corpus)
    return settings


def _rows(directory: Path) -> dict[str, list[dict]]:
    return {
        k: storage.read_table(directory / f"{k}.parquet", k).to_pylist()
        for k in (DOCUMENTS, ITEMS, MENTIONS)
    }


def _sentences(doc: dict, renamed: bool = False) -> list[tuple[str, ...]]:
    ends = [*doc["sentence_starts"][1:], len(doc["tokens"])]
    words = [BABI_ALTERNATES.get(t, t) for t in doc["tokens"]] if renamed else doc["tokens"]
    return [tuple(words[s:e]) for s, e in zip(doc["sentence_starts"], ends, strict=True)]


def _is_merge(mixed: list, x: list, y: list) -> bool:
    """mixed is an interleaving of x and y that keeps the order of each (dynamic program)."""
    if len(mixed) != len(x) + len(y):
        return False
    ok = {(0, 0)}
    for sentence in mixed:
        ok = {(i + 1, j) for i, j in ok if i < len(x) and x[i] == sentence} | {
            (i, j + 1) for i, j in ok if j < len(y) and y[j] == sentence
        }
    return (len(x), len(y)) in ok


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


def test_babi_mix_of_the_synthetic_corpus_keeps_every_question_once(
    derive_env, docs_root, tmp_path
):
    derive_env["synthetic-mix"] = MIX
    metrics = derive.derive_corpus("synthetic-mix", tmp_path / "mix")
    src, mix = _rows(docs_root / "synthetic"), _rows(tmp_path / "mix")
    # every question of the source is asked exactly once over a mixed story, in its own split
    # (odd groups reuse a story without repeating its questions, MAGE §4.2 asks about one story)
    origin = Counter((it["split"], it["task"], it["doc_id"].split("/")[-1]) for it in src[ITEMS])
    asked = Counter()
    for it in mix[ITEMS]:
        pair = it["doc_id"].split("/", 1)[1].split("+")
        story = pair[0] if it["item_id"].split("/")[-2] == "a" else pair[1]
        asked[(it["split"], it["task"], story)] += 1
    assert asked == origin
    assert sum(m["items"] for m in metrics.values()) == len(src[ITEMS]) == len(mix[ITEMS])
    # each mixed story holds all sentences of two stories of one split: twice as long
    src_docs = {d["doc_id"].split("/")[-1]: d for d in src[DOCUMENTS]}
    assert len(mix[DOCUMENTS]) == pytest.approx(len(src[DOCUMENTS]) / 2, abs=6)
    interleaved = 0
    for doc in mix[DOCUMENTS]:
        a, b = (src_docs[s] for s in doc["doc_id"].split("/", 1)[1].split("+"))
        assert doc["split"] == a["split"] == b["split"]
        mixed = _sentences(doc)
        # the mixed story is an order-keeping merge of the two, exactly one of them renamed
        merges = [
            (x, y)
            for x, y in ((_sentences(a, True), _sentences(b)), (_sentences(a), _sentences(b, True)))
            if _is_merge(mixed, x, y)
        ]
        assert len(merges) == 1, doc["doc_id"]
        x, y = merges[0]
        interleaved += mixed not in (x + y, y + x)
    assert interleaved > len(mix[DOCUMENTS]) / 2
    # one story of each pair is renamed: alternates occur, never in the source
    src_vocab = {t for d in src[DOCUMENTS] for t in d["tokens"]}
    mix_vocab = {t for d in mix[DOCUMENTS] for t in d["tokens"]}
    assert {"Alice", "Peter", "pantry", "juice"} <= mix_vocab - src_vocab
    # candidates: drop is not set here, so the synthetic corpus's candidate lists stay
    assert all(it["candidates"] for it in mix[ITEMS])
    meta = storage.read_table(tmp_path / "mix" / "items.parquet").schema.metadata
    assert meta[b"derived_from"] == b"synthetic" and meta[b"derive_kind"] == b"babi_mix"


def test_derived_corpus_is_byte_identical_on_rerun_and_seeded(derive_env, tmp_path):
    derive_env["synthetic-mix"] = {**MIX, "candidates": "drop"}
    derive.derive_corpus("synthetic-mix", tmp_path / "one")
    derive.derive_corpus("synthetic-mix", tmp_path / "two")
    assert _digests(tmp_path / "one") == _digests(tmp_path / "two")
    assert all(it["candidates"] is None for it in _rows(tmp_path / "one")[ITEMS])
    derive_env["synthetic-mix"] = {**MIX, "seed": 14, "candidates": "drop"}
    derive.derive_corpus("synthetic-mix", tmp_path / "other")
    assert (
        _digests(tmp_path / "other")[f"{DOCUMENTS}.parquet"]
        != _digests(tmp_path / "one")[f"{DOCUMENTS}.parquet"]
    )


@pytest.mark.parametrize(
    ("name", "cfg", "message"),
    [
        ("nope", None, r"derive: no 'nope'"),
        ("babi", MIX, r"'babi' is a corpus of its own"),
        ("mix", {**MIX, "from": "mix"}, r"derive.mix.from: must name another corpus"),
        ("mix", {**MIX, "kind": "shuffle"}, r"kind: 'shuffle' unknown; known: \['babi_mix'\]"),
        ("mix", {**MIX, "sed": 1}, r"derive.mix.sed: unknown setting \(did you mean seed\?\)"),
        ("mix", {"from": "synthetic", "kind": "babi_mix"}, r"derive.mix.seed: missing setting"),
        ("mix", {**MIX, "candidates": "some"}, r"derive.mix.candidates: expected one of 'keep'"),
        ("mix", {**MIX, "seed": "13"}, r"derive.mix.seed: expected int, got str '13'"),
        ("mix", {**MIX, "from": "../../etc"}, r"derive.mix.from: '../../etc' is not a safe name"),
        ("../escape", MIX, r"derive \(the key\): '../escape' is not a safe name"),
        ("/abs", MIX, r"derive \(the key\): '/abs' is not a safe name"),
        ("mix", {**MIX, "from": "babi"}, r"babi/documents.parquet: missing; derive.mix reads"),
    ],
)
def test_bad_settings_and_missing_source_name_the_setting(derive_env, tmp_path, name, cfg, message):
    if cfg is not None:
        derive_env[name] = cfg
    with pytest.raises(CorefreproError, match=message):
        derive.derive_corpus(name, tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.mirror
def test_babi_mix_of_real_babi_1k(mirror_session, tmp_path_factory, monkeypatch):
    """The paper's corpus: bAbI 1k (en), 20 tasks; every question kept except where a
    (split, task) has a single story (the mirror's test sample of qa20)."""
    from tasks.corpora import babi
    from tests.corpora.conftest import fetch_and_normalize

    root = tmp_path_factory.mktemp("babi-docs")
    got = fetch_and_normalize(babi, mirror_session, root / "fetch", {"tasks": list(range(1, 21))})
    ingest.write_docs("babi", got.out, root / "babi", babi.LICENSE)
    monkeypatch.setattr(
        derive, "params", lambda s: {"babi-mix": {"from": "babi", "kind": "babi_mix", "seed": 13}}
    )
    monkeypatch.setattr(derive, "docs_dir", lambda corpus: root / corpus)
    metrics = derive.derive_corpus("babi-mix", root / "babi-mix")
    mix = _rows(root / "babi-mix")
    src = Counter((it["split"], it["task"]) for it in got.out.items)
    kept = Counter((it["split"], it["task"]) for it in mix[ITEMS])
    lost = {k: src[k] - kept[k] for k in src if src[k] != kept[k]}
    stories = Counter((d["split"], d["doc_id"].split("/")[2]) for d in got.out.documents)
    assert all(stories[k] == 1 and kept[k] == 0 for k in lost), lost
    assert len({t for _, t in kept}) == 20
    assert sum(m["items"] for m in metrics.values()) == len(mix[ITEMS])
    for doc in mix[DOCUMENTS][:50]:
        assert doc["doc_id"].startswith("babi-mix/en/qa")


@pytest.mark.slow
def test_dvc_derives_annotates_and_graphs_the_mixed_corpus(tmp_path):
    """In a scratch copy: derive@synthetic-mix feeds annotate/graphs@synthetic-mix-entity-id."""
    repo = tmp_path / "repo"
    env = copy_checkout(repo)
    run_ok([sys.executable, "-m", "dvc", "repro", "graphs@synthetic-mix-entity-id"], repo, env)
    for table in (DOCUMENTS, ITEMS, MENTIONS):
        assert (repo / "data/docs/synthetic-mix" / f"{table}.parquet").exists()
    counts = json.loads((repo / "metrics/corpora/synthetic-mix.json").read_text())
    source = storage.read_table(repo / "data/docs/synthetic/items.parquet", ITEMS)
    assert sum(split["items"] for split in counts.values()) == source.num_rows
    graphs = storage.read_table(repo / "data/graphs/synthetic-mix-entity-id/graphs.parquet")
    assert graphs.num_rows == source.num_rows
    assert all(d.startswith("synthetic-mix/") for d in graphs.column("doc_id").to_pylist())
    again = run_ok(
        [sys.executable, "-m", "dvc", "repro", "graphs@synthetic-mix-entity-id"], repo, env
    )
    assert "Running stage" not in again


def test_flow_command_line_error_is_one_line(capsys, monkeypatch):
    import flows.derive as flow

    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    with pytest.raises(SystemExit) as stop:
        flow.main(["--corpus", "no-such-derived-corpus"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("error: params.yaml derive: no 'no-such-derived-corpus'") and "\n" not in err
    )
