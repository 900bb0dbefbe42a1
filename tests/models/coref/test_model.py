"""models/coref/model.py: span enumeration, pruning, antecedents, loss, encoders, windows."""

from __future__ import annotations

import math
import random

import pytest
import torch

from models.coref.model import (
    ENCODERS,
    AttentionalSentenceLinking,
    CorefConfig,
    CorefModel,
    DocTensors,
    LinearSentenceLinking,
    SentenceEncoder,
    antecedent_candidates,
    bucket_distance,
    clusters_from_antecedents,
    enumerate_spans,
    gold_antecedent_labels,
    marginal_log_likelihood_loss,
    prune_spans,
)

TINY = {
    "vocab_size": 40,
    "num_chars": 12,
    "num_genres": 3,
    "embedding_dim": 8,
    "char_embedding_dim": 3,
    "char_filters": 3,
    "lstm_size": 6,
    "ffnn_size": 8,
    "feature_size": 3,
    "asl_mlp_size": 5,
    "max_antecedents": 6,
}


# one torch thread: deterministic float sums and no spinning on a busy 2-core machine
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def make_doc(lengths: list[int], seed: int = 0, gold=(), speakers: bool = False) -> DocTensors:
    g = torch.Generator().manual_seed(seed)
    s, width = len(lengths), max(lengths, default=0)
    valid = torch.arange(width).unsqueeze(0) < torch.tensor(lengths, dtype=torch.long).view(-1, 1)
    words = torch.randint(2, TINY["vocab_size"], (s, width), generator=g) * valid
    chars = torch.randint(2, TINY["num_chars"], (s, width, 4), generator=g) * valid.unsqueeze(2)
    n = sum(lengths)
    speaker_ids = (torch.arange(n) // 5) % 2 if speakers else torch.full((n,), -1)
    gold = sorted(gold)
    return DocTensors(
        words,
        chars,
        torch.tensor(lengths, dtype=torch.long),
        speaker_ids.long(),
        genre_id=1,
        gold_starts=torch.tensor([m[0] for m in gold], dtype=torch.long),
        gold_ends=torch.tensor([m[1] for m in gold], dtype=torch.long),
        gold_clusters=torch.tensor([m[2] for m in gold], dtype=torch.long),
    )


# --------------------------------------------------------------------------- spans


def test_spans_stay_inside_sentences_up_to_max_width():
    starts, ends = enumerate_spans(torch.tensor([3, 2]), max_width=2)
    assert list(zip(starts.tolist(), ends.tolist(), strict=True)) == [
        (0, 1), (0, 2), (1, 2), (1, 3), (2, 3),  # sentence [0, 3)
        (3, 4), (3, 5), (4, 5),  # sentence [3, 5)
    ]  # fmt: skip
    assert enumerate_spans(torch.zeros(0, dtype=torch.long), 10)[0].numel() == 0


def _crosses(a, b):
    (s1, e1), (s2, e2) = sorted([a, b])
    return s1 < s2 < e1 < e2


def test_pruning_takes_the_best_spans_that_do_not_cross():
    spans = [(0, 2), (1, 3), (1, 2), (2, 3), (0, 3)]
    starts = torch.tensor([s for s, _ in spans])
    ends = torch.tensor([e for _, e in spans])
    scores = torch.tensor([5.0, 4.0, 3.0, 1.0, 0.5])
    kept = prune_spans(scores, starts, ends, k=3).tolist()
    # (1, 3) crosses (0, 2) and is skipped; (1, 2) nests inside (0, 2); then (2, 3)
    assert [spans[i] for i in kept] == [(0, 2), (1, 2), (2, 3)]
    assert prune_spans(scores, starts, ends, k=0).numel() == 0


@pytest.mark.parametrize("seed", range(5))
def test_pruning_is_greedy_non_crossing_and_sorted(seed):
    rng = random.Random(seed)
    starts, ends = enumerate_spans(torch.tensor([7, 5, 9]), max_width=4)
    scores = torch.tensor([rng.gauss(0, 1) for _ in range(starts.numel())])
    k = 8
    kept = prune_spans(scores, starts, ends, k).tolist()
    spans = list(zip(starts.tolist(), ends.tolist(), strict=True))
    chosen = [spans[i] for i in kept]
    assert 0 < len(chosen) <= k and chosen == sorted(chosen)
    assert not any(_crosses(a, b) for a in chosen for b in chosen if a != b)
    # greedy: every span scoring above the k-th kept one was kept or crosses a kept one
    threshold = min(float(scores[i]) for i in kept)
    for i, span in enumerate(spans):
        if float(scores[i]) > threshold and i not in kept:
            assert any(_crosses(span, c) for c in chosen), span


def test_antecedents_are_the_preceding_spans_nearest_first_and_masked():
    antecedents, mask = antecedent_candidates(4, max_antecedents=2)
    assert antecedents.tolist() == [[0, 0], [0, 0], [1, 0], [2, 1]]
    assert mask.tolist() == [[False, False], [True, False], [True, True], [True, True]]
    assert antecedent_candidates(1, 250)[0].shape == (1, 0)
    assert antecedent_candidates(0, 250)[0].shape == (0, 0)


def test_distance_buckets_follow_lee_et_al():
    d = torch.tensor([1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 63, 64, 1000])
    assert bucket_distance(d).tolist() == [1, 2, 3, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9]


def test_gold_labels_and_marginal_likelihood():
    # kept spans: A=(0,1), B=(2,3), C=(4,5), D=(6,7); gold: A, C in cluster 1; D in cluster 2
    doc = make_doc([8], gold=[(0, 1, 1), (4, 5, 1), (6, 7, 2)])
    starts, ends = torch.tensor([0, 2, 4, 6]), torch.tensor([1, 3, 5, 7])
    antecedents, mask = antecedent_candidates(4, 3)
    labels = gold_antecedent_labels(starts, ends, antecedents, mask, doc)
    # columns: dummy, nearest, second nearest, third nearest
    assert labels.tolist() == [
        [True, False, False, False],  # A: first of its cluster
        [True, False, False, False],  # B: not a mention
        [False, False, True, False],  # C -> A (two back)
        [True, False, False, False],  # D: no earlier mention of cluster 2
    ]
    scores = torch.tensor([[0.0, -math.inf, -math.inf, -math.inf], [0.0, 1.0, -math.inf, -math.inf],
                           [0.0, 2.0, 1.0, -math.inf], [0.0, 0.5, 0.0, -1.0]])  # fmt: skip
    loss = marginal_log_likelihood_loss(scores, labels)
    expected = (
        0.0
        - math.log(1 / (1 + math.e))
        - math.log(math.e / (1 + math.e**2 + math.e))
        - math.log(1 / (1 + math.exp(0.5) + 1 + math.exp(-1)))
    )
    assert float(loss) == pytest.approx(expected, rel=1e-5)


def test_clusters_are_components_of_the_links():
    spans = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]
    clusters = clusters_from_antecedents(
        [s for s, _ in spans], [e for _, e in spans], [-1, -1, 0, 2, -1]
    )
    assert clusters == [[(0, 1), (4, 5), (6, 7)]]
    with pytest.raises(ValueError):
        clusters_from_antecedents([0, 1], [1, 2], [-1, 1])


# --------------------------------------------------------------------------- encoders


def _sentences(seed=0):
    torch.manual_seed(seed)
    lengths = torch.tensor([4, 3, 5])
    x = torch.randn(3, 5, 7)
    return x, lengths


def _dependency(encoder, x, lengths):
    """Which sentences' outputs change when sentence 0's inputs change."""
    base = encoder(x, lengths)
    y = x.clone()
    y[0] += 1.0
    changed = encoder(y, lengths)
    return [
        not torch.allclose(base[s, : lengths[s]], changed[s, : lengths[s]], atol=1e-6)
        for s in range(3)
    ]


def test_baseline_encodes_each_sentence_alone():
    x, lengths = _sentences()
    enc = SentenceEncoder(7, 6).eval()
    assert enc(x, lengths).shape == (3, 5, 12)
    assert _dependency(enc, x, lengths) == [True, False, False]


def test_lsl_second_layer_starts_from_the_previous_sentence():
    x, lengths = _sentences()
    enc = LinearSentenceLinking(7, 6, 0.0).eval()
    assert enc(x, lengths).shape == (3, 5, 12)
    # sentence 1 depends on sentence 0 only through its initial state; sentence 2 does not
    # (it starts from sentence 1's first layer, which reads sentence 1 alone)
    assert _dependency(enc, x, lengths) == [True, True, False]
    x = x.requires_grad_()
    enc(x, lengths)[1, : lengths[1]].sum().backward()
    assert x.grad[0, : lengths[0]].abs().sum() > 0 and x.grad[2].abs().sum() == 0
    # ablation: without the link projection's weights the dependency disappears
    with torch.no_grad():
        enc.link.weight.zero_()
    assert _dependency(enc, x.detach(), lengths) == [True, False, False]


def test_lsl_initial_state_is_the_projected_final_states():
    x, lengths = _sentences()
    enc = LinearSentenceLinking(7, 6, 0.0).eval()
    with torch.no_grad():
        out = enc(x, lengths)
        # layer 1 on sentence 0 alone gives the finals that initialize sentence 1's layer 2
        _, (h_n, _) = enc.layer1(x[0:1, : lengths[0]])
        h0 = enc.link(torch.cat([h_n[0], h_n[1]], dim=1)).view(2, 1, 6)
        c0 = enc.initial_cell.unsqueeze(1)
        out1, _ = enc.layer1(x[1:2, : lengths[1]])
        expected, _ = enc.layer2(out1, (h0.contiguous(), c0.contiguous()))
    assert torch.allclose(out[1, : lengths[1]], expected[0], atol=1e-6)


@pytest.mark.parametrize("gate", ["scalar", "vector"])
def test_asl_attends_to_the_previous_sentence_through_a_gate_in_0_1(gate):
    x, lengths = _sentences()
    enc = AttentionalSentenceLinking(7, 6, 5, gate).eval()
    out = enc(x, lengths)
    assert out.shape == (3, 5, 12)
    for gates in enc.last_gates:
        assert gates.shape == (3, 5, 1 if gate == "scalar" else 7)
        assert bool(((gates >= 0) & (gates <= 1)).all())
        assert bool((gates[0] == 1).all())  # the first sentence has no previous sentence
        assert bool((gates[1:] < 1).any())
    assert _dependency(enc, x, lengths) == [True, True, False]
    # padding of the previous sentence is never attended to: changing it changes nothing
    y = x.clone()
    y[1, lengths[1] :] += 5.0
    changed = enc(y, lengths)
    assert torch.allclose(out[2, : lengths[2]], changed[2, : lengths[2]], atol=1e-6)


@pytest.mark.parametrize("gate", ["scalar", "vector"])
def test_asl_input_gradient_matches_finite_differences(gate):
    """The memory's gradient is gathered over the steps (model.py _MemoryTap), not taken
    through each step's product: checked against finite differences in float64, twice on
    one graph (each backward gathers its own steps)."""
    torch.manual_seed(0)
    x, lengths = _sentences()
    enc = AttentionalSentenceLinking(7, 6, 5, gate).double().eval()
    x = x.double().requires_grad_()
    assert torch.autograd.gradcheck(lambda t: enc(t, lengths), (x,), eps=1e-6, atol=1e-6)


# --------------------------------------------------------------------------- the model


@pytest.mark.parametrize("encoder", ENCODERS)
def test_windows_give_the_same_scores_as_one_pass(encoder):
    torch.manual_seed(0)
    lengths = [3, 5, 2, 6, 4, 1, 7, 3, 2, 5, 4, 3]  # 12 sentences, 45 words
    doc = make_doc(lengths, seed=1, speakers=True)
    whole = CorefModel(CorefConfig(**TINY, encoder=encoder, encode_window=100)).eval()
    windowed = CorefModel(CorefConfig(**TINY, encoder=encoder, encode_window=3, pair_chunk=4))
    windowed.load_state_dict(whole.state_dict())
    a, b = whole.predict(doc), windowed.predict(doc)
    assert torch.equal(a.starts, b.starts) and torch.equal(a.ends, b.ends)
    assert torch.allclose(a.scores, b.scores, atol=1e-5, equal_nan=True)
    assert a.clusters() == b.clusters()
    assert a.starts.numel() == math.floor(0.4 * 45)  # lambda * T kept spans (enough room)


@pytest.mark.parametrize("encoder", ENCODERS)
def test_empty_and_one_token_documents(encoder):
    model = CorefModel(CorefConfig(**TINY, encoder=encoder))
    for lengths in ([], [1]):
        doc = make_doc(lengths)
        out = model.predict(doc)
        assert out.clusters() == [] and out.starts.numel() == 0
        model.train()
        loss = model(doc).loss
        assert float(loss.detach()) == 0.0
        loss.backward()  # a training step on such a crop must not crash


@pytest.mark.parametrize("encoder", ENCODERS)
def test_loss_decreases_on_one_document(encoder):
    torch.manual_seed(0)
    cfg = CorefConfig(**TINY, encoder=encoder, dropout=0.0, lexical_dropout=0.0,
                      mention_loss_weight=1.0)  # fmt: skip
    model = CorefModel(cfg)
    doc = make_doc(
        [6, 5, 7], seed=2, gold=[(0, 2, 1), (7, 8, 1), (12, 14, 1), (3, 4, 2), (9, 10, 2)]
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(15):
        loss = model(doc).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.5 * losses[0]


def test_pair_scores_mask_unavailable_antecedents_and_use_features():
    torch.manual_seed(0)
    model = CorefModel(CorefConfig(**{**TINY, "max_antecedents": 3})).eval()
    out = model.predict(make_doc([10, 10], speakers=True))
    n = out.starts.numel()
    assert out.scores.shape == (n, 4) and bool((out.scores[:, 0] == 0).all())
    assert bool(torch.isneginf(out.scores[:, 1:][~out.antecedent_mask]).all())
    assert bool(torch.isfinite(out.scores[:, 1:][out.antecedent_mask]).all())
    # the speaker feature reaches the scores: changing the speakers changes them
    doc = make_doc([10, 10], speakers=True)
    doc.speaker_ids = torch.zeros_like(doc.speaker_ids)
    assert not torch.allclose(model.predict(doc).scores, out.scores, equal_nan=True)


def test_config_rejects_unknown_encoder_and_settings():
    with pytest.raises(ValueError, match="encoder"):
        CorefConfig(**TINY, encoder="gru")
    with pytest.raises(ValueError, match="unknown model setting"):
        CorefConfig.from_dict({**TINY, "lstm_units": 3})
    assert CorefConfig.from_dict(CorefConfig(**TINY).to_dict()) == CorefConfig(**TINY)


def test_blockwise_pair_layer_equals_the_concatenated_pair_vector_of_eq5():
    torch.manual_seed(0)
    model = CorefModel(CorefConfig(**TINY)).eval()
    n, d = 7, model.span_size
    spans = torch.randn(n, d)
    antecedents, _ = antecedent_candidates(n, 4)
    targets, others = torch.arange(n).repeat_interleave(4), antecedents.flatten()
    speakers = torch.tensor([0, 1, 0, -1, 1, 1, 0])
    genre = model.genre_embeddings(torch.tensor(2))
    with torch.no_grad():
        fast = model._pair_scores(
            targets, others, spans, model._pair_projections(spans), torch.zeros(n), speakers,
            genre,
        )  # fmt: skip
        phi = model.pair_features(targets, others, speakers, genre)
        target, other = spans[targets], spans[others]
        pair = torch.cat([target, other, target * other, phi], dim=1)
        reference = model.pair_scorer(pair).squeeze(1)
    assert torch.allclose(fast, reference, atol=1e-5)


@pytest.mark.parametrize(("encoder", "pair_chunk"), [("baseline", 5), ("lsl", 2048), ("asl", 1)])
def test_only_valid_pairs_scored_equals_scoring_every_slot_and_masking(encoder, pair_chunk):
    """Issue #57.3: the valid (span, antecedent) pairs scored as a flat list in chunks of
    pair_chunk pairs give what scoring every slot of the [N, K'] layout and masking the
    invalid ones after did (profile_pairs.antecedent_scores_before, the code before): the
    same scores up to summation order, -inf on the same slots, the same loss and gradients."""
    from tests.models.coref.profile_pairs import antecedent_scores_before

    torch.manual_seed(0)
    model = CorefModel(CorefConfig(**TINY, encoder=encoder, pair_chunk=pair_chunk, dropout=0.0,
                                   lexical_dropout=0.0, mention_loss_weight=1.0))  # fmt: skip
    doc = make_doc([9, 6, 11, 7], seed=4, speakers=True,
                   gold=[(0, 2, 1), (7, 8, 1), (16, 18, 1), (3, 4, 2), (20, 21, 2)])  # fmt: skip
    outputs, grads = [], []
    for scoring in (antecedent_scores_before, CorefModel._antecedent_scores):
        model.zero_grad(set_to_none=True)
        model._antecedent_scores = scoring.__get__(model)
        outputs.append(model(doc))
        outputs[-1].loss.backward()
        grads.append({n: p.grad for n, p in model.named_parameters() if p.grad is not None})
    before, after = outputs
    valid = torch.cat([torch.ones_like(before.antecedent_mask[:, :1]), before.antecedent_mask], 1)
    assert before.scores.shape == after.scores.shape == (13, 7)  # N = 0.4 x 33 words, K' = 6
    assert bool(torch.isneginf(after.scores[~valid]).all()) and int((~valid).sum()) == 21
    assert torch.allclose(after.scores[valid], before.scores[valid], rtol=1e-5, atol=1e-6)
    assert torch.allclose(after.loss, before.loss, rtol=1e-5)
    assert after.predicted_antecedents() == before.predicted_antecedents()
    assert grads[0].keys() == grads[1].keys()
    for name, grad in grads[0].items():
        assert torch.allclose(grads[1][name], grad, rtol=1e-4, atol=1e-6), name


@pytest.mark.parametrize("encoder", ENCODERS)
def test_mixed_precision_forward_and_backward(encoder):
    """The CUDA path runs under float16 autocast; CPU bfloat16 autocast has the same casting
    rules and catches dtype mismatches where no GPU is available."""
    model = CorefModel(CorefConfig(**TINY, encoder=encoder, mention_loss_weight=1.0))
    doc = make_doc([5, 4, 6], gold=[(0, 2, 1), (5, 6, 1)], speakers=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(doc)
    out.loss.backward()
    assert torch.isfinite(out.loss.detach()) and out.loss.dtype == torch.float32
    assert model.words.weight.grad is not None
