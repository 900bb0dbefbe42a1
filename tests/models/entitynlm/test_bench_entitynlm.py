"""Benchmark (issue #13 §7), measured side by side on CPU, one thread; not a timed assert:
- EntityNLM training tokens/s (model + proposal) ÷ the same-size RNNLM's (target >= 0.5);
- importance-sampled evaluation of a document (N = 100 draws, batched) ÷ one RNNLM
  evaluation pass over it (target <= 20).
Run: uv run --no-sync pytest tests/models/entitynlm/test_bench_entitynlm.py -m bench -s
"""

from __future__ import annotations

import random
import time

import pytest
import torch

from models.entitynlm.data import Document, collate
from models.entitynlm.model import RNNLM, EntityNLMConfig, EntityNLMPair
from models.entitynlm.sampling import importance_log_marginal
from tests.models.entitynlm.helpers import vocab_of

V, H, DOCS, LENGTH = 1000, 64, 16, 300


def _documents(seed=0) -> list[Document]:
    """Random documents, ~30% mention words, a few entities each, mentions of 1-3 words."""
    rng = random.Random(seed)
    docs = []
    for k in range(DOCS):
        tokens, is_m, ent, rem, n = [], [], [], [], 0
        while len(tokens) < LENGTH:
            if rng.random() < 0.15:
                e = rng.randrange(n + 1) if n else 0
                n = max(n, e + 1)
                ell = rng.randint(1, 3)
                for i in range(ell):
                    is_m.append(True), ent.append(e), rem.append(ell - i)
            else:
                is_m.append(False), ent.append(-1), rem.append(0)
            tokens += [f"w{rng.randrange(V - 2)}" for _ in range(len(is_m) - len(tokens))]
        docs.append(
            Document(
                f"d{k}",
                "train",
                tokens[:LENGTH],
                is_m[:LENGTH],
                ent[:LENGTH],
                [min(r, LENGTH - i) for i, r in enumerate(rem[:LENGTH])],
            )
        )
    return docs


def _rate(step, batch, repeats=3) -> float:
    step(batch)  # warm-up
    started = time.perf_counter()
    for _ in range(repeats):
        step(batch)
    return batch.num_tokens * repeats / (time.perf_counter() - started)


@pytest.mark.bench
def test_bench_training_and_importance_sampling_against_the_rnnlm():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vocab = vocab_of(V)
    batch = collate(_documents(), vocab)
    cfg = EntityNLMConfig(vocab_size=V, embed_dim=H, hidden_size=H)
    pair, rnn = EntityNLMPair(cfg), RNNLM(cfg)

    def train_pair(b):
        (-(pair.lm.log_joint(b).sum() + pair.proposal.log_joint(b).sum())).backward()

    def train_rnn(b):
        (-rnn.log_words(b).sum()).backward()

    pair.train(), rnn.train()
    ratio_train = _rate(train_pair, batch) / _rate(train_rnn, batch)
    pair.eval(), rnn.eval()
    one = collate(_documents(1)[:1], vocab)
    with torch.no_grad():
        t0 = time.perf_counter()
        for _ in range(5):
            rnn.log_words(one)
        rnn_pass = (time.perf_counter() - t0) / 5
        t0 = time.perf_counter()
        est = importance_log_marginal(
            pair.lm, pair.proposal, one, 100, torch.Generator().manual_seed(0)
        )
        is_doc = time.perf_counter() - t0
    ratio_is = is_doc / rnn_pass
    print(f"\nEntityNLM/RNNLM training tokens/s ratio: {ratio_train:.3f} (target >= 0.5)")
    print(
        f"IS (N=100) per document / RNNLM pass: {is_doc:.3f} s / {rnn_pass:.4f} s = "
        f"{ratio_is:.1f} (target <= 20); {LENGTH} words, vocabulary {V}, hidden {H}"
    )
    assert torch.isfinite(est).all()
