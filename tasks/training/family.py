"""The contract of a model family: what one folder models/<family>/ declares so that the
pipeline can train, track and report it the same way as every other family.

Adding a family = its folder (nn.Modules, Parquet -> batches, a Recipe for the shared loop,
a `family.py` with FAMILY), one line in models/registry.py, its params.yaml section
`train_<name>`, its dvc.yaml stage `train_<name>`, its flow flows/train_<name>.py and its
report section tasks/report/<name>.py. The stage name is the MLflow experiment
(tasks/core/tracking.py) and the folder under artifacts/ and metrics/.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Family:
    name: str  # "mage" -> stage train_mage, models/mage/, flows/train_mage.py
    paper: str  # what it reproduces (an MLflow tag on every run)
    settings: type  # params.yaml train_<name>, parsed strictly (tasks/core/settings.py)
    load_settings: Callable[[], Any]  # the parsed section, before any work starts
    recipe: type  # its part of tasks/training/loop.py: model, batches, loss, evaluation
    train_seed: Callable[..., dict[str, Any]]  # one seed -> that seed's metrics
    summarize: Callable[..., dict[str, Any]]  # seeds -> the stage's DVC metrics
    report: str  # the module rendering its section of reports/results.md

    @property
    def stage(self) -> str:
        return f"train_{self.name}"
