"""Data-parallel training (issue #29.1): torchrun with 2 gloo processes on the CPU, each
computing half of every optimizer step's batches, gives the per-step losses and final weights
of 1 process computing all of them (train.accumulate 2: an effective batch of 2 family
batches either way). Tolerance: float32 rounding, 1e-5 relative on losses and 1e-5 absolute
on weights; the gradient sum of two processes (gloo all-reduce) adds the same two numbers as
one process's gradient accumulation, so the figures agree to the last bit or nearly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tasks.core.errors import CorefreproError
from tasks.training import distributed
from tasks.training.loop import LoopSettings, _check_ranks
from tests.conftest import free_port

PROBE = Path(__file__).with_name("ddp_probe.py")


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]


def _steps(out: Path) -> dict[tuple[int, int], float]:
    steps = {}
    for path in sorted(out.glob("steps*.json")):
        for epoch, position, loss in json.loads(path.read_text()):
            assert (epoch, position) not in steps, "a batch computed by two processes"
            steps[epoch, position] = loss
    return steps


def _one_vs_two_processes(family: str, tmp_path: Path, tolerance: float,
                          env: dict[str, str] | None = None) -> None:  # fmt: skip
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    _run([sys.executable, str(PROBE), family, str(one)], tmp_path, env)
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
                "--master-port", str(free_port())]  # fmt: skip
    _run([*torchrun, str(PROBE), family, str(two)], tmp_path, env)
    alone, shared = _steps(one), _steps(two)
    assert sorted(alone) == sorted(shared) and len(alone) >= 4
    assert {p % 2 for _, p, _ in json.loads((two / "steps1.json").read_text())} == {1}
    for key, loss in alone.items():
        assert abs(shared[key] - loss) <= tolerance * abs(loss), (key, shared[key], loss)
    weights = [torch.load(d / "weights.pt", weights_only=True, map_location="cpu")
               for d in (one, two)]  # fmt: skip
    for name, value in weights[0].items():
        assert torch.allclose(value, weights[1][name], atol=tolerance), name
    assert (two / "run" / "best.pt").is_file() and (two / "run" / "history.json").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("family", ["coref", "corelm", "entitynlm", "mage"])
def test_two_gloo_processes_train_as_one_process(family, tmp_path):
    _one_vs_two_processes(family, tmp_path, 1e-5)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA devices (issue #29.8)")
@pytest.mark.parametrize("family", ["coref", "corelm", "entitynlm", "mage"])
def test_two_nccl_processes_train_as_one_process(family, tmp_path):
    """The same on 2 GPUs, one process each (NCCL): cuDNN and TF32 kernels are not bitwise
    reproducible, so the tolerance is 1e-4 (relative on losses, absolute on weights)."""
    _one_vs_two_processes(family, tmp_path, 1e-4, {"PROBE_DEVICE": "cuda"})


def test_a_plain_run_is_rank_0_of_1_and_deals_every_batch_to_itself(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    ranks = distributed.current()
    assert (ranks.rank, ranks.world, ranks.main) == (0, 1, True)
    assert all(ranks.mine(b) for b in range(5))
    second = distributed.Ranks(rank=1, world=2)
    assert [b for b in range(6) if second.mine(b)] == [1, 3, 5] and not second.main


def test_accumulate_must_be_shared_evenly_by_the_processes():
    with pytest.raises(CorefreproError, match=r"train.accumulate \(3\).*2 processes"):
        _check_ranks(LoopSettings(accumulate=3), distributed.Ranks(rank=0, world=2))
    _check_ranks(LoopSettings(accumulate=4), distributed.Ranks(rank=1, world=2))
