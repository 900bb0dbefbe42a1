"""DOCUMENTS + MENTIONS Parquet -> inputs of the coreference model (models/coref/model.py).

The normalized corpora are the only input (data/docs/<corpus>/{documents,mentions}.parquet,
tasks/core/schema.py), so GUM and LitBank (the default) and CoNLL-2012 (`ontonotes`, once
normalized) go through the same path. Conventions:

- Gold clusters are the rows with annotator "gold". With drop_singletons (default) clusters of
  one mention are removed, the CoNLL-2012 convention Lee et al. (2017) and Luo & Glass train and
  evaluate under (GUM and LitBank annotate singletons; OntoNotes does not).
- Vocabularies (words, characters, genres) come from the TRAIN documents only; index 0 is
  padding, 1 unknown (genres: 0 unknown). With pretrained vectors, words of any document that
  the vector file covers are added too: their vectors are fixed by the file, not learned from
  dev/test, which is how Lee et al. use GloVe (every word of the evaluation data is looked up).
- Training crops: a document longer than max_sentences sentences is cut to a random run of
  max_sentences consecutive sentences (Lee et al.'s truncate_example; L&G §4.1 use 40), drawn
  from a seeded generator; gold mentions wholly inside the crop are kept, and the crop records
  its token offset, so its LM features are the same rows of the document's.
- Speakers, where the corpus has them, become per-document ids (only equality is used, the
  same-speaker feature); genres are the documents' `genre` column.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import torch

from models.coref.model import DocTensors
from tasks.core import storage
from tasks.core.errors import CorefreproError, DataError, MissingSourceError
from tasks.core.fetch import Archive, DownloadSettings, Source
from tasks.core.schema import DOCUMENTS, MENTIONS, SPLITS

PAD, UNK = "<pad>", "<unk>"
MAX_TOKEN_CHARS = 30  # characters per token seen by the char CNN (GUM has 295-char URLs)

Span = tuple[int, int]


@dataclass
class CorefDocument:
    """A document with its gold clusters (lists of (start, end) spans, end exclusive)."""

    doc_id: str
    split: str
    tokens: list[str]
    sentence_starts: list[int]
    genre: str | None = None
    speakers: list[str] | None = None
    clusters: list[list[Span]] = field(default_factory=list)
    token_offset: int = 0  # where tokens[0] is in the whole document (a training crop's start)

    @property
    def num_sentences(self) -> int:
        return len(self.sentence_starts) if self.tokens else 0

    def sentence_lengths(self) -> list[int]:
        if not self.tokens:
            return []
        bounds = [*self.sentence_starts, len(self.tokens)]
        return [b - a for a, b in zip(bounds, bounds[1:], strict=False)]


# --------------------------------------------------------------------------- reading corpora


def load_corpus(
    docs_dir: str | Path, *, drop_singletons: bool = True, annotator: str = "gold"
) -> list[CorefDocument]:
    """One normalized corpus -> documents with gold clusters, in the table's order."""
    docs_dir = Path(docs_dir)
    documents = storage.read_table(docs_dir / f"{DOCUMENTS}.parquet", DOCUMENTS)
    mentions = storage.read_table(docs_dir / f"{MENTIONS}.parquet", MENTIONS)
    mentions = mentions.filter(pc.equal(mentions.column("annotator"), annotator))
    by_doc: dict[str, dict[int, list[Span]]] = {}
    for doc_id, start, end, cluster in zip(
        *(mentions.column(c).to_pylist() for c in ("doc_id", "start", "end", "cluster")),
        strict=True,
    ):
        by_doc.setdefault(doc_id, {}).setdefault(cluster, []).append((start, end))
    out = []
    for row in documents.to_pylist():
        clusters = [sorted(set(c)) for _, c in sorted(by_doc.pop(row["doc_id"], {}).items())]
        if drop_singletons:
            clusters = [c for c in clusters if len(c) > 1]
        out.append(
            CorefDocument(
                doc_id=row["doc_id"],
                split=row["split"],
                tokens=list(row["tokens"]),
                sentence_starts=list(row["sentence_starts"]),
                genre=row["genre"],
                speakers=row["speakers"],
                clusters=clusters,
            )
        )
    if by_doc:
        raise CorefreproError(
            f"{docs_dir}: mentions for {len(by_doc)} document(s) missing from the documents "
            f"table, e.g. {sorted(by_doc)[:3]}"
        )
    return out


def load_splits(
    folders: Iterable[str | Path], *, drop_singletons: bool = True
) -> dict[str, list[CorefDocument]]:
    """{split: documents} over several corpora, each its documents' folder (the stage
    resolves data/docs/<corpus>/)."""
    splits: dict[str, list[CorefDocument]] = {s: [] for s in SPLITS}
    for folder in folders:
        for doc in load_corpus(folder, drop_singletons=drop_singletons):
            splits[doc.split].append(doc)
    return splits


# --------------------------------------------------------------------------- vocabularies


@dataclass(frozen=True)
class CorefVocab:
    """Words, characters and genres; saved in checkpoints (to_dict / from_dict)."""

    words: tuple[str, ...]
    chars: tuple[str, ...]
    genres: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_word_ids", {w: i for i, w in enumerate(self.words)})
        object.__setattr__(self, "_char_ids", {c: i for i, c in enumerate(self.chars)})
        object.__setattr__(self, "_genre_ids", {g: i for i, g in enumerate(self.genres)})

    def word_id(self, word: str) -> int:
        return self._word_ids.get(word, 1)

    def char_id(self, char: str) -> int:
        return self._char_ids.get(char, 1)

    def genre_id(self, genre: str | None) -> int:
        return self._genre_ids.get(genre, 0) if genre is not None else 0

    def to_dict(self) -> dict[str, list[str]]:
        return {"words": list(self.words), "chars": list(self.chars), "genres": list(self.genres)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CorefVocab:
        return cls(tuple(d["words"]), tuple(d["chars"]), tuple(d["genres"]))


def build_vocab(
    train_docs: Iterable[CorefDocument], *, min_count: int = 1, extra_words: Iterable[str] = ()
) -> CorefVocab:
    """Train-split vocabularies: words seen >= min_count times (descending frequency, ties
    alphabetical), plus extra_words (pretrained-covered words, see the module docstring)."""
    train_docs = list(train_docs)
    counts = Counter(t for d in train_docs for t in d.tokens)
    words = [w for w, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])) if n >= min_count]
    seen = set(words)
    words += sorted({w for w in extra_words if w not in seen})
    chars = sorted({ch for d in train_docs for t in d.tokens for ch in t[:MAX_TOKEN_CHARS]})
    genres = sorted({d.genre for d in train_docs if d.genre is not None})
    return CorefVocab((PAD, UNK, *words), (PAD, UNK, *chars), (UNK, *genres))


# --------------------------------------------------------------------------- pretrained vectors


@dataclass
class Pretrained:
    """Word vectors read for a vocabulary: vectors [V, dim], found [V] bool."""

    vectors: torch.Tensor
    found: torch.Tensor
    path: str

    @property
    def coverage(self) -> float:
        return float(self.found[2:].float().mean()) if self.found.numel() > 2 else 0.0


def pretrained_words(path: str | Path, candidates: Iterable[str]) -> set[str]:
    """The candidate words (exactly or lower-cased) that the vector file has."""
    wanted = set(candidates)
    lowered = {w.lower() for w in wanted}
    have: set[str] = set()
    for word, _ in _iter_vectors(Path(path), needed=wanted | lowered, parse=False):
        have.add(word)
    return {w for w in wanted if w in have or w.lower() in have}


# GloVe by name: fetched like a corpus file -- the mirror's glove/<name>.txt first, then the
# Stanford archive (no checksum is published for these archives; the file's sha256 is logged).
# Lee et al. (2017) use the 840B common-crawl vectors (300d).
GLOVE_URL = "https://nlp.stanford.edu/data"
GLOVE_NAMES: dict[str, Archive] = {
    "glove.840B.300d": Archive(f"{GLOVE_URL}/glove.840B.300d.zip", "glove.840B.300d.txt"),
    **{
        f"glove.6B.{d}d": Archive(f"{GLOVE_URL}/glove.6B.zip", f"glove.6B.{d}d.txt")
        for d in (50, 100, 200, 300)
    },
}


def resolve_vectors(
    spec: str | None, download: DownloadSettings | None = None, mirror: str | None = None
) -> tuple[Path | None, str]:
    """train_coref.model.glove_path -> (vector file or None, how it was resolved).

    A path must exist (a typo is an error, not a silent fallback). A name of GLOVE_NAMES is
    fetched through tasks/core/fetch.py (`mirror`, then the network when download's `network`
    is on, the default) into <download's cache_dir>/glove/; where neither has it, that is an
    error naming the setting (issue #54.4: a fallback to random vectors made one dvc.lock mean
    two models). The stage passes params.yaml download and the mirror setting
    (flows/train_coref.py); this library reads no settings.
    """
    if spec is None:
        return None, "random (glove_path: null)"
    from tasks.core.config import resolve_path
    from tasks.core.fetch import fetch_source, sha256_of

    if str(spec) not in GLOVE_NAMES:
        path = resolve_path(str(spec))
        if not path.is_file():
            raise CorefreproError(
                f"params.yaml train_coref.model.glove_path: {path} does not exist (a GloVe text "
                f"file, one of {sorted(GLOVE_NAMES)} to download, or null for random vectors)"
            )
        return path, f"file {path}"
    download = download or DownloadSettings()
    cache = resolve_path(download.cache_dir)
    source = Source(f"{spec}.txt", None, archive=GLOVE_NAMES[str(spec)])
    try:
        digest = fetch_source(
            source,
            "glove",
            cache / "glove",
            mirror=mirror,
            mirror_dir="glove",
            network=download.network,
            cache_dir=cache,
            timeout=download.timeout_s,
        )
    except MissingSourceError as exc:  # one setting, one model: never a silent random init
        raise CorefreproError(
            f"params.yaml train_coref.model.glove_path: {spec} is neither in the mirror "
            f"(download.mirror, COREFREPRO_MIRROR: glove/{spec}.txt) nor downloadable ({exc}); "
            "set download.mirror, turn download.network on, or glove_path: null for random vectors"
        ) from exc
    path = cache / "glove" / source.relpath
    return path, f"{spec} sha256 {digest or sha256_of(path)}"


def load_pretrained(path: str | Path, vocab: CorefVocab, dim: int) -> Pretrained:
    """Read GloVe's text format ("word v1 ... v_dim" per line; a word2vec "count dim" header
    line is skipped) for the vocabulary's words: an exact match first, else the lower-cased
    word (GloVe 6B is lower-cased). Malformed lines raise DataError with file and line."""
    path = Path(path)
    if not path.is_file():
        raise CorefreproError(f"{path}: pretrained vectors not found (set glove_path: null)")
    needed = set(vocab.words[2:]) | {w.lower() for w in vocab.words[2:]}
    table: dict[str, list[float]] = {}
    for word, values in _iter_vectors(path, needed=needed, parse=True, dim=dim):
        table.setdefault(word, values)
    vectors = torch.zeros(len(vocab.words), dim)
    found = torch.zeros(len(vocab.words), dtype=torch.bool)
    for i, word in enumerate(vocab.words[2:], start=2):
        values = table.get(word) or table.get(word.lower())
        if values is not None:
            vectors[i] = torch.tensor(values)
            found[i] = True
    return Pretrained(vectors, found, str(path))


def _iter_vectors(path: Path, *, needed: set[str], parse: bool, dim: int | None = None):
    with path.open("rb") as fh:
        for line_no, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8").rstrip("\n").rstrip("\r")
            except UnicodeDecodeError as exc:
                raise DataError(path, f"not UTF-8 ({exc.reason})", line_no) from None
            if not line.strip():
                continue
            word, _, rest = line.partition(" ")
            if line_no == 1 and word.isdigit() and rest.strip().isdigit():
                continue  # word2vec-style header "count dim"
            if word not in needed:
                continue
            if not parse:
                yield word, None
                continue
            parts = rest.split(" ")
            if len(parts) != dim:
                raise DataError(path, f"{len(parts)} values for {word!r}, expected {dim}", line_no)
            try:
                values = [float(v) for v in parts]
            except ValueError:
                raise DataError(
                    path, f"non-numeric value in the vector of {word!r}", line_no
                ) from None
            yield word, values


# --------------------------------------------------------------------------- model inputs


def crop_document(doc: CorefDocument, max_sentences: int, rng: random.Random) -> CorefDocument:
    """A random run of max_sentences consecutive sentences (the whole document if shorter)."""
    n = doc.num_sentences
    if n <= max_sentences:
        return doc
    first = rng.randint(0, n - max_sentences)
    bounds = [*doc.sentence_starts, len(doc.tokens)]
    lo, hi = bounds[first], bounds[first + max_sentences]
    clusters = [[(s - lo, e - lo) for s, e in c if s >= lo and e <= hi] for c in doc.clusters]
    return CorefDocument(
        doc_id=doc.doc_id,
        split=doc.split,
        tokens=doc.tokens[lo:hi],
        sentence_starts=[b - lo for b in doc.sentence_starts[first : first + max_sentences]],
        genre=doc.genre,
        speakers=doc.speakers[lo:hi] if doc.speakers is not None else None,
        clusters=[c for c in clusters if c],
        token_offset=doc.token_offset + lo,
    )


def tensorize(doc: CorefDocument, vocab: CorefVocab, features: Any = None) -> DocTensors:
    """Ids for the model: padded [S, L] words, [S, L, C] characters, speakers, gold; with
    `features` (a models/coref/features.py WordFeatures), the document's or crop's LM rows."""
    lengths = doc.sentence_lengths()
    num_sentences, width = len(lengths), max(lengths, default=0)
    chars = max((min(len(t), MAX_TOKEN_CHARS) for t in doc.tokens), default=0)
    word_ids = [[0] * width for _ in range(num_sentences)]
    char_ids = [[[0] * chars for _ in range(width)] for _ in range(num_sentences)]
    position = 0
    for s, n in enumerate(lengths):
        for j, token in enumerate(doc.tokens[position : position + n]):
            word_ids[s][j] = vocab.word_id(token)
            for k, ch in enumerate(token[:MAX_TOKEN_CHARS]):
                char_ids[s][j][k] = vocab.char_id(ch)
        position += n
    if doc.speakers is not None:
        speaker_index: dict[str, int] = {}
        speakers = [speaker_index.setdefault(sp, len(speaker_index)) for sp in doc.speakers]
    else:
        speakers = [-1] * len(doc.tokens)
    gold = sorted((s, e, c) for c, spans in enumerate(doc.clusters, start=1) for s, e in spans)
    return DocTensors(
        word_ids=torch.tensor(word_ids, dtype=torch.long).view(num_sentences, width),
        char_ids=torch.tensor(char_ids, dtype=torch.long).view(num_sentences, width, chars),
        lengths=torch.tensor(lengths, dtype=torch.long),
        speaker_ids=torch.tensor(speakers, dtype=torch.long),
        genre_id=vocab.genre_id(doc.genre),
        gold_starts=torch.tensor([g[0] for g in gold], dtype=torch.long),
        gold_ends=torch.tensor([g[1] for g in gold], dtype=torch.long),
        gold_clusters=torch.tensor([g[2] for g in gold], dtype=torch.long),
        lm_features=features.document(doc) if features is not None else None,
    )


def gold_clusters(docs: Iterable[CorefDocument]) -> dict[str, list[list[Span]]]:
    """{doc_id: clusters}: the key for tasks/evaluation/coref.py."""
    return {d.doc_id: [list(c) for c in d.clusters] for d in docs}


__all__ = [
    "CorefDocument",
    "CorefVocab",
    "Pretrained",
    "build_vocab",
    "crop_document",
    "gold_clusters",
    "load_corpus",
    "load_pretrained",
    "load_splits",
    "pretrained_words",
    "tensorize",
]
