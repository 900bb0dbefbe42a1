"""EntityNLM wired into the pipeline: the 5-gram item of train_entitynlm, the reranking stage
(Table 2) with a trained tiny EntityNLM, the entity-prediction predictor (Table 3)."""

from __future__ import annotations

import json

import pytest
import torch

from flows import rerank_entitynlm as rerank_stage
from flows import train_entitynlm as stage
from models.entitynlm import ngram as ngram_item
from models.entitynlm import rerank, train
from models.entitynlm.apply import (
    EntityNLMPredictor,
    EntityNLMScorer,
    as_document,
    load_entitynlm,
)
from models.entitynlm.data import Vocab, collate, document_text
from models.entitynlm.lm import RNNLMScorer
from models.entitynlm.model import RNNLM
from tasks.core.checkpoints import save_checkpoint
from tasks.core.settings import settings_to_dict
from tasks.evaluation import entity_prediction as ep
from tasks.evaluation import ngram
from tasks.evaluation.lm import perplexity
from tests.models.entitynlm.test_rerank import kbest_table
from tests.models.entitynlm.test_stage import _splits

# --------------------------------------------------------------------------- the 5-gram item


def test_5gram_item_scores_the_rnnlms_tokens_without_eos(tmp_path):
    splits = _splits()
    vocab = Vocab.build(splits["train"])
    cfg = stage.TrainEntityNLMSettings(runs=["run"])
    out = ngram_item.train_ngram(splits, vocab, cfg.ngram, str(tmp_path / "5gram" / "model.arpa"),
                                 dataset="run")  # fmt: skip
    assert out["model"] == "5gram" and out["eos_counted"] is False
    assert (tmp_path / "5gram" / "model.arpa").read_text().startswith("\\data\\\nngram 1=")
    # the same token count as the RNNLM's perplexity on the same documents
    rnnlm = RNNLMScorer(RNNLM(train.model_config(cfg.model, vocab)), vocab)
    rnn = perplexity(rnnlm, [document_text(d) for d in splits["test"]])
    assert out["selected"]["test"]["tokens"] == rnn.n_tokens == out["tokens"]["test"]
    # KenLM query's figure (with </s>) is the other convention, kept beside it
    query = ngram.perplexity(tmp_path / "5gram" / "model.arpa",
                             [d.tokens for d in splits["test"]])  # fmt: skip
    assert query["tokens"] == rnn.n_tokens + len(splits["test"])
    assert out["selected"]["test"]["ppl_with_eos"] == pytest.approx(query["perplexity"])
    assert out["test_ppl"]["mean"] == out["selected"]["test"]["ppl"] > 1.0
    json.dumps(out)  # a metrics file


# --------------------------------------------------------------------------- reranking

WORDS = ["john", "saw", "mary", ".", "he", "liked", "her", "."]
GOLD = ((0, 1), (4, 5)), ((2, 3), (6, 7))  # john/he, mary/her
VERBS = ((1, 2), (5, 6)), ((0, 1), (4, 5))  # saw/liked as a chain: never a mention in training


def _row(i: int, split: str) -> dict:
    return {"doc_id": f"k{i}", "split": split, "tokens": list(WORDS), "sentence_starts": [0, 4]}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny EntityNLM trained on gold-annotated copies of the story, saved as the stage
    saves it and loaded back through load_entitynlm."""
    torch.manual_seed(0)
    mcfg = train.ModelSettings(embed_dim=8, hidden_size=16, l_max=3, min_count=1, dropout=0.0)
    docs = [as_document(_row(i, "train"), [(s, e, c) for c, ch in enumerate(GOLD)
                                            for s, e in ch], 3)[0] for i in range(4)]  # fmt: skip
    vocab = Vocab.build(docs)
    pair = train.build_model("entitynlm", mcfg, vocab)
    opt = torch.optim.Adam(pair.lm.parameters(), lr=0.05)
    batch = collate(docs, vocab)
    for _ in range(60):
        opt.zero_grad()
        (-pair.lm.log_joint(batch).sum()).backward()
        opt.step()
    path = tmp_path_factory.mktemp("enlm") / "best.pt"
    config = {"kind": "entitynlm", **settings_to_dict(mcfg), "vocab_size": len(vocab)}
    save_checkpoint(path, pair, config, vocab=vocab.to_dict())
    return load_entitynlm(path)


def test_a_checkpoint_from_before_the_scope_setting_loads_as_document_scope(tmp_path):
    """Its weights were trained over whole documents (and it has no context channel)."""
    vocab = Vocab(["<pad>", "unk", "a"])
    mcfg = train.ModelSettings(embed_dim=4, hidden_size=4, l_max=3, lstm_scope="document")
    pair = train.build_model("entitynlm", mcfg, vocab)
    config = {"kind": "entitynlm", **settings_to_dict(mcfg), "vocab_size": len(vocab)}
    del config["lstm_scope"]
    save_checkpoint(tmp_path / "old.pt", pair, config, vocab=vocab.to_dict())
    loaded, _ = load_entitynlm(tmp_path / "old.pt")
    assert loaded.lm.config.lstm_scope == "document" and not hasattr(loaded.lm, "w_c")


def test_scorer_batches_candidates_with_shared_contexts(trained):
    pair, vocab = trained
    scorer = EntityNLMScorer(pair, vocab, batch=1)
    row = _row(0, "test")
    dot = ((3, 4), (4, 5)), ((0, 1), (6, 7))  # a mention over "." keeps it: more words
    trees = [GOLD, VERBS, dot]
    together = scorer.score_many(row, trees)
    assert len(scorer.document(row, dot).tokens) == len(scorer.document(row, GOLD).tokens) + 1
    with torch.no_grad():
        alone = [float(pair.lm.log_joint(collate([scorer.document(row, c)], vocab)))
                 for c in trees]  # fmt: skip
    assert together == pytest.approx(alone, abs=1e-4)


def test_a_document_without_words_keeps_its_one_best(trained):
    """GUM's reddit texts are masked ("___") in the release: after §4's preprocessing no word
    is left for the LM, so every tree ties at 0 and the reranker keeps the 1-best (the stage
    lists such documents in its metrics) instead of failing in the LSTM."""
    pair, vocab = trained
    scorer = EntityNLMScorer(pair, vocab)
    masked = {"doc_id": "masked", "split": "test", "tokens": ["___", "__", "_", "____"],
              "sentence_starts": [0]}  # fmt: skip
    assert scorer.score_many(masked, [(((0, 1), (2, 3)),), ()]) == [0.0, 0.0]
    assert scorer.unscored == ["masked"]
    candidates = rerank.read_kbest(kbest_table({"masked": [(2.0, [[(0, 1), (2, 3)]]), (1.0, [])]}))
    scores = rerank.lm_scores(candidates, {"masked": masked}, scorer)
    assert rerank.rerank(candidates, scores).choice == {"masked": 0}


def test_rerank_stage_lets_the_lm_overturn_a_wrong_one_best(trained, tmp_path, monkeypatch):
    docs = {f"k{i}": _row(i, "dev" if i < 2 else "test") for i in range(4)}
    # the coreference model ranks the verb chain first; gold is rank 1
    lists = {d: [(5.0, [list(c) for c in VERBS]), (4.0, [list(c) for c in GOLD])] for d in docs}
    candidates = rerank.read_kbest(kbest_table(lists))
    keys = {"dev": {d: GOLD for d in ("k0", "k1")}, "test": {d: GOLD for d in ("k2", "k3")}}
    monkeypatch.setattr(
        rerank, "load_corpus", lambda kbest_file, docs_folder: (candidates, docs, keys)
    )
    monkeypatch.setattr(rerank_stage, "load_entitynlm", lambda path: trained)
    monkeypatch.setattr(rerank_stage, "metrics_path", lambda c: tmp_path / f"{c}.json")
    cfg = rerank_stage.RerankSettings(checkpoint="unused.pt", trials=200)
    out = rerank_stage.run("tiny", cfg, track=False)
    assert json.loads((tmp_path / "tiny.json").read_text()) == out
    assert out["changed"] == {"rerank_lm": 2, "rerank_combined": 2}  # both test documents
    assert out["test"]["baseline"]["conll_f1"] < out["test"]["rerank_lm"]["conll_f1"] == 1.0
    assert out["alpha"] < 1.0 and out["dev_grid"]["1.00"] < out["dev_grid"]["0.00"]
    assert set(out["p_values"]) == {"rerank_lm", "rerank_combined"}
    assert out == rerank_stage.run("tiny", cfg, track=False)  # deterministic


# --------------------------------------------------------------------------- entity prediction


class _GoldOracleLM:
    """Stands in for EntityNLM: at each mention start a distribution peaked on the annotated
    entity index, so a correct position/entity mapping answers every slot right."""

    def __init__(self, l_max):
        self.config = type("C", (), {"l_max": l_max})()
        self.asked: list[int] = []

    def entity_predictions(self, batch):
        out = []
        ent = batch.entity[0].tolist()
        seen = set()
        for t, e in enumerate(ent):
            start = e >= 0 and (t == 0 or batch.remaining[0, t - 1] <= 1)
            if start:
                lp = torch.full((len(seen) + 1,), -10.0)
                lp[e if e in seen else len(seen)] = 0.0
                out.append((t, lp))
                self.asked.append(t)
                seen.add(e)
        return [out]


def _punctuated():
    tokens = ["\u201c", "Anna", ",", "Ben", "!", "\u201d", "She", "--", "met", "him", ".", "Carl",
              "saw", "her", "."]  # fmt: skip
    doc = {"doc_id": "p", "split": "test", "tokens": tokens, "sentence_starts": [0, 6, 11]}
    ments = [(1, 2, 7), (3, 4, 9), (6, 7, 7), (9, 10, 9), (11, 12, 4), (13, 14, 7)]
    rows = [{"doc_id": "p", "start": s, "end": e, "cluster": c} for s, e, c in ments]
    return doc, rows


def test_predictor_maps_slots_through_dropped_punctuation():
    doc, rows = _punctuated()
    rules = ep.ProtocolSettings(skip_sentences=1, max_slots=None)
    slot_list = ep.slots([doc], rows, None, rules)
    assert [(s.start, s.gold) for s in slot_list] == [(6, 7), (9, 9), (11, ep.NEW), (13, 7)]
    fake = _GoldOracleLM(l_max=3)
    predictor = EntityNLMPredictor(type("P", (), {"lm": fake})(), Vocab(["<pad>", "unk"]))
    assert ep.predict_all(predictor, [doc], slot_list) == [s.gold for s in slot_list]
    # the model saw the preprocessed words: punctuation before each mention removed
    document, kept = as_document(doc, predictor.annotation(slot_list), 3)
    assert document.tokens[:2] == ["anna", "ben"] and kept[:4] == [1, 3, 6, 8]
    assert [kept[t] for t in fake.asked] == [1, 3, 6, 9, 11, 13]
    assert predictor.unscored == 0


def test_predictor_with_a_trained_model_answers_candidates_or_new(trained):
    pair, vocab = trained
    doc, rows = _punctuated()
    slot_list = ep.slots([doc], rows, None, ep.ProtocolSettings(skip_sentences=1))
    answers = ep.predict_all(EntityNLMPredictor(pair, vocab), [doc], slot_list)
    assert all(a == ep.NEW or a in s.candidates for a, s in zip(answers, slot_list, strict=True))
