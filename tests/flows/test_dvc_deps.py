"""dvc.yaml's code deps are generated (tasks/core/stage_deps.py) and current: every stage
depends on exactly the project code its flow runs, so no hand edit follows a new import."""

from __future__ import annotations

import sys
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


# ---- issue #54.1: deps are what determines the bytes; plumbing is neither listed nor entered ----


def _project_imports(path: Path):
    """(module file, imported name) of every `from <project module> import <name>` in path."""
    import ast

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            target = stage_deps.module_file(node.module)
            if target is not None:
                for alias in node.names:
                    yield target.relative_to(REPO_ROOT).as_posix(), alias.name


def _code_files():
    return sorted(p for root in stage_deps.CODE_ROOTS for p in (REPO_ROOT / root).rglob("*.py"))


def test_no_stage_depends_on_plumbing():
    listed = {d for deps in stage_deps.code_deps().values() for d in deps}
    assert not listed & set(stage_deps.PLUMBING)
    assert "tasks/training/loop.py" in stage_deps.code_deps()["train_mage"]  # result code stays


def test_result_code_imports_only_side_channels_from_plumbing():
    """A result module that took a value from plumbing (a constant, a helper computing
    something) would make that module's edits change results unseen by DVC."""
    wrong = [f"{p.relative_to(REPO_ROOT)}: {name} from {module}"
             for p in _code_files() if p.relative_to(REPO_ROOT).as_posix() not in stage_deps.PLUMBING
             for module, name in _project_imports(p)
             if module in stage_deps.PLUMBING and name not in stage_deps.PLUMBING[module]]  # fmt: skip
    assert not wrong, "result code imports non-side-channel names from plumbing:\n" + "\n".join(
        wrong
    )


# what writes a stage's outputs: a plumbing module calling one of these would write results
WRITERS = {"tasks/core/storage.py": {"write_table", "write_json", "write_text", "write_metrics",
                                     "atomic_path", "atomic_dir", "verified_cache"},
           "tasks/core/checkpoints.py": {"save_checkpoint"}}  # fmt: skip


def test_plumbing_imports_no_writer_of_stage_outputs():
    """Plumbing writes only its own side files (MLflow's store, locks under .tmp/): nothing
    under data/, artifacts/, metrics/, plots/ or reports/ comes from it."""
    import ast

    wrong = []
    for name in stage_deps.PLUMBING:
        path = REPO_ROOT / name
        for module, imported in _project_imports(path):
            if imported in WRITERS.get(module, ()):
                wrong.append(f"{name}: {imported} from {module}")
        source = ast.parse(path.read_text())
        for node in ast.walk(source):  # `storage.write_json(...)` through a module import
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in ("storage", "checkpoints")
                    and node.attr in set().union(*WRITERS.values())):  # fmt: skip
                wrong.append(f"{name}: {node.value.id}.{node.attr}")
        for node in ast.walk(source):  # pyarrow or torch writing a table or a checkpoint
            if isinstance(node, ast.Attribute) and node.attr in ("write_table", "save"):
                owner = getattr(node.value, "id", "")
                if owner in ("pq", "torch"):
                    wrong.append(f"{name}: {owner}.{node.attr}")
    assert not wrong, "plumbing writes stage outputs:\n" + "\n".join(wrong)


def _changed_deps(repo: Path, env: dict[str, str]) -> dict[str, set[str]]:
    """stage -> its code deps `dvc status` calls modified (data deps, absent in a copy, aside)."""
    import json as json_

    from tests.conftest import run_ok

    out = json_.loads(run_ok([sys.executable, "-m", "dvc", "status", "--json"], repo, env))
    changed: dict[str, set[str]] = {}
    for stage, entries in out.items():
        for entry in entries:
            for path, state in (entry.get("changed deps") or {}).items():
                if state == "modified" and path.split("/")[0] in stage_deps.CODE_ROOTS:
                    changed.setdefault(stage, set()).add(path)
    return changed


def test_a_log_line_edit_reruns_nothing_and_a_loop_edit_reruns_every_training_stage(tmp_path):
    """On a copy of the project: `dvc status` after editing a log line of the stage runtime and
    of the MLflow helper reports no stage changed; after editing the loop's arithmetic, every
    training stage."""
    from tests.conftest import copy_checkout

    env = copy_checkout(tmp_path)
    assert _changed_deps(tmp_path, env) == {}, "dvc.lock is not current with the code"
    for name, old, new in [
        ("flows/runtime.py", '"%s: another process is running it', '"%s: another run holds it'),
        ("tasks/core/tracking.py", "import logging\n", "import logging  # edited\n"),
    ]:
        path = tmp_path / name
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new, 1))
    assert _changed_deps(tmp_path, env) == {}
    loop = tmp_path / "tasks/training/loop.py"
    loop.write_text(loop.read_text().replace("sums[key] = sums.get(key, 0.0) + value",
                                             "sums[key] = value + sums.get(key, 0.0)"))  # fmt: skip
    changed = _changed_deps(tmp_path, env)
    spec = yaml.safe_load((tmp_path / "dvc.yaml").read_text())["stages"]
    training = {s for s in spec if s.startswith("train_")}
    touched = {stage.split("@")[0] for stage, files in changed.items()
               if "tasks/training/loop.py" in files}  # fmt: skip
    assert training <= touched, f"not rerun after a loop edit: {training - touched}"


def _changed_params(repo: Path, env: dict[str, str]) -> dict[str, set[str]]:
    """stage -> the params `dvc status` calls changed."""
    import json as json_

    from tests.conftest import run_ok

    out = json_.loads(run_ok([sys.executable, "-m", "dvc", "status", "--json"], repo, env))
    return {stage: set(entry["changed deps"]["params.yaml"])
            for stage, entries in out.items() for entry in entries
            if isinstance(entry, dict) and "params.yaml" in (entry.get("changed deps") or {})}  # fmt: skip


def test_an_ablation_setting_reruns_its_graphs_only(tmp_path):
    """Issue #54.3: a graph variant is a DVC item with its settings in params.yaml; editing one
    marks that item's graphs changed and no other stage (its training follows through the
    input digest of the model entry that reads it: tests/flows/test_inputs.py)."""
    from tests.conftest import copy_checkout

    env = copy_checkout(tmp_path)
    params = tmp_path / "params.yaml"
    old = "synthetic-gold-sentence: {run: synthetic-gold, corpus: synthetic, coref_placement: sentence}"
    assert old in params.read_text()
    params.write_text(params.read_text().replace(old, old.replace("}", ", order: document_query}")))
    changed = _changed_params(tmp_path, env)
    assert changed == {"graphs_ablation@synthetic-gold-sentence":
                       {"graphs.ablations.synthetic-gold-sentence"}}, changed  # fmt: skip


def test_entity_prediction_depends_on_its_checkpoint_and_builds_without_one(tmp_path):
    """Issue #56 (scoring the rankers alone under DVC): the stage's dep is `${entity_prediction.entitynlm.checkpoint}` (dvc repro
    trains the checkpoint first and reruns the stage when it changes); DVC cannot parse a null
    dep, so "no EntityNLM row" is the tracked NO_CHECKPOINT file, which the flow scores as
    none and DVC builds the stage with."""
    import re
    import shutil

    from dvc.repo import Repo

    from flows.entity_prediction import ModelPredictorSettings
    from tasks.evaluation.entity_prediction import NO_CHECKPOINT

    assert (REPO_ROOT / NO_CHECKPOINT).is_file()
    for value in (NO_CHECKPOINT, None):
        none = ModelPredictorSettings(value)
        none.validate("entity_prediction.entitynlm")  # no checkpoint to check
        assert none.scored is None
    trained = "artifacts/train_entitynlm/entitynlm/seed2/best.pt"
    assert ModelPredictorSettings(trained).scored == trained
    repo = tmp_path / "repo"
    repo.mkdir()
    Repo.init(repo, no_scm=True).close()
    shutil.copy(REPO_ROOT / "dvc.yaml", repo / "dvc.yaml")
    params = (REPO_ROOT / "params.yaml").read_text()
    for checkpoint in (NO_CHECKPOINT, trained):
        text, n = re.subn(r"(?m)^(    checkpoint: )\S+", rf"\g<1>{checkpoint}",
                          params.split("\nentity_prediction:", 1)[1])  # fmt: skip
        assert n == 1
        (repo / "params.yaml").write_text(params.split("\nentity_prediction:", 1)[0]
                                          + "\nentity_prediction:" + text)  # fmt: skip
        with Repo(str(repo)) as dvc:
            stages = [s for s in dvc.index.stages if s.name.startswith("entity_prediction@")]
            assert stages
            for stage in stages:
                assert checkpoint in {str(d.def_path) for d in stage.deps}, stage.name
