"""The LM scoring interface and evaluations, checked against sums done by hand.

Every expected number is written from the probabilities listed in conftest.py (UNIGRAM, BIGRAM),
e.g. log P("cat sat" | "the") = log 1/2 + log 2/3, never from the code's own output.
"""

from __future__ import annotations

import math
import subprocess
import sys
from math import log

import numpy as np
import pytest

from tasks.core.errors import CorefreproError
from tasks.evaluation.lm import (
    ClozeItem,
    LanguageModel,
    LMRegistryError,
    LMRequestError,
    RollingScore,
    TableLM,
    UnknownLMError,
    available_lms,
    cbt,
    get_lm,
    lambada,
    perplexity,
    register_lm,
    token_windows,
    window_spans,
)

approx = pytest.approx

# --- the interface ---------------------------------------------------------------------------


def test_loglikelihood_sums_and_greedy_flags(bigram):
    results = bigram.loglikelihood(
        [
            ("the", " cat sat"),  # cat, sat both argmax
            ("the", " dog"),  # argmax after "the" is cat
            ("", "the cat"),  # empty context = start of text: P(the | <s>) = 3/4
            ("the", " cat the"),  # cat argmax, then the (1/3) is not (sat, 2/3)
            ("the", " sunshine"),  # sun (1/4) not argmax; ##shine (3/5) is
        ]
    )
    expected = [
        (log(1 / 2) + log(2 / 3), True),
        (log(1 / 4), False),
        (log(3 / 4) + log(1 / 2), True),
        (log(1 / 2) + log(1 / 3), False),
        (log(1 / 4) + log(3 / 5), False),
    ]
    assert [greedy for _, greedy in results] == [greedy for _, greedy in expected]
    assert [ll for ll, _ in results] == approx([ll for ll, _ in expected], rel=1e-12)


def test_trailing_context_space_moves_to_the_continuation(bigram):
    # lm-evaluation-harness _encode_pair: ("the ", "cat") is scored as ("the", " cat")
    assert bigram.loglikelihood([("the ", "cat")]) == bigram.loglikelihood([("the", " cat")])
    assert bigram.loglikelihood([("the ", "cat")])[0][0] == approx(log(1 / 2), rel=1e-12)


def test_token_level_requests_place_the_boundary_inside_a_word(bigram):
    the, sun, shine = (bigram.tokenize(w)[0] for w in ("the", "sun", "##shine"))
    assert bigram.tokenize("the sunshine") == [the, sun, shine]
    ((ll, greedy),) = bigram.loglikelihood_tokens([([the, sun], [shine])])
    assert ll == approx(log(3 / 5), rel=1e-12)
    assert greedy is True


def test_numpy_token_ids_are_accepted(bigram):
    the, cat = bigram.tokenize("the cat")
    ids = np.array([the, cat], dtype=np.int64)
    assert bigram.loglikelihood_tokens([(ids[:1], ids[1:])]) == [(log(1 / 2), True)]


def test_greedy_ties_go_to_the_lowest_token_id():
    tied = TableLM({(): {"b": 0.5, "a": 0.5}})
    assert tied.loglikelihood([("", "a"), ("", "b")]) == [(log(1 / 2), True), (log(1 / 2), False)]


def test_zero_probability_is_minus_infinity(bigram):
    assert bigram.loglikelihood([("a", " cat ran")]) == [(-math.inf, False)]


def test_rolling_counts_the_model_tokens(bigram):
    (score,) = bigram.loglikelihood_rolling(["the sunshine sat"])
    assert score.n_tokens == 4  # the, sun, ##shine, sat
    assert score.loglikelihood == approx(log(3 / 4) + log(1 / 4) + log(3 / 5) + log(1), rel=1e-12)


def test_a_merge_across_the_boundary_scores_the_continuation_on_its_own():
    class Merging(TableLM):
        def tokenize(self, text):
            return super().tokenize(text.replace("sun shine", "sunshine"))

    lm = Merging({(): {"the": 1 / 2, "sun": 1 / 8, "sunshine": 1 / 8, "shine": 1 / 4}})
    # whole "the sun shine" -> [the, sunshine] does not start with context [the, sun]
    assert lm.encode_pair("the sun", " shine") == (lm.tokenize("the sun"), lm.tokenize("shine"))
    assert lm.loglikelihood([("the sun", " shine")])[0][0] == approx(log(1 / 4), rel=1e-12)


def test_empty_request_lists_give_empty_results(bigram):
    assert bigram.loglikelihood([]) == []
    assert bigram.loglikelihood_tokens([]) == []
    assert bigram.loglikelihood_rolling([]) == []


def test_bad_requests_are_refused_by_name(bigram):
    with pytest.raises(LMRequestError, match="request 1 has an empty continuation"):
        bigram.loglikelihood([("the", " cat"), ("the", "")])
    with pytest.raises(LMRequestError, match="request 0 is not a \\(context, continuation\\)"):
        bigram.loglikelihood([("the cat",)])
    with pytest.raises(LMRequestError, match="requests must be a list, not a str"):
        bigram.loglikelihood("the cat")
    with pytest.raises(LMRequestError, match="token request 0 has an empty continuation"):
        bigram.loglikelihood_tokens([([1], [])])
    with pytest.raises(LMRequestError, match="token request 0 holds something other than int"):
        bigram.loglikelihood_tokens([(["the"], [1])])
    with pytest.raises(LMRequestError, match=r"text 1 \('  '\) has no tokens"):
        bigram.loglikelihood_rolling(["the cat", "  "])
    with pytest.raises(LMRequestError, match="bigram: 'zebra' is not in the vocabulary"):
        bigram.loglikelihood([("the", " zebra")])
    with pytest.raises(LMRequestError, match="token id 99 is outside the vocabulary"):
        bigram.loglikelihood_tokens([([], [99])])
    assert issubclass(LMRequestError, CorefreproError)


def test_a_model_returning_the_wrong_number_of_results_is_caught():
    class Broken(LanguageModel):
        name = "broken"

        def tokenize(self, text):
            return [0] * len(text.split())

        def _loglikelihood_tokens(self, requests):
            return []

    with pytest.raises(CorefreproError, match="broken._loglikelihood_tokens returned 0 results"):
        Broken().loglikelihood([("a", " b")])


def test_bad_tables_are_refused():
    with pytest.raises(LMRequestError, match="sums to 0.75, not 1"):
        TableLM({(): {"a": 0.5, "b": 0.25}})
    with pytest.raises(LMRequestError, match="histories of different lengths"):
        TableLM({(): {"a": 1.0}, ("a",): {"a": 1.0}})
    with pytest.raises(LMRequestError, match="table is empty"):
        TableLM({})
    lm = TableLM({("a",): {"a": 1.0}, ("<s>",): {"b": 1.0}})
    with pytest.raises(LMRequestError, match=r"no distribution for the history \('b',\)"):
        lm.loglikelihood([("", "b b")])


def test_importing_the_module_loads_neither_torch_nor_transformers():
    code = (
        "import sys, tasks.evaluation.lm; "
        "assert not {'torch', 'transformers'} & set(sys.modules), 'heavy import'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- perplexity ------------------------------------------------------------------------------


def test_perplexity_token_and_word_level_differ_when_a_word_is_two_tokens(bigram):
    texts = ["the sunshine sat", "a dog ran"]
    # the sun ##shine sat: 3/4 1/4 3/5 1; a dog ran: 1/4 3/4 2/3
    total = log(3 / 4 * 1 / 4 * 3 / 5 * 1) + log(1 / 4 * 3 / 4 * 2 / 3)
    result = perplexity(bigram, texts)
    assert (result.n_tokens, result.n_words, result.n_texts) == (7, 6, 2)
    assert result.n_bytes == len("the sunshine sat") + len("a dog ran") == 25
    assert result.loglikelihood == approx(total, rel=1e-12)
    assert result.token_perplexity == approx(math.exp(-total / 7), rel=1e-12)
    assert result.word_perplexity == approx(math.exp(-total / 6), rel=1e-12)
    assert result.bits_per_byte == approx(-total / 25 / log(2), rel=1e-12)
    assert result.word_perplexity > result.token_perplexity


def test_unigram_perplexity_is_the_geometric_mean_inverse_probability(unigram):
    # the cat | the the sat: P = 1/2 * 1/4 * 1/2 * 1/2 * 1/4 = 1/128 over 5 tokens = 5 words
    result = perplexity(unigram, ["the cat", "the the sat"])
    assert result.token_perplexity == approx(128 ** (1 / 5), rel=1e-12)
    assert result.word_perplexity == approx(128 ** (1 / 5), rel=1e-12)
    assert (result.n_tokens, result.n_words) == (5, 5)


def test_perplexity_counts_words_and_bytes_on_the_originals_as_the_harness(unigram):
    """lm_eval/tasks/wikitext/preprocess_wikitext.py: words = len(re.split(r"\\s+", page)),
    bytes = the page's UTF-8 bytes, the page being the text before detokenization."""
    originals = [" the  cat \n", "the the sat"]  # re.split counts the empty ends: 4 + 3
    result = perplexity(unigram, ["the cat", "the the sat"], originals=originals)
    assert (result.n_tokens, result.n_words, result.n_bytes) == (5, 7, 11 + 11)
    assert result.word_perplexity == approx(128 ** (1 / 7), rel=1e-12)
    assert result.byte_perplexity == approx(128 ** (1 / 22), rel=1e-12)
    assert result.bits_per_byte == approx(math.log2(128) / 22, rel=1e-12)
    with pytest.raises(LMRequestError, match="originals"):
        perplexity(unigram, ["the cat"], originals=[])


def test_perplexity_refuses_no_texts(bigram):
    with pytest.raises(LMRequestError, match="perplexity: no texts to score"):
        perplexity(bigram, [])


# --- LAMBADA ---------------------------------------------------------------------------------

PASSAGES = ["the sunshine", "a dog", "a cat"]


def test_lambada_full_word_needs_every_token_greedy(bigram):
    result = lambada(bigram, PASSAGES, convention="full_word")
    # "sunshine" = sun (1/4, argmax is cat) + ##shine (3/5): wrong; dog after a (3/4): right;
    # cat after a (1/4, argmax dog): wrong
    assert result.correct == (False, True, False)
    assert (result.accuracy, result.n) == (approx(1 / 3), 3)
    expected = [log(1 / 4) + log(3 / 5), log(3 / 4), log(1 / 4)]
    assert result.loglikelihoods == approx(expected, rel=1e-12)
    assert result.perplexity == approx(math.exp(-sum(expected) / 3), rel=1e-12)


def test_lambada_last_token_conditions_on_the_word_s_first_tokens(bigram):
    result = lambada(bigram, PASSAGES, convention="last_token")
    # ##shine given "the sun" is the argmax (3/5 > 2/5): right, unlike the full word
    assert result.correct == (True, True, False)
    assert (result.accuracy, result.n, result.convention) == (approx(2 / 3), 3, "last_token")
    assert result.loglikelihoods == approx([log(3 / 5), log(3 / 4), log(1 / 4)], rel=1e-12)


def test_lambada_is_the_harness_request(bigram):
    # lambada_openai: context = the passage without its last word, continuation = " " + word
    full = lambada(bigram, ["a dog ran the sunshine"])
    assert full.loglikelihoods[0] == bigram.loglikelihood([("a dog ran the", " sunshine")])[0][0]


def test_lambada_bad_inputs(bigram):
    with pytest.raises(LMRequestError, match="lambada: no passages"):
        lambada(bigram, [])
    with pytest.raises(LMRequestError, match="'sunshine' has no context and last word"):
        lambada(bigram, ["sunshine"])
    with pytest.raises(LMRequestError, match="passage 0 is a int, not a str"):
        lambada(bigram, [3])
    with pytest.raises(LMRequestError, match="unknown LAMBADA convention 'bpe'"):
        lambada(bigram, PASSAGES, convention="bpe")


# --- CBT -------------------------------------------------------------------------------------

CBT_ITEMS = [
    # cat: 1/2 * 2/3 = 1/3; dog: 1/4 * 1/3 = 1/12; sunshine: 1/4 * 3/5 * 1 = 3/20 -> cat
    ClozeItem(["a dog ran"], "the XXXXX sat", ["cat", "dog", "sunshine"], "cat"),
    # the candidate alone would pick dog (1/4 > 3/20); with the rest of the sentence
    # dog sat = 1/12 < sunshine sat = 3/20 (Radford et al. 2019, §3.2)
    ClozeItem(["a dog ran"], "the XXXXX sat", ["dog", "sunshine"], "sunshine"),
    # cat ran: 1/4 * 0; dog ran: 3/4 * 2/3 = 1/2 -> dog, answer cat: wrong
    ClozeItem(["the cat sat"], "a XXXXX ran", ["cat", "dog"], "cat"),
]


def test_cbt_picks_the_candidate_with_the_rest_of_the_sentence(bigram):
    result = cbt(bigram, CBT_ITEMS)
    assert result.predictions == ("cat", "sunshine", "dog")
    assert result.correct == (True, True, False)
    assert (result.accuracy, result.n) == (approx(2 / 3), 3)
    assert result.scores[0] == approx([log(1 / 3), log(1 / 12), log(3 / 20)], rel=1e-12)
    assert result.scores[1] == approx([log(1 / 12), log(3 / 20)], rel=1e-12)
    assert result.scores[2] == (-math.inf, approx(log(1 / 2), rel=1e-12))


def test_cbt_conditions_on_the_context_sentences(bigram):
    # the blank opens the question: the candidate follows the context's last word (ran)
    result = cbt(bigram, [ClozeItem(["a dog ran"], "XXXXX cat sat", ["a", "the"], "the")])
    # a after ran: 0 -> -inf; the cat sat after ran: 1 * 1/2 * 2/3 = 1/3
    assert result.scores[0] == (-math.inf, approx(log(1 / 3), rel=1e-12))
    assert result.correct == (True,)


def test_cbt_ties_go_to_the_earliest_candidate(unigram):
    # P(cat) = P(sat) = 1/4 in the unigram
    assert cbt(unigram, [ClozeItem([], "the XXXXX", ["cat", "sat"], "cat")]).predictions == ("cat",)
    assert cbt(unigram, [ClozeItem([], "the XXXXX", ["sat", "cat"], "cat")]).predictions == ("sat",)


def test_cbt_sends_all_requests_in_one_call(bigram):
    calls = []

    class Counting(TableLM):
        def _loglikelihood_tokens(self, requests):
            calls.append(len(requests))
            return super()._loglikelihood_tokens(requests)

    cbt(Counting(bigram.probs, splits=bigram.splits), CBT_ITEMS)
    assert calls == [3 + 2 + 2]


def test_cbt_bad_inputs(bigram):
    with pytest.raises(LMRequestError, match="cbt: no items"):
        cbt(bigram, [])
    with pytest.raises(LMRequestError, match="item 0's question must hold XXXXX exactly once"):
        cbt(bigram, [ClozeItem([], "the cat sat", ["cat"], "cat")])
    with pytest.raises(LMRequestError, match="item 0's answer 'dog' is not a candidate"):
        cbt(bigram, [ClozeItem([], "the XXXXX", ["cat"], "dog")])
    with pytest.raises(LMRequestError, match="item 0 has no candidates"):
        cbt(bigram, [ClozeItem([], "the XXXXX", [], "cat")])
    with pytest.raises(LMRequestError, match="item 0 is a tuple, not a ClozeItem"):
        cbt(bigram, [([], "the XXXXX", ["cat"], "cat")])


# --- registry --------------------------------------------------------------------------------


def test_table_lm_is_registered():
    assert "table" in available_lms()
    lm = get_lm("table", probs={(): {"a": 1.0}}, name="mine")
    assert isinstance(lm, TableLM) and lm.name == "mine"
    assert lm.loglikelihood_rolling(["a a"]) == [RollingScore(0.0, 2)]


def test_unknown_lm_lists_the_known_names(empty_registry):
    with pytest.raises(UnknownLMError, match="no language model registered as 'gpt2'; known: none"):
        get_lm("gpt2")
    register_lm("rnnlm")(TableLM)
    register_lm("kenlm")(TableLM)
    with pytest.raises(UnknownLMError, match="registered as 'gpt2'; known: 'kenlm', 'rnnlm'$"):
        get_lm("gpt2")
    assert issubclass(UnknownLMError, CorefreproError)


def test_registration_errors(empty_registry):
    register_lm("table")(TableLM)
    register_lm("table")(TableLM)  # the same factory again (a module reload) is fine
    with pytest.raises(LMRegistryError, match="'table' is already registered"):
        register_lm("table")(lambda **kw: TableLM(**kw))
    with pytest.raises(LMRegistryError, match="must be a non-empty string, not ''"):
        register_lm("")
    register_lm("broken")(lambda: "not a model")
    with pytest.raises(LMRegistryError, match="returned a str, not a LanguageModel"):
        get_lm("broken")


# --- windows (lm-evaluation-harness's rolling windows) ---------------------------------------


@pytest.mark.parametrize("max_length", [1, 2, 5, 8])
@pytest.mark.parametrize("n", [1, 4, 5, 8, 9, 17, 40])
def test_windows_predict_each_token_once_from_full_windows(max_length, n):
    for stride in sorted({1, max(1, max_length // 2), max_length}):
        for n_context in (1, 3, 12):
            spans = window_spans(n_context, n, max_length, stride)
            assert [i for _, b, c in spans for i in range(b, c)] == list(
                range(n_context, n_context + n)
            )
            for k, (a, b, c) in enumerate(spans):
                assert b - a >= 1 and c - b <= (max_length if k == 0 else stride)
                assert c - 1 - a == min(max_length, c - 1)  # a full window, or all there is


def test_windows_equal_the_harness_s_rolling_windows():
    utils = pytest.importorskip("lm_eval.utils")
    tokens = list(range(100, 140))
    for max_length in (1, 3, 8, 16, 64):
        for context_len in sorted({1, min(2, max_length), max_length // 2 or 1, max_length}):
            for n in (1, 7, 8, 9, 16, 17, 40):
                want = [
                    tuple(map(tuple, utils.make_disjoint_window(w)))
                    for w in utils.get_rolling_token_windows(
                        tokens[:n], 7, max_seq_len=max_length, context_len=context_len
                    )
                ]
                stride = max_length - context_len + 1
                assert token_windows([7], tokens[:n], max_length, stride) == want


def test_windows_refuse_bad_lengths():
    for args in [(0, 3, 4, None), (1, 3, 0, None), (1, 3, 4, 5), (1, 3, 4, 0)]:
        with pytest.raises(LMRequestError):
            window_spans(*args)
