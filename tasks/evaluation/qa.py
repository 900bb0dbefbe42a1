"""Question-answering accuracy: every item counts (an answer a model cannot produce is an
error), the loss is averaged over the items whose answer it can produce, and where some
answers lie outside the passage (LAMBADA, MAGE Table 3) accuracy is also kept on the
'context' subset (answer in the passage) beside 'all'."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch


class QAScore:
    """Accumulates one split's accuracy and loss batch by batch."""

    def __init__(self, *, subsets: bool = False):
        self.subsets = subsets
        self.correct = self.total = self.scored = 0
        self.in_correct = self.in_total = 0
        self.loss_sum = 0.0

    def add(
        self, hit: torch.Tensor, inside: torch.Tensor, item_loss: torch.Tensor, valid: torch.Tensor
    ) -> None:
        """hit: item answered right; inside: answer in the passage; item_loss: its negative
        log-likelihood; valid: the answer can be produced at all (bool tensors, one per item)."""
        self.correct += int(hit.sum())
        self.total += hit.numel()
        self.in_correct += int((hit & inside).sum())
        self.in_total += int(inside.sum())
        finite = valid & torch.isfinite(item_loss)
        self.loss_sum += float(item_loss[finite].sum())
        self.scored += int(finite.sum())

    def result(self) -> dict[str, float]:
        out = {
            "acc": self.correct / self.total if self.total else math.nan,
            "loss": self.loss_sum / self.scored if self.scored else math.nan,
            "n": self.total,
        }
        if self.subsets:
            out["context_acc"] = self.in_correct / self.in_total if self.in_total else math.nan
            out["context_n"] = self.in_total
        return out


def subset_metrics(dev: Mapping[str, Any], test: Mapping[str, Any] | None) -> dict[str, Any]:
    """The "subsets" metrics: {"context": {dev_acc, test_acc, dev_n, test_n}, "all": {...}}
    (MAGE paper Table 3's column groups; test None where there is no test split)."""
    out: dict[str, Any] = {}
    for name, prefix in (("context", "context_"), ("all", "")):
        out[name] = {
            "dev_acc": dev[f"{prefix}acc"],
            "test_acc": test[f"{prefix}acc"] if test else None,
            "dev_n": dev[f"{prefix}n"],
            "test_n": test[f"{prefix}n"] if test else 0,
        }
    return out
