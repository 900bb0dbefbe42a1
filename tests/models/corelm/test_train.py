"""CoreLM's training (App. A on the shared loop) and the stage item, on a tiny backbone."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import flows.train_corelm as stage
from models.corelm import train
from models.corelm.lm import corelm
from tasks.core import config
from tasks.core.errors import CorefreproError
from tasks.core.settings import ConfigError, parse_settings
from tasks.evaluation.lm import perplexity

STORIES = [
    ("Mary went to the kitchen . She picked up the apple . Mary ate it .",
     [(0, 1, 0), (6, 7, 0), (12, 13, 0), (3, 5, 1), (9, 11, 2), (14, 15, 2)]),
    ("John travelled to the garden . Then he dropped the football there .",
     [(0, 1, 0), (7, 8, 0), (3, 5, 1), (11, 12, 1)]),
]  # fmt: skip


@pytest.fixture(autouse=True)
def _repo(tmp_path, monkeypatch):
    """tmp_path is the repository: corpora are named, under tmp_path/data/docs/<name>."""
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)


def _corpus(root, name="toy", n=12):
    """data/docs/<name>: documents + gold mentions (a corpus the stage reads directly)."""
    docs, mentions = [], []
    for i in range(n):
        text, spans = STORIES[i % 2]
        split = "train" if i < n - 4 else "dev" if i < n - 1 else "test"
        doc_id = f"{name}/{i:03d}"
        tokens = text.split()
        docs.append({"doc_id": doc_id, "split": split, "tokens": tokens, "sentence_starts": [0]})
        mentions += [{"doc_id": doc_id, "start": s, "end": e, "cluster": c, "annotator": "gold"}
                     for s, e, c in spans]  # fmt: skip
    folder = root / "data" / "docs" / name
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(docs), folder / "documents.parquet")
    pq.write_table(pa.Table.from_pylist(mentions), folder / "mentions.parquet")
    return name


def _lambada(root):
    folder = root / "data" / "docs" / "lambada"
    folder.mkdir(parents=True)
    docs = [{"doc_id": f"l/{i}", "split": "dev", "tokens": ["Mary", "went", "to", "the", "kitchen", ".", "She", "ate", "the"],
             "sentence_starts": [0]} for i in range(3)]  # fmt: skip
    items = [{"item_id": d["doc_id"], "doc_id": d["doc_id"], "split": "dev", "task": "lambada",
              "context_end": 9, "query": [], "answer": "apple"} for d in docs]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(docs), folder / "documents.parquet")
    pq.write_table(pa.Table.from_pylist(items), folder / "items.parquet")
    return "lambada"


def _settings(corpus, **train_overrides):
    return parse_settings(stage.TrainCoreLMSettings, {
        "backbone": "tiny", "data": [corpus],
        "tiny": {"vocab_size": 300, "n_layer": 1, "n_head": 2, "n_embd": 32, "n_positions": 64},
        "gating": {"n_heads": 2},
        "train": {"epochs": 3, "batch_size": 4, "block_size": 32, "lr": 3e-3, "warmup_steps": 2,
                  "device": "cpu", "threads": 1, **train_overrides},
        "eval": {"block_size": 64},
    }, "test")  # fmt: skip


@pytest.mark.parametrize("mode", ["paper", "cached"])
def test_a_tiny_run_lowers_the_dev_loss(tmp_path, mode):
    cfg = _settings(_corpus(tmp_path), mode=mode, epochs=6, lr=1e-2)
    backbone = stage.backbone_of(cfg)
    data = train.load_data(stage.data_sources(cfg.data), backbone.tokenizer)
    assert data.n_entities == 6 * 3 + 6 * 2  # ids unique per (document, cluster)
    assert cfg.gating.entity_vectors == "mention_mean"  # the default: no table to learn
    model = train.build_model(backbone, cfg.gating, cfg.train.seed, "corelm", data.n_entities)
    recipe = train.CoreLMRecipe(model, data, backbone, cfg.train, tmp_path / "out")
    from tasks.training.loop import Precision

    before = recipe.evaluate("dev", Precision.choose(cfg.train))["loss"]
    _, facts = train.train_model("corelm", cfg.gating, cfg.train, backbone, data, tmp_path / mode)
    after = facts["history"][-1]["dev_loss"]
    assert after < before - 0.05, (before, after)
    if mode == "cached":
        assert (tmp_path / mode / "hidden_cache.pt").is_file()


def test_ft_and_corelm_train_the_same_steps_on_the_same_windows(tmp_path):
    cfg = _settings(_corpus(tmp_path), epochs=1)
    backbone = stage.backbone_of(cfg)
    data = train.load_data(stage.data_sources(cfg.data), backbone.tokenizer)
    recipes = {m: train.CoreLMRecipe(train.build_model(backbone, cfg.gating, cfg.train.seed, m, data.n_entities), data,
                                     backbone, cfg.train, tmp_path)
               for m in ("ft", "corelm")}  # fmt: skip
    batches = {m: [b["input_ids"] for b in r.batches(1)] for m, r in recipes.items()}
    assert len(batches["ft"]) == len(batches["corelm"]) > 1
    assert all(torch.equal(a, b) for a, b in zip(batches["ft"], batches["corelm"], strict=True))
    n_ft = sum(p.numel() for p in recipes["ft"].trainable())
    n_corelm = sum(p.numel() for p in recipes["corelm"].trainable())
    assert n_corelm > n_ft  # + gating layer and entity table


def _stage(monkeypatch, cfg):
    """flows/train_corelm.py with these settings, writing under tmp_path (the repository),
    untracked."""
    import flows.train_corelm as flow

    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr(flow, "settings", lambda: cfg)
    monkeypatch.setattr(flow, "train_model_task", lambda m: flow.train_model(m, track=False))
    return flow


def test_stage_items_write_metrics_for_the_three_models(tmp_path, monkeypatch):
    cfg = _settings(_corpus(tmp_path), epochs=1)
    cfg.eval.lambada = _lambada(tmp_path)
    flow = _stage(monkeypatch, cfg)
    for model in train.MODELS:
        out = tmp_path / "artifacts" / "train_corelm"
        m = flow.train_corelm(model)
        saved = json.loads((tmp_path / "metrics" / "train_corelm" / f"{model}.json").read_text())
        assert saved["model"] == model and saved["heldout"][model]["n_words"] > 0
        assert {"full_word", "last_token"} <= {k.split("/")[1] for k in m["lambada"]}
        items = json.loads((out / model / "items.json").read_text())
        assert len(items[f"lambada/{model}/full_word"]) == 3
        # the artifact alone rebuilds the model the stage evaluated (issue #28)
        lm = corelm(checkpoint=out / model)
        heldout = train.load_data(stage.data_sources(cfg.data), lm.tokenizer).split(
            "test", layer0=True
        )
        texts = [" ".join(i.words) for i in heldout]
        ppl = perplexity(lm, texts).token_perplexity
        assert ppl == pytest.approx(saved["heldout"][model]["token_perplexity"], rel=1e-6)
    assert "corelm+coref" in saved["heldout"]
    assert saved["training"]["steps"] > 0


def test_the_metrics_state_the_seed_and_what_each_figure_was_scored_on(tmp_path, monkeypatch):
    """Issue #58.4: metrics/train_corelm/<model>.json states the training seed and, for each
    benchmark scored, its corpus, split and size (the held-out test documents, LAMBADA's dev
    passages; WikiText and CBT not evaluated: absent), so that a results record is written
    from it alone (tasks/results/record.py reads no params.yaml and no models code)."""
    from tasks.results import record as record_cli

    cfg = _settings(_corpus(tmp_path), epochs=1, seed=7)
    cfg.eval.lambada = _lambada(tmp_path)
    flow = _stage(monkeypatch, cfg)
    flow.train_corelm("corelm")
    saved = json.loads((tmp_path / "metrics" / "train_corelm" / "corelm.json").read_text())
    test_words = len(STORIES[11 % 2][0].split())  # the one test document (_corpus)
    assert saved["seed"] == 7
    assert saved["eval_splits"] == {
        "heldout": {"corpus": "toy", "split": "test", "size": 1, "unit": "documents",
                    "words": test_words},
        "lambada": {"corpus": "lambada", "split": "dev", "task": "lambada", "size": 3,
                    "unit": "passages"},
    }  # fmt: skip
    assert saved["heldout"]["corelm+coref"]["n_texts"] == 1
    assert saved["lambada"]["corelm/full_word"]["n"] == 3

    monkeypatch.setattr(record_cli, "overrides", lambda root, stage=None: [])
    monkeypatch.setattr(record_cli, "mlflow_runs", lambda stage, item, seeds: {})
    monkeypatch.setattr(record_cli, "git_sha", lambda root: "abc")
    record = record_cli.build("train_corelm", "corelm", preset="p", scale="cpu", table="Table 1",
                              row="CoreLM", data=[], root=tmp_path)  # fmt: skip
    m = record["metrics"]
    assert m["test_ppl"]["per_seed"] == {
        "7": round(saved["heldout"]["corelm+coref"]["word_perplexity"], 4)
    }
    assert (m["test_ppl"]["split"], m["test_ppl"]["split_size"]) == ("test", 1)
    assert m["test_ppl_no_entities"]["per_seed"]["7"] == round(
        saved["heldout"]["corelm"]["word_perplexity"], 4
    )
    assert (m["lambada_accuracy"]["split"], m["lambada_accuracy"]["split_size"]) == ("dev", 3)
    assert not any(k.startswith(("wikitext", "cbt")) for k in m)
    assert record["epochs"] == {"7": {"best": 1, "run": 1}}


def test_accumulated_batches_count_as_one_optimizer_step(tmp_path):
    """train.accumulate: the warm-up and decay count optimizer steps, and so does the budget."""
    cfg = _settings(_corpus(tmp_path), epochs=1, accumulate=2, batch_size=1)
    backbone = stage.backbone_of(cfg)
    data = train.load_data(stage.data_sources(cfg.data), backbone.tokenizer)
    _, facts = train.train_model("ft", cfg.gating, cfg.train, backbone, data, tmp_path / "ft")
    batches = facts["batches"]
    assert batches > 2 and facts["steps"] == -(-batches // 2)
    assert facts["effective_batch_size"] == 2 * cfg.train.batch_size


def test_held_out_perplexity_is_reported_on_test_not_on_the_selection_split(tmp_path):
    """Select on dev, report the held-out test split (the old default reported dev, the very
    split the best epoch was chosen on)."""
    cfg = _settings(_corpus(tmp_path), epochs=2)
    from flows.train_corelm import train_model

    m = train_model("corelm", cfg, out_dir=tmp_path / "art", track=False)
    words = [len(STORIES[i % 2][0].split()) for i in range(12)]
    test_words, dev_words = words[11], sum(words[8:11])  # 1 test, 3 dev documents
    assert test_words != dev_words
    assert m["heldout_split"] == "test" and m["selection_split"] == "dev"
    assert (
        m["heldout"]["corelm"]["n_words"] == m["heldout"]["corelm+coref"]["n_words"] == test_words
    )
    cfg.eval.heldout_split = "dev"  # the old behaviour, kept as an option
    old = train_model("zeroshot", cfg, out_dir=tmp_path / "z", track=False)
    assert old["heldout"]["zeroshot"]["n_words"] == dev_words


def test_ft_is_frozen_like_corelm_by_default_and_fully_fine_tuned_as_an_option(tmp_path):
    cfg = _settings(_corpus(tmp_path), epochs=1)
    backbone = stage.backbone_of(cfg)
    data = train.load_data(stage.data_sources(cfg.data), backbone.tokenizer)

    def trainable(ft_backbone: str) -> set[str]:
        cfg.train.ft_backbone = ft_backbone
        model = train.build_model(backbone, cfg.gating, cfg.train.seed, "ft", data.n_entities)
        recipe = train.CoreLMRecipe(model, data, backbone, cfg.train, tmp_path)
        ids = {id(p) for p in recipe.trainable()}
        return {n for n, p in model.backbone.named_parameters() if id(p) in ids}

    frozen, full = trainable("frozen"), trainable("full")
    assert not any(".h." in n for n in frozen) and {"transformer.wte.weight"} <= frozen
    assert full == {n for n, _ in backbone.model.named_parameters()}
    with pytest.raises(ConfigError, match="ft_backbone"):
        _settings("toy", mode="cached", ft_backbone="full")


def test_gate_and_entity_settings_reach_the_model(tmp_path):
    cfg = _settings(_corpus(tmp_path), epochs=1)
    cfg.gating.gate, cfg.gating.norm, cfg.gating.entity_vectors = (
        "entity_ceiling",
        "entity_path",
        "table",
    )
    backbone = stage.backbone_of(cfg)
    data = train.load_data(stage.data_sources(cfg.data), backbone.tokenizer)
    model = train.build_model(backbone, cfg.gating, cfg.train.seed, "corelm", data.n_entities)
    assert (model.gating.gate_form, model.gating.norm) == ("entity_ceiling", "entity_path")
    assert model.entities is not None and model.train_entity_mode == "table"
    with pytest.raises(ConfigError, match="flow_rate"):
        parse_settings(stage.TrainCoreLMSettings, {"gating": {"flow_rate": 1.5}}, "test")


def test_a_stride_longer_than_the_scoring_window_is_refused():
    base = {"backbone": "tiny", "gating": {"n_heads": 2}, "train": {"block_size": 32},
            "tiny": {"vocab_size": 300, "n_layer": 1, "n_head": 2, "n_embd": 32,
                     "n_positions": 64}}  # fmt: skip
    for ev in ({"stride": 65}, {"block_size": 16, "stride": 17}, {"block_size": 65}):
        with pytest.raises(ConfigError):
            parse_settings(stage.TrainCoreLMSettings, {**base, "eval": ev}, "test")
    ok = parse_settings(stage.TrainCoreLMSettings, {**base, "eval": {"stride": 64}}, "test")
    assert ok.eval.block_size is None and ok.eval.stride == 64


def test_an_annotation_run_s_view_names_its_corpus(tmp_path):
    """A run's view (data/graphs/<run>/corelm.parquet) says which corpus its documents are
    in (the view stage's metadata), so training reads no annotation settings; a view without
    it is one error naming the file."""
    from tasks.core.schema import CORELM_VIEW
    from tasks.core.storage import write_table
    from tasks.graphs.views import build_corelm_view

    corpus = _corpus(tmp_path)
    folder = tmp_path / "data" / "docs" / corpus
    view = build_corelm_view(pq.read_table(folder / "documents.parquet"),
                             pq.read_table(folder / "mentions.parquet"))  # fmt: skip
    path = tmp_path / "data" / "graphs" / "toy-run" / "corelm.parquet"
    write_table(path, CORELM_VIEW, view.rows, {"corpus": corpus, "run": "toy-run"})
    cfg = _settings("toy-run")
    backbone = stage.backbone_of(cfg)
    from_run = train.load_data(stage.data_sources(["toy-run"]), backbone.tokenizer)
    from_corpus = train.load_data(stage.data_sources([corpus]), backbone.tokenizer)
    assert len(from_run.documents) == 12 and from_run.documents == from_corpus.documents
    assert from_run.n_entities == from_corpus.n_entities

    write_table(path, CORELM_VIEW, view.rows)
    with pytest.raises(CorefreproError, match=r"corelm.parquet: no corpus in its metadata"):
        stage.data_sources(["toy-run"])
