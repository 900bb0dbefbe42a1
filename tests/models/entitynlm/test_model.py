"""EntityNLM model: batching and masking, the entity memory, the preprocessing, learning."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from models.entitynlm.data import Vocab, collate, preprocess
from models.entitynlm.model import RNNLM, EntityNLMConfig, EntityNLMPair
from tests.models.entitynlm.helpers import doc, random_model, vocab_of

VOCAB = vocab_of(6)
DOCS = [
    doc(["w0", "w1", "w2", "w3", "w1", "w2"],
        [(1, 0, 2), (1, 0, 1), (0, -1, 0), (1, 1, 1), (1, 0, 1), (0, -1, 0)], "a"),
    doc(["w2", "w2", "w3"], [(0, -1, 0), (1, 0, 1), (1, 0, 1)], "b"),
    doc(["w3", "w0", "w1", "w0"], [(1, 0, 3), (1, 0, 2), (1, 0, 1), (0, -1, 0)], "c"),
]  # fmt: skip


def test_batched_log_probs_equal_one_document_at_a_time():
    for proposal in (False, True):
        model = random_model(6, proposal=proposal, l_max=3, scale=1.5)
        with torch.no_grad():
            together = model.token_log_probs(collate(DOCS, VOCAB))
            for i, d in enumerate(DOCS):
                alone = model.token_log_probs(collate([d], VOCAB))
                for key, value in alone.items():
                    n = len(d.tokens)
                    assert torch.allclose(together[key][i, :n], value[0], atol=1e-5), key
                    assert (together[key][i, n:] == 0).all()  # padding contributes nothing


def test_variables_are_scored_only_where_the_story_chooses_them():
    lp = random_model(6, l_max=3).token_log_probs(collate(DOCS[:1], VOCAB))
    # R at decision points (words 0, 2, 3, 4, 5; not 1, inside the first mention)
    assert (lp["r"][0] != 0).tolist() == [True, False, True, True, True, True]
    # E and L at mention starts (0, 3, 4); the first E is the only choice (new entity): log 1
    assert (lp["l"][0] != 0).tolist() == [True, False, False, True, True, False]
    assert torch.allclose(lp["e"][0, 0], torch.tensor(0.0))
    assert (lp["e"][0, [3, 4]] < 0).all() and (lp["e"][0, [1, 2, 5]] == 0).all()


def test_entity_update_is_the_gated_convex_combination_of_eq8():
    model = random_model(6, l_max=3)
    e_old = F.normalize(torch.randn(2, 8), dim=-1)
    h = torch.randn(2, 8)
    got = model.gate_update(e_old, h, model.w_delta(h))
    delta = torch.sigmoid((model.w_delta(h) * e_old).sum(-1, keepdim=True))
    assert torch.allclose(got, F.normalize(delta * e_old + (1 - delta) * h, dim=-1))
    assert torch.allclose(got.norm(dim=-1), torch.ones(2))


def test_only_the_mentioned_entity_changes_and_e_current_follows_it():
    model = random_model(6, l_max=3)
    batch = collate(DOCS[:1], VOCAB)
    pred, upd = model.contexts(batch.tokens, batch.mask)
    _, e_sel, e_cur, _ = model._mention_scan(pred, upd, batch)
    prior = model.prior(1, 1, "cpu", pred.dtype)[0, 0]
    assert torch.allclose(e_cur[0, 0], prior)  # word 0 starts a mention: e_current = e_new
    assert torch.allclose(e_sel[0, 0], prior) and torch.allclose(e_sel[0, 3], prior)  # new
    # word 2 (R = 0) sees entity 0 as updated at word 1; word 4 (entity 0 again) sees the same
    # vector: the mention of entity 1 at word 3 left entity 0 untouched
    assert torch.allclose(e_cur[0, 2], e_sel[0, 4])
    assert not torch.allclose(e_cur[0, 2], prior)
    assert torch.allclose(e_cur[0, 5], model.gate_update(e_sel[0, 4], upd[0, 4],
                                                         model.w_delta(upd[0, 4])))  # fmt: skip


def test_entity_predictions_give_a_distribution_over_old_entities_and_new():
    model = random_model(6, l_max=3, scale=1.5)
    preds = model.entity_predictions(collate(DOCS, VOCAB))
    assert [t for t, _ in preds[0]] == [0, 3, 4]
    sizes = [len(lp) for _, lp in preds[0]]
    assert sizes == [1, 2, 3]  # new only; entity 0 or new; entities 0, 1 or new
    for _, lp in preds[0]:
        assert torch.allclose(lp.exp().sum(), torch.tensor(1.0), atol=1e-5)
    lp_e = model.token_log_probs(collate(DOCS[:1], VOCAB))["e"]
    assert torch.allclose(preds[0][2][1][0], lp_e[0, 4], atol=1e-5)  # gold entity 0 at word 4


def test_preprocessing_follows_section_4():
    row = {"doc_id": "x", "split": "train",
           "tokens": ["The", "Cat", ",", "sat", "1,000", "times", ".", "It", "--", "left", "!"],
           "is_mention": [1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0],
           "entity": [0, 0, -1, -1, -1, -1, -1, 0, -1, -1, -1],
           "remaining": [2, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0]}  # fmt: skip
    d = preprocess(row)
    assert d.tokens == ["the", "cat", "sat", "num", "times", "it", "left"]
    assert d.entity == [0, 0, -1, -1, -1, 0, -1] and d.remaining == [2, 1, 0, 0, 0, 1, 0]
    single = preprocess({**row, "entity": [0, 0, -1, -1, -1, -1, -1, 1, -1, -1, -1]})
    assert single.entity == [-1] * 7 and not any(single.is_mention)  # singletons ignored
    vocab = Vocab.build([d, d], min_count=2)
    assert vocab.unk(["cat", "dog"]) == ["cat", "unk"]


def test_a_few_training_steps_lower_the_loss():
    torch.manual_seed(0)
    cfg = EntityNLMConfig(vocab_size=len(VOCAB), embed_dim=8, hidden_size=8, l_max=3)
    for model in (EntityNLMPair(cfg), RNNLM(cfg)):
        batch = collate(DOCS, VOCAB)
        opt = torch.optim.Adam(model.parameters(), lr=0.05)

        def loss(m=model, batch=batch):
            if isinstance(m, RNNLM):
                return -m.log_words(batch).sum()
            return -(m.lm.log_joint(batch).sum() + m.proposal.log_joint(batch).sum())

        first = float(loss())
        for _ in range(30):
            opt.zero_grad()
            loss().backward()
            opt.step()
        assert float(loss()) < 0.7 * first


def test_a_batch_without_any_mention_is_scored():
    """A document whose clustering has no mention at all (a k-best tree of a weak coreference
    model on GUM) is scored like any other: only R and the words, no entity state (the chain
    table has no steps; rerank_entitynlm@gum stopped on an IndexError there)."""
    plain = doc(["w0", "w1", "w2"], [(0, -1, 0)] * 3, "plain")
    model = random_model(6, l_max=3)
    with torch.no_grad():
        lp = model.token_log_probs(collate([plain], VOCAB))
        joint = model.log_joint(collate([plain], VOCAB))
    assert (lp["e"] == 0).all() and (lp["l"] == 0).all() and (lp["r"][0] < 0).all()
    assert torch.isfinite(joint).all() and joint.shape == (1,)
