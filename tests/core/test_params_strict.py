"""Every stage reads its params.yaml section through the one strict parser: a typo'd key is
refused, before any work, with its full path and the closest valid key."""

from __future__ import annotations

import copy
import re

import pytest

from tasks.core import config
from tasks.core.errors import CorefreproError
from tasks.core.settings import ConfigError

# section path of the typo -> (the stage's settings loader, the key it misspells)
CASES = {
    "download": ("tasks.corpora.ingest:download_settings('synthetic')", "timeout_s"),
    "normalize": ("tasks.corpora.ingest:normalize_settings('synthetic')", "dev_fraction"),
    "annotate": ("tasks.annotation.runs:settings()", "shard_size"),
    "graphs": ("tasks.graphs.runs:graph_settings()", "edge_types"),
    "view_entitynlm": ("flows.view_entitynlm:settings()", "long_mentions"),
    "view_corelm": ("flows.view_corelm:settings()", "id_scope"),
    "kbest": ("flows.kbest:settings()", "encoder"),
    "lm_features": ("flows.lm_features:settings()", "batch_windows"),
    "train_mage.train": ("flows.train_mage:settings()", "epochs"),
    "train_coref.train": ("flows.train_coref:settings()", "max_sentences"),
    "train_coref.model": ("flows.train_coref:settings()", "lstm_size"),
    "train_stanza_coref.stanza": ("flows.train_stanza_coref:settings()", "hidden_size"),
    "train_corelm.train": ("flows.train_corelm:settings()", "warmup_steps"),
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
    from flows.train_mage import settings as mage_settings
    from tasks.corpora.ingest import normalize_settings

    with pytest.raises(
        ConfigError, match=r"train_mage\.train\.epochs: expected int, got str 'ten'"
    ):
        mage_settings()
    with pytest.raises(
        ConfigError, match=r"normalize\.dev_fraction: must be in \(0, 1\), got 1\.5"
    ):
        normalize_settings("synthetic")


@pytest.mark.parametrize(
    "corpus", sorted(k for k, v in config.params()["normalize"].items() if isinstance(v, dict))
)
def test_every_corpus_section_of_params_yaml_parses(corpus):
    """params.yaml as committed: each corpus's download and normalize namespace is accepted
    (a key added to params.yaml but not to its settings class fails here, not in a run)."""
    from tasks.corpora.ingest import download_settings, normalize_settings

    assert isinstance(normalize_settings(corpus), dict)
    assert isinstance(download_settings(corpus)[1], dict)


# Issue #14.4 / #17.7: the namespaces that were still lenient (a typo only warned, or was
# ignored and the default used): per-corpus download/normalize, derive.<name>, annotators.
NAMESPACE_CASES = [
    ("download.babi", "variants", "tasks.corpora.ingest:download_settings('babi')"),
    ("download.synthetic", "n_train", "tasks.corpora.ingest:download_settings('synthetic')"),
    ("download.cbt", "question_splits", "tasks.corpora.ingest:download_settings('cbt')"),
    ("normalize.inscript", "multi_chain", "tasks.corpora.ingest:normalize_settings('inscript')"),
    ("normalize.cnn", "max_items", "tasks.corpora.ingest:normalize_settings('cnn')"),
    ("derive.synthetic-mix", "candidates", "flows.derive:settings('synthetic-mix')"),
    (
        "annotate.annotators.entity-id",
        "mentions",
        "flows.annotate:plan(settings(), 'synthetic-entity-id')",
    ),
]


@pytest.mark.parametrize(("section", "key", "call"), NAMESPACE_CASES)
def test_a_typo_in_a_per_item_namespace_is_refused(section, key, call, monkeypatch):
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


def test_wrong_types_in_per_item_namespaces_are_config_errors(monkeypatch):
    data = copy.deepcopy(config.params())
    data["normalize"]["cnn"] = {"max_items": "ten"}
    data["download"]["lambada"] = {"train_novels": "yes"}
    data["annotate"]["annotators"]["stanza"]["window_tokens"] = "big"
    monkeypatch.setattr(config, "_load", lambda path: data)
    from tasks.annotation import annotators
    from tasks.corpora.ingest import download_settings, normalize_settings

    with pytest.raises(ConfigError, match=r"normalize\.cnn\.max_items: expected int or None"):
        normalize_settings("cnn")
    with pytest.raises(ConfigError, match=r"download\.lambada\.train_novels: expected bool"):
        download_settings("lambada")
    with pytest.raises(ConfigError, match=r"annotators\.stanza\.window_tokens: expected int"):
        annotators.check("stanza", data["annotate"]["annotators"]["stanza"])


@pytest.mark.parametrize("bad", ["../../outside", "/tmp/outside"])
def test_run_and_corpus_names_that_escape_are_refused_where_params_are_parsed(bad, monkeypatch):
    """Issue #14.3: a run or corpus name becomes data/mentions/<run>, data/docs/<corpus>."""
    from tasks.annotation import runs

    data = copy.deepcopy(config.params())
    data["annotate"]["runs"][bad] = {"corpus": "synthetic", "annotator": "gold"}
    monkeypatch.setattr(config, "_load", lambda path: data)
    with pytest.raises(ConfigError, match=re.escape(f"annotate.runs.{bad} (the key): '{bad}'")):
        runs.settings()
    del data["annotate"]["runs"][bad]
    data["annotate"]["runs"]["ok"] = {"corpus": bad, "annotator": "gold"}
    with pytest.raises(ConfigError, match=re.escape(f"annotate.runs.ok.corpus: '{bad}' is not")):
        runs.settings()
    data["annotate"]["runs"].pop("ok")
    data["train_mage"]["data"] = bad
    from flows.train_mage import settings as mage_settings

    with pytest.raises(ConfigError, match=re.escape(f"train_mage.data: '{bad}' is not a safe")):
        mage_settings()


# Issue #30.2: bad numbers were accepted and failed later as tracebacks, some after a whole
# training. Each is refused by the parser, naming the key, before any work.
# (section path, key, bad value, the stage's settings loader, the expected problem)
BAD_NUMBERS = [
    ("train_coref.train", "lr", -0.001, "flows.train_coref:settings()", "must be > 0, got -0.001"),
    ("train_coref.train", "epochs", 0, "flows.train_coref:settings()", "must be >= 1, got 0"),
    ("train_coref.train", "decay_rate", 1.5, "flows.train_coref:settings()",
     "must be <= 1, got 1.5"),
    ("train_coref.model", "dropout", 1.5, "flows.train_coref:settings()", "must be < 1, got 1.5"),
    ("train_coref.model", "lstm_size", 0, "flows.train_coref:settings()", "must be >= 1, got 0"),
    ("train_coref.model", "top_span_ratio", 0, "flows.train_coref:settings()",
     "must be > 0, got 0.0"),
    ("train_coref", "seeds", [], "flows.train_coref:settings()", "needs at least 1 item(s), got 0"),
    ("kbest", "k", 0, "flows.kbest:settings()", "must be >= 1, got 0"),
    ("kbest", "threads", 0, "flows.kbest:settings()", "must be >= 1, got 0"),
    ("annotate", "batch_size", 0, "tasks.annotation.runs:settings()", "must be >= 1, got 0"),
    ("annotate", "workers", 0, "tasks.annotation.runs:settings()", "must be >= 1, got 0"),
    ("tracking", "max_checkpoint_mb", -1, "tasks.core.tracking:settings()",
     "must be >= 0, got -1.0"),
    ("train_corelm.train", "lr", -1e-5, "flows.train_corelm:settings()",
     "must be > 0, got -1e-05"),
    ("train_corelm.train", "batch_size", 0, "flows.train_corelm:settings()",
     "must be >= 1, got 0"),
    ("train_corelm.gating", "dropout", 1.5, "flows.train_corelm:settings()",
     "must be < 1, got 1.5"),
    ("train_corelm.gating", "n_heads", 5, "flows.train_corelm:settings()",
     "5 does not divide the backbone's width 64 (train_corelm.tiny)"),
    ("train_corelm.train", "block_size", 512, "flows.train_corelm:settings()",
     "512 is longer than the backbone's context 256 (train_corelm.tiny)"),
    ("train_corelm.tiny", "n_head", 3, "flows.train_corelm:settings()",
     "3 does not divide n_embd 64"),
    ("train_mage.train", "lr", -0.001, "flows.train_mage:settings()", "must be > 0, got -0.001"),
    ("train_mage.train", "batch_size", 0, "flows.train_mage:settings()", "must be >= 1, got 0"),
    ("train_mage.train", "train_from_dev", 1.0, "flows.train_mage:settings()",
     "must be < 1, got 1.0"),
    ("train_mage.model_defaults", "dropout", 1.5, "flows.train_mage:settings()",
     "must be < 1, got 1.5"),
    ("graphs", "edge_types", [], "tasks.graphs.runs:graph_settings()",
     "needs at least 1 item(s), got 0"),
    ("view_entitynlm", "l_max", 0, "flows.view_entitynlm:settings()",
     "must be >= 1, got 0"),
    ("train_entitynlm.evaluation", "samples", 0, "flows.train_entitynlm:settings()",
     "must be >= 1, got 0"),
    ("train_entitynlm.evaluation", "sampling_seeds", [], "flows.train_entitynlm:settings()",
     "needs at least 1 item(s), got 0"),
    ("train_entitynlm.evaluation", "samples_grid", [], "flows.train_entitynlm:settings()",
     "needs at least 1 item(s), got 0"),
    ("train_entitynlm.evaluation", "samples_grid", [0, 100], "flows.train_entitynlm:settings()",
     "every N must be >= 1, got 0"),
    ("train_entitynlm.evaluation", "samples_grid", [10, 1000], "flows.train_entitynlm:settings()",
     "must hold the headline N, samples = 100"),
    ("train_entitynlm.train", "lr", -0.001, "flows.train_entitynlm:settings()",
     "must be > 0, got -0.001"),
    ("train_entitynlm.model", "dropout", 1.5, "flows.train_entitynlm:settings()",
     "must be < 1, got 1.5"),
    ("rerank_entitynlm", "batch", 0, "flows.rerank_entitynlm:settings()",
     "must be >= 1, got 0"),
    ("rerank_entitynlm", "checkpoint", "/etc/passwd", "flows.rerank_entitynlm:settings()",
     "'/etc/passwd' is outside the project's artifacts"),
    ("entity_prediction.entitynlm", "checkpoint", "../../x",
     "flows.entity_prediction:settings()",
     "'../../x' is outside the project's artifacts"),
]  # fmt: skip


@pytest.mark.parametrize(("section", "key", "value", "call", "problem"), BAD_NUMBERS,
                         ids=[f"{c[0]}.{c[1]}={c[2]}" for c in BAD_NUMBERS])  # fmt: skip
def test_a_bad_number_is_refused_naming_the_key(section, key, value, call, problem, monkeypatch):
    data = copy.deepcopy(config.params())
    node = data
    for part in section.split("."):
        node = node.setdefault(part, {})
    node[key] = value
    monkeypatch.setattr(config, "_load", lambda path: data)
    module, expr = call.split(":")
    namespace = __import__(module, fromlist=["_"]).__dict__
    with pytest.raises(CorefreproError) as err:
        eval(expr, dict(namespace))  # noqa: S307 - the loader named above
    lines = getattr(err.value, "problems", None) or str(err.value).splitlines()
    assert any(line.startswith(f"{section}.{key}: {problem}") for line in lines), lines


def test_slots_and_training_mentions_follow_one_nesting_rule(monkeypatch):
    """Entity prediction takes the EntityNLM view's nesting rule for its corpus
    (view_entitynlm.nested / nested_for); entity_prediction.nested may only restate it."""
    from flows.entity_prediction import protocol, settings

    data = copy.deepcopy(config.params())
    monkeypatch.setattr(config, "_load", lambda path: data)
    assert protocol(settings(), "synthetic").nested == "enclosing"
    assert protocol(settings(), "inscript").nested == "heads"  # nested_for
    data["entity_prediction"]["nested"] = "heads"
    with pytest.raises(ConfigError, match=r"entity_prediction.nested: 'heads' differs from "
                                          r"the EntityNLM view's rule for synthetic "
                                          r"\('enclosing'"):  # fmt: skip
        protocol(settings(), "synthetic")
    assert protocol(settings(), "inscript").nested == "heads"
    data["view_entitynlm"]["nested"] = "heads"
    assert protocol(settings(), "synthetic").nested == "heads"


@pytest.mark.parametrize(
    ("section", "call"),
    [
        ("annotate", "tasks.annotation.runs:settings()"),
        ("download", "tasks.corpora.ingest:download_settings('synthetic')"),
        ("lm_features", "flows.lm_features:settings()"),
    ],
)
@pytest.mark.parametrize("value", ["/tmp/corefrepro-cache", "../elsewhere", "data/../.."])
def test_a_cache_outside_the_data_roots_is_refused_where_params_are_parsed(
    section, call, value, monkeypatch
):
    """Issue #59 row 24: `annotate.cache_dir: /tmp/...` was refused only when the first shard
    was written, after annotating it and one retry."""
    data = copy.deepcopy(config.params())
    data[section]["cache_dir"] = value
    monkeypatch.setattr(config, "_load", lambda path: data)
    module, expr = call.split(":")
    expected = f"{section}.cache_dir: {value!r} is outside the data roots"
    with pytest.raises(ConfigError, match=re.escape(expected)):
        eval(expr, dict(__import__(module, fromlist=["_"]).__dict__))  # noqa: S307


def test_a_cache_outside_the_data_roots_stops_annotate_before_any_shard(monkeypatch, capsys):
    from flows import annotate as annotate_flow

    data = copy.deepcopy(config.params())
    data["annotate"]["cache_dir"] = "/tmp/corefrepro-cache"
    monkeypatch.setattr(config, "_load", lambda path: data)
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    shards = []
    monkeypatch.setattr(annotate_flow.annotate_shard, "fn", lambda **kw: shards.append(kw))
    with pytest.raises(SystemExit) as stop:
        annotate_flow.main(["--run", "synthetic-gold"])
    assert stop.value.code == 2 and shards == []
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: annotate.cache_dir: '/tmp/corefrepro-cache' is outside")
