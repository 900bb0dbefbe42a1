from __future__ import annotations

import json

import pytest

from tasks.core import storage
from tasks.core.errors import CorefreproError
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS

DOCS = [
    {
        "doc_id": "d/1",
        "split": "train",
        "tokens": ["Mary", "went", ".", "She", "sat", "."],
        "sentence_starts": [0, 3],
        "genre": "x",
        "speakers": None,
    },
    {
        "doc_id": "d/2",
        "split": "dev",
        "tokens": ["Hi", "."],
        "sentence_starts": [0],
        "genre": None,
        "speakers": ["a", "a"],
    },
]
MENTIONS_ROWS = [
    {"doc_id": "d/1", "start": 0, "end": 1, "cluster": 0, "annotator": "gold"},
    {"doc_id": "d/1", "start": 3, "end": 4, "cluster": 0, "annotator": "gold"},
]


def test_write_is_byte_identical_on_rerun(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    storage.write_table(a, DOCUMENTS, DOCS, {"corpus": "t"})
    storage.write_table(b, DOCUMENTS, DOCS, {"corpus": "t"})
    assert a.read_bytes() == b.read_bytes()
    back = storage.read_table(a, DOCUMENTS)
    assert back.column("tokens").to_pylist()[0] == DOCS[0]["tokens"]
    assert back.schema.metadata[b"corpus"] == b"t"


def test_failed_write_leaves_no_file(tmp_path):
    target = tmp_path / "x.parquet"
    bad = [dict(DOCS[0], sentence_starts=[1, 3])]
    with pytest.raises(CorefreproError, match="sentence_starts"):
        storage.write_table(target, DOCUMENTS, bad)
    assert list(tmp_path.iterdir()) == []


def test_atomic_dir_keeps_old_content_on_failure(tmp_path):
    target = tmp_path / "out"
    with storage.atomic_dir(target) as tmp:
        (tmp / "f.txt").write_text("old")
    with pytest.raises(RuntimeError), storage.atomic_dir(target) as tmp:
        (tmp / "f.txt").write_text("half")
        raise RuntimeError("boom")
    assert (target / "f.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize(
    ("kind", "rows", "message"),
    [
        (DOCUMENTS, [DOCS[0], DOCS[0]], "duplicate doc_id"),
        (DOCUMENTS, [dict(DOCS[1], speakers=["a"])], "speakers"),
        (DOCUMENTS, [dict(DOCS[0], sentence_starts=[0, 3, 3])], "increasing"),
        (MENTIONS, [dict(MENTIONS_ROWS[0], end=0)], "end<=start"),
        (
            ITEMS,
            [
                {
                    "item_id": "i",
                    "doc_id": "d/1",
                    "split": "x",
                    "task": "t",
                    "context_end": 1,
                    "query": [],
                    "answer": "a",
                    "candidates": None,
                    "supporting": None,
                }
            ]
            * 2,
            "duplicate item_id",
        ),
    ],
)
def test_validation_rejects_bad_rows(kind, rows, message):
    with pytest.raises(CorefreproError, match=message):
        storage.to_table(kind, rows)


def test_mentions_must_lie_inside_documents():
    docs = storage.to_table(DOCUMENTS, DOCS)
    ok = storage.to_table(MENTIONS, MENTIONS_ROWS)
    storage.check_mentions_in_range(docs, ok)
    out = storage.to_table(MENTIONS, [dict(MENTIONS_ROWS[0], end=7)])
    with pytest.raises(CorefreproError, match="beyond document d/1"):
        storage.check_mentions_in_range(docs, out)


@pytest.mark.parametrize("escape", ["../outside", "/abs/outside"])
def test_atomic_dir_refuses_a_target_outside_the_data_roots(tmp_path, monkeypatch, escape):
    """Issue #14.3: atomic_dir deletes the old target; a name with ../ (or an absolute one)
    must never make it delete a directory outside the data roots."""
    root = tmp_path / "root"
    victim = tmp_path / "outside"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    monkeypatch.setenv("COREFREPRO_WRITE_ROOTS", str(root))
    target = root / escape if escape.startswith("..") else victim
    refused = pytest.raises(CorefreproError, match="refusing to write outside the data roots")
    with refused, storage.atomic_dir(target) as tmp:
        (tmp / "x").write_text("x")
    with pytest.raises(CorefreproError, match="refusing to write outside the data roots"):
        storage.write_json(root / "../outside/keep.txt", {})
    assert (victim / "keep.txt").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside"]


def test_atomic_dir_writes_inside_the_roots(tmp_path, monkeypatch):
    monkeypatch.setenv("COREFREPRO_WRITE_ROOTS", str(tmp_path))
    with storage.atomic_dir(tmp_path / "a" / "b") as tmp:
        (tmp / "x").write_text("x")
    assert (tmp_path / "a" / "b" / "x").read_text() == "x"
    # the root itself is no target either
    with (
        pytest.raises(CorefreproError, match="outside the data roots"),
        storage.atomic_dir(tmp_path),
    ):
        pass


def test_write_metrics_keeps_wall_clock_figures_out_of_the_tracked_file(tmp_path, monkeypatch):
    monkeypatch.setattr(storage.config, "REPO_ROOT", tmp_path)
    metrics = {
        "documents": 3,
        "seconds": 1.25,
        "per_seed": {"1": {"dev_acc": 0.5, "wall_time_s": 9.0}, "2": {"dev_acc": 0.6}},
        "epochs": [{"loss": 1.0, "epoch_time_s": 2.0}, {"loss": 0.5}],
    }
    path = tmp_path / "metrics" / "stage" / "item.json"
    storage.write_metrics(path, metrics)
    kept = json.loads(path.read_text())
    assert kept == {
        "documents": 3,
        "per_seed": {"1": {"dev_acc": 0.5}, "2": {"dev_acc": 0.6}},
        "epochs": [{"loss": 1.0}, {"loss": 0.5}],
    }
    timings = json.loads((tmp_path / "logs/timings/metrics/stage/item.json").read_text())
    assert timings == {
        "seconds": 1.25,
        "per_seed": {"1": {"wall_time_s": 9.0}},
        "epochs": [{"epoch_time_s": 2.0}, None],
    }
    before = path.read_bytes()
    storage.write_metrics(path, {**metrics, "seconds": 7.5})  # a slower rerun, same results
    assert path.read_bytes() == before


def test_a_write_killed_midway_leaves_nothing_inside_the_output(tmp_path):
    """Issue #14.5: `.last.pt.*.tmp` files of a killed training landed inside
    artifacts/<stage>/<item>/ (a DVC output) and were committed with it."""
    import subprocess
    import sys
    import textwrap

    out = tmp_path / "artifacts" / "train" / "item"
    script = textwrap.dedent(
        f"""
        import os, signal
        from tasks.core import storage
        storage.write_json({str(out / "metrics.json")!r}, {{"a": 1}})
        with storage.atomic_path({str(out / "last.pt")!r}) as tmp:
            tmp.write_bytes(b"half a checkpoint")
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    env = {"COREFREPRO_WRITE_ROOTS": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=storage.config.REPO_ROOT)
    assert proc.returncode == -9
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json"]
    (left,) = (tmp_path / ".tmp").iterdir()  # outside the output, gitignored
    assert left.name.startswith("last.pt.") and left.name.endswith(".tmp")


@pytest.mark.parametrize(
    ("key", "timing"),
    [("time_s", True), ("eval_time_s", True), ("tokens_per_s", True), ("load_seconds", True),
     ("sec_per_epoch", True), ("dev_acc", False), ("steps", False), ("time_steps", False)],
)  # fmt: skip
def test_wall_clock_keys_are_told_by_their_unit(key, timing):
    """A bare `time_s` (once CoreLM's) slipped into a tracked file: the unit decides."""
    assert storage.is_timing(key) is timing


def test_a_full_disk_is_one_line_naming_the_output_and_keeps_the_old_one(tmp_path):
    """Issue #30.2: a write over `ulimit -f` kept the old output (good) but ended in a
    traceback; now the stage says which file and why in one line (exit 2)."""
    import resource
    import subprocess
    import sys
    import textwrap

    target = tmp_path / "data" / "docs" / "x" / "documents.parquet"
    storage.write_table(target, DOCUMENTS, DOCS)
    before = target.read_bytes()
    script = textwrap.dedent(
        f"""
        from flows.runtime import run_cli
        from tasks.core import storage
        from tasks.core.schema import DOCUMENTS
        rows = [dict(doc_id=f"d/{{i}}", split="train", tokens=[f"w{{i}}-{{j}}" for j in range(50)],
                     sentence_starts=[0]) for i in range(20000)]
        run_cli(lambda: storage.write_table({str(target)!r}, DOCUMENTS, rows))
        """
    )

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    env = {"COREFREPRO_WRITE_ROOTS": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=storage.config.REPO_ROOT,
                          capture_output=True, text=True, preexec_fn=limit_file_size)  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        f"error: {target}: not written (File too large): the disk is full or a size limit was "
        "hit; the previous version, if any, is kept. Free space and rerun the stage"
    ]
    assert target.read_bytes() == before


def test_a_table_of_an_older_schema_names_the_missing_column(tmp_path):
    """Issue #59 row 17: a valid Parquet lacking a column is one line naming file and column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tasks.core.schema import SCHEMAS

    schema = SCHEMAS[DOCUMENTS]
    older = pa.schema([f for f in schema if f.name != "sentence_starts"])
    path = tmp_path / "documents.parquet"
    pq.write_table(older.empty_table(), path)
    with pytest.raises(CorefreproError, match=r"documents.parquet: no column sentence_starts "
                       r"\(tasks/core/schema.py 'documents'\)"):  # fmt: skip
        storage.read_table(path, DOCUMENTS)
    with pytest.raises(CorefreproError, match="no column sentence_starts"):
        storage.read_table(path, DOCUMENTS, columns=["doc_id", "sentence_starts"])
