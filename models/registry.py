"""What the pipeline can build by name, imported on first use so that reading one family's
code does not load the others (torch models, tokenizers):

- `FAMILIES`: the model families the pipeline trains -> the module holding its FAMILY
  (tasks/training/family.py): the family's stage module where it has one (flows/train_mage.py,
  the stage's one home, issue #54.4), else models/<name>/family.py; their order is the order of the report's sections, each
  tasks/report/<name>.py (`reports()`);
- `LANGUAGE_MODELS`: every language model of the project -> the module registering it with
  `tasks.evaluation.lm.register_lm`. `language_model(name, **kwargs)` is how stages (and the
  lm-evaluation-harness adapter) get an LM: every perplexity, LAMBADA and CBT figure of the
  report comes from a `LanguageModel` built here (issue #28).
"""

from __future__ import annotations

from types import ModuleType

from tasks.core.registry import Registry
from tasks.evaluation.lm import LanguageModel, UnknownLMError, get_lm
from tasks.training.family import Family

FAMILIES: Registry[Family] = Registry(
    "model family",
    {
        "mage": "flows.train_mage",  # Dhingra et al. 2018: MAGE-GRU readers (the stage module)
        "coref": "flows.train_coref",  # Luo & Glass 2018 on Lee et al. 2017: e2e coreference
        "entitynlm": "flows.train_entitynlm",  # Ji et al. 2017: EntityNLM, RNNLM baseline
        "corelm": "flows.train_corelm",  # Stylianou & Vlahavas 2021: CoreLM (Entity-Gating)
    },
    attribute="FAMILY",
)

# importing a module registers its LMs with tasks.evaluation.lm (register_lm)
LANGUAGE_MODELS: Registry[ModuleType] = Registry(
    "language model",
    {
        "corelm": "models.corelm.lm",  # a causal LM with or without Entity-Gating (all of Table 1-2)
        "rnnlm": "models.entitynlm.lm",  # Ji et al. 2017 Table 1: the LSTM baseline
        "entitynlm": "models.entitynlm.lm",  # Ji et al. 2017 Eq. 11: the IS marginal
        "5gram": "models.entitynlm.ngram",  # Ji et al. 2017 Table 1: modified Kneser-Ney (KenLM)
        "table": "tasks.evaluation.lm",  # the reference implementation (a fixed n-gram table)
    },
    error=UnknownLMError,
)


def names() -> list[str]:
    return FAMILIES.names()


def get(name: str) -> Family:
    return FAMILIES[name]


def reports() -> list[str]:
    """The sections of reports/results.md (flows/report.py), in FAMILIES order: each family's
    report module is tasks/report/<name>.py (its SECTION), found by name without loading the
    family's models (the report stage runs no model code; tasks/core/stage_deps.py makes
    those modules its deps); a family without one gets tasks/report/common.py
    family_section."""
    return [f"tasks.report.{name}" for name in FAMILIES]


def language_models() -> list[str]:
    return LANGUAGE_MODELS.names()


def language_model(name: str, /, **kwargs: object) -> LanguageModel:
    """Build the LM registered as *name* (its module imported first) with *kwargs*: the
    in-memory parts a stage holds, or `checkpoint=` a trained artifact (each factory says)."""
    LANGUAGE_MODELS[name]  # its module registers it
    return get_lm(name, **kwargs)
