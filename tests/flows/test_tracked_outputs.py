"""What `dvc repro` leaves in git: no wall-clock figure in a tracked metrics file (an identical
rerun must leave the tree clean, #17.6) and the short per-family summaries as the only DVC
metrics (`dvc metrics show` stays readable, #17.5)."""

from __future__ import annotations

import json
import subprocess

import yaml

from tasks.core.storage import TIMING_KEYS, split_timings
from tests.conftest import REPO_ROOT


def _tracked(pattern: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", pattern], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    return out.split()


def test_tracked_metrics_hold_no_wall_clock_figures():
    files = _tracked("metrics/*.json")
    assert files, "no tracked metrics files"
    found = {}
    for name in files:
        _, timings = split_timings(json.loads((REPO_ROOT / name).read_text()))
        if timings:
            found[name] = timings
    assert not found, f"timings ({sorted(TIMING_KEYS)}) belong in logs/timings: {found}"


def test_only_the_report_declares_dvc_metrics():
    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    with_metrics = sorted(
        name for name, stage in stages.items() if "metrics" in (stage.get("do") or stage)
    )
    assert with_metrics == ["report"]
