"""The per-corpus namespaces of params.yaml, download.<corpus> and normalize.<corpus>, as
settings dataclasses parsed by the one strict parser (tasks.core.settings).

Why: a typo under download.babi (`varients: [en-10k]`) used to be ignored and the default
fetched. Each class lists exactly the keys its corpus module reads (module docstrings say
what they do); the module still checks the values it alone knows (bAbI task numbers, ...).
A corpus without a class here takes no settings in that namespace. normalize.<corpus> may
also override the shared normalize keys (seed, dev_fraction).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, Literal

from tasks.core.settings import ConfigError, bounded


@dataclass
class NoSettings:
    """A namespace that takes no settings (`{}` in params.yaml)."""


@dataclass
class SharedNormalize:
    """params.yaml normalize: the shared keys, which normalize.<corpus> may override."""

    seed: int = 13  # dev splits carved from train are seeded
    dev_fraction: float = 0.1

    def validate(self, path: str) -> None:
        if not 0 < self.dev_fraction < 1:
            raise ConfigError(f"{path}.dev_fraction: must be in (0, 1), got {self.dev_fraction}")


@functools.cache
def _synthetic_download() -> type:
    """download.synthetic: the generator's DEFAULTS keys (tasks.corpora.synthetic.settings
    checks the values)."""
    from tasks.corpora.synthetic import DEFAULTS

    fields = [
        (key, Any, field(default_factory=lambda v=value: copy.deepcopy(v)))
        for key, value in DEFAULTS.items()
    ]
    return dataclasses.make_dataclass("SyntheticDownload", fields)


@dataclass
class BabiSelection:
    """download.babi and normalize.babi (the same selection: override both)."""

    variants: list[Literal["en", "en-10k"]] | Literal["en", "en-10k"] = field(
        default_factory=lambda: ["en"]
    )
    tasks: list[int | str] | int | str = field(default_factory=lambda: list(range(1, 21)))


@dataclass
class BabiNormalize(SharedNormalize, BabiSelection):
    pass


@dataclass
class LambadaDownload:
    train_novels: bool = False  # also fetch the 334 MB novels tarball


@dataclass
class LambadaNormalize(SharedNormalize):
    max_novels: int | None = bounded(None, ge=1)  # a seeded, genre-blind sample of the novels


@dataclass
class CbtDownload:
    question_splits: list[Literal["train", "valid", "test"]] = field(
        default_factory=lambda: ["valid", "test"]
    )


@dataclass
class CbtNormalize(SharedNormalize):
    tasks: list[Literal["NE", "CN", "V", "P"]] = field(
        default_factory=lambda: ["NE", "CN", "V", "P"]
    )
    exclude_books: list[str] = field(default_factory=list)


@dataclass
class WikitextNormalize(SharedNormalize):
    eos: bool = False
    sentences: Literal["punct", "line"] = "punct"
    include_train: bool = True


@dataclass
class CnnNormalize(SharedNormalize):
    max_items: int | None = bounded(None, ge=1)  # per split


@dataclass
class InscriptNormalize(SharedNormalize):
    singletons: bool = True
    # NPart: the paper's inventory (tasks/corpora/inscript.py SINGLETON_EXCLUDE); []: every one
    singleton_exclude: list[str] = field(default_factory=lambda: ["NPart"])
    multi_chain: Literal["all", "first"] = "all"
    # modi2017: Ji et al.'s 619 training stories (tasks/corpora/inscript.py MODI_IGNORED_STORIES)
    train_stories: Literal["modi2017", "all"] = "modi2017"


@dataclass
class GumNormalize(SharedNormalize):
    gentle_split: Literal["test", "exclude"] = "test"
    sentence_split: Literal["punct", "none"] = "punct"


@dataclass
class AmalgumDownload:
    commit: str | None = None  # gucorpling/amalgum commit (None: tasks.corpora.amalgum.COMMIT)
    documents: list[str] | None = None
    optional: bool = True


@dataclass
class OntonotesDownload:
    path: str | None = None  # your CoNLL-2012 directory (LDC data, never downloaded)
    language: str = "english"


# corpus -> (download.<corpus> class or a factory of it, normalize.<corpus> class)
CORPUS_SETTINGS: dict[str, tuple[Any, type]] = {
    "synthetic": (_synthetic_download, SharedNormalize),
    "handmade": (NoSettings, SharedNormalize),
    "babi": (BabiSelection, BabiNormalize),
    "lambada": (LambadaDownload, LambadaNormalize),
    "cbt": (CbtDownload, CbtNormalize),
    "wikitext2": (NoSettings, WikitextNormalize),
    "wikitext103": (NoSettings, WikitextNormalize),
    "cnn": (NoSettings, CnnNormalize),
    "inscript": (NoSettings, InscriptNormalize),
    "gum": (NoSettings, GumNormalize),
    "litbank": (NoSettings, SharedNormalize),
    "amalgum": (AmalgumDownload, SharedNormalize),
    "ontonotes": (OntonotesDownload, SharedNormalize),
}


def settings_class(corpus: str, section: Literal["download", "normalize"]) -> type:
    download, normalize = CORPUS_SETTINGS.get(corpus, (NoSettings, SharedNormalize))
    if section == "normalize":
        return normalize
    return download if dataclasses.is_dataclass(download) else download()
