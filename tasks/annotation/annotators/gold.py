"""`gold`: the corpus's own coreference passed through (GUM, LitBank, InScript, CoNLL-2012,
handmade, synthetic), so models can be trained and compared on gold chains with exactly the
same downstream code as on predicted ones. Query mentions come from the generic linker
(tasks/annotation/annotators/base.py link_queries): corpora annotate documents, never questions.
"""

from __future__ import annotations

from typing import Any

from tasks.annotation.annotators.base import (
    Annotation,
    Annotator,
    Doc,
    check_settings,
    link_queries,
)
from tasks.core.errors import CorefreproError

NAME = "gold"
SETTINGS: dict[str, Any] = {"link_queries": True}


class GoldAnnotator(Annotator):
    name = NAME

    def __init__(self, link: bool = True):
        self.link = link

    def annotate_doc(self, doc: Doc) -> Annotation:
        if doc.gold is None:
            raise CorefreproError(
                f"annotator 'gold': document {doc.doc_id} comes from a corpus without gold "
                "coreference (its mentions.parquet is empty); use annotator entity-id, stanza "
                "or model for it"
            )
        mentions = list(doc.gold)
        queries = link_queries(doc, mentions) if self.link else {}
        return Annotation(mentions, queries)


def build(cfg: dict[str, Any]) -> GoldAnnotator:
    cfg = {**SETTINGS, **check_settings(NAME, cfg, SETTINGS)}
    return GoldAnnotator(link=bool(cfg["link_queries"]))
