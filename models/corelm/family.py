"""CoreLM (Stylianou & Vlahavas 2021) as a family of the pipeline: a pretrained causal LM
zero-shot, fine-tuned (FT) and with the Entity-Gating layer (CoreLM), on the CoreLM view
(data/graphs/<run>/corelm.parquet)."""

from __future__ import annotations

from models.corelm import train
from tasks.core.tracking import PAPERS
from tasks.training.family import Family

FAMILY = Family(
    name="corelm",
    paper=PAPERS["train_corelm"],
    settings=train.TrainCoreLMSettings,
    recipe=train.CoreLMRecipe,
    train_seed=train.train_seed,
    summarize=train.summarize,
)
