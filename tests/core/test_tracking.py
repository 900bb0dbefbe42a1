"""The MLflow helper: runs from several processes at once on a fresh tracking database."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from pathlib import Path

import pytest

pytest.importorskip("mlflow")


def _open_run(uri: str, model: str, barrier, results) -> None:
    import os

    os.environ["MLFLOW_TRACKING_URI"] = uri
    from tasks.core.tracking import tracked_run

    barrier.wait()  # every process reaches the empty database at the same moment
    try:
        with tracked_run("train_mage", f"{model}-qa2", dataset="babi/qa2", seed=1) as run:
            import mlflow

            mlflow.log_metric("dev_acc", 0.5)
            results.put((model, run.info.run_id))
    except Exception as exc:  # reported to the test, which fails on it
        results.put((model, f"error: {type(exc).__name__}: {exc}"))


def test_concurrent_first_runs_on_fresh_database(tmp_path):
    """Two training lanes started together (two `python -m flows.train_mage`)
    both open their run: creating the database and the experiment happens once, not twice."""
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    ctx = mp.get_context("spawn")
    lanes = 3
    barrier, results = ctx.Barrier(lanes), ctx.Queue()
    procs = [
        ctx.Process(target=_open_run, args=(uri, f"model{i}", barrier, results))
        for i in range(lanes)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    outcomes = dict(results.get(timeout=5) for _ in procs)
    errors = {m: o for m, o in outcomes.items() if o.startswith("error")}
    assert not errors, errors
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=["train_mage"], output_format="list")
    assert sorted(r.info.run_name for r in runs) == [
        f"train_mage@model{i}-qa2/seed1" for i in range(3)
    ]


def test_store_resolves_to_the_repository_an_experiment_was_queued_from(tmp_path, monkeypatch):
    """`dvc exp run --queue/--temp` runs stages in a copy under .dvc/tmp/exps; DVC sets DVC_ROOT
    to the main repository for every stage command: relative store paths resolve there."""
    from tasks.core import tracking

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("DVC_ROOT", raising=False)
    assert tracking.tracking_uri() == f"sqlite:///{tracking.REPO_ROOT / 'mlflow.db'}"
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    assert tracking.tracking_uri() == f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert tracking.artifact_root() == (tmp_path / "mlartifacts").as_uri()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:////elsewhere/m.db")  # still wins
    assert tracking.tracking_uri() == "sqlite:////elsewhere/m.db"


def _runs(uri: str, experiment: str):
    import mlflow

    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(experiment_names=[experiment], output_format="list")


def _artifacts(uri: str, run_id: str, path: str | None = None) -> list[str]:
    from mlflow.tracking import MlflowClient

    return [f.path for f in MlflowClient(uri).list_artifacts(run_id, path)]


@pytest.mark.parametrize(("limit_mb", "copied"), [(50.0, True), (0.0, False)])
def test_the_best_checkpoint_is_logged_or_only_its_dvc_path(
    tmp_path, monkeypatch, limit_mb, copied
):
    from tasks.core import tracking
    from tasks.training.loop import fit
    from tests.training.test_loop import ToyRecipe, settings

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setattr(tracking, "settings", lambda: tracking.TrackingSettings(
        artifacts=str(tmp_path / "mlartifacts"), max_checkpoint_mb=limit_mb))  # fmt: skip
    out = tmp_path / "seed1"
    with tracked_run_for_test("toy-syn1", seed=1):
        fit(ToyRecipe(), settings(epochs=2), out, name="toy", log_metrics=tracking.log_metrics)
        tracking.log_checkpoint(out / "best.pt")  # the stage's call, once published
    (run,) = _runs(uri, "train_mage")
    assert run.info.run_name == "train_mage@toy-syn1/seed1"
    import mlflow

    tags = mlflow.get_experiment_by_name("train_mage").tags  # opens on the runs table
    assert tags["mlflow.experimentKind"] == "custom_model_development"
    assert run.data.tags["checkpoint"] == str(out / "best.pt")  # outside the repo: as given
    assert int(run.data.tags["checkpoint_bytes"]) == (out / "best.pt").stat().st_size
    expected = ["checkpoints/best.pt"] if copied else []
    assert _artifacts(uri, run.info.run_id, "checkpoints") == expected


def tracked_run_for_test(item: str, seed: int):
    from tasks.core.tracking import tracked_run

    return tracked_run("train_mage", item, dataset="toy", seed=seed)


def test_report_is_logged_as_an_artifact_of_the_run_report(tmp_path, monkeypatch):
    import flows.report as report_flow
    from tasks.core import tracking

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr(tracking, "settings", lambda: tracking.TrackingSettings(
        artifacts=str(tmp_path / "mlartifacts")))  # fmt: skip
    out = tmp_path / "reports" / "results.md"
    out.parent.mkdir()
    out.write_text("# Results\n")
    monkeypatch.setattr(report_flow.stage, "build", lambda reports: out)
    report_flow.report()
    (run,) = _runs(uri, "report")
    assert run.info.run_name == "report"
    assert _artifacts(uri, run.info.run_id, "report") == ["report/results.md"]


@pytest.mark.slow  # three stages in a DVC temporary workspace: ~1 min (2 min on a loaded box)
def test_a_temp_dvc_experiment_logs_to_the_main_repository_store(tmp_path):
    """`dvc exp run --temp` (the executor `--queue` + `dvc queue start` uses too) runs in a
    copy under .dvc/tmp/exps that is deleted afterwards: its run is in the main mlflow.db."""
    import sys

    from tests.conftest import copy_checkout, run_ok

    repo = tmp_path / "repo"
    env = copy_checkout(repo)
    # --force: the committed dvc.lock already matches stats@synthetic (its outputs are in git)
    cmd = ["dvc", "exp", "run", "--temp", "--force", "stats@synthetic"]
    run_ok([sys.executable, "-m", *cmd], repo, env)
    (run,) = _runs(f"sqlite:///{repo / 'mlflow.db'}", "stats")
    assert (
        run.info.run_name == "stats@synthetic" and run.data.tags["dvc_stage"] == run.info.run_name
    )
    assert _artifacts(f"sqlite:///{repo / 'mlflow.db'}", run.info.run_id) == ["synthetic.json"]
    assert (repo / "mlartifacts").is_dir()
    assert not list((repo / ".dvc" / "tmp").glob("exps/**/mlflow.db"))


def test_runs_log_their_stage_inputs_as_datasets(tmp_path, monkeypatch):
    """Issue #30.3: the Dataset column of MLflow shows what each run read: the DVC stage's data
    deps (name = path, digest = dvc.lock's md5); code deps are not datasets."""
    from tasks.core import tracking

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("DVC_STAGE", "train_mage@bigru-syn2")
    monkeypatch.setattr(tracking, "settings", lambda: tracking.TrackingSettings(
        artifacts=str(tmp_path / "mlartifacts")))  # fmt: skip
    entry = {"cmd": "x", "deps": [
        {"path": "data/graphs/synthetic-gold/graphs.parquet", "md5": "0" * 32, "size": 1},
        {"path": "models/mage/train.py", "md5": "1" * 32, "size": 1},
        {"path": "data/docs/synthetic", "md5": "2" * 32 + ".dir", "size": 3, "nfiles": 3},
    ]}  # fmt: skip
    monkeypatch.setattr(tracking, "_stage_lock_entry", lambda stage: entry)
    with tracking.tracked_run("train_mage", "bigru-syn2", dataset="synthetic/syn2", seed=1):
        pass
    with tracking.tracked_runs("train_mage", [{"item": "bigru-syn2", "dataset": "d", "seed": 2}]):
        pass
    runs = sorted(_runs(uri, "train_mage"), key=lambda r: r.info.run_name)
    assert [r.info.run_name for r in runs] == ["train_mage@bigru-syn2/seed1",
                                               "train_mage@bigru-syn2/seed2"]  # fmt: skip
    for run in runs:
        shown = [(d.dataset.name, d.dataset.digest) for d in run.inputs.dataset_inputs]
        assert sorted(shown) == [("data/docs/synthetic", "2" * 32 + ".dir"),
                                 ("data/graphs/synthetic-gold/graphs.parquet", "0" * 32)]  # fmt: skip


@pytest.mark.slow  # an `mlflow server` start and two training processes: ~1-2 min
def test_two_stages_at_once_log_to_an_mlflow_server(tmp_path, mlflow_server):
    """Issue #29.4: `tracking.uri: http://...`, a team's `mlflow server` (sqlite backend,
    --serve-artifacts). Two `python -m flows.train_mage` processes at once on a fresh server:
    both runs are there, with their metrics and checkpoints, which the server stores and serves
    (no mlflow.db, no mlartifacts/ beside the pipeline)."""
    import subprocess
    import sys

    from mlflow.tracking import MlflowClient

    from tests.conftest import copy_checkout
    from tests.models.mage.test_data import build_synthetic_graphs

    base, server = mlflow_server
    repo = tmp_path / "repo"
    env = copy_checkout(repo)
    build_synthetic_graphs(repo / "data" / "graphs" / "synthetic-gold")
    params_file = repo / "params.yaml"
    text = params_file.read_text()
    edits = {"uri: sqlite:///mlflow.db": f"uri: {base}", "train: {epochs: 3,": "train: {epochs: 1,"}
    for old, new in edits.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    params_file.write_text(text)
    models = ("bigru", "bigru-mage16")
    procs = {
        model: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flows.train_mage",
                "--model",
                model,
                "--task",
                "syn2",
                "--seed",
                "1",
            ],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for model in models
    }
    for proc in procs.values():
        out = proc.communicate(timeout=600)[0]
        assert proc.returncode == 0, out[-3000:]
        assert "MLflow: could not" not in out, out[-3000:]

    client = MlflowClient(base)
    experiment = client.get_experiment_by_name("train_mage")
    assert experiment.artifact_location.startswith("mlflow-artifacts:")  # the server's store
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert sorted(runs) == sorted(f"train_mage@{m}-syn2/seed1" for m in models)
    for model in models:
        run = runs[f"train_mage@{model}-syn2/seed1"]
        assert run.info.status == "FINISHED"
        assert {"best_dev_acc", "test_acc", "dev_acc", "train_loss"} <= set(run.data.metrics)
        assert [m.step for m in client.get_metric_history(run.info.run_id, "train_loss")] == [1]
        checkpoint = repo / "artifacts" / "train_mage" / f"{model}-syn2" / "seed1" / "best.pt"
        assert run.data.tags["checkpoint"] == str(checkpoint.relative_to(repo))
        assert [f.path for f in client.list_artifacts(run.info.run_id, "checkpoints")] == [
            "checkpoints/best.pt"
        ]
        got = client.download_artifacts(run.info.run_id, "checkpoints/best.pt", str(tmp_path))
        assert Path(got).read_bytes() == checkpoint.read_bytes()
    stored = list((server / "artifacts").rglob("best.pt"))  # written by the server
    assert len(stored) == 2
    assert not (repo / "mlartifacts").exists() and not (repo / "mlflow.db").exists()


def test_copy_runs_gathers_a_lanes_store_once(tmp_path, monkeypatch):
    """A lane's mlflow.db copied into the project's store: whole learning curves, parameters,
    tags, datasets, artifacts and statuses; a second copy adds only runs finished since, and a
    run still going is left for it."""
    from mlflow.tracking import MlflowClient

    from tasks.core import tracking

    def store(name: str) -> str:
        monkeypatch.setattr(tracking, "settings", lambda: tracking.TrackingSettings(
            artifacts=str(tmp_path / name / "mlartifacts")))  # fmt: skip
        (tmp_path / name).mkdir(exist_ok=True)
        uri = f"sqlite:///{tmp_path / name / 'mlflow.db'}"
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
        return uri

    lane = store("lane")
    monkeypatch.setenv("DVC_STAGE", "train_mage@toy-syn1")
    entry = {"deps": [{"path": "data/graphs/g.parquet", "md5": "0" * 32, "size": 1}]}
    monkeypatch.setattr(tracking, "_stage_lock_entry", lambda stage: entry)
    (tmp_path / "metrics.json").write_text('{"test": 0.5}')
    with tracked_run_for_test("toy-syn1", seed=1):
        for epoch, acc in enumerate([0.2, 0.4, 0.3], start=1):
            tracking.log_metrics({"dev_acc": acc}, step=epoch)
        tracking.log_params({"lr": 0.001})
        tracking.log_file(tmp_path / "metrics.json")
    with pytest.raises(KeyboardInterrupt), tracked_run_for_test("toy-syn1", seed=2):
        raise KeyboardInterrupt
    source = MlflowClient(lane)
    lane_experiment = source.get_experiment_by_name("train_mage").experiment_id
    running = source.create_run(lane_experiment, run_name="train_mage@toy-syn1/seed3").info.run_id

    main_uri = store("main")
    assert tracking.main(["copy-runs", str(tmp_path / "lane")]) == 0
    copied = {r.info.run_name: r for r in _runs(main_uri, "train_mage")}
    assert sorted(copied) == ["train_mage@toy-syn1/seed1", "train_mage@toy-syn1/seed2"]
    first = copied["train_mage@toy-syn1/seed1"]
    (original,) = source.search_runs([lane_experiment], "attributes.run_name = "
                                     "'train_mage@toy-syn1/seed1'")  # fmt: skip
    dest = MlflowClient(main_uri)
    assert [(m.step, m.value) for m in dest.get_metric_history(first.info.run_id, "dev_acc")] == [
        (1, 0.2), (2, 0.4), (3, 0.3)]  # fmt: skip
    assert first.data.params == {"lr": "0.001"}
    assert first.info.status == "FINISHED"
    assert copied["train_mage@toy-syn1/seed2"].info.status == "KILLED"
    assert first.info.start_time == original.info.start_time
    assert first.data.tags[tracking.COPIED_FROM] == original.info.run_id
    assert first.data.tags["git_sha"] == original.data.tags["git_sha"]
    assert _artifacts(main_uri, first.info.run_id) == ["metrics.json"]
    assert [d.dataset.name for d in first.inputs.dataset_inputs] == ["data/graphs/g.parquet"]

    assert tracking.copy_runs(str(tmp_path / "lane")) == tracking.CopyReport(0, 2, 1)
    source.set_terminated(running, "FINISHED")
    assert tracking.copy_runs(lane) == tracking.CopyReport(1, 2, 0)
    assert len(_runs(main_uri, "train_mage")) == 3


def test_copy_runs_names_a_missing_store(tmp_path, capsys):
    from tasks.core import tracking

    assert tracking.main(["copy-runs", str(tmp_path / "nowhere")]) == 2
    assert f"error: {tmp_path / 'nowhere'}: no MLflow store there" in capsys.readouterr().err


def test_dirty_means_a_source_or_settings_edit_not_the_pipelines_outputs(tmp_path):
    """Issue #59 row 10: a clean clone whose stages rewrite tracked outputs (dvc.lock,
    metrics/, reports/) is not "-dirty"; an edit of code or params.yaml is."""
    import subprocess

    from tasks.core.tracking import git_sha

    def git(*args):
        subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=tmp_path,
                       check=True, capture_output=True)  # fmt: skip

    for name in ("params.yaml", "dvc.lock", "reports/results.md", "tasks/a.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "x")
    (tmp_path / "dvc.lock").write_text("y\n")
    (tmp_path / "reports/results.md").write_text("y\n")
    assert not git_sha(tmp_path).endswith("-dirty")
    (tmp_path / "params.yaml").write_text("y\n")
    assert git_sha(tmp_path).endswith("-dirty")


def _lane_and_main(tmp_path, monkeypatch) -> tuple[str, str]:
    """A lane's store holding one finished run (3 metric points, an artifact), and the
    project's store (the destination, MLFLOW_TRACKING_URI) as yet empty."""
    from tasks.core import tracking

    def store(name: str) -> str:
        monkeypatch.setattr(tracking, "settings", lambda: tracking.TrackingSettings(
            artifacts=str(tmp_path / name / "mlartifacts")))  # fmt: skip
        (tmp_path / name).mkdir(exist_ok=True)
        uri = f"sqlite:///{tmp_path / name / 'mlflow.db'}"
        monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
        return uri

    lane = store("lane")
    (tmp_path / "metrics.json").write_text('{"test": 0.5}')
    with tracked_run_for_test("toy-syn1", seed=1):
        for epoch, acc in enumerate([0.2, 0.4, 0.3], start=1):
            tracking.log_metrics({"dev_acc": acc}, step=epoch)
        tracking.log_file(tmp_path / "metrics.json")
    return lane, store("main")


def test_a_copy_cut_short_is_replaced_by_the_next_copy(tmp_path, monkeypatch):
    """Issue #59 row 1: copy-runs killed mid-copy left the run RUNNING with part of its data,
    tagged as copied (the tag was written at create time): every later copy skipped it."""
    from mlflow.tracking import MlflowClient

    from tasks.core import tracking

    lane, main_uri = _lane_and_main(tmp_path, monkeypatch)
    real = MlflowClient.log_artifacts

    def killed(self, *args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C (or a kill) after the metrics, before the artifacts

    monkeypatch.setattr(MlflowClient, "log_artifacts", killed)
    with pytest.raises(KeyboardInterrupt):
        tracking.copy_runs(lane)
    (partial,) = _runs(main_uri, "train_mage")
    assert partial.info.status == "RUNNING" and tracking.COPIED_FROM not in partial.data.tags

    monkeypatch.setattr(MlflowClient, "log_artifacts", real)
    assert tracking.copy_runs(lane) == tracking.CopyReport(copied=1, replaced=1)
    (copy,) = _runs(main_uri, "train_mage")
    assert copy.info.run_id != partial.info.run_id and copy.info.status == "FINISHED"
    dest = MlflowClient(main_uri)
    assert [m.value for m in dest.get_metric_history(copy.info.run_id, "dev_acc")] == [
        0.2, 0.4, 0.3]  # fmt: skip
    assert _artifacts(main_uri, copy.info.run_id) == ["metrics.json"]
    assert tracking.copy_runs(lane) == tracking.CopyReport(already=1)


@pytest.mark.parametrize("content", [b"", b"not a database, just some bytes" * 100],
                         ids=["zero-bytes", "garbage"])  # fmt: skip
def test_copy_runs_refuses_a_file_that_is_not_a_store_and_leaves_it_alone(
    tmp_path, monkeypatch, capsys, content
):
    """Issue #59 rows 2-3: a zero-byte mlflow.db was initialised by MLflow as a store (0 ->
    954,368 bytes) and copied from as '0 runs'; a corrupt one raised SQLAlchemy's traceback."""
    from tasks.core import tracking

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'main.db'}")
    source = tmp_path / "lane" / "mlflow.db"
    source.parent.mkdir()
    source.write_bytes(content)
    before = source.stat()
    start = time.monotonic()
    assert tracking.main(["copy-runs", str(source.parent)]) == 2
    assert time.monotonic() - start < 10
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {source}: not ")
    assert "Traceback" not in err
    after = source.stat()
    assert source.read_bytes() == content and after.st_mtime_ns == before.st_mtime_ns
    assert sorted(p.name for p in source.parent.iterdir()) == ["mlflow.db"]
    assert not (tmp_path / "main.db").exists()  # nothing done to the destination either


@pytest.mark.parametrize("server", ["refused", "silent"])
def test_copy_runs_from_a_dead_server_is_one_line_in_seconds(server, tmp_path, monkeypatch,
                                                             capsys):  # fmt: skip
    """Issue #59 row 3: a source server that does not answer took 268 s of MLflow's retries,
    then five tracebacks; the stages' own server check says so in one line."""
    import socket

    from tasks.core import tracking
    from tests.conftest import free_port

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'main.db'}")
    with contextlib.ExitStack() as stack:
        if server == "refused":
            uri = f"http://127.0.0.1:{free_port()}"
        else:
            silent = stack.enter_context(socket.socket())
            silent.bind(("127.0.0.1", 0))
            silent.listen()  # accepts, never answers
            uri = f"http://127.0.0.1:{silent.getsockname()[1]}"
        start = time.monotonic()
        assert tracking.main(["copy-runs", uri]) == 2
        assert time.monotonic() - start < 10
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: tracking server {uri} ")
    assert "is unreachable" in err


def test_a_copied_checkouts_store_is_detected_and_relocated(tmp_path, monkeypatch, caplog):
    """Issue #59 row 13: mlflow.db records absolute artifact paths; in a copied (or moved)
    checkout its experiments still point at the old folder. A run there says so in one line
    naming the fix, and `relocate` points the store at the copy's own mlartifacts/."""
    import logging
    import shutil

    from mlflow.tracking import MlflowClient

    from tasks.core import tracking

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(tracking, "_moved_warned", set())
    monkeypatch.setenv("DVC_ROOT", str(old))  # the store beside dvc.yaml: this checkout's
    (old / "notes.md").write_text("x\n")
    with tracking.tracked_run("stats", "before", dataset="x"):
        tracking.log_file(old / "notes.md")
    shutil.copytree(old, new)
    monkeypatch.setenv("DVC_ROOT", str(new))
    monkeypatch.delenv("MLFLOW_TRACKING_URI")  # mlflow.set_tracking_uri sets it: a new process
    with caplog.at_level(logging.WARNING, "corefrepro.tracking"):
        with tracking.tracked_run("stats", "after", dataset="x"):
            pass
        with tracking.tracked_run("stats", "again", dataset="x"):
            pass
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"keeps its artifacts at {(old / 'mlartifacts').as_uri()}/stats" in warning
    assert "python -m tasks.core.tracking relocate" in warning and "\n" not in warning

    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert tracking.main(["relocate"]) == 0
    shutil.rmtree(old)  # nothing of the old folder is needed any more
    client = MlflowClient(f"sqlite:///{new / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("stats")
    assert experiment.artifact_location == f"{(new / 'mlartifacts').as_uri()}/stats"
    runs = {r.info.run_name: r for r in client.search_runs([experiment.experiment_id])}
    assert all(r.info.artifact_uri.startswith((new / "mlartifacts").as_uri())
               for r in runs.values())  # fmt: skip
    assert [f.path for f in client.list_artifacts(runs["stats@before"].info.run_id)] == ["notes.md"]
    caplog.clear()
    monkeypatch.setattr(tracking, "_moved_warned", set())
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with (
        caplog.at_level(logging.WARNING, "corefrepro.tracking"),
        tracking.tracked_run("stats", "relocated", dataset="x"),
    ):
        pass
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_each_run_logs_its_headline_figure_in_the_reports_unit(tmp_path, monkeypatch):
    """Issue #59 row 15: the runs table shows the figure the report prints when the metric
    column `headline` is added: in the report's unit (test error in %, not a fraction), the
    run's tag `headline` naming what it is; stacked seeds' runs too."""
    from mlflow.tracking import MlflowClient

    from tasks.core import tracking
    from tasks.results.record import STAGE_METRICS

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setattr(tracking, "settings", lambda: tracking.TrackingSettings(
        artifacts=str(tmp_path / "mlartifacts")))  # fmt: skip
    with tracking.tracked_run("train_mage", "ga-qa2", dataset="babi/qa2", seed=1):
        tracking.log_metrics({"dev_acc": 0.5, "train_loss": 1.0}, step=1)  # the curve
        tracking.log_metrics({"test_acc": 0.75, "test_error": 0.25, "best_epoch": 1}, None)
    specs = [{"item": "ga-qa3", "dataset": "babi/qa3", "seed": s} for s in (1, 2)]
    with tracking.tracked_runs("train_mage", specs) as ids:
        for run_id, error in zip(ids, (0.125, 0.5), strict=True):
            tracking.log_metrics({"test_error": error}, None, run_id=run_id)
    runs = {r.info.run_name: r for r in _runs(uri, "train_mage")}
    client = MlflowClient(uri)
    got = {name: client.get_run(r.info.run_id).data for name, r in runs.items()}
    assert {n: d.metrics["headline"] for n, d in got.items()} == {
        "train_mage@ga-qa2/seed1": 25.0, "train_mage@ga-qa3/seed1": 12.5,
        "train_mage@ga-qa3/seed2": 50.0}  # fmt: skip
    assert {d.tags["headline"] for d in got.values()} == {"test error rate (report Table 1), %"}
    # the records the report is built from state the same figure in the same unit
    for stage, headline in tracking.HEADLINES.items():
        specs_ = {m.name: m for m in STAGE_METRICS.get(stage, [])}
        name = headline.key.removeprefix("final_")
        if name in specs_:
            assert (specs_[name].scale, specs_[name].unit) == (headline.scale, headline.unit)


def test_runs_name_the_dvc_experiment_and_the_preset_that_made_them(tmp_path, monkeypatch):
    """Issue #59 row 21: a run of `dvc exp run` (a preset, a smoke run, --temp) is tagged with
    the DVC experiment's name (DVC_EXP_NAME, set by DVC for the stage commands) and the preset,
    scale and smoke whose overrides params.yaml holds; a plain run says none. Nothing of it is
    a stage dep: read from the environment and params.yaml."""
    from dvc.utils.hydra import apply_overrides

    from tasks.core import presets, tracking

    base = presets.committed_params(tracking.REPO_ROOT)
    params = tmp_path / "params.yaml"

    def with_overrides(overrides: list[str]) -> Path:
        params.write_text(base, encoding="utf-8")
        apply_overrides(params, overrides)
        tracking.preset_of.cache_clear()
        return params

    preset = presets.load("mage-babi")
    assert tracking.preset_of(with_overrides([])) == ("none", "none", "none")
    extra = ["train_mage.train.lr=0.0123"]  # one more override of the user's own
    assert tracking.preset_of(with_overrides([*preset.overrides_for("paper"), *extra])) == (
        "mage-babi", "paper", "false")  # fmt: skip
    assert tracking.preset_of(with_overrides(preset.overrides_for("paper", smoke=True))) == (
        "mage-babi", "paper", "true")  # fmt: skip
    assert tracking.preset_of(with_overrides(extra)) == ("none", "none", "none")
    tracking.preset_of.cache_clear()

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setattr(tracking, "settings", lambda: tracking.TrackingSettings(
        artifacts=str(tmp_path / "mlartifacts")))  # fmt: skip
    monkeypatch.setattr(tracking, "preset_of", lambda: ("mage-babi", "paper", "true"))
    monkeypatch.setenv("DVC_EXP_NAME", "sleek-moth")
    with tracking.tracked_run("stats", "x", dataset="x"):
        pass
    monkeypatch.delenv("DVC_EXP_NAME")
    monkeypatch.setattr(tracking, "preset_of", lambda: ("none", "none", "none"))
    with tracking.tracked_run("stats", "y", dataset="x"):
        pass
    tags = {r.info.run_name: r.data.tags for r in _runs(uri, "stats")}
    wanted = {"dvc_exp": "sleek-moth", "preset": "mage-babi", "scale": "paper", "smoke": "true"}
    assert {k: tags["stats@x"][k] for k in wanted} == wanted
    assert {k: tags["stats@y"][k] for k in wanted} == dict.fromkeys(wanted, "none")


def test_the_mlflow_docs_describe_what_a_fresh_clone_shows():
    """Issue #59 rows 14-15: docs/operations.md's MLflow section names the experiments a
    fresh clone's `dvc repro` makes -- not those of the stages whose outputs are all committed
    (they never run there) -- and the metric column to add, with each stage's headline."""
    import re

    import yaml

    from tasks.core import tracking

    stages = yaml.safe_load((tracking.REPO_ROOT / "dvc.yaml").read_text())["stages"]

    def committed(body: dict) -> bool:  # every output in git (cache: false), none in DVC's cache
        outs = [o for kind in ("outs", "metrics", "plots") for o in body.get(kind) or []]
        return all(isinstance(o, dict) and next(iter(o.values())).get("cache") is False
                   for o in outs)  # fmt: skip

    never = {n for n, s in stages.items() if committed(s.get("do", s)) and n in tracking.PAPERS}
    ran = {n for n in stages if n in tracking.PAPERS} - never
    text = (tracking.REPO_ROOT / "docs" / "operations.md").read_text()
    section = text.split("**What a fresh clone shows.**")[1].split("\n\n")[0]
    shows, _, missing = section.partition("The stages whose outputs are all committed")
    named = lambda part: set(re.findall(r"`(\w+)`", part)) & set(tracking.PAPERS)  # noqa: E731
    assert never and named(shows) == ran and named(missing) == never
    headline = text.split("**The headline column.**")[1].split("\n\n")[0]
    assert f"**`{tracking.HEADLINE_METRIC}`**" in headline
    assert all(f"`{stage}`" in headline for stage in tracking.HEADLINES)


def test_the_stages_of_one_experiment_match_the_presets_once(tmp_path, monkeypatch):
    """Issue #59 row 21: matching params.yaml against every preset took seconds in every
    stage process of an experiment; the stages now share the answer (a file in the temp
    folder keyed by params.yaml, HEAD's params and the presets)."""
    import tempfile

    from tasks.core import presets, tracking

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    params = tmp_path / "params.yaml"
    base = presets.committed_params(tracking.REPO_ROOT)
    params.write_text(base.replace("seeds: [1]", "seeds: [1, 7]", 1), encoding="utf-8")
    assert params.read_text(encoding="utf-8") != base
    calls = []
    real = tracking._best_preset
    monkeypatch.setattr(tracking, "_best_preset", lambda *a: calls.append(1) or real(*a))
    answers = []
    for _ in range(2):  # two stage processes of one experiment: the in-process cache cleared
        tracking.preset_of.cache_clear()
        answers.append(tracking.preset_of(params))
    assert calls == [1] and answers[0] == answers[1]
    assert list(tmp_path.glob("corefrepro-preset-*.json"))
    tracking.preset_of.cache_clear()
