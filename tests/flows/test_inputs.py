"""flows/inputs.py: a training item depends on a digest of exactly what it reads (#54.3)."""

from __future__ import annotations

import dataclasses
import json

import yaml

import flows.inputs as inputs
import flows.train_coref as coref_stage
import flows.train_mage as mage_stage
from tasks.core import config
from tests.conftest import REPO_ROOT


def _corpus(root, name: str, text: str = "x") -> None:
    folder = root / "data/docs" / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "documents.parquet").write_text(f"{name} {text}")


def _coref_run(tmp_path, monkeypatch, corpora) -> bytes:
    cfg = dataclasses.replace(coref_stage.settings(), corpora=list(corpora))
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(coref_stage, "settings", lambda: cfg)
    inputs.inputs.fn("train_coref", "baseline")
    return inputs.inputs_path("train_coref", "baseline").read_bytes()


def test_adding_a_corpus_changes_only_the_items_that_read_it(tmp_path, monkeypatch):
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    for name in ("gum", "litbank"):
        _corpus(tmp_path, name)
    before = _coref_run(tmp_path, monkeypatch, ["gum", "litbank"])
    assert sorted(json.loads(before)) == ["data/docs/gum", "data/docs/litbank"]
    _corpus(tmp_path, "lambada")  # a corpus train_coref does not read
    assert _coref_run(tmp_path, monkeypatch, ["gum", "litbank"]) == before
    _corpus(tmp_path, "gum", "changed")  # one it reads
    assert _coref_run(tmp_path, monkeypatch, ["gum", "litbank"]) != before


def test_a_mage_model_entry_depends_on_its_own_graph_run(tmp_path, monkeypatch):
    cfg = mage_stage.settings()
    models = {**cfg.models, "ga-sentence": {**(cfg.models.get("ga") or {}), "data": "other"}}
    cfg = dataclasses.replace(cfg, models=models)
    monkeypatch.setattr(mage_stage, "settings", lambda: cfg)
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in inputs.mage_inputs("ga-sentence")] == [
        "data/graphs/other/graphs.parquet"
    ]
    assert inputs.mage_inputs("ga")[0].parent.name == cfg.data


def test_training_items_depend_on_their_inputs_file_not_on_whole_folders():
    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    deps = {name: (stage.get("do") or stage)["deps"] for name, stage in stages.items()}
    assert deps["train_coref"][0] == "data/inputs/train_coref/${key}.json"
    assert "data/inputs/train_mage/${item.model}.json" in deps["train_mage"]
    assert "data/inputs/train_entitynlm.json" in deps["train_entitynlm"]
    assert "data/inputs/train_corelm.json" in deps["train_corelm"]
    assert "data/inputs/train_coref/${compare_coref.b}.json" in deps["compare_coref"]
    for name in ("train_coref", "train_stanza_coref", "train_mage", "train_entitynlm",
                 "train_corelm", "compare_coref"):  # fmt: skip
        assert not {"data/docs", "data/features", "data/graphs", "data/raw"} & set(deps[name]), name


def test_entitynlm_and_corelm_read_their_runs_views_not_every_graph(tmp_path, monkeypatch):
    import flows.train_corelm as corelm_stage
    import flows.train_entitynlm as entitynlm_stage

    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    cfg = dataclasses.replace(entitynlm_stage.settings(), runs=["gum-gold"])
    monkeypatch.setattr(entitynlm_stage, "settings", lambda: cfg)
    assert [p.relative_to(tmp_path).as_posix() for p in inputs.entitynlm_inputs("rnnlm")] == [
        "data/graphs/gum-gold/entitynlm.parquet"
    ]
    _corpus(tmp_path, "gum")
    (tmp_path / "data/docs/gum/mentions.parquet").write_text("gold")  # a corpus source's mentions
    _corpus(tmp_path, "lambada")
    (tmp_path / "data/raw/lambada").mkdir(parents=True)
    ccfg = corelm_stage.settings()
    ccfg = dataclasses.replace(
        ccfg, data=["gum"], eval=dataclasses.replace(ccfg.eval, lambada="lambada")
    )
    monkeypatch.setattr(corelm_stage, "settings", lambda: ccfg)
    got = [p.relative_to(tmp_path).as_posix() for p in inputs.corelm_inputs("ft")]
    assert got == ["data/docs/gum", "data/docs/lambada", "data/raw/lambada"]  # no other corpus
