"""Benchmark: a CoreLM training step vs an FT step on the same backbone, and the cached mode's
tokens/s vs the paper's mode, measured side by side in one run.

    COREFREPRO_CORELM_BENCH_BACKBONE=smollm2 .venv/bin/python -m pytest -m bench -s \
        tests/models/corelm/test_bench_corelm.py

One step = forward + backward + RAdam step of the recipe (models/corelm/train.py) on one batch
of BATCH windows of BLOCK tokens with ~15% of the tokens in entities. Paper mode: blocks frozen,
gradients to the input embeddings, head and gating (App. A), so the backward pass runs through
every block; cached mode: the final hidden states come from the cache, only the gating layer,
entity table and head train. Repeats are interleaved so that load from other work hits all
alike; medians and ratios are printed (targets: CoreLM / FT <= 1.2). Never asserted.
Backbone: tiny by default, or the one the environment variable names (gpt2, smollm2, a path).
"""

from __future__ import annotations

import os
import statistics
import time
from types import SimpleNamespace

import pytest
import torch

from models.corelm.backbone import TinySettings, load_backbone
from models.corelm.data import Blocks, pad_batch
from models.corelm.model import CoreLM
from models.corelm.train import CoreLMTrain
from tasks.training.loop import Recipe, _optimizer_step

pytestmark = pytest.mark.bench


# only the loop's default clip_gradients (what CoreLMRecipe uses): _optimizer_step calls no other
_CLIP = SimpleNamespace(
    clip_gradients=lambda clip, params: Recipe.clip_gradients(None, clip, params)
)

BATCH, WARMUP, REPEATS = 4, 1, 5
BLOCK = int(os.environ.get("COREFREPRO_CORELM_BENCH_BLOCK", "256"))
TEXT = "Mary went to the kitchen . She picked up the apple and gave it to John . " * 4


def _steps(backbone, cached: bool, gating: bool):
    model = CoreLM(backbone.model, n_entities=64, gating=gating,
                   n_heads=12 if backbone.name != "tiny" else 4)  # fmt: skip
    if cached:
        model.untie_head()
    model.freeze_for_training(embeddings=not cached)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.RAdam(params, lr=1e-5)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    gen = torch.Generator().manual_seed(0)
    vocab = backbone.model.config.vocab_size
    ids = torch.randint(vocab, (BATCH, BLOCK), generator=gen)
    ents = torch.where(torch.rand(BATCH, BLOCK, generator=gen) < 0.15,
                       torch.randint(1, 65, (BATCH, BLOCK), generator=gen), 0)  # fmt: skip
    blocks = Blocks(ids.tolist(), ents.tolist())
    batch = pad_batch(blocks, list(range(BATCH)), 0)
    hidden = model.hidden(batch["input_ids"]).detach() if cached else None

    def step():
        logits = model(batch["input_ids"], batch["entity_ids"], hidden=hidden)
        from models.corelm.model import causal_lm_loss

        loss, _ = causal_lm_loss(logits, batch["labels"])
        scaler.scale(loss).backward()
        _optimizer_step(opt, None, scaler, params, CoreLMTrain().clip, recipe=_CLIP)

    return step


def test_corelm_step_vs_ft_step_and_cached_vs_paper():
    name = os.environ.get("COREFREPRO_CORELM_BENCH_BACKBONE", "tiny")
    backbone = load_backbone(name, texts=[TEXT] * 20, tiny=TinySettings(n_positions=BLOCK))
    steps = {
        "ft": _steps(backbone, cached=False, gating=False),
        "corelm": _steps(backbone, cached=False, gating=True),
        "corelm-cached": _steps(
            load_backbone(name, texts=[TEXT] * 20, tiny=TinySettings(n_positions=BLOCK)),
            cached=True,
            gating=True,
        ),  # fmt: skip
    }
    times: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(WARMUP):
        for s in steps.values():
            s()
    for _ in range(REPEATS):
        for k, s in steps.items():
            t0 = time.perf_counter()
            s()
            times[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    tokens = BATCH * (BLOCK - 1)
    print(f"\n[{name}, cpu {torch.get_num_threads()} threads] batch {BATCH} x {BLOCK} tokens, "
          f"median of {REPEATS} interleaved steps: FT {med['ft']:.3f} s, CoreLM "
          f"{med['corelm']:.3f} s, CoreLM cached {med['corelm-cached']:.3f} s; CoreLM / FT = "
          f"{med['corelm'] / med['ft']:.2f} (target <= 1.2); tokens/s cached / paper = "
          f"{(tokens / med['corelm-cached']) / (tokens / med['corelm']):.1f}")  # fmt: skip
    assert all(len(v) == REPEATS for v in times.values())
