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
TASK_STEPS = {
    "core",
    "corpora",
    "annotation",
    "graphs",
    "training",
    "evaluation",
    "report",
    "results",
}


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
    """Whether a module reads params.yaml itself (imports `params` from tasks.core.config,
    `mirror_setting` from tasks.core.fetch, or `load_stage_settings` from tasks.core.settings): a stage's
    settings, plan or run, not a library."""
    readers = {"tasks.core.config": {"params"}, "tasks.core.fetch": {"mirror_setting"},
               "tasks.core.settings": {"load_stage_settings"}}  # fmt: skip
    names = set().union(*readers.values())
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and {a.name for a in node.names} & readers.get(
            node.module or "", set()
        ):
            return True
        if isinstance(node, ast.Attribute) and node.attr in names:  # config.params(...)
            return True
    return False


def test_models_import_no_stage_module():
    """models/ uses the libraries of tasks/ (core, the loop, scorers, the corpus readers, the
    view encoders, the annotator interface it implements), never a module of a stage: the
    stage passes what it read from params.yaml down, so a family's code runs without one."""
    stage_modules = {
        module_name(p)
        for p in (REPO_ROOT / "tasks").rglob("*.py")
        if p.relative_to(REPO_ROOT).parts[1] != "core" and reads_params(p)
    }
    assert "tasks.graphs.runs" in stage_modules  # the rule sees a stage when there is one
    problems = [
        f"{p.relative_to(REPO_ROOT)} imports {m}"
        for p in sorted((REPO_ROOT / "models").rglob("*.py"))
        for m in sorted(project_imports(p) & stage_modules)
    ]
    assert not problems, "\n".join(problems)


def test_models_read_no_params():
    """A family's code takes its settings as arguments (issue #31): the stage reads
    params.yaml (flows/<stage>.py) and passes them down -- the mirror to the GPT-2 tokenizer,
    the download settings to the GloVe lookup, lm_features to training -- and a checkpoint
    carries what its predictions need (how its LM features were computed)."""
    assert reads_params(REPO_ROOT / "flows" / "train_coref.py")  # the rule sees a reader
    readers = sorted(
        str(p.relative_to(REPO_ROOT))
        for p in (REPO_ROOT / "models").rglob("*.py")
        if reads_params(p)  # at module level or inside a function
    )
    assert not readers, f"models/ reading params.yaml (move the lookup to the stage): {readers}"
