"""Benchmark (issue #57.3): coreference's training step with the antecedent scoring before
(every slot of the [N, K'] layout scored, then masked) and after (the valid pairs only).

    .venv/bin/python -m pytest -m bench -s tests/models/coref/test_bench_pairs.py

The numerics probe's coreference step (the baseline at the paper's sizes on a 40-sentence
crop: ~315 kept spans, 40 % of their 250 candidate slots without an antecedent), one stage-like
process per numeric mode in which the two code paths' steps alternate on the same crops
(tests/models/coref/profile_pairs.py); CPU times, one thread. Printed as after / before (below
1: the change is faster); never asserted. The two paths compute the same scores
(tests/models/coref/test_model.py's equivalence test).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.bench

ROUNDS = 6


@pytest.mark.timeout(1800)  # two processes of alternating steps; on shared cores, slow
def test_bench_antecedent_scoring_before_and_after():
    from tests.conftest import REPO_ROOT
    from tests.core.test_numerics import SWITCHES

    for mode in ("portable", "native"):
        env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
        env["COREFREPRO_NUMERICS"] = mode
        proc = subprocess.run(
            [sys.executable, "-m", "tests.models.coref.profile_pairs", str(ROUNDS)],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1500,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        print(f"\n### {mode}\n{proc.stdout}")
        assert "after / before" in proc.stdout
