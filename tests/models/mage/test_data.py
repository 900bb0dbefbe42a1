"""models/mage/data.py: GRAPHS rows -> reader examples (vocabulary and classes from train
only, answer layers, truncation, spans) and deterministic length-bucketed batches."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from models.mage.data import (
    PAD_ID,
    UNK_ID,
    ReaderDataError,
    batch_order,
    iterate_batches,
    load_reader_data,
    load_rows,
    make_batch,
    reader_spans,
    truncate_context,
)
from tasks.core import storage
from tasks.core.schema import GRAPHS
from tasks.core.settings import ConfigError


def w(text: str) -> list[str]:
    return text.split()


def build_synthetic_graphs(out_dir: Path) -> Path:
    """The embedded default's graph table (graphs@synthetic-gold), made here from the
    project's generator with the params.yaml settings, so these tests need no `dvc repro`."""
    from tasks.annotation import annotators
    from tasks.annotation.annotate import annotate_documents
    from tasks.core.config import params
    from tasks.corpora import synthetic
    from tasks.graphs.dags import build_graphs

    synthetic.generate(out_dir / "raw", params("download").get("synthetic"))
    norm = synthetic.normalize(out_dir / "raw", params("normalize").get("synthetic"))
    docs, items, gold = (
        storage.to_table(k, getattr(norm, k)) for k in ("documents", "items", "mentions")
    )
    mentions, queries, _ = annotate_documents(annotators.get("gold"), docs, items, gold)
    cfg = params("graphs")
    built = build_graphs(
        docs, items, mentions, queries, seed=cfg["seed"], on_conflict=cfg["on_conflict"]
    )
    path = out_dir / "graphs.parquet"
    storage.write_table(path, GRAPHS, built.rows, {**built.metadata, "corpus": "synthetic"})
    return path


@pytest.fixture(scope="session")
def synthetic_graphs(tmp_path_factory) -> Path:
    return build_synthetic_graphs(tmp_path_factory.mktemp("synthetic-gold"))


def chain_preds(chain: list[int], backward: bool = False) -> list[list[int]]:
    """[sequential, coreference] predecessors as the graph stage stores them."""
    n = len(chain)
    seq = [t + 1 if t + 1 < n else -1 for t in range(n)] if backward else list(range(-1, n - 1))
    coref, last = [-1] * n, {}
    for t in range(n - 1, -1, -1) if backward else range(n):
        if chain[t] >= 0:
            coref[t] = last.get(chain[t], -1)
            last[chain[t]] = t
    return [seq, coref]


def graph_row(
    gid,
    split,
    context,
    query,
    answer,
    *,
    task="qa1",
    chain=None,
    query_first=False,
    candidates=None,
):
    """One GRAPHS row with context and query segments (no query segment when query is None;
    chains: one cluster per capitalized token, as a stand-in for an annotator)."""
    segs = (
        [("query", query), ("context", context)]
        if query_first
        else [("context", context), ("query", query)]
    )
    segs = [(name, seg) for name, seg in segs if seg is not None]
    tokens = [t for _, seg in segs for t in seg]
    names = sorted({t for t in tokens if t[0].isupper()})
    chain = chain or [names.index(t) if t in names else -1 for t in tokens]
    starts = [sum(len(seg) for _, seg in segs[:k]) for k in range(len(segs))]
    return {
        "graph_id": gid,
        "doc_id": gid.rsplit("/", 1)[0],
        "item_id": gid,
        "split": split,
        "tokens": tokens,
        "segments": [s for s, _ in segs],
        "segment_starts": starts,
        "chain": chain,
        "forward": chain_preds(chain),
        "backward": chain_preds(chain, True),
        "task": task,
        "answer": answer,
        "candidates": candidates,
    }


def write_graphs(path: Path, rows: list[dict]) -> Path:
    storage.write_table(path, GRAPHS, rows, {"corpus": "toy"})
    return path


def toy_rows() -> list[dict]:
    s = w(". Mary went to the kitchen . John went to the garden .")[1:]
    return [
        graph_row("toy/train/0/q0", "train", s, w("Where is Mary ?"), "kitchen"),
        graph_row("toy/train/1/q0", "train", s, w("Where is John ?"), "garden", query_first=True),
        graph_row(
            "toy/train/2/q0",
            "train",
            w("Mary took the apple ."),
            w("What did Mary take ?"),
            "apple,milk",
            task="qa8",
        ),
        graph_row(
            "toy/dev/0/q0",
            "dev",
            w("Sandra went to the hallway ."),
            w("Where is Sandra ?"),
            "hallway",
        ),
        graph_row(
            "toy/test/0/q0",
            "test",
            w("Daniel went to the cellar ."),
            w("Where is Daniel ?"),
            "kitchen",
        ),
    ]


def test_vocabulary_and_classes_come_from_train_only(tmp_path):
    path = write_graphs(tmp_path / "g.parquet", toy_rows())
    data = load_reader_data(path, ["qa1", "qa8"])
    assert data.output == "classify"  # no candidates: Eq. 6 over the train answers
    # multi-word bAbI answers are one class; dev's "hallway" was never a train answer
    assert data.classes == ("apple,milk", "garden", "kitchen")
    assert data.vocab.itos[:2] == ("<pad>", "<unk>")
    for word in ("Sandra", "hallway", "Daniel", "cellar"):  # dev/test-only tokens
        assert word not in data.vocab.stoi
    assert {"Mary", "kitchen", "apple"} <= set(data.vocab.stoi)
    dev, test = data.splits["dev"][0], data.splits["test"][0]
    assert dev["answer"] == -1 and data.stats["dev_unseen_answer"] == 1  # kept, counted
    assert test["answer"] == data.classes.index("kitchen")
    assert dev["tokens"][0] == UNK_ID and data.stats["dev_unk_tokens"] == 3
    # descending train frequency, ties alphabetical
    counts: dict[str, int] = {}
    for row in toy_rows()[:3]:
        for t in row["tokens"]:
            counts[t] = counts.get(t, 0) + 1
    assert list(data.vocab.itos[2:]) == sorted(counts, key=lambda t: (-counts[t], t))


def test_extractive_tasks_get_attention_sum_over_train_answers_in_the_document(tmp_path):
    path = write_graphs(tmp_path / "g.parquet", toy_rows())
    data = load_reader_data(path, "qa1")  # every train answer occurs in its document
    assert data.output == "attention_sum" and data.classes == ()
    itos = data.vocab.itos
    # candidates: the document's tokens that answer some train item, in document order
    assert [itos[c] for c in data.splits["train"][0]["candidates"]] == ["kitchen", "garden"]
    assert data.splits["train"][0]["answer"] == 0 and data.splits["train"][1]["answer"] == 1
    # test: "kitchen" is a train answer but not in this document -> no candidate, an error
    assert data.splits["test"][0]["answer"] == -1
    assert data.stats["test_answer_not_in_candidates"] == 1
    every = load_reader_data(path, "qa1", {"answer_candidates": "document"})
    first = every.splits["train"][0]
    assert len(first["candidates"]) == len(set(toy_rows()[0]["tokens"][:12]))
    with pytest.raises(ConfigError, match=r"reader data\.answer_candidates: expected one of"):
        load_reader_data(path, "qa1", {"answer_candidates": "all"})


def test_min_count_drops_rare_tokens(tmp_path):
    path = write_graphs(tmp_path / "g.parquet", toy_rows())
    full = load_reader_data(path, "qa1")
    rare = load_reader_data(path, "qa1", {"min_count": 4})
    assert set(rare.vocab.itos) < set(full.vocab.itos)
    counts = {}
    for row in toy_rows()[:2]:
        for t in row["tokens"]:
            counts[t] = counts.get(t, 0) + 1
    assert set(rare.vocab.itos[2:]) == {t for t, c in counts.items() if c >= 4}


def test_spans_follow_the_segment_order(tmp_path):
    path = write_graphs(tmp_path / "g.parquet", toy_rows())
    data = load_reader_data(path, "qa1")
    first, second = data.splits["train"]
    assert first["doc_span"] == (0, 12) and first["query_span"] == (12, 16)
    assert second["query_span"] == (0, 4) and second["doc_span"] == (4, 16)
    # no query segment (LAMBADA): the context's last sentence is the query
    row = graph_row("x/0", "train", w("A b . C d e"), [], "e")
    row.update(segments=["context"], segment_starts=[0])
    assert reader_spans(row) == ((0, 3), (3, 6))


def test_task_filter_and_unknown_task(tmp_path):
    path = write_graphs(tmp_path / "g.parquet", toy_rows())
    assert load_reader_data(path, "qa8").stats["train_items"] == 1
    with pytest.raises(ReaderDataError, match=r"no items of task \['qa9'\].*qa1.*qa8"):
        load_reader_data(path, "qa9")
    with pytest.raises(
        ConfigError, match=r"reader data\.min_cnt: unknown setting \(did you mean min_count\?\)"
    ):
        load_reader_data(path, "qa1", {"min_cnt": 2})


def test_attention_sum_candidates_and_class_masks_on_the_synthetic_corpus(synthetic_graphs):
    rows, _ = load_rows(synthetic_graphs, "syn1")
    row = next(r for r in rows if r["split"] == "dev")  # places mentioned before the question
    auto = load_reader_data(synthetic_graphs, "syn1")
    assert auto.output == "attention_sum"  # every item lists candidates containing its answer
    ex = auto.splits["dev"][0]
    assert ex["graph_id"] == row["graph_id"] and len(row["candidates"]) >= 2
    assert [auto.vocab.itos[c] for c in ex["candidates"]] == row["candidates"]
    assert row["candidates"][ex["answer"]] == row["answer"]
    cls = load_reader_data(synthetic_graphs, "syn1", {"output": "classify"})
    ex = cls.splits["dev"][0]
    assert [cls.classes[i] for i in ex["allowed"]] == row["candidates"]
    assert cls.classes[ex["answer"]] == row["answer"]
    batch = make_batch(cls.splits["dev"][:3], len(cls.classes))
    assert batch["class_mask"].shape == (3, len(cls.classes))
    assert batch["class_mask"][0].tolist() == [c in row["candidates"] for c in cls.classes]
    free = load_reader_data(
        synthetic_graphs, "syn1", {"output": "classify", "restrict_to_candidates": False}
    )
    assert "class_mask" not in make_batch(free.splits["dev"][:3], len(free.classes))


def _graph_row(segments) -> dict:
    from tasks.graphs.dags import build_graph

    g = build_graph(segments)
    return {
        "graph_id": "t/0",
        "tokens": g.tokens,
        "segments": g.segments,
        "segment_starts": g.segment_starts,
        "chain": g.chain,
        "forward": g.forward,
        "backward": g.backward,
    }


@pytest.mark.parametrize("query_first", [True, False])
def test_truncation_equals_the_graph_stage_on_the_kept_sentences(query_first):
    from tasks.graphs.dags import Segment

    # sentences 0-3; mentions (start, end, cluster): Mary 0, the kitchen 1, John 2
    ctx = w("Mary went to the kitchen . John went to the kitchen . Mary left . John slept .")
    ctx_mentions = [(0, 1, 0), (3, 5, 1), (6, 7, 2), (9, 11, 1), (12, 13, 0), (15, 16, 2)]
    query, q_mentions = w("Where is Mary ?"), [(2, 3, 0)]
    kept = ctx[12:]  # the last 2 sentences
    kept_mentions = [(s - 12, e - 12, c) for s, e, c in ctx_mentions if s >= 12]

    def segs(tokens, mentions):
        both = [Segment("context", tokens, mentions), Segment("query", query, q_mentions)]
        return both[::-1] if query_first else both

    full = _graph_row(segs(ctx, ctx_mentions))
    cut, changed = truncate_context(full, 2)
    expected = _graph_row(segs(kept, kept_mentions))
    assert changed
    for key in ("tokens", "segments", "segment_starts", "chain", "forward", "backward"):
        assert cut[key] == expected[key], key
    # the query's Mary still reaches a context Mary through the coreference chain
    assert any(p >= 0 for p in cut["forward" if not query_first else "backward"][1])
    assert truncate_context(full, 4) == (full, False)


def test_batches_are_deterministic_length_bucketed_and_cover_every_item_once():
    lengths = [(i * 37) % 101 for i in range(250)]
    a = batch_order(lengths, 8, shuffle=True, seed=5, epoch=3, pool_batches=4)
    assert a == batch_order(lengths, 8, shuffle=True, seed=5, epoch=3, pool_batches=4)
    assert a != batch_order(lengths, 8, shuffle=True, seed=5, epoch=4, pool_batches=4)
    assert a != batch_order(lengths, 8, shuffle=True, seed=6, epoch=3, pool_batches=4)
    assert sorted(i for b in a for i in b) == list(range(250))
    assert sum(len(b) < 8 for b in a) == 1  # pools are whole batches: one short batch
    # bucketing: a batch spans far less length than a batch of the plain permutation would
    spread = sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in a) / len(a)
    assert spread < 35  # uniform lengths 0..100: ~25 in pools of 32 items, ~78 unsorted
    ev = batch_order(lengths, 8)  # evaluation: sorted, no randomness
    assert [lengths[i] for b in ev for i in b] == sorted(lengths)


def test_iterate_batches_feeds_collate_with_padding(synthetic_graphs):
    data = load_reader_data(synthetic_graphs, "syn1")
    runs = [
        [idx for idx, _ in iterate_batches(data, "train", 16, shuffle=True, seed=1, epoch=1)]
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    idx, batch = next(iterate_batches(data, "dev", 4))
    exs = [data.splits["dev"][i] for i in idx]
    assert batch["tokens"].shape == (4, max(e["length"] for e in exs))
    assert int(batch["mask"].sum()) == sum(e["length"] for e in exs)
    assert bool((batch["tokens"][~batch["mask"]] == PAD_ID).all())
    assert batch["forward"].shape[1] == data.num_edge_types == 2
    assert torch.equal(batch["answer"], torch.tensor([e["answer"] for e in exs]))


def test_edge_type_ablation_blanks_coreference_but_keeps_the_shape(synthetic_graphs):
    full = load_reader_data(synthetic_graphs, "syn1_coref")
    seq = load_reader_data(synthetic_graphs, "syn1_coref", {"edge_types": ["sequential"]})
    for a, b in zip(full.splits["train"], seq.splits["train"], strict=True):
        assert b["forward"][0] == a["forward"][0] and b["backward"][0] == a["backward"][0]
        assert b["forward"][1] == b["backward"][1] == [-1] * a["length"]
    assert any(p >= 0 for e in full.splits["train"] for p in e["forward"][1])
    assert seq.num_edge_types == full.num_edge_types == 2
    assert seq.signature()["edge_types"] == ["sequential"]
    with pytest.raises(ReaderDataError, match=r"unknown edge types \['hypernymy'\]"):
        load_reader_data(synthetic_graphs, "syn1", {"edge_types": ["hypernymy"]})


# --------------------------------------------------------------------------- LAMBADA


def lambada_row(gid: str, split: str, passage: str, answer: str) -> dict:
    """A LAMBADA-style GRAPHS row: one context segment (the passage without its target
    word), no query segment, no chains -- the reader takes the last sentence as the query."""
    tokens = w(passage)
    return graph_row(gid, split, tokens, None, answer, task="lambada", chain=[-1] * len(tokens))


LAMBADA_EXTRACTIVE = {"output": "attention_sum", "answer_candidates": "document"}


def test_lambada_context_flag_is_the_answer_in_the_passage_minus_its_query(tmp_path):
    rows = [
        lambada_row("l/train/0/i", "train", "Anna met Bob . Then Carl waved at", "Bob"),
        lambada_row("l/dev/0/i", "dev", "Anna met Bob . Then Carl waved at", "Carl"),
        lambada_row("l/dev/1/i", "dev", "Anna met Bob . Then Carl waved at", "Anna"),
        lambada_row("l/dev/2/i", "dev", "Anna met Dora . Then Carl waved at", "Dora"),
    ]
    data = load_reader_data(
        write_graphs(tmp_path / "g.parquet", rows), "lambada", LAMBADA_EXTRACTIVE
    )
    dev = {ex["graph_id"]: ex for ex in data.splits["dev"]}
    # "Carl" is only in the query sentence: not in the context (Chu et al. 2016 split)
    assert not dev["l/dev/0/i"]["in_context"] and dev["l/dev/0/i"]["answer"] == -1
    assert dev["l/dev/1/i"]["in_context"] and dev["l/dev/1/i"]["answer"] >= 0
    # "Dora" is in the passage but not in the train vocabulary: it embeds as <unk> but keeps a
    # per-example id, so attention sum can still pick it
    dora = dev["l/dev/2/i"]
    assert dora["in_context"] and dora["answer"] >= 0
    assert dora["tokens"][2] == UNK_ID and dora["surface"][2] == len(data.vocab)
    assert dora["candidates"][dora["answer"]] == len(data.vocab)
    assert data.stats["dev_oov_answer_in_document"] == 1
    assert data.has_subsets
    # classification, or every answer in its document: 'context' would equal 'all'
    assert not load_reader_data(
        tmp_path / "g.parquet", "lambada", {"output": "classify"}
    ).has_subsets
    rows[1]["answer"] = "Bob"
    path = write_graphs(tmp_path / "h.parquet", rows)
    assert not load_reader_data(path, "lambada", LAMBADA_EXTRACTIVE).has_subsets


def test_train_from_dev_carves_whole_documents_deterministically(tmp_path):
    rows = [
        lambada_row(f"l/dev/{d}/{k}", "dev", f"Anna met Bob{d} . Then she waved at", "Anna")
        for d in range(10)
        for k in range(1 + d % 2)  # odd documents hold two items
    ] + [lambada_row(f"l/test/{d}/0", "test", "Anna met Bob . She saw", "Bob") for d in range(2)]
    path = write_graphs(tmp_path / "g.parquet", rows)
    cfg = {"train_from_dev": 0.6, **LAMBADA_EXTRACTIVE}
    data = load_reader_data(path, "lambada", cfg)
    docs = {s: {ex["graph_id"].rsplit("/", 1)[0] for ex in exs} for s, exs in data.splits.items()}
    assert len(docs["train"]) == 6 and len(docs["dev"]) == 4 and not docs["train"] & docs["dev"]
    assert sum(len(v) for v in data.splits.values()) == len(rows)  # nothing dropped
    assert [ex["graph_id"] for ex in data.splits["test"]] == ["l/test/0/0", "l/test/1/0"]
    assert "carved by train_from_dev 0.6 (seed 13)" in data.split_notes["train"]
    assert "not a test set" in data.split_notes["dev"] and "test" not in data.split_notes
    again = load_reader_data(path, "lambada", cfg)
    assert again.splits == data.splits and again.vocab == data.vocab
    other = load_reader_data(path, "lambada", {**cfg, "train_from_dev_seed": 14})
    assert {ex["graph_id"] for ex in other.splits["train"]} != {
        ex["graph_id"] for ex in data.splits["train"]
    }
    assert data.signature()["train_from_dev"] == 0.6
    with pytest.raises(ConfigError, match=r"reader data.train_from_dev: must be < 1, got 1.0"):
        load_reader_data(path, "lambada", {"train_from_dev": 1.0})
    rows.append(lambada_row("l/train/0/0", "train", "Anna met Bob . Then she waved at", "Bob"))
    with pytest.raises(ReaderDataError, match=r"tasks without train items; this one has 1"):
        load_reader_data(write_graphs(tmp_path / "t.parquet", rows), "lambada", cfg)
