"""Presets (issue #29.7): one file of `dvc exp run -S` overrides per paper table and scale.
Each must give a params.yaml that DVC builds its stages from and that every stage's strict
parser accepts; a bad preset file is one line naming the file and the key."""

from __future__ import annotations

import shutil

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
    for scale in ("cpu", "paper")
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
    for target in presets.load(name).targets_for(smoke):
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


def test_show_prints_the_dvc_exp_run_command(capsys):
    assert presets.main(["show", "entitynlm-prediction", "--scale", "paper"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("uv run dvc exp run -S 'corpora=[synthetic,handmade,inscript]'")
    assert "-S train_entitynlm.model.hidden_size=256" in line
    assert line.endswith(" entity_prediction@inscript")


def test_run_hands_the_command_to_dvc(monkeypatch):
    calls = []
    monkeypatch.setattr(presets.subprocess, "run",
                        lambda argv, cwd: calls.append(argv) or type("P", (), {"returncode": 0}))  # fmt: skip
    assert presets.main(["run", "mage-babi", "--scale", "cpu", "--", "--queue"]) == 0
    argv = calls[0]
    assert argv[1:5] == ["-m", "dvc", "exp", "run"] and argv[-2:] == ["--queue", "train_mage"]
    assert "train_mage.run.models=[ga,ga-mage16]" in argv


BAD = {
    "scales:\n  cpu: {cost: x}\n": "scales: must be exactly cpu and paper",
    "scales:\n  cpu: {cost: x}\n  paper: {cost: y, overides: []}\n": "scales.paper.overides: unknown setting (did you mean overrides?)",
    "overrides: [corpora]\nscales:\n  cpu: {cost: x}\n  paper: {cost: y}\n": "'corpora' (item 0) is not key=value",
    "smoke: {targets: [train_mage], overrides: [x=1, y]}\nscales:\n  cpu: {cost: x}\n  paper: {cost: y}\n": "smoke.overrides: 'y' (item 1) is not key=value",
    "scales:\n  cpu: {cost: x}\n  paper: {cost: y}\n": "smoke: missing setting (it has no default)",
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
