"""Readers (models/mage/readers.py): batching, shapes, padding, gradients, the attention-sum and
gated-attention arithmetic by hand, and a tiny task every reader variant must learn."""

from __future__ import annotations

import math
import random

import pytest
import torch

from models.mage.readers import (
    BiGRUReader,
    GAReader,
    MaskedBiGRU,
    collate_graphs,
    in_query_flags,
    query_vector,
    segment_spans,
    take_span,
)

READERS = [BiGRUReader, GAReader]
VARIANTS = [
    {"encoder": "gru"},
    {"encoder": "gru", "one_hot_coref": True, "max_chains": 4},
    {"encoder": "mage"},
    {"encoder": "mage", "mage_mode": "shared"},
    {"encoder": "mage", "mage_mode": "dagrnn"},
    {"encoder": "gru", "token_in_query": True},
    {"encoder": "mage", "token_in_query": True},
]
VOCAB = 16


def preds(chain: list[int], *, backward: bool = False) -> list[list[int]]:
    """[sequential, coreference] predecessors of one graph (single-token mentions), the
    layout of the GRAPHS table's forward / backward columns."""
    n = len(chain)
    order = range(n - 1, -1, -1) if backward else range(n)
    sequential = (
        [t + 1 if t + 1 < n else -1 for t in range(n)] if backward else list(range(-1, n - 1))
    )
    coref = [-1] * n
    last: dict[int, int] = {}
    for t in order:
        if chain[t] >= 0:
            coref[t] = last.get(chain[t], -1)
            last[chain[t]] = t
    return [sequential, coref]


def example(tokens, chain, doc_span, query_span, candidates, answer, **extra):
    return {
        "tokens": tokens,
        "chain": chain,
        "forward": preds(chain),
        "backward": preds(chain, backward=True),
        "doc_span": doc_span,
        "query_span": query_span,
        "candidates": candidates,
        "answer": answer,
        **extra,
    }


# document first in one item, query first in the other (§3.3: one random order per item)
EXAMPLES = [
    example([1, 2, 3, 1, 4, 9, 1], [7, -1, -1, 7, -1, -1, 7], (0, 5), (5, 7), [1, 2, 3, 4], 0),
    example([9, 2, 5, 2, 6], [-1, 3, 3, -1, -1], (1, 5), (0, 1), [2, 5, 6], 1),
]
LONGER = example(list(range(1, 12)), [-1] * 11, (0, 8), (8, 11), [1, 2, 3], 2)


def make(reader_cls, output="attention_sum", **kwargs):
    torch.manual_seed(0)
    if output == "classify":
        kwargs["num_classes"] = 5
    return reader_cls(VOCAB, 8, 6, coref_size=2, output=output, **kwargs).eval()


# --------------------------------------------------------------------------- batching helpers


def test_collate_pads_renumbers_chains_and_keeps_spans():
    batch = collate_graphs(EXAMPLES)
    assert batch["tokens"].shape == (2, 7)
    assert batch["tokens"][1].tolist() == [9, 2, 5, 2, 6, 0, 0]
    assert batch["mask"].sum(1).tolist() == [7, 5]
    assert batch["forward"].shape == batch["backward"].shape == (2, 2, 7)
    assert batch["forward"][1, 1].tolist() == [-1, -1, 1, -1, -1, -1, -1]
    assert batch["backward"][1, 0].tolist() == [1, 2, 3, 4, -1, -1, -1]
    # cluster ids 7 and 3 become 0 (first chain of each item); padding stays -1
    assert batch["chain"].tolist() == [[0, -1, -1, 0, -1, -1, 0], [-1, 0, 0, -1, -1, -1, -1]]
    assert batch["doc_span"].tolist() == [[0, 5], [1, 5]]
    assert batch["candidates"].tolist() == [[1, 2, 3, 4], [2, 5, 6, 0]]
    assert batch["candidate_mask"].tolist() == [[True] * 4, [True] * 3 + [False]]
    assert batch["placeholder"].tolist() == [-1, -1]


def test_collate_numbers_an_item_s_chains_by_first_appearance():
    """The one-hot baseline's index space is the (d, q) pair's chains (Dhingra et al. §4.1):
    cluster ids 7, 3, 12 become 0, 1, 2 in the order the item's tokens first reach them."""
    item = example([1, 2, 3, 4, 5, 6, 7], [-1, 7, 7, -1, 3, 7, 12], (0, 5), (5, 7), [1, 2], 0)
    assert collate_graphs([item])["chain"].tolist() == [[-1, 0, 0, -1, 1, 0, 2]]
    bad = dict(EXAMPLES[0], forward=[[-1, 0], [-1, -1]])
    with pytest.raises(ValueError, match="forward"):
        collate_graphs([bad])


def test_take_span_and_query_vector():
    x = torch.arange(12.0).view(2, 6, 1)
    out, mask = take_span(x, torch.tensor([[1, 4], [4, 6]]))
    assert out[..., 0].tolist() == [[1, 2, 3], [10, 11, 0]]
    assert mask.tolist() == [[True] * 3, [True, True, False]]
    # forward half at the last real token, backward half at the first
    q = torch.tensor([[[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]]])
    assert query_vector(q, torch.tensor([[True, True, False]])).tolist() == [[2.0, 10.0]]
    at = query_vector(q, torch.tensor([[True] * 3]), torch.tensor([1]))
    assert at.tolist() == [[2.0, 20.0]]


def test_masked_bigru_equals_a_packed_bidirectional_gru_with_the_same_weights():
    """Outputs (zero at padding) and gradients as torch's packed nn.GRU(bidirectional=True),
    whose state dict (the layout of earlier checkpoints) loads into MaskedBiGRU."""
    torch.manual_seed(3)
    packed_gru = torch.nn.GRU(5, 4, batch_first=True, bidirectional=True)
    mine = MaskedBiGRU(5, 4)
    mine.load_state_dict({f"rnn.{k}": v for k, v in packed_gru.state_dict().items()})
    lengths = torch.tensor([7, 3, 1, 5])
    mask = torch.arange(7).expand(4, -1) < lengths.unsqueeze(1)
    x = torch.randn(4, 7, 5) * mask.unsqueeze(-1)
    x_ref, x_mine = x.clone().requires_grad_(), x.clone().requires_grad_()
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        x_ref, lengths, batch_first=True, enforce_sorted=False
    )
    expected, _ = torch.nn.utils.rnn.pad_packed_sequence(
        packed_gru(packed)[0], batch_first=True, total_length=7
    )
    got = mine(x_mine, mask)
    torch.testing.assert_close(got, expected)
    weights = torch.randn_like(expected)
    (expected * weights).sum().backward()
    (got * weights).sum().backward()
    torch.testing.assert_close(x_mine.grad, x_ref.grad)
    grads = {k: p.grad for k, p in packed_gru.named_parameters()}
    for name, p in mine.named_parameters():
        direction, param = name.split(".")
        torch.testing.assert_close(
            p.grad, grads[param + ("_reverse" if direction == "bwd" else "")]
        )
    # the same initial values as nn.GRU(bidirectional=True) under one seed
    torch.manual_seed(5)
    fresh_packed = torch.nn.GRU(5, 4, batch_first=True, bidirectional=True)
    torch.manual_seed(5)
    fresh = MaskedBiGRU(5, 4)
    assert all(
        torch.equal(
            v, fresh.state_dict()[("bwd." + k[:-8]) if k.endswith("_reverse") else "fwd." + k]
        )
        for k, v in fresh_packed.state_dict().items()
    )


def test_graph_rows_of_the_graph_stage_feed_the_mage_reader():
    """A tasks.graphs.dags graph (query first, coreference across the two segments) numericalized
    and batched: the MAGE reader accepts its predecessor layout as is (forward preds before,
    backward preds after each token) and its spans come from segment_starts."""
    from tasks.graphs.dags import Segment, build_graph

    context = Segment(
        "context", ["mary", "went", "home", ".", "she", "slept"], [(0, 1, 5), (4, 5, 5)]
    )
    query = Segment("query", ["where", "is", "mary"], [(2, 3, 5)])
    graph = build_graph([query, context], graph_id="g", doc_id="d")
    vocab = {w: i + 1 for i, w in enumerate(sorted(set(graph.tokens)))}
    spans = segment_spans(graph.segments, graph.segment_starts, len(graph.tokens))
    assert spans == {"query": (0, 3), "context": (3, 9)}
    item = {
        "tokens": [vocab[w] for w in graph.tokens],
        "chain": graph.chain,
        "forward": graph.forward,
        "backward": graph.backward,
        "doc_span": spans["context"],
        "query_span": spans["query"],
        "candidates": [vocab["home"], vocab["mary"]],
        "answer": 0,
    }
    batch = collate_graphs([item, EXAMPLES[0]])
    # coreference: query "mary" (2) -> context "mary" (3) -> "she" (7), and back
    assert batch["forward"][0, 1, :9].tolist() == [-1, -1, -1, 2, -1, -1, -1, 3, -1]
    assert batch["backward"][0, 1, :9].tolist() == [-1, -1, 3, 7, -1, -1, -1, -1, -1]
    reader = make(BiGRUReader, encoder="mage")
    log_p = reader(batch)
    torch.testing.assert_close(reader(collate_graphs([item]))[0], log_p[0, :2], atol=1e-6, rtol=0)


# --------------------------------------------------------------------------- output arithmetic


def test_attention_sum_adds_the_attention_on_every_occurrence_by_hand():
    """Scores q.d_i = (0, 0, ln 2) give alpha = (1/4, 1/4, 1/2); token 5 occurs at positions
    0 and 2 -> 3/4, token 7 -> 1/4, token 9 never -> the floor (Kadlec et al. 2016)."""
    reader = make(BiGRUReader)
    doc = torch.tensor([[[0.0], [0.0], [math.log(2.0)]]])
    batch = {
        "candidates": torch.tensor([[5, 7, 9, 0]]),
        "candidate_mask": torch.tensor([[True, True, True, False]]),
    }
    log_p = reader.answer(
        doc, torch.ones(1, 3, dtype=torch.bool), torch.tensor([[5, 7, 5]]), torch.ones(1, 1), batch
    )
    p = log_p.exp()[0]
    torch.testing.assert_close(p[:2], torch.tensor([0.75, 0.25]))
    assert p[2] < 1e-11 and p[3] == 0


@pytest.mark.parametrize("reader_cls", [BiGRUReader, GAReader])
def test_unknown_words_share_an_embedding_but_stay_distinct_answers(reader_cls):
    """Two out-of-vocabulary words (both id 1 = <unk>) with surface ids 20 and 21: the
    embeddings see one token, attention sum two candidates (models.mage.data.surface_ids)."""
    reader = make(reader_cls)
    item = example([1, 2, 1, 3, 4], [-1] * 5, (0, 4), (4, 5), [20, 21, 2], 1)
    with_surface = collate_graphs([{**item, "surface": [20, 2, 21, 3, 4]}])
    log_p = reader(with_surface)[0].exp()
    torch.testing.assert_close(reader(collate_graphs([item]))[0, 2].exp(), log_p[2])
    assert log_p[0] > 1e-6 and log_p[1] > 1e-6  # each unknown word holds its own attention
    # without surface ids neither unknown word is a candidate the document can match
    assert (reader(collate_graphs([item]))[0, :2].exp() < 1e-11).all()


def test_classify_is_a_softmax_over_w_c_of_the_attended_document():
    """Eq. 6: h^d = alpha^T H^d, p_C = softmax(h^d W_C)."""
    reader = make(BiGRUReader, output="classify")
    doc = torch.randn(1, 3, 12)
    query = torch.randn(1, 12)
    mask = torch.tensor([[True, True, False]])
    log_p = reader.answer(doc, mask, torch.zeros(1, 3, dtype=torch.long), query, {})
    alpha = torch.softmax(doc[0, :2] @ query[0], 0)
    expected = torch.log_softmax(reader.classes.weight @ (alpha @ doc[0, :2]), 0)
    torch.testing.assert_close(log_p[0], expected)
    masked = reader.answer(
        doc, mask, torch.zeros(1, 3, dtype=torch.long), query,
        {"class_mask": torch.tensor([[True, False, True, False, False]])},
    )  # fmt: skip
    assert torch.isinf(masked[0, [1, 3, 4]]).all()
    torch.testing.assert_close(masked[0, [0, 2]].exp().sum(), torch.tensor(1.0))


def test_gated_attention_by_hand():
    """GA: x_i = d_i * sum_j softmax_j(q_j . d_i) q_j (Dhingra et al. 2016, gated attention)."""
    doc = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]])
    query = torch.tensor([[[1.0, 1.0], [3.0, -1.0], [9.0, 9.0]]])
    query_mask = torch.tensor([[True, True, False]])
    got = GAReader.gate(doc, query, query_mask)
    # token 0: scores (1, 3) ; token 1: scores (2, -2)
    a0 = torch.softmax(torch.tensor([1.0, 3.0]), 0)
    a1 = torch.softmax(torch.tensor([2.0, -2.0]), 0)
    q = query[0, :2]
    expected = torch.stack([doc[0, 0] * (a0 @ q), doc[0, 1] * (a1 @ q)])
    torch.testing.assert_close(got[0], expected)


def test_one_hot_chain_features_are_appended_to_the_embeddings():
    reader = make(BiGRUReader, one_hot_coref=True, max_chains=3)
    batch = collate_graphs(EXAMPLES)
    x = reader.embed(batch)
    assert x.shape == (2, 7, 8 + 3)
    assert x[0, :, 8:].tolist() == [[1, 0, 0], [0, 0, 0], [0, 0, 0], [1, 0, 0]] + [
        [0, 0, 0]
    ] * 2 + [[1, 0, 0]]
    assert x[1, 1, 8:].tolist() == [1, 0, 0]
    small = make(BiGRUReader, one_hot_coref=True, max_chains=1)
    batch["chain"][0, 1] = 1
    with pytest.raises(ValueError, match="max_chains"):
        small(batch)


def test_token_in_query_flags_document_words_of_the_query_by_hand():
    # item 0: document 1 2 3 1 4, query 9 1 -> the two 1s; item 1: query 9, document 2 5 2 6
    batch = collate_graphs(EXAMPLES)
    assert in_query_flags(batch).tolist() == [[1, 0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0]]
    # surface ids decide where the batch has them: two unknown words (both <unk>) differ
    surfaced = [dict(EXAMPLES[0], surface=[1, 2, 3, 20, 4, 9, 21])]
    assert in_query_flags(collate_graphs(surfaced)).tolist() == [[0, 0, 0, 0, 0, 0, 0]]


@pytest.mark.parametrize("encoder", ["gru", "mage"])
@pytest.mark.parametrize("reader_cls", READERS)
def test_token_in_query_enters_the_document_input_of_the_last_layer(reader_cls, encoder):
    plain = (
        make(reader_cls, encoder=encoder, num_layers=2)
        if reader_cls is GAReader
        else (make(reader_cls, encoder=encoder))
    )
    kwargs = {"num_layers": 2} if reader_cls is GAReader else {}
    flagged = make(reader_cls, encoder=encoder, token_in_query=True, **kwargs)
    # off by default: no feature parameters, the same module shapes as before the option
    assert plain.in_query is None and not any("in_query" in n for n, _ in plain.named_parameters())
    grown = {
        n: (p.shape, flagged.state_dict()[n].shape)
        for n, p in plain.state_dict().items()
        if flagged.state_dict()[n].shape != p.shape
    }
    last = "rnn" if reader_cls is BiGRUReader else "rnns.1"
    last = ("doc_" + last) if encoder == "gru" else last
    # only the last layer's (document) input weights grow, by the flag's 2 dimensions
    assert grown and all(n.startswith(last) and "weight_i" in n for n in grown), grown
    assert all(new[1] == old[1] + 2 for old, new in grown.values())
    # the flag moves the output: a changed feature embedding changes the distribution
    batch = collate_graphs(EXAMPLES)
    before = flagged(batch)
    with torch.no_grad():
        flagged.in_query.weight[1] += 1.0
    assert not torch.allclose(flagged(batch), before)


# --------------------------------------------------------------------------- every variant


@pytest.mark.parametrize("output", ["attention_sum", "classify"])
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(map(str, v.values())))
@pytest.mark.parametrize("reader_cls", READERS)
def test_distribution_shape_and_padding_invariance(reader_cls, variant, output):
    reader = make(reader_cls, output, **variant)
    batch = collate_graphs(EXAMPLES)
    log_p = reader(batch)
    if output == "attention_sum":
        assert log_p.shape == batch["candidates"].shape
        # every document token is a candidate in item 0: the attention sums to one over them
        torch.testing.assert_close(log_p[0].exp().sum(), torch.tensor(1.0))
        # item 1: document 2 5 2 6, candidates 2 5 6 -> all of it too, padding candidate -inf
        torch.testing.assert_close(log_p[1, :3].exp().sum(), torch.tensor(1.0))
        assert log_p[1, 3] == float("-inf")
    else:
        assert log_p.shape == (2, 5)
        torch.testing.assert_close(log_p.exp().sum(-1), torch.ones(2))
    # a longer third item pads the first two further: their outputs must not move
    padded = reader(collate_graphs([*EXAMPLES, LONGER]))
    torch.testing.assert_close(padded[:2, : log_p.shape[1]], log_p, rtol=0, atol=1e-6)
    alone = reader(collate_graphs(EXAMPLES[1:]))
    torch.testing.assert_close(alone[0], log_p[1, : alone.shape[1]], rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    "variant", [*VARIANTS[1:3], *VARIANTS[-2:]], ids=["one-hot", "mage", "gru-q", "mage-q"]
)
@pytest.mark.parametrize("reader_cls", READERS)
def test_gradients_reach_every_parameter(reader_cls, variant):
    reader = make(reader_cls, **variant).train()
    batch = collate_graphs(EXAMPLES)
    reader.loss(reader(batch), batch).backward()
    for name, p in reader.named_parameters():
        if name.startswith("classes"):
            continue  # W_C belongs to output="classify" only
        assert p.grad is not None, name
        assert p.grad.abs().sum() > 0, name


def test_placeholder_picks_the_query_representation_at_the_cloze_position():
    reader = make(GAReader, encoder="mage")
    at_ends = reader(collate_graphs(EXAMPLES))
    with_cloze = [dict(EXAMPLES[0], placeholder=5), EXAMPLES[1]]
    at_cloze = reader(collate_graphs(with_cloze))
    torch.testing.assert_close(at_cloze[1], at_ends[1])
    assert not torch.allclose(at_cloze[0], at_ends[0])
    with pytest.raises(ValueError, match="outside its query span"):
        reader(collate_graphs([dict(EXAMPLES[0], placeholder=2)]))


def test_empty_query_is_an_error_not_a_silent_zero_vector():
    empty = dict(EXAMPLES[0], query_span=(5, 5))
    for encoder in ("gru", "mage"):
        with pytest.raises(ValueError, match="empty"):
            make(BiGRUReader, encoder=encoder)(collate_graphs([empty]))


# --------------------------------------------------------------------------- learning


def successor_task(n_items: int = 10, seed: int = 3) -> list[dict]:
    """Which entity follows the queried one? Document: 6 distinct entities (ids 1-9), query:
    "? e" (id 10, then e), in a random order per item; answer: the entity after e. Mentions
    of e in the document and query share a coreference chain."""
    rng = random.Random(seed)
    items = []
    for _ in range(n_items):
        doc = rng.sample(range(1, 10), 6)
        i = rng.randrange(5)
        query = [10, doc[i]]
        candidates = sorted(doc)
        chain_doc = [0 if t == doc[i] else -1 for t in doc]
        if rng.random() < 0.5:
            tokens, chain = doc + query, chain_doc + [-1, 0]
            doc_span, query_span = (0, 6), (6, 8)
        else:
            tokens, chain = query + doc, [-1, 0] + chain_doc
            doc_span, query_span = (2, 8), (0, 2)
        items.append(
            example(tokens, chain, doc_span, query_span, candidates, candidates.index(doc[i + 1]))
        )
    return items


@pytest.mark.parametrize(
    "reader_cls, variant",
    [(BiGRUReader, {"encoder": "mage"}), (GAReader, {"encoder": "mage"}), (GAReader, {})],
    ids=["bigru-mage", "ga-mage", "ga-gru"],
)
def test_reader_fits_ten_examples(reader_cls, variant):
    torch.manual_seed(0)
    batch = collate_graphs(successor_task())
    reader = reader_cls(12, 16, 16, coref_size=4, **variant)
    optimizer = torch.optim.Adam(reader.parameters(), lr=0.02)
    for _ in range(300):
        optimizer.zero_grad()
        log_p = reader(batch)
        loss = reader.loss(log_p, batch)
        accuracy = (reader.predict(log_p) == batch["answer"]).float().mean().item()
        if accuracy == 1.0 and loss.item() < 0.05:
            break
        loss.backward()
        optimizer.step()
    assert accuracy == 1.0
    assert loss.item() < 0.05  # memorized, not right by a margin of luck
