"""`.ci/gpu-check` (issue #29.8), the one command for the GPU figures: on a machine without
CUDA it says so in one line and exits 2, and each selection it runs still names tests (a
renamed test would otherwise leave it measuring nothing)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import torch

from tests.conftest import REPO_ROOT

SCRIPT = REPO_ROOT / ".ci" / "gpu-check"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is visible")
def test_without_cuda_it_says_so_and_exits_2():
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable})  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"gpu-check: no CUDA device visible to {sys.executable} (torch.cuda.is_available() is "
        "False): nothing to measure"
    ]


def test_every_selection_of_the_script_collects_tests():
    selections = re.findall(r"^pytest (.+?) \|\| status=1$", SCRIPT.read_text(), re.M)
    assert len(selections) == 4
    for selection in selections:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
             *selection.split()],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        collected = re.search(r"(\d+)(?:/\d+)? tests? collected", proc.stdout)
        assert collected and int(collected.group(1)) >= 1, (selection, proc.stdout[-500:])
