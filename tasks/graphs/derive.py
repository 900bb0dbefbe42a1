"""Derived corpora: normalized tables made from another corpus's normalized tables.

    params.yaml derive.<name>: {from: <corpus>, kind: <kind>, ...kind settings}
    dvc.yaml derive@<name>: data/docs/<from>/ -> data/docs/<name>/{documents,items,mentions}.parquet

This module holds the kinds (their settings and builders); the stage, flows/derive.py, reads
the settings section and the tables and writes the corpus.

Why a stage of its own rather than a corpus module: a corpus module normalizes its OWN raw
files, and download/normalize/stats are one foreach over `corpora` with the same
dependencies for every corpus (data/raw/<corpus>). A corpus built from data/docs/<other> must
declare that other corpus's normalized output as its dependency, which only a stage of its
own can do; with it DVC reruns the derived corpus exactly when its source changes. The output
has normalize's layout and checks (tasks.corpora.ingest.write_docs), so annotate, graphs and the
readers take a derived corpus like any other: name it in an annotate run
(`annotate.runs.<run>: {corpus: <name>, annotator: ...}`).

Kinds (KINDS):
- babi_mix: bAbI-Mix (Dhingra et al., papers/004, §4.2), built by tasks.graphs.babi_mix.mix_babi: the
  stories of one (split, task) are paired, one story of each pair gets its entities renamed,
  the sentences are interleaved, and every question of both stories is asked over the mixed
  story. Settings: seed; alternates (extra word -> alternate pairs, merged over
  tasks.graphs.babi_mix.BABI_ALTERNATES, for a corpus with other entity names); candidates: keep |
  drop (drop: items lose their candidate lists, so a reader picks among all document
  tokens as on bAbI, which has none -- the synthetic corpus lists its own story's places,
  which would leave the other story's renamed places out of reach).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tasks.core.schema import DOCUMENTS, ITEMS, MENTIONS
from tasks.corpora.base import Normalized
from tasks.graphs.babi_mix import BABI_ALTERNATES, mix_babi

Deriver = Callable[[str, Mapping[str, Any], Any], Normalized]  # (name, tables, kind settings)


@dataclass
class BabiMixSettings:
    """derive.<name> of kind babi_mix, besides `from` and `kind`."""

    seed: int
    alternates: dict[str, str] = field(default_factory=dict)  # merged over BABI_ALTERNATES
    candidates: Literal["keep", "drop"] = "keep"


def _babi_mix(name: str, tables: Mapping[str, Any], cfg: BabiMixSettings) -> Normalized:
    result = mix_babi(
        tables[DOCUMENTS],
        tables[ITEMS],
        tables[MENTIONS],
        seed=cfg.seed,
        name=name,
        alternates={**BABI_ALTERNATES, **cfg.alternates},
    )
    if cfg.candidates == "drop":
        for item in result.items:
            item["candidates"] = None
        result.notes.append("candidate lists dropped (derive candidates: drop)")
    return result


# kind -> (the settings class of its keys besides from/kind, the builder)
KINDS: dict[str, tuple[type, Deriver]] = {
    "babi_mix": (BabiMixSettings, _babi_mix),
}


__all__ = ["KINDS", "BabiMixSettings", "Deriver"]
