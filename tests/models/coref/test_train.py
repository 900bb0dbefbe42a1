"""models/coref/data.py, models/coref/train.py and flows/train_coref.py on the handmade corpus."""

from __future__ import annotations

import json
import random

import pytest

from models.coref.data import (
    CorefDocument,
    build_vocab,
    crop_document,
    load_pretrained,
    load_splits,
    resolve_vectors,
    tensorize,
)
from models.coref.train import (
    BEST,
    CheckpointMismatchError,
    checkpoint_config,
    evaluate,
    load_checkpoint,
    resolve_model,
    restore,
    train_and_evaluate,
)
from tasks.annotation import annotators
from tasks.annotation.annotators.base import Doc
from tasks.core.errors import CorefreproError, DataError
from tasks.core.fetch import DownloadSettings
from tasks.core.schema import DOCUMENTS, MENTIONS
from tasks.core.settings import parse_settings
from tasks.core.storage import write_table
from tasks.corpora import handmade

TINY = {
    "embedding_dim": 16,
    "char_filters": 4,
    "lstm_size": 16,
    "ffnn_size": 32,
    "feature_size": 4,
    "asl_mlp_size": 8,
    "max_antecedents": 20,
    "mention_loss_weight": 1.0,
}
FAST = {"epochs": 1, "lr": 3e-3, "log_every_s": 1e9}


# one torch thread: deterministic float sums and no spinning on a busy 2-core machine
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    """The handmade corpus made and normalized as the pipeline does, read back from Parquet."""
    raw = tmp_path_factory.mktemp("handmade-raw")
    handmade.generate(raw, {})
    normalized = handmade.normalize(raw, {})
    root = tmp_path_factory.mktemp("docs")
    write_table(root / "handmade" / f"{DOCUMENTS}.parquet", DOCUMENTS, normalized.documents)
    write_table(root / "handmade" / f"{MENTIONS}.parquet", MENTIONS, normalized.mentions)
    return load_splits([root / "handmade"]), normalized


@pytest.fixture(scope="module")
def trained(splits, tmp_path_factory):
    """A baseline trained to overfit the four train documents (dev = train, to measure fit)."""
    docs, _ = splits
    out = tmp_path_factory.mktemp("overfit")
    model_cfg = {**TINY, "dropout": 0.0, "lexical_dropout": 0.0}
    train_cfg = {**FAST, "epochs": 30, "seed": 1}
    metrics = train_and_evaluate(
        docs["train"], docs["train"], docs["test"], model_cfg, train_cfg, out
    )
    return metrics, out


# --------------------------------------------------------------------------- data


def test_corpus_reading_drops_singletons_and_keeps_splits(splits):
    docs, normalized = splits
    assert {s: len(d) for s, d in docs.items()} == {"train": 4, "dev": 1, "test": 1}
    sizes: dict[tuple[str, int], int] = {}
    for m in normalized.mentions:
        sizes[m["doc_id"], m["cluster"]] = sizes.get((m["doc_id"], m["cluster"]), 0) + 1
    expected = sum(1 for n in sizes.values() if n > 1)
    assert sum(len(d.clusters) for split in docs.values() for d in split) == expected
    assert all(len(c) > 1 for split in docs.values() for d in split for c in d.clusters)


def test_vocabulary_comes_from_train_only(splits):
    docs, _ = splits
    vocab = build_vocab(docs["train"])
    train_words = {t for d in docs["train"] for t in d.tokens}
    dev_only = [t for t in docs["dev"][0].tokens if t not in train_words]
    assert dev_only, "the handmade dev document has words the train split lacks"
    assert all(vocab.word_id(t) == 1 for t in dev_only)
    assert vocab.words[:2] == ("<pad>", "<unk>") and vocab.genres[0] == "<unk>"
    assert vocab.genre_id("never-seen") == 0


def test_crops_are_seeded_and_keep_the_mentions_inside():
    tokens = [f"w{i}" for i in range(100)]
    starts = list(range(0, 100, 5))  # 20 sentences of 5 tokens
    clusters = [[(1, 3), (52, 54), (98, 100)], [(40, 41), (44, 46)]]
    doc = CorefDocument("x", "train", tokens, starts, "news", None, clusters)
    crops = [crop_document(doc, 8, random.Random(7)) for _ in range(2)]
    assert crops[0] == crops[1]
    crop = crops[0]
    assert crop.num_sentences == 8 and len(crop.tokens) == 40 and crop.sentence_starts[0] == 0
    offset = int(crop.tokens[0][1:])
    for cluster in crop.clusters:
        for s, e in cluster:
            assert 0 <= s < e <= 40
            assert crop.tokens[s:e] == tokens[s + offset : e + offset]
    inside = [[m for m in c if offset <= m[0] and m[1] <= offset + 40] for c in clusters]
    assert sum(map(len, crop.clusters)) == sum(map(len, inside))
    assert crop_document(doc, 40, random.Random(0)) is doc


def test_tensorize_pads_sentences_and_numbers_speakers(splits):
    docs, _ = splits
    vocab = build_vocab(docs["train"])
    doc = docs["train"][0]
    t = tensorize(doc, vocab)
    lengths = doc.sentence_lengths()
    assert t.word_ids.shape == (len(lengths), max(lengths)) and t.lengths.tolist() == lengths
    assert int((t.word_ids != 0).sum()) == len(doc.tokens)
    assert t.word_ids[0, 0] == vocab.word_id(doc.tokens[0])
    assert t.speaker_ids.shape == (len(doc.tokens),)
    assert (doc.speakers is None) == bool((t.speaker_ids == -1).all())
    gold = sorted((s, e) for c in doc.clusters for s, e in c)
    assert list(zip(t.gold_starts.tolist(), t.gold_ends.tolist(), strict=True)) == gold


def test_glove_text_format_and_malformed_lines(tmp_path, splits):
    docs, _ = splits
    vocab = build_vocab(docs["train"])
    assert {".", "the", "The"} <= set(vocab.words) and "unused" not in vocab.words
    path = tmp_path / "vectors.txt"
    path.write_text("3 3\n. 0.5 -1 2\nthe 1 2 3\nunused 9 9 9\n", encoding="utf-8")
    pre = load_pretrained(path, vocab, dim=3)
    assert pre.vectors[vocab.word_id(".")].tolist() == [0.5, -1.0, 2.0]
    # "The" has no vector of its own: it takes the lower-cased word's
    assert pre.vectors[vocab.word_id("The")].tolist() == [1.0, 2.0, 3.0]
    assert {vocab.words[i] for i in pre.found.nonzero().flatten().tolist()} == {".", "the", "The"}
    assert pre.coverage == pytest.approx(3 / (len(vocab.words) - 2))
    path.write_text(". 0.5 -1 2\nthe 1 2\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"vectors\.txt:2: 2 values for 'the', expected 3"):
        load_pretrained(path, vocab, dim=3)
    path.write_bytes(b". 0.5 -1 2\nthe 1 2 x\n")
    with pytest.raises(DataError, match=r"vectors\.txt:2: non-numeric"):
        load_pretrained(path, vocab, dim=3)


# --------------------------------------------------------------------------- training


def test_tiny_model_overfits_the_handmade_train_documents(trained):
    metrics, out = trained
    curve = json.loads((out / "history.json").read_text())
    assert len(curve) == 30 and curve[-1]["train_loss"] < 0.2 * curve[0]["train_loss"]
    assert metrics["dev"]["conll_f1"] >= 0.9  # dev = the train documents here
    assert metrics["embeddings"] == "random" and metrics["device"] == "cpu"
    assert metrics["dev"]["conll_f1"] == pytest.approx(max(p["dev_conll_f1"] for p in curve))
    assert set(metrics["test"]) >= {"muc_f1", "bcub_f1", "ceafe_f1", "conll_f1"}


def test_checkpoint_reloads_and_refuses_another_configuration(trained, splits):
    metrics, out = trained
    docs, _ = splits
    ckpt = load_checkpoint(out / BEST)
    model, vocab = restore(ckpt)
    again = evaluate(model, docs["train"], vocab)
    assert again["conll_f1"] == pytest.approx(metrics["dev"]["conll_f1"], abs=1e-6)
    other = checkpoint_config(
        resolve_model({**TINY, "dropout": 0.0, "lexical_dropout": 0.0, "encoder": "asl"}),
        vocab,
    )
    with pytest.raises(CheckpointMismatchError, match=r"encoder: 'baseline' \(checkpoint\)"):
        load_checkpoint(out / BEST, other)
    assert not list(out.glob(".*.tmp")), "atomic writes leave no temporary files"
    # (training in a directory whose last.pt has another configuration starts fresh: see
    # test_a_changed_configuration_starts_fresh_instead_of_resuming)


def test_resume_continues_exactly_where_training_stopped(splits, tmp_path):
    docs, _ = splits
    args = (docs["train"], docs["dev"], [], TINY)
    straight = train_and_evaluate(*args, {**FAST, "epochs": 2}, tmp_path / "a")
    train_and_evaluate(*args, {**FAST, "epochs": 1}, tmp_path / "b")
    resumed = train_and_evaluate(*args, {**FAST, "epochs": 2}, tmp_path / "b")
    curve_a = json.loads((tmp_path / "a" / "history.json").read_text())
    curve_b = json.loads((tmp_path / "b" / "history.json").read_text())
    for a, b in zip(curve_a, curve_b, strict=True):
        assert a["train_loss"] == pytest.approx(b["train_loss"], rel=1e-5)
        assert a["dev_conll_f1"] == pytest.approx(b["dev_conll_f1"], abs=1e-6)
    assert resumed["dev"] == straight["dev"]


def test_a_changed_configuration_starts_fresh_instead_of_resuming(splits, tmp_path, caplog):
    """dvc repro after a params edit: the old last.pt is not a continuation of the new run."""
    docs, _ = splits
    train_and_evaluate(docs["train"], docs["dev"], [], TINY, {**FAST, "epochs": 1}, tmp_path)
    wider = {**TINY, "lstm_size": TINY["lstm_size"] + 2}
    with caplog.at_level("WARNING", logger="corefrepro.training"):
        out = train_and_evaluate(
            docs["train"], docs["dev"], [], wider, {**FAST, "epochs": 1}, tmp_path
        )  # fmt: skip
    assert "not resuming" in caplog.text and "lstm_size" in caplog.text
    assert out["epochs_run"] == 1
    assert load_checkpoint(tmp_path / "last.pt")["config"]["lstm_size"] == wider["lstm_size"]


def test_resume_needs_the_same_training_settings_and_no_more_epochs_than_asked(
    splits, tmp_path, caplog
):
    docs, _ = splits
    args = (docs["train"], docs["dev"], [], TINY)
    train_and_evaluate(*args, {**FAST, "epochs": 2}, tmp_path)
    with caplog.at_level("WARNING", logger="corefrepro.training"):
        fewer = train_and_evaluate(*args, {**FAST, "epochs": 1}, tmp_path)
    assert "it ran 2 epochs, more than the 1 requested" in caplog.text and fewer["epochs_run"] == 1
    caplog.clear()
    with caplog.at_level("WARNING", logger="corefrepro.training"):
        train_and_evaluate(*args, {**FAST, "epochs": 2, "lr": 0.01}, tmp_path)
    assert "train.lr: 0.003 (checkpoint) != 0.01 (requested)" in caplog.text


def test_model_annotator_plug_in(trained, splits):
    _, out = trained
    docs, _ = splits
    annotator = annotators.get(
        "model",
        {
            "factory": "models.coref.annotator:load_annotator",
            "checkpoint": str(out / BEST),
            "settings": {"name": "coref-baseline", "encode_window": 2},
        },
    )
    assert annotator.name == "coref-baseline"
    batch = [Doc(d.doc_id, d.tokens, d.sentence_starts, d.genre, d.speakers) for d in docs["train"]]
    answers = annotator.annotate(batch)
    gold = {d.doc_id: {m for c in d.clusters for m in c} for d in docs["train"]}
    found = 0
    for doc, answer in zip(batch, answers, strict=True):
        sizes: dict[int, int] = {}
        for s, e, c in answer.mentions:
            assert 0 <= s < e <= len(doc.tokens)
            sizes[c] = sizes.get(c, 0) + 1
            found += (s, e) in gold[doc.doc_id]
        assert all(n > 1 for n in sizes.values())
    assert found >= 0.8 * sum(map(len, gold.values()))  # the overfit model finds its mentions
    with pytest.raises(CheckpointMismatchError, match="encoder"):
        annotators.get(
            "model",
            {
                "factory": "models.coref.annotator:load_annotator",
                "checkpoint": str(out / BEST),
                "settings": {"expect": {"encoder": "asl"}},
            },
        )


def run_flow(monkeypatch, tmp_path, docs, settings: dict, encoder: str):
    """flows.train_coref --encoder <encoder> under `settings` (params.yaml train_coref) on
    `docs`, with an MLflow store, artifacts and metrics in tmp_path; returns the store's client."""
    import mlflow

    import flows.train_coref as flow
    from tasks.core import config

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    monkeypatch.setattr("tasks.core.tracking.artifact_root", lambda: (tmp_path / "art").as_uri())
    monkeypatch.setattr("tasks.core.tracking.stage_lock_hash", lambda stage: "none")
    parsed = parse_settings(flow.TrainCorefSettings, settings, "train_coref")
    monkeypatch.setattr(flow, "settings", lambda: parsed)
    monkeypatch.setattr(flow, "load_splits", lambda corpora, drop_singletons: docs)
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)  # artifacts/ and metrics/ of the stage
    flow.main(["--encoder", encoder])
    return mlflow.tracking.MlflowClient(uri)


def test_flow_logs_the_learning_curve_and_writes_metrics(splits, tmp_path, monkeypatch):
    docs, _ = splits
    settings = {
        "corpora": ["handmade"],
        "seeds": [3],
        "model": TINY,
        "train": {**FAST, "epochs": 2},
    }
    client = run_flow(monkeypatch, tmp_path, docs, settings, "asl")
    summary = json.loads((tmp_path / "metrics" / "train_coref" / "asl.json").read_text())
    assert summary["encoder"] == "asl" and summary["selected_seed"] == 3
    assert summary["dataset"] == "handmade" and summary["embeddings"] == "random"
    assert (tmp_path / "artifacts" / "train_coref" / "asl" / "seed3" / BEST).exists()
    exp = client.get_experiment_by_name("train_coref")
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.run_name == "train_coref@asl/seed3"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "dev_conll_f1")] == [1, 2]
    assert run.data.params["model.encoder"] == "asl" and run.data.params["embeddings"] == "random"
    assert run.data.metrics["final_test_conll_f1"] == pytest.approx(
        summary["selected"]["test"]["conll_f1"], abs=1e-6
    )


def test_glove_embeddings_are_used_frozen_and_recorded(splits, tmp_path):
    docs, _ = splits
    path = tmp_path / "glove.txt"
    path.write_text("the 1 2 3\nbread 4 5 6\nlibrary 7 8 9\n", encoding="utf-8")
    cfg = {**TINY, "embedding_dim": 3, "glove_path": str(path)}
    metrics = train_and_evaluate(
        docs["train"], docs["dev"], docs["test"], cfg, FAST, tmp_path / "out"
    )  # fmt: skip
    assert metrics["embeddings"] == "glove" and metrics["frozen"] is True
    assert 0 < metrics["glove_coverage"] < 1
    model, vocab = restore(load_checkpoint(tmp_path / "out" / BEST))
    # "library" occurs only in the test document: pretrained words of any split are kept
    assert "library" not in {t for d in docs["train"] for t in d.tokens}
    assert model.words.weight[vocab.word_id("library")].tolist() == [7.0, 8.0, 9.0]
    assert model.words.weight[vocab.word_id("the")].tolist() == [1.0, 2.0, 3.0]  # not trained


def test_glove_by_name_comes_from_the_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "glove").mkdir(parents=True)
    (mirror / "glove" / "glove.6B.50d.txt").write_text("the 1 2\n", encoding="utf-8")
    path, note = resolve_vectors("glove.6B.50d", DownloadSettings(network=False, cache_dir=str(tmp_path / "c")),
                                 str(mirror))  # fmt: skip
    assert path == tmp_path / "c" / "glove" / "glove.6B.50d.txt"
    assert path.read_text() == "the 1 2\n" and note.startswith("glove.6B.50d sha256 ")


def test_glove_by_name_that_is_nowhere_is_an_error_naming_the_setting(tmp_path):
    """Issue #54.4: no silent random initialisation for a file the settings ask for."""
    with pytest.raises(CorefreproError, match=r"train_coref.model.glove_path: glove.840B.300d "
                       r"is neither in the mirror .*network disabled.*glove_path: null"):  # fmt: skip
        resolve_vectors("glove.840B.300d", DownloadSettings(network=False, cache_dir=str(tmp_path)),
                        str(tmp_path / "no-mirror"))  # fmt: skip


def test_glove_path_typo_is_an_error_naming_the_setting(tmp_path):
    with pytest.raises(CorefreproError, match="train_coref.model.glove_path: .*missing.txt"):
        resolve_vectors(str(tmp_path / "missing.txt"))
    assert resolve_vectors(None) == (None, "random (glove_path: null)")


def test_glove_by_name_is_extracted_from_the_downloaded_archive(monkeypatch, tmp_path):
    """The network path: the Stanford zip (here a local file:// stand-in), member extracted."""
    import zipfile

    from models.coref import data as coref_data
    from tasks.core.fetch import Archive

    archive = tmp_path / "glove.6B.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("glove.6B.50d.txt", "bread 0.5 0.25\n")
    names = {"glove.6B.50d": Archive(archive.as_uri(), "glove.6B.50d.txt")}
    monkeypatch.setattr(coref_data, "GLOVE_NAMES", names)
    path, note = resolve_vectors("glove.6B.50d", DownloadSettings(cache_dir=str(tmp_path / "c")))
    assert path.read_text() == "bread 0.5 0.25\n" and "sha256" in note


def test_the_stage_items_are_the_keys_of_train_coref_encoders_only(monkeypatch, capsys):
    """Issue #54.4: coref's item list lives in params.yaml train_coref.encoders alone: dvc.yaml's
    train_coref and inputs_train_coref iterate over it, and the command line takes any key of it
    and refuses another with one line naming the setting (no list of its own)."""
    import yaml

    import flows.train_coref as flow
    from tests.conftest import REPO_ROOT

    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    for stage in ("train_coref", "inputs_train_coref"):
        assert stages[stage]["foreach"] == "${train_coref.encoders}", stage
    settings = {"corpora": ["handmade"], "model": TINY, "encoders": {"baseline": {}, "lsl": {}}}
    parsed = parse_settings(flow.TrainCorefSettings, settings, "train_coref")
    monkeypatch.setattr(flow, "settings", lambda: parsed)
    with pytest.raises(SystemExit) as exc:
        flow.main(["--encoder", "asl"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: params.yaml train_coref.encoders: no 'asl'; known: "
                   "['baseline', 'lsl']")  # fmt: skip
