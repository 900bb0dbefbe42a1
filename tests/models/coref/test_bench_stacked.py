"""Benchmark (issue #15.1/#15.2 for the coreference model): K seeds trained stacked
(models/coref/stacked.py) vs one after the other, per training step, CPU.

    .venv/bin/python -m pytest -m bench -s tests/models/coref/test_bench_stacked.py

Sizes: L&G §4.1 / Lee et al. §7.1 (embeddings 300, char CNN 50 filters of widths 3-5, LSTM
200, FFNN 150 x 2, features 20, ASL MLP 150), random embeddings. Documents: generated, with
the training crop's shape (40 sentences of 10-30 words, 30 mentions in 8 chains), one per seed
and step, each seed with its own documents as in training. What is timed: training steps only
(forward, backward, per-seed clipping, Adam), the mean of STEPS steps after one warm-up step.
Timings are never asserted; the ratio printed is sequential / stacked (above 1: stacking is
faster).
"""

from __future__ import annotations

import random
import time

import pytest
import torch

from models.coref import train as tr
from models.coref.data import CorefDocument, build_vocab

pytestmark = pytest.mark.bench

K, STEPS = 5, 2
PAPER = {"embedding_dim": 300, "char_filters": 50, "lstm_size": 200, "ffnn_size": 150,
         "feature_size": 20, "asl_mlp_size": 150}  # fmt: skip
TRAIN = {"epochs": 1, "threads": 1, "log_every_s": 0, "resume": False}


def document(rng: random.Random, index: int) -> CorefDocument:
    """40 sentences of 10-30 words from a 2,000-word vocabulary, 8 chains of 1-word mentions."""
    tokens, starts = [], []
    for _ in range(40):
        starts.append(len(tokens))
        tokens += [f"w{rng.randrange(2000)}" for _ in range(rng.randint(10, 30))]
    positions = sorted(rng.sample(range(len(tokens)), 30))
    clusters = [[(p, p + 1) for p in positions[c::8]] for c in range(8)]
    return CorefDocument(f"d{index}", "train", tokens, starts, clusters=clusters)


def _time_steps(recipe, batches) -> float:
    """Mean seconds of a training step (forward, backward, clipping, Adam) after a warm-up."""
    optimizer, _ = recipe.optimizer()
    recipe.model.train()
    times = []
    for batch in batches[: STEPS + 1]:
        started = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        recipe.step(batch, torch.device("cpu")).loss.backward()
        recipe.clip_gradients(5.0, list(recipe.model.parameters()))  # the loop's call
        optimizer.step()
        times.append(time.perf_counter() - started)
    return sum(times[1:]) / len(times[1:])


@pytest.mark.parametrize("encoder", ["baseline", "lsl", "asl"])
def test_bench_coref_stacked_vs_sequential(encoder):
    torch.set_num_threads(1)
    rng = random.Random(0)
    docs = [document(rng, i) for i in range(K * (STEPS + 1))]
    vocab = build_vocab(docs)
    mcfg = tr.resolve_model({**PAPER, "encoder": encoder})
    tcfgs = [tr.resolve_train_cfg({**TRAIN, "seed": s}) for s in range(1, K + 1)]
    splits = {"train": docs, "dev": docs[:1], "test": []}
    steps = [docs[i * K : (i + 1) * K] for i in range(STEPS + 1)]
    sequential = 0.0
    for k, t in enumerate(tcfgs):
        recipe = tr.CorefRecipe(splits, mcfg, t, vocab, None)
        sequential += _time_steps(recipe, [step[k] for step in steps])
    stacked = _time_steps(tr.StackedCorefRecipe(splits, mcfg, tcfgs, vocab, None), steps)
    print(f"\ncoref {encoder}, K = {K}, paper sizes, CPU 1 thread: {K} seeds one after the "
          f"other {sequential:.2f} s per step of every seed, stacked {stacked:.2f} s; "
          f"sequential / stacked = {sequential / stacked:.2f}")  # fmt: skip
    assert stacked > 0 and sequential > 0
