"""The one config loader: params.yaml (namespaced per stage) plus environment overrides.

Paths are resolved against the repository root so stages behave the same from any cwd.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tasks.core.errors import CorefreproError

REPO_ROOT = Path(__file__).resolve().parents[2]
PARAMS_FILE = REPO_ROOT / "params.yaml"
# Environment variable that overrides params.yaml's download.mirror (a directory or URL prefix).
MIRROR_ENV = "COREFREPRO_MIRROR"


class ParamsLoader(yaml.SafeLoader):
    """YAML as DVC writes it: `dvc exp run -S lr=1.0e-5` stores `1e-05`, a float in YAML 1.2
    (ruamel, DVC) but a string in PyYAML's YAML 1.1; this loader reads it as the float."""


ParamsLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load_yaml(text: str) -> Any:
    """params.yaml's reader (ParamsLoader)."""
    return yaml.load(text, Loader=ParamsLoader)  # noqa: S506 - a SafeLoader subclass


def read_yaml(path: str | Path) -> Any:
    """A YAML file of the project's (params.yaml, a preset) read by load_yaml; a syntax error
    is one line naming the file, line and column (issue #59 rows 5-6), not a traceback."""
    path = Path(path)
    try:
        return load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CorefreproError(f"{where}: not valid YAML ({problem})") from None


@cache
def _load(path: str) -> dict[str, Any]:
    p = Path(path)
    if not p.exists():
        raise CorefreproError(f"{p}: params file not found (run from a corefrepro checkout)")
    data = read_yaml(p) or {}
    if not isinstance(data, dict):
        raise CorefreproError(f"{p}: top level must be a mapping of stage names to settings")
    return data


def params(section: str | None = None, path: str | Path = PARAMS_FILE) -> Any:
    """Return params.yaml (or one stage's namespace of it)."""
    data = _load(str(Path(path).resolve()))
    if section is None:
        return data
    if section not in data:
        raise CorefreproError(f"{path}: no '{section}' section (expected a namespace per stage)")
    return data[section]


def resolve_path(value: str | Path) -> Path:
    """Resolve a path setting relative to the repository root."""
    p = Path(value).expanduser()
    return p if p.is_absolute() else REPO_ROOT / p


def resolve_mirror(value: str | Path | None) -> str | None:
    """The one reading of a mirror value (stages, libraries' callers and the tests): a value
    containing '://' is a URL prefix; anything else is a directory (relative paths are relative
    to the repository root). Empty means no mirror."""
    value = str(value or "").strip()
    if not value:
        return None
    if "://" in value:
        return value.rstrip("/")
    return str(resolve_path(value))
