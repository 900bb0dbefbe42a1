"""How the environment is installed (issue #59 row 11): bytecode is compiled once, by the
install command, not by the sync that precedes every `uv run` (with `compile-bytecode = true`
in pyproject, uv recompiled all 26,760 files of the environment before each command)."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import REPO_ROOT

INSTALL = "uv sync --frozen --compile-bytecode"


def test_pyproject_leaves_bytecode_to_the_install_command():
    uv = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["uv"]
    assert not uv.get("compile-bytecode"), "every `uv run` would recompile the environment"


def test_the_install_commands_compile_bytecode_once():
    for name in ("README.md", ".ci/run", "docs/operations.md"):
        text = (REPO_ROOT / name).read_text()
        syncs = re.findall(r"uv sync --frozen[^&\n]*", text)
        assert syncs, name
        assert all(s.strip() == INSTALL for s in syncs), (name, syncs)
