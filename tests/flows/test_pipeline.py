"""Smoke test of the embedded default: `dvc repro` in a fresh copy of the repository."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import run_ok
from tests.flows.conftest import REPRODUCED_TIMEOUT_S

# one xdist worker runs this module in order (tests/conftest.py ONE_WORKER_MODULES); its first
# test may wait for the reproduction
pytestmark = [pytest.mark.slow, pytest.mark.timeout(REPRODUCED_TIMEOUT_S)]


def _digests(root: Path) -> dict[str, str]:
    """sha256 of every Parquet file the data stages wrote (corpora, annotations, graphs)."""
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((root / "data").rglob("*.parquet"))
        if "cache" not in p.parts
    }


def test_dvc_repro_twice_second_is_noop(fresh_repo):
    """The first `dvc repro` of a fresh clone (conftest's reproduced_default, shared with
    test_presets_smoke.py) writes every corpus table; the second reproduces nothing."""
    repo, env = fresh_repo
    assert (repo / "dvc.lock").exists()
    params = __import__("yaml").safe_load((repo / "params.yaml").read_text())
    for corpus in params["corpora"]:
        for table in ("documents", "items", "mentions"):
            assert (repo / "data" / "docs" / corpus / f"{table}.parquet").exists()
        metrics = json.loads((repo / "metrics" / "corpora" / f"{corpus}.json").read_text())
        assert sum(split["documents"] for split in metrics.values()) > 0
    again = run_ok([sys.executable, "-m", "dvc", "repro"], repo, env)
    assert "Data and pipelines are up to date." in again
    assert "Running stage" not in again
    status = run_ok([sys.executable, "-m", "dvc", "status", "--json"], repo, env)
    assert json.loads(status) == {}
    # dvc.lock and every git-tracked output a fresh clone's first repro writes match the commit
    assert run_ok(["git", "status", "--porcelain"], repo, env).strip() == ""


def test_forced_rerun_is_byte_identical(fresh_repo):
    """...and leaves git clean: no wall-clock figure lives in a tracked metrics file or in a
    DVC output whose hash dvc.lock records (issue #17.6)."""
    repo, env = fresh_repo
    before = _digests(repo)
    assert before, "dvc repro produced no Parquet"
    assert run_ok(["git", "status", "--porcelain"], repo, env).strip() == ""
    # every data stage again (model training stages are checked by their own tests)
    data_stages = (
        "download",
        "normalize",
        "derive",
        "annotate",
        "graphs",
        "view_entitynlm",
        "view_corelm",
        "annotate_model",
        "graphs_model",
        "view_corelm_model",
        "kbest",
    )
    code = "from flows.reproduce import planned_stages; print(' '.join(planned_stages()))"
    stages = [
        s
        for s in run_ok([sys.executable, "-c", code], repo, env).split()
        if s.split("@")[0] in data_stages
    ]
    run_ok([sys.executable, "-m", "dvc", "repro", "--force", "--single-item", *stages], repo, env)
    assert _digests(repo) == before
    assert run_ok(["git", "status", "--porcelain"], repo, env).strip() == ""
    assert (repo / "logs" / "timings" / "metrics" / "kbest" / "handmade.json").is_file()


def test_single_stage_rerun_and_metrics_plots(fresh_repo, tmp_path):
    repo, env = fresh_repo
    out = run_ok(
        [sys.executable, "-m", "dvc", "repro", "--force", "--single-item", "stats@synthetic"],
        repo,
        env,
    )
    assert "Running stage 'stats@synthetic'" in out and "normalize@synthetic'" not in out.replace(
        "skipping", ""
    )
    shown = json.loads(
        run_ok([sys.executable, "-m", "dvc", "metrics", "show", "--json"], repo, env)
    )
    workspace = next(iter(shown.values()))["data"]  # the workspace entry (key "" in DVC 3)
    # the DVC metrics are the short per-family summaries the report stage writes (#17.5);
    # each stage's full metrics are plain outputs in git
    # a file per headline figure, metrics/summary/<family>/<figure>.json (#55.4)
    assert {Path(p).parent.as_posix() for p in workspace} == {
        f"metrics/summary/{f}" for f in ("coref", "corelm", "entitynlm", "mage")}  # fmt: skip
    coref = {Path(p).stem: v["data"] for p, v in workspace.items() if "/coref/" in p}
    assert set(coref) == {"asl_f1", "baseline_f1", "lsl_f1"}
    assert all(0 < v["ours"] <= 100 and v["paper"] > 60 for v in coref.values())
    assert json.loads((repo / "metrics/corpora/synthetic.json").read_text())["train"]["documents"]
    run_ok([sys.executable, "-m", "dvc", "plots", "show", "-o", str(tmp_path / "plots")], repo, env)
    html = (tmp_path / "plots" / "index.html").read_text()
    for png in ("ours_vs_paper", "learning_curves_mage", "learning_curves_coref", "doc_lengths"):
        assert f"plots/report/{png}.png" in html  # images: no CDN needed to see them


def test_mlflow_run_tagged_with_git_sha_and_lock_hash(fresh_repo):
    repo, env = fresh_repo
    code = (
        "import mlflow, json; mlflow.set_tracking_uri('sqlite:///mlflow.db');"
        "runs = mlflow.search_runs(experiment_names=['stats'], output_format='list');"
        "print(json.dumps([{**r.data.tags, 'name': r.info.run_name, 'params': r.data.params,"
        " 'inputs': [(d.dataset.name, d.dataset.digest) for d in r.inputs.dataset_inputs]}"
        " for r in runs]))"
    )
    runs = json.loads(run_ok([sys.executable, "-c", code], repo, env).strip().splitlines()[-1])
    names = {r["name"] for r in runs}
    assert "stats@synthetic" in names
    head = run_ok(["git", "rev-parse", "HEAD"], repo, env).strip()
    tagged = [r for r in runs if r["name"] == "stats@synthetic"]
    assert all(r["git_sha"].startswith(head) for r in tagged)
    assert all(r["dvc_stage"] == "stats@synthetic" for r in tagged)
    # the tag is the md5 of the stage's dvc.lock entry (cmd, deps, params; outs excluded)
    entry = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]["stats@synthetic"]
    entry.pop("outs", None)
    expected = hashlib.md5(json.dumps(entry, sort_keys=True, default=str).encode()).hexdigest()
    assert tagged[-1]["dvc_lock_hash"] == expected
    assert tagged[-1]["params"]["normalize.seed"] == "13"
    # the Dataset column: the stage's data deps with dvc.lock's md5 (#30.3)
    assert tagged[-1]["inputs"] == [
        [d["path"], d["md5"]] for d in entry["deps"] if d["path"].startswith("data/")
    ]
    assert tagged[-1]["inputs"]
    assert tagged[-1]["numerics"].startswith("portable (ATen avx2")


def test_reproduce_flow_walks_dvc_stages_in_order(fresh_repo):
    repo, env = fresh_repo
    code = "from flows.reproduce import planned_stages; print(' '.join(planned_stages()))"
    order = run_ok([sys.executable, "-c", code], repo, env).split()
    for corpus in ("synthetic", "handmade"):
        i, j, k = (order.index(f"{stage}@{corpus}") for stage in ("download", "normalize", "stats"))
        assert i < j < k
    out = run_ok([sys.executable, "-m", "flows.reproduce"], repo, env)
    assert "Running stage" not in out  # everything up to date: each DVC stage is a no-op


def test_bad_raw_line_fails_stage_with_file_and_line(fresh_repo):
    repo, env = fresh_repo
    raw = repo / "data" / "raw" / "synthetic" / "dev.jsonl"
    docs = repo / "data" / "docs" / "synthetic"
    before = _digests(repo)
    original = raw.read_bytes()
    lines = original.split(b"\n")
    lines[2] = lines[2][: len(lines[2]) // 2]  # truncate line 3
    raw.chmod(0o644)
    raw.write_bytes(b"\n".join(lines))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "flows.normalize", "--corpus", "synthetic"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
        )
    finally:
        raw.write_bytes(original)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "dev.jsonl:3" in last and "Traceback" not in proc.stderr
    assert _digests(repo) == before  # the previous outputs are untouched
    assert sorted(p.name for p in docs.parent.iterdir() if p.name.startswith(".")) == []


def test_annotation_and_graphs_of_the_embedded_default(fresh_repo):
    import pyarrow.parquet as pq
    import yaml

    repo, _ = fresh_repo
    runs = yaml.safe_load((repo / "params.yaml").read_text())["annotate"]["runs"]
    for run, entry in runs.items():
        mentions = pq.read_table(repo / "data" / "mentions" / run / "mentions.parquet")
        assert mentions.num_rows > 0 and set(mentions.column("annotator").to_pylist()) == {
            entry["annotator"]
        }
        graphs = pq.read_table(repo / "data" / "graphs" / run / "graphs.parquet")
        items = pq.read_table(repo / "data" / "docs" / entry["corpus"] / "items.parquet")
        docs = pq.read_table(repo / "data" / "docs" / entry["corpus"] / "documents.parquet")
        assert graphs.num_rows == (items.num_rows or docs.num_rows)
        assert b"forward_edge_types" in graphs.schema.metadata
        for view in ("entitynlm", "corelm"):
            assert (
                pq.read_table(repo / "data" / "graphs" / run / f"{view}.parquet").num_rows
                >= docs.num_rows
            )
        metrics = json.loads((repo / "metrics" / "annotate" / f"{run}.json").read_text())
        assert metrics["documents"] == docs.num_rows
        if entry["annotator"] != "gold":
            assert 0.3 < metrics["dev"]["conll_f1"] < 1.0  # scored against gold on dev
    gold = pq.read_table(repo / "data" / "mentions" / "synthetic-gold" / "mentions.parquet")
    corpus = pq.read_table(repo / "data" / "docs" / "synthetic" / "mentions.parquet")
    assert gold.num_rows == corpus.num_rows


def test_interrupted_annotation_resumes_from_finished_shards(fresh_repo):
    repo, env = fresh_repo
    run = "synthetic-entity-id"
    out = repo / "data" / "mentions" / run / "mentions.parquet"
    metrics = repo / "metrics" / "annotate" / f"{run}.json"
    before, metrics_before = out.read_bytes(), metrics.read_bytes()
    # a run that finished only its first shard before being killed
    code = (
        "from flows.annotate import plan, settings\n"
        "from tasks.annotation.shards import annotate_shard\n"
        f"p = plan(settings(), '{run}')\n"
        "annotate_shard(p.job, 0, p.shards[0]['doc_ids'])\n"
        "print(len(p.shards))\n"
    )
    shards = int(run_ok([sys.executable, "-c", code], repo, env).split()[-1])
    assert shards > 1
    proc = subprocess.run(
        [sys.executable, "-m", "flows.annotate", "--run", run],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.count("[reused from cache]") == 1
    docs = pq.read_table(repo / "data" / "docs" / "synthetic" / "documents.parquet").num_rows
    assert f"annotate@{run}: {docs}/{docs} docs (" in proc.stderr  # the closing progress line
    assert out.read_bytes() == before  # same bytes as the uninterrupted run
    assert metrics.read_bytes() == metrics_before  # its metrics too (no run history in them)
    assert "1 of " in proc.stderr and " shards reused from the cache" in proc.stderr
    assert not any((repo / "data" / "cache" / "annotate" / run).iterdir())  # cache cleared


def test_a_team_shares_the_trained_pipeline_through_a_dvc_remote(fresh_repo, tmp_path):
    """#29.5: `dvc push` to a remote, a fresh `git clone` elsewhere, `dvc pull`: every output
    (data, checkpoints, figures) arrives and `dvc repro` there has nothing to do. The remote is
    a local path here; S3/GCS only change its URL (docs/operations.md "A team's DVC remote")."""
    repo, env = fresh_repo
    store = tmp_path / "team-store"
    dvc = [sys.executable, "-m", "dvc"]
    # --local: the test's remote stays out of the committed .dvc/config (a team commits theirs)
    run_ok([*dvc, "remote", "add", "--local", "--default", "team", str(store)], repo, env)
    run_ok([*dvc, "push"], repo, env)
    assert any(store.rglob("*")), "dvc push sent nothing"
    clone = tmp_path / "colleague"
    run_ok(["git", "clone", "-q", str(repo), str(clone)], tmp_path, env)
    assert not (clone / "data").exists()  # git carries no DVC output
    run_ok([*dvc, "remote", "add", "--local", "--default", "team", str(store)], clone, env)
    run_ok([*dvc, "pull"], clone, env)
    assert json.loads(run_ok([*dvc, "status", "--json"], clone, env)) == {}
    again = run_ok([*dvc, "repro"], clone, env)
    assert "Data and pipelines are up to date." in again and "Running stage" not in again
    assert _digests(clone) == _digests(repo)
    checkpoint = Path("artifacts/train_coref/asl/seed1/best.pt")
    assert (clone / checkpoint).read_bytes() == (repo / checkpoint).read_bytes()


def test_a_training_stage_runs_as_torchrun_processes_when_nproc_is_2(fresh_repo):
    """#29.1: train.nproc 2 turns the stage command into torchrun's 2 processes (gloo on the
    CPU); RANK 0 alone writes the checkpoints and metrics and opens the MLflow run. It
    retrains train_coref@baseline with other settings, then puts the workspace back (params.yaml,
    the stage's metrics and artifacts) so the tests after it see the committed outputs."""
    repo, env = fresh_repo
    runs = (
        "import mlflow; mlflow.set_tracking_uri('sqlite:///mlflow.db');"
        "print(len(mlflow.search_runs(experiment_names=['train_coref'], output_format='list',"
        " filter_string=\"attributes.run_name = 'train_coref@baseline/seed1'\")))"
    )
    before = int(run_ok([sys.executable, "-c", runs], repo, env).split()[-1])
    params_file = repo / "params.yaml"
    original = params_file.read_text()
    params = yaml.safe_load(original)
    params["train_coref"]["train"].update(nproc=2, accumulate=2, resume=False)
    params_file.write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "flows.train_coref", "--encoder", "baseline"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    finally:
        params_file.write_text(original)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "flows.train_coref: 2 data-parallel processes" in proc.stderr  # the launcher's line
    # both processes trained and logged each epoch (the loop logs on every rank)
    assert proc.stderr.count("baseline seed 1 epoch 2/2: train loss") == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    seed_dir = repo / "artifacts" / "train_coref" / "baseline" / "seed1"
    assert (seed_dir / "best.pt").is_file() and (seed_dir / "history.json").is_file()
    assert json.loads((repo / "metrics" / "train_coref" / "baseline.json").read_text())
    assert int(run_ok([sys.executable, "-c", runs], repo, env).split()[-1]) == before + 1
    assert not list((repo / "artifacts" / ".tmp").glob("*"))  # RANK 1's writes left nothing
    run_ok(["git", "checkout", "--", "metrics/train_coref/baseline.json"], repo, env)
    run_ok([sys.executable, "-m", "dvc", "checkout", "--force", "train_coref@baseline"], repo, env)
    assert run_ok(["git", "status", "--porcelain", "--", "metrics", "params.yaml"], repo, env) == ""
    status = run_ok([sys.executable, "-m", "dvc", "status", "--json", "train_coref@baseline"],
                    repo, env)  # fmt: skip
    assert json.loads(status) == {}
