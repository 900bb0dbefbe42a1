"""Coreference's antecedent scoring before and after issue #57.3, timed side by side on the
numerics probe's coreference step (tests/core/numerics_bench_probe.py `coref`: the baseline at
the paper's sizes on a 40-sentence crop), in a stage-like process (imports `flows` first, so
the numeric path is pinned unless COREFREPRO_NUMERICS=native):

    python -m tests.models.coref.profile_pairs ROUNDS

Before: every kept span scored against all K' candidate slots (antecedent_candidates' [N, K']
layout) in chunks of 256 spans, the slots without an antecedent masked to -inf after scoring
(`antecedent_scores_before`, also the reference of tests/models/coref/test_model.py's
equivalence test). After: models/coref/model.py `CorefModel._antecedent_scores`, the valid
pairs only. Each round runs both on the same crop, the order alternating; prints the median
CPU time a step (time.process_time, one thread) of each and their ratio.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import flows  # noqa: F401  (the stage entry point: pins the numeric path, before torch loads)

# isort: split
import torch
from torch import Tensor

from models.coref.model import NEG_INF, CorefModel

VARIANTS = ("before", "after")
ROWS_BEFORE = 256  # the chunk of kept spans before (CorefConfig.pair_chunk counted spans)


def antecedent_scores_before(
    self: CorefModel, spans: Tensor, mention_scores: Tensor, mask: Tensor, speakers: Tensor,
    genre: Tensor,
) -> Tensor:  # fmt: skip
    """CorefModel._antecedent_scores as it was before issue #57.3: s(i, j) (Lee et al. Eq. 1,
    5) for all N x K' slots, masked to -inf after scoring."""
    n, width = mask.shape
    device = spans.device
    raw = torch.arange(n).unsqueeze(1) - torch.arange(1, width + 1).unsqueeze(0)
    antecedents, mask = raw.clamp(min=0).to(device), mask.to(device)
    projections = self._pair_projections(spans)
    parts = []
    for first in range(0, n, ROWS_BEFORE):
        rows = torch.arange(first, min(first + ROWS_BEFORE, n), device=device)
        scores = _slot_scores(self, rows, antecedents[rows], spans, projections,
                              mention_scores, speakers, genre)  # fmt: skip
        parts.append(scores.masked_fill(~mask[rows], NEG_INF))
    return torch.cat(parts)


def _slot_scores(self, rows, antecedents, spans, projections, mention_scores, speakers, genre):
    """The former CorefModel._pair_scores: [n, K'] for rows [n], antecedents [n, K']."""
    first = self.pair_scorer[0]
    d = spans.shape[1]
    w_product, w_features = first.weight[:, 2 * d :].split([d, first.weight.shape[1] - 3 * d], 1)
    by_target, by_other = projections
    product = spans[rows].unsqueeze(1) * spans[antecedents]  # [n, K', D]
    phi = self.pair_features(rows.unsqueeze(1).expand_as(antecedents), antecedents, speakers,
                             genre)  # fmt: skip
    hidden = (by_target[rows].unsqueeze(1) + by_other[antecedents] + product @ w_product.t()
              + phi @ w_features.t() + first.bias)  # fmt: skip
    s_a = self.pair_scorer[1:](hidden).squeeze(2)
    return s_a + mention_scores[rows].unsqueeze(1) + mention_scores[antecedents]


_AFTER = CorefModel._antecedent_scores


def use(variant: str) -> None:
    """Switch this process's CorefModel to the antecedent scoring of *variant*."""
    CorefModel._antecedent_scores = _AFTER if variant == "after" else antecedent_scores_before


def probe_steps() -> Callable[[int], None]:
    """step(i): numerics_bench_probe.coref_step's training step on crop i % 4 (the caller
    picks the crop, so both variants of a round see the same one)."""
    import random

    from models.coref import train as tr
    from models.coref.data import build_vocab
    from tests.models.coref import test_bench_stacked as b

    torch.manual_seed(0)  # the same initial model in every process
    rng = random.Random(0)
    docs = [b.document(rng, i) for i in range(4)]
    mcfg = tr.resolve_model({**b.PAPER, "encoder": "baseline"})
    tcfg = tr.resolve_train_cfg({**b.TRAIN, "seed": 1})
    recipe = tr.CorefRecipe({"train": docs, "dev": docs[:1], "test": []}, mcfg, tcfg,
                            build_vocab(docs), None)  # fmt: skip
    optimizer, _ = recipe.optimizer()
    recipe.model.train()

    def step(i: int) -> None:
        optimizer.zero_grad(set_to_none=True)
        recipe.step(docs[i % len(docs)], torch.device("cpu")).loss.backward()
        torch.nn.utils.clip_grad_norm_(recipe.model.parameters(), 5.0)
        optimizer.step()

    return step


def main(rounds: int) -> None:
    torch.set_num_threads(1)
    step = probe_steps()
    step(0)  # warm-up
    cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(rounds):
        for v in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
            use(v)
            started = time.process_time()
            step(r)
            cpu[v].append(time.process_time() - started)
    use("after")
    before, after = (statistics.median(cpu[v]) for v in VARIANTS)
    paired = statistics.median(a / b for a, b in zip(cpu["after"], cpu["before"], strict=True))
    print(f"coref step, {torch.get_num_threads()} thread, {rounds} rounds, CPU s (medians)")
    print(f"| before | after | after / before | per-round after / before |\n|---|---|---|---|\n"
          f"| {before:.3f} | {after:.3f} | {after / before:.3f} | {paired:.3f} |")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]))
