"""Every preset at paper scale with its smoke overlay, as a user runs it, on the embedded data.

Its own module, apart from test_pipeline.py's, so that under `pytest -n 2` (.ci/run) the runs
spread over both workers; each module copies the one reproduced workspace (conftest.py).
"""

from __future__ import annotations

import json
import sys

import pytest

from tasks.core import presets
from tests.conftest import run_ok
from tests.flows.conftest import REPRODUCED_TIMEOUT_S

pytestmark = [pytest.mark.slow, pytest.mark.timeout(REPRODUCED_TIMEOUT_S)]


@pytest.mark.parametrize("name", presets.names())
def test_every_preset_runs_one_batch_on_the_embedded_data(fresh_repo, name):
    """Issue #29.7: each preset at paper scale with its smoke overlay, as a user runs it
    (`presets run NAME --scale paper --smoke -- --temp`): a DVC experiment outside the
    workspace whose targets train one batch for one epoch and evaluate; the reproduced
    workspace is untouched. Paper scale: its settings
    hold the CPU scale's readers and options (the CPU scale's smaller sizes are the embedded
    default's); both parse in test_presets.py."""
    repo, env = fresh_repo
    argv = ["run", name, "--scale", "paper", "--smoke", "--", "--temp"]
    out = run_ok([sys.executable, "-m", "tasks.core.presets", *argv], repo, env, stderr_too=True)
    assert "Ran experiment(s): " in out
    for target in presets.load(name).targets_for(smoke=True):
        assert f"Running stage '{target}" in out, target
    assert " epoch 1/1: train loss " in out  # the one epoch the overlay asks for
    assert run_ok(["git", "status", "--porcelain"], repo, env).strip() == ""
    assert json.loads(run_ok([sys.executable, "-m", "dvc", "status", "--json"], repo, env)) == {}
