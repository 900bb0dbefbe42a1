"""The contract of a model family: what one folder models/<family>/ declares so that the
pipeline can train, track and report it the same way as every other family.

A family is code only: it reads no params.yaml and writes no stage output of its own. The
stage (flows/train_<name>.py, found through models/registry.py) parses params.yaml
train_<name> into `settings`, prepares the data, gives each seed its artifact folder and
MLflow run (tasks/training/stage.py) and writes the summary to metrics/train_<name>/.

Adding a family = its folder (nn.Modules, Parquet -> batches, a Recipe for the shared loop,
a `family.py` with FAMILY declaring `prepare_data`), one line in models/registry.py and its
params.yaml section `train_<name>` (`items`, `seeds`, ...). The rest follows from the
registry: `python -m tasks.core.stage_deps` writes its dvc.yaml stage `train_<name>`, whose
command is the generic family stage (`python -m flows.train <name> --item <item>`), and the
report gives it a section of its summaries (tasks/report/common.py family_section) until it
has a report module tasks/report/<name>.py of its own. The four paper families keep a flow
module of their own (flows/train_<name>.py: stacked seeds, the 5-gram, the backbone) that
calls the same tasks/training/stage.py; that module is the stage's one home (issue #54.4:
flows/train_<name>.py owns its settings, plan, paths, outputs and FAMILY, and
models/registry.py names it), and models/<name>/ is a library only. The stage name is the
MLflow experiment (tasks/core/tracking.py) and the folder under artifacts/ and metrics/.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


class SeedTrainer(Protocol):
    """One seed of one stage item: train through the loop into out_dir (best.pt,
    history.json), evaluate, return that seed's metrics; log_metrics, when given, receives
    the learning curve (the seed's MLflow run is open around the call)."""

    def __call__(self, item: str, seed: int, data: Any, settings: Any, out_dir: Path, *,
                 log_metrics: Callable[..., None] | None = None) -> dict[str, Any]: ...  # fmt: skip


@dataclass(frozen=True)
class Family:
    name: str  # "mage" -> stage train_mage, models/mage/, flows/train_mage.py
    paper: str  # what it reproduces (an MLflow tag on every run)
    settings: type  # params.yaml train_<name>, parsed strictly (tasks/core/settings.py)
    recipe: type  # its part of tasks/training/loop.py: model, batches, loss, evaluation
    train_seed: Callable[..., dict[str, Any]]  # one seed -> its metrics: a SeedTrainer
    summarize: Callable[..., dict[str, Any]]  # (item, the seeds' metrics) -> the stage's metrics
    # optional: every seed at once as one batched model, each as if alone (train.seeds_stacked)
    # (item, seeds, data, settings, out_dirs, *, log_metrics: one sink per seed) -> metrics
    train_seeds_stacked: Callable[..., list[dict[str, Any]]] | None = None
    # the generic stage (flows/train.py, tasks/training/stage.py train_item): settings -> what
    # every seed of every item reads (loaded once); None: the family has its own flow module
    prepare_data: Callable[[Any], Any] | None = None
    # (settings, data) -> what each seed's MLflow run records as params; None: the settings
    run_params: Callable[[Any, Any], dict[str, Any]] | None = None
    # settings -> the data's name in metrics.json and the MLflow tag; None: the family's name
    dataset: Callable[[Any], str] | None = None

    @property
    def stage(self) -> str:
        return f"train_{self.name}"
