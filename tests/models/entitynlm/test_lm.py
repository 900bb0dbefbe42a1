"""Ji et al. 2017's three Table 1 models behind the project's one LM contract (issue #28):
the RNNLM, EntityNLM's Eq. 11 marginal and the 5-gram score a text as their own code paths
do, a text's lines are its sentences, greedy flags equal a brute-force argmax, and each is
built by the registry from a trained artifact."""

from __future__ import annotations

import math

import pytest
import torch

from models.entitynlm import ngram as ngram_item
from models.entitynlm import train
from models.entitynlm.data import Vocab, collate, document_text, text_document, token_batches
from models.entitynlm.lm import EntityNLMMarginal, RNNLMScorer
from models.entitynlm.model import RNNLM, EntityNLMConfig
from models.entitynlm.ngram import NgramLM, arpa_words
from models.entitynlm.sampling import importance_draws
from models.registry import language_model
from tasks.core.checkpoints import save_checkpoint
from tasks.core.errors import CorefreproError
from tasks.core.settings import settings_to_dict
from tasks.evaluation import ngram
from tasks.evaluation.lm import LMRequestError, UnknownLMError, perplexity
from tasks.evaluation.ngram import NgramSettings
from tests.models.entitynlm.helpers import doc, random_model, vocab_of

NONE = (0, -1, 0)


def _docs():
    words = [["w0", "w1", "w0", "w2", "w1"], ["w2", "w2", "w1"], ["w1", "w0", "w0", "w2"]]
    starts = [(0, 2), (0,), (0, 1, 3)]
    return [doc(w, [NONE] * len(w), f"r/d{k}", s)
            for k, (w, s) in enumerate(zip(words, starts, strict=True))]  # fmt: skip


def _rnnlm(scope="sentence", vocab_size=5, seed=0):
    torch.manual_seed(seed)
    cfg = EntityNLMConfig(vocab_size=vocab_size, embed_dim=6, hidden_size=8, lstm_scope=scope)
    model = RNNLM(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(3.0)  # far from uniform: argmax and scopes matter
    return model


def test_document_text_round_trips_words_and_sentences():
    for d in _docs():
        back = text_document(document_text(d), 7)
        assert back.tokens == d.tokens and back.sentence_starts == d.sentence_starts
        assert back.doc_id == "000000007" and not any(back.is_mention)
    bad = doc(["a b"], [NONE], "r/x")
    with pytest.raises(CorefreproError, match="r/x"):
        document_text(bad)


@pytest.mark.parametrize("scope", ["sentence", "document"])
def test_rnnlm_rolling_equals_the_models_own_sum(scope):
    model, vocab, docs = _rnnlm(scope), vocab_of(5), _docs()
    scores = RNNLMScorer(model, vocab).loglikelihood_rolling([document_text(d) for d in docs])
    with torch.no_grad():
        own = {d.doc_id: float(v) for g in token_batches(docs, 4096)
               for d, v in zip(g, model.log_words(collate(g, vocab)), strict=True)}  # fmt: skip
    assert [s.loglikelihood for s in scores] == [own[d.doc_id] for d in docs]
    assert [s.n_tokens for s in scores] == [len(d.tokens) for d in docs]


def test_lines_are_sentences_for_the_sentence_scope_only():
    text = "w0 w1\nw0 w2 w1"
    flat = text.replace("\n", " ")
    sentence = RNNLMScorer(_rnnlm("sentence"), vocab_of(5))
    document = RNNLMScorer(_rnnlm("document"), vocab_of(5))
    assert sentence.loglikelihood_rolling([text]) != sentence.loglikelihood_rolling([flat])
    assert document.loglikelihood_rolling([text]) == document.loglikelihood_rolling([flat])


def test_rnnlm_requests_sum_the_continuation_and_flag_greedy_words():
    model, vocab = _rnnlm(), vocab_of(5)
    lm = RNNLMScorer(model, vocab)
    context, continuation = [2, 3, 2], [4, 3]
    (ll, greedy), = lm.loglikelihood_tokens([(context, continuation)])  # fmt: skip
    whole = doc([vocab.words[i] for i in context + continuation], [NONE] * 5, "x")
    with torch.no_grad():
        logits_lp = model.token_log_probs(collate([whole], vocab), greedy=True)
    assert math.isclose(ll, float(logits_lp["x"][0, 3:].sum()), rel_tol=1e-6)
    # brute force: the argmax after each prefix, scored one candidate word at a time
    best = []
    for k in range(3, 5):
        cands = {}
        for w in range(1, 5):  # every word but the padding
            ids = context + continuation
            ids = ids[:k] + [w]
            d = doc([vocab.words[i] for i in ids], [NONE] * len(ids), "c")
            with torch.no_grad():
                cands[w] = float(model.token_log_probs(collate([d], vocab))["x"][0, k])
        best.append(max(cands, key=cands.get))
    assert greedy == (best == continuation)
    (_, now_greedy), = lm.loglikelihood_tokens([(context, best)])  # fmt: skip
    assert now_greedy is True


def test_entitynlm_marginal_equals_the_draws_of_the_old_path():
    """The contract's estimate is Eq. 11 as sampling.importance_draws computes it: the same
    batches, the same generator stream, so the same numbers (not merely close)."""
    lm, q = random_model(vocab_size=5, seed=1), random_model(vocab_size=5, proposal=True, seed=2)
    vocab, docs = vocab_of(5), _docs()
    scorer = EntityNLMMarginal(lm, q, vocab, samples=7, seed=3, max_tokens=8)
    scores = scorer.loglikelihood_rolling([document_text(d) for d in docs])
    generator, expected, best = torch.Generator().manual_seed(3), {}, {}
    for group in token_batches(docs, 8):
        log_px, top = importance_draws(lm, q, collate(group, vocab), 7, generator)
        expected.update((d.doc_id, float(v)) for d, v in zip(group, log_px, strict=True))
        best.update((d.doc_id, float(v)) for d, v in zip(group, top, strict=True))
    assert [s.loglikelihood for s in scores] == [expected[d.doc_id] for d in docs]
    assert scorer.best_draws == [best[d.doc_id] for d in docs]
    again = scorer.importance_perplexity(docs)  # each call draws afresh from the seed
    assert [again["documents"][d.doc_id]["log_px"] for d in docs] == [
        s.loglikelihood for s in scores
    ]
    assert again["ppl"] == perplexity(scorer, [document_text(d) for d in docs]).token_perplexity
    with pytest.raises(LMRequestError, match="whole texts only"):
        scorer.loglikelihood([("w0 w1", " w2")])


def test_ngram_scores_as_kenlm_and_its_requests_add_up(tmp_path):
    docs = [["w0", "w1", "w0", "w2"], ["w1", "w1", "w2", "w0", "w1"], ["w2", "w0"]] * 3
    path = ngram.estimate_arpa(docs, tmp_path / "m.arpa", 3, discount_fallback=[0.5, 1.0, 1.5])
    model, vocab = ngram.load(path), vocab_of(5)
    lm = NgramLM(model, vocab)
    (rolled,) = lm.loglikelihood_rolling(["w0 w1 w0 w2"])
    log10 = sum(s[0] for s in model.full_scores("w0 w1 w0 w2", bos=True, eos=False))
    assert rolled.n_tokens == 4 and math.isclose(rolled.loglikelihood, log10 * math.log(10))
    (ll, greedy), = lm.loglikelihood([("w0 w1", " w0 w2")])  # fmt: skip
    (head,) = lm.loglikelihood_rolling(["w0 w1"])
    assert math.isclose(ll, rolled.loglikelihood - head.loglikelihood, rel_tol=1e-6)

    def argmax_after(prefix: list[int]) -> int:  # brute force, ties to the lower id
        return max(
            range(1, len(vocab)), key=lambda w: lm.loglikelihood_tokens([(prefix, [w])])[0][0]
        )

    context = [2, 3]  # w0 w1
    assert greedy == (argmax_after(context) == 2 and argmax_after([*context, 2]) == 4)
    first = argmax_after(context)
    best = [first, argmax_after([*context, first])]
    assert lm.loglikelihood_tokens([(context, best)])[0][1] is True
    from_file = language_model("5gram", checkpoint=path)
    assert (
        from_file.vocab.words == ["<pad>", "unk", "w0", "w1", "w2"] == ["<pad>", *arpa_words(path)]
    )
    assert from_file.loglikelihood_rolling(["w0 w1 w0 w2"]) == [rolled]


def test_the_registry_builds_each_table1_lm_from_its_checkpoint(tmp_path):
    vocab = vocab_of(5)
    mcfg = train.ModelSettings(embed_dim=6, hidden_size=8, l_max=3, min_count=1)
    texts = [document_text(d) for d in _docs()]
    for kind in ("rnnlm", "entitynlm"):
        torch.manual_seed(0)
        model = train.build_model(kind, mcfg, vocab).eval()
        path = tmp_path / kind / "best.pt"
        config = {"kind": kind, **settings_to_dict(mcfg), "vocab_size": len(vocab)}
        save_checkpoint(path, model, config, vocab=vocab.to_dict())
        loaded = language_model(kind, checkpoint=path)
        direct = (RNNLMScorer(model, vocab) if kind == "rnnlm"
                  else EntityNLMMarginal(model.lm, model.proposal, vocab))  # fmt: skip
        assert loaded.loglikelihood_rolling(texts) == direct.loglikelihood_rolling(texts)
    with pytest.raises(UnknownLMError, match="known: 5gram, corelm, entitynlm, rnnlm, table"):
        language_model("kenlm")


def test_the_5gram_item_goes_through_the_contract(tmp_path):
    """Table 1's 5-gram figure: the contract's token perplexity, equal to KenLM's words-only
    sum (10^(-sum log10 / T)) the item computed before (the metrics keep 6 digits)."""
    from tests.models.entitynlm.test_stage import _splits

    splits = _splits()
    vocab = Vocab.build(splits["train"])
    out = ngram_item.train_ngram(splits, vocab, NgramSettings(),
                                 str(tmp_path / "5gram" / "model.arpa"), dataset="run")  # fmt: skip
    model = ngram.load(tmp_path / "5gram" / "model.arpa")
    test = [vocab.unk(d.tokens) for d in splits["test"]]
    log10 = sum(s[0] for d in test for s in model.full_scores(" ".join(d), bos=True, eos=False))
    tokens = sum(len(d) for d in test)
    assert math.isclose(out["test_ppl"]["mean"], 10 ** (-log10 / tokens), rel_tol=1e-5)  # jsonable


def test_a_trained_rnnlm_serves_harness_requests_on_raw_text(tmp_path):
    """The harness model `corefrepro` with lm=rnnlm: a raw text gets §4's word rule (lowercase,
    numbers -> num) before the vocabulary, so it scores as the preprocessed document does."""
    pytest.importorskip("lm_eval")
    from lm_eval.api.instance import Instance

    from models.harness import HarnessLM

    vocab = Vocab(["<pad>", "unk", "john", "num", "saw", "mary"])
    mcfg = train.ModelSettings(embed_dim=6, hidden_size=8, l_max=3, min_count=1)
    torch.manual_seed(0)
    model = train.build_model("rnnlm", mcfg, vocab).eval()
    path = tmp_path / "best.pt"
    config = {"kind": "rnnlm", **settings_to_dict(mcfg), "vocab_size": len(vocab)}
    save_checkpoint(path, model, config, vocab=vocab.to_dict())
    harness = HarnessLM(lm="rnnlm", checkpoint=str(path), batch_size=2, device="cpu")
    raw = Instance(
        "loglikelihood_rolling", {}, ("John saw 12 Mary\nMary saw John",), 0, ("t", 0, 1)
    )
    (theirs,) = harness.loglikelihood_rolling([raw])
    (ours,) = RNNLMScorer(model, vocab).loglikelihood_rolling(["john saw num mary\nmary saw john"])
    assert theirs == ours.loglikelihood
    pair = Instance("loglikelihood", {}, ("John saw", " Mary"), 0, ("t", 0, 1))
    assert harness.loglikelihood([pair]) == RNNLMScorer(model, vocab).loglikelihood(
        [("john saw", " mary")]
    )
