"""EntityNLM (Ji et al. 2017) as a family of the pipeline: EntityNLM with its proposal and
the RNNLM baseline on the EntityNLM views (data/graphs/<run>/entitynlm.parquet), Table 1."""

from __future__ import annotations

from models.entitynlm import train
from tasks.core.tracking import PAPERS
from tasks.training.family import Family

FAMILY = Family(
    name="entitynlm",
    paper=PAPERS["train_entitynlm"],
    settings=train.TrainEntityNLMSettings,
    recipe=train.LMRecipe,
    train_seed=train.train_seed,
    summarize=train.summarize,
    prepare_data=train.prepare_data,  # (splits, vocabulary): what every seed of every model reads
    run_params=train.run_params,
    dataset=lambda settings: "+".join(settings.runs),
)
