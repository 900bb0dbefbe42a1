"""tasks/results: records are built from finished runs, checked, and merged seed by seed."""

from __future__ import annotations

import json

import pytest

from tasks.core import config
from tasks.core.errors import CorefreproError
from tasks.core.schema import record_problems
from tasks.results import record as record_cli
from tasks.results.records import merge, spread


def _seed(root, item: str, seed: int, dev_error: float) -> None:
    folder = root / "artifacts/train_mage" / item / f"seed{seed}"
    folder.mkdir(parents=True)
    metrics = {"dev_error": dev_error, "test_error": 0.5, "dev_n": 100, "test_n": 10,
               "best_epoch": 7, "epochs_run": 27, "device": "cpu"}  # fmt: skip
    (folder / "metrics.json").write_text(json.dumps(metrics))


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    import subprocess

    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    (tmp_path / "params.yaml").write_text("train_mage:\n  seeds: [1]\n")
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=tmp_path, check=True)
    (tmp_path / "params.yaml").write_text("train_mage:\n  seeds: [1, 2]\n")
    monkeypatch.setattr(record_cli, "mlflow_runs", lambda stage, item, seeds: {})
    return tmp_path


def _build(root, item="ga-qa2"):
    return record_cli.build("train_mage", item, preset="mage-babi", scale="cpu", table="Table 1",
                            row="GA, qa2", data=[], root=root)  # fmt: skip


def test_a_record_holds_each_seed_its_spread_and_the_overrides(workspace):
    _seed(workspace, "ga-qa2", 1, 0.10)
    _seed(workspace, "ga-qa2", 2, 0.20)
    record = _build(workspace)
    assert record_problems(record) == []
    dev = record["metrics"]["dev_error"]
    assert dev["per_seed"] == {"1": 10.0, "2": 20.0} and dev["n"] == 2
    assert dev["mean"] == 15.0 and dev["sd"] == pytest.approx(7.071068)
    assert dev["unit"] == "%" and dev["better"] == "lower" and dev["split_size"] == 100
    assert record["overrides"] == ["train_mage.seeds=[1, 2]"]
    assert record["id"] == "mage-babi/train_mage/ga-qa2" and record["source"] == "run"


def test_a_record_written_twice_merges_seed_by_seed(workspace):
    _seed(workspace, "ga-qa2", 1, 0.10)
    out = workspace / "results"
    path = record_cli.write(_build(workspace), out)
    first = path.read_text()
    record_cli.write(_build(workspace), out)  # the same seed again: replaced, not duplicated
    assert json.loads(path.read_text())["metrics"] == json.loads(first)["metrics"]
    _seed(workspace, "ga-qa2", 2, 0.30)
    merged = json.loads(record_cli.write(_build(workspace), out).read_text())
    assert merged["metrics"]["dev_error"]["per_seed"] == {"1": 10.0, "2": 30.0}


def test_records_of_other_settings_do_not_merge_and_a_bad_record_is_named(workspace):
    old = {"id": "a", "overrides": ["x=1"], "metrics": {}}
    with pytest.raises(CorefreproError, match="other settings"):
        merge(old, {"id": "a", "overrides": ["x=2"], "metrics": {}})
    _seed(workspace, "ga-qa2", 1, 0.10)
    bad = workspace / "results/mage-babi/train_mage/ga-qa2.json"
    bad.parent.mkdir(parents=True)
    bad.write_text('{"id": 3}')
    with pytest.raises(CorefreproError, match=r"ga-qa2.json: not a valid record .*missing field"):
        record_cli.write(_build(workspace), workspace / "results")


def test_lanes_with_other_run_lists_merge_but_other_model_settings_do_not():
    """A lane runs its own models, tasks and seeds (several at once) from another mirror: what
    it selects is no setting of the item, so its seed merges; a changed model setting is named and refused."""
    base = {"id": "a", "metrics": {}, "data": {}, "epochs": {}, "wall_time_s": {},
            "mlflow_run_ids": {}, "commit": "c", "numerics": "native", "device": "cpu",
            "cpu": "x"}  # fmt: skip
    shared = ["train_mage.train.epochs=100"]
    old = {**base, "overrides": [*shared, 'train_mage.run.models=["ga"]', "train_mage.seeds=[1]",
                                 'download.mirror="/a"']}  # fmt: skip
    new = {**base, "overrides": [*shared, 'train_mage.run.models=["ga", "b"]',
                                 'train_mage.run.tasks=["qa2"]', "train_mage.seeds=[3]",
                                 "train_mage.workers=2"]}  # fmt: skip
    assert merge(old, new)["overrides"] == new["overrides"]
    with pytest.raises(CorefreproError, match=r"differing: \['train_mage.train.epochs=100', "
                                              r"'train_mage.train.epochs=50'\]"):  # fmt: skip
        merge(old, {**new, "overrides": ["train_mage.train.epochs=50"]})


def test_no_finished_run_is_one_line(workspace, capsys):
    assert record_cli.main(["train_mage", "ga-qa9", "--table", "T", "--row", "r"]) == 2
    assert "no seed<k>/metrics.json: train the item first" in capsys.readouterr().err


def test_one_seed_has_no_spread():
    assert spread({"1": 4.0}) == (4.0, None, 1)
    assert spread({"1": None}) == (None, None, 0)


def test_a_merge_keeps_every_seeds_commit_and_host_and_refuses_other_data():
    """A lane on a later commit (or another machine) adds its seed; the record names both."""
    base = {"id": "a", "overrides": [], "metrics": {}, "data": {"g": "1"}, "epochs": {},
            "wall_time_s": {}, "mlflow_run_ids": {}, "numerics": "native", "device": "cpu"}  # fmt: skip
    old = {**base, "commit": "aaa", "cpu": "AMD EPYC"}
    new = {**base, "commit": "bbb", "cpu": "Intel Xeon"}
    merged = merge(old, new)
    assert merged["commit"] == "aaa, bbb" and merged["cpu"] == "AMD EPYC; Intel Xeon"
    assert merged["numerics"] == "native"
    with pytest.raises(CorefreproError, match="read other data"):
        merge(old, {**new, "data": {"g": "2"}})


# --------------------------------------------------------------------------- entity prediction


def _prediction_workspace(root, checkpoint_seed: int, entitynlm_dev: float) -> None:
    """metrics/entity_prediction/inscript.json as the stage writes it (the InScript test sample
    scored: test_sample), the EntityNLM checkpoint's seed folder with its training metrics, and
    params.yaml naming that checkpoint."""
    acc = lambda a, n: {"accuracy": a, "n": n, "correct": round(a * n)}  # noqa: E731
    metrics = {"corpus": "inscript", "seconds": 12.5,
               "accuracy": {"always_new": {"dev": acc(0.332, 1708), "test_sample": acc(0.35, 216)},
                            "shallow": {"dev": acc(0.43, 1708), "test_sample": acc(0.45, 216)},
                            "shallow-rich": {"dev": acc(0.54, 1708)},
                            "human": {"test_sample": acc(0.77, 216)},
                            "entitynlm": {"dev": acc(entitynlm_dev, 1708),
                                          "test_sample": acc(0.625, 216)}}}  # fmt: skip
    (root / "metrics/entity_prediction").mkdir(parents=True, exist_ok=True)
    (root / "metrics/entity_prediction/inscript.json").write_text(json.dumps(metrics))
    folder = root / f"artifacts/train_entitynlm/entitynlm/seed{checkpoint_seed}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "metrics.json").write_text(json.dumps({"best_epoch": 45, "epochs_run": 48,
                                                     "device": "cpu"}))  # fmt: skip
    (root / "params.yaml").write_text(
        "train_mage:\n  seeds: [1, 2]\nentity_prediction:\n  shallow: {seed: 13}\n"
        f"  entitynlm: {{checkpoint: artifacts/train_entitynlm/entitynlm/seed{checkpoint_seed}"
        "/best.pt}\n"
    )


def _build_prediction(root, item):
    return record_cli.build("entity_prediction", item, preset="entitynlm-prediction", scale=None,
                            table="Table 3", row=item, data=[], root=root)  # fmt: skip


def test_entity_prediction_rows_become_records_and_the_checkpoint_seeds_merge(workspace):
    """Issue #56: each Table 3 row (always-new, shallow, shallow-rich, human, EntityNLM) is a
    record; EntityNLM's seed is its checkpoint's training seed, so running the stage once per
    checkpoint and recording each merges the seeds into one record."""
    _prediction_workspace(workspace, 1, 0.64)
    out = workspace / "results"
    new = _build_prediction(workspace, "inscript-always-new")
    assert record_problems(new) == [] and new["id"] == (
        "entitynlm-prediction/entity_prediction/inscript-always-new"
    )
    assert new["metrics"]["dev_accuracy"]["per_seed"] == {"1": 33.2}
    test = new["metrics"]["test_accuracy"]
    assert test["split"] == "test_sample" and test["split_size"] == 216 and test["mean"] == 35.0
    assert _build_prediction(workspace, "inscript-shallow")["metrics"]["dev_accuracy"][
        "per_seed"
    ] == {"13": 43.0}
    rich = _build_prediction(workspace, "inscript-shallow-rich")
    assert list(rich["metrics"]) == ["dev_accuracy"]  # not scored on test: no test figure
    human = _build_prediction(workspace, "inscript-human")
    assert list(human["metrics"]) == ["test_accuracy"]
    first = _build_prediction(workspace, "inscript-entitynlm")
    assert first["epochs"] == {"1": {"best": 45, "run": 48}} and first["wall_time_s"] == {"1": 12.5}
    shown = " ".join(first["overrides"])  # the setting, the checkpoint's seed left out
    assert "train_entitynlm/entitynlm/seed{seed}/best.pt" in shown and "seed1" not in shown
    record_cli.write(first, out)
    _prediction_workspace(workspace, 2, 0.66)
    merged = json.loads(record_cli.write(_build_prediction(workspace, "inscript-entitynlm"),
                                         out).read_text())  # fmt: skip
    dev = merged["metrics"]["dev_accuracy"]
    assert dev["per_seed"] == {"1": 64.0, "2": 66.0} and dev["n"] == 2 and dev["mean"] == 65.0
    assert merged["paper"] == "Ji et al. 2017 (EntityNLM)"


def test_an_unknown_prediction_row_or_a_seedless_checkpoint_is_one_error(workspace):
    _prediction_workspace(workspace, 1, 0.64)
    with pytest.raises(CorefreproError, match=r"inscript.json: no predictor 'modi'"):
        _build_prediction(workspace, "inscript-modi")
    with pytest.raises(CorefreproError, match=r"no <corpus>.json for item 'gum-shallow'"):
        _build_prediction(workspace, "gum-shallow")
    (workspace / "params.yaml").write_text(
        "entity_prediction:\n  entitynlm: {checkpoint: models/best.pt}\n"
    )
    with pytest.raises(CorefreproError, match=r"'models/best.pt' names no seed<k>/ folder"):
        _build_prediction(workspace, "inscript-entitynlm")


def test_table_1_records_carry_each_entitynlm_reading_and_the_rnnlm_its_perplexity(workspace):
    """Issue #56.1's record path: a train_entitynlm seed's metrics.json as the stage writes it;
    EntityNLM's record holds the headline (the marginal) and every reading, the RNNLM's its
    perplexity under the same names and no readings."""
    stat = lambda m: {"mean": m, "std": 0.5, "n": 3}  # noqa: E731
    for seed, shift in ((1, 0.0), (2, 2.0)):
        split = lambda base, shift=shift: {"is_ppl": stat(base + shift), "tokens": 900,  # noqa: E731
                              "words_given_rel_ppl": base - 30 + shift,
                              "readings": {k: {"ppl": stat(base - d + shift)} for k, d in
                                           (("words_is", 20), ("words_q_mix", 5),
                                            ("words_q_mean", 3))}}  # fmt: skip
        folder = workspace / f"artifacts/train_entitynlm/entitynlm/seed{seed}"
        folder.mkdir(parents=True)
        (folder / "metrics.json").write_text(json.dumps(
            {"model": "entitynlm", "dev": split(140.0), "test": split(150.0), "best_epoch": 3,
             "epochs_run": 5, "device": "cpu"}))  # fmt: skip
    folder = workspace / "artifacts/train_entitynlm/rnnlm/seed1"
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps(
        {"model": "rnnlm", "dev": {"ppl": 130.0, "tokens": 800},
         "test": {"ppl": 145.0, "tokens": 900}}))  # fmt: skip

    def build(item):
        return record_cli.build("train_entitynlm", item, preset="entitynlm-lm", scale=None,
                                table="Table 1", row=item, data=[], root=workspace)  # fmt: skip

    enlm = build("entitynlm")["metrics"]
    assert enlm["test_ppl"]["per_seed"] == {"1": 150.0, "2": 152.0}
    assert enlm["test_ppl_words_is"]["per_seed"] == {"1": 130.0, "2": 132.0}
    assert enlm["dev_ppl_words_gold"]["mean"] == 111.0 and enlm["test_ppl"]["split_size"] == 900
    assert {"dev_ppl_words_q_mix", "test_ppl_words_q_mean"} <= set(enlm)
    rnn = build("rnnlm")["metrics"]
    assert sorted(rnn) == ["dev_ppl", "test_ppl"] and rnn["test_ppl"]["per_seed"] == {"1": 145.0}
    assert rnn["dev_ppl"]["split_size"] == 800 and rnn["test_ppl"]["better"] == "lower"


def test_a_seeds_nested_timings_leave_its_figures_and_give_its_wall_time(workspace):
    """logs/timings/ nests a seed's timing keys as its metrics.json does (EntityNLM's
    dev.is_time_s): the record takes the wall time from it and every figure from the metrics."""
    folder = workspace / "artifacts/train_entitynlm/rnnlm/seed1"
    folder.mkdir(parents=True)
    (folder / "metrics.json").write_text(json.dumps(
        {"dev": {"ppl": 130.0, "tokens": 800}, "test": {"ppl": 145.0, "tokens": 900}}))  # fmt: skip
    timings = workspace / "logs/timings/artifacts/train_entitynlm/rnnlm/seed1/metrics.json"
    timings.parent.mkdir(parents=True)
    timings.write_text(json.dumps({"wall_time_s": 61.5, "dev": {"is_time_s": 2.0}}))
    record = record_cli.build("train_entitynlm", "rnnlm", preset="entitynlm-lm", scale=None,
                              table="Table 1", row="RNNLM", data=[], root=workspace)  # fmt: skip
    assert record["metrics"]["dev_ppl"]["per_seed"] == {"1": 130.0}
    assert record["wall_time_s"] == {"1": 61.5}


# --------------------------------------------------------------------------- the seedless 5-gram


def _five_gram(root, wall_time_s: float | None = 18.0) -> None:
    """metrics/train_entitynlm/5gram.json as models/entitynlm/ngram.py train_ngram writes it
    (its wall time, where written, under logs/timings/)."""
    scores = {s: {"ppl": p, "tokens": n, "log_prob": -1.0, "ppl_with_eos": p + 1, "oov": 0}
              for s, p, n in (("dev", 259.891234, 37582), ("test", 289.04, 55067))}  # fmt: skip
    metrics = {"model": "5gram", "seeds": 1, "selected": scores,
               "dev_ppl": {"mean": 259.891234, "std": 0.0, "n": 1},
               "test_ppl": {"mean": 289.04, "std": 0.0, "n": 1},
               "tokens": {"train": 9000, "dev": 37582, "test": 55067}}  # fmt: skip
    path = root / "metrics/train_entitynlm/5gram.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(metrics))
    if wall_time_s is not None:
        timings = root / "logs/timings/metrics/train_entitynlm/5gram.json"
        timings.parent.mkdir(parents=True, exist_ok=True)
        timings.write_text(json.dumps({"wall_time_s": wall_time_s}))


def _build_5gram(root):
    return record_cli.build("train_entitynlm", "5gram", preset="entitynlm-lm", scale="cpu",
                            table="Table 1", row="5-gram", data=[], root=root)  # fmt: skip


def test_the_seedless_5gram_is_recorded_from_its_stage_metrics(workspace, monkeypatch):
    """Issue #56.1 (record gaps the Table 1 rerun met): the 5-gram writes no seed folder; its record reads its metrics file, states
    its one figure (no per-seed entry: the report sets it against every seed of the other
    side), and finds its seedless MLflow run."""
    asked = []

    def runs(stage, item, seeds):
        asked.append((stage, item, seeds))
        return {None: {"run_id": "r5", "git_sha": "abc", "numerics": "native", "host": "h"}}

    monkeypatch.setattr(record_cli, "mlflow_runs", runs)
    _five_gram(workspace)
    record = _build_5gram(workspace)
    assert record_problems(record) == [] and record["id"] == "entitynlm-lm/train_entitynlm/5gram"
    assert sorted(record["metrics"]) == ["dev_ppl", "test_ppl"]
    dev, test = record["metrics"]["dev_ppl"], record["metrics"]["test_ppl"]
    assert dev["per_seed"] == {} and dev["mean"] == 259.8912 and dev["n"] == 1
    assert dev["split_size"] == 37582
    assert test["mean"] == 289.04 and test["split_size"] == 55067 and test["sd"] is None
    assert dev["unit"] == "ppl" and dev["better"] == "lower" and test["split"] == "test"
    assert record["data"] == {}
    assert record["wall_time_s"] == {"1": 18.0} and record["device"] == "cpu"
    assert asked == [("train_entitynlm", "5gram", [None])]
    assert record["mlflow_run_ids"] == {"1": "r5"} and record["commit"] == "abc"


def test_the_5gram_without_timings_or_metrics(workspace):
    with pytest.raises(CorefreproError, match=r"5gram.json: missing: run `dvc repro "
                                              r"train_entitynlm@5gram` first"):  # fmt: skip
        _build_5gram(workspace)
    _five_gram(workspace, wall_time_s=None)
    record = _build_5gram(workspace)
    assert record["wall_time_s"] == {"1": None} and record["mlflow_run_ids"] == {}


# --------------------------------------------------------------------------- transcribed records


def _transcribed_record():
    """results/entitynlm-lm/train_entitynlm/5gram.json as tasks/results/transcribe.py builds it."""
    from tasks.results import transcribe

    entry = {"readme_line": 1134, "quote": "| 5-gram | -- | 259.89 | 289.04 |",
             "preset": "entitynlm-lm", "scale": "cpu", "stage": "train_entitynlm",
             "item": "5gram", "paper": "Ji et al. 2017 (EntityNLM)", "table": "Table 1",
             "row": "5-gram", "data": {"corpora": "gum, litbank (gold)"},
             "recorded_at": "2026-12-02",
             "metrics": {"dev_ppl": {"unit": "ppl", "better": "lower", "split": "dev",
                                     "split_size": 37582, "mean": 259.89, "n": 1}}}  # fmt: skip
    return transcribe.build(entry)


def test_a_run_record_replaces_a_transcribed_one_only_when_asked(workspace, monkeypatch, capsys):
    """Issue #56.1 (record gaps the Table 1 rerun met): a transcribed record has no per-seed figures and no data digests, so a rerun
    never merges with it: without --replace-transcribed the error says to pass it, with it the
    run's record replaces the transcribed one whole."""
    out = workspace / "results"
    record_cli.write(_transcribed_record(), out)
    _five_gram(workspace)
    path = out / "entitynlm-lm/train_entitynlm/5gram.json"
    with pytest.raises(CorefreproError, match=r"5gram.json: a transcribed record .*pass "
                                              r"--replace-transcribed"):  # fmt: skip
        record_cli.write(_build_5gram(workspace), out)
    assert json.loads(path.read_text())["source"] == "transcribed, no run"  # nothing lost
    run = _build_5gram(workspace)
    record_cli.write(run, out, replace_transcribed=True)
    assert json.loads(path.read_text()) == run
    # the command line: the flag reaches write; a rerun then merges as run records do
    monkeypatch.setattr(record_cli, "build", lambda *a, **k: run)
    argv = ["train_entitynlm", "5gram", "--table", "Table 1", "--row", "5-gram", "--out", str(out)]
    assert record_cli.main([*argv, "--replace-transcribed"]) == 0
    assert record_cli.main(argv) == 0 and json.loads(path.read_text())["source"] == "run"
    # and the transcription, run again, keeps the run's record
    from tasks.results import transcribe

    monkeypatch.setattr(transcribe, "build_all", lambda source: [_transcribed_record()])
    assert transcribe.main(["--out", str(out)]) == 0
    assert json.loads(path.read_text())["source"] == "run"
    assert "kept, a run's record" in capsys.readouterr().out


def test_a_run_record_is_never_replaced_and_its_error_has_no_hint(workspace):
    """--replace-transcribed replaces only a transcribed record: over a run record of other
    settings the merge rules hold, and their error does not offer the option."""
    out = workspace / "results"
    _five_gram(workspace)
    record_cli.write(_build_5gram(workspace), out)
    (workspace / "params.yaml").write_text("train_entitynlm:\n  ngram: {order: 4}\n")
    other = _build_5gram(workspace)
    with pytest.raises(CorefreproError, match="other settings") as caught:
        record_cli.write(other, out, replace_transcribed=True)
    assert "--replace-transcribed" not in str(caught.value)
    path = out / "entitynlm-lm/train_entitynlm/5gram.json"
    assert json.loads(path.read_text())["overrides"] == ["train_mage.seeds=[1, 2]"]


def test_no_entitynlm_checkpoint_reads_null_in_a_records_settings(workspace):
    """Issue #56.1 (record gaps the Table 1 rerun met): the rankers' records of a run without EntityNLM merge whether the setting was
    null (a direct run) or the stage's NO_CHECKPOINT file (dvc repro)."""
    import subprocess

    from tasks.evaluation.entity_prediction import NO_CHECKPOINT

    _prediction_workspace(workspace, 1, 0.64)
    params = (workspace / "params.yaml").read_text()
    for args in (
        ["add", "-A"],
        ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "y"],
    ):
        subprocess.run(["git", *args], cwd=workspace, check=True)  # HEAD: a checkpoint set
    (workspace / "params.yaml").write_text(
        params.replace("artifacts/train_entitynlm/entitynlm/seed1/best.pt", NO_CHECKPOINT)
    )
    shown = _build_prediction(workspace, "inscript-shallow")["overrides"]
    assert "entity_prediction.entitynlm.checkpoint=null" in shown
    assert not any(NO_CHECKPOINT in o for o in shown)


# --------------------------------------------------------------------------- CoreLM


def _curve(base: float) -> dict:
    """A `curve` as models/corelm/train.py curve_record writes it: step 0, then one point per
    epoch (two epochs of 5 optimizer steps)."""
    gate = {"gate_w_mean": 0.0, "gate_sigmoid_mean": 0.5, "entity_share_mean": 0.75,
            "entity_share_min": 0.75, "entity_share_max": 0.75, "entity_norm_share": 0.4}  # fmt: skip
    start = {"step": 0, "heldout_words": 900, "heldout_word_ppl": base + 50,
             "heldout_word_ppl_no_entities": base + 51, **gate}  # fmt: skip
    points = [start] + [
        {**start, "step": 5 * e, "heldout_word_ppl": base + 10 / e, "epoch": e,
         "dev_loss": 5.0 / e, "train_loss": 5.5 / e, "learning_rate": 1e-3 / e}
        for e in (1, 2)
    ]  # fmt: skip
    return {"every_steps": 5, "schedule_steps": 10, "heldout_docs": 4, "heldout_split": "test",
            "first_step_loss": 6.2, "initial": {k: v for k, v in start.items() if k != "step"},
            "points": points}  # fmt: skip


# what the stage scored (models/corelm/evaluate.py eval_splits): held-out test, WikiText-2's
# dev, LAMBADA's test, CBT's dev and test question files; no WikiText-103
SPLITS = {
    "heldout": {"corpus": "gum+litbank", "split": "test", "size": 4, "unit": "documents",
                "words": 900},
    "wikitext2": {"corpus": "wikitext2", "split": "dev", "size": 3, "unit": "articles",
                  "words": 2000},
    "lambada": {"corpus": "lambada", "split": "test", "task": "lambada_openai", "size": 300,
                "unit": "passages"},
    "cbt": {"corpus": "cbt", "split": "dev+test", "unit": "questions",
            "size": {"CN": 100, "NE": 90, "V": 80, "P": 70}},
}  # fmt: skip


def _corelm(root, model: str, seed: int, base: float, *, curve: bool = True,
            **written) -> None:  # fmt: skip
    """metrics/train_corelm/<model>.json as models/corelm/train.py train_and_evaluate writes it
    (CoreLM: its +coref scorers; LAMBADA with a coreference run; no WikiText-103), with its
    seed and eval_splits (`written` replaces keys), its wall time under logs/timings/."""
    ppl = lambda p: {"word_perplexity": p, "token_perplexity": p - 9, "n_texts": 4,  # noqa: E731
                     "n_words": 900}  # fmt: skip
    scorers = [model, f"{model}+coref"] if model == "corelm" else [model]
    lam = lambda acc: {"accuracy": acc, "n": 300, "perplexity": 80.0}  # noqa: E731
    cbt_n = SPLITS["cbt"]["size"]
    metrics = {
        "model": model, "backbone": "smollm2", "heldout_split": "test", "device": "cpu",
        "seed": seed, "eval_splits": SPLITS,
        "training": {"steps": 10, "epochs": 2, "best_epoch": 2} if model != "zeroshot"
        else {"steps": 0, "train_tokens": 0, "train_time_s": 0.0},
        "heldout": {s: ppl(base + (s == model)) for s in scorers},
        "wikitext2": {model: ppl(base + 20)}, "wikitext103": {},
        "lambada": {f"{s}/{c}": lam(0.2 + ("+" in s) / 100) for s in scorers
                    for c in ("full_word", "last_token")},
        "cbt": {f"{model}/{t}": {"accuracy": 0.5, "n": n} for t, n in cbt_n.items()},
        **({"curve": _curve(base)} if curve else {}),
        **written,
    }  # fmt: skip
    path = root / f"metrics/train_corelm/{model}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(metrics))
    timings = root / f"logs/timings/metrics/train_corelm/{model}.json"
    timings.parent.mkdir(parents=True, exist_ok=True)
    timings.write_text(json.dumps({"wall_time_s": 300.0 + seed, "training": {"train_time_s": 1}}))


def _build_corelm(root, model="corelm"):
    return record_cli.build("train_corelm", model, preset="corelm", scale="cpu-curve",
                            table="Table 1", row=model, data=[], root=root)  # fmt: skip


def test_a_corelm_record_holds_tables_1_2_and_its_learning_curve(workspace, monkeypatch, capsys):
    """Issue #58.4: train_corelm writes no seed folder; its record reads the model's metrics
    file alone: the seed the stage trained under, held-out word perplexity (CoreLM's with
    entities, and without), WikiText-2, LAMBADA, CBT, each on the split and size the stage
    wrote beside it, and the curve."""
    _corelm(workspace, "corelm", 1, 190.0)
    record = _build_corelm(workspace)
    assert record_problems(record) == [] and record["id"] == "corelm/train_corelm/corelm"
    m = record["metrics"]
    assert m["test_ppl"]["per_seed"] == {"1": 190.0} and m["test_ppl"]["split_size"] == 4
    assert m["test_ppl_no_entities"]["per_seed"] == {"1": 191.0}
    assert m["test_ppl_no_entities"]["split"] == "test"
    wt2 = m["wikitext2_ppl"]
    assert (wt2["split"], wt2["split_size"], wt2["mean"]) == ("dev", 3, 210.0)
    assert "wikitext103_ppl" not in m  # not evaluated: no figure, no entry
    assert m["lambada_accuracy"]["split"] == "test" and m["lambada_accuracy"]["mean"] == 20.0
    assert m["lambada_accuracy_coref"]["mean"] == 21.0 and m["lambada_ppl"]["unit"] == "ppl"
    assert m["lambada_last_token_accuracy"]["split_size"] == 300
    cbt = {k: (v["split"], v["split_size"], v["mean"]) for k, v in m.items() if "cbt" in k}
    assert cbt == {"cbt_cn_accuracy": ("dev+test", 100, 50.0),
                   "cbt_ne_accuracy": ("dev+test", 90, 50.0),
                   "cbt_v_accuracy": ("dev+test", 80, 50.0),
                   "cbt_p_accuracy": ("dev+test", 70, 50.0)}  # fmt: skip  # no CBT coref run
    assert record["curve"] == {"1": _curve(190.0)}
    assert [p["step"] for p in record["curve"]["1"]["points"]] == [0, 5, 10]
    assert record["epochs"] == {"1": {"best": 2, "run": 2}}
    assert record["wall_time_s"] == {"1": 301.0} and record["paper"].startswith("Stylianou")
    monkeypatch.setattr(record_cli, "build", lambda *a, **k: record)
    argv = ["train_corelm", "corelm", "--table", "T", "--row", "r"]
    assert record_cli.main([*argv, "--out", str(workspace / "results")]) == 0
    assert "test_ppl 190.0 ± None (n 1)" in (shown := capsys.readouterr().out)
    assert "seed 1's curve: 3 points" in shown


def test_a_corelm_record_reads_its_seed_and_splits_from_the_metrics_not_params(workspace):
    """The seed and the splits are the run's, as its metrics file states them: params.yaml
    (another seed, other splits since) plays no part; a split the stage scored on dev is
    recorded as dev, and its figure's name follows the held-out split."""
    (workspace / "params.yaml").write_text(
        "train_corelm:\n  train: {seed: 9}\n"
        "  eval: {heldout_split: test, lambada_split: test, wikitext2_split: test}\n"
    )
    splits = {**SPLITS, "heldout": {**SPLITS["heldout"], "split": "dev", "size": 6},
              "lambada": {**SPLITS["lambada"], "split": "dev", "size": 120}}  # fmt: skip
    _corelm(workspace, "corelm", 3, 190.0, eval_splits=splits)
    record = _build_corelm(workspace)
    m = record["metrics"]
    assert list(record["wall_time_s"]) == ["3"] and m["dev_ppl"]["per_seed"] == {"3": 190.0}
    assert "test_ppl" not in m and m["dev_ppl"]["split_size"] == 6
    assert (m["lambada_accuracy"]["split"], m["lambada_accuracy"]["split_size"]) == ("dev", 120)
    assert m["wikitext2_ppl"]["split"] == "dev"


def test_a_corelm_record_without_a_curve_and_the_models_without_entities(workspace):
    """No eval.curve_docs: no `curve` (the field is optional, as in every earlier record); FT
    has no +coref scorer: its held-out figure is its own, with no entity-free twin; zeroshot
    trains nothing: no epochs."""
    _corelm(workspace, "ft", 1, 60.0, curve=False)
    record = _build_corelm(workspace, "ft")
    assert record_problems(record) == [] and "curve" not in record
    assert record["metrics"]["test_ppl"]["per_seed"] == {"1": 61.0}
    assert "test_ppl_no_entities" not in record["metrics"]
    assert not any(k.endswith("_coref") for k in record["metrics"])
    _corelm(workspace, "zeroshot", 1, 80.0, curve=False)
    zeroshot = _build_corelm(workspace, "zeroshot")
    assert record_problems(zeroshot) == [] and zeroshot["epochs"] == {
        "1": {"best": None, "run": None}
    }
    assert zeroshot["metrics"]["lambada_accuracy"]["per_seed"] == {"1": 20.0}


def test_two_corelm_seeds_merge_with_their_curves(workspace):
    """A run per train.seed, each recorded: the figures and the curves merge seed by seed (the
    seed is no setting of the item); a seed recorded again without a curve loses its old one."""
    import subprocess

    out = workspace / "results"
    (workspace / "params.yaml").write_text("train_corelm:\n  train: {seed: 1}\n")
    for args in (
        ["add", "-A"],
        ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "c"],
    ):
        subprocess.run(["git", *args], cwd=workspace, check=True)  # HEAD: train.seed 1
    _corelm(workspace, "corelm", 1, 190.0)
    record_cli.write(_build_corelm(workspace), out)
    _corelm(workspace, "corelm", 2, 194.0)
    (workspace / "params.yaml").write_text("train_corelm:\n  train: {seed: 2}\n")
    second = _build_corelm(workspace)
    assert second["overrides"] == ["train_corelm.train.seed=2"]  # a selection, not a setting
    merged = json.loads(record_cli.write(second, out).read_text())
    assert record_problems(merged) == []
    assert merged["metrics"]["test_ppl"]["per_seed"] == {"1": 190.0, "2": 194.0}
    assert merged["metrics"]["test_ppl"]["mean"] == 192.0
    assert merged["curve"] == {"1": _curve(190.0), "2": _curve(194.0)}
    assert merged["wall_time_s"] == {"1": 301.0, "2": 302.0}
    _corelm(workspace, "corelm", 2, 196.0, curve=False)
    again = json.loads(record_cli.write(_build_corelm(workspace), out).read_text())
    assert list(again["curve"]) == ["1"]
    assert again["metrics"]["test_ppl"]["per_seed"] == {"1": 190.0, "2": 196.0}


def test_a_missing_bad_or_older_corelm_metrics_file_is_named(workspace):
    with pytest.raises(CorefreproError, match=r"train_corelm/corelm.json: missing: run `dvc "
                                              r"repro train_corelm@corelm` first"):  # fmt: skip
        _build_corelm(workspace)
    _corelm(workspace, "corelm", 1, 190.0)
    path = workspace / "metrics/train_corelm/corelm.json"
    metrics = json.loads(path.read_text())
    path.write_text('{"model": "corelm",\n  "heldout": }')
    with pytest.raises(CorefreproError, match=r"corelm.json:2: not JSON"):
        _build_corelm(workspace)
    for older in ("seed", "eval_splits"):  # written before the stage stated them
        path.write_text(json.dumps({k: v for k, v in metrics.items() if k != older}))
        with pytest.raises(CorefreproError, match=r"corelm.json: no integer `seed` and "
                                                  r"`eval_splits` object .* run `dvc repro "
                                                  r"train_corelm@corelm` again"):  # fmt: skip
            _build_corelm(workspace)
    metrics["curve"]["points"][1].pop("step")
    path.write_text(json.dumps(metrics))
    with pytest.raises(CorefreproError, match=r"corelm.json: curve.points\[1\]: expected an "
                                              r"object with an integer `step`"):  # fmt: skip
        _build_corelm(workspace)
    path.write_text(json.dumps({**metrics, "model": "ft", "curve": _curve(1.0)}))
    with pytest.raises(CorefreproError, match=r"corelm.json: model 'ft', expected 'corelm'"):
        _build_corelm(workspace)


def test_a_records_curve_is_checked_seed_by_seed():
    record = _transcribed_record()
    assert record_problems({**record, "curve": {"1": _curve(1.0)}}) == []
    assert record_problems({**record, "curve": {"a": {"points": []}}}) == [
        "curve.a: a seed is a number",
        "curve.a: expected an object with a non-empty list `points`",
    ]
    assert record_problems({**record, "curve": []}) == ["curve: list, expected <class 'dict'>"]


# --------------------------------------------------------------------------- graph scores


def _reference_scores(root, run="babi-model"):
    """metrics/graphs_reference/<run>.json as flows/graphs.py score_reference writes it."""
    scores = {"muc_f1": 90.0, "bcub_f1": 80.0, "ceafe_f1": 70.0, "mentions_f1": 95.0,
              "conll_f1": 80.0}  # fmt: skip
    by_task = {"qa16": {**scores, "conll_f1": 0.0, "mentions_f1": 0.0},
               "qa2": {**scores, "conll_f1": 97.0}}  # fmt: skip
    path = root / "metrics/graphs_reference" / f"{run}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"run": run, "reference": "babi-entity-id", "graphs": 5,
                                "coreference_against_reference": scores, "by_task": by_task}))  # fmt: skip


def test_an_annotation_scored_against_its_reference_is_a_record_under_seed_1(workspace):
    """Issue #58.5: each annotator's links on the corruption series' axis, overall and per
    task (a reader's error per task sits at its task's score)."""
    build = lambda: record_cli.build("graphs_reference", "babi-model",  # noqa: E731
                                     preset="mage-coref-quality", scale="annotators",
                                     table="Coreference quality", row="own model links",
                                     data=[], root=workspace)  # fmt: skip
    with pytest.raises(CorefreproError, match=r"babi-model.json: missing: run `dvc repro "
                                              r"graphs_reference@babi-model` first"):  # fmt: skip
        build()
    _reference_scores(workspace)
    record = build()
    assert record_problems(record) == []
    assert record["id"] == "mage-coref-quality/graphs_reference/babi-model"
    assert record["paper"] == "beyond the papers (coreference quality)"
    metrics = record["metrics"]
    assert metrics["conll_f1"]["per_seed"] == {"1": 80.0} and metrics["conll_f1"]["unit"] == "%"
    assert metrics["mentions_f1"]["mean"] == 95.0 and metrics["muc_f1"]["better"] == "higher"
    assert metrics["conll_f1_qa16"]["per_seed"] == {"1": 0.0}
    assert metrics["conll_f1_qa2"]["mean"] == 97.0 and "mentions_f1_qa2" in metrics
    assert sorted(metrics) == sorted(["conll_f1", "muc_f1", "bcub_f1", "ceafe_f1", "mentions_f1",
                                      "conll_f1_qa2", "mentions_f1_qa2", "conll_f1_qa16",
                                      "mentions_f1_qa16"])  # fmt: skip
    assert [s.name for s in record_cli.task_specs("graphs_reference", {"1": {"by_task": {
        "qa16": {}, "qa2": {}, "qa3": {}}}})][::2] == ["conll_f1_qa2", "conll_f1_qa3",
                                                      "conll_f1_qa16"]  # fmt: skip
