"""The model families the pipeline trains: name -> the module holding its FAMILY
(tasks/training/family.py). Imported by name on first use, so reading one family's code
does not load the others (torch models, tokenizers)."""

from __future__ import annotations

import importlib

from tasks.core.errors import CorefreproError
from tasks.training.family import Family

FAMILIES: dict[str, str] = {
    "mage": "models.mage.family",  # Dhingra et al. 2018: MAGE-GRU readers
    "coref": "models.coref.family",  # Luo & Glass 2018 on Lee et al. 2017: e2e coreference
    "entitynlm": "models.entitynlm.family",  # Ji et al. 2017: EntityNLM, RNNLM baseline
    "corelm": "models.corelm.family",  # Stylianou & Vlahavas 2021: CoreLM (Entity-Gating)
}


def names() -> list[str]:
    return sorted(FAMILIES)


def get(name: str) -> Family:
    if name not in FAMILIES:
        raise CorefreproError(f"unknown model family '{name}'; known: {', '.join(names())}")
    return importlib.import_module(FAMILIES[name]).FAMILY
