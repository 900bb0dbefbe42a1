"""Commands README.md and docs/ give users: `dvc exp run -S ...` must leave a params.yaml DVC can read.

`dvc exp run -S` rewrites params.yaml through ruamel (dvc.repo.experiments.queue.base
_update_params -> dvc.utils.hydra.apply_overrides -> dvc.utils.serialize.modify_yaml); inside a
`{...}` flow mapping it dropped the quotes of "tasks.train_coref:load_annotator" and DVC then
refused the file ("YAML file structure is corrupted"), so every override failed.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tasks.core.config import load_yaml as read_params_text
from tests.conftest import REPO_ROOT, copy_checkout, run_ok

PARAMS = REPO_ROOT / "params.yaml"
ORIGINAL = yaml.safe_load(PARAMS.read_text())


def _documented_overrides(path: Path) -> list[list[str]]:
    """Every `-S` override set shown in *path*: one per line, continuation lines joined."""
    text = re.sub(r"\\\n\s*#?", " ", path.read_text())
    sets = []
    for line in text.splitlines():
        found = [q or bare for q, bare in re.findall(r"-S\s+(?:'([^']*)'|([^\s`']+))", line)]
        if found:
            sets.append(found)
    return sets


DOC_PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
_ALL_SETS = (
    [s for page in DOC_PAGES for s in _documented_overrides(page)]  # README and docs/
    + _documented_overrides(PARAMS)
    + _documented_overrides(REPO_ROOT / "tasks" / "report" / "paper_results.yaml")  # the report's
)
README_SETS = [list(s) for s in dict.fromkeys(tuple(s) for s in _ALL_SETS)]  # each set once


def _rewrite(path: Path, overrides: list[str]) -> None:
    """What `dvc exp run -S` does to the params file (no hydra config in this repository)."""
    from dvc.utils.hydra import apply_overrides

    apply_overrides(path, overrides)


def _without(data: dict, dotted: str) -> dict:
    """*data* less the key at *dotted* (absent keys are fine: `+` overrides add them)."""
    data = copy.deepcopy(data)
    *parents, last = dotted.split(".")
    node = data
    for key in parents:
        node = node.get(key, {})
    node.pop(last, None)
    return data


def _check_rewritten(path: Path, overrides: list[str], before: dict) -> dict:
    """The rewritten file reads (DVC and the stages agree), has the overrides, nothing else."""
    from dvc.utils.hydra import to_hydra_overrides
    from dvc.utils.serialize import load_yaml

    data = load_yaml(path)  # DVC's reader: raises YAMLFileCorruptedError on the old file
    assert read_params_text(path.read_text()) == data  # tasks.core.config's reader
    rest, rest_before = data, before
    for override in to_hydra_overrides(overrides):
        key = override.key_or_group
        node = data
        for part in key.split("."):
            node = node[part]
        assert node == override.value(), key
        rest, rest_before = _without(rest, key), _without(rest_before, key)
    assert rest == rest_before
    return data


def test_params_yaml_reads_the_same_in_dvc_and_the_stages():
    from dvc.utils.serialize import load_yaml

    assert load_yaml(PARAMS) == ORIGINAL


def test_set_param_rewrite_keeps_params_valid(tmp_path):
    """Two rewrites in a row: the second reads the style the first wrote (exp apply + commit)."""
    path = tmp_path / "params.yaml"
    shutil.copy(PARAMS, path)
    _rewrite(path, ["download.synthetic.n_train=50"])
    once = _check_rewritten(path, ["download.synthetic.n_train=50"], ORIGINAL)
    assert once["annotate"]["annotators"]["model"] == ORIGINAL["annotate"]["annotators"]["model"]
    _rewrite(path, ["annotate.annotators.model.checkpoint=artifacts/train_coref/asl/seed2/best.pt"])
    _check_rewritten(
        path, ["annotate.annotators.model.checkpoint=artifacts/train_coref/asl/seed2/best.pt"], once
    )


def test_readme_shows_set_param_commands():
    """The parametrized test below must not pass by finding nothing to check."""
    flat = [o for s in README_SETS for o in s]
    assert "download.synthetic.n_train=10000" in flat
    assert "+annotate.runs.gum-gold={corpus:gum,annotator:gold}" in flat
    assert any(o.startswith("corpora=[") for o in flat)


@pytest.mark.parametrize("overrides", README_SETS, ids=lambda s: " ".join(s)[:60])
def test_readme_set_param_commands_give_a_valid_pipeline(tmp_path, overrides):
    """Each documented `-S` set rewrites params.yaml into one DVC reads and builds stages from."""
    from dvc.repo import Repo

    repo = tmp_path / "repo"
    repo.mkdir()
    Repo.init(repo, no_scm=True).close()
    shutil.copy(REPO_ROOT / "dvc.yaml", repo / "dvc.yaml")
    shutil.copy(PARAMS, repo / "params.yaml")
    _rewrite(repo / "params.yaml", overrides)
    data = _check_rewritten(repo / "params.yaml", overrides, ORIGINAL)
    with Repo(str(repo)) as dvc:
        stages = {s.name for s in dvc.index.stages}
    assert {f"download@{c}" for c in data["corpora"]} <= stages
    for override in overrides:  # an added run / derived corpus gets its stage
        if m := re.match(
            r"\+(annotate\.runs|annotate\.model_runs|annotate\.stanza_runs|derive)\.([^=]+)=",
            override,
        ):
            stage = {"annotate.runs": "annotate", "annotate.model_runs": "annotate_model",
                     "annotate.stanza_runs": "annotate_stanza"}.get(m[1], m[1])  # fmt: skip
            assert f"{stage}@{m[2]}" in stages


@pytest.mark.slow
def test_dvc_exp_run_with_set_param(tmp_path):
    """The real command in a fresh copy: the override reaches params, the stage and its metrics."""
    repo = tmp_path / "repo"
    env = copy_checkout(repo)
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp_path / 'mlflow.db'}"
    override = "download.synthetic.n_train=50"
    run_ok(
        [sys.executable, "-m", "dvc", "exp", "run", "-S", override, "stats@synthetic"],
        repo,
        env,
        timeout=300,
    )
    _check_rewritten(repo / "params.yaml", [override], ORIGINAL)
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]["download@synthetic"]
    assert lock["params"]["params.yaml"]["download.synthetic"]["n_train"] == 50
    metrics = json.loads((repo / "metrics" / "corpora" / "synthetic.json").read_text())
    assert metrics["train"]["documents"] == 50


def test_logs_get_no_library_progress_bars():
    """Issue #59 row 20: Hugging Face's tqdm bars leaked into `dvc repro > log` as
    carriage-return lines; a stage's logging setup turns them off when stderr is no terminal."""
    import os
    import subprocess

    code = ("import huggingface_hub.utils as hub; from flows.runtime import setup_logging; "
            "setup_logging(); print(hub.are_progress_bars_disabled())")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.stdout.strip() == "True", done.stderr
