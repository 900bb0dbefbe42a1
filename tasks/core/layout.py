"""Where the data stages write: one place for the paths that several stages share.

A stage's outputs are named by the stage (dvc.yaml): download@<corpus> -> data/raw/<corpus>,
normalize@<corpus> -> data/docs/<corpus>, annotate@<run> -> data/mentions/<run>, graphs@<run>
and view_*@<run> -> data/graphs/<run>/<table>.parquet; training stages write
artifacts/<stage>/<item>/ and metrics/<stage>/<item>.json (their own modules say how).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from tasks.core.config import REPO_ROOT, resolve_path
from tasks.core.errors import CorefreproError

# The top-level folders the pipeline writes into (DVC outs, metrics, plots, the report).
# tasks.core.storage writes (and replaces whole directories) nowhere else.
DATA_ROOTS = ("data", "artifacts", "metrics", "reports", "plots", "logs", "results")
# os.pathsep-separated extra directories writes may go to (tests: their temporary folders).
WRITE_ROOTS_ENV = "COREFREPRO_WRITE_ROOTS"

# A run, corpus or derived-corpus name: it becomes a directory name under data/, so no "/",
# no "..", no leading dot or dash, nothing absolute. The one pattern every stage checks.
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,99}")


class UnsafeNameError(CorefreproError):
    """A name that would not stay one directory level under the data roots."""


def name_problem(name: object) -> str | None:
    """Why `name` is no safe path component (SAFE_NAME, no ".."), or None if it is one."""
    if isinstance(name, str) and SAFE_NAME.fullmatch(name) and ".." not in name:
        return None
    return (
        f"{name!r} is not a safe name (letters, digits, '_', '.', '+', '-'; starting with a "
        "letter or digit; no '/' or '..')"
    )


def check_name(name: object, where: str) -> str:
    """`name` if it is a safe path component, else an error naming `where` (the setting or
    argument it came from). Settings fields typed tasks.core.settings.Name get the same check
    when params.yaml is parsed."""
    problem = name_problem(name)
    if problem:
        raise UnsafeNameError(f"{where}: {problem}")
    return str(name)


def write_roots() -> list[Path]:
    """Where tasks.core.storage may write: REPO_ROOT/<DATA_ROOTS> and COREFREPRO_WRITE_ROOTS."""
    extra = [Path(p) for p in os.environ.get(WRITE_ROOTS_ENV, "").split(os.pathsep) if p]
    return [(REPO_ROOT / r).resolve() for r in DATA_ROOTS] + [p.resolve() for p in extra]


# Under each write root: the temporaries of atomic writes. Outside every DVC output (outs
# are data/raw/<corpus>, artifacts/<stage>/<item>, ...), so a temporary left by a killed
# process is never committed with an output; gitignored.
TEMP_DIR = ".tmp"


def check_write_target(target: str | Path) -> tuple[Path, Path]:
    """(`target` made absolute, the write root it lies strictly inside); an error if none."""
    resolved = Path(os.path.abspath(target))
    real = resolved.parent.resolve() / resolved.name  # symlinked parents count where they point
    roots = write_roots()
    for root in roots:
        if real != root and real.is_relative_to(root):
            return resolved, root
    raise UnsafeNameError(
        f"{target}: refusing to write outside the data roots "
        f"({', '.join(str(r) for r in roots)}); set {WRITE_ROOTS_ENV} to allow another"
    )


# Where a setting may point a checkpoint to read (a model annotator's, EntityNLM's for
# reranking or entity prediction): the project's artifacts, plus what the user allows in
# COREFREPRO_CHECKPOINT_ROOTS (os.pathsep-separated). Not a params.yaml setting: params can come
# from elsewhere (`dvc exp run -S`, a shared experiment), and a checkpoint is unpickled code.
ARTIFACTS_ROOT = "artifacts"
CHECKPOINT_ROOTS_ENV = "COREFREPRO_CHECKPOINT_ROOTS"


def check_checkpoint_path(value: str | Path, setting: str) -> Path:
    """`value` (relative to the repository) resolved, if it lies inside artifacts/ or an
    allowed root once links are followed; an error naming `setting` otherwise."""
    path = Path(value) if Path(value).is_absolute() else REPO_ROOT / value
    real = path.resolve()
    extra = [Path(p) for p in os.environ.get(CHECKPOINT_ROOTS_ENV, "").split(os.pathsep) if p]
    roots = [(REPO_ROOT / ARTIFACTS_ROOT).resolve(), *(p.resolve() for p in extra)]
    if not any(real.is_relative_to(root) and real != root for root in roots):
        raise UnsafeNameError(
            f"{setting}: {str(value)!r} is outside the project's artifacts "
            f"({', '.join(str(r) for r in roots)}); a checkpoint is loaded as code, so only "
            f"those are read (add its folder to {CHECKPOINT_ROOTS_ENV} to allow it)"
        )
    return real


def temp_dir(root: Path) -> Path:
    """<root>/.tmp, created: where atomic writes under `root` stage their files."""
    path = root / TEMP_DIR
    path.mkdir(parents=True, exist_ok=True)
    return path


RAW_ROOT = "data/raw"
DOCS_ROOT = "data/docs"
MENTIONS_ROOT = "data/mentions"
GRAPHS_ROOT = "data/graphs"
KBEST_ROOT = "data/kbest"


def raw_dir(corpus: str) -> Path:
    return resolve_path(RAW_ROOT) / check_name(corpus, "corpus")


def docs_dir(corpus: str) -> Path:
    return resolve_path(DOCS_ROOT) / check_name(corpus, "corpus")


def mentions_dir(run: str) -> Path:
    return resolve_path(MENTIONS_ROOT) / check_name(run, "run")


def graphs_dir(run: str) -> Path:
    return resolve_path(GRAPHS_ROOT) / check_name(run, "run")


def kbest_dir(corpus: str) -> Path:
    """The k-best coreference trees of a corpus (flows/kbest.py writes kbest.parquet there)."""
    return resolve_path(KBEST_ROOT) / check_name(corpus, "corpus")


def view_file(run: str, family: Literal["entitynlm", "corelm"]) -> Path:
    """A family's view of an annotation run (flows/view_<family>.py writes it, the family's
    training reads it): data/graphs/<run>/<family>.parquet."""
    return graphs_dir(run) / f"{family}.parquet"
