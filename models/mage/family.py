"""MAGE-GRU (Dhingra et al. 2018) as a family of the pipeline: the eight readers of Table 1
on bAbI, bAbI-Mix, LAMBADA and CNN graphs (data/graphs/<run>/graphs.parquet)."""

from __future__ import annotations

from models.mage import train
from tasks.core.tracking import PAPERS
from tasks.training.family import Family

FAMILY = Family(
    name="mage",
    paper=PAPERS["train_mage"],
    settings=train.TrainMageSettings,
    recipe=train.ReaderRecipe,
    train_seed=train.train_seed,
    summarize=train.summarize,
    train_seeds_stacked=train.train_seeds_stacked,
)
