"""tasks/training/stage.py: what a training stage does around its seeds' folders."""

from __future__ import annotations

import dataclasses

import pytest

import flows.train_coref as coref_stage
import flows.train_entitynlm as entitynlm_stage
from tasks.core import config
from tasks.training import stage as training_stage
from tasks.training.stage import artifact_dir, drop_other_seeds


def _seed_folders(stage: str, item: str, seeds) -> None:
    for seed in seeds:
        folder = artifact_dir(stage, item, seed)
        folder.mkdir(parents=True)
        (folder / "last.pt").write_bytes(b"x")


def _left(stage: str, item: str) -> list[str]:
    return sorted(p.name for p in artifact_dir(stage, item, 1).parent.iterdir())


def test_a_run_of_the_whole_seed_list_drops_the_seed_folders_of_an_earlier_list(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    _seed_folders("train_coref", "asl", [1, 2, 3])
    (artifact_dir("train_coref", "asl", 1).parent / "notes.txt").write_text("kept")
    drop_other_seeds("train_coref", "asl", [1, 3])
    assert _left("train_coref", "asl") == ["notes.txt", "seed1", "seed3"]
    assert (artifact_dir("train_coref", "asl", 3) / "last.pt").read_bytes() == b"x"
    drop_other_seeds("train_coref", "lsl", [1])  # no folder yet: nothing to do


@pytest.mark.parametrize(
    ("module", "item", "call"),
    [
        (coref_stage, "asl", lambda m, seed: m.train_coref("asl", seed)),
        (entitynlm_stage, "entitynlm", lambda m, seed: m.train_entitynlm("entitynlm", seed)),
    ],
)
def test_a_stage_run_drops_stale_seeds_but_a_lane_of_one_seed_keeps_the_others(
    tmp_path, monkeypatch, module, item, call
):
    """A stage command run outside DVC finds the artifact folder of an earlier run: the
    stage's own command (every seed) drops seed folders params.yaml no longer lists; `--seed
    k` (one lane of several) must not touch the other lanes' folders."""
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    stage = module.STAGE
    cfg = type("Cfg", (), {"seeds": [1], "train": None, "runs": [], "corpora": [], "workers": 1})()
    if module is coref_stage:
        monkeypatch.setattr(module, "settings", lambda: cfg)
        monkeypatch.setattr(module, "train_seed_task", lambda **k: {"seed": k["seed"]})
        monkeypatch.setattr(module, "write_summary", lambda family, it, results: results)
        monkeypatch.setattr(module, "encoder_model_cfg", lambda c, e: {})
        monkeypatch.setattr(module, "prepare_data", lambda e, c: None)
        monkeypatch.setattr(module, "stacked", lambda c, s: False)
    else:  # the generic stage (tasks/training/stage.py train_item) with the family's hooks
        family = dataclasses.replace(module.FAMILY, prepare_data=lambda c: ({}, []),
                                     run_params=lambda c, d: {})  # fmt: skip
        monkeypatch.setattr(module, "FAMILY", family)
        monkeypatch.setattr(training_stage, "load_settings", lambda f: cfg)
        monkeypatch.setattr(module, "train_seed_task", lambda **k: {"seed": k["seed"]})
        monkeypatch.setattr(training_stage, "write_summary", lambda family, it, results: results)
    _seed_folders(stage, item, [1, 2])
    assert call(module, 2) == [{"seed": 2}]  # a lane: seed 2 alone
    assert _left(stage, item) == ["seed1", "seed2"]
    assert call(module, None) == [{"seed": 1}]  # the stage: params' seeds [1]
    assert _left(stage, item) == ["seed1"]


# ---- issue #54.2: resume state outside the tracked outputs, a seed folder replaced whole ----


class _Interrupted(Exception):
    pass


def _toy_family(epochs_before_kill: int | None = None, fail: bool = False):
    """A family training tests/training/test_loop.py's toy recipe through the one loop; it
    dies after `epochs_before_kill` epochs (a kill), or before returning (`fail`)."""
    from tasks.training.family import Family
    from tasks.training.loop import fit
    from tests.training.test_loop import ToyRecipe, settings

    def train_seed(item, seed, data, cfg, out_dir, *, log_metrics=None):
        recipe = ToyRecipe(seed)
        if epochs_before_kill is not None:
            done = {"n": 0}
            evaluate = recipe.evaluate

            def dying(split, precision):
                if done["n"] == epochs_before_kill:
                    raise _Interrupted
                done["n"] += 1
                return evaluate(split, precision)

            recipe.evaluate = dying
        result = fit(recipe, settings(epochs=4, resume=True), out_dir, name="toy")
        if fail:
            raise _Interrupted
        return {"best_epoch": result.best_epoch, "train_time_s": 1.5}

    return Family(name="toy", paper="none", settings=object, recipe=object,
                  train_seed=train_seed, summarize=lambda item, results: {})  # fmt: skip


def _train(family, seed=1):
    return training_stage.train_tracked_seed(family, "item", seed, None, None, dataset="d",
                                             run_params={}, track=False)  # fmt: skip


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_seed_trains_in_its_work_folder_and_publishes_results_only(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    _train(_toy_family())
    published = artifact_dir("train_toy", "item", 1)
    assert sorted(_files(published)) == ["best.pt", "history.json", "metrics.json"]
    assert "train_time_s" not in (published / "metrics.json").read_text()  # logs/timings/
    work = training_stage.work_dir("train_toy", "item", 1)
    assert work == tmp_path / "data/cache/resume/train_toy/item/seed1"
    assert (work / "last.pt").is_file()


def test_a_killed_and_resumed_seed_publishes_the_bytes_of_an_uninterrupted_one(
    tmp_path, monkeypatch
):
    """The resume state (last.pt, whose pickled history differs between the two) stays in
    the untracked work folder, so the artifact's hash is the same either way."""
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path / "a")
    _train(_toy_family())
    straight = _files(artifact_dir("train_toy", "item", 1))
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path / "b")
    with pytest.raises(_Interrupted):
        _train(_toy_family(epochs_before_kill=2))
    assert not artifact_dir("train_toy", "item", 1).exists()  # nothing half-made published
    _train(_toy_family())  # a new process: resumes from the work folder's last.pt
    assert _files(artifact_dir("train_toy", "item", 1)) == straight


def test_a_failed_run_leaves_the_earlier_result_whole(tmp_path, monkeypatch):
    """Issue #59 rows 16 and 23: the folder is always one run's; the old one is replaced only
    once the new one is complete."""
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    _train(_toy_family())
    earlier = _files(artifact_dir("train_toy", "item", 1))
    training_stage.work_dir("train_toy", "item", 1).joinpath("last.pt").unlink()  # from scratch
    with pytest.raises(_Interrupted):
        _train(_toy_family(fail=True))
    assert _files(artifact_dir("train_toy", "item", 1)) == earlier


def test_a_tracked_seed_tags_the_published_checkpoint_not_the_work_folder(tmp_path, monkeypatch):
    """The MLflow run's `checkpoint` tag is the DVC output path a user can `dvc pull`."""
    from mlflow.tracking import MlflowClient

    from tasks.core import tracking

    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(tracking, "REPO_ROOT", tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setattr(tracking, "settings", lambda: tracking.TrackingSettings(
        artifacts=str(tmp_path / "mlartifacts")))  # fmt: skip
    training_stage.train_tracked_seed(_toy_family(), "item", 1, None, None, dataset="d",
                                      run_params={})  # fmt: skip
    client = MlflowClient(uri)
    (run,) = client.search_runs([client.get_experiment_by_name("train_toy").experiment_id])
    assert run.data.tags["checkpoint"] == "artifacts/train_toy/item/seed1/best.pt"
