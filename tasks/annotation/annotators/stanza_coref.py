"""`stanza`: Stanza's neural coreference model (Qi et al. 2020; the coref processor is the
word-level model of Dobrovolskii 2021) for corpora without gold coreference: LAMBADA, CBT,
WikiText. MAGE (Dhingra et al. 2017, §4.2) annotated LAMBADA with a statistical tagger
(CoreNLP); Stanza is the maintained Stanford pipeline that runs in Python.

The corpus's own tokens and sentences are kept: the pipeline runs with
tokenize_pretokenized=True, one Stanza sentence per corpus sentence, one Stanza token per
corpus token. Stanza's coreference mentions count WORDS within a sentence; a word differs
from a token when multi-word-token expansion splits one ("won't" -> "wo" "n't"; English MWT is
on by default since Stanza 1.7, and on here with `mwt: true`). `mentions_from_stanza` maps words
back to their parent tokens, widening a mention that starts or ends inside a split token to
the whole token (counted as stanza_mwt_widened). Zero-anaphora mentions (empty nodes, no
surface token) are skipped and counted (stanza_zero_mentions).

Long documents (CBT books run to 100k+ tokens; the model's antecedent scoring grows with the
square of the length) are annotated in windows of whole sentences of at most `window_tokens`
tokens; chains do not cross windows (documented limitation; each window's clusters get ids of
their own). Queries use the generic linker (tasks/annotation/annotators/base.py).

Which model: `coref_model_path` names a coreference checkpoint in Stanza's format, the one
the stage train_stanza_coref trains (artifacts/train_stanza_coref/model.pt). With it and no
`model_dir`, nothing downloaded is needed: the tokenize processor loads no model when
pretokenized (stanza/pipeline/tokenize_processor.py TokenizeProcessor._set_up_model), and the
only other file the Pipeline reads, resources.json, is given as a one-language stub
(`resources_filepath`, written to a temporary folder and read while the pipeline is built).
The checkpoint names its encoder folder (Config.bert_model, relative to the repository root,
where stages run), which Stanza loads with `from_pretrained` and no network. With
`model_dir` (a user's `stanza.download` folder) the official models there are used, and
`coref_model_path`, if also set, replaces the coref model among them.

Models are never downloaded by the stage (download_method=None, Hugging Face files only from
the local cache): fetching them is a separate, explicit step -- see MISSING_MODELS.
"""

from __future__ import annotations

import contextlib
import json
import logging
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tasks.annotation.annotators.base import (
    Annotation,
    Annotator,
    Doc,
    Span,
    check_settings,
    link_queries,
)
from tasks.core.config import REPO_ROOT
from tasks.core.errors import CorefreproError, first_line
from tasks.core.layout import check_checkpoint_path

log = logging.getLogger("corefrepro.annotate")

NAME = "stanza"
SETTINGS: dict[str, Any] = {
    "model_dir": None,  # None: Stanza's default ($STANZA_RESOURCES_DIR or ~/stanza_resources)
    "use_gpu": "auto",  # auto | true | false
    "package": "default",  # Stanza package for the language
    "coref_package": None,  # e.g. ontonotes-singletons_roberta-large-lora; None: the default
    "mwt": False,  # expand multi-word tokens before coref ("won't" -> "wo n't")
    "window_tokens": 4000,  # longer documents are annotated in sentence windows of this size
    "lang": "en",
    # a coreference checkpoint in Stanza's format (train_stanza_coref's model.pt); None: the
    # official coref model of model_dir
    "coref_model_path": None,
    "threads": None,  # torch intra-op threads of the process (None: leave as is)
}
MODEL_PATH_SETTING = f"annotate.annotators.{NAME}.coref_model_path"
NOT_TRAINED = "train one with `dvc repro train_stanza_coref`"

DOWNLOAD_COMMAND = (
    "python -c \"import stanza; stanza.download('{lang}', model_dir={model_dir!r}, "
    "processors='{processors}')\""
)
MISSING_MODELS = (
    "annotator 'stanza': {problem}\n"
    "Fetch the models once, with network access (Stanza {version}):\n"
    "    {command}\n"
    "(the coref model also needs its Hugging Face transformer in the local cache: the first "
    "pipeline built with network access fetches it; and the `peft` package, for the LoRA "
    "coref models). Then set annotate.annotators.stanza.model_dir in params.yaml if you used "
    "another directory. Offline alternatives: annotator entity-id (rule-based chains) or "
    "model (the project's own coreference model)."
)


def build_document(sentences: Sequence[Sequence[str]]) -> Any:
    """A Stanza Document of pre-tokenised sentences, as tokenize_pretokenized builds it."""
    from stanza.models.common.doc import ID, MISC, TEXT, Document

    rows: list[list[dict[str, Any]]] = []
    offset = 0
    for sentence in sentences:
        row = []
        for i, token in enumerate(sentence):
            end = offset + len(token)
            row.append({ID: (i + 1,), TEXT: token, MISC: f"start_char={offset}|end_char={end}"})
            offset = end + 1
        rows.append(row)
    return Document(rows, " ".join(" ".join(s) for s in sentences))


def mentions_from_stanza(document: Any) -> tuple[list[Span], dict[str, int]]:
    """Document.coref -> ([(start, end, chain index)] over the document's TOKENS, counts).

    Token offsets count from the document's first token (sentences concatenated). A word's
    token is its `parent`; MWT words share one parent, so a span whose first or last word is
    part of a split token covers that whole token.
    """
    token_index: list[dict[int, int]] = []  # per sentence: id(word) -> document token index
    words: list[list[Any]] = []
    offset = 0
    for sentence in document.sentences:
        index: dict[int, int] = {}
        for k, token in enumerate(sentence.tokens):
            for word in token.words:
                index[id(word)] = offset + k
        token_index.append(index)
        words.append(sentence.words)
        offset += len(sentence.tokens)
    counts = {"stanza_zero_mentions": 0, "stanza_mwt_widened": 0}
    spans: list[Span] = []
    for cluster, chain in enumerate(document.coref or []):
        for m in chain.mentions:
            if isinstance(m.start_word, tuple) or isinstance(m.end_word, tuple):
                counts["stanza_zero_mentions"] += 1
                continue
            sentence_words = words[m.sentence]
            if not 0 <= m.start_word < m.end_word <= len(sentence_words):
                raise CorefreproError(
                    f"annotator 'stanza': mention words [{m.start_word}, {m.end_word}) outside "
                    f"sentence {m.sentence} ({len(sentence_words)} words)"
                )
            first, last = sentence_words[m.start_word], sentence_words[m.end_word - 1]
            start = token_index[m.sentence][id(first)]
            end = token_index[m.sentence][id(last)] + 1
            if _splits_token(first, first=True) or _splits_token(last, first=False):
                counts["stanza_mwt_widened"] += 1
            spans.append((start, end, cluster))
    return spans, counts


def _splits_token(word: Any, *, first: bool) -> bool:
    """Whether a mention boundary at this word cuts its multi-word token."""
    words = word.parent.words
    return len(words) > 1 and word is not (words[0] if first else words[-1])


def windows(sentence_starts: Sequence[int], n_tokens: int, limit: int) -> list[tuple[int, int]]:
    """Token ranges [a, b) covering the document in whole sentences, each at most `limit`
    tokens where possible (a sentence longer than `limit` stands alone)."""
    if n_tokens <= 0:
        return []
    ends = [s for s in sentence_starts if 0 < s < n_tokens] + [n_tokens]
    out: list[tuple[int, int]] = []
    a = prev = 0
    for end in ends:
        if end - a > limit and prev > a:
            out.append((a, prev))
            a = prev
        prev = end
    out.append((a, n_tokens))
    return out


def default_model_dir() -> str:
    """Stanza's default model folder ($STANZA_RESOURCES_DIR or ~/stanza_resources)."""
    from stanza.resources.common import DEFAULT_MODEL_DIR as folder

    return folder


def check(cfg: dict[str, Any]) -> None:
    """Before any work: a coref_model_path outside the project's artifacts is refused
    (tasks.core.layout.check_checkpoint_path)."""
    if cfg.get("coref_model_path"):
        check_checkpoint_path(cfg["coref_model_path"], MODEL_PATH_SETTING)


def trained_model(value: str) -> Path:
    """The checkpoint coref_model_path names, checked before Stanza reads it: inside the
    allowed roots, present, a Stanza coreference checkpoint (its Config names an encoder),
    and that encoder's folder found from here. Each failure: one line naming the setting."""
    path = check_checkpoint_path(value, MODEL_PATH_SETTING)
    if not path.is_file():
        raise CorefreproError(f"{MODEL_PATH_SETTING}: {value} does not exist; {NOT_TRAINED}")
    encoder = str(checkpoint_config(path, value)["bert_model"])
    if not Path(encoder).is_dir() and (REPO_ROOT / encoder).is_dir():
        raise CorefreproError(
            f"{MODEL_PATH_SETTING}: {value} names its encoder folder {encoder} relative to the "
            f"repository root; run from {REPO_ROOT} (as DVC runs stages), not {Path.cwd()}"
        )
    return path


def checkpoint_config(path: Path, value: str) -> dict[str, Any]:
    """The Config a Stanza coreference checkpoint carries (CorefModel.save_weights stores it
    as a dict beside the state dicts), read without loading the tensors (mmap)."""
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file: one line, not a traceback
        raise CorefreproError(
            f"{MODEL_PATH_SETTING}: {value} is not a readable checkpoint ({first_line(exc)}); "
            f"{NOT_TRAINED}"
        ) from None
    config = state.get("config") if isinstance(state, dict) else None
    if not isinstance(config, dict) or not config.get("bert_model"):
        raise CorefreproError(
            f"{MODEL_PATH_SETTING}: {value} is not a Stanza coreference checkpoint (no Config "
            f"naming its encoder); {NOT_TRAINED}"
        )
    return config


@contextlib.contextmanager
def pipeline_location(cfg: dict[str, Any], trained: Path | None) -> Iterator[dict[str, Any]]:
    """Where stanza.Pipeline finds its models: the official ones in model_dir (its
    resources.json), with the trained coref model over them when given; a trained model alone
    gets a stub resources.json naming only the language, in a temporary folder that also
    stands for the (never read) model directory."""
    coref = {"coref_model_path": str(trained)} if trained is not None else {}
    if cfg["model_dir"] or trained is None:
        yield {"dir": str(cfg["model_dir"]) if cfg["model_dir"] else default_model_dir(), **coref}
        return
    with tempfile.TemporaryDirectory(prefix="stanza-resources-") as folder:
        resources = Path(folder) / "resources.json"
        resources.write_text(json.dumps({cfg["lang"]: {}}), encoding="utf-8")
        yield {"dir": folder, "resources_filepath": str(resources), **coref}


class StanzaAnnotator(Annotator):
    name = NAME

    def __init__(self, cfg: dict[str, Any]):
        self.cfg = cfg
        if int(cfg["window_tokens"]) < 1:
            raise CorefreproError(f"annotator '{NAME}': window_tokens must be >= 1")
        self._pipeline: Any = None

    @property
    def processors(self) -> str:
        return "tokenize,mwt,coref" if self.cfg["mwt"] else "tokenize,coref"

    def load(self) -> Any:
        """Build the Stanza pipeline once; a clear CorefreproError where models are missing."""
        if self._pipeline is not None:
            return self._pipeline
        import stanza

        cfg = self.cfg
        trained = trained_model(cfg["coref_model_path"]) if cfg["coref_model_path"] else None
        if trained is not None and cfg["mwt"] and not cfg["model_dir"]:
            raise CorefreproError(
                f"annotate.annotators.{NAME}.mwt: true needs Stanza's MWT model, i.e. the "
                f"official models (model_dir); {MODEL_PATH_SETTING} alone brings only coref"
            )
        if cfg["threads"]:
            import torch

            torch.set_num_threads(int(cfg["threads"]))
        from tasks.annotation.annotators import stanza_windows

        stanza_windows.install()  # Stanza's window cutting never ends on a sentence > 2 windows
        try:
            with pipeline_location(cfg, trained) as where:
                self._pipeline = stanza.Pipeline(
                    lang=cfg["lang"], processors=self.processors, tokenize_pretokenized=True,
                    package=self.package(), use_gpu=self.use_gpu(), download_method=None,
                    logging_level="WARN", **where,
                )  # fmt: skip
        except ImportError as exc:
            raise self.missing(
                f"a package the coref model needs is not installed ({exc})"
            ) from None
        except (FileNotFoundError, OSError, ValueError, RuntimeError, KeyError) as exc:
            if trained is not None:
                raise CorefreproError(
                    f"{MODEL_PATH_SETTING}: Stanza could not load {cfg['coref_model_path']} "
                    f"({type(exc).__name__}: {first_line(exc)})"
                ) from None
            if not isinstance(exc, OSError):
                raise
            folder = cfg["model_dir"] or default_model_dir()
            raise self.missing(f"no models under {folder} ({type(exc).__name__}: {exc})") from None
        return self._pipeline

    def use_gpu(self) -> bool | None:
        use_gpu = self.cfg["use_gpu"]
        if isinstance(use_gpu, str):
            if use_gpu not in ("auto", "true", "false"):
                raise CorefreproError(f"annotator '{NAME}': use_gpu must be auto, true or false")
            use_gpu = None if use_gpu == "auto" else use_gpu == "true"
        return use_gpu

    def package(self) -> str | dict[str, str]:
        cfg = self.cfg
        if not cfg["coref_package"]:
            return str(cfg["package"])
        package = {p: str(cfg["package"]) for p in self.processors.split(",")}
        package["coref"] = str(cfg["coref_package"])
        return package

    def missing(self, problem: str) -> CorefreproError:
        """MISSING_MODELS for the official models: how to download them, and the alternatives."""
        import stanza

        model_dir = str(self.cfg["model_dir"]) if self.cfg["model_dir"] else default_model_dir()
        command = DOWNLOAD_COMMAND.format(
            lang=self.cfg["lang"], model_dir=model_dir, processors=self.processors
        )
        return CorefreproError(
            MISSING_MODELS.format(problem=problem, version=stanza.__version__, command=command)
        )

    def annotate(self, batch: list[Doc]) -> list[Annotation]:
        pipeline = self.load()
        limit = int(self.cfg["window_tokens"])
        pieces: list[tuple[int, int, int]] = []  # (doc index, window start, window end)
        inputs = []
        for k, doc in enumerate(batch):
            for a, b in windows(doc.sentence_starts, len(doc.tokens), limit):
                starts = [s - a for s in doc.sentence_starts if a <= s < b]
                bounds = [*starts, b - a]
                tokens = doc.tokens[a:b]
                inputs.append(
                    build_document([tokens[x:y] for x, y in zip(bounds, bounds[1:], strict=False)])
                )
                pieces.append((k, a, b))
        # one call per window: Pipeline.bulk_process would run coref once over the windows'
        # sentences joined into one Document (UDProcessor.bulk_process, which CorefProcessor
        # inherits) and attach the chains to that joined Document, leaving every input's
        # `coref` unset (stanza/pipeline/processor.py)
        processed = [pipeline(document) for document in inputs]
        mentions: list[list[Span]] = [[] for _ in batch]
        counts: list[dict[str, int]] = [{"stanza_windows": 0} for _ in batch]
        next_cluster = [0] * len(batch)
        for (k, a, b), document in zip(pieces, processed, strict=True):
            n = sum(len(s.tokens) for s in document.sentences)
            if n != b - a:
                raise CorefreproError(
                    f"annotator '{NAME}': document {batch[k].doc_id} tokens [{a}, {b}) came back "
                    f"as {n} tokens; pretokenized alignment broken"
                )
            spans, window_counts = mentions_from_stanza(document)
            base = next_cluster[k]
            mentions[k].extend((s + a, e + a, c + base) for s, e, c in spans)
            next_cluster[k] = base + len(document.coref or [])
            counts[k]["stanza_windows"] += 1
            for key, value in window_counts.items():
                counts[k][key] = counts[k].get(key, 0) + value
        return [
            Annotation(m, link_queries(doc, m), c)
            for doc, m, c in zip(batch, mentions, counts, strict=True)
        ]


def build(cfg: dict[str, Any]) -> StanzaAnnotator:
    annotator = StanzaAnnotator({**SETTINGS, **check_settings(NAME, cfg, SETTINGS)})
    annotator.load()
    return annotator
