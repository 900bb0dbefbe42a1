"""Benchmark (issue #13 §7), measured side by side on CPU, one thread; not a timed assert:
- EntityNLM training tokens/s (model + proposal, forward + backward) ÷ the same-size RNNLM's (target >= 0.5);
- importance-sampled evaluation of a document (N = 100 draws, batched) ÷ one RNNLM
  evaluation pass over it (target <= 20). The random weights of the first bench make a
  proposal that puts ~90 % of words in mentions (long uniform lengths), so nearly every step
  of every draw updates an entity (a V-long update of its logits); the second bench, on the
  pipeline's trained model, is the realistic figure.
Run: uv run --no-sync pytest tests/models/entitynlm/test_bench_entitynlm.py -m bench -s
"""

from __future__ import annotations

import math
import random
import time

import pytest
import torch

from models.entitynlm.data import Document, collate
from models.entitynlm.model import RNNLM, EntityNLMConfig, EntityNLMPair
from models.entitynlm.sampling import importance_log_marginal
from tests.models.entitynlm.helpers import vocab_of
from tests.models.entitynlm.reference import reference_importance_log_marginal, reference_of

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


def _best(step, arg, repeats) -> float:
    """Least wall time of `repeats` calls (the least disturbed one on a shared machine)."""
    step(arg)  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        step(arg)
        times.append(time.perf_counter() - started)
    return min(times)


def _ratios(pair, rnn, batch, one, is_fn, repeats=5) -> tuple[float, float]:
    """(training tokens/s of the pair ÷ the RNNLM's, IS time per document ÷ RNNLM pass);
    printed too: EntityNLM alone (without its proposal) ÷ the RNNLM."""

    def train_pair(b):
        (-(pair.lm.log_joint(b).sum() + pair.proposal.log_joint(b).sum())).backward()

    def train_lm(b):
        (-pair.lm.log_joint(b).sum()).backward()

    def train_rnn(b):
        (-rnn.log_words(b).sum()).backward()

    pair.train(), rnn.train()
    rnn_step = _best(train_rnn, batch, repeats)
    ratio_train = rnn_step / _best(train_pair, batch, repeats)
    print(f"  EntityNLM alone (no proposal) / RNNLM training tokens/s "
          f"{rnn_step / _best(train_lm, batch, repeats):.3f}")  # fmt: skip
    pair.eval(), rnn.eval()
    with torch.no_grad():
        rnn_pass = _best(rnn.log_words, one, 3 * repeats)
        is_doc = _best(lambda b: is_fn(pair.lm, pair.proposal, b, 100,
                                       torch.Generator().manual_seed(0)), one, 3)  # fmt: skip
    return ratio_train, is_doc / rnn_pass, is_doc, rnn_pass


@pytest.mark.bench
def test_bench_training_and_importance_sampling_against_the_rnnlm():
    """Before (tests/models/entitynlm/reference.py: the one-word-at-a-time scan and sampler)
    and after, side by side on the same weights."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vocab = vocab_of(V)
    batch = collate(_documents(), vocab)
    one = collate(_documents(1)[:1], vocab)
    cfg = EntityNLMConfig(vocab_size=V, embed_dim=H, hidden_size=H)
    pair, rnn = EntityNLMPair(cfg), RNNLM(cfg)
    ref = EntityNLMPair(cfg)
    ref.lm, ref.proposal = reference_of(pair.lm), reference_of(pair.proposal)
    print(f"\n{LENGTH} words/document, vocabulary {V}, hidden {H}, N = 100, 1 thread")
    for name, model, is_fn in (("before", ref, reference_importance_log_marginal),
                               ("after", pair, importance_log_marginal)):  # fmt: skip
        ratio_train, ratio_is, is_doc, rnn_pass = _ratios(model, rnn, batch, one, is_fn)
        print(f"{name}: EntityNLM + bidirectional proposal / RNNLM training tokens/s {ratio_train:.3f} (target >= 0.5); "
              f"IS per document / RNNLM pass {is_doc:.3f} s / {rnn_pass:.4f} s = "
              f"{ratio_is:.1f} (target <= 20)")  # fmt: skip
    paper_pair = EntityNLMPair(cfg, proposal_bidirectional=False)  # §5.1's left-to-right Q
    paper_ratio, *_ = _ratios(paper_pair, rnn, batch, one, importance_log_marginal, repeats=5)
    print(f"after: EntityNLM + the paper's left-to-right proposal / RNNLM training tokens/s "
          f"{paper_ratio:.3f}")  # fmt: skip
    with torch.no_grad():
        gen = torch.Generator().manual_seed(0)
        assert torch.isfinite(importance_log_marginal(pair.lm, pair.proposal, one, 100, gen)).all()


@pytest.mark.bench
def test_bench_importance_sampling_of_the_pipelines_trained_model():
    """The same IS ratio on the model `dvc repro train_entitynlm@entitynlm` trained and the
    documents it was evaluated on (a trained proposal is peaked: draws and entity states
    repeat, which the random weights above never show). Documents batched as the stage
    batches them (evaluation.batch_tokens); the RNNLM pass over the same batches."""
    from flows.train_entitynlm import prepare_data, settings
    from models.entitynlm.apply import load_entitynlm
    from models.entitynlm.data import document_text, token_batches
    from models.entitynlm.lm import EntityNLMMarginal, RNNLMScorer
    from tasks.core.config import resolve_path
    from tasks.evaluation.lm import perplexity

    ckpt = resolve_path("artifacts/train_entitynlm/entitynlm/seed1/best.pt")
    if not ckpt.exists():
        pytest.skip(f"{ckpt} absent: run `dvc repro train_entitynlm@entitynlm` first")
    torch.set_num_threads(1)
    cfg = settings()
    pair, vocab = load_entitynlm(ckpt)
    splits, _ = prepare_data(cfg)
    docs = splits["test"] or splits["dev"]
    rnn = RNNLM(pair.lm.config).eval()  # timing only: the weights do not change the cost
    tokens = cfg.evaluation.batch_tokens
    started = time.perf_counter()
    perplexity(RNNLMScorer(rnn, vocab, max_tokens=tokens), [document_text(d) for d in docs])
    rnn_s = time.perf_counter() - started
    started = time.perf_counter()
    marginal = EntityNLMMarginal(pair.lm, pair.proposal, vocab, samples=100, max_tokens=tokens)
    out = marginal.importance_perplexity(docs)
    is_s = time.perf_counter() - started
    words = sum(len(d.tokens) for d in docs)
    print(f"\n{cfg.runs}: {len(docs)} documents, {words} words, {len(token_batches(docs, tokens))}"
          f" batches, vocabulary {len(vocab)}, hidden {pair.lm.config.hidden_size}, N = 100:"
          f" IS {is_s / len(docs) * 1000:.1f} ms/doc, RNNLM pass {rnn_s / len(docs) * 1000:.2f}"
          f" ms/doc, ratio {is_s / rnn_s:.1f} (target <= 20); IS ppl {out['ppl']:.2f}")  # fmt: skip
    assert math.isfinite(out["ppl"])


@pytest.mark.bench
@pytest.mark.timeout(3600)  # four processes of alternating steps; on shared cores, slow
def test_bench_training_step_before_and_after_the_speedups():
    """Issue #57.3: the stage's EntityNLM training step (model + bidirectional proposal, clip,
    Adam; tests/models/entitynlm/profile_step.py) at the InScript cell's shapes (128, vocabulary
    1K, batch_tokens 512, ~200-word stories) and Table 1's (256, vocabulary 10K, one
    ~1,100-word document a step), before and after the speed-ups, in portable and native mode:
    per cell and mode one stage-like process in which the two code paths' steps alternate
    (medians of CPU and wall time; load from other work hits both alike), then the profile of
    each by part. The two paths give the same bits (test_fast_paths.py)."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT
    from tests.core.test_numerics import SWITCHES

    for cell, repeats, profiled in (("inscript", 15, 3), ("table1", 5, 1)):
        for mode in ("portable", "native"):
            env = {k: v for k, v in os.environ.items() if k not in SWITCHES}
            env["COREFREPRO_NUMERICS"] = mode
            proc = subprocess.run(
                [sys.executable, "-m", "tests.models.entitynlm.profile_step", cell, str(repeats),
                 str(profiled)],
                cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr[-3000:]
            print(f"\n### {cell}, {mode}\n{proc.stdout}")
            assert "before / after" in proc.stdout
