"""Adding a model family is one folder, one registry line and its params section (issue #31):
the dvc.yaml stage is generated from the registry (tasks/core/stage_deps.py), the generic
family stage trains it (flows/train.py -> tasks/training/stage.py train_item), the report gives
it a section (tasks/report/common.py family_section). The worked example is
tests/fixtures/new_family/toy, docs/development.md's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tasks.core import stage_deps
from tasks.report.build import sections
from tasks.report.common import family_section
from tests.conftest import REPO_ROOT

TOY = REPO_ROOT / "tests" / "fixtures" / "new_family" / "toy"
REGISTRY_LINE = '    "toy": "models.toy.family",\n'
PARAMS_SECTION = "\ntrain_toy:\n  items: [linear, mlp]\n  seeds: [1, 2]\n  train: {epochs: 3}\n"
STAGES = (
    "stages:\n"
    "  report:   # the report\n"
    "    cmd: python -m flows.report\n"
    "    deps:\n"
    "      - metrics/train_mage\n"
    "    outs:\n"
    "      - reports/results.md\n"
    "\n"
    "# the figures\n"
    "plots:\n"
    "  - plots/report/x.png\n"
)


def _register(root: Path) -> None:
    """The one registry line, appended to FAMILIES."""
    path = root / "models" / "registry.py"
    text = path.read_text()
    head, name, rest = text.partition("FAMILIES")  # a dict, or Registry("...", {...}, ...)
    before, brace, rest = rest.partition("{\n")
    body, close, tail = rest.partition("}")
    path.write_text(head + name + before + brace + body + REGISTRY_LINE + close + tail)


def _project_copy(root: Path) -> None:
    """The repository's code and settings (as git tracks them) in `root`, plus the toy family:
    its folder, its registry line and its params section -- nothing else."""
    files = subprocess.run(["git", "ls-files", "flows", "tasks", "models", "presets", "tests",
                            "params.yaml", "dvc.yaml", "pyproject.toml"], cwd=REPO_ROOT,
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    for name in files:
        if (REPO_ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, root / name)
    shutil.copytree(TOY, root / "models" / "toy", ignore=shutil.ignore_patterns("__pycache__"))
    _register(root)
    with (root / "params.yaml").open("a") as f:
        f.write(PARAMS_SECTION)


def test_a_registered_family_without_a_stage_gets_one_and_the_report_reads_it(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "registry.py").write_text("FAMILIES: dict[str, str] = {\n}\n")
    (tmp_path / "dvc.yaml").write_text(STAGES)
    assert stage_deps.add_family_stages(STAGES, tmp_path) == STAGES  # every family has one
    stage_deps.registry_dict.cache_clear()
    _register(tmp_path)
    new = stage_deps.add_family_stages(STAGES, tmp_path)
    spec = yaml.safe_load(new)
    stage = spec["stages"]["train_toy"]
    assert stage["foreach"] == "${train_toy.items}"
    assert stage["do"]["cmd"] == "python -m flows.train toy --item ${item}"
    assert stage["do"]["params"] == ["train_toy"]
    assert spec["stages"]["report"]["deps"] == [
        "metrics/train_toy", "artifacts/train_toy", "metrics/train_mage",
    ]  # fmt: skip
    assert new.index("train_toy:") < new.index("# the figures")  # inside `stages:`
    assert stage_deps.add_family_stages(new, tmp_path) == new  # idempotent
    stage_deps.registry_dict.cache_clear()


def test_a_family_without_a_report_module_gets_the_generic_section(tmp_path):
    (tmp_path / "linear.json").write_text(json.dumps({"item": "linear", "seeds": 2,
                                                      "dev_accuracy": 0.95}))  # fmt: skip
    [section] = sections(["tasks.report.toy"])
    assert section.source == "toy" and section.kinds == ()
    lines = section.render_rest([], section.load(tmp_path), {}, None)
    assert lines[:4] == ["## Model family `toy` (stage train_toy)", "",
                         "| dev_accuracy | seeds |".replace("|", "| item |", 1), "|---|---|---|"]  # fmt: skip
    assert lines[4] == "| linear | 0.9500 | 2 |"
    empty = family_section("toy")
    assert "Nothing yet" in empty.render_rest([], empty.load(tmp_path / "none"), {}, None)[2]


@pytest.mark.slow
def test_adding_a_family_is_a_folder_a_registry_line_and_a_params_section(tmp_path):
    """In a copy of the project with only those three additions: `stage_deps` writes the
    stage, the family contract test passes for it, `dvc repro` trains both items with two
    seeds each through the generic stage, and the report renders the family's section (about
    a minute)."""
    _project_copy(tmp_path)
    env = {**os.environ, "COREFREPRO_ORCHESTRATION": "local",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip

    def run(*cmd: str) -> str:
        out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout + out.stderr

    run(sys.executable, "-m", "tasks.core.stage_deps")
    deps = yaml.safe_load((tmp_path / "dvc.yaml").read_text())["stages"]["train_toy"]["do"]["deps"]
    assert {"flows/train.py", "models/toy/family.py", "models/toy/model.py"} <= set(deps)
    assert not any(d.startswith(("models/mage", "models/coref")) for d in deps)
    run(sys.executable, "-m", "tasks.core.stage_deps", "--check")
    contract = run(sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                   "tests/models/test_families.py", "-k", "toy")  # fmt: skip
    assert "1 passed" in contract  # the family contract every registered family keeps

    run("dvc", "init", "--no-scm", "-q")
    log = run("dvc", "repro", "train_toy")
    assert "train_toy@linear" in log and "train_toy@mlp" in log
    for item in ("linear", "mlp"):
        summary = json.loads((tmp_path / "metrics" / "train_toy" / f"{item}.json").read_text())
        assert summary["seeds"] == 2 and summary["dev_accuracy"] > 0.8  # it learned
        for seed in (1, 2):
            folder = tmp_path / "artifacts" / "train_toy" / item / f"seed{seed}"
            assert {"best.pt", "history.json", "metrics.json"} <= {p.name for p in folder.iterdir()}
    assert "Data and pipelines are up to date" in run("dvc", "repro", "train_toy")

    run(sys.executable, "-m", "flows.report")
    report = (tmp_path / "reports" / "results.md").read_text()
    assert "## Model family `toy` (stage train_toy)" in report
    assert "| mlp | " in report
    assert "![Learning curves: toy](../plots/report/learning_curves_toy.png)" in report
    assert (tmp_path / "plots" / "report" / "learning_curves_toy.png").stat().st_size > 0


def test_the_generic_stage_names_what_is_wrong(monkeypatch):
    """A family with a flow module of its own, and an item the section does not list, each
    stop before any work with the setting or module to look at."""
    from dataclasses import dataclass, field

    from models import registry
    from tasks.core.errors import CorefreproError
    from tasks.training import stage
    from tasks.training.family import Family

    with pytest.raises(CorefreproError, match=r"flows/train_mage\.py"):
        stage.train_item(registry.get("mage"), "bigru-syn1")

    @dataclass
    class Settings:
        items: list[str] = field(default_factory=lambda: ["linear"])
        seeds: list[int] = field(default_factory=lambda: [1])

    prepared = []
    family = Family(name="toy", paper="", settings=Settings, recipe=object, train_seed=print,
                    summarize=print, prepare_data=prepared.append)  # fmt: skip
    monkeypatch.setattr(stage, "load_settings", lambda fam: fam.settings())
    with pytest.raises(CorefreproError, match=r"train_toy\.items: no item 'mlp'; known: linear"):
        stage.train_item(family, "mlp")
    assert prepared == []  # nothing loaded for a bad item
