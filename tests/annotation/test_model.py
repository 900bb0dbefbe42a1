"""`model`: the plug-in slot, exercised with a tiny annotator defined here."""

from __future__ import annotations

import pytest

from tasks.annotation import annotators
from tasks.annotation.annotate import annotate_documents
from tasks.annotation.annotators.base import Annotation, Annotator, Doc
from tasks.core.errors import CorefreproError
from tasks.core.schema import DOCUMENTS, ITEMS
from tasks.core.storage import to_table

FACTORY = "tests.annotation.test_model:tiny_factory"
made: list[dict] = []


class Tiny(Annotator):
    """Capitalised tokens, one chain per word (queries too): a 'model' to check by hand."""

    def __init__(self, settings: dict):
        self.name = settings.get("label", "tiny")
        self.settings = settings

    def annotate_doc(self, doc: Doc) -> Annotation:
        ids: dict[str, int] = {}

        def spans(tokens):
            return [
                (i, i + 1, ids.setdefault(t, len(ids))) for i, t in enumerate(tokens) if t.istitle()
            ]

        mentions = spans(doc.tokens)
        queries = {q.item_id: spans(q.tokens) for q in doc.queries}
        return Annotation(mentions, queries, {"tiny_calls": 1})


@pytest.fixture(autouse=True)
def _allow_test_factories(monkeypatch, tmp_path):
    """The factories and checkpoint folder of these tests are allowed explicitly, as a user
    allows a plug-in and a checkpoint outside artifacts/."""
    specs = [FACTORY, *(f for f, _ in BAD_FACTORIES)]
    monkeypatch.setenv("COREFREPRO_ANNOTATOR_FACTORIES", ",".join(specs))
    monkeypatch.setenv("COREFREPRO_CHECKPOINT_ROOTS", str(tmp_path))


def tiny_factory(settings: dict) -> Tiny:
    made.append(settings)
    return Tiny(settings)


def not_an_annotator(settings: dict) -> object:
    return object()


def test_plug_in_is_built_from_its_factory_and_runs_through_the_stage(tmp_path):
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(b"weights")
    made.clear()
    annotator = annotators.get(
        "model", {"factory": FACTORY, "checkpoint": str(checkpoint), "settings": {"label": "m1"}}
    )
    assert made == [{"checkpoint": str(checkpoint), "label": "m1"}]
    docs = to_table(
        DOCUMENTS,
        [
            {
                "doc_id": "x/0",
                "split": "dev",
                "tokens": ["Mary", "met", "Bob", ".", "Bob", "left", "Mary", "."],
                "sentence_starts": [0, 4],
            }
        ],
    )
    items = to_table(
        ITEMS,
        [
            {
                "item_id": "x/0/q",
                "doc_id": "x/0",
                "split": "dev",
                "task": "t",
                "context_end": 8,
                "query": ["Who", "is", "Bob", "?"],
                "answer": "x",
            }
        ],
    )
    rows, qrows, report = annotate_documents(annotator, docs, items, None)
    assert [(r["start"], r["cluster"], r["annotator"]) for r in rows] == [
        (0, 0, "m1"),
        (2, 1, "m1"),
        (4, 1, "m1"),
        (6, 0, "m1"),
    ]
    assert [(q["start"], q["cluster"]) for q in qrows] == [(0, 2), (2, 1)]  # "Who" is titled
    assert report["tiny_calls"] == 1 and report["query_only_clusters"] == 1


def test_no_model_configured_says_how_to_get_one():
    with pytest.raises(CorefreproError) as err:
        annotators.get("model", {})
    assert "no coreference model is configured" in str(err.value)
    assert "dvc repro train_coref@asl" in str(err.value) and "entity-id" in str(err.value)


def test_missing_checkpoint_says_train_it(tmp_path):
    missing = tmp_path / "artifacts" / "coref.pt"
    with pytest.raises(CorefreproError) as err:
        annotators.get("model", {"factory": FACTORY, "checkpoint": str(missing)})
    assert str(missing) in str(err.value) and "dvc repro train_coref@asl" in str(err.value)


@pytest.mark.parametrize("checkpoint", ["/etc/passwd", "../../x", "artifacts/../params.yaml"])
def test_a_checkpoint_outside_the_artifacts_is_refused_before_any_load(checkpoint):
    """Issue #30.2: `checkpoint: /etc/passwd` or `../../x` was read (an IndexError traceback);
    a checkpoint is unpickled, so only artifacts/ and allowed folders are read."""
    made.clear()
    with pytest.raises(CorefreproError) as err:
        annotators.get("model", {"factory": FACTORY, "checkpoint": checkpoint})
    assert str(err.value).startswith(
        f"annotate.annotators.model.checkpoint: {checkpoint!r} is outside the project's artifacts"
    )
    assert "COREFREPRO_CHECKPOINT_ROOTS" in str(err.value) and made == []


def test_a_link_out_of_the_artifacts_is_refused(tmp_path, monkeypatch):
    from tasks.core.config import REPO_ROOT
    from tasks.core.layout import check_checkpoint_path

    allowed = tmp_path / "allowed"
    allowed.mkdir()
    monkeypatch.setenv("COREFREPRO_CHECKPOINT_ROOTS", str(allowed))
    inside = REPO_ROOT / "artifacts" / "x" / "ok.pt"
    assert check_checkpoint_path("artifacts/x/ok.pt", "s") == inside.resolve()
    assert check_checkpoint_path(allowed / "m.pt", "s") == (allowed / "m.pt").resolve()
    link = allowed / "link.pt"  # inside an allowed folder, pointing out of it
    link.symlink_to("/etc/passwd")
    with pytest.raises(CorefreproError, match="s: .* is outside the project's artifacts"):
        check_checkpoint_path(link, "s")


BAD_FACTORIES = [
    ("tests.annotation.test_model", "must look like 'package.module:callable'"),
    ("tests.annotation.no_such_module:f", "cannot import 'tests.annotation.no_such_module'"),
    ("tests.annotation.test_model:nope", "has no 'nope'"),
    ("tests.annotation.test_model:FACTORY", "is not callable"),
    ("tests.annotation.test_model:not_an_annotator", "lacks a non-empty str `name`"),
]


@pytest.mark.parametrize(("factory", "message"), BAD_FACTORIES)
def test_bad_factories_are_clear_errors(factory, message):
    with pytest.raises(CorefreproError, match=message.replace("(", r"\(")):
        annotators.get("model", {"factory": factory})


def test_a_factory_outside_the_allow_list_is_never_imported(tmp_path, monkeypatch):
    """Issue #14.6: `factory` named any importable module, and importing runs its code."""
    planted = tmp_path / "planted_factory_mod.py"
    marker = tmp_path / "ran"
    planted.write_text(f"open({str(marker)!r}, 'w').close()\ndef f(s):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("COREFREPRO_ANNOTATOR_FACTORIES")
    for spec in ("planted_factory_mod:f", "os:system", FACTORY):
        with pytest.raises(CorefreproError, match=r"annotators\.model\.factory: .* not an allowed"):
            annotators.check("model", {"factory": spec})
        with pytest.raises(CorefreproError, match="not an allowed factory"):
            annotators.get("model", {"factory": spec})
    assert not marker.exists()
    annotators.check("model", {"factory": "models.coref.annotator:load_annotator"})
    monkeypatch.setenv("COREFREPRO_ANNOTATOR_FACTORIES", "planted_factory_mod:f")
    with pytest.raises(CorefreproError, match="lacks a non-empty str `name`"):
        annotators.get("model", {"factory": "planted_factory_mod:f"})
    assert marker.exists()  # allowed explicitly: imported
