"""GRAPHS Parquet -> numericalized reader examples and deterministic batches (models/mage/readers.py).

The graph stage's table is the ONLY input: every reader sees the same tokens, segment order
(§3.3 of Dhingra et al., papers/004), chain-decomposed DAGs and coreference chains that the
other model families see, so there is no second preprocessing path that could drift.

Answer layers, as in the MAGE paper (§4.1: "For extractive tasks, we use this attention
distribution directly to predict the answer, using the attention-sum mechanism ... For
classification tasks, we select the answer among the candidates C", Eq. 6):
- "attention_sum" (Kadlec et al. 2016): the probability of a candidate token is the attention
  on its occurrences in the document. Candidates are the item's own where it lists them (CNN
  entities, the synthetic corpus's places), else the document's distinct tokens that are
  answers of some TRAIN item (answer_candidates: train_answers; bAbI's places and objects),
  or all of them (answer_candidates: document; LAMBADA, Chu et al. 2016). Out-of-vocabulary
  tokens all embed as <unk> but are matched by a per-example id (surface_ids), so a rare word
  of the passage can still be the answer.
- "classify" (Eq. 6, a softmax over a lookup table W_C of output embeddings, one per class):
  the classes are the answer strings seen in the TRAIN split of the selected tasks, sorted; a
  multi-word bAbI answer ("football,apple" in qa8, "n,w" in qa19) is ONE class label. Where
  items carry candidates the softmax is restricted to them (the reader's class_mask) unless
  restrict_to_candidates is false.
- "auto" (default): attention_sum where the task is extractive -- every TRAIN answer is one
  of the item's candidates, or a token of its document where there are none (bAbI qa1-qa3,
  the synthetic corpus, CNN) -- else classify (bAbI yes/no, counting, lists, directions:
  qa6-qa8, qa17-qa19 ...). The paper does not list which bAbI tasks used which layer; its
  Fig. 4 reads tasks 7 and 8 off W_C, as this rule does. Measured on bAbI qa1 (1k, CPU):
  the bi-GRU reaches 100% dev accuracy with attention_sum within 25 epochs, but with classify
  it stays near 50% dev accuracy while fitting 93% of train (the paper reports 0.0% error).

Dev/test answers that the answer layer cannot produce (an answer class never seen in
training, an answer missing from the candidates) are kept with answer = -1: they count as
errors and are counted in stats, never dropped. The vocabulary (<pad>, <unk>, then tokens by
descending train frequency, ties alphabetical) is built from the TRAIN split only.

Query and document spans: the "query" and "context" segments of the row. A graph with no
query segment (LAMBADA, one context segment) takes the context's last sentence as the query
and the rest as the document (Chu et al. 2016, as the MAGE paper does for LAMBADA).

LAMBADA subsets (MAGE paper Table 3, after Chu et al. 2016): 'context' is the items whose
answer is a token of the document the reader sees (the passage minus its last sentence), 'all'
every item. Every example carries that flag (in_context); ReaderData.has_subsets says where
the two differ, i.e. an extractive reader choosing among document tokens (attention_sum, no
candidate lists) with some answer outside its document. There an answer that is not a
document token is an error in 'all' and absent from 'context'; an answer that is a document
token the model cannot produce (<unk>, not a candidate) is an error in both.

train_from_dev carves a training portion out of dev, for a task whose graph table has no train
items (LAMBADA: the release has dev and test passages and unlabelled training novels; the
mirror holds only dev and a test sample): that fraction of dev DOCUMENTS (carve_dev, seeded
by train_from_dev_seed, independent of the training seed so every seed sees the same split)
becomes train; the rest stays dev -- model selection and the reported dev numbers are on the
held-out rest, and split_notes says so. The test split is never touched. A task that has
train items refuses the setting.

max_context_sentences keeps the most recent K sentences of a long context (bAbI qa3 stories
reach 1,341 tokens): tokens before the cut are removed and every DAG predecessor pointing into
them becomes -1 (a coreference chain then starts at its first kept mention). Sentence ends
are the tokens ".", "?", "!" -- right for bAbI and the synthetic corpus, whose templates end
every sentence with one.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import torch

from models.mage.readers import collate_graphs, segment_spans
from tasks.core import storage
from tasks.core.errors import CorefreproError
from tasks.core.schema import GRAPHS, SPLITS
from tasks.core.settings import bounded, parse_settings
from tasks.core.splits import carve_dev

PAD, UNK = "<pad>", "<unk>"
PAD_ID, UNK_ID = 0, 1
SENTENCE_ENDS = frozenset({".", "?", "!"})
OUTPUTS = ("auto", "classify", "attention_sum")
DIRECTIONS = ("forward", "backward")


@dataclass
class ReaderDataSettings:
    """How a graph table becomes reader examples (train_mage.train / task_settings keys)."""

    min_count: int = bounded(1, ge=1)
    output: Literal["auto", "classify", "attention_sum"] = "auto"
    answer_candidates: Literal["train_answers", "document"] = "train_answers"
    restrict_to_candidates: bool = True
    max_context_sentences: int | None = bounded(None, ge=1)
    edge_types: list[str] | None = None
    train_from_dev: float | None = bounded(
        None, gt=0, lt=1
    )  # fraction of dev documents carved into train
    train_from_dev_seed: int = 13


DATA_FIELDS = tuple(sorted(f.name for f in fields(ReaderDataSettings)))  # a model depends on


def reader_data_settings(cfg: ReaderDataSettings | Mapping[str, Any] | None) -> ReaderDataSettings:
    """The data settings of cfg: its ReaderDataSettings fields (a MageTrain is one), or a
    mapping of them parsed strictly (tests, notebooks)."""
    if isinstance(cfg, ReaderDataSettings):
        return ReaderDataSettings(**{k: getattr(cfg, k) for k in DATA_FIELDS})
    return parse_settings(ReaderDataSettings, cfg, "reader data")


class ReaderDataError(CorefreproError):
    """A graph table a reader cannot use (names the file and the graph)."""


# --------------------------------------------------------------------------- vocabulary


@dataclass(frozen=True)
class Vocab:
    """Token <-> id. itos[0] = <pad>, itos[1] = <unk>."""

    itos: tuple[str, ...]
    stoi: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.itos[:2] != (PAD, UNK):
            raise ValueError(f"a vocabulary starts with {PAD}, {UNK}")
        object.__setattr__(self, "stoi", {t: i for i, t in enumerate(self.itos)})

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], min_count: int = 1) -> Vocab:
        counts = Counter(t for tokens in token_lists for t in tokens)
        kept = sorted(
            (t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t)
        )
        return cls((PAD, UNK, *kept))

    def __len__(self) -> int:
        return len(self.itos)

    def id(self, token: str) -> int:
        return self.stoi.get(token, UNK_ID)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        return [self.stoi.get(t, UNK_ID) for t in tokens]

    def fingerprint(self) -> str:
        return hashlib.sha256("\n".join(self.itos).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- graph rows


def load_rows(path: str | Path, tasks: str | Sequence[str]) -> tuple[list[dict], dict[str, str]]:
    """Item graphs of the given task labels (a label or a list), sorted by (split, graph_id);
    returns (rows, table metadata)."""
    import pyarrow.compute as pc

    table = storage.read_table(path, GRAPHS)
    labels = [tasks] if isinstance(tasks, str) else list(tasks)
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}
    selected = table.filter(pc.is_in(table.column("task"), value_set=_pa_strings(labels)))
    if selected.num_rows == 0:
        known = sorted({t for t in table.column("task").to_pylist() if t is not None})
        raise ReaderDataError(f"{path}: no items of task {labels}; tasks present: {known}")
    rows = selected.to_pylist()
    rows.sort(
        key=lambda r: (SPLITS.index(r["split"]) if r["split"] in SPLITS else 9, r["graph_id"])
    )
    bad = sorted({r["split"] for r in rows} - set(SPLITS))
    if bad:
        raise ReaderDataError(f"{path}: unknown split(s) {bad}; expected {list(SPLITS)}")
    return rows, meta


def _pa_strings(values: Sequence[str]):
    import pyarrow as pa

    return pa.array(list(values), type=pa.string())


def surface_ids(tokens: Sequence[str], vocab: Vocab) -> dict[str, int]:
    """Token string -> the id attention sum matches on: its vocabulary id, or, for a word
    outside the vocabulary, len(vocab) + k for the k-th distinct such word of this example.

    Out-of-vocabulary words all embed as <unk>, but they stay distinct answers: a LAMBADA
    target is often a rare word of the passage (a name), and with one shared <unk> id no
    answer layer could pick it (Kadlec et al. 2016 score candidates by their positions).
    """
    out: dict[str, int] = {}
    unknown = 0
    for token in tokens:
        if token not in out:
            out[token] = vocab.id(token)
            if out[token] == UNK_ID:
                out[token], unknown = len(vocab) + unknown, unknown + 1
    return out


def sentence_starts(tokens: Sequence[str], start: int, end: int) -> list[int]:
    """Start positions of the sentences of tokens[start:end] (a sentence ends at . ? !)."""
    starts = [start]
    for i in range(start, end - 1):
        if tokens[i] in SENTENCE_ENDS:
            starts.append(i + 1)
    return starts


def truncate_context(row: Mapping[str, Any], max_sentences: int) -> tuple[dict, bool]:
    """Keep the last max_sentences sentences of the row's context segment; returns (row,
    whether anything was cut). Other segments are kept whole.

    The DAGs are those the graph stage would build on the kept tokens: an edge into the
    removed sentences is followed back through them (bridge) to the nearest kept node of the
    same chain, so sequential edges join the tokens on either side of the cut (§3.3: one
    sequence) and a coreference chain links its last kept mention before the cut (e.g. in a
    query placed first) to its first kept mention after it.
    """
    if max_sentences < 1:
        raise ValueError("max_context_sentences must be >= 1")
    n = len(row["tokens"])
    spans = segment_spans(row["segments"], row["segment_starts"], n)
    if "context" not in spans:
        return dict(row), False
    c_start, c_end = spans["context"]
    starts = sentence_starts(row["tokens"], c_start, c_end)
    if len(starts) <= max_sentences:
        return dict(row), False
    cut_from, cut_to = c_start, starts[-max_sentences]
    removed = cut_to - cut_from
    chain = row["chain"]

    def new(i: int) -> int:
        return -1 if i < 0 else (i - removed if i >= cut_to else i)

    def bridge(preds: Sequence[int], q: int, step: int) -> int:
        """Follow type-e predecessors from q through the removed range to a kept node (-1
        none). Edges other than sequential enter a mention at one end and leave it at the
        other (last token -> first token of the next mention), so inside the removed range
        the walk first crosses q's mention (the run of tokens of q's chain) against the
        direction of the DAG (step -1 forward, +1 backward), then takes its predecessor."""
        while cut_from <= q < cut_to:
            while cut_from <= q + step < cut_to and chain[q] >= 0 and chain[q + step] == chain[q]:
                q += step
            q = preds[q]
        return q

    keep = [i for i in range(n) if not cut_from <= i < cut_to]
    out = dict(row)
    for key in ("tokens", "chain"):
        out[key] = [row[key][i] for i in keep]
    for key, step in (("forward", -1), ("backward", 1)):
        out[key] = [[new(bridge(preds, preds[i], step)) for i in keep] for preds in row[key]]
    out["segment_starts"] = [s if s <= cut_from else s - removed for s in row["segment_starts"]]
    return out, True


def keep_edge_types(
    rows: Sequence[Mapping[str, Any]], meta: Mapping[str, str], keep: Sequence[str], path: Any
) -> list[dict]:
    """Blank (-1) every predecessor of the edge types not in `keep` (names of the table's
    forward_edge_types; their inverses go with them). The arrays keep their shape, so a MAGE
    model is the same size: edge_types [sequential] is the ablation "MAGE without
    coreference edges" (a joint bi-GRU over query + context, as MAGE reads them, §3.3)."""
    import json

    names = {d: json.loads(meta.get(f"{d}_edge_types", "null") or "null") for d in DIRECTIONS}
    if not all(names.values()):
        raise ReaderDataError(f"{path}: table metadata lacks forward/backward_edge_types")
    unknown = sorted(set(keep) - set(names["forward"]))
    if unknown:
        raise ReaderDataError(f"{path}: unknown edge types {unknown}; known: {names['forward']}")
    out = []
    for row in rows:
        new = dict(row)
        for d in DIRECTIONS:
            new[d] = [
                preds if name.removesuffix("_inverse") in keep else [-1] * len(preds)
                for name, preds in zip(names[d], row[d], strict=True)
            ]
        out.append(new)
    return out


def reader_spans(row: Mapping[str, Any]) -> tuple[tuple[int, int], tuple[int, int]]:
    """(doc_span, query_span) of a row: its context and query segments, or the context minus
    its last sentence and that last sentence (no query segment: LAMBADA)."""
    spans = segment_spans(row["segments"], row["segment_starts"], len(row["tokens"]))
    if "context" not in spans:
        raise ReaderDataError(f"graph {row['graph_id']}: no 'context' segment ({row['segments']})")
    if "query" in spans:
        return spans["context"], spans["query"]
    start, end = spans["context"]
    last = sentence_starts(row["tokens"], start, end)[-1]
    return (start, last), (last, end)


# --------------------------------------------------------------------------- the data set


@dataclass
class ReaderData:
    """Numericalized examples of one task selection, ready for collate_graphs."""

    tasks: tuple[str, ...]
    corpus: str
    output: str
    vocab: Vocab
    classes: tuple[str, ...]
    max_chains: int
    num_edge_types: int
    splits: dict[str, list[dict]]
    stats: dict[str, Any]
    settings: ReaderDataSettings
    split_notes: dict[str, str] = field(default_factory=dict)  # where a split came from

    @property
    def has_subsets(self) -> bool:
        """'context' differs from 'all' (module docstring): extraction among document
        tokens, and some item's answer is not a token of its document."""
        if self.output != "attention_sum":
            return False
        examples = [ex for exs in self.splits.values() for ex in exs]
        return any(not ex["in_context"] for ex in examples) and not any(
            ex["item_candidates"] for ex in examples
        )

    def signature(self) -> dict[str, Any]:
        """What a trained model depends on (compared when a checkpoint is loaded)."""
        return {
            "tasks": list(self.tasks),
            "corpus": self.corpus,
            "output": self.output,
            "vocab_size": len(self.vocab),
            "vocab_fingerprint": self.vocab.fingerprint(),
            "classes": list(self.classes),
            "max_chains": self.max_chains,
            "num_edge_types": self.num_edge_types,
            **{k: getattr(self.settings, k) for k in DATA_FIELDS},
        }


def _choose_output(train: Sequence[Mapping[str, Any]], output: str) -> str:
    """auto: attention_sum where every train answer is a candidate or a document token."""
    if output not in OUTPUTS:
        raise ReaderDataError(f"output must be one of {OUTPUTS}, not {output!r}")
    if output != "auto":
        return output

    def extractive(row: Mapping[str, Any]) -> bool:
        if row["candidates"]:
            return row["answer"] in row["candidates"]
        (start, end), _ = reader_spans(row)
        return row["answer"] in row["tokens"][start:end]

    return "attention_sum" if all(extractive(r) for r in train) else "classify"


def load_reader_data(
    path: str | Path,
    tasks: str | Sequence[str],
    cfg: ReaderDataSettings | Mapping[str, Any] | None = None,
) -> ReaderData:
    """Read the graph table and numericalize the items of `tasks` (see the module docstring).

    cfg: min_count (vocabulary), output (auto | classify | attention_sum), answer_candidates
    (train_answers | document: attention_sum items without candidates), restrict_to_candidates
    (classify), max_context_sentences (None = whole context), edge_types (None = all, else the
    forward edge type names to keep; see keep_edge_types).
    """
    settings = reader_data_settings(cfg)
    rows, meta = load_rows(path, tasks)
    split_notes = carve_train_from_dev(rows, settings, path)
    if settings.edge_types is not None:
        rows = keep_edge_types(rows, meta, settings.edge_types, path)
    labels = (tasks,) if isinstance(tasks, str) else tuple(tasks)
    stats: Counter = Counter()
    k = settings.max_context_sentences
    if k is not None:
        cut_rows = []
        for row in rows:
            new_row, cut = truncate_context(row, int(k))
            stats[f"{row['split']}_truncated"] += cut
            cut_rows.append(new_row)
        rows = cut_rows
    train = [r for r in rows if r["split"] == "train"]
    if not train:
        raise ReaderDataError(f"{path}: task {list(labels)} has no train items")
    output = _choose_output(train, settings.output)
    vocab = Vocab.build((r["tokens"] for r in train), settings.min_count)
    classes = tuple(sorted({r["answer"] for r in train})) if output == "classify" else ()
    class_id = {c: i for i, c in enumerate(classes)}
    answer_ids = {vocab.id(r["answer"]) for r in train} - {UNK_ID}
    edge_types = {(len(r["forward"]), len(r["backward"])) for r in rows}
    num_edge_types = next(iter(edge_types))[0]
    if edge_types != {(num_edge_types, num_edge_types)}:
        raise ReaderDataError(
            f"{path}: forward/backward edge type counts differ between rows or directions: "
            f"{sorted(edge_types)}"
        )
    # the one-hot width M (§4.1): a property of the input format, labels play no part
    max_chains = max(len({c for c in r["chain"] if c >= 0}) for r in rows)

    splits: dict[str, list[dict]] = {s: [] for s in SPLITS}
    for row in rows:
        split = row["split"]
        doc_span, query_span = reader_spans(row)
        if doc_span[1] <= doc_span[0] or query_span[1] <= query_span[0]:
            raise ReaderDataError(
                f"{path}: graph {row['graph_id']}: empty document or query span "
                f"(document {doc_span}, query {query_span})"
            )
        ids = vocab.encode(row["tokens"])
        stats[f"{split}_tokens"] += len(ids)
        stats[f"{split}_unk_tokens"] += sum(i == UNK_ID for i in ids)
        doc_tokens = row["tokens"][doc_span[0] : doc_span[1]]
        ex: dict[str, Any] = {
            "graph_id": row["graph_id"],
            "in_context": row["answer"] in doc_tokens,  # the 'context' subset (Table 3)
            "item_candidates": bool(row["candidates"]),
            "tokens": ids,
            "forward": row["forward"],
            "backward": row["backward"],
            "chain": row["chain"],
            "doc_span": doc_span,
            "query_span": query_span,
        }
        if output == "classify":
            ex["answer"] = class_id.get(row["answer"], -1)
            stats[f"{split}_unseen_answer"] += ex["answer"] < 0
            if settings.restrict_to_candidates and row["candidates"]:
                allowed = sorted({class_id[c] for c in row["candidates"] if c in class_id})
                if ex["answer"] >= 0 and ex["answer"] not in allowed:
                    stats[f"{split}_answer_not_in_candidates"] += 1
                    allowed = sorted({*allowed, ex["answer"]}) if split == "train" else allowed
                if allowed:
                    ex["allowed"] = allowed
                else:
                    stats[f"{split}_no_known_candidate"] += 1
        else:
            surface_of = surface_ids(row["tokens"], vocab)
            ex["surface"] = [surface_of[t] for t in row["tokens"]]
            if row["candidates"]:
                cands = [surface_of.get(c, vocab.id(c)) for c in row["candidates"]]
            else:
                cands = ex["surface"][doc_span[0] : doc_span[1]]
                if settings.answer_candidates == "train_answers":
                    cands = [c for c in cands if c in answer_ids]
            cands = [c for c in dict.fromkeys(cands) if c != UNK_ID]
            stats[f"{split}_no_candidate"] += not cands
            answer = surface_of.get(row["answer"], vocab.id(row["answer"]))
            stats[f"{split}_oov_answer_in_document"] += answer >= len(vocab)
            ex["candidates"] = cands or [UNK_ID]
            ex["answer"] = cands.index(answer) if answer in cands else -1
            stats[f"{split}_answer_not_in_candidates"] += ex["answer"] < 0
        ex["length"] = len(ids)
        splits[split].append(ex)
    for split, exs in splits.items():
        stats[f"{split}_items"] = len(exs)
        if exs:
            stats[f"{split}_max_length"] = max(e["length"] for e in exs)
    stats = {k: v for k, v in sorted(stats.items()) if v or k.endswith("_items")}
    return ReaderData(
        tasks=labels,
        corpus=meta.get("corpus", "unknown"),
        output=output,
        vocab=vocab,
        classes=classes,
        max_chains=max_chains,
        num_edge_types=num_edge_types,
        splits=splits,
        stats=stats,
        settings=settings,
        split_notes=split_notes,
    )


def carve_train_from_dev(
    rows: list[dict], settings: ReaderDataSettings, path: Any
) -> dict[str, str]:
    """Move settings.train_from_dev of the dev documents to train, in place (module
    docstring); returns split_notes ({} when the setting is off)."""
    fraction = settings.train_from_dev
    if fraction is None:  # a fraction in (0, 1): ReaderDataSettings' bounds
        return {}
    n_train = sum(r["split"] == "train" for r in rows)
    if n_train:
        raise ReaderDataError(
            f"{path}: train_from_dev is for tasks without train items; this one has {n_train} "
            f"(unset train_from_dev in params.yaml train_mage)"
        )
    seed = settings.train_from_dev_seed
    docs = sorted({r["doc_id"] for r in rows if r["split"] == "dev"})
    carved = carve_dev(docs, float(fraction), seed)
    if len(carved) == len(docs):
        raise ReaderDataError(f"{path}: train_from_dev {fraction} leaves no dev documents")
    for row in rows:
        if row["split"] == "dev" and row["doc_id"] in carved:
            row["split"] = "train"
    rows.sort(key=lambda r: (SPLITS.index(r["split"]), r["graph_id"]))
    n = Counter(r["split"] for r in rows)
    return {
        "train": f"{len(carved)} of {len(docs)} dev documents ({n['train']} items) carved by "
        f"train_from_dev {fraction} (seed {seed}); no train split of the corpus was used",
        "dev": f"the other {len(docs) - len(carved)} dev documents ({n['dev']} items), held "
        f"out of training: model selection and the dev numbers (not a test set)",
    }


# --------------------------------------------------------------------------- batching


def batch_order(
    lengths: Sequence[int],
    batch_size: int,
    *,
    shuffle: bool = False,
    seed: int = 0,
    epoch: int = 0,
    pool_batches: int = 20,
) -> list[list[int]]:
    """Indices of each batch, deterministic given (seed, epoch).

    No shuffle (evaluation): sorted by (length, index) and chunked. Shuffle (training): a
    seeded permutation, cut into pools of pool_batches batches, each pool sorted by length and
    chunked (similar lengths share a batch: little padding, and MAGE's loop runs over the
    longest item), then the batches themselves are shuffled.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    index = list(range(len(lengths)))
    if not shuffle:
        index.sort(key=lambda i: (lengths[i], i))
        return [index[i : i + batch_size] for i in range(0, len(index), batch_size)]
    rng = random.Random(f"reader-batches:{seed}:{epoch}")
    rng.shuffle(index)
    pool = max(1, pool_batches) * batch_size
    batches: list[list[int]] = []
    for p in range(0, len(index), pool):
        chunk = sorted(index[p : p + pool], key=lambda i: (lengths[i], i))
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def make_batch(
    examples: Sequence[Mapping[str, Any]], num_classes: int = 0
) -> dict[str, torch.Tensor]:
    """collate_graphs plus class_mask [B, K] where examples restrict the classes ("allowed")."""
    batch = collate_graphs(examples, pad_id=PAD_ID)
    if num_classes and any("allowed" in ex for ex in examples):
        mask = torch.zeros(len(examples), num_classes, dtype=torch.bool)
        for b, ex in enumerate(examples):
            if "allowed" in ex:
                mask[b, ex["allowed"]] = True
            else:
                mask[b] = True
        batch["class_mask"] = mask
    return batch


def iterate_batches(
    data: ReaderData,
    split: str,
    batch_size: int,
    *,
    shuffle: bool = False,
    seed: int = 0,
    epoch: int = 0,
    pool_batches: int = 20,
) -> Iterator[tuple[list[int], dict[str, torch.Tensor]]]:
    """(example indices, batch) over one split, in batch_order."""
    examples = data.splits[split]
    order = batch_order(
        [e["length"] for e in examples],
        batch_size,
        shuffle=shuffle,
        seed=seed,
        epoch=epoch,
        pool_batches=pool_batches,
    )
    for idx in order:
        yield idx, make_batch([examples[i] for i in idx], len(data.classes))
