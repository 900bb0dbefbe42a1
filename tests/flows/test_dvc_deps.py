"""dvc.yaml lists exactly the code each stage runs: every project module its flow imports
(transitively, lazy imports included) is covered by a dep, and every code dep is imported.

Why: a dep too many reruns stages for nothing (a MAGE setting retraining the coreference
model); a dep too few lets `dvc repro` call a stage up to date after its code changed.
Dynamic imports by name (the corpus and annotator registries) are covered by listing the
registry's folder, which this test accepts as long as the flow imports something in it; an
LM built by name (models/registry.py `language_model("rnnlm", ...)`) counts as importing its
module.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import yaml

from tests.conftest import REPO_ROOT

CODE_ROOTS = ("flows", "tasks", "models")


def module_file(name: str) -> Path | None:
    """The project file of a dotted module name, or None for third-party modules."""
    if name.split(".")[0] not in CODE_ROOTS:
        return None
    base = REPO_ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def direct_imports(path: Path) -> frozenset[Path]:
    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):  # a package's __init__ runs on import too
                hit = module_file(".".join(parts[:i]))
                if hit is not None:
                    found.add(hit)
    return frozenset(found)


# registries that import their members by name: using one imports its whole folder
REGISTRIES = ("tasks/corpora/__init__.py", "tasks/annotation/annotators/__init__.py")


@cache
def registries_used(path: Path) -> frozenset[Path]:
    """Registry packages `path` imports as such (`from tasks import corpora`, `from
    tasks.corpora import get`), not merely on the way to a submodule."""
    used = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[Path | None] = []
        if isinstance(node, ast.Import):
            targets = [module_file(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                full = module_file(f"{node.module}.{a.name}")
                targets.append(full if full is not None else module_file(node.module))
        used |= {t for t in targets if t and t.relative_to(REPO_ROOT).as_posix() in REGISTRIES}
    return frozenset(used)


@cache
def language_models_built(path: Path) -> frozenset[Path]:
    """The modules `path` loads through models/registry.py `language_model("<name>", ...)`:
    a name written in the call is the module LANGUAGE_MODELS gives it."""
    from models.registry import LANGUAGE_MODELS

    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "language_model"
                and node.args and isinstance(node.args[0], ast.Constant)):  # fmt: skip
            found.add(module_file(LANGUAGE_MODELS[node.args[0].value]))
    return frozenset(found)


def closure(*roots: Path) -> set[Path]:
    seen, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo.extend(direct_imports(p))
        todo.extend(language_models_built(p))
        for registry in registries_used(p):
            todo.extend(registry.parent.glob("*.py"))
    return seen


def plugin_roots(stage: str) -> list[Path]:
    """The annotator factory a model-annotation stage loads by name (params.yaml)."""
    if stage != "annotate_model":
        return []
    params = yaml.safe_load((REPO_ROOT / "params.yaml").read_text())
    factory = params["annotate"]["annotators"]["model"]["factory"]
    return [module_file(factory.split(":")[0])]


def code_stages() -> dict[str, tuple[Path, list[str]]]:
    """stage name -> (its flow module's file, its code deps as written in dvc.yaml)."""
    spec = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    out = {}
    for name, stage in spec.items():
        body = stage.get("do", stage)
        module = body["cmd"].split("python -m ", 1)[1].split()[0]
        deps = [d for d in body.get("deps", []) if d.split("/")[0] in CODE_ROOTS]
        out[name] = (module_file(module), deps)
    return out


def covered(path: Path, deps: list[str]) -> bool:
    rel = path.relative_to(REPO_ROOT).as_posix()
    return any(rel == d or rel.startswith(d.rstrip("/") + "/") for d in deps)


def test_every_stage_depends_on_exactly_the_code_it_runs():
    problems = []
    for stage, (flow_file, deps) in code_stages().items():
        used = closure(flow_file, *plugin_roots(stage))
        for p in sorted(used):
            if not covered(p, deps) and p.name != "__init__.py":
                problems.append(f"{stage}: imports {p.relative_to(REPO_ROOT)}, not in its deps")
        for dep in deps:
            if not any(covered(p, [dep]) for p in used):
                problems.append(f"{stage}: dep {dep} is code it never imports")
    assert not problems, "\n".join(problems)
