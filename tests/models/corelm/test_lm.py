"""CoreLM's models as the project's LanguageModel (tasks/evaluation/lm.py)."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from pytest import approx

from flows.train_corelm import eval_data
from models.corelm.evaluate import (
    _lambada_passages,
    annotate_cbt,
    cbt_eval,
    cbt_items,
    cbt_questions,
    eval_splits,
    lambada_eval,
    scorers,
    wikitext2,
    wikitext103,
)
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


def _passages(ev):
    return _lambada_passages(ev, eval_data(ev))


def _cbt_items(ev):
    return cbt_items(ev, eval_data(ev))


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
    loaded = _cbt_items(EvalSettings(cbt="cbt"))
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
    out = cbt_eval(lms, ev, eval_data(ev), items)
    assert out["corelm/CN"]["n"] == out["corelm+coref/CN"]["n"] == 2
    assert out["corelm+coref/CN"]["unannotated_requests"] == 0
    assert len(items["cbt/corelm+coref/CN"]) == 2
    # the entities reach the candidates' scores
    questions = cbt_questions(ev, eval_data(ev))["CN"]
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


# --- windows: the edge cases of #28 against a brute-force reference ---------------------------


@pytest.fixture(scope="module")
def sharp(tiny):
    """A random GPT-2 whose predictions depend strongly on the context (large weights): with
    the near-uniform `tiny`, one token of context more or less changes a score by ~1e-6."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tiny.tokenizer), n_positions=64, n_embd=32, n_layer=2,
                        n_head=2, initializer_range=0.5)  # fmt: skip
    return GPT2LMHeadModel(config).eval()


def _scorer(sharp, tiny, **kw):
    model = CoreLM(sharp, n_entities=2, gating=False).eval()
    return CoreLMScorer(model, tiny.tokenizer, bos_id=tiny.bos_id, max_length=8, **kw)


def _reference(model, bos, context, continuation, max_length, stride=None):
    """Sum of log P(token | its window's tokens before it), one unpadded forward pass per token.

    The windows as lm-evaluation-harness defines them (lm_eval/utils.py
    get_rolling_token_windows, context_len = max_length - stride + 1): the continuation in
    chunks (the first max_length tokens, then `stride` each); a chunk ending at position `end`
    of prefix + continuation sees the max_length tokens before `end - 1`.
    """
    prefix = list(context) or [bos]
    whole, stride = [*prefix, *continuation], stride or max_length
    total, done = 0.0, 0
    while done < len(continuation):
        size = min(len(continuation) - done, max_length if done == 0 else stride)
        end = len(prefix) + done + size
        start = max(0, end - 1 - max_length)
        for t in range(end - size, end):
            with torch.no_grad():
                logits = model(torch.tensor([whole[start:t]])).logits[0, -1]
            total += float(torch.log_softmax(logits.float(), -1)[whole[t]])
        done += size
    return total


def _ids(tiny, n: int, seed: int = 0) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, len(tiny.tokenizer), (n,), generator=g).tolist()


@pytest.mark.parametrize(
    ("n_context", "n_continuation"),
    [(5, 8), (5, 9), (5, 21), (0, 8), (0, 9), (0, 21), (3, 1), (0, 1)],
    ids=["cont=window", "cont=window+1", "cont>2windows", "empty-ctx=window",
         "empty-ctx=window+1", "empty-ctx>2windows", "one-token", "empty-ctx-one-token"],
)  # fmt: skip
def test_requests_equal_the_brute_force_reference(tiny, sharp, n_context, n_continuation):
    lm = _scorer(sharp, tiny, batch_size=3)
    context, continuation = _ids(tiny, n_context, 1), _ids(tiny, n_continuation, 2)
    (ll, _), (again, _) = lm.loglikelihood_tokens([(context, continuation)] * 2)
    want = _reference(sharp, tiny.bos_id, context, continuation, 8)
    assert math.isclose(ll, want, rel_tol=1e-6) and ll == again
    if not context:  # empty context = the text from its start = context [bos]
        ((explicit, _),) = lm.loglikelihood_tokens([([tiny.bos_id], continuation)])
        assert math.isclose(ll, explicit, rel_tol=1e-6)


def test_the_reference_tells_one_token_of_context_apart(tiny, sharp):
    """The old scorer's error (the first token of a window-long continuation scored from the
    last position) moves the score far beyond the tolerance on this model."""
    context, continuation = _ids(tiny, 5, 1), _ids(tiny, 8, 2)
    full = _reference(sharp, tiny.bos_id, context, continuation, 8)
    shifted = _reference(sharp, tiny.bos_id, context[-1:], continuation, 7)
    assert not math.isclose(full, shifted, rel_tol=1e-3)


@pytest.mark.parametrize("stride", [None, 8, 3, 1])
def test_rolling_scores_equal_the_brute_force_reference(tiny, sharp, stride):
    lm = _scorer(sharp, tiny, stride=stride)
    tokens = _ids(tiny, 23, 3)
    score = lm._loglikelihood_rolling_tokens([tokens])[0]
    assert score.n_tokens == 23
    want = _reference(sharp, tiny.bos_id, [], tokens, 8, stride)
    assert math.isclose(score.loglikelihood, want, rel_tol=1e-6)


def test_the_last_window_has_full_context(tiny, sharp):
    """The harness's last window sees max_length tokens, not the one token before it."""
    lm = _scorer(sharp, tiny)
    tokens = _ids(tiny, 9, 4)  # one window of 8, then one token
    with torch.no_grad():
        logits = sharp(torch.tensor([tokens[:8]])).logits[0, -1]
    last = float(torch.log_softmax(logits.float(), -1)[tokens[8]])
    first = lm.loglikelihood_tokens([([tiny.bos_id], tokens[:8])])[0][0]
    assert math.isclose(lm._loglikelihood_rolling_tokens([tokens])[0].loglikelihood,
                        first + last, rel_tol=1e-6)  # fmt: skip


def test_the_memo_is_bounded_and_changes_no_score(tiny, sharp):
    small, big = _scorer(sharp, tiny, memo_size=2, batch_size=4), _scorer(sharp, tiny)
    reqs = [(_ids(tiny, 4, s), _ids(tiny, 3 + s % 7, s + 50)) for s in range(12)]
    a, b = small.loglikelihood_tokens(reqs * 2), big.loglikelihood_tokens(reqs)
    assert len(small._memo) <= 2
    assert [x for x, _ in a] == approx([x for x, _ in b * 2], rel=1e-6)
    assert [g for _, g in a] == [g for _, g in b * 2]
    with pytest.raises(ValueError):
        _scorer(sharp, tiny, stride=9)


# --- LAMBADA as released (#28) -----------------------------------------------------------------


def _lambada_corpus(tmp_path, monkeypatch, texts: list[str], plain_test: str = "") -> None:
    from tasks.corpora import lambada as corpus

    raw = tmp_path / "data" / "raw" / "lambada"
    raw.mkdir(parents=True)
    (raw / corpus.DEV_FILE).write_text("mary went to the kitchen\n")
    if plain_test:
        (raw / corpus.TEST_FILE).write_text(plain_test)
    (raw / corpus.OPENAI_FILE).write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    out = corpus.normalize(raw, {})
    folder = tmp_path / "data" / "docs" / "lambada"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(out.documents), folder / "documents.parquet")
    pq.write_table(pa.Table.from_pylist(out.items), folder / "items.parquet")
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)


def test_lambada_scores_the_passages_as_released(tmp_path, tiny, scorer, monkeypatch):
    texts = ["Mary went to the kitchen.\n\nShe picked up the apple",
             "John travelled to the garden.\nThen he dropped the football"]  # fmt: skip
    _lambada_corpus(tmp_path, monkeypatch, texts)
    ev = EvalSettings(lambada="lambada", lambada_split="test")
    passages, _ = _passages(ev)
    assert passages == texts
    items: dict = {}
    out = lambada_eval({"corelm": scorer}, ev, eval_data(ev), items)
    want = lambada(scorer, texts)  # the harness's request: context = text.rpartition(" ")[0]
    assert out["corelm/full_word"]["accuracy"] == want.accuracy
    assert math.isclose(out["corelm/full_word"]["perplexity"], want.perplexity, rel_tol=1e-12)
    joined = lambada(scorer, [" ".join(t.split()) for t in texts])
    assert joined.loglikelihoods != want.loglikelihoods  # the line breaks are scored


def test_the_test_split_scores_one_release_of_its_passages(tmp_path, monkeypatch):
    """LAMBADA's test split holds the same passages twice (plain tokenized and OpenAI's
    detokenized); auto scores OpenAI's (App. A, the harness's lambada_openai), never both."""
    texts = ["Mary went to the kitchen.\n\nShe picked up the apple"]
    _lambada_corpus(
        tmp_path,
        monkeypatch,
        texts,
        plain_test="mary went to the kitchen . she picked up the apple\n",
    )
    auto, _ = _passages(EvalSettings(lambada="lambada", lambada_split="test"))
    plain, _ = _passages(
        EvalSettings(lambada="lambada", lambada_split="test", lambada_task="lambada")
    )
    dev, _ = _passages(EvalSettings(lambada="lambada"))
    assert auto == texts
    assert plain == ["mary went to the kitchen . she picked up the apple"]
    assert dev == ["mary went to the kitchen"]
    assert (
        _passages(
            EvalSettings(lambada="lambada", lambada_split="dev", lambada_task="lambada_openai")
        )
        is None
    )  # no OpenAI release of dev: said in the log, nothing scored


def test_lambada_coreference_annotates_the_released_text(tmp_path, tiny, monkeypatch):
    texts = ["Mary went to the kitchen.\n\nShe picked up the apple"]
    _lambada_corpus(tmp_path, monkeypatch, texts)
    view = tmp_path / "data" / "graphs" / "lambada-model"
    view.mkdir(parents=True)
    rows = [{"doc_id": "lambada/openai-test/00000", "layer": 0, "split": "test",
             "entity_ids": [1, 0, 0, 0, 0, 1, 0, 0, 0]}]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), view / "corelm.parquet")
    torch.manual_seed(0)
    model = CoreLM(tiny.model, n_entities=2, n_heads=2).eval()
    ev = EvalSettings(lambada="lambada", lambada_split="test", lambada_coref_run="lambada-model")
    lms = scorers("corelm", model, tiny, ev, "cpu")
    out = lambada_eval(lms, ev, eval_data(ev), {})
    assert "corelm+coref/full_word" in out and lms["corelm+coref"].misses == 0
    ids = tuple(lms["corelm+coref"].tokenize(texts[0]))
    assert ids in lms["corelm+coref"]._entities  # registered on the released string


# --- the scoring window and the prefix (#28) ---------------------------------------------------


def test_the_scoring_window_defaults_to_the_model_s_context(tiny):
    model = CoreLM(tiny.model, n_entities=2, gating=False).eval()
    (default,) = scorers("m", model, tiny, EvalSettings(), "cpu").values()
    assert default.max_length == tiny.max_length == 64 and default.stride is None
    (set_,) = scorers("m", model, tiny, EvalSettings(block_size=16, stride=4), "cpu").values()
    assert set_.max_length == 16 and set_.stride == 4
    assert default.bos_id == tiny.prefix_id


class _Tok:
    """A tokenizer whose BOS is not its <|endoftext|> (SmolLM2's case)."""

    def __init__(self, bos, eos):
        self.bos_token_id, self.eos_token_id = bos, eos

    def get_vocab(self):
        return {"<|endoftext|>": 0, "<s>": 1, "</s>": 2}

    def convert_tokens_to_ids(self, token):
        return self.get_vocab()[token]


def test_the_prefix_is_the_tokenizer_s_bos_as_the_harness_takes_it():
    from models.corelm.backbone import Backbone

    assert Backbone("b", None, _Tok(1, 2)).prefix_id == 1
    assert Backbone("b", None, _Tok(None, 2)).prefix_id == 2  # no BOS: EOS (HFLM)
    assert Backbone("b", None, _Tok(1, 2)).bos_id == 0  # training's separator stays


# --- WikiText-2 and WikiText-103 (#28, #33.4) -------------------------------------------------


def test_both_wikitexts_score_detokenized_articles_over_their_original_words(
    tmp_path, scorer, monkeypatch
):
    from tasks.corpora.wikitext import detokenize

    articles = {"wikitext2": [" = A = ", "mary went to the kitchen @-@ door , then 1 @,@ 000 ."],
                "wikitext103": ["john dropped the football ( there ) ."]}  # fmt: skip
    for corpus, texts in articles.items():
        folder = tmp_path / "data" / "docs" / corpus
        folder.mkdir(parents=True)
        rows = [{"doc_id": f"{corpus}/{k}", "split": "dev", "tokens": t.split()}
                for k, t in enumerate(texts)]  # fmt: skip
        rows.append({"doc_id": f"{corpus}/test", "split": "test", "tokens": ["not", "scored"]})
        pq.write_table(pa.Table.from_pylist(rows), folder / "documents.parquet")
    monkeypatch.setattr(config, "REPO_ROOT", tmp_path)
    ev = EvalSettings(wikitext2="wikitext2", wikitext103="wikitext103")
    for corpus, run in (("wikitext2", wikitext2), ("wikitext103", wikitext103)):
        originals = [" ".join(t.split()) for t in articles[corpus]]
        got = run({"corelm": scorer}, ev, eval_data(ev))["corelm"]
        want = perplexity(scorer, [detokenize(o) for o in originals], originals=originals)
        assert got["word_perplexity"] == want.word_perplexity and got["n_texts"] == len(originals)
    small = EvalSettings(wikitext2="wikitext2", wikitext2_max_words=5)
    budget = wikitext2({"corelm": scorer}, small, eval_data(small))
    assert budget["corelm"]["n_words"] == 5  # "= A =" (3 words) + the first 2 of the next
    assert (
        wikitext103({"corelm": scorer}, EvalSettings(), eval_data(EvalSettings())) == {}
    )  # not asked for: skipped


# --- memory: padded tokens per forward pass ----------------------------------------------------


def test_a_token_budget_splits_long_windows_into_smaller_passes(sharp, tiny):
    """batch_tokens caps a pass's padded input tokens (its logits are tokens x vocabulary
    floats): long windows go fewer at a time, short ones still batch_size at a time, a window
    longer than the budget alone; the scores do not depend on the grouping."""
    lm = _scorer(sharp, tiny, batch_size=4, batch_tokens=20)
    rows = [(list(range(n)), [0] * n, 1) for n in (9, 9, 9, 3, 3, 3, 3, 3, 30)]
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i][0]))
    chunks = lm._chunks(order, rows)
    assert [[len(rows[i][0]) for i in c] for c in chunks] == [[30], [9, 9], [9, 3], [3, 3, 3, 3]]
    texts = ["Mary went to the kitchen . She picked up the apple .", "John went home .", "Sam ."]
    one = _scorer(sharp, tiny, batch_size=1).loglikelihood_rolling(texts)
    capped = lm.loglikelihood_rolling(texts)
    assert [s.loglikelihood for s in capped] == approx([s.loglikelihood for s in one], rel=1e-5)
    with pytest.raises(ValueError, match="batch_tokens 0 < 1"):
        _scorer(sharp, tiny, batch_tokens=0)


def test_eval_splits_state_cbt_s_question_files_and_the_questions_of_each_type(
    tmp_path, scorer, monkeypatch
):
    """The metrics' eval_splits (issue #58.4): CBT scores every question file its corpus
    holds, so its split names them all (valid = dev, test); its size is per question type,
    what was scored (eval.cbt_max_items caps each type)."""
    from tasks.core.storage import read_table

    _cbt_corpus(tmp_path, monkeypatch)  # 2 CN questions of the valid file
    folder = tmp_path / "data" / "docs" / "cbt"
    qfile = tmp_path / "cbtest_NE_test_2500ex.txt"
    qfile.write_text(CBT_SAMPLE * 3)
    docs, items, _ = read_questions(qfile, "NE", "test")
    for name, rows in (("documents", docs), ("items", items)):
        old = read_table(folder / f"{name}.parquet").to_pylist()
        pq.write_table(pa.Table.from_pylist(old + rows), folder / f"{name}.parquet")
    ev = EvalSettings(cbt="cbt", cbt_max_items=2)
    by_task = cbt_questions(ev, eval_data(ev))
    assert {t: {q.split for q in qs} for t, qs in by_task.items()} == {
        "CN": {"dev"},
        "NE": {"test"},
    }
    out = cbt_eval({"ft": scorer}, ev, eval_data(ev), {}, by_task)
    assert out["ft/NE"]["n"] == 2  # 3 questions, capped
    assert eval_splits(ev, ["toy"], {"heldout": {}, "cbt": out}, by_task) == {
        "cbt": {"corpus": "cbt", "split": "dev+test", "size": {"CN": 2, "NE": 2},
                "unit": "questions"}
    }  # fmt: skip
    only_cn = {"CN": by_task["CN"]}  # a type not scored: its file's split is not named
    out = cbt_eval({"ft": scorer}, ev, eval_data(ev), {}, only_cn)
    assert eval_splits(ev, ["toy"], {"cbt": out}, only_cn)["cbt"]["split"] == "dev"
