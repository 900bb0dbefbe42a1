"""Benchmark (issue #15.2): K = 10 seeds trained stacked vs one after the other, on CUDA
where there is one (issue #29.8, .ci/gpu-check; target there >= 8x), else on the CPU.

    .venv/bin/python -m pytest -m bench -s tests/models/mage/test_bench_stacked.py

Paper sizes (Dhingra et al. §4.2: hidden 256 per direction, MAGE 240 + 16; embeddings 128;
GA 3 layers; batch 32; dropout 0.2). Data: no bAbI graph table is built by the embedded
pipeline, so items are synthetic with bAbI's lengths: the token counts of the mirror's bAbI 1k
qa2 / qa3 training stories (story up to the question, plus the question; the fallback when
the mirror is absent: a log-normal of qa2's median), a sequential and a coreference edge
(~15% of tokens mentions of 6 entities), classify output over 30 answers.

What is timed: training steps only (forward, backward, per-seed clipping, Adam) -- dev
evaluation is excluded -- over the first STEPS batches of each seed's seeded epoch order
(models.mage.data.batch_order: length-bucketed, so each stacked batch is padded to the longest
of the ten seeds' batches, a real cost of stacking). Seconds per epoch are the measured mean
step time times the steps of an epoch (1000 items / 32), and printed as such. Timings are
never asserted; the ratio printed is sequential / stacked.
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from models.mage import train as tr
from tests.conftest import mirror_dir

pytestmark = pytest.mark.bench

K, STEPS, ITEMS, BATCH, CLASSES, VOCAB = 10, 3, 1000, 32, 30, 160
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
PAPER = {"hidden_size": 256, "embed_dim": 128, "coref_size": 16, "dropout": 0.2}
MODELS = {
    "bigru": {"reader": "bigru", "encoder": "gru"},
    "bigru+mage16": {"reader": "bigru", "encoder": "mage"},
    "ga": {"reader": "ga", "encoder": "gru"},
    "ga+mage16": {"reader": "ga", "encoder": "mage"},
}
TASKS = {"qa2": "qa2_two-supporting-facts", "qa3": "qa3_three-supporting-facts"}


def babi_lengths(task: str) -> tuple[list[int], str]:
    """Token counts of the bAbI 1k training items (story so far + question)."""
    root = mirror_dir()
    path = root / "babi" / "en" / f"{TASKS[task]}_train.txt" if root else None
    if path is None or not path.is_file():
        rng = random.Random(task)
        return [max(20, int(rng.lognormvariate(math.log(91), 0.5))) for _ in range(ITEMS)], (
            "synthetic (mirror absent)"
        )
    lengths, story = [], 0
    for line in Path(path).read_text().splitlines():
        number, rest = line.split(" ", 1)
        story = 0 if number == "1" else story
        if "\t" in rest:
            lengths.append(story + len(rest.split("\t")[0].split()) + 1)
        else:
            story += len(rest.split()) + 1
    return lengths, f"mirror {path.name}"


def item(length: int, rng: random.Random) -> dict:
    """One reader item: document then a 6-token query, sequential and coreference edges."""
    query = 6
    fwd_seq = [t - 1 for t in range(length)]
    bwd_seq = [t + 1 if t + 1 < length else -1 for t in range(length)]
    fwd_coref, bwd_coref, chain = [-1] * length, [-1] * length, [-1] * length
    last: dict[int, int] = {}
    for t in range(length):
        if rng.random() < 0.15:
            e = rng.randrange(6)
            if e in last:
                fwd_coref[t], bwd_coref[last[e]] = last[e], t
            last[e], chain[t] = t, e
    return {
        "tokens": [rng.randrange(2, VOCAB) for _ in range(length)],
        "forward": [fwd_seq, fwd_coref],
        "backward": [bwd_seq, bwd_coref],
        "chain": chain,
        "doc_span": (0, length - query),
        "query_span": (length - query, length),
        "answer": rng.randrange(CLASSES),
        "length": length,
        "in_context": True,
    }


def fake_data(lengths: list[int]) -> SimpleNamespace:
    rng = random.Random(0)
    items = [item(n, rng) for n in lengths]
    return SimpleNamespace(
        vocab=[None] * VOCAB, classes=tuple(map(str, range(CLASSES))), output="classify",
        num_edge_types=2, max_chains=0, has_subsets=False,
        splits={"train": items, "dev": items[:BATCH], "test": []},
    )  # fmt: skip


def sequential_epoch(data, mcfg, seeds) -> float:
    """Seconds for STEPS training steps of each seed, one seed after the other."""
    total = 0.0
    for seed in seeds:
        tcfg = tr.resolve_train_cfg({"seed": seed, "batch_size": BATCH})
        torch.manual_seed(seed)
        recipe = tr.ReaderRecipe(data, mcfg, tcfg, "none")
        recipe.model.to(DEVICE).train()
        optimizer, _ = recipe.optimizer()
        batches = list(recipe.batches(1))[:STEPS]
        _sync()
        started = time.perf_counter()
        for batch in batches:
            out = recipe.step(batch, DEVICE)
            optimizer.zero_grad(set_to_none=True)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(recipe.model.parameters(), tcfg.clip)
            optimizer.step()
        _sync()
        total += time.perf_counter() - started
    return total


def _sync() -> None:
    """Wait for queued CUDA work, so the clock measures it (nothing to wait for on a CPU)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def stacked_epoch(data, mcfg, seeds) -> tuple[float, float]:
    """Seconds for STEPS stacked training steps, and the padding factor: token positions
    computed stacked / token positions of the seeds' own batches."""
    tcfgs = [tr.resolve_train_cfg({"seed": s, "batch_size": BATCH}) for s in seeds]
    recipe = tr.StackedReaderRecipe(data, mcfg, tcfgs, "none")
    recipe.model.to(DEVICE).train()
    optimizer, _ = recipe.optimizer()
    batches = []
    for folded in recipe.batches(1):
        batches.append(folded)
        if len(batches) == STEPS:
            break
    own = sum(w * n for f in batches for w, n in zip(_widths(f), f["items"], strict=True))
    folded_positions = sum(f["batch"]["tokens"].numel() for f in batches)
    _sync()
    started = time.perf_counter()
    for folded in batches:
        out = recipe.step(folded, DEVICE)
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        recipe.clip_gradients(tcfgs[0].clip, list(recipe.model.parameters()))
        optimizer.step()
    _sync()
    return time.perf_counter() - started, folded_positions / own


def _widths(folded) -> list[int]:
    """Each seed's own batch width (its longest item) in a folded batch."""
    return folded["widths"][int(folded["batch"]["tokens"].shape[1])]


@pytest.mark.parametrize("model", ["bigru+mage16", "ga+mage16"])
def test_bench_ten_seeds_stacked_vs_sequential(model):
    lengths, source = babi_lengths("qa2")
    data = fake_data(lengths)
    mcfg = {**PAPER, **MODELS[model]}
    seeds = list(range(1, K + 1))
    steps_per_epoch = math.ceil(len(lengths) / BATCH)
    seq = sequential_epoch(data, mcfg, seeds) / STEPS * steps_per_epoch
    stacked_s, padding = stacked_epoch(data, mcfg, seeds)
    stk = stacked_s / STEPS * steps_per_epoch
    where = (
        torch.cuda.get_device_name()
        if DEVICE.type == "cuda"
        else f"{torch.get_num_threads()} threads"
    )
    print(f"\n[bench] {model} qa2 lengths ({source}), {where}: "
          f"{K} seeds sequential {seq:.1f} s/epoch, stacked {stk:.1f} s/epoch, "
          f"ratio {seq / stk:.2f}x (from {STEPS} steps per seed, x{steps_per_epoch}; stacked "
          f"batches hold {padding:.2f}x the token positions of the seeds' own)")  # fmt: skip


@pytest.mark.parametrize("task", sorted(TASKS))
@pytest.mark.parametrize("model", sorted(MODELS))
def test_bench_one_seed_per_epoch(model, task):
    """One unstacked seed's training seconds per epoch at paper size (for the 20-task cost)."""
    lengths, source = babi_lengths(task)
    data = fake_data(lengths)
    steps_per_epoch = math.ceil(len(lengths) / BATCH)
    seconds = sequential_epoch(data, {**PAPER, **MODELS[model]}, [1]) / STEPS * steps_per_epoch
    print(f"\n[bench] {model} {task} ({source}), one seed: {seconds:.1f} s/epoch "
          f"(from {STEPS} steps, x{steps_per_epoch})")  # fmt: skip
