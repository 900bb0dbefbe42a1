"""The tree reads like the pipeline and imports go one way: flows -> models -> tasks, and
inside tasks everything may use core but core uses nothing else; no import cycles."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO_ROOT

# layer -> the layers it may import (its own included)
ALLOWED = {
    "flows": {"flows", "models", "tasks"},
    "models": {"models", "tasks"},
    "tasks": {"tasks"},
}
TASK_STEPS = {"core", "corpora", "annotation", "graphs", "training", "evaluation", "report"}


def project_imports(path: Path) -> set[str]:
    """Dotted project modules that `path` imports, lazily or not."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {m for m in found if m.split(".")[0] in ALLOWED}


def module_name(path: Path) -> str:
    """tasks/core/config.py -> tasks.core.config (a package: its folder's name)."""
    return ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts).removesuffix(".__init__")


def sources() -> list[Path]:
    return sorted(p for layer in ALLOWED for p in (REPO_ROOT / layer).rglob("*.py"))


def test_imports_never_go_up():
    problems = []
    for path in sources():
        rel = path.relative_to(REPO_ROOT)
        layer = rel.parts[0]
        for module in project_imports(path):
            if module.split(".")[0] not in ALLOWED[layer]:
                problems.append(f"{rel} imports {module}")
            if rel.parts[:2] == ("tasks", "core") and not module.startswith("tasks.core"):
                problems.append(f"{rel} (core) imports {module}")
    assert not problems, "\n".join(problems)


def test_tasks_are_grouped_by_pipeline_step():
    steps = {p.name for p in (REPO_ROOT / "tasks").iterdir() if p.is_dir() and p.name[0] != "_"}
    loose = [p.name for p in (REPO_ROOT / "tasks").glob("*.py") if p.name != "__init__.py"]
    assert steps == TASK_STEPS and not loose


def test_no_import_cycles_between_modules():
    graph: dict[str, set[str]] = {}
    for path in sources():
        graph[module_name(path)] = {m for m in project_imports(path)}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if nxt not in graph:
                continue
            if state.get(nxt) == 1:
                cycle = trail[trail.index(nxt) :] + [nxt] if nxt in trail else [node, nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def reads_params(path: Path) -> bool:
    """Whether a module reads params.yaml itself (imports `params` or `mirror_setting` from
    tasks.core.config): a stage's settings, plan or run, not a library."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "tasks.core.config"
        and {a.name for a in node.names} & {"params", "mirror_setting"}
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
    )


def test_models_import_no_stage_module():
    """models/ uses the libraries of tasks/ (core, the loop, scorers, the corpus readers, the
    view encoders, the annotator interface it implements), never a module of a stage: the
    stage passes what it read from params.yaml down, so a family's code runs without one."""
    stage_modules = {
        module_name(p)
        for p in (REPO_ROOT / "tasks").rglob("*.py")
        if p.relative_to(REPO_ROOT).parts[1] != "core" and reads_params(p)
    }
    assert "tasks.graphs.stage" in stage_modules  # the rule sees a stage when there is one
    problems = [
        f"{p.relative_to(REPO_ROOT)} imports {m}"
        for p in sorted((REPO_ROOT / "models").rglob("*.py"))
        for m in sorted(project_imports(p) & stage_modules)
    ]
    assert not problems, "\n".join(problems)


# Stage code still inside models/ (issue #31): a stage's home is flows/<stage>.py (its
# settings, plan, run and summary: kbest, lm_features, rerank_entitynlm, train_stanza_coref
# and every train_<family>); what is left are settings lookups under library code. The list
# must shrink, never grow.
STAGE_CODE_IN_MODELS = {
    "models/coref/data.py",  # load_splits: train_coref's corpora and mirror
    "models/coref/features.py",  # settings(): lm_features, shared with train_coref and kbest
    "models/corelm/backbone.py",  # mirror_setting(): the GPT-2 BPE files of the mirror
}


def test_models_read_no_params_beyond_the_listed_stage_code():
    readers = {
        str(p.relative_to(REPO_ROOT))
        for p in (REPO_ROOT / "models").rglob("*.py")
        if reads_params(p)  # at module level or inside a function
    }
    assert readers == STAGE_CODE_IN_MODELS, (
        f"new readers of params.yaml in models/ (their stage's home is flows/<stage>.py): "
        f"{sorted(readers - STAGE_CODE_IN_MODELS)}; moved out, drop from the list: "
        f"{sorted(STAGE_CODE_IN_MODELS - readers)}"
    )
