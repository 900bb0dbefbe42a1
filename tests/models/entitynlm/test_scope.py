"""The LSTM scope (model.py `run_lstm`, `word_channel`): the authors' code restarts the LSTM at
every sentence and lets a non-mention word see their context vector (jiyfeng/entitynlm,
entitynlm.h `EntityNLM::BuildGraph`); `lstm_scope: document` runs over whole documents."""

from __future__ import annotations

import torch

from models.entitynlm.data import collate, preprocess
from models.entitynlm.model import RNNLM, EntityNLMConfig, EntityNLMPair
from models.entitynlm.train import ModelSettings
from tests.models.entitynlm.helpers import doc, random_model, vocab_of

VOCAB = vocab_of(7)
#             sentence 0          sentence 1
WORDS = ["w0", "w1", "w2", "w3", "w4", "w0", "w1"]
NONE, E0 = (0, -1, 0), (1, 0, 1)
ANNOTATION = [NONE, E0, NONE, NONE, E0, NONE, NONE]  # entity 0 at words 1 and 4
STARTS = (0, 3)


def _batch(words=WORDS, starts=STARTS):
    return collate([doc(words, ANNOTATION, "d", starts)], VOCAB)


def test_the_default_is_the_authors_sentence_scope():
    assert ModelSettings().lstm_scope == "sentence"
    assert EntityNLMConfig(vocab_size=5).lstm_scope == "sentence"


def test_sentence_scope_restarts_the_lstm_with_bos_at_every_sentence():
    lm = random_model(7, seed=1)
    batch = _batch()
    with torch.no_grad():
        pred, upd = lm.contexts(batch.tokens, batch.mask, batch.sent_start)
        emb = lm.embed(batch.tokens[0])
        for a, b in ((0, 3), (3, 7)):  # each sentence alone, from the zero state, bos first
            out, _ = lm.lstm(torch.cat([lm.bos[None], emb[a:b]])[None])
            assert torch.allclose(pred[0, a:b], out[0, :-1], atol=1e-6)
            assert torch.allclose(upd[0, a:b], out[0, 1:], atol=1e-6)


def test_training_dropout_is_shared_by_the_state_before_and_after_a_word():
    """h_t predicts word t + 1 and updates word t's entity: one LSTM output, one dropout
    mask, inside each sentence (sentence scope) or document."""
    for scope in ("sentence", "document"):
        torch.manual_seed(0)
        cfg = EntityNLMConfig(vocab_size=len(VOCAB), embed_dim=6, hidden_size=8, dropout=0.5,
                              lstm_scope=scope)  # fmt: skip
        lm = EntityNLMPair(cfg).lm.train()
        batch = _batch()
        pred, upd = lm.contexts(batch.tokens, batch.mask, batch.sent_start)
        same = [t for t in range(1, 7) if scope == "document" or t != 3]  # 3 starts a sentence
        for t in same:
            assert torch.equal(pred[0, t], upd[0, t - 1]), (scope, t)


def test_non_mention_words_see_the_authors_context_vector():
    """p_cont before any mention of the document; the entity just updated after a mention
    of the same sentence; the previous sentence's last state at a sentence's start."""
    lm = random_model(7, seed=2)
    batch = _batch()
    with torch.no_grad():
        pred, upd = lm.contexts(batch.tokens, batch.mask, batch.sent_start)
        _, e_sel, e_cur, _ = lm._mention_scan(pred, upd, batch)
        got = lm.word_channel(e_cur, upd, batch)[0]
        e_after_1 = e_cur[0, 2]  # entity 0 after its update at word 1
        e_after_4 = lm.gate_update(e_sel[0, 4], upd[0, 4], lm.w_delta(upd[0, 4]))
        want = [lm.w_c(lm.cont), lm.w_e(e_sel[0, 1]), lm.w_c(e_after_1),  # sentence 0
                lm.w_c(upd[0, 2]), lm.w_e(e_sel[0, 4]), lm.w_c(e_after_4),
                lm.w_c(e_after_4)]  # fmt: skip
    for t, vector in enumerate(want):
        assert torch.allclose(got[t], vector, atol=1e-6), t
    assert torch.allclose(e_sel[0, 4], e_after_1)  # the memory crosses the sentence start


def test_document_scope_is_the_earlier_model():
    lm = random_model(7, seed=2, lstm_scope="document")
    assert not hasattr(lm, "w_c")
    batch = _batch()
    with torch.no_grad():
        pred, upd = lm.contexts(batch.tokens, batch.mask, batch.sent_start)
        out, _ = lm.lstm(torch.cat([lm.bos[None], lm.embed(batch.tokens[0])])[None])
        assert torch.allclose(pred[0], out[0, :-1], atol=1e-6)  # one pass, boundaries unused
        _, _, e_cur, _ = lm._mention_scan(pred, upd, batch)
        assert torch.allclose(lm.word_channel(e_cur, upd, batch), lm.w_e(e_cur))


def test_rnnlm_sentence_sees_nothing_of_the_earlier_sentences():
    """Sentence scope: the second sentence's word log-probabilities do not change when the
    first sentence's words do (the document scope's do)."""
    other = ["w4", "w4", "w3", *WORDS[3:]]
    for scope, same in (("sentence", True), ("document", False)):
        torch.manual_seed(0)
        cfg = EntityNLMConfig(vocab_size=len(VOCAB), embed_dim=6, hidden_size=8, lstm_scope=scope)
        rnn = RNNLM(cfg).eval()
        with torch.no_grad():
            a = rnn.token_log_probs(_batch())["x"][0, 3:]
            b = rnn.token_log_probs(_batch(other))["x"][0, 3:]
        assert torch.allclose(a, b, atol=1e-6) == same, scope


def test_preprocessing_maps_sentence_starts_through_dropped_punctuation():
    row = {"doc_id": "x", "split": "train", "sentence_starts": [0, 3, 4],
           "tokens": ["The", "cat", ".", "!", "It", "left", "."],
           "is_mention": [1, 1, 0, 0, 1, 0, 0], "entity": [0, 0, -1, -1, 0, -1, -1],
           "remaining": [2, 1, 0, 0, 1, 0, 0]}  # fmt: skip
    d = preprocess(row)
    assert d.tokens == ["the", "cat", "it", "left"]
    assert d.sentence_starts == [0, 2]  # the sentence "!" lost its only word
    assert collate([d], VOCAB).sent_start.tolist() == [[True, False, True, False]]
