"""CoreLM's models as the project's LanguageModel (tasks/evaluation/lm.py)."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from models.corelm.evaluate import annotate_cbt, cbt_eval, cbt_items, cbt_questions, scorers
from models.corelm.lm import CoreLMScorer
from models.corelm.model import CoreLM
from models.corelm.train import EvalSettings
from tasks.core import config
from tasks.corpora.cbt import read_questions
from tasks.evaluation.lm import cbt, lambada, perplexity


@pytest.fixture(scope="module")
def scorer(tiny):
    model = CoreLM(tiny.model, n_entities=2, gating=False).eval()
    return CoreLMScorer(model, tiny.tokenizer, bos_id=tiny.bos_id, max_length=16, batch_size=3)


def _direct_logprob(tiny, text: str) -> float:
    """log P(text | BOS) straight from the backbone, one forward pass."""
    ids = [tiny.bos_id, *tiny.tokenizer(text)["input_ids"]]
    with torch.no_grad():
        logp = torch.log_softmax(tiny.model(torch.tensor([ids])).logits[0].float(), -1)
    return float(sum(logp[t - 1, ids[t]] for t in range(1, len(ids))))


def test_rolling_score_equals_the_backbone_in_one_window(tiny, scorer):
    text = "Mary went to the kitchen ."
    score = scorer.loglikelihood_rolling([text])[0]
    assert math.isclose(score.loglikelihood, _direct_logprob(tiny, text), rel_tol=1e-5)
    assert score.n_tokens == len(tiny.tokenizer(text)["input_ids"])


def test_long_texts_are_scored_in_windows_once_per_token(tiny, scorer):
    text = " ".join(["John travelled to the garden ."] * 8)
    n = len(tiny.tokenizer(text)["input_ids"])
    assert n > scorer.max_length
    p = perplexity(scorer, [text, "Mary went to the kitchen ."])
    assert p.n_tokens == n + len(tiny.tokenizer("Mary went to the kitchen .")["input_ids"])
    assert math.isfinite(p.word_perplexity) and p.word_perplexity > 0


def test_batched_requests_match_single_ones(scorer):
    reqs = [("Mary went to the", " kitchen"), ("John", " travelled to the garden"),
            ("The cake", " for")]  # fmt: skip
    together = scorer.loglikelihood(reqs)
    alone = [scorer.loglikelihood([r])[0] for r in reqs]
    for (a, ga), (b, gb) in zip(together, alone, strict=True):
        assert math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-5) and ga == gb


def test_lambada_runs_in_both_conventions(scorer):
    passages = ["Mary went to the kitchen . She picked up the apple",
                "John travelled to the garden . Then he dropped the football"]  # fmt: skip
    full, last = (lambada(scorer, passages, convention=c) for c in ("full_word", "last_token"))
    assert full.n == last.n == 2
    assert all(ll <= 0 for ll in (*full.loglikelihoods, *last.loglikelihoods))


def test_coreference_reaches_corelm_at_test_time(tiny):
    torch.manual_seed(0)
    model = CoreLM(tiny.model, n_entities=2, n_heads=2).eval()
    kw = dict(bos_id=tiny.bos_id, max_length=32)
    plain = CoreLMScorer(model, tiny.tokenizer, **kw)
    coref = CoreLMScorer(model, tiny.tokenizer, entity_mode="running_mean", **kw)
    words = ["Mary", "went", "to", "the", "kitchen", ".", "She", "picked", "up", "the", "apple"]
    coref.annotate(words, [1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0])
    text = " ".join(words)
    a, b = plain.loglikelihood_rolling([text])[0], coref.loglikelihood_rolling([text])[0]
    assert a.n_tokens == b.n_tokens and a.loglikelihood != b.loglikelihood
    assert coref.misses == 0


CBT_SAMPLE = "".join(
    [f"{i} Sentence number {i} tells of Mary and the apple .\n" for i in range(1, 21)]
    + ["21 Then Mary ate the XXXXX .\tapple\t\tapple|garden|kitchen|football\n", "\n"]
)


def _cbt_corpus(tmp_path, monkeypatch) -> list[dict]:
    qfile = tmp_path / "cbtest_CN_valid_2000ex.txt"
    qfile.write_text(CBT_SAMPLE * 2)
    docs, items, _ = read_questions(qfile, "CN", "dev")
    folder = tmp_path / "data" / "docs" / "cbt"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(docs), folder / "documents.parquet")
    pq.write_table(pa.Table.from_pylist(items), folder / "items.parquet")
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    return docs


def test_cbt_from_a_question_file_in_the_release_format(tmp_path, scorer, monkeypatch):
    _cbt_corpus(tmp_path, monkeypatch)
    loaded = cbt_items(EvalSettings(cbt="cbt"))
    assert list(loaded) == ["CN"] and len(loaded["CN"]) == 2
    item = loaded["CN"][0]
    assert len(item.context) == 20 and item.question == "Then Mary ate the XXXXX ."
    result = cbt(scorer, loaded["CN"])
    assert result.n == 2 and len(result.scores[0]) == 4


def test_cbt_is_scored_with_the_coreference_of_a_cbt_annotate_run(tmp_path, tiny, monkeypatch):
    """Table 2's CoreLM + coreference on CBT: the run's entities on every candidate's context
    (the old code skipped CBT for +coref)."""
    docs = _cbt_corpus(tmp_path, monkeypatch)
    view = tmp_path / "data" / "graphs" / "cbt-model"
    view.mkdir(parents=True)
    rows = [{"doc_id": d["doc_id"], "layer": 0, "split": d["split"],
             "entity_ids": [1 if w == "Mary" else 2 if w == "apple" else 0 for w in d["tokens"]]}
            for d in docs]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), view / "corelm.parquet")
    torch.manual_seed(0)
    model = CoreLM(tiny.model, n_entities=2, n_heads=2).eval()
    ev = EvalSettings(cbt="cbt", cbt_coref_run="cbt-model", block_size=512)
    lms = scorers("corelm", model, tiny, ev, "cpu")
    items: dict = {}
    out = cbt_eval(lms, ev, items)
    assert out["corelm/CN"]["n"] == out["corelm+coref/CN"]["n"] == 2
    assert out["corelm+coref/CN"]["unannotated_requests"] == 0
    assert len(items["cbt/corelm+coref/CN"]) == 2
    # the entities reach the candidates' scores
    questions = cbt_questions(ev)["CN"]
    coref = lms["corelm+coref"]
    assert annotate_cbt(coref, questions, {r["doc_id"]: r["entity_ids"] for r in rows}) == 2
    plain = cbt(lms["corelm"], [q.item for q in questions]).scores
    assert cbt(coref, [q.item for q in questions]).scores != plain and coref.misses == 0


def test_cloze_requests_use_the_entry_mean_of_their_context(tiny):
    """App. B (LAMBADA): "an average of the hidden representation of all the entity mention in
    that entry [...], excluding the last word": the context's mentions share one vector."""
    torch.manual_seed(0)
    model = CoreLM(tiny.model, n_entities=2, n_heads=2).eval()
    kw = dict(bos_id=tiny.bos_id, max_length=64, entity_mode="running_mean")
    entry = CoreLMScorer(model, tiny.tokenizer, **kw)
    causal = CoreLMScorer(model, tiny.tokenizer, cloze_entities="causal", **kw)
    words = ["Mary", "went", "to", "the", "kitchen", ".", "Mary", "ate", "the", "apple"]
    ents = [1, 0, 0, 0, 2, 0, 1, 0, 0, 0]  # the target (last word) carries no entity
    for lm in (entry, causal):
        lm.annotate(words, ents)
    passage = [" ".join(words)]
    a, b = (lambada(lm, passage).loglikelihoods[0] for lm in (entry, causal))
    assert a != b and entry.misses == causal.misses == 0
    context, target = entry.encode_pair(" ".join(words[:-1]), " " + words[-1])
    x = torch.tensor([[*context, *target]])  # a request with a context has no BOS
    e = torch.tensor([entry._entities[(*context, *target)]])
    n = len(context)
    with torch.no_grad():
        logits = model(x, e, entity_mode="context_mean", context_len=torch.tensor([n]))
    logp = torch.log_softmax(logits[0].float(), -1)
    want = sum(float(logp[n - 1 + k, t]) for k, t in enumerate(target))
    assert math.isclose(a, want, rel_tol=1e-5)
    # perplexity scores every token: it keeps the causal mean in both scorers (no leak)
    r1, r2 = (lm.loglikelihood_rolling(passage)[0].loglikelihood for lm in (entry, causal))
    assert r1 == r2
