"""One model family's training step, timed in a stage-like process (imports `flows` first, so
the numeric path is pinned unless COREFREPRO_NUMERICS=native): for tests/core/test_bench_numerics.py.

    python -m tests.core.numerics_bench_probe FAMILY REPEATS [--flops] [--before]
        -> prints the median step in s (--flops: and the counted GFLOP, the matmul limit;
           --before: the code paths before issue #57.3's speed-ups: EntityNLM's
           profile_step.use, coreference's profile_pairs.use)

The steps are the families' own benchmarks' steps, at their sizes, one thread:
mage: a MAGE-GRU layer (Dhingra et al. sizes, tests/models/mage/test_bench_mage.py);
coref: the baseline e2e model on a 40-sentence crop (tests/models/coref/test_bench_stacked.py);
entitynlm: EntityNLM + proposal on 16 x 300 words (tests/models/entitynlm/test_bench_entitynlm.py);
rnnlm: the RNNLM baseline, 256 units and a 10K softmax, on the same words;
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
    from tests.models.coref.profile_pairs import probe_steps

    step, turn = probe_steps(), iter(range(10**9))
    return lambda: step(next(turn))


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


def rnnlm_step() -> Callable[[], None]:
    """The RNNLM baseline at the issue's calibration size (#57.3): one LSTM layer of 256 units,
    a 10K-word softmax, on the EntityNLM bench's 16 x 300 words."""
    import torch

    from models.entitynlm.data import collate
    from models.entitynlm.model import RNNLM, EntityNLMConfig
    from tests.models.entitynlm import test_bench_entitynlm as b
    from tests.models.entitynlm.helpers import vocab_of

    torch.manual_seed(0)
    batch = collate(b._documents(), vocab_of(b.V))
    model = RNNLM(EntityNLMConfig(vocab_size=10_000, embed_dim=256, hidden_size=256))
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        (-model.log_words(batch).sum()).backward()
        optimizer.step()

    return step


def corelm_step() -> Callable[[], None]:
    from models.corelm.backbone import TinySettings, load_backbone
    from tests.models.corelm import test_bench_corelm as b

    backbone = load_backbone("tiny", texts=[b.TEXT] * 20, tiny=TinySettings(n_positions=b.BLOCK))
    return b._steps(backbone, cached=False, gating=True)


FAMILIES = {"mage": mage_step, "coref": coref_step, "entitynlm": entitynlm_step,
            "rnnlm": rnnlm_step, "corelm": corelm_step}  # fmt: skip


def _median_time(fn: Callable[[], object], repeats: int) -> float:
    """The median CPU time of `fn` (one thread): what it costs on a free core. Wall time on
    cores shared with other jobs (training lanes, CI's other worker) stretched 3-5x here."""
    times = []
    for _ in range(repeats):
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return statistics.median(times)


def counted_flops(step: Callable[[], None]) -> float:
    """The floating-point operations of one step, forward and backward, as torch counts them
    for its matrix products and convolutions (torch.utils.flop_counter: 2 per multiply-add).
    Counted with oneDNN off: the counter does not see into oneDNN's LSTM (native mode), whose
    products it would leave out (issue #57.3: half of EntityNLM's step)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    with torch.backends.mkldnn.flags(enabled=False), FlopCounterMode(display=False) as counter:
        step()
    return float(counter.get_total_flops())


MATMULS = {"aten::mm", "aten::addmm", "aten::bmm"}


def matmul_shapes(step: Callable[[], None]) -> dict[tuple[str, str], float]:
    """(op, input shapes) -> the FLOPs that matrix product carries in one step."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
    totals: dict[tuple[str, str], float] = {}
    for event in prof.events():
        if event.name in MATMULS and event.input_shapes:
            key = (event.name, repr([list(s) for s in event.input_shapes if s]))
            totals[key] = totals.get(key, 0.0) + _mm_flops(event.name, eval(key[1]))  # noqa: S307
    return totals


def _operands(op: str, shapes: list[list[int]]) -> tuple[list[int], list[int]]:
    return (shapes[1], shapes[2]) if op == "aten::addmm" else (shapes[0], shapes[1])


def _mm_flops(op: str, shapes: list[list[int]]) -> float:
    a, b = _operands(op, shapes)
    batch = a[0] if op == "aten::bmm" else 1
    return 2.0 * batch * a[-2] * a[-1] * b[-1]


def matmul_gflops(op: str, shapes: list[list[int]], repeats: int) -> float:
    """This process's GFLOP/s for that product alone, one thread."""
    import torch

    a, b = _operands(op, shapes)
    x, y = torch.randn(*a), torch.randn(*b)
    fn = (lambda: torch.bmm(x, y)) if op == "aten::bmm" else (lambda: torch.mm(x, y))
    reps = max(1, int(5e8 / _mm_flops(op, shapes)))  # about 0.5 GFLOP a timing
    for _ in range(3):
        fn()
    seconds = _median_time(lambda: [fn() for _ in range(reps)], repeats)
    return _mm_flops(op, shapes) * reps / seconds / 1e9


def matmul_limit(step: Callable[[], None], repeats: int, cover: float = 0.95) -> float:
    """The step's matmul FLOP/s if every product ran at its own shape's standalone speed (the
    machine's limit at the family's shapes): the products that carry *cover* of the FLOPs,
    largest first, each timed alone; GFLOP/s."""
    totals = sorted(matmul_shapes(step).items(), key=lambda kv: -kv[1])
    whole, seen, seconds = sum(f for _, f in totals), 0.0, 0.0
    for (op, shapes), flop in totals:
        seconds += flop / (matmul_gflops(op, eval(shapes), repeats) * 1e9)  # noqa: S307
        seen += flop
        if seen >= cover * whole:
            break
    return seen / seconds / 1e9


def main(family: str, repeats: int, flops: bool = False) -> None:
    """Print the median step in s; with *flops*, then the step's counted GFLOP and the
    machine's matmul limit at the family's shapes (GFLOP/s, `matmul_limit`)."""
    import torch

    torch.set_num_threads(1)
    step = FAMILIES[family]()
    step()  # warm-up: allocations, numba/JIT compilation
    median = _median_time(step, repeats)
    if flops:
        print(median, counted_flops(step) / 1e9, matmul_limit(step, repeats))
    else:
        print(median)


if __name__ == "__main__":
    if "--before" in sys.argv[3:]:
        from tests.models.coref.profile_pairs import use as use_pairs
        from tests.models.entitynlm.profile_step import use

        use("before")
        use_pairs("before")
    main(sys.argv[1], int(sys.argv[2]), "--flops" in sys.argv[3:])
