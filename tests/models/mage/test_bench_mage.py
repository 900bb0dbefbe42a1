"""Benchmark: one training step of MAGE-GRU vs torch.nn.GRU, measured side by side in one run.

    .venv/bin/python -m pytest -m bench -s tests/models/test_bench_mage.py

One step = forward + backward + Adam step of one recurrent layer (one direction) at the MAGE
paper's size: total hidden 256 (MAGE: 240 sequential + 16 coreference, Dhingra et al. §4.2),
batch 32, 200 tokens, 128-dimensional inputs, a coreference chain through ~15% of the tokens.
Repeats are interleaved (GRU, MAGE, GRU, MAGE, ...) so that load from other work on the
machine hits both alike; the medians and their ratio are printed. Timings are never asserted.
CPU at the default thread count and at one thread; CUDA with AMP (bf16) where available.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import pytest
import torch
from torch import nn

from models.mage.mage_gru import MAGEGRU, split_sizes

pytestmark = pytest.mark.bench

BATCH, STEPS, INPUT, HIDDEN, COREF = 32, 200, 128, 256, 16
WARMUP, REPEATS = 2, 9


def coreference_graph(batch: int, steps: int, seed: int = 0) -> torch.Tensor:
    """[B, 2, T] forward predecessors: sequential t-1, and coreference to the previous mention
    of the same one of 10 entities, with ~15% of the tokens mentions."""
    gen = torch.Generator().manual_seed(seed)
    seq = (torch.arange(steps) - 1).expand(batch, steps)
    coref = torch.full((batch, steps), -1)
    is_mention = torch.rand(batch, steps, generator=gen) < 0.15
    entity = torch.randint(10, (batch, steps), generator=gen)
    for b in range(batch):
        last: dict[int, int] = {}
        for t in torch.nonzero(is_mention[b]).flatten().tolist():
            e = int(entity[b, t])
            coref[b, t] = last.get(e, -1)
            last[e] = t
    return torch.stack([seq, coref], 1)


def make_step(layer: nn.Module, run: Callable[[], torch.Tensor], amp: bool) -> Callable:
    optimizer = torch.optim.Adam(layer.parameters(), lr=1e-3)
    device = next(layer.parameters()).device.type

    def step() -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=amp):
            out = run()
        out.float().pow(2).mean().backward()
        optimizer.step()
        return out

    return step


def interleaved_medians(steps: dict[str, Callable], sync: Callable[[], None]) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(WARMUP):
        for step in steps.values():
            step()
    sync()
    for _ in range(REPEATS):
        for name, step in steps.items():
            sync()
            start = time.perf_counter()
            step()
            sync()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}


def compare(device: str, amp: bool) -> tuple[dict[str, float], list[torch.Tensor]]:
    torch.manual_seed(0)
    x = torch.randn(BATCH, STEPS, INPUT, device=device)
    preds = coreference_graph(BATCH, STEPS).to(device)
    gru = nn.GRU(INPUT, HIDDEN, batch_first=True).to(device)
    mage = MAGEGRU(INPUT, HIDDEN, 2, edge_sizes=split_sizes(HIDDEN, COREF)).to(device)
    outputs: list[torch.Tensor] = []

    def keep(fn):
        def wrapped():
            outputs.append(fn().detach())
            del outputs[:-2]

        return wrapped

    steps = {
        "nn.GRU": keep(make_step(gru, lambda: gru(x)[0], amp)),
        "MAGE-GRU": keep(make_step(mage, lambda: mage(x, preds), amp)),
    }
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    medians = interleaved_medians(steps, sync)
    checks = [gru.weight_hh_l0.grad, mage.weight_hh.grad, *outputs]
    return medians, checks


def report(label: str, medians: dict[str, float]) -> None:
    gru, mage = medians["nn.GRU"], medians["MAGE-GRU"]
    print(
        f"\n[{label}] B={BATCH} T={STEPS} D={INPUT} H={HIDDEN} (MAGE {split_sizes(HIDDEN, COREF)})"
        f", median of {REPEATS} interleaved steps: nn.GRU {gru * 1e3:.1f} ms, "
        f"MAGE-GRU {mage * 1e3:.1f} ms, ratio {mage / gru:.2f} (target <= 2.0)"
    )


@pytest.mark.parametrize("threads", [None, 1], ids=["default-threads", "one-thread"])
def test_training_step_cpu(threads):
    old = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        medians, checks = compare("cpu", amp=False)
        report(f"cpu, {torch.get_num_threads()} threads", medians)
    finally:
        torch.set_num_threads(old)
    assert all(c is not None and torch.isfinite(c).all() for c in checks)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_training_step_cuda_amp():
    medians, checks = compare("cuda", amp=True)
    report(f"cuda {torch.cuda.get_device_name()}, AMP bf16", medians)
    assert all(c is not None and torch.isfinite(c).all() for c in checks)
