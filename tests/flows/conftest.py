"""The embedded default reproduced once per test run, for the slow modules that need it.

`dvc repro` of the embedded default takes about ten minutes on two cores. test_pipeline.py and
test_presets_smoke.py both start from a reproduced workspace; each takes a private copy of the
one reproduction, so that under `pytest -n 2` (.ci/run) they run side by side without paying
for it twice. The xdist workers share the reproduction through a file lock (pytest-xdist's
documented pattern for session data).
"""

from __future__ import annotations

import shutil
import sqlite3
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from tests.conftest import clean_env, copy_checkout, run_ok

# minutes: the first test of a module may wait for the other worker's reproduction and then run
REPRODUCED_TIMEOUT_S = 3000


def _reproduce(template: Path) -> Path:
    template.mkdir(parents=True)
    env = copy_checkout(template)
    # ~10 min on 2 quiet cores; a CI host may be busier than that
    run_ok([sys.executable, "-m", "dvc", "repro"], template, env, timeout=2400)
    return template


def _needs_reproduction(item) -> int:
    """The run order: test_pipeline.py's group first (its worker starts the reproduction at
    once), the tests that do not need it next, the other users of the reproduction last."""
    if item.nodeid.split("::", 1)[0] == "tests/flows/test_pipeline.py":
        return 0
    return 2 if "reproduced_default" in getattr(item, "fixturenames", ()) else 1


def pytest_collection_modifyitems(items):
    """With `--dist loadgroup --no-loadscope-reorder` (.ci/run, tests/conftest.py's scheduler)
    xdist hands out work in this order, so the worker that does not reproduce runs the independent tests while the other
    reproduces, instead of waiting on the lock."""
    items.sort(key=_needs_reproduction)  # stable: the collection order within each rank


@pytest.fixture(scope="session")
def reproduced_default(tmp_path_factory, worker_id) -> Path:
    """A fresh copy of the tracked files after one `dvc repro` of the embedded default. Read
    only: a test works in `reproduced_copy` of it."""
    if worker_id == "master":
        return _reproduce(tmp_path_factory.getbasetemp() / "embedded-default")
    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every worker
    template, done = shared / "embedded-default", shared / "embedded-default.done"
    with FileLock(str(shared / "embedded-default.lock")):
        if not done.exists():
            shutil.rmtree(template, ignore_errors=True)  # another worker's failed try
            _reproduce(template)
            done.touch()
    return template


def reproduced_copy(template: Path, dest: Path) -> tuple[Path, dict[str, str]]:
    """A private copy of the reproduced workspace (git, DVC cache, outputs, MLflow store).

    The MLflow store records absolute artifact locations; they are moved to the copy so that
    its runs keep their artifacts inside it."""
    shutil.copytree(template, dest, symlinks=True)
    database = dest / "mlflow.db"
    if database.exists():
        old, new = template.resolve().as_uri(), dest.resolve().as_uri()
        with sqlite3.connect(database) as db:
            db.execute("UPDATE experiments SET artifact_location = "
                       "replace(artifact_location, ?, ?)", (old, new))  # fmt: skip
            db.execute("UPDATE runs SET artifact_uri = replace(artifact_uri, ?, ?)", (old, new))
    return dest, clean_env()


@pytest.fixture(scope="module")
def fresh_repo(reproduced_default, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A module's own copy of the reproduced embedded default (a fresh clone after `dvc repro`)."""
    return reproduced_copy(reproduced_default, tmp_path_factory.mktemp("clone") / "repo")
