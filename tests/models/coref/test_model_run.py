"""The own coreference model as an annotation run (params.yaml annotate.model_runs): the
`annotate_model` / `graphs_model` stages' commands in a scratch copy of the checkout, with the
threads and the processes executor (spawned workers load the checkpoint themselves)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
import yaml

from tasks.annotation import annotators
from tasks.annotation.annotators.base import Doc
from tests.conftest import copy_checkout, run_ok
from tests.models.coref.test_kbest_stage import make_root

RUN = "handmade-model"


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A copy of the checkout with handmade's tables and a tiny asl checkpoint in place."""
    repo = tmp_path_factory.mktemp("clone") / "repo"
    env = copy_checkout(repo)
    make_root(repo)
    return repo, env


def _set_executor(repo: Path, executor: str) -> dict:
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["annotate"].update(executor=executor, workers=2, shard_size=3)
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return params


def test_model_run_annotates_scores_and_builds_graphs_with_threads_and_processes(scratch):
    repo, env = scratch
    params = _set_executor(repo, "threads")
    entry = params["annotate"]["model_runs"][RUN]
    assert entry["annotator"] == "model"
    assert (repo / entry["settings"]["checkpoint"]).exists()
    annotate = [sys.executable, "-m", "flows.annotate", "--run", RUN]
    run_ok(annotate, repo, env, timeout=300)
    out = repo / "data" / "mentions" / RUN / "mentions.parquet"
    by_threads = out.read_bytes()
    mentions = pq.read_table(out)
    assert set(mentions.column("annotator").to_pylist()) <= {"model"}
    metrics = json.loads((repo / "metrics" / "annotate" / f"{RUN}.json").read_text())
    docs = pq.read_table(repo / "data" / "docs" / "handmade" / "documents.parquet")
    assert metrics["documents"] == docs.num_rows and metrics["shards"] == 2
    assert metrics["annotator"] == "model" and "conll_f1" in metrics["dev"]  # scored vs gold
    assert metrics["validation"]["model_mentions"] == mentions.num_rows

    _set_executor(repo, "processes")
    proc = subprocess.run(annotate, cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "(model annotator, processes x2)" in proc.stderr
    assert out.read_bytes() == by_threads  # the same mentions from spawned workers

    run_ok([sys.executable, "-m", "flows.graphs", "--run", RUN], repo, env, timeout=300)
    graphs = pq.read_table(repo / "data" / "graphs" / RUN / "graphs.parquet")
    items = pq.read_table(repo / "data" / "docs" / "handmade" / "items.parquet")
    assert graphs.num_rows == (items.num_rows or docs.num_rows)
    run_ok([sys.executable, "-m", "flows.view_entitynlm", "--run", RUN], repo, env, timeout=300)
    assert (repo / "data" / "graphs" / RUN / "entitynlm.parquet").exists()


def test_model_run_without_checkpoint_setting_is_refused(scratch):
    repo, env = scratch
    path = repo / "params.yaml"
    saved = path.read_text()
    params = yaml.safe_load(saved)
    params["annotate"]["model_runs"]["bare-model"] = {"corpus": "handmade", "annotator": "model"}
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    try:
        code = "from flows.annotate import main; main(['--run', 'bare-model'])"
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True
        )
    finally:
        path.write_text(saved)
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert "annotate.model_runs.bare-model needs settings.checkpoint" in last


def test_annotator_threads_setting_pins_torch_threads(scratch):
    """2 workers x torch's default threads would oversubscribe 2 cores: one thread each."""
    repo, _ = scratch
    checkpoint = repo / "artifacts" / "train_coref" / "asl" / "seed1" / "best.pt"
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        model = {"factory": "models.coref.annotator:load_annotator", "checkpoint": str(checkpoint)}
        annotator = annotators.get("model", model)
        assert torch.get_num_threads() == 1
        torch.set_num_threads(2)
        annotators.get("model", {**model, "settings": {"threads": None}})
        assert torch.get_num_threads() == 2  # None leaves the process setting alone
        (answer,) = annotator.annotate([Doc("d", [], [])])
        assert answer.mentions == []
    finally:
        torch.set_num_threads(old)
