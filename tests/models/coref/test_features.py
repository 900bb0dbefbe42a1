"""Frozen LM word features (models/coref/features.py, stage lm_features) and the coreference
model reading them (issue #27.2): pooling and windows against a brute-force pass, the cache
round trip, crops, training, refusals, and the default model unchanged."""

from __future__ import annotations

import copy
import hashlib
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import flows.lm_features as flow
from models.coref import features as lmf
from models.coref.annotator import load_annotator
from models.coref.data import crop_document, load_splits, tensorize
from models.coref.features import (
    CachedFeatures,
    Encoder,
    FeatureSpec,
    LiveFeatures,
    TinyEncoderSettings,
    WordFeatureExtractor,
    assign_windows,
    check_spec,
    framed,
    tiny_encoder,
    training_features,
    window_starts,
    word_pieces,
)
from models.coref.model import CorefConfig, CorefModel
from models.coref.train import BEST, load_checkpoint, restore, train_and_evaluate
from models.pretrained import train_bpe_tokenizer
from tasks.annotation.annotators.base import Doc
from tasks.core import config
from tasks.core.checkpoints import CheckpointMismatchError
from tasks.core.errors import CorefreproError
from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.core.settings import ConfigError, parse_settings
from tasks.core.storage import write_table
from tasks.corpora import handmade

# one torch thread: deterministic float sums and no spinning on a busy 2-core machine
pytestmark = pytest.mark.usefixtures("one_torch_thread")

TEXT = (
    "Mrs. O'Neil , the naïve café owner , said she 'd sold 1,000 croissants ; "
    "her neighbour doubted it , but she showed him the receipts ."
)
TOKENS = TEXT.split()
LM_PARAMS = {
    "corpora": ["handmade"],
    "encoder": "tiny",
    "encoders": {"tiny": {"source": "tiny", "layers": [1, 2], "window": 24, "stride": 12}},
    "tiny": {"n_layer": 2, "n_head": 2, "n_embd": 16, "n_positions": 64, "seed": 1},
    "batch_windows": 3,
    "log_every_s": 0,
}
MODEL = {
    "embedding_dim": 16,
    "char_filters": 4,
    "lstm_size": 16,
    "ffnn_size": 16,
    "feature_size": 4,
    "max_antecedents": 20,
    "mention_loss_weight": 1.0,
}
FAST = {"epochs": 2, "lr": 3e-3, "log_every_s": 1e9, "seed": 1, "device": "cpu"}


def tiny_bert() -> Encoder:
    """A random bidirectional encoder (BERT) over the byte tokenizer, framed [CLS] ... [SEP]."""
    from transformers import BertConfig, BertModel

    tokenizer = train_bpe_tokenizer([" "], vocab_size=257)
    tokenizer.cls_token = tokenizer.sep_token = tokenizer.eos_token
    torch.manual_seed(3)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=64)  # fmt: skip
    encoder = framed("bert", BertModel(config), tokenizer)
    assert encoder.bidirectional and encoder.prefix == encoder.suffix == [tokenizer.eos_token_id]
    return encoder


def tiny_gpt2() -> Encoder:
    encoder = tiny_encoder(TinyEncoderSettings(n_embd=16, n_positions=64))
    eot = encoder.tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert not encoder.bidirectional and encoder.prefix == [eot] and encoder.suffix == []
    return encoder


# --------------------------------------------------------------------------- brute force


def pieces_by_overlap(tokens: list[str], tokenizer) -> tuple[list[int], list[list[int]]]:
    """Piece ids, and per word the pieces whose character span overlaps it (loops only)."""
    text = " ".join(tokens)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    spans, position = [], 0
    for token in tokens:
        spans.append((position, position + len(token)))
        position += len(token) + 1
    pieces = [[p for p, (s, e) in enumerate(enc["offset_mapping"]) if s < b and e > a]
              for a, b in spans]  # fmt: skip
    return enc["input_ids"], pieces


def window_states(encoder: Encoder, ids: list[int], start: int, end: int, layers) -> torch.Tensor:
    """One window alone (no batch, no padding): [pieces, layers, dim] float32."""
    row = torch.tensor([encoder.prefix + ids[start:end] + encoder.suffix])
    with torch.no_grad():
        hidden = encoder.model(input_ids=row, output_hidden_states=True).hidden_states
    states = torch.stack([hidden[i][0] for i in layers], dim=1)
    return states[len(encoder.prefix) : len(encoder.prefix) + end - start]


def brute_force(encoder: Encoder, tokens, layers, window: int, stride: int):
    """Each word's mean over its (first window - stride) pieces, in the window the rule picks,
    and its mean in every other window that holds it (to show the choice matters)."""
    ids, pieces = pieces_by_overlap(tokens, encoder.tokenizer)
    n = len(ids)
    starts, start = [], 0
    while True:
        starts.append(start)
        if start + window >= n:
            break
        start += stride
    chosen, others = [], []
    for word in pieces:
        word = word[: window - stride]
        best, best_score, alternatives = None, None, []
        for s in starts:
            e = min(s + window, n)
            if word[0] < s or word[-1] >= e:
                continue
            left, right = word[0] - s, e - 1 - word[-1]
            score = min(left, right) if encoder.bidirectional else left
            mean = window_states(encoder, ids, s, e, layers)[[p - s for p in word]].mean(0)
            if best_score is None or score > best_score:
                if best is not None:
                    alternatives.append(best)
                best, best_score = mean, score
            else:
                alternatives.append(mean)
        chosen.append(best)
        others.append(alternatives)
    return torch.stack(chosen), others


@pytest.mark.parametrize("kind", ["causal", "bidirectional"])
def test_pooling_and_window_rule_match_a_brute_force_pass(kind):
    encoder = tiny_gpt2() if kind == "causal" else tiny_bert()
    layers, window, stride = [0, 2], 20, 8
    extractor = WordFeatureExtractor(encoder, layers, window, stride, batch_windows=3)
    got = extractor(TOKENS)
    expected, others = brute_force(encoder, TOKENS, layers, window, stride)
    assert got.dtype == torch.float16 and got.shape == (len(TOKENS), 2, 16)
    assert extractor.counts["windows"] > 5  # many overlapping windows, batched and padded
    torch.testing.assert_close(got.float(), expected, atol=3e-3, rtol=3e-3)
    # the window matters: some word's states differ in a window the rule did not pick
    differ = [(expected[w] - alt).abs().max() > 0.05 for w, alts in enumerate(others)
              for alt in alts]  # fmt: skip
    assert any(differ)


def test_one_window_over_the_document_is_one_pass_of_the_whole_text():
    encoder = tiny_gpt2()
    tokens = TOKENS[:10]
    ids, pieces = pieces_by_overlap(tokens, encoder.tokenizer)
    assert len(ids) < 62  # the whole text fits one window
    states = window_states(encoder, ids, 0, len(ids), [1])
    expected = torch.stack([states[word].mean(0) for word in pieces])
    got = WordFeatureExtractor(encoder, [1], 62, 31)(tokens)
    torch.testing.assert_close(got.float(), expected, atol=2e-3, rtol=2e-3)


def test_word_pieces_skip_the_joining_spaces_and_words_map_to_their_bytes():
    tokenizer = tiny_gpt2().tokenizer
    ids, first, last = word_pieces(["naïve", "café", "!"], tokenizer)
    # bytes: n a ï(2) v e | space | c a f é(2) | space | !
    assert len(ids) == 6 + 1 + 5 + 1 + 1
    assert first.tolist() == [0, 7, 13] and last.tolist() == [5, 11, 13]


def test_window_starts_and_the_rule_on_a_small_case():
    assert window_starts(10, 4, 2) == [0, 2, 4, 6]
    assert window_starts(4, 4, 2) == [0] and window_starts(0, 4, 2) == [0]
    first, last = np.array([5, 0, 7]), np.array([5, 1, 9])
    causal = assign_windows(first, last, [0, 2, 4, 6], 10, 4, bidirectional=False)
    both = assign_windows(first, last, [0, 2, 4, 6], 10, 4, bidirectional=True)
    # piece 5: windows [2,6) left 3, [4,8) left 1 -> [2,6) causal; min(left, right) 0 vs 1 -> [4,8)
    assert causal.tolist() == [1, 0, 3] and both.tolist() == [2, 0, 3]


def test_a_word_longer_than_the_overlap_is_pooled_over_its_first_pieces():
    encoder = tiny_gpt2()
    tokens = ["a", "b" * 30, "c"]
    extractor = WordFeatureExtractor(encoder, [1], 16, 8)
    got = extractor(tokens)
    assert extractor.counts["words_truncated"] == 1 and torch.isfinite(got.float()).all()
    expected, _ = brute_force(encoder, tokens, [1], 16, 8)
    torch.testing.assert_close(got.float(), expected, atol=2e-3, rtol=2e-3)


def test_layers_and_window_are_checked_against_the_encoder():
    encoder = tiny_gpt2()  # 2 layers, 64 positions
    with pytest.raises(ConfigError, match=r"lm_features.encoders.tiny.layers: .*0...2"):
        WordFeatureExtractor(encoder, [3], 16, 8).check("lm_features.encoders.tiny")
    with pytest.raises(ConfigError, match=r"lm_features.encoders.tiny.window: 64 pieces"):
        WordFeatureExtractor(encoder, [1], 64, 8).check("lm_features.encoders.tiny")
    with pytest.raises(ConfigError, match=r"lm_features.encoders.x.stride: must be < window"):
        parse_settings(lmf.LMFeaturesSettings, {"encoder": "x", "encoders": {
            "x": {"source": "tiny", "layers": [1], "window": 8, "stride": 8}}}, "lm_features")  # fmt: skip


# --------------------------------------------------------------------------- the stage


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A checkout's data/docs/handmade/, as normalize@handmade writes it."""
    root = tmp_path_factory.mktemp("checkout")
    raw = root / "raw"
    handmade.generate(raw, {})
    norm = handmade.normalize(raw, {})
    docs = root / "data" / "docs" / "handmade"
    write_table(docs / f"{DOCUMENTS}.parquet", DOCUMENTS, norm.documents)
    write_table(docs / f"{ITEMS}.parquet", ITEMS, norm.items)
    write_table(docs / f"{MENTIONS}.parquet", MENTIONS, norm.mentions)
    return root


@pytest.fixture
def checkout(root, monkeypatch):
    """Stages and settings read inside `root` with LM_PARAMS; returns the params (editable)."""
    settings = {**copy.deepcopy(config.params()), "lm_features": copy.deepcopy(LM_PARAMS)}
    monkeypatch.setattr(config, "REPO_ROOT", root)
    monkeypatch.setattr(config, "params", lambda section=None, path=None: (
        settings if section is None else settings[section]))  # fmt: skip
    monkeypatch.setenv("COREFREPRO_ORCHESTRATION", "local")
    return settings


@pytest.fixture
def splits(root):
    return load_splits([root / "data" / "docs" / "handmade"])


def lm_settings(params) -> lmf.LMFeaturesSettings:
    return parse_settings(lmf.LMFeaturesSettings, params["lm_features"], "lm_features")


def extractor_of(params) -> WordFeatureExtractor:
    return lmf.build_extractor("tiny", lm_settings(params))


def test_stage_cache_reads_back_what_was_computed_and_reruns_byte_identical(checkout, splits, root):
    metrics = flow.lm_features("handmade")
    path = root / "data" / "features" / "tiny" / "handmade" / "features.safetensors"
    first = path.read_bytes()
    assert metrics["documents"] == 6 and metrics["words"] == 380 and metrics["bytes"] == len(first)
    assert metrics["layers"] == [1, 2] and metrics["dim"] == 16
    written = json.loads((root / "metrics" / "lm_features" / "tiny" / "handmade.json").read_text())
    assert "seconds" not in written and written["words"] == 380  # timings go to logs/timings
    cached = CachedFeatures("tiny", ["handmade"])
    assert cached.spec == FeatureSpec("tiny", (1, 2), 16) and cached.meta["window"] == 24
    extractor = extractor_of(checkout)
    for doc in [d for docs in splits.values() for d in docs]:
        assert torch.equal(cached.document(doc), extractor(doc.tokens)), doc.doc_id
    flow.lm_features("handmade")
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(first).digest()


def test_a_crop_reads_the_slice_of_its_documents_features(checkout, splits, root):
    flow.lm_features("handmade")
    docs = [d for split in splits.values() for d in split]
    live = LiveFeatures(extractor_of(checkout), docs)
    cached = training_features("tiny", ["handmade"], docs, cache=True, device="cpu",
                               cfg=lm_settings(checkout))  # fmt: skip
    vocab_doc = max(docs, key=lambda d: d.num_sentences)
    crop = crop_document(vocab_doc, 2, random.Random(5))
    assert crop.token_offset > 0 and crop.num_sentences == 2
    whole = cached.document(vocab_doc)
    rows = slice(crop.token_offset, crop.token_offset + len(crop.tokens))
    for source in (cached, live):
        assert torch.equal(source.document(crop), whole[rows])
    from models.coref.data import build_vocab

    tensors = tensorize(crop, build_vocab(splits["train"]), cached)
    assert torch.equal(tensors.lm_features, whole[rows])


def test_stale_or_missing_features_are_one_line(checkout, splits, root):
    shutil.rmtree(root / "data" / "features", ignore_errors=True)  # other tests wrote them
    with pytest.raises(CorefreproError, match=r"no features for train_coref.model.lm_features"):
        training_features("tiny", ["handmade"], splits["train"], cache=True, device="cpu",
                          cfg=lm_settings(checkout))  # fmt: skip
    flow.lm_features("handmade")
    checkout["lm_features"]["encoders"]["tiny"]["window"] = 32
    with pytest.raises(CorefreproError, match=r"computed as .*'window': 24.* says .*'window': 32"):
        training_features("tiny", ["handmade"], splits["train"], cache=True, device="cpu",
                          cfg=lm_settings(checkout))  # fmt: skip
    checkout["lm_features"]["encoders"]["tiny"].update(window=24, layers=[2])
    with pytest.raises(CorefreproError, match=r"layers \[1, 2\], lm_features.encoders.tiny"):
        training_features("tiny", ["handmade"], splits["train"], cache=True, device="cpu",
                          cfg=lm_settings(checkout))  # fmt: skip


# --------------------------------------------------------------------------- the model


def test_a_model_with_features_trains_and_its_loss_falls(checkout, splits, root, tmp_path):
    docs = [d for split in splits.values() for d in split]
    features = LiveFeatures(extractor_of(checkout), docs)
    model_cfg = {**MODEL, "lm_features": "tiny", "dropout": 0.0, "lexical_dropout": 0.0}
    metrics = train_and_evaluate(splits["train"], splits["train"], splits["test"], model_cfg,
                                 {**FAST, "epochs": 12}, tmp_path, features=features)  # fmt: skip
    history = json.loads((tmp_path / "history.json").read_text())
    assert history[-1]["train_loss"] < 0.5 * history[0]["train_loss"]
    assert metrics["lm_features"] == {"encoder": "tiny", "layers": [1, 2], "dim": 16,
                                      "cache": True}  # fmt: skip
    saved = load_checkpoint(tmp_path / BEST)["config"]
    assert (saved["lm_features"], saved["lm_layers"], saved["lm_dim"]) == ("tiny", [1, 2], 16)
    assert "lm_cache" not in saved
    model, _ = restore(load_checkpoint(tmp_path / BEST))
    assert model.lm_mix is not None and model.lm_mix.weights.shape == (2,)
    assert not torch.equal(model.lm_mix.weights.detach(), torch.zeros(2))  # the mix was learned


def test_live_features_train_the_same_model_as_the_cache(checkout, splits, root, tmp_path):
    flow.lm_features("handmade")
    docs = [d for split in splits.values() for d in split]
    model_cfg = {**MODEL, "lm_features": "tiny"}
    states = []
    for cache in (True, False):
        features = training_features("tiny", ["handmade"], docs, cache=cache, device="cpu",
                                     cfg=lm_settings(checkout))  # fmt: skip
        out = tmp_path / str(cache)
        train_and_evaluate(splits["train"], splits["dev"], splits["test"],
                           {**model_cfg, "lm_cache": cache}, FAST, out, features=features)  # fmt: skip
        states.append(load_checkpoint(out / BEST)["state_dict"])
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])


def test_other_features_are_refused_naming_the_setting(checkout, splits, root, tmp_path):
    docs = [d for split in splits.values() for d in split]
    features = LiveFeatures(extractor_of(checkout), docs)
    train_and_evaluate(splits["train"], splits["dev"], splits["test"],
                       {**MODEL, "lm_features": "tiny"}, {**FAST, "epochs": 1}, tmp_path,
                       features=features)  # fmt: skip
    saved = load_checkpoint(tmp_path / BEST)["config"]
    for other in (FeatureSpec("smollm2", (1, 2), 16), FeatureSpec("tiny", (1, 2), 576),
                  FeatureSpec("tiny", (2,), 16)):  # fmt: skip
        with pytest.raises(CheckpointMismatchError) as err:
            check_spec(saved, other, "best.pt")
        assert "\n" not in str(err.value) and "train_coref.model.lm_features" in str(err.value)
    # the annotator computes the checkpoint's features live, and refuses changed ones
    annotator = load_annotator({"checkpoint": str(tmp_path / BEST)})
    doc = docs[0]
    result = annotator.annotate_doc(Doc(doc.doc_id, doc.tokens, doc.sentence_starts, doc.genre,
                                        doc.speakers))  # fmt: skip
    assert annotator.features.spec == FeatureSpec("tiny", (1, 2), 16)
    assert set(result.counts) == {"model_clusters", "model_mentions"}
    # ... from what the checkpoint records, whatever params.yaml lm_features says now
    assert saved[lmf.EXTRACTOR_KEY] == {"source": "tiny", "window": 24, "stride": 12,
                                        "tiny": LM_PARAMS["tiny"]}  # fmt: skip
    checkout["lm_features"]["encoders"]["tiny"].update(layers=[2], window=40)
    again = load_annotator({"checkpoint": str(tmp_path / BEST)})
    assert again.annotate_doc(Doc(doc.doc_id, doc.tokens, doc.sentence_starts, doc.genre,
                                  doc.speakers)).mentions == result.mentions  # fmt: skip
    with pytest.raises(CheckpointMismatchError, match=r"computed as .*'window': 24.*'window': 40"):
        check_spec(saved, FeatureSpec("tiny", (1, 2), 16), "best.pt",
                   {**saved[lmf.EXTRACTOR_KEY], "window": 40})  # fmt: skip
    ckpt = load_checkpoint(tmp_path / BEST)
    del ckpt["config"][lmf.EXTRACTOR_KEY]
    torch.save(ckpt, tmp_path / "old.pt")
    with pytest.raises(CheckpointMismatchError, match=r"old.pt: .* before checkpoints recorded"):
        load_annotator({"checkpoint": str(tmp_path / "old.pt")})
    with pytest.raises(CorefreproError, match=r"lm_features=.tiny.: the run was given no features"):
        train_and_evaluate(splits["train"], splits["dev"], [], {**MODEL, "lm_features": "tiny"},
                           FAST, tmp_path / "none")  # fmt: skip


def test_a_features_model_refuses_a_document_without_its_rows():
    cfg = CorefConfig(vocab_size=20, num_chars=10, num_genres=2, embedding_dim=4, char_filters=2,
                      lstm_size=4, ffnn_size=4, feature_size=2, lm_features="tiny",
                      lm_layers=(1, 2), lm_dim=8)  # fmt: skip
    model = CorefModel(cfg)
    doc = tensorize_ids([3, 2])
    with pytest.raises(ValueError, match=r"LM features of tiny .*5 tokens and no feature rows"):
        model(doc)
    doc.lm_features = torch.randn(5, 2, 8).half()
    assert torch.isfinite(model(doc).loss)


def tensorize_ids(lengths):
    from models.coref.model import DocTensors

    s, width = len(lengths), max(lengths)
    valid = torch.arange(width).unsqueeze(0) < torch.tensor(lengths).view(-1, 1)
    return DocTensors((torch.arange(s * width).view(s, width) % 18 + 2) * valid,
                      torch.full((s, width, 3), 2) * valid.unsqueeze(2),
                      torch.tensor(lengths), torch.full((sum(lengths),), -1))  # fmt: skip


# --------------------------------------------------------------------------- the default model

# computed with the code before LM features existed (the same script, tests/models/coref/
# test_model.py's TINY and make_doc): sha256 of the initial state dict, the first loss, and
# the state dict after one Adam step. The last was recomputed, with the same model code, when
# the pinned numerics changed (Adam's sqrt exact, oneDNN off: tasks/core/numerics.py); it is
# the same on this host and on an emulated AMD EPYC (qemu-user), which the old one was not.
# The loss and the last were recomputed again when antecedent scoring began to score only the
# valid pairs (issue #57.3): the same function (test_model.py's equivalence test, against the
# code before), but the pair dropouts draw masks for the valid pairs only, no longer for every
# slot, so the training step's masks (and loss) differ, and the weight gradients sum in another
# order (recomputed on this host; not rechecked under emulation)
BEFORE = {
    "baseline": ("9b1e0be40165f306bbeba5e4526914369899c3edf2a5fa2fbd147e041b594e52",
                 7.911174774169922,
                 "3c4df17dca4a23451337d5c7a85591c3732f80529962fc09188771354bb3b06d"),
    "lsl": ("5c62f8893f8a28a018ad35fbe8909d9481783f7ddbeb64ab2ee7120747abaa72",
            6.541033744812012,
            "3e1bead898c4c20b16e11f6e4018aeb5d2a62ec9d645a6be2d172307798abd9b"),
    "asl": ("d11ad9eac3bd5430a7466c17b0fc8c5d3760cf5a6e1ba80dc2496213e01236ee",
            9.895639419555664,
            "38a95de487c4a669dd5c3b4a567d86e10c6e65e6e55b78dd097fb65955f1a94d"),
}  # fmt: skip


def _digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for key, value in model.state_dict().items():
        h.update(key.encode())
        h.update(value.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("encoder", sorted(BEFORE))
def test_the_model_without_features_is_the_one_before_them(encoder):
    from tests.models.coref.test_model import TINY, make_doc

    torch.manual_seed(0)
    model = CorefModel(CorefConfig(**TINY, encoder=encoder))
    assert model.lm_mix is None and not any(k.startswith("lm_") for k in model.config.to_dict())
    initial = _digest(model)
    doc = make_doc([5, 7, 4], seed=3, gold=[(0, 1, 1), (6, 8, 1), (12, 14, 1)])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    loss = model(doc).loss
    loss.backward()
    optimizer.step()
    assert (initial, float(loss.detach()), _digest(model)) == BEFORE[encoder]


def test_seeds_stacked_read_the_features_too(checkout, splits, tmp_path):
    from models.coref.train import train_and_evaluate_stacked

    docs = [d for split in splits.values() for d in split]
    features = LiveFeatures(extractor_of(checkout), docs)
    results = train_and_evaluate_stacked(
        splits["train"], splits["dev"], splits["test"], {**MODEL, "lm_features": "tiny"},
        [{**FAST, "epochs": 1, "seed": s} for s in (1, 2)], [tmp_path / "1", tmp_path / "2"],
        features=features,
    )  # fmt: skip
    assert [r["lm_features"]["layers"] for r in results] == [[1, 2], [1, 2]]
    assert all((tmp_path / s / BEST).is_file() for s in ("1", "2"))


def test_kbest_of_a_features_model_reads_the_cache_or_runs_the_lm_alike(checkout, splits, root):
    import flows.kbest as kbest_flow

    docs = [d for split in splits.values() for d in split]
    out = root / "artifacts" / "train_coref" / "baseline" / "seed1"
    train_and_evaluate(splits["train"], splits["dev"], splits["test"],
                       {**MODEL, "encoder": "baseline", "lm_features": "tiny"},
                       {**FAST, "epochs": 1}, out, features=LiveFeatures(extractor_of(checkout), docs))  # fmt: skip
    checkout["kbest"] = {**checkout["kbest"], "encoder": "baseline", "seed": 1, "k": 5,
                         "log_every_s": 0}  # fmt: skip
    tables = []
    for cached in (True, False):
        shutil.rmtree(root / "data" / "features", ignore_errors=True)
        if cached:
            flow.lm_features("handmade")
        kbest_flow.kbest("handmade")
        tables.append((root / "data" / "kbest" / "handmade" / "kbest.parquet").read_bytes())
    assert tables[0] == tables[1]


def test_an_interrupted_stage_resumes_from_its_finished_documents(checkout, root, monkeypatch,
                                                                  caplog):  # fmt: skip
    """A killed lm_features run keeps the documents it finished (data/cache/lm_features); the
    next run computes only the rest and writes the uninterrupted run's bytes and metrics."""
    path = root / "data" / "features" / "tiny" / "handmade" / "features.safetensors"
    written = root / "metrics" / "lm_features" / "tiny" / "handmade.json"
    flow.lm_features("handmade")
    whole, whole_metrics = path.read_bytes(), written.read_bytes()
    path.unlink()

    calls = []
    real = WordFeatureExtractor.__call__

    def dies_on_the_fourth(self, tokens):
        calls.append(len(tokens))
        if len(calls) == 4:
            raise KeyboardInterrupt("killed")
        return real(self, tokens)

    monkeypatch.setattr(flow, "RESUME_EVERY_S", 0.0)  # save after every document
    monkeypatch.setattr(WordFeatureExtractor, "__call__", dies_on_the_fourth)
    with pytest.raises(KeyboardInterrupt):
        flow.export_corpus("handmade")
    assert not path.exists()
    parts = list((root / "data" / "cache" / "lm_features" / "tiny" / "handmade").rglob("part-*"))
    assert len(parts) == 3

    calls.clear()
    monkeypatch.setattr(WordFeatureExtractor, "__call__", lambda self, tokens: (
        calls.append(len(tokens)), real(self, tokens))[1])  # fmt: skip
    with caplog.at_level("INFO", logger="corefrepro.lm_features"):
        flow.export_corpus("handmade")
    assert len(calls) == 3  # the three documents the killed run had not finished
    assert "3 of 6 documents reused from an interrupted run" in caplog.text
    assert path.read_bytes() == whole and written.read_bytes() == whole_metrics
    assert not (root / "data" / "cache" / "lm_features" / "tiny" / "handmade").exists()
