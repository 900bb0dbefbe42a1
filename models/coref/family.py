"""End-to-end coreference (Lee et al. 2017) with Luo & Glass's sentence linking as a family
of the pipeline: the baseline, LSL and ASL encoders on data/docs/<corpus> with gold chains."""

from __future__ import annotations

from models.coref import train
from tasks.core.tracking import PAPERS
from tasks.training.family import Family

FAMILY = Family(
    name="coref",
    paper=PAPERS["train_coref"],
    settings=train.TrainCorefSettings,
    recipe=train.CorefRecipe,
    train_seed=train.train_seed,
    summarize=train.summarize,
    train_seeds_stacked=train.train_seeds_stacked,
)
