"""The entity_prediction stage's choices (flows/entity_prediction.py): which
test slots are scored (Modi et al.'s released targets or the rule), which predictors run on
which split, and its settings as params.yaml gives them."""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import pytest

from flows import entity_prediction as stage
from tasks.core import config
from tasks.core.settings import ConfigError, parse_settings
from tasks.evaluation import entity_prediction as ep


def _doc(doc_id: str, split: str, n_sent: int = 5) -> dict:
    tokens = [f"w{i}" for i in range(4 * n_sent)]
    return {"doc_id": doc_id, "split": split, "tokens": tokens,
            "sentence_starts": list(range(0, len(tokens), 4))}  # fmt: skip


def _m(doc_id: str, start: int, cluster: int) -> dict:
    return {"doc_id": doc_id, "start": start, "end": start + 1, "cluster": cluster,
            "annotator": "gold"}  # fmt: skip


DOCS = [_doc("a", "test"), _doc("b", "test"), _doc("c", "dev")]
GOLD = [_m(d, t, c) for d in ("a", "b", "c") for t, c in ((0, 0), (5, 1), (9, 0), (13, 2))]
RELEASE = {"a": {"1_1": ("P1_x", ("P1_x",) * 20), "4_2": ("P1_z", ("P1_x",) * 20)},
           "b": {"3_2": ("P1_x", ("P1_y",) * 11 + ("P1_x",) * 9)},
           "z": {"3_1": ("P1_x", ("P1_x",))}}  # fmt: skip


def _settings(**kw) -> stage.EntityPredictionSettings:
    return stage.EntityPredictionSettings(**kw)


def test_the_release_gives_the_test_slots_and_the_rule_is_compared(caplog):
    caplog.set_level(logging.INFO, logger="corefrepro.entity_prediction")
    rules = ep.ProtocolSettings()
    rule = ep.slots(DOCS, GOLD, "test", rules)
    got, info = stage.choose_test_slots(_settings(), rules, DOCS, GOLD, rule,
                                        (RELEASE, Path("m/hp.json")))  # fmt: skip
    assert [(s.doc_id, s.start, s.target.key) for s in got] == [
        ("a", 0, "1_1"), ("a", 13, "4_2"), ("b", 9, "3_2")]  # fmt: skip
    assert info["set"] == "released" and info["file"] == "hp.json"
    c = info["comparison"]
    assert (c["released"], c["rule"], c["rule_misses"], c["rule_extra"]) == (
        3,
        4,
        1,
        2,
    )  # the rule misses a:0 (sentence 1), adds a:9, b:13
    assert "m/hp.json: 1 released stories are not among the test documents" in caplog.text
    assert "the rule picks 4 there, missing 1, adding 2" in caplog.text


def test_the_rule_serves_without_a_release_or_where_it_lacks_a_test_story(caplog):
    caplog.set_level(logging.INFO, logger="corefrepro.entity_prediction")
    rules = ep.ProtocolSettings()
    rule = ep.slots(DOCS, GOLD, "test", rules)
    assert stage.choose_test_slots(_settings(), rules, DOCS, GOLD, rule, None) == (
        rule, {"set": "rule", "why": "no release"})  # fmt: skip
    lacking = {"a": RELEASE["a"]}
    got, info = stage.choose_test_slots(_settings(), rules, DOCS, GOLD, rule,
                                        (lacking, Path("hp.json")))  # fmt: skip
    assert got is rule and info == {"set": "rule", "why": "hp.json lacks 1 test stories"}
    assert "hp.json lacks 1 of the 2 test stories (e.g. b); the test slots follow the rule" in (
        caplog.text)  # fmt: skip
    got, info = stage.choose_test_slots(_settings(test_slots="rule"), rules, DOCS, GOLD, rule,
                                        (RELEASE, Path("hp.json")))  # fmt: skip
    assert got is rule and info["why"] == "test_slots: rule"


def test_the_human_row_runs_on_released_slots_only():
    rules = ep.ProtocolSettings()
    by_split = {"dev": ep.slots(DOCS, GOLD, "dev", rules)}
    by_split["test"], _ = stage.choose_test_slots(_settings(), rules, DOCS, GOLD, [],
                                                  (RELEASE, Path("hp.json")))  # fmt: skip
    rows, results = stage._predict([ep.AlwaysNew(), ep.HumanMajority()], DOCS, by_split, "x")
    assert set(results["always_new"]) == {"dev", "test"} and set(results["human"]) == {"test"}
    # a: "1_1" new and voted P1_x (true: right), "4_2" voted P1_x for P1_z: entity 0, wrong;
    # b: the vote P1_y names no target's referent: new, and the slot's entity 0 is old: wrong
    assert results["human"]["test"]["correct"] == 1
    assert sum(r["predictor"] == "human" for r in rows) == 3


def test_params_give_the_papers_baseline_and_the_rich_row(monkeypatch):
    cfg = stage.settings()
    assert cfg.test_slots == "released"
    assert (cfg.shallow.features, cfg.shallow.extra_rows) == ("recency_frequency",
                                                             {"shallow-rich": "rich"})  # fmt: skip
    data = copy.deepcopy(config.params())
    monkeypatch.setattr(config, "_load", lambda path: data)
    data["entity_prediction"]["test_slots"] = "targets"
    data["entity_prediction"]["shallow"]["extra_rows"] = {"always_new": "rich"}
    with pytest.raises(ConfigError) as err:
        stage.settings()
    assert "entity_prediction.test_slots" in str(err.value)
    assert "entity_prediction.shallow.extra_rows.always_new: a row name" in str(err.value)
    assert parse_settings(ep.ShallowSettings, {"features": "rich", "extra_rows": {}}, "s")
