"""Every stage reads its params.yaml section through the one strict parser: a typo'd key is
refused, before any work, with its full path and the closest valid key."""

from __future__ import annotations

import copy
import re

import pytest

from tasks.core import config
from tasks.core.settings import ConfigError

# section path of the typo -> (the stage's settings loader, the key it misspells)
CASES = {
    "download": ("tasks.corpora.ingest:download_settings('synthetic')", "timeout_s"),
    "normalize": ("tasks.corpora.ingest:normalize_settings('synthetic')", "dev_fraction"),
    "annotate": ("tasks.annotation.runs:settings()", "shard_size"),
    "graphs": ("tasks.graphs.stage:_settings('graphs')", "edge_types"),
    "view_entitynlm": ("tasks.graphs.stage:_settings('view_entitynlm')", "long_mentions"),
    "view_corelm": ("tasks.graphs.stage:_settings('view_corelm')", "id_scope"),
    "kbest": ("models.coref.kbest:settings()", "encoder"),
    "train_mage.train": ("models.mage.train:settings()", "epochs"),
    "train_coref.train": ("models.coref.train:settings()", "max_sentences"),
    "train_coref.model": ("models.coref.train:settings()", "lstm_size"),
    "report": ("tasks.report.common:settings()", "output"),
    "tracking": ("tasks.core.tracking:settings()", "artifacts"),
}


def _typo(key: str) -> str:
    return key[:-2] + key[-1] + key[-2]  # two letters swapped: epochs -> epocsh


@pytest.mark.parametrize("section", sorted(CASES))
def test_a_typo_is_refused_with_the_closest_key(section, monkeypatch):
    call, key = CASES[section]
    data = copy.deepcopy(config.params())
    node = data
    for part in section.split("."):
        node = node.setdefault(part, {})
    node[_typo(key)] = node.pop(key, 1)
    monkeypatch.setattr(config, "_load", lambda path: data)
    module, expr = call.split(":")
    namespace = __import__(module, fromlist=["_"]).__dict__
    expected = f"{section}.{_typo(key)}: unknown setting (did you mean {key}?)"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        eval(expr, dict(namespace))  # noqa: S307 - the loader named above


def test_a_wrong_type_names_the_key_and_the_type(monkeypatch):
    data = copy.deepcopy(config.params())
    data["train_mage"]["train"]["epochs"] = "ten"
    data["normalize"]["dev_fraction"] = 1.5
    monkeypatch.setattr(config, "_load", lambda path: data)
    from models.mage.train import settings as mage_settings
    from tasks.corpora.ingest import normalize_settings

    with pytest.raises(
        ConfigError, match=r"train_mage\.train\.epochs: expected int, got str 'ten'"
    ):
        mage_settings()
    with pytest.raises(
        ConfigError, match=r"normalize\.dev_fraction: must be in \(0, 1\), got 1\.5"
    ):
        normalize_settings("synthetic")
