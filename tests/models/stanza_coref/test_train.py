"""models/stanza_coref/train.py: a tiny Stanza coreference model trained on the generated
stories by Stanza's own training code, then loaded by a real `stanza.Pipeline` through the
`stanza` annotator (no network, no downloaded Stanza resources)."""

from __future__ import annotations

import copy
import hashlib
import re

import pytest
import torch

from flows.train_stanza_coref import TrainStanzaCorefSettings, sample_documents
from models.coref.data import load_splits
from models.stanza_coref.encoder import TinyEncoderSettings, tiny_encoder, train_wordpiece
from models.stanza_coref.train import (
    MODEL_FILE,
    OPTIMIZER_STATES,
    predict,
    train_and_evaluate,
)
from tasks.annotation import annotators
from tasks.annotation.annotators.base import Doc
from tasks.core import config
from tasks.core.errors import CorefreproError
from tasks.core.schema import DOCUMENTS, MENTIONS
from tasks.core.settings import ConfigError, parse_settings
from tasks.core.storage import write_table
from tasks.corpora import synthetic

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SETTING = "annotate.annotators.stanza.coref_model_path"
# seconds to train: a tiny encoder, a small scorer, a high learning rate, three epochs
TINY = {
    "encoder": "tiny",
    "tiny": {"vocab_size": 200, "hidden_size": 16, "intermediate_size": 32, "max_positions": 128},
    "eval_splits": ["dev"],
    "stanza": {"bert_window_size": 128, "bert_finetune": False, "hidden_size": 32,
               "learning_rate": 3e-2, "train_epochs": 3, "dropout_rate": 0.0},
}  # fmt: skip


def tiny_settings(**overrides) -> TrainStanzaCorefSettings:
    return parse_settings(TrainStanzaCorefSettings, {**TINY, **overrides}, "train_stanza_coref")


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    raw = tmp_path_factory.mktemp("synthetic-raw")
    synthetic.generate(raw, {"n_train": 20, "n_dev": 6, "n_test": 2})
    normalized = synthetic.normalize(raw, {})
    root = tmp_path_factory.mktemp("docs")
    write_table(root / "synthetic" / f"{DOCUMENTS}.parquet", DOCUMENTS, normalized.documents)
    write_table(root / "synthetic" / f"{MENTIONS}.parquet", MENTIONS, normalized.mentions)
    return load_splits([root / "synthetic"])


@pytest.fixture(scope="module")
def trained(splits, tmp_path_factory):
    out = tmp_path_factory.mktemp("stanza-coref")
    return train_and_evaluate(splits, tiny_settings(), out), out


def test_the_checkpoint_is_stanzas_own(trained):
    """Stanza's save_weights format: state dicts per module and the Config as a dict, no
    encoder weights (frozen) and no optimizer state in the kept checkpoint."""
    metrics, out = trained
    assert sorted(p.name for p in out.iterdir()) == ["data", "encoder", MODEL_FILE]
    state = torch.load(out / MODEL_FILE, map_location="cpu", weights_only=True)
    assert {"we", "rough_scorer", "pw", "a_scorer", "sp", "config"} <= set(state)
    assert "bert" not in state and not OPTIMIZER_STATES & set(state)
    cfg = state["config"]
    assert cfg["bert_model"] == str(out / "encoder") and cfg["bert_finetune"] is False
    assert cfg["singletons"] is False and cfg["train_epochs"] == 3
    assert state["epochs_trained"] == metrics["best_epoch"]


def test_metrics_come_from_the_projects_scorer(trained):
    metrics, _ = trained
    dev = metrics["dev"]
    assert dev["documents"] == 6 and 0 < dev["conll_f1"] <= 1
    assert dev["conll_f1"] == pytest.approx((dev["muc_f1"] + dev["bcub_f1"] + dev["ceafe_f1"]) / 3)
    assert "test" not in metrics  # eval_splits: [dev]
    assert [row["epoch"] for row in metrics["stanza_curve"]] == [1, 2, 3]
    assert (
        metrics["encoder"]["encoder"] == "tiny" and len(metrics["encoder"]["weights_sha256"]) == 64
    )
    assert metrics["conversion"]["train"]["documents"] == 20


def test_a_real_pipeline_loads_it_through_the_annotator(trained, splits, monkeypatch):
    """stanza.Pipeline(tokenize,coref, pretokenized, coref_model_path, download_method=None)
    with an empty Stanza resources folder: nothing downloaded is read or written."""
    _, out = trained
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    annotator = annotators.get("stanza", {"coref_model_path": str(out / MODEL_FILE),
                                          "use_gpu": "false"})  # fmt: skip
    pipeline = annotator.load()
    assert sorted(pipeline.processors) == ["coref", "tokenize"]
    assert pipeline.config["coref_model_path"] == str(out / MODEL_FILE)
    assert pipeline.processors["tokenize"].trainer is None  # pretokenized: no tokenizer model
    doc = splits["dev"][0]
    [answer] = annotator.annotate([Doc(doc.doc_id, doc.tokens, doc.sentence_starts)])
    assert answer.mentions and answer.counts["stanza_windows"] == 1
    # the pipeline's chains are the ones the stage scored (the same model, the same words)
    model = pipeline.processors["coref"]._model
    by_cluster: dict[int, list] = {}
    for start, end, cluster in answer.mentions:
        by_cluster.setdefault(cluster, []).append((start, end))
    assert sorted(by_cluster.values()) == sorted(predict(model, doc))


def test_a_missing_or_corrupt_checkpoint_is_one_line_naming_the_setting(tmp_path, trained):
    _, out = trained
    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a checkpoint")
    no_config = tmp_path / "no_config.pt"
    torch.save({"we": {}}, no_config)
    cases = {
        tmp_path / "absent.pt": "does not exist; train one with `dvc repro train_stanza_coref`",
        broken: "is not a readable checkpoint",
        no_config: "is not a Stanza coreference checkpoint",
    }
    for path, problem in cases.items():
        with pytest.raises(CorefreproError) as err:
            annotators.get("stanza", {"coref_model_path": str(path)})
        message = str(err.value)
        assert message.startswith(f"{SETTING}: {path}") and problem in message
        assert "\n" not in message


def test_a_checkpoint_outside_the_allowed_roots_is_refused(monkeypatch, trained):
    _, out = trained
    monkeypatch.delenv("COREFREPRO_CHECKPOINT_ROOTS")
    with pytest.raises(
        CorefreproError, match=re.escape(f"{SETTING}: '{out / MODEL_FILE}' is outside")
    ):
        annotators.check("stanza", {"coref_model_path": str(out / MODEL_FILE)})


def test_an_encoder_folder_gone_is_named(trained, tmp_path):
    """Stanza rebuilds the encoder from the folder its Config names: without it, one line."""
    _, out = trained
    moved = tmp_path / "model"
    moved.mkdir()
    state = torch.load(out / MODEL_FILE, map_location="cpu", weights_only=True)
    state["config"]["bert_model"] = str(tmp_path / "no-encoder")
    torch.save(state, moved / MODEL_FILE)
    with pytest.raises(CorefreproError) as err:
        annotators.get("stanza", {"coref_model_path": str(moved / MODEL_FILE), "use_gpu": "false"})
    assert str(err.value).startswith(f"{SETTING}: Stanza could not load")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"encoder": "no-such-encoder"},
         "train_stanza_coref.encoder: 'no-such-encoder' is neither tiny, minilm, smollm2 nor a "
         "local directory"),
        ({"stanza": {"hidden_sise": 8}},
         "train_stanza_coref.stanza.hidden_sise: unknown setting (did you mean hidden_size?)"),
        ({"stanza": {"bert_window_size": 1024}},
         "train_stanza_coref.stanza.bert_window_size: 1024 exceeds "
         "train_stanza_coref.tiny.max_positions (512)"),
        ({"stanza": {"lora": True}}, "train_stanza_coref.stanza.lora_target_modules: empty"),
        ({"max_documents": {"train": 0}}, "train_stanza_coref.max_documents: must be >= 1"),
        ({"tiny": {"hidden_size": 30, "heads": 4}},
         "train_stanza_coref.tiny.hidden_size: 30 is not a multiple of"),
    ],
)  # fmt: skip
def test_bad_settings_are_one_error_naming_the_setting(monkeypatch, overrides, problem):
    data = copy.deepcopy(config.params())
    for key, value in overrides.items():
        if isinstance(value, dict):
            data["train_stanza_coref"][key] = {**(data["train_stanza_coref"][key] or {}), **value}
        else:
            data["train_stanza_coref"][key] = value
    monkeypatch.setattr(config, "_load", lambda path: data)
    from flows.train_stanza_coref import settings

    with pytest.raises(ConfigError, match=re.escape(problem)):
        settings()


def test_the_stage_says_a_bad_setting_in_one_line(monkeypatch, capsys):
    import contextlib

    from flows import runtime
    from flows.train_stanza_coref import main

    data = copy.deepcopy(config.params())
    data["train_stanza_coref"]["encoder"] = "no-such-encoder"
    monkeypatch.setattr(config, "_load", lambda path: data)
    # not the checkout's stage lock: a real run of the stage may hold it meanwhile
    monkeypatch.setattr(runtime, "one_at_a_time", lambda item: contextlib.nullcontext())

    with pytest.raises(SystemExit) as done:
        main([])
    assert done.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: train_stanza_coref.encoder: 'no-such-encoder' is neither tiny, minilm, smollm2 "
        "nor a local directory"
    ]


def test_documents_are_drawn_per_corpus_and_split_with_the_seed(splits):
    drawn = sample_documents(splits, {"train": 5, "dev": None}, seed=1)
    assert len(drawn["train"]) == 5 and drawn["dev"] == splits["dev"]
    assert drawn["train"] == sorted(drawn["train"], key=lambda d: d.doc_id)
    assert drawn == sample_documents(splits, {"train": 5, "dev": None}, seed=1)
    assert drawn["train"] != sample_documents(splits, {"train": 5}, seed=2)["train"]


def test_the_tiny_encoder_is_the_same_every_time(splits, tmp_path):
    texts = [" ".join(d.tokens) for d in splits["train"]]
    a = train_wordpiece(texts, 120)
    assert a.backend_tokenizer.to_str() == train_wordpiece(texts, 120).backend_tokenizer.to_str()
    assert a.tokenize("kitchen") == ["kitchen"]  # a frequent word, whole
    assert a.tokenize("nehctik") == ["n", *(f"##{c}" for c in "ehctik")]  # spelled in characters
    cfg = TinyEncoderSettings(vocab_size=120, hidden_size=8, heads=2, intermediate_size=8)
    digests = []
    for name in ("a", "b"):
        folder = tiny_encoder(texts, cfg, tmp_path / name, seed=3)
        digests.append({p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                        for p in sorted(folder.path.iterdir())})  # fmt: skip
    assert digests[0] == digests[1]


@pytest.mark.slow
def test_training_twice_gives_the_same_checkpoint(splits, trained, tmp_path):
    metrics, out = trained
    again = train_and_evaluate(splits, tiny_settings(), tmp_path / "again")
    first = torch.load(out / MODEL_FILE, map_location="cpu", weights_only=True)
    second = torch.load(tmp_path / "again" / MODEL_FILE, map_location="cpu", weights_only=True)
    for key in ("we", "rough_scorer", "a_scorer", "sp"):
        assert all(torch.equal(first[key][n], second[key][n]) for n in first[key])
    assert again["dev"] == metrics["dev"]


def test_stanzas_no_span_warnings_are_one_line_of_ours():
    """Issue #59 row 20: Stanza's scorer printed 8 zero-division warnings in the embedded
    default (one per metric and evaluation when the model predicts no spans)."""
    import logging

    from models.stanza_coref.train import _no_spans_said_once

    said: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            said.append(record.getMessage())

    handler = Collect(logging.INFO)
    loggers = [logging.getLogger("stanza"), logging.getLogger("corefrepro.train_stanza_coref")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
    try:
        with _no_spans_said_once(3):
            for metric in ("muc", "b3", "ceafe"):
                loggers[0].warning(f"{metric} got a zero division error because the model "
                                   "predicted no spans!")  # fmt: skip
        loggers[0].warning("another stanza warning")  # outside: untouched
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)
    assert said == ["epoch 3: the model predicted no spans on dev, so muc/b3/ceafe are 0 "
                    "(Stanza's 3 zero-division warnings folded into this line)",
                    "another stanza warning"]  # fmt: skip
