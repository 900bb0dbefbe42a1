"""The released code's bi-GRU + MAGE structure (issue #58.2; models/mage/readers.py
separate_query and CharCNN, models/mage/mage_gru.py MAGEGRU.run_rows): document and query
MAGE-GRUs with their own weights, the query read from the document's memory, and character
features. Tiny sizes, float64 where outputs are compared."""

from __future__ import annotations

import pytest
import torch

from models.mage import train as tr
from models.mage.mage_gru import MAGEGRU
from models.mage.readers import BiGRUReader, CharCNN, GAReader, collate_graphs
from tests.models.mage.test_readers import EXAMPLES, VOCAB, example

# document first in every item (graphs.order: document_query), lengths differ (padding)
DOC_FIRST = [
    example([1, 2, 3, 1, 4, 9, 1], [7, -1, -1, 7, -1, -1, 7], (0, 5), (5, 7), [1, 2, 3, 4], 0),
    example([9, 2, 5, 2, 6], [-1, 3, 3, -1, 3], (0, 3), (3, 5), [2, 5, 9], 1),
    example([4, 5, 6, 7, 8, 4, 2, 4], [1, -1, -1, -1, -1, 1, -1, 1], (0, 6), (6, 8), [4, 6], 0),
]
WORDS = ["<pad>", "<unk>", "mary", "john", "went", "to", "the", "kitchen", "garden"] + [
    f"w{i}" for i in range(VOCAB - 9)
]


def make(**kwargs) -> BiGRUReader:
    torch.manual_seed(0)
    return BiGRUReader(VOCAB, 8, 6, encoder="mage", coref_size=2, **kwargs).eval()


def test_run_rows_with_a_prefix_equals_one_run_over_the_whole_sequence(float64):
    """A sequence split in two segments, the second reading the first's outputs as memory
    rows, is the one run over the whole (same weights): outputs and every gradient, the
    prefix's included (the gradient _ChainGRU hands back to it)."""
    torch.manual_seed(1)
    cell = MAGEGRU(3, 5, 2, edge_sizes=(3, 2))
    x = torch.randn(2, 7, 3)
    chain = [[-1, 0, 1, -1, 0, 1, 0], [2, -1, 2, -1, -1, 2, -1]]
    preds = torch.full((2, 2, 7), -1)
    preds[:, 0, 1:] = torch.arange(6)
    for b, c in enumerate(chain):
        last: dict[int, int] = {}
        for t, k in enumerate(c):
            if k >= 0:
                preds[b, 1, t] = last.get(k, -1)
                last[k] = t
    whole = cell(x, preds)
    split = 4
    rows = torch.where(preds >= 0, preds + 1, 0)
    head = cell.run_rows(x[:, :split], rows[..., :split], torch.ones(2, split, dtype=torch.bool))
    tail = cell.run_rows(x[:, split:], rows[..., split:], torch.ones(2, 7 - split, dtype=torch.bool),
                         head.transpose(0, 1))  # fmt: skip
    torch.testing.assert_close(torch.cat([head, tail], 1), whole)
    weights = torch.randn_like(whole)
    grads = torch.autograd.grad((whole * weights).sum(), list(cell.parameters()))
    parts = torch.autograd.grad((torch.cat([head, tail], 1) * weights).sum(),
                                list(cell.parameters()))  # fmt: skip
    for g, p in zip(grads, parts, strict=True):
        torch.testing.assert_close(p, g)
    with pytest.raises(ValueError, match="processing order"):
        cell.run_rows(x[:, split:], rows[..., split:] + 3, torch.ones(2, 3, dtype=torch.bool))


def test_separate_query_with_equal_weights_is_the_single_mage_gru(float64):
    """The released structure differs from the paper's single MAGE-GRU over the concatenation
    by its weights only: with the query's CorefGRUs given the document's, the reader's output
    and gradients are the concatenated run's, so the query reads exactly the document's chain
    states (forward) and the document the query's (backward)."""
    batch = collate_graphs(DOC_FIRST)
    shared, separate = make(), make(separate_query=True)
    state = shared.state_dict()
    separate.load_state_dict(
        {**state, **{f"query_mage.{k[4:]}": v for k, v in state.items() if k.startswith("rnn.")}}
    )
    torch.testing.assert_close(separate(batch), shared(batch))
    target = torch.randn(3, 4)

    def grads(model):
        loss = (model(batch).masked_fill(~batch["candidate_mask"], 0) * target).sum()
        names, params = zip(*model.named_parameters(), strict=True)
        return dict(zip(names, torch.autograd.grad(loss, params), strict=True))

    g_shared, g_sep = grads(shared), grads(separate)
    for name, g in g_shared.items():
        # a weight of the single MAGE-GRU: the sum of its document and query copies' gradients
        copy = f"query_mage.{name[4:]}"
        torch.testing.assert_close(g_sep[name] + g_sep.get(copy, 0), g, msg=name)
    # the query's copies get gradient of their own: the query is read with them
    assert all(float(g.abs().sum()) > 0 for n, g in g_sep.items() if n.startswith("query_mage."))


def test_separate_query_reads_the_document_s_memory_both_ways():
    """Forward: a document token changes the query's forward states; backward: a query token
    changes the document's backward states (the memory the released code hands over)."""
    model = make(separate_query=True)
    batch = collate_graphs(DOC_FIRST)
    x = model.embed(batch)
    doc, _, query, _ = model._document_then_query(x, batch)
    nudged = x.clone()
    nudged[0, 0] += 1.0  # the first document token of item 0
    _, _, query2, _ = model._document_then_query(nudged, batch)
    assert not torch.allclose(query2[0, :, :6], query[0, :, :6])  # forward half
    nudged = x.clone()
    nudged[0, 6] += 1.0  # the last query token of item 0
    doc3, _, _, _ = model._document_then_query(nudged, batch)
    assert not torch.allclose(doc3[0, :, 6:], doc[0, :, 6:])  # backward half
    torch.testing.assert_close(doc3[0, :, :6], doc[0, :, :6])  # the forward document: not
    torch.testing.assert_close(doc3[1:], doc[1:])  # other items untouched


def test_separate_query_refuses_a_query_before_the_document_and_other_encoders():
    with pytest.raises(ValueError, match="graphs.order: document_query"):
        make(separate_query=True)(collate_graphs(EXAMPLES))  # item 2: query first
    with pytest.raises(ValueError, match="separate_query"):
        BiGRUReader(VOCAB, 8, 6, encoder="gru", separate_query=True)
    with pytest.raises(ValueError, match="separate_query"):
        GAReader(VOCAB, 8, 6, encoder="mage", coref_size=2, separate_query=True, num_layers=2)


def test_char_cnn_shapes_and_the_characters_of_each_word():
    torch.manual_seed(0)
    chars = CharCNN(WORDS, filters=7, dim=4, width=3, max_word_len=6)
    assert chars.word_chars.shape == (len(WORDS), 6)
    assert chars.word_chars[0].tolist() == [0] * 6  # the padding token has no characters
    # ids in order of first occurrence: < u n k > -> 1 ... 5, then m a r y -> 6 7 8 9
    assert chars.word_chars[1].tolist() == [1, 2, 3, 4, 5, 0]
    assert chars.word_chars[2].tolist() == [6, 7, 8, 9, 0, 0]
    # "kitchen" cut at max_word_len: k i t c h e (k, i, t, h, e first seen here or before)
    assert chars.word_chars[WORDS.index("kitchen")].tolist()[0] == 4  # the k of <unk>
    tokens = torch.tensor([[2, 3, 0], [7, 2, 8]])
    out = chars(tokens)
    assert out.shape == (2, 3, 7) and bool((out >= 0).all())  # ReLU, then max over positions
    assert out[0, 2].abs().sum() == 0  # padding: zero characters, no bias
    torch.testing.assert_close(out[0, 0], out[1, 1])  # the same word, the same features
    with pytest.raises(ValueError, match="words"):
        CharCNN(None, filters=7)


def test_char_features_enter_both_document_and_query_inputs():
    model = make(char_filters=5, char_dim=3, char_width=2, max_word_len=4, words=WORDS)
    assert model.input_size == 8 + 5
    assert model.rnn.forward_rnn.input_size == 13
    log_p = model(collate_graphs(DOC_FIRST))
    assert log_p.shape == (3, 4)
    with pytest.raises(ValueError, match="one word per token id"):
        make(char_filters=5, words=WORDS[:3])


# the parameter names of today's bi-GRU + MAGE reader: the defaults leave them as they are
MAGE_KEYS = {
    "embedding.weight",
    *(f"rnn.{d}_rnn.{p}" for d in ("forward", "backward")
      for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")),
}  # fmt: skip


def test_the_flags_add_their_parameters_and_the_defaults_none():
    assert set(make().state_dict()) == MAGE_KEYS
    assert set(make(separate_query=False, char_filters=0).state_dict()) == MAGE_KEYS
    sep = set(make(separate_query=True).state_dict())
    assert sep - MAGE_KEYS == {
        k.replace("rnn.", "query_mage.", 1) for k in MAGE_KEYS - {"embedding.weight"}
    }
    chars = set(make(char_filters=5, words=WORDS).state_dict())
    assert chars - MAGE_KEYS == {"chars.embedding.weight", "chars.conv.weight"}
    both = set(
        make(separate_query=True, token_in_query=True, char_filters=5, words=WORDS).state_dict()
    )
    assert both == sep | chars | {"in_query.weight"}
    # the query's CorefGRUs take no token-in-query flag (GA.py inqry), the document's do
    m = make(separate_query=True, token_in_query=True)
    assert m.rnn.forward_rnn.input_size == m.query_mage.forward_rnn.input_size + 2
    # the bi-GRU baseline's names (doc_rnn, query_rnn: MaskedBiGRU) are untouched too
    torch.manual_seed(0)
    gru = BiGRUReader(VOCAB, 8, 6, encoder="gru", separate_query=False, char_filters=0)
    assert set(gru.state_dict()) == {"embedding.weight"} | {
        f"{side}_rnn.{d}.{p}_l0"
        for side in ("doc", "query")
        for d in ("fwd", "bwd")
        for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
    }


def test_a_seed_fixes_the_released_reader_and_its_first_update():
    batch = collate_graphs(DOC_FIRST)

    def one_step():
        model = make(separate_query=True, token_in_query=True, char_filters=5, words=WORDS)
        model.train()
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        loss = model.loss(model(batch), batch)
        loss.backward()
        opt.step()
        return loss.detach(), {k: v.detach().clone() for k, v in model.state_dict().items()}

    (l1, s1), (l2, s2) = one_step(), one_step()
    assert torch.equal(l1, l2)
    assert s1.keys() == s2.keys() and all(torch.equal(s1[k], s2[k]) for k in s1)


def test_settings_labels_and_checkpoint_configs():
    cfg = {"encoder": "mage", "token_in_query": True, "separate_query": True, "char_filters": 50}
    assert tr.model_label(cfg) == "bigru+mage16+inquery+sepquery+chars"
    resolved = tr.resolve_model(cfg)
    assert (resolved.char_dim, resolved.char_width, resolved.max_word_len) == (10, 5, 15)
    with pytest.raises(tr.CorefreproError, match=r"char_filters"):
        tr.resolve_model({"char_filters": -1})

    class Data:  # what checkpoint_config / build_model read of ReaderData
        vocab = type("V", (), {"itos": WORDS, "__len__": lambda self: len(WORDS)})()
        num_edge_types, max_chains, output, classes = 2, 0, "attention_sum", []

        def signature(self):
            return {"vocab_size": len(WORDS)}

    # a model without the new settings keeps the checkpoint config it had (no new keys)
    plain = tr.checkpoint_config({"encoder": "mage"}, Data())
    assert not set(plain["model"]) & set(tr.RELEASED_KEYS)
    assert tr.checkpoint_config(cfg, Data())["model"]["char_filters"] == 50
    tiny = {"embed_dim": 8, "hidden_size": 6, "coref_size": 2}
    model = tr.build_model({**tiny, **cfg}, Data())
    assert model.separate_query and model.chars.output_size == 50
    assert model.chars.word_chars.shape == (len(WORDS), 15)
