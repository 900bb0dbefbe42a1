"""dvc.yaml's code deps are generated (tasks/core/stage_deps.py) and current: every stage
depends on exactly the project code its flow runs, so no hand edit follows a new import."""

from __future__ import annotations

from pathlib import Path

import yaml

from tasks.core import stage_deps
from tests.conftest import REPO_ROOT


def test_dvc_yaml_code_deps_are_current():
    """A failure prints the diff; `python -m tasks.core.stage_deps` writes it."""
    text = (REPO_ROOT / "dvc.yaml").read_text()
    assert stage_deps.render(text, stage_deps.code_deps()) == text, (
        "dvc.yaml out of date: run `python -m tasks.core.stage_deps`"
    )


def test_every_stage_depends_on_the_code_it_runs_and_no_other():
    deps = stage_deps.code_deps()
    assert "models/mage/mage_gru.py" in deps["train_mage"]
    assert not any(d.startswith("models/coref") for d in deps["train_mage"])
    assert "tasks/corpora" in deps["normalize"]  # the corpus registry, loaded by name
    assert "tasks/core/stage_deps.py" not in {d for v in deps.values() for d in v}
    # the LM registry's names count as imports: Table 1's RNNLM is scored through it
    assert "models/entitynlm/lm.py" in deps["train_entitynlm"]
    # the annotator factory params.yaml names is loaded by the model-annotation stage
    assert "models/coref/annotator.py" in deps["annotate_model"]
    # the report renders every registered family's section, found by name, and runs no model
    assert {f"tasks/report/{f}.py" for f in ("mage", "coref", "entitynlm", "corelm")} <= set(
        deps["report"]
    )
    assert not any(d.startswith("models/") and d != "models/registry.py" for d in deps["report"])


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_render_replaces_only_the_code_entries(tmp_path, monkeypatch):
    """A new import appears, a dropped one goes, a registry stays a folder; data deps, their
    comments and the rest of the file are kept as written."""
    _tree(tmp_path, {
        "flows/__init__.py": "", "flows/train.py": "from tasks.core import a\nfrom tasks import reg\n",
        "tasks/__init__.py": "", "tasks/core/__init__.py": "", "tasks/core/a.py": "import numpy\n",
        "tasks/core/b.py": "", "tasks/reg/__init__.py": "", "tasks/reg/one.py": "",
        "models/registry.py": "LANGUAGE_MODELS = {}\n", "params.yaml": "{}\n",
    })  # fmt: skip
    text = (
        "stages:\n"
        "  train:   # the model\n"
        "    cmd: python -m flows.train\n"
        "    deps:\n"
        "      - data/docs    # the corpora\n"
        "      - flows/train.py\n"
        "      - tasks/core/b.py\n"
        "    outs:\n"
        "      - artifacts/train\n"
    )
    (tmp_path / "dvc.yaml").write_text(text)
    monkeypatch.setattr(stage_deps, "REGISTRIES", ("tasks/reg/__init__.py",))
    new = stage_deps.render(text, stage_deps.code_deps(tmp_path))
    assert yaml.safe_load(new)["stages"]["train"]["deps"] == [
        "data/docs", "flows/train.py", "tasks/core/a.py", "tasks/reg",
    ]  # fmt: skip
    assert "- data/docs    # the corpora\n" in new and new.endswith("      - artifacts/train\n")
    assert stage_deps.render(new, stage_deps.code_deps(tmp_path)) == new  # idempotent
