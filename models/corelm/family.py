"""CoreLM (Stylianou & Vlahavas 2021) as a family of the pipeline: a pretrained causal LM
zero-shot, fine-tuned (FT) and with the Entity-Gating layer (CoreLM), on the CoreLM view
(data/graphs/<run>/corelm.parquet)."""

from __future__ import annotations

from models.corelm import train
from tasks.core.tracking import PAPERS
from tasks.training.family import Family


def _train_seed(model: str, **_: object) -> dict:
    return train.run_model(model)


def _summarize(model: str, results: list[dict]) -> dict:
    return results[-1] if results else {}


FAMILY = Family(
    name="corelm",
    paper=PAPERS["train_corelm"],
    settings=train.TrainCoreLMSettings,
    recipe=train.CoreLMRecipe,
    train_seed=_train_seed,
    summarize=_summarize,
    report="tasks.report.corelm",
)
