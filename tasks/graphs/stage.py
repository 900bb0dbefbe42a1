"""The graph stages: one annotation run -> MAGE graphs, and the EntityNLM and CoreLM views.

Every model family reads these tables, so they all see the same coreference: swapping the
annotator of a run (params.yaml annotate.runs) changes every downstream model consistently.
Each table is its own DVC stage with its own params section (`graphs`, `view_entitynlm`,
`view_corelm`), so a setting of one family's view retrains nothing of another family.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tasks.annotation.runs import RunEntry, run_names, run_settings
from tasks.core import storage
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.layout import docs_dir, graphs_dir, mentions_dir
from tasks.core.schema import (
    CORELM_VIEW,
    DOCUMENTS,
    ENTITYNLM_VIEW,
    GRAPHS,
    ITEMS,
    MENTIONS,
    QUERY_MENTIONS,
)
from tasks.core.settings import bounded, load_stage_settings
from tasks.evaluation.coref import CONLL_METRICS, conll_f1, score_coreference
from tasks.graphs.dags import Corruption, build_graphs
from tasks.graphs.views import L_MAX, build_corelm_view, build_entitynlm_view

log = logging.getLogger("corefrepro.graphs")


@dataclass
class GraphAblation:
    """One entry of params.yaml graphs.ablations: the graphs of annotation run `run` with a
    reading other than the paper's, written to data/graphs/<name>/ and read by a MAGE model
    entry's `data: <name>` (graph_run(run, ...) gives the conventional name)."""

    run: str  # a key of annotate.runs / model_runs / stanza_runs
    corpus: str  # that run's corpus: the stage's data/docs/<corpus> dep (checked)
    coref_placement: Literal["paper", "sentence"] = "paper"
    order: Literal["random", "document_query", "query_document"] = "random"
    mention_span: Literal["annotated", "no_determiner"] = "annotated"
    # coreference links dropped or rewired (dags.Corruption, issue #58.5): beyond the papers
    corrupt: Literal["none", "drop", "rewire"] = "none"
    corrupt_rate: float = bounded(0.0, ge=0.0, le=1.0)
    corrupt_seed: int = 1

    def corruption(self) -> Corruption | None:
        if self.corrupt == "none":
            return None
        return Corruption(self.corrupt, self.corrupt_rate, self.corrupt_seed)


@dataclass
class GraphSettings:
    """params.yaml graphs (graphs@<run>)."""

    seed: int = 13  # per-item order of context and query (MAGE §3.3)
    edge_types: list[str] = bounded(["sequential", "coreference"], min_items=1)
    on_conflict: Literal["error", "nearest"] = "nearest"
    # where a coreference edge leaves/enters a mention (tasks/graphs/dags.py PLACEMENTS);
    # "sentence" is an ablation the paper does not have, written as graphs@<run>-sentence
    coref_placement: Literal["paper", "sentence"] = "paper"
    # segment order (dags.py ORDERS): "random" is §3.3's; document_query is the authors'
    # released code (coref-gru GA.py), written as graphs@<run>-document-query (graph_run)
    order: Literal["random", "document_query", "query_document"] = "random"
    # mention spans (dags.py MENTION_SPANS): the annotation's, or without a leading
    # determiner, written as graphs@<run>-no-determiner
    mention_span: Literal["annotated", "no_determiner"] = "annotated"
    # graph variants as DVC items (graphs_ablation@<name>): name -> GraphAblation
    ablations: dict[str, GraphAblation] = field(default_factory=dict)


@dataclass
class EntityNLMViewSettings:
    """params.yaml view_entitynlm (view_entitynlm@<run>)."""

    l_max: int = bounded(L_MAX, ge=1)  # Ji et al. 2017 §2.1: longest mention length
    long_mentions: Literal["truncate", "skip"] = "truncate"
    drop_singletons_for: list[str] = field(default_factory=list)  # CoNLL-style corpora
    # nested mentions (views.resolve_nesting): the enclosing one (Ji et al. §4) or the inner
    # heads; entity prediction's slots follow the same rule (nesting_rule)
    nested: Literal["enclosing", "heads"] = "enclosing"
    # per-corpus rules: InScript labels heads, and Modi et al. 2017's released targets are
    # head tokens (tasks/evaluation/entity_prediction.py rule 3)
    nested_for: dict[str, Literal["enclosing", "heads"]] = field(default_factory=dict)

    def nesting_rule(self, corpus: str) -> str:
        """The nesting rule of the view of a run of `corpus`: nested_for, else nested."""
        return self.nested_for.get(corpus, self.nested)


def entitynlm_view_settings() -> EntityNLMViewSettings:
    """params.yaml view_entitynlm, parsed strictly (the view stage and entity prediction,
    whose slots follow the view's nesting rule)."""
    return load_stage_settings(EntityNLMViewSettings, "view_entitynlm")


@dataclass
class CoreLMViewSettings:
    """params.yaml view_corelm (view_corelm@<run>)."""

    id_scope: Literal["corpus", "document"] = "corpus"
    max_entities: int | None = bounded(None, ge=1)
    drop_singletons: bool = False


TABLES = {"graphs": GRAPHS, "view_entitynlm": "entitynlm", "view_corelm": "corelm"}


def table_path(run: str, stage: str) -> Path:
    """data/graphs/<run>/{graphs,entitynlm,corelm}.parquet: one file per stage."""
    return graphs_dir(run) / f"{TABLES[stage]}.parquet"


def graph_settings() -> GraphSettings:
    """params.yaml graphs, parsed strictly."""
    return load_stage_settings(GraphSettings, "graphs")


def corelm_view_settings() -> CoreLMViewSettings:
    """params.yaml view_corelm, parsed strictly."""
    return load_stage_settings(CoreLMViewSettings, "view_corelm")


def _inputs(run: str, *, items: bool) -> dict[str, Any]:
    entry = run_settings(run)
    source, annotated = docs_dir(entry.corpus), mentions_dir(run)
    out: dict[str, Any] = {"entry": entry}
    docs_path = source / f"{DOCUMENTS}.parquet"
    out["documents"] = storage.read_table(docs_path, DOCUMENTS)
    paths = {"mentions": (annotated / f"{MENTIONS}.parquet", MENTIONS)}
    if items:
        paths["items"] = (source / f"{ITEMS}.parquet", ITEMS)
        paths["query_mentions"] = (annotated / f"{QUERY_MENTIONS}.parquet", QUERY_MENTIONS)
    for key, (path, kind) in paths.items():
        out[key] = storage.read_table(path, kind)
        if key == "query_mentions":
            items_path = paths["items"][0]
            storage.check_same_documents(out["items"], items_path, out[key], path, "item_id")
        else:
            storage.check_same_documents(out["documents"], docs_path, out[key], path)
    return out


def _meta(run: str, entry: RunEntry) -> dict[str, str]:
    return {"corpus": entry.corpus, "run": run, "annotator": entry.annotator}


def _log_dropped(run: str, name: str, stats: Mapping[str, Any]) -> None:
    dropped = {
        k: v for k, v in stats.items() if ("drop" in k or "conflict" in k or "skip" in k) and v
    }
    if dropped:
        log.info("%s %s: %s", run, name, dropped)


def _write(run: str, stage: str, kind: str, rows: Any, meta: Mapping, report: dict) -> dict:
    storage.write_table(table_path(run, stage), kind, rows, meta)
    storage.write_metrics(resolve_path(f"metrics/{stage}/{run}.json"), report)
    return report


def placement_run(run: str, placement: str) -> str:
    """The graph run of a placement: <run> for the paper's, <run>-<placement> otherwise, so the
    tables sit side by side (data/graphs/<run>-sentence/graphs.parquet)."""
    return graph_run(run, placement=placement)


def graph_run(
    run: str, *, placement: str = "paper", order: str = "random", mention_span: str = "annotated"
) -> str:
    """The graph run of a variant: <run> with a suffix per setting off the paper's reading, in
    the order placement, order, span (babi-sentence-document-query-no-determiner), so every
    cell of an order x placement x span grid has its own table beside the paper's."""
    suffixes = [
        value.replace("_", "-")
        for value, paper in ((placement, "paper"), (order, "random"), (mention_span, "annotated"))
        if value != paper
    ]
    return "-".join([run, *suffixes])


def build_mage_graphs(run: str) -> dict[str, Any]:
    """Stage graphs@<run>: MAGE DAGs (Dhingra et al. §3.1-3.3), chain-decomposed, with the
    placement, segment order and mention span of params.yaml graphs."""
    cfg = graph_settings()
    return _build(run, run, cfg, cfg.coref_placement, cfg.order, cfg.mention_span)


def build_ablation(name: str) -> dict[str, Any]:
    """Stage graphs_ablation@<name>: graphs.ablations.<name>'s variant of its run's graphs."""
    cfg = graph_settings()
    entry = ablation_entry(cfg, name)
    return _build(entry.run, name, cfg, entry.coref_placement, entry.order, entry.mention_span,
                  entry.corruption())  # fmt: skip


def ablation_entry(cfg: GraphSettings, name: str) -> GraphAblation:
    """graphs.ablations.<name>, checked against its run: the corpus DVC tracks is the one read,
    and the name is no annotation run's (one table per name)."""
    where = f"params.yaml graphs.ablations.{name}"
    if name not in cfg.ablations:
        raise CorefreproError(
            f"{where}: no such entry; known: {', '.join(cfg.ablations) or 'none'}"
        )
    entry = cfg.ablations[name]
    corpus = run_settings(entry.run).corpus
    if entry.corpus != corpus:
        raise CorefreproError(f"{where}.corpus: {entry.corpus!r}, but run {entry.run!r} "
                              f"annotates corpus {corpus!r}")  # fmt: skip
    readings = (entry.coref_placement, entry.order, entry.mention_span, entry.corrupt)
    if readings == ("paper", "random", "annotated", "none"):
        raise CorefreproError(f"{where}: every setting is the paper's: that is graphs@{entry.run}")
    if name in run_names():
        raise CorefreproError(f"{where}: {name!r} is an annotation run's name: its graphs@ "
                              f"table is data/graphs/{name}/")  # fmt: skip
    return entry


def _build(run: str, out: str, cfg: GraphSettings, placement: str, order: str,
           mention_span: str, corruption: Corruption | None = None) -> dict[str, Any]:  # fmt: skip
    data = _inputs(run, items=True)
    graphs = build_graphs(
        data["documents"],
        data["items"],
        data["mentions"],
        data["query_mentions"],
        seed=cfg.seed,
        edge_types=cfg.edge_types,
        on_conflict=cfg.on_conflict,
        placement=placement,
        order=order,
        mention_span=mention_span,
        corruption=corruption,
    )
    _log_dropped(run, "graphs", graphs.stats)
    log.info("%s: %d graphs (coreference placement %s, segment order %s, mention span %s)",
             out, len(graphs.rows), placement, order, mention_span)  # fmt: skip
    report = {"graphs": len(graphs.rows), "graph_stats": dict(sorted(graphs.stats.items()))}
    if corruption is not None:
        report["coreference_against_annotation"] = _corruption_scores(graphs.clusters)
        log.info("%s: CoNLL F1 %.2f against %s's own coreference", out,
                 report["coreference_against_annotation"]["conll_f1"], run)  # fmt: skip
    meta = {**_meta(run, data["entry"]), **graphs.metadata}
    return _write(out, "graphs", GRAPHS, graphs.rows, meta, report)


def _corruption_scores(clusters: Mapping[str, tuple[list, list]]) -> dict[str, float]:
    """The corrupted coreference scored against the annotation it came from (CoNLL F1 in %,
    singletons kept: the mentions are the same, only the links differ)."""
    key = {graph_id: pair[0] for graph_id, pair in clusters.items()}
    response = {graph_id: pair[1] for graph_id, pair in clusters.items()}
    scores = score_coreference(key, response, metrics=CONLL_METRICS)
    out = {f"{m}_f1": round(100 * scores[m].f1, 4) for m in CONLL_METRICS}
    return {**out, "conll_f1": round(100 * conll_f1(scores), 4)}


def build_entitynlm(run: str) -> dict[str, Any]:
    """Stage view_entitynlm@<run>: R/E/L per token (Ji et al. 2017 §2)."""
    cfg = entitynlm_view_settings()
    data = _inputs(run, items=False)
    corpus = data["entry"].corpus
    view = build_entitynlm_view(
        data["documents"],
        data["mentions"],
        l_max=cfg.l_max,
        long_mentions=cfg.long_mentions,
        drop_singletons=corpus in cfg.drop_singletons_for,
        nested=cfg.nesting_rule(corpus),
    )
    _log_dropped(run, "entitynlm", view.stats)
    log.info("%s: %d EntityNLM documents", run, len(view.rows))
    report = {
        "entitynlm_documents": len(view.rows),
        "entitynlm_stats": dict(sorted(view.stats.items())),
    }
    meta = _meta(run, data["entry"])
    return _write(run, "view_entitynlm", ENTITYNLM_VIEW, view.rows, meta, report)


def build_corelm(run: str) -> dict[str, Any]:
    """Stage view_corelm@<run>: entity-id streams per nesting layer (Stylianou & Vlahavas §4.1)."""
    cfg = corelm_view_settings()
    data = _inputs(run, items=False)
    view = build_corelm_view(
        data["documents"],
        data["mentions"],
        id_scope=cfg.id_scope,
        max_entities=cfg.max_entities,
        drop_singletons=cfg.drop_singletons,
    )
    _log_dropped(run, "corelm", view.stats)
    log.info("%s: %d CoreLM instances", run, len(view.rows))
    stats = {k: v for k, v in sorted(view.stats.items()) if isinstance(v, int)}
    report = {"corelm_instances": len(view.rows), "corelm_stats": stats}
    return _write(run, "view_corelm", CORELM_VIEW, view.rows, _meta(run, data["entry"]), report)


BUILDERS = {
    "graphs": build_mage_graphs,
    "view_entitynlm": build_entitynlm,
    "view_corelm": build_corelm,
}
