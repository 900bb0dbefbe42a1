"""One model family's training step, timed in a stage-like process (imports `flows` first, so
the numeric path is pinned unless COREFREPRO_NUMERICS=native): for tests/core/test_bench_numerics.py.

    python -m tests.core.numerics_bench_probe FAMILY REPEATS   -> prints the median step in s

The steps are the families' own benchmarks' steps, at their sizes, one thread:
mage: a MAGE-GRU layer (Dhingra et al. sizes, tests/models/mage/test_bench_mage.py);
coref: the baseline e2e model on a 40-sentence crop (tests/models/coref/test_bench_stacked.py);
entitynlm: EntityNLM + proposal on 16 x 300 words (tests/models/entitynlm/test_bench_entitynlm.py);
corelm: a CoreLM step on the tiny backbone (tests/models/corelm/test_bench_corelm.py).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import flows  # noqa: F401  (the stage entry point: pins the numeric path)


def mage_step() -> Callable[[], None]:
    import torch

    from models.mage.mage_gru import MAGEGRU, split_sizes
    from tests.models.mage import test_bench_mage as b

    torch.manual_seed(0)
    x = torch.randn(b.BATCH, b.STEPS, b.INPUT)
    preds = b.coreference_graph(b.BATCH, b.STEPS)
    layer = MAGEGRU(b.INPUT, b.HIDDEN, 2, edge_sizes=split_sizes(b.HIDDEN, b.COREF))
    return b.make_step(layer, lambda: layer(x, preds), amp=False)


def coref_step() -> Callable[[], None]:
    import random

    import torch

    from models.coref import train as tr
    from models.coref.data import build_vocab
    from tests.models.coref import test_bench_stacked as b

    rng = random.Random(0)
    docs = [b.document(rng, i) for i in range(4)]
    mcfg = tr.resolve_model({**b.PAPER, "encoder": "baseline"})
    tcfg = tr.resolve_train_cfg({**b.TRAIN, "seed": 1})
    recipe = tr.CorefRecipe({"train": docs, "dev": docs[:1], "test": []}, mcfg, tcfg,
                            build_vocab(docs), None)  # fmt: skip
    optimizer, _ = recipe.optimizer()
    recipe.model.train()
    turn = iter(range(10**9))

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        recipe.step(docs[next(turn) % len(docs)], torch.device("cpu")).loss.backward()
        torch.nn.utils.clip_grad_norm_(recipe.model.parameters(), 5.0)
        optimizer.step()

    return step


def entitynlm_step() -> Callable[[], None]:
    import torch

    from models.entitynlm.data import collate
    from models.entitynlm.model import EntityNLMConfig, EntityNLMPair
    from tests.models.entitynlm import test_bench_entitynlm as b
    from tests.models.entitynlm.helpers import vocab_of

    torch.manual_seed(0)
    batch = collate(b._documents(), vocab_of(b.V))
    pair = EntityNLMPair(EntityNLMConfig(vocab_size=b.V, embed_dim=b.H, hidden_size=b.H))
    pair.train()
    optimizer = torch.optim.Adam(pair.parameters(), lr=1e-3)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        (-(pair.lm.log_joint(batch).sum() + pair.proposal.log_joint(batch).sum())).backward()
        optimizer.step()

    return step


def corelm_step() -> Callable[[], None]:
    from models.corelm.backbone import TinySettings, load_backbone
    from tests.models.corelm import test_bench_corelm as b

    backbone = load_backbone("tiny", texts=[b.TEXT] * 20, tiny=TinySettings(n_positions=b.BLOCK))
    return b._steps(backbone, cached=False, gating=True)


FAMILIES = {"mage": mage_step, "coref": coref_step, "entitynlm": entitynlm_step,
            "corelm": corelm_step}  # fmt: skip


def main(family: str, repeats: int) -> None:
    import torch

    torch.set_num_threads(1)
    step = FAMILIES[family]()
    step()  # warm-up: allocations, numba/JIT compilation
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        step()
        times.append(time.perf_counter() - started)
    print(statistics.median(times))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
