"""Benchmark (issue #29.2): a training step in bf16 autocast ÷ the same step in float32, per
family, on the CPU, side by side in one run (the families' small test models of
tests/training/test_precision.py).

    .venv/bin/python -m pytest -m bench -s tests/training/test_bench_precision.py

What is timed: forward + backward + optimizer step of the first STEPS training batches after
one warm-up batch, median per step; fp32 and bf16 alternate batch by batch so that load on the
machine hits both alike. Timings are never asserted. On a CPU without avx512_bf16/AMX, torch
emulates bf16 matmuls, so a ratio above 1 (bf16 slower) is the expected reading there.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

import pytest
import torch

from tasks.training.loop import Precision
from tests.training.test_precision import FAMILIES

pytestmark = pytest.mark.bench

STEPS = 6


def _stepper(recipe, precision: Precision):
    optimizer, _ = recipe.optimizer()
    recipe.model.train()

    def step(batch) -> float:
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with precision.autocast():
            out = recipe.step(batch, precision.device)
        out.loss.backward()
        optimizer.step()
        return time.perf_counter() - started

    return step


def _batches(recipe, n: int) -> list:
    """The first n training batches, over as many epochs as that takes (tiny data)."""
    batches, epoch = [], 0
    while len(batches) < n:
        epoch += 1
        batches += list(recipe.batches(epoch))
    return batches[:n]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_bench_bf16_over_fp32_step(family, tmp_path, request):
    torch.set_num_threads(1)
    steppers, batches = {}, None
    for mode in ("fp32", "bf16"):
        args = {"corelm": lambda m=mode: (tmp_path / m, request.getfixturevalue("monkeypatch")),
                "mage": lambda: (request.getfixturevalue("mage_graphs"),)}  # fmt: skip
        recipe, settings = FAMILIES[family](*(args[family]() if family in args else ()))
        settings = dataclasses.replace(settings, precision=mode, device="cpu")
        steppers[mode] = _stepper(recipe, Precision.choose(settings))
        batches = batches or _batches(recipe, STEPS + 1)
    times: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for k, batch in enumerate(batches):
        for mode, step in steppers.items():
            seconds = step(batch)
            if k:  # the first batch warms up
                times[mode].append(seconds)
    fp32, bf16 = (statistics.median(times[m]) for m in ("fp32", "bf16"))
    print(f"\n{family}: fp32 {fp32 * 1e3:.1f} ms/step, bf16 {bf16 * 1e3:.1f} ms/step, "
          f"bf16/fp32 = {bf16 / fp32:.2f} ({len(times['fp32'])} steps, "
          f"{torch.backends.cpu.get_cpu_capability()})")  # fmt: skip
    assert len(times["bf16"]) == len(batches) - 1
