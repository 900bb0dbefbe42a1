"""Presets (issue #29.7): one file of `dvc exp run -S` overrides per paper table and scale.
Each must give a params.yaml that DVC builds its stages from and that every stage's strict
parser accepts; a bad preset file is one line naming the file and the key."""

from __future__ import annotations

import shutil
import sys

import pytest
import yaml

from tasks.core import config, presets
from tasks.core.errors import CorefreproError
from tests.conftest import REPO_ROOT
from tests.core.test_params_strict import CASES
from tests.flows.test_user_commands import ORIGINAL, PARAMS, _check_rewritten, _rewrite

CELLS = [
    (name, scale, smoke)
    for name in presets.names()
    for scale in presets.load(name).scales
    for smoke in (False, True)
]


def _last_per_key(overrides: list[str]) -> list[str]:
    """The overrides that stand after DVC applies them in order (a smoke overlay sets some
    keys again: the later value wins; `~key` removes what `+key=` added)."""
    from dvc.utils.hydra import to_hydra_overrides

    keys = [o.key_or_group for o in to_hydra_overrides(overrides)]
    last = [o for i, o in enumerate(overrides) if keys[i] not in keys[i + 1 :]]
    return [o for o in last if not o.startswith("~")]


def test_every_paper_table_with_data_has_a_preset():
    tables = yaml.safe_load((REPO_ROOT / "tasks/report/paper_results.yaml").read_text())
    ids = {t["id"] for t in tables["tables"]} - {"embedded-default", "mage-cnn"}  # no mirror data
    assert ids <= set(presets.names())
    assert "corelm" in presets.names()  # CoreLM's two tables come from one training run


@pytest.mark.parametrize(("name", "scale", "smoke"), CELLS)
def test_a_preset_gives_a_pipeline_dvc_builds_and_every_stage_accepts(
    name, scale, smoke, tmp_path, monkeypatch
):
    from dvc.repo import Repo

    overrides = presets.load(name).overrides_for(scale, smoke)
    repo = tmp_path / "repo"
    repo.mkdir()
    Repo.init(repo, no_scm=True).close()
    shutil.copy(REPO_ROOT / "dvc.yaml", repo / "dvc.yaml")
    shutil.copy(PARAMS, repo / "params.yaml")
    _rewrite(repo / "params.yaml", overrides)  # what `dvc exp run -S` does
    data = _check_rewritten(repo / "params.yaml", _last_per_key(overrides), ORIGINAL)
    with Repo(str(repo)) as dvc:
        stages = {s.name for s in dvc.index.stages}
    for target in presets.load(name).targets_for(smoke, scale):
        assert target in stages or any(s.startswith(f"{target}@") for s in stages), target
    # the project's strict parser: every stage's section, every corpus's namespaces
    monkeypatch.setattr(config, "_load", lambda path: data)
    from tasks.corpora.ingest import download_settings, normalize_settings

    for call, _ in CASES.values():
        module, expr = call.split(":")
        eval(expr, dict(__import__(module, fromlist=["_"]).__dict__))  # noqa: S307
    for corpus in data["corpora"]:
        download_settings(corpus), normalize_settings(corpus)
    if smoke:  # the embedded data only: no stage it runs reads the mirror
        assert set(data["corpora"]) == {"synthetic", "handmade"}


def _metrics_stages() -> set[str]:
    """The dvc.yaml stages that declare DVC metrics (what `dvc exp show` shows)."""
    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    return {name for name, stage in stages.items()
            if stage.get("metrics") or (stage.get("do") or {}).get("metrics")}  # fmt: skip


@pytest.mark.parametrize(("name", "scale", "smoke"), CELLS)
def test_every_preset_run_ends_with_the_stage_that_writes_the_dvc_metrics(name, scale, smoke):
    """Issue #55.4: the DVC metrics (metrics/summary/) are written by the report stage alone;
    a preset experiment that stopped at its training stage committed the workspace's figures
    as its own (`dvc exp show` printed main's 41.62 beside a metrics file saying 22.7)."""
    assert _metrics_stages() == {presets.REPORT_STAGE}
    argv = presets.command(name, scale, smoke=smoke)  # `resume` repros the same targets
    if smoke:  # a check that the preset runs, not an experiment to compare (presets docstring)
        assert presets.REPORT_STAGE not in argv and presets.REPORT_STAGE not in presets.load(
            name
        ).targets_for(smoke, scale)
        return
    assert argv[-1] == presets.REPORT_STAGE and argv.count(presets.REPORT_STAGE) == 1
    assert presets.load(name).targets_for(smoke, scale)[-1] == presets.REPORT_STAGE


def test_show_prints_the_dvc_exp_run_command(capsys):
    assert presets.main(["show", "entitynlm-prediction", "--scale", "paper"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("uv run dvc exp run -S 'corpora=[synthetic,handmade,inscript]'")
    assert "-S train_entitynlm.model.hidden_size=256" in line
    assert line.endswith(" entity_prediction@inscript report")


def test_run_hands_the_command_to_dvc(monkeypatch):
    calls = []
    monkeypatch.setattr(presets, "run_dvc", lambda argv: calls.append(argv) or (0, False))
    assert presets.main(["run", "mage-babi", "--scale", "cpu", "--", "--queue"]) == 0
    argv = calls[0]
    assert argv[:3] == ["dvc", "exp", "run"]
    assert argv[-3:] == ["--queue", "train_mage", "report"]
    assert "train_mage.run.models=[ga,ga-mage16]" in argv


def test_a_scale_runs_its_own_targets_beside_the_presets(monkeypatch):
    """Issue #58.5: mage-coref-quality's annotators scale scores each annotation
    (graphs_reference), which no training stage reads; the other scales and the smoke run
    keep the preset's targets, and `resume` repros what `run` ran."""
    preset = presets.load("mage-coref-quality")
    assert preset.targets_for(False, "annotators") == ["train_mage", "graphs_reference",
                                                       "report"]  # fmt: skip
    assert preset.targets_for(False, "cpu") == ["train_mage", "report"]
    assert preset.targets_for(True, "annotators") == ["train_mage"]
    argv = presets.command("mage-coref-quality", "annotators")
    assert argv[-3:] == ["train_mage", "graphs_reference", "report"]
    assert "train_mage.run.models=[ga-mage16-model,ga-mage16-stanza]" in argv
    overrides = [argv[i + 1] for i, a in enumerate(argv) if a == "-S"]
    monkeypatch.setattr(presets, "params_differences", lambda base, path, o: [])
    monkeypatch.setattr(presets, "committed_params", lambda root=None: "")
    assert presets.resume_command("mage-coref-quality", "annotators")[-3:] == argv[-3:]
    # the reader on each annotation's graphs, on the drop series' tasks and protocol
    for needed in ("+train_mage.models.ga-mage16-model={reader: ga, encoder: mage, "
                   "coref_size: 16, data: babi-model}",
                   "+graphs.references.babi-stanza={corpus: babi, reference: babi-entity-id}",
                   "train_mage.run.tasks=[qa2,qa3,qa16]", "train_mage.seeds=[1,2,3]",
                   "train_mage.train.patience=20"):  # fmt: skip
        assert needed in overrides, needed
    # the corpus stays whole: babi-entity-id's table is the one the other records name
    assert not any(o.startswith(("normalize.babi", "download.babi")) for o in overrides)


def _committed_repo(tmp_path):
    """A git repository holding the project's params.yaml, committed (what a clone has)."""
    import subprocess

    repo = tmp_path / "clone"
    repo.mkdir()
    shutil.copy(PARAMS, repo / "params.yaml")
    for argv in (["init", "-q"], ["add", "params.yaml"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "params"]):  # fmt: skip
        subprocess.run(["git", *argv], cwd=repo, check=True)
    return repo


def test_resume_reproduces_the_targets_while_params_hold_the_preset(tmp_path):
    repo = _committed_repo(tmp_path)
    overrides = presets.load("entitynlm-lm").overrides_for("cpu")
    _rewrite(repo / "params.yaml", [*overrides, "train_entitynlm.seeds=[3]"])  # the killed run's
    extra = ["-S", "train_entitynlm.seeds=[3]"]
    assert presets.resume_command("entitynlm-lm", "cpu", extra, root=repo) == [
        "dvc", "repro", "train_entitynlm", "report"]  # fmt: skip
    # without the run's own -S pair, or at the other scale: refused, naming the keys
    with pytest.raises(
        CorefreproError, match=r"train_entitynlm\.seeds: \[3\] here, \[1\] in the preset"
    ):
        presets.resume_command("entitynlm-lm", "cpu", root=repo)
    with pytest.raises(
        CorefreproError, match=r"does not hold the preset's settings .*embed_dim: 256 here, 32"
    ):
        presets.resume_command("entitynlm-lm", "paper", extra, root=repo)
    with pytest.raises(CorefreproError, match="only the run's `-S key=value` pairs"):
        presets.resume_command("entitynlm-lm", "cpu", ["--temp"], root=repo)


def test_no_training_folder_is_persisted_and_resume_follows_train_resume():
    """Resume state lives outside the tracked outputs (data/cache/resume/, issue #54.2): no
    stage persists its outputs, and a stage resumes where its `train.resume` is on."""
    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    persisted = sorted(name for name, stage in stages.items()
                       for out in (stage.get("do") or stage).get("outs", [])
                       if isinstance(out, dict) and next(iter(out.values())).get("persist"))  # fmt: skip
    assert persisted == []
    for name in ("train_coref", "train_entitynlm"):
        assert presets.resume_scope(name) == f"{name}: each seed continues from its last.pt"
    assert presets.resume_scope("train_mage").startswith("train_mage: finished stages are kept")


def test_a_failed_run_names_the_resume_command(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(presets, "run_dvc", lambda argv: (1, False))
    monkeypatch.setattr(presets, "started", lambda *args: True)  # params.yaml holds the preset
    assert presets.main(["run", "entitynlm-lm", "--", "-S", "train_entitynlm.seeds=[3]"]) == 1
    err = capsys.readouterr().err
    assert ("failed (exit 1): `uv run python -m tasks.core.presets resume entitynlm-lm --scale "
            "cpu -- -S 'train_entitynlm.seeds=[3]'` continues from each stage's last.pt") in err  # fmt: skip
    monkeypatch.setattr(presets, "REPO_ROOT", tmp_path)
    assert presets.main(["run", "entitynlm-lm", "--", "--temp"]) == 1
    assert "resume`" not in capsys.readouterr().err  # a --temp run left nothing to resume


def test_a_run_dvc_refused_prints_no_resume_hint(monkeypatch, capsys):
    """Issue #59 row 22: a bad option (DVC refuses it before applying the preset: params.yaml
    is HEAD's) printed a resume hint although nothing ran."""
    monkeypatch.setattr(presets, "run_dvc", lambda argv: (254, False))
    assert presets.main(["run", "entitynlm-lm", "--", "--no-such-option"]) == 254
    assert "resume" not in capsys.readouterr().err


def test_an_interrupted_temp_run_leaves_nothing_behind(monkeypatch, capsys, tmp_path):
    """Issue #59 row 22: DVC leaves a killed --temp run's copy (143 MB for mage-babi) and its
    run record, which `dvc exp show` lists as Running; the run removes both and says so."""
    exps = tmp_path / ".dvc" / "tmp" / "exps"
    older = exps / "standalone" / "tmpolder"  # another run's, there before: kept
    older.mkdir(parents=True)

    def interrupted_dvc(argv):
        for leftover in ("standalone/tmpab12cd", "standalone/run/feb2cee", "run/feb2cee"):
            (exps / leftover).mkdir(parents=True)
        return 255, True

    monkeypatch.setattr(presets, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(presets, "run_dvc", interrupted_dvc)
    assert presets.main(["run", "mage-babi", "--scale", "paper", "--smoke", "--", "--temp"]) == 255
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("interrupted: a --temp run keeps nothing to "
                                               "resume (its temporary copy, 3 folders")  # fmt: skip
    assert "run it again: `uv run dvc exp run " in err[0] and err[0].endswith(" train_mage`")
    assert presets.dvc_temp_entries(tmp_path) == {older}


def test_ctrl_c_lets_dvc_finish_its_own_clean_up(tmp_path, monkeypatch, request):
    """The run used subprocess.run, which kills its child 0.25 s after a Ctrl-C: DVC was cut
    off mid-clean-up. Now the child gets the SIGINT and is waited for."""
    import os
    import signal
    import threading
    import time

    def interrupt_when_ready():
        deadline = time.time() + 120
        while not (tmp_path / "ready").exists() and time.time() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    # Ctrl-C's default handler (a shell without job control starts background commands with
    # SIGINT ignored)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, old))
    threading.Thread(target=interrupt_when_ready, daemon=True).start()
    assert presets.run_dvc(["tests.core.interrupt_probe", str(tmp_path)]) == (130, True)
    assert (tmp_path / "cleaned").exists()


def test_exp_run_restores_persisted_outputs_and_repro_keeps_them(tmp_path):
    """Why `resume` is `dvc repro`: rerun after a kill, `dvc exp run` first restores a stage's
    committed outputs (a persisted last.pt included), `dvc repro` keeps what the killed run
    wrote. A toy stage that appends one file per run to a persisted folder."""
    import os
    import subprocess

    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    dvc = [sys.executable, "-m", "dvc"]

    def sh(*argv, check=True):
        return subprocess.run(argv, cwd=tmp_path, env=env, check=check, capture_output=True)

    stage = ("import pathlib; p = pathlib.Path('out'); p.mkdir(exist_ok=True); "
             "(p / f'run{len(list(p.iterdir()))}').write_text('')")  # fmt: skip
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"train": {
        "cmd": f'{sys.executable} -c "{stage}"', "params": ["x"],
        "outs": [{"out": {"persist": True}}]}}}))  # fmt: skip
    (tmp_path / "params.yaml").write_text("x: 1\n")
    sh("git", "init", "-q"), sh(*dvc, "init", "-q"), sh(*dvc, "repro", "-q")
    sh("git", "add", "-A"), sh("git", "commit", "-qm", "run0")
    (tmp_path / "out" / "killed").write_text("")  # what a killed `exp run -S x=2` had written
    (tmp_path / "params.yaml").write_text("x: 2\n")
    sh(*dvc, "exp", "run", "-q", "-S", "x=2")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run0", "run1"]
    sh("git", "checkout", "-q", "--", "."), sh(*dvc, "checkout", "-q", "-f")  # back to run0
    (tmp_path / "out" / "killed").write_text("")
    (tmp_path / "params.yaml").write_text("x: 2\n")
    sh(*dvc, "repro", "-q")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["killed", "run0", "run2"]


BAD = {
    "scales:\n  cpu: {cost: x, hours: '1', numerics: native, threads: 1}\n": "scales: must have cpu and paper",
    "scales:\n  cpu: {cost: x, hours: '1', numerics: native, threads: 1}\n  paper: {cost: y, hours: '1', numerics: native, threads: 1, overides: []}\n": "scales.paper.overides: unknown setting (did you mean overrides?)",
    "overrides: [corpora]\nscales:\n  cpu: {cost: x, hours: '1', numerics: native, threads: 1}\n  paper: {cost: y, hours: '1', numerics: native, threads: 1}\n": "'corpora' (item 0) is not key=value",
    "smoke: {targets: [train_mage], overrides: [x=1, y]}\nscales:\n  cpu: {cost: x, hours: '1', numerics: native, threads: 1}\n  paper: {cost: y, hours: '1', numerics: native, threads: 1}\n": "smoke.overrides: 'y' (item 1) is not key=value",
    "scales:\n  cpu: {cost: x, hours: '1', numerics: native, threads: 1}\n  paper: {cost: y, hours: '1', numerics: native, threads: 1}\n": "smoke: missing setting (it has no default)",
    "scales:\n  cpu: {cost: x, numerics: native, threads: 1}\n  paper: {cost: y, hours: '1', numerics: native, threads: 1}\n": "scales.cpu.hours: missing setting",
    "scales:\n  cpu: {cost: x, hours: '1', numerics: fast, threads: 1}\n  paper: {cost: y, hours: '1', numerics: native, threads: 1}\n": "scales.cpu.numerics",
    "scales:\n  cpu: {cost: x, hours: '1', numerics: native, threads: 0}\n  paper: {cost: y, hours: '1', numerics: native, threads: 1}\n": "scales.cpu.threads: 0: expected a count or 'not stated'",
}
SMOKE = "smoke: {targets: [train_mage]}\n"


@pytest.mark.parametrize("body", sorted(BAD))
def test_a_bad_preset_is_one_line_naming_the_file_and_key(body, tmp_path, monkeypatch):
    monkeypatch.setattr(presets, "PRESETS_DIR", tmp_path)
    smoke = SMOKE if "smoke" not in BAD[body] + body else ""
    (tmp_path / "bad.yaml").write_text(f"title: t\ntargets: [train_mage]\n{smoke}{body}")
    with pytest.raises(CorefreproError, match=rf"{tmp_path}/bad.yaml: .*") as err:
        presets.load("bad")
    assert BAD[body] in str(err.value)
    with pytest.raises(CorefreproError, match=f"preset 'nope': no {tmp_path}/nope.yaml"):
        presets.load("nope")


def test_a_yaml_syntax_error_is_one_line_naming_file_line_and_column(tmp_path, monkeypatch, capsys):
    """Issue #59 rows 5-6: params.yaml or a preset with a syntax error, read directly."""
    from tasks.core import config, presets
    from tasks.core.errors import CorefreproError

    bad = tmp_path / "params.yaml"
    bad.write_text("train_mage:\n  seeds: [1, 2\n  data: x\n")
    with pytest.raises(CorefreproError, match=r"params.yaml:3:\d+: not valid YAML"):
        config.params("train_mage", bad)
    folder = tmp_path / "presets"
    folder.mkdir()
    for name in presets.names():
        (folder / f"{name}.yaml").write_text((presets.PRESETS_DIR / f"{name}.yaml").read_text())
    (folder / "broken.yaml").write_text("title: x\nscales: {cpu: [\n")
    monkeypatch.setattr(presets, "PRESETS_DIR", folder)
    with pytest.raises(CorefreproError, match=r"broken.yaml:\d+:\d+: not valid YAML"):
        presets.load("broken")
    assert presets.main(["list"]) == 1
    out = capsys.readouterr().out
    assert "broken: BROKEN: " in out and "mage-babi: " in out  # the good ones still listed


def test_every_preset_runs_native_and_portable_is_one_setting_away():
    """Issue #57.1: a preset's outputs are never the committed lock, so it runs the host's
    fastest kernels; `-- -S numerics=portable` (after the preset's own) runs the pinned ones.
    A smoke run keeps the workspace's mode, so it reuses the embedded outputs upstream of its
    targets instead of rebuilding them natively."""
    for name, scale, smoke in CELLS:
        keys = [o.split("=", 1)[0] for o in presets.load(name).overrides_for(scale, smoke)]
        standing = _last_per_key(presets.load(name).overrides_for(scale, smoke))
        assert ("numerics=native" in standing) is not smoke and keys.count("numerics") == 1 - smoke
        argv = presets.command(name, scale, ["-S", "numerics=portable"], smoke)
        sets = [argv[i + 1] for i, a in enumerate(argv) if a == "-S"]
        standing = _last_per_key(sets)
        assert "numerics=portable" in standing and "numerics=native" not in standing


def test_list_opens_with_a_line_per_preset_and_scale(capsys):
    """Issue #57.5: first a line per preset and scale (hours on this CPU, GPU hours, the mode
    and threads they were measured with), then the costs in detail."""
    assert presets.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    cells = [(name, scale) for name in presets.names() for scale in presets.load(name).scales]
    assert lines[0].split()[:2] == ["preset", "scale"] and "measured with" in lines[0]
    for line, (name, scale) in zip(lines[1:], cells, strict=False):
        cfg = presets.load(name).scales[scale]
        assert line.split()[:2] == [name, scale]
        assert cfg.hours in line and cfg.gpu_hours in line and line.endswith(cfg.summary()[-1])
    assert lines[len(cells) + 1] == ""  # then the detail
    assert lines[len(cells) + 2].startswith(f"{presets.names()[0]}: ")


def test_the_docs_state_the_smoke_seeds_the_preset_runs():
    """Issue #59 row 22: docs/presets.md said the smoke stacks ten seeds; it runs two."""
    (seeds,) = [o for o in presets.load("mage-babi").smoke.overrides
                if o.startswith("train_mage.seeds=")]  # fmt: skip
    text = (REPO_ROOT / "docs" / "presets.md").read_text()
    smoke = text[text.index("**Smoke runs.**") :].split("\n\n")[0]
    assert f"`{seeds}`" in smoke and "ten seeds stacked" not in smoke
