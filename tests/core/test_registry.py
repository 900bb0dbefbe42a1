"""tasks/core/registry.py: the one registry class (issue #54.4) behind families, corpora,
annotators, language models and edge types."""

from __future__ import annotations

import sys

import pytest

from models import registry as models_registry
from tasks import corpora
from tasks.annotation import annotators
from tasks.core.errors import CorefreproError
from tasks.core.registry import Registry
from tasks.evaluation import lm
from tasks.graphs import dags


class Refused(CorefreproError):
    pass


def test_a_lazy_member_is_imported_on_first_lookup_only():
    reg = Registry("codec", {"json": "json", "fractions": "fractions"}, attribute="Fraction")
    sys.modules.pop("fractions", None)
    assert "fractions" in reg and "fractions" not in sys.modules  # membership imports nothing
    assert reg["fractions"].__name__ == "Fraction" and "fractions" in sys.modules
    assert list(reg) == ["json", "fractions"] and reg.names() == ["fractions", "json"]
    assert len(reg) == 2 and reg.get("yaml") is None


def test_an_unknown_name_names_the_setting_and_the_known_ones():
    reg = Registry("corpus", {"babi": "tasks.corpora.babi"}, setting="params.yaml corpora",
                   error=Refused)  # fmt: skip
    with pytest.raises(
        Refused, match=r"unknown corpus 'bAbI' \(params.yaml corpora\); known: babi"
    ):
        reg["bAbI"]


def test_a_taken_name_is_refused_unless_replaced():
    reg: Registry[int] = Registry("number")
    reg.register("one", 1)
    with pytest.raises(CorefreproError, match="number 'one' is already registered"):
        reg.register("one", 2)
    assert reg.register("one", 2, replace=True) == 2 and reg["one"] == 2


def test_every_registry_of_the_project_is_one():
    for reg in (corpora.REGISTRY, annotators.MODULES, models_registry.FAMILIES,
                models_registry.LANGUAGE_MODELS, dags.EDGE_TYPES, lm._REGISTRY):  # fmt: skip
        assert isinstance(reg, Registry)
    assert list(models_registry.FAMILIES) == [
        "mage",
        "coref",
        "entitynlm",
        "corelm",
    ]  # report order
    assert corpora.get("handmade").__name__ == "tasks.corpora.handmade"
    with pytest.raises(CorefreproError, match="unknown annotator 'entityid'"):
        annotators.get("entityid")
