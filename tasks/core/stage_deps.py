"""dvc.yaml's code deps, generated: each stage depends on exactly the project code it runs.

Why: a dep too many reruns stages for nothing (a MAGE setting retraining the coreference
model); a dep too few lets `dvc repro` call a stage up to date after its code changed. Kept
by hand, every new import was a dvc.yaml edit that a test then caught (issue #31.4); now
`python -m tasks.core.stage_deps` rewrites the code entries of every stage's `deps:` from the
imports of its flow module, and `--check` (run by tests/flows/test_dvc_deps.py) fails while
dvc.yaml is out of date. Data deps, params, outs and comments stay as written.

What counts as running a module: importing it (transitively, lazy imports included, a
package's `__init__` on the way); using a registry that imports its members by name
(REGISTRIES: its whole folder); building an LM by a name written in a
`language_model("<name>", ...)` call (models/registry.py LANGUAGE_MODELS); rendering the
families' report sections (a `reports()` call: tasks/report/<family>.py for every family of
models/registry.py FAMILIES); the annotator factory
params.yaml names for a model-annotation stage. A registry used as such is written as its
folder (a new member there then reruns its stages); every other module as its file.

What does not count (issue #54.1): plumbing, the modules that cannot change a stage's bytes
(PLUMBING: orchestration, tracking, progress, error wording). The walk neither lists nor
enters them, so a log line edited in the Prefect wrapper or the MLflow helper leaves
`dvc status` clean. Result code may import from them only the side channels PLUMBING names
(tests/flows/test_dvc_deps.py checks the imports, and that no plumbing frame writes under the
data roots).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import sys
from functools import cache
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CODE_ROOTS = ("flows", "tasks", "models")
# registries that import their members by name: using one imports its whole folder
REGISTRIES = ("tasks/corpora/__init__.py", "tasks/annotation/annotators/__init__.py")
LM_REGISTRY = "models/registry.py"  # LANGUAGE_MODELS: LM name -> its module; FAMILIES
STAGE_HEADING = re.compile(r"^  ([A-Za-z_][\w-]*):\s*(#.*)?$")  # a stage under `stages:`
PLUGIN_STAGES = {"annotate_model": ("annotate", "annotators", "model", "factory")}
GENERIC_TRAIN = "flows.train"  # the stage of a family without its own flow: `flows.train <family>`
# plumbing module -> the names result code may import from it (side channels: they log, track,
# orchestrate or word an error, and return nothing a result is computed from)
PLUMBING: dict[str, frozenset[str]] = {
    "flows/runtime.py": frozenset(
        {
            "Runner",
            "flow",
            "task",
            "run_cli",
            "torchrun",
            "orchestrated",
            "one_at_a_time",
            "PARENT_TASK_RUN_ENV",
            "BIND_HOST_ENV",
            "MODE_ENV",
            "setup_logging",
        }
    ),
    "flows/reproduce.py": frozenset(),
    "tasks/core/tracking.py": frozenset(
        {
            "PAPERS",
            "tracked_run",
            "tracked_runs",
            "log_metrics",
            "log_params",
            "log_dict",
            "log_file",
            "log_checkpoint",
            "tracking_uri",
            "git_sha",  # provenance a results record names, no stage output
        }
    ),
    "tasks/core/progress.py": frozenset({"Progress", "track", "STAGE_CLOCK"}),
    "tasks/core/errors.py": frozenset(
        {"CorefreproError", "DataError", "MissingSourceError", "ChecksumError", "first_line"}
    ),
}


def is_plumbing(path: Path) -> bool:
    return path.relative_to(_root_of(path)).as_posix() in PLUMBING


def module_file(name: str, root: Path = REPO_ROOT) -> Path | None:
    """The project file of a dotted module name, or None for third-party modules."""
    if name.split(".")[0] not in CODE_ROOTS:
        return None
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


@cache
def direct_imports(path: Path) -> frozenset[Path]:
    """Project files `path` imports, each package `__init__` on the way included."""
    root = _root_of(path)
    found: set[Path] = set()
    for node in ast.walk(_parse(path)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                hit = module_file(".".join(parts[:i]), root)
                if hit is not None:
                    found.add(hit)
    return frozenset(found)


@cache
def registries_used(path: Path) -> frozenset[Path]:
    """Registry packages `path` imports as such (`from tasks import corpora`, `from
    tasks.corpora import get`), not merely on the way to a submodule."""
    root = _root_of(path)
    used = set()
    for node in ast.walk(_parse(path)):
        targets: list[Path | None] = []
        if isinstance(node, ast.Import):
            targets = [module_file(a.name, root) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                full = module_file(f"{node.module}.{a.name}", root)
                targets.append(full if full is not None else module_file(node.module, root))
        used |= {t for t in targets if t and t.relative_to(root).as_posix() in REGISTRIES}
    return frozenset(used)


@cache
def registry_dict(root: Path, name: str) -> dict[str, str]:
    """A dict of models/registry.py (LANGUAGE_MODELS, FAMILIES), read from its source (core
    imports no model)."""
    for node in _parse(root / LM_REGISTRY).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(getattr(t, "id", None) == name for t in targets):
                value = node.value  # a dict, or Registry(kind, {name: module}, ...)
                if isinstance(value, ast.Call):
                    value = next(a for a in value.args if isinstance(a, ast.Dict))
                return ast.literal_eval(value)
    raise LookupError(f"{root / LM_REGISTRY}: no {name} dict")


def language_models(root: Path) -> dict[str, str]:
    return registry_dict(root, "LANGUAGE_MODELS")


@cache
def reports_rendered(path: Path) -> frozenset[Path]:
    """The families' report modules (tasks/report/<family>.py) `path` loads by name through
    models/registry.py `reports()`."""
    root = _root_of(path)
    calls = any(isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", None))
                == "reports" for n in ast.walk(_parse(path)))  # fmt: skip
    if not calls or module_file("models.registry", root) not in direct_imports(path):
        return frozenset()
    modules = (module_file(f"tasks.report.{f}", root) for f in registry_dict(root, "FAMILIES"))
    return frozenset(m for m in modules if m is not None)  # none: tasks/report/common.py's


@cache
def language_models_built(path: Path) -> frozenset[Path]:
    """The modules `path` loads through `language_model("<name>", ...)`."""
    root = _root_of(path)
    found = set()
    for node in ast.walk(_parse(path)):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "language_model"
                and node.args and isinstance(node.args[0], ast.Constant)):  # fmt: skip
            found.add(module_file(language_models(root)[node.args[0].value], root))
    return frozenset(found)


def _root_of(path: Path) -> Path:
    for parent in path.parents:
        if parent.name in CODE_ROOTS:
            return parent.parent
    raise ValueError(f"{path} is outside {', '.join(CODE_ROOTS)}")


def closure(*roots: Path) -> set[Path]:
    """Every result-bearing project file running `roots` runs (plumbing neither listed nor
    entered: PLUMBING)."""
    seen, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in seen or is_plumbing(p):
            continue
        seen.add(p)
        todo.extend(direct_imports(p))
        todo.extend(language_models_built(p))
        todo.extend(reports_rendered(p))
        for registry in registries_used(p):
            todo.extend(registry.parent.glob("*.py"))
    return seen


def as_deps(used: set[Path], root: Path = REPO_ROOT) -> list[str]:
    """dvc.yaml entries covering exactly `used`: the files, a registry's folder as the folder
    (a member added there is loaded by name, so it reruns the stage), no entry for a package
    `__init__` of its own."""
    entries = set()
    for p in used:
        registry = (p.parent / "__init__.py").relative_to(root).as_posix() in REGISTRIES
        if registry and set(p.parent.glob("*.py")) <= used:  # used as a registry
            entries.add(p.parent.relative_to(root).as_posix())
        elif p.name != "__init__.py":
            entries.add(p.relative_to(root).as_posix())
    return sorted(entries)


def _plugin_roots(stage: str, params: dict, root: Path) -> list[Path]:
    """The annotator factory a model-annotation stage loads by name (params.yaml)."""
    keys = PLUGIN_STAGES.get(stage)
    if keys is None:
        return []
    value = params
    for key in keys:
        value = value[key]
    return [module_file(value.split(":")[0], root)]


def _family_roots(stage: dict, root: Path) -> list[Path]:
    """The family the generic training stage loads by name (`python -m flows.train <family>`:
    models/registry.py FAMILIES)."""
    module, *args = stage.get("do", stage)["cmd"].split("python -m ", 1)[1].split()
    if module != GENERIC_TRAIN or not args:
        return []
    return [module_file(registry_dict(root, "FAMILIES")[args[0]], root)]


def stage_modules(spec: dict, root: Path = REPO_ROOT) -> dict[str, Path]:
    """stage name -> the file of the flow module its cmd runs (`python -m <module>`)."""
    out = {}
    for name, stage in spec["stages"].items():
        cmd = stage.get("do", stage)["cmd"]
        if "python -m " not in cmd:
            raise ValueError(f"dvc.yaml stage {name}: cmd {cmd!r} does not run `python -m`")
        module = cmd.split("python -m ", 1)[1].split()[0]
        path = module_file(module, root)
        if path is None:
            raise ValueError(f"dvc.yaml stage {name}: no project module {module}")
        out[name] = path
    return out


def code_deps(root: Path = REPO_ROOT, text: str | None = None) -> dict[str, list[str]]:
    """stage name -> its generated code deps (of dvc.yaml `text`, else root's file)."""
    spec = yaml.safe_load(text if text is not None else (root / "dvc.yaml").read_text())
    params = yaml.safe_load((root / "params.yaml").read_text())
    deps = {}
    for stage, flow in stage_modules(spec, root).items():
        loaded = (*_plugin_roots(stage, params, root), *_family_roots(spec["stages"][stage], root))
        deps[stage] = as_deps(closure(flow, *loaded), root)
    return deps


def family_block(name: str) -> str:
    """dvc.yaml's stage train_<name> of a registered family without one: the generic family
    stage over params.yaml train_<name>.items (its code deps are then generated as every
    stage's)."""
    stage = f"train_{name}"
    return (
        f"  {stage}:   # models/{name}/, the generic family stage (written by tasks/core/stage_deps.py)\n"
        f"    foreach: ${{{stage}.items}}\n"
        "    do:\n"
        f"      cmd: python -m {GENERIC_TRAIN} {name} --item ${{item}}\n"
        "      deps:\n"
        "        - flows/train.py\n"
        "      params:\n"
        f"        - {stage}\n"
        "      outs:\n"
        f"        - artifacts/{stage}/${{item}}\n"
        f"        - metrics/{stage}/${{item}}.json:\n"
        "            cache: false\n"
    )


def add_family_stages(text: str, root: Path = REPO_ROOT) -> str:
    """dvc.yaml `text` with a stage for every family of models/registry.py FAMILIES that has
    none (family_block, appended to `stages:`), and that family's metrics and artifacts
    folders among the report stage's deps (the report renders its section and learning
    curves: tasks/report/common.py family_section)."""
    stages = yaml.safe_load(text)["stages"]
    missing = [f for f in registry_dict(root, "FAMILIES") if f"train_{f}" not in stages]
    if not missing:
        return text
    lines = text.splitlines(keepends=True)
    first = lines.index("stages:\n") + 1
    end = next((i for i in range(first, len(lines)) if lines[i][:1].isalpha()), len(lines))
    while end > first and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1  # before the blank lines and comments that open the next top-level key
    blocks = ["\n" + family_block(f) for f in missing]
    lines[end:end] = blocks
    return _add_report_deps(
        "".join(lines), [d for f in missing for d in (f"metrics/train_{f}", f"artifacts/train_{f}")]
    )


def _add_report_deps(text: str, entries: list[str]) -> str:
    """`entries` first among the report stage's deps, each unless already there."""
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if STAGE_HEADING.match(line)
              and STAGE_HEADING.match(line).group(1) == "report")  # fmt: skip
    at = next(i for i in range(at, len(lines)) if lines[i].strip() == "deps:") + 1
    pad = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    have = {
        line.strip()[2:].partition("#")[0].strip()
        for line in lines[at:]
        if line.strip()[:2] == "- "
    }
    new = [f"{pad}- {e}   # a family's section and curves (tasks/report/common.py)\n"
           for e in entries if e not in have]  # fmt: skip
    lines[at:at] = new
    return "".join(lines)


def _is_code_item(line: str) -> bool:
    item = line.strip()
    return item.startswith("- ") and item[2:].split("/")[0] in CODE_ROOTS


def render(text: str, deps: dict[str, list[str]]) -> str:
    """dvc.yaml `text` with each stage's code deps replaced by `deps[stage]`, in place of the
    old code entries (data deps, comments and everything else kept; a comment on a code
    entry kept while the entry stays)."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    stage, i = None, 0
    while i < len(lines):
        line = lines[i]
        heading = STAGE_HEADING.match(line)
        if heading:
            stage = heading.group(1)
        if line.strip() == "deps:" and stage in deps:
            indent = len(line) - len(line.lstrip())
            block_end = i + 1
            while block_end < len(lines) and (
                not lines[block_end].strip()
                or len(lines[block_end]) - len(lines[block_end].lstrip()) > indent
            ):
                block_end += 1
            out.append(line)
            out.extend(_rewrite_block(lines[i + 1 : block_end], deps[stage]))
            i = block_end
            continue
        out.append(line)
        i += 1
    return "".join(out)


def _rewrite_block(block: list[str], code: list[str]) -> list[str]:
    items = [line for line in block if _is_code_item(line)]
    if not items and not code:
        return block
    pad = (items or [line for line in block if line.strip().startswith("- ")])[0]
    pad = pad[: len(pad) - len(pad.lstrip())]
    kept = {line.strip()[2:].partition("#")[0].strip(): line for line in items}
    new = [kept.get(entry, f"{pad}- {entry}\n") for entry in code]  # a kept entry's comment too
    out, placed = [], False
    for line in block:
        if _is_code_item(line):
            if not placed:
                out.extend(new)
                placed = True
            continue
        out.append(line)
    if not placed:
        trailing = len(out)
        while trailing and not out[trailing - 1].strip():
            trailing -= 1
        out[trailing:trailing] = new
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 with the diff when dvc.yaml is not current; write nothing",
    )
    args = parser.parse_args(argv)
    path = REPO_ROOT / "dvc.yaml"
    old = path.read_text()
    with_families = add_family_stages(old)
    new = render(with_families, code_deps(text=with_families))
    if new == old:
        print("dvc.yaml: family stages and code deps current")
        return 0
    if args.check:
        diff = difflib.unified_diff(old.splitlines(True), new.splitlines(True), "dvc.yaml",
                                    "dvc.yaml (generated)")  # fmt: skip
        sys.stdout.writelines(diff)
        print(
            "dvc.yaml: out of date (a family stage or code deps); run `python -m tasks.core.stage_deps`"
        )
        return 1
    path.write_text(new)
    print("dvc.yaml: rewritten (then `dvc repro` runs the stages whose deps changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
