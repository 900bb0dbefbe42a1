"""Stage `kbest` (flows/kbest.py; the heuristic is models/coref/kbest.py) on the handmade corpus with a
tiny ASL model trained here; the paths of a checkout are redirected into a temp directory."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch

import flows.kbest as flow
from models.coref.model import CorefModel
from models.coref.train import train_and_evaluate
from tasks.core import config, storage
from tasks.core.schema import DOCUMENTS, ITEMS, KBEST, KBEST_SCHEMA, MENTIONS
from tasks.core.storage import read_table, write_table
from tasks.corpora import handmade

TINY = {
    "encoder": "asl",
    "embedding_dim": 16,
    "char_filters": 4,
    "lstm_size": 16,
    "ffnn_size": 16,
    "feature_size": 4,
    "asl_mlp_size": 8,
    "max_antecedents": 20,
}
FAST = {"epochs": 2, "lr": 3e-3, "log_every_s": 1e9, "seed": 1, "device": "cpu"}
KBEST_PARAMS = {"corpora": ["handmade"], "encoder": "asl", "seed": 1, "k": 100, "log_every_s": 0}


def make_root(root: Path) -> Path:
    """A checkout's data for the model stages: data/docs/handmade/ (as normalize@handmade
    writes it) and artifacts/train_coref/asl/seed1/best.pt (a tiny model, trained as train_coref
    trains). Returns root."""
    raw = root / "raw"
    handmade.generate(raw, {})
    norm = handmade.normalize(raw, {})
    docs = root / "data" / "docs" / "handmade"
    write_table(docs / f"{DOCUMENTS}.parquet", DOCUMENTS, norm.documents)
    write_table(docs / f"{ITEMS}.parquet", ITEMS, norm.items)
    write_table(docs / f"{MENTIONS}.parquet", MENTIONS, norm.mentions)
    from models.coref.data import load_splits

    splits = load_splits([root / "data" / "docs" / "handmade"])
    out = root / "artifacts" / "train_coref" / "asl" / "seed1"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        train_and_evaluate(splits["train"], splits["dev"], splits["test"], TINY, FAST, out)
    finally:
        torch.set_num_threads(threads)
    return root


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return make_root(tmp_path_factory.mktemp("checkout"))


@pytest.fixture
def stage(root, monkeypatch):
    """Run the stage inside `root`; returns the kbest params (edit them to change settings)."""
    real = config.params()
    settings = {**copy.deepcopy(real), "kbest": dict(KBEST_PARAMS)}

    def params(section=None, path=None):
        return settings if section is None else settings[section]

    monkeypatch.setattr(config, "REPO_ROOT", root)
    monkeypatch.setattr(config, "params", params)
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield settings["kbest"]
    torch.set_num_threads(old)


def _run(capsys, corpus: str = "handmade") -> tuple[int, str]:
    try:
        flow.main(["--corpus", corpus])
    except SystemExit as exc:
        return int(exc.code), capsys.readouterr().err
    return 0, capsys.readouterr().err


def test_export_table_metrics_and_byte_identical_rerun(root, stage, capsys, caplog):
    caplog.set_level("INFO", logger="corefrepro.kbest")
    code, err = _run(capsys)
    assert code == 0, err
    path = root / "data" / "kbest" / "handmade" / f"{KBEST}.parquet"
    table = read_table(path, KBEST)  # refuses any other schema
    assert table.schema.equals(KBEST_SCHEMA, check_metadata=False)
    docs = read_table(root / "data" / "docs" / "handmade" / f"{DOCUMENTS}.parquet")
    doc_ids = docs.column("doc_id").to_pylist()
    k = KBEST_PARAMS["k"]
    rows = table.select(["doc_id", "rank"]).to_pylist()
    assert rows == [{"doc_id": d, "rank": r} for d in doc_ids for r in range(k)]
    by_doc: dict[str, list[dict]] = {}
    for row in table.to_pylist():
        by_doc.setdefault(row["doc_id"], []).append(row)
    for trees in by_doc.values():
        scores = [t["score"] for t in trees]
        assert scores == sorted(scores, reverse=True)
        padded = [t["padded"] for t in trees]
        assert padded == sorted(padded) and not padded[0]  # distinct trees, then padding
    meta = pq.read_schema(path).metadata
    assert meta[b"corpus"] == b"handmade" and meta[b"k"] == str(k).encode()
    assert len(meta[b"checkpoint_sha256"]) == 64
    metrics = json.loads((root / "metrics" / "kbest" / "handmade.json").read_text())
    assert metrics["documents"] == len(doc_ids) and metrics["trees"] == len(doc_ids) * k
    assert metrics["trees_per_doc"] == k
    distinct = sum(not p for p in table.column("padded").to_pylist()) / len(doc_ids)
    assert metrics["distinct_trees_per_doc"] == pytest.approx(distinct, abs=1e-3)
    assert "seconds" not in metrics  # wall-clock figures stay out of DVC metrics (#17.6)
    timings = json.loads(storage.timings_path(root / "metrics/kbest/handmade.json").read_text())
    assert timings["seconds"] > 0 and timings["docs_per_s"] > 0
    lines = [r.getMessage() for r in caplog.records if "docs/s" in r.getMessage()]
    assert len(lines) == len(doc_ids)  # every document (log_every_s 0), the last one with its time
    assert "ETA" in lines[0] and f"{len(doc_ids)}/{len(doc_ids)} docs" in lines[-1]
    before = path.read_bytes()
    assert _run(capsys)[0] == 0
    assert path.read_bytes() == before  # deterministic
    assert not [p.name for p in path.parent.parent.iterdir() if p.name.startswith(".")]


def test_windowed_encoding_gives_the_same_trees(root, stage, capsys, monkeypatch):
    """A window of one sentence forces every document through CorefModel.encode's windows."""
    assert _run(capsys)[0] == 0
    path = root / "data" / "kbest" / "handmade" / f"{KBEST}.parquet"
    whole = pq.read_table(path).to_pylist()
    windows: list[tuple[int, int]] = []
    encode = CorefModel.encode

    def spy(self, emb, lengths):
        windows.append((self.config.encode_window, emb.shape[0]))
        return encode(self, emb, lengths)

    monkeypatch.setattr(CorefModel, "encode", spy)
    stage["encode_window"] = 1
    assert _run(capsys)[0] == 0
    assert windows and all(w == 1 for w, _ in windows)
    assert max(n for _, n in windows) > 1  # multi-sentence documents were split into windows
    windowed = pq.read_table(path).to_pylist()
    assert [(r["doc_id"], r["rank"], r["mentions"]) for r in windowed] == [
        (r["doc_id"], r["rank"], r["mentions"]) for r in whole
    ]
    assert [r["score"] for r in windowed] == pytest.approx([r["score"] for r in whole], abs=1e-4)


def test_splits_select_documents(root, stage, capsys):
    stage.update(splits=["test"], k=3)
    assert _run(capsys)[0] == 0
    table = pq.read_table(root / "data" / "kbest" / "handmade" / f"{KBEST}.parquet")
    docs = read_table(root / "data" / "docs" / "handmade" / f"{DOCUMENTS}.parquet").to_pylist()
    test_ids = [d["doc_id"] for d in docs if d["split"] == "test"]
    assert test_ids and sorted(set(table.column("doc_id").to_pylist())) == sorted(test_ids)
    assert table.num_rows == 3 * len(test_ids)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"seed": 7}, "kbest.seed=7"),
        ({"encoder": "lsl"}, "kbest.encoder='lsl'"),
        ({"k": 0}, "kbest.k: must be >= 1, got 0"),
        ({"splits": ["heldout"]}, "kbest.splits"),
        ({"kk": 3}, "kbest.kk: unknown setting (did you mean k?)"),
    ],
)
def test_bad_settings_fail_with_one_line_naming_them(root, stage, capsys, change, expected):
    out = root / "data" / "kbest" / "handmade"
    before = sorted(p.name for p in out.iterdir()) if out.exists() else None
    stage.update(change)
    code, err = _run(capsys)
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ") and expected in last and "Traceback" not in err
    if "seed" in change or "encoder" in change:
        assert "best.pt" in last and "dvc repro train_coref@" in last
    assert (sorted(p.name for p in out.iterdir()) if out.exists() else None) == before
