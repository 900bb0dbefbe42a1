"""Data-parallel training with torch.distributed, for the one training loop (issue #29.1).

torchrun starts N processes (RANK, WORLD_SIZE, MASTER_ADDR/PORT in their environment); each
builds the same recipe from the same seed and walks the same global batch order. The loop's
`accumulate` micro-batches of one optimizer step are dealt round-robin: process r computes
batches r, r + N, ... of the group, the gradients are summed over the processes
(all-reduce), and every process takes the same optimizer step. So N processes give the
optimizer what one process with the same `accumulate` gives it: the per-step losses and the
final weights agree to float rounding (tests/training/test_distributed.py), and `nproc` is a
run-only setting. What differs: the random draws of training (dropout masks, EntityNLM's
Eq. 7 prior noise): each process draws from its own stream.

Why not `DistributedDataParallel`: its gradient hooks fire only through the wrapper's
forward(), and the families' steps call their models' own methods (EntityNLM's
`lm.contexts`, the readers' encoders); an explicit all-reduce of one flat gradient buffer
per optimizer step is the same arithmetic without that constraint. Backend: gloo on the CPU,
NCCL on CUDA (each process on cuda:LOCAL_RANK).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Ranks:
    """This process's place among torchrun's: rank, world size, and the local GPU index."""

    rank: int = 0
    world: int = 1
    local: int = 0

    @property
    def main(self) -> bool:
        """The one process that writes checkpoints, metrics, MLflow runs and logs curves."""
        return self.rank == 0

    def mine(self, batch_index: int) -> bool:
        return batch_index % self.world == self.rank


def current() -> Ranks:
    """The ranks torchrun gave this process (a plain run: rank 0 of 1)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Ranks()
    return Ranks(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))


def join(ranks: Ranks, device: torch.device) -> None:
    """Join torchrun's process group (once per process); the model must then be the same
    everywhere, which broadcast_parameters makes sure of."""
    import torch.distributed as dist

    if ranks.world > 1 and not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(ranks.local)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")


def broadcast_parameters(model: torch.nn.Module, ranks: Ranks) -> None:
    import torch.distributed as dist

    if ranks.world > 1:
        for tensor in [*model.parameters(), *model.buffers()]:
            dist.broadcast(tensor.data, src=0)


def all_reduce_gradients(params: list[torch.Tensor], pending: int, ranks: Ranks) -> bool:
    """Sum every parameter's gradient over the processes, in one flat buffer; returns whether
    any process had a loss in this group (else there is no step to take). A parameter that no
    process gave a gradient keeps None, as in one process (Adam then leaves it alone)."""
    if ranks.world == 1:
        return pending > 0
    import torch.distributed as dist

    device = params[0].device
    flags = torch.tensor([float(pending)] + [float(p.grad is not None) for p in params],
                         device=device)  # fmt: skip
    dist.all_reduce(flags)
    reduced = [p for p, has in zip(params, flags[1:].tolist(), strict=True) if has]
    for p in reduced:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    if reduced:
        flat = torch.cat([p.grad.reshape(-1) for p in reduced])
        dist.all_reduce(flat)
        offset = 0
        for p in reduced:
            p.grad.copy_(flat[offset : offset + p.numel()].view_as(p))
            offset += p.numel()
    return bool(flags[0] > 0)


def merge_sums(sums: Mapping[str, float], ranks: Ranks) -> dict[str, float]:
    """An epoch's step statistics (loss sums, counts) added over the processes."""
    if ranks.world == 1:
        return dict(sums)
    import torch.distributed as dist

    gathered: list[dict[str, float]] = [{} for _ in range(ranks.world)]
    dist.all_gather_object(gathered, dict(sums))
    return _add_all(gathered)


def _add_all(parts: Iterable[Mapping[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for part in parts:
        for key, value in part.items():
            total[key] = total.get(key, 0.0) + value
    return total
