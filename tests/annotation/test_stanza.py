"""`stanza`: Document -> corpus-token mentions on Stanza's own objects, MWT alignment included.

The coref weights cannot be fetched here, so the model is the one stand-in: Stanza's real
CorefProcessor.process runs on real Documents (its word flattening, sentence indexing, zero
nodes and CorefChain/CorefMention building are all Stanza's), fed span clusters by a stub
model. Everything after that is the code under test.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

stanza = pytest.importorskip("stanza")
torch = pytest.importorskip("torch")

from stanza.models.common.doc import ID, TEXT, Document  # noqa: E402
from stanza.models.coref.coref_chain import CorefChain, CorefMention  # noqa: E402
from stanza.pipeline.coref_processor import CorefProcessor  # noqa: E402

from tasks.annotation import annotators  # noqa: E402
from tasks.annotation.annotators.base import Doc, Query  # noqa: E402
from tasks.annotation.annotators.stanza_coref import (  # noqa: E402
    SETTINGS,
    StanzaAnnotator,
    build_document,
    mentions_from_stanza,
    windows,
)
from tasks.core.errors import CorefreproError  # noqa: E402

# corpus tokens: Mary won't go . | She says she won't .
#                0    1     2  3   4   5    6   7     8
# words (MWT):   Mary wo n't go .  | She says she wo n't .
#                0    1  2   3  4    0   1    2   3  4   5   (per sentence)


def mwt_document() -> Document:
    """What tokenize(pretokenized) + mwt produce for two sentences with "won't"."""

    def sentence(words: list[str]) -> list[dict]:
        rows, k = [], 1
        for w in words:
            if w == "won't":
                rows += [
                    {ID: (k, k + 1), TEXT: w},
                    {ID: (k,), TEXT: "wo"},
                    {ID: (k + 1,), TEXT: "n't"},
                ]
                k += 2
            else:
                rows.append({ID: (k,), TEXT: w})
                k += 1
        return rows

    return Document(
        [sentence(["Mary", "won't", "go", "."]), sentence(["She", "says", "she", "won't", "."])],
        "Mary won't go . She says she won't .",
    )


class StubModel:
    """Stands in for the neural model: returns the given word-span clusters."""

    def __init__(self, span_clusters, zero_scores=None):
        self.span_clusters = span_clusters
        self.zero_scores = zero_scores
        self.seen = None

    def build_doc(self, doc):
        self.seen = doc
        return doc

    def run(self, doc):
        return SimpleNamespace(
            span_clusters=self.span_clusters,
            word_clusters=[[s for s, _ in c] for c in self.span_clusters],
            zero_scores=self.zero_scores,
        )


def processor(model) -> CorefProcessor:
    proc = CorefProcessor.__new__(CorefProcessor)  # skips loading weights, nothing else
    proc._model = model
    proc._use_zeros = True
    return proc


def test_mwt_document_has_more_words_than_tokens():
    doc = mwt_document()
    assert [len(s.tokens) for s in doc.sentences] == [4, 5]
    assert [len(s.words) for s in doc.sentences] == [5, 6]


def test_conversion_maps_words_back_to_tokens_on_stanza_chains():
    doc = mwt_document()
    doc.coref = [
        CorefChain(
            0, [CorefMention(0, 0, 1), CorefMention(1, 0, 1), CorefMention(1, 2, 3)], "Mary", 0
        ),
        CorefChain(1, [CorefMention(0, 3, 4)], "go", 0),  # word 3 is token 2
        CorefChain(2, [CorefMention(0, 2, 3), CorefMention(1, 3, 5)], "won't", 1),
    ]
    spans, counts = mentions_from_stanza(doc)
    assert spans == [(0, 1, 0), (4, 5, 0), (6, 7, 0), (2, 3, 1), (1, 2, 2), (7, 8, 2)]
    # "n't" alone cuts "won't": widened to the token; "wo n't" is the whole token
    assert counts == {"stanza_zero_mentions": 0, "stanza_mwt_widened": 1}


def test_conversion_of_what_the_real_coref_processor_builds():
    doc = mwt_document()
    model = StubModel([[(0, 1), (5, 6), (7, 8)], [(3, 4)], [(2, 3)]])  # flat word indices
    processor(model).process(doc)
    assert model.seen["cased_words"] == [
        "Mary", "wo", "n't", "go", ".", "She", "says", "she", "wo", "n't", ".",
    ]  # fmt: skip
    assert [c.representative_text for c in doc.coref] == ["Mary", "go", "n't"]
    spans, counts = mentions_from_stanza(doc)
    assert spans == [(0, 1, 0), (4, 5, 0), (6, 7, 0), (2, 3, 1), (1, 2, 2)]
    assert counts["stanza_mwt_widened"] == 1


def test_zero_anaphora_mentions_are_skipped_and_counted():
    doc = mwt_document()
    zero = torch.tensor([-1.0, -1.0, 2.0, -1.0])  # the third mention of chain 0 -> zero node
    processor(StubModel([[(0, 1), (5, 6), (7, 8)], [(3, 4)]], zero)).process(doc)
    assert isinstance(doc.coref[0].mentions[2].start_word, tuple)  # Stanza made a zero node
    spans, counts = mentions_from_stanza(doc)
    assert spans == [(0, 1, 0), (4, 5, 0), (2, 3, 1)]
    assert counts["stanza_zero_mentions"] == 1


def test_build_document_keeps_one_token_per_corpus_token():
    sentences = [["Mary", "won't", "go", "."], ["--", "she", "said"]]
    doc = build_document(sentences)
    assert [[t.text for t in s.tokens] for s in doc.sentences] == sentences
    assert all(len(t.words) == 1 for s in doc.sentences for t in s.tokens)


def test_windows_cover_the_document_in_whole_sentences():
    assert windows([0, 6, 9], 12, 6) == [(0, 6), (6, 12)]
    assert windows([0, 6, 9], 12, 100) == [(0, 12)]
    assert windows([0, 2, 12], 14, 5) == [(0, 2), (2, 12), (12, 14)]  # a long sentence alone
    assert windows([0], 0, 5) == []


class Pipe:
    """The pipeline with the real processor over a stub model: what a call returns."""

    def __init__(self, clusters_by_word: dict[str, str]):
        self.clusters_by_word = clusters_by_word

    def __call__(self, doc):
        words = [w.text.lower() for s in doc.sentences for w in s.words]
        clusters: dict[str, list] = {}
        for i, w in enumerate(words):
            if w in self.clusters_by_word:
                clusters.setdefault(self.clusters_by_word[w], []).append((i, i + 1))
        return processor(StubModel(list(clusters.values()))).process(doc)


def test_annotator_windows_offsets_and_query_links():
    tokens = ["Mary", "went", "to", "the", "kitchen", ".", "She", "left", ".", "Mary", "slept", "."]
    doc = Doc("l/0", tokens, [0, 6, 9], queries=[Query("l/0/q", ["Where", "is", "Mary", "?"], 12)])
    annotator = StanzaAnnotator({**SETTINGS, "window_tokens": 6})
    annotator._pipeline = Pipe({"mary": "m", "she": "m", "kitchen": "k"})
    short = Doc("l/1", ["Mary", "slept", "."], [0])
    [answer, other] = annotator.annotate([doc, short])
    # window [0, 6): Mary, kitchen; window [6, 12): She, Mary -- chains stay in their window
    assert answer.mentions == [(0, 1, 0), (4, 5, 1), (6, 7, 2), (9, 10, 2)]
    assert answer.query_mentions == {"l/0/q": [(2, 3, 2)]}  # the most recent Mary
    assert answer.counts == {
        "stanza_windows": 2,
        "stanza_zero_mentions": 0,
        "stanza_mwt_widened": 0,
    }
    assert other.mentions == [(0, 1, 0)]


def test_misaligned_pipeline_output_is_an_error():
    class Dropping:
        def __call__(self, doc):
            return build_document([["only"]])

    annotator = StanzaAnnotator(dict(SETTINGS))
    annotator._pipeline = Dropping()
    with pytest.raises(CorefreproError, match="l/0 tokens \\[0, 2\\) came back as 1 tokens"):
        annotator.annotate([Doc("l/0", ["a", "b"], [0])])


def test_missing_models_name_the_download_command_and_the_offline_alternatives(tmp_path):
    with pytest.raises(CorefreproError) as err:
        annotators.get("stanza", {"model_dir": str(tmp_path), "use_gpu": "false"})
    message = str(err.value)
    assert f"model_dir='{tmp_path}'" in message
    assert "stanza.download('en'" in message and "processors='tokenize,coref'" in message
    assert "entity-id" in message and "model" in message
    with pytest.raises(CorefreproError, match="processors='tokenize,mwt,coref'"):
        annotators.get("stanza", {"model_dir": str(tmp_path), "mwt": True})


def test_pipeline_bulk_process_would_lose_the_chains():
    """Why the annotator calls the pipeline once per window: CorefProcessor inherits
    UDProcessor.bulk_process, which runs coref once over the documents' sentences joined and
    sets `coref` on that joined Document only (stanza/pipeline/processor.py)."""
    docs = [mwt_document(), mwt_document()]
    proc = processor(StubModel([[(0, 1), (5, 6)]]))
    assert proc.bulk_process(docs) == docs
    assert not any(d.coref for d in docs)  # the chains went to the joined Document
    assert [c.representative_text for c in proc.process(docs[0]).coref] == ["Mary"]


def test_stanza_runs_need_their_checkpoint_setting(monkeypatch):
    """annotate.stanza_runs.<run> (stage annotate_stanza) depends on settings.coref_model_path."""
    import copy

    from tasks.annotation.runs import run_settings
    from tasks.core import config
    from tasks.core.settings import ConfigError

    data = copy.deepcopy(config.params())
    run = {"corpus": "lambada", "annotator": "stanza"}
    data["annotate"]["stanza_runs"] = {"lambada-stanza": run}
    monkeypatch.setattr(config, "_load", lambda path: data)
    with pytest.raises(CorefreproError, match="stanza_runs.lambada-stanza needs settings.coref_"):
        run_settings("lambada-stanza")
    run["settings"] = {"coref_model_path": "artifacts/train_stanza_coref/model.pt"}
    assert run_settings("lambada-stanza").corpus == "lambada"
    data["annotate"]["runs"]["lambada-stanza"] = dict(run)
    with pytest.raises(ConfigError, match="'lambada-stanza' is in both annotate.runs and stanza_"):
        run_settings("lambada-stanza")
