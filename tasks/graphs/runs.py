"""The graph runs of params.yaml `graphs`: each annotation run's graphs with the paper's
reading (graphs@<run>), and the variants of graphs.ablations (graphs_ablation@<name>), each
its own folder data/graphs/<graph run>/; and graphs.references, an annotation run scored
against another on those graphs (graphs_reference@<run>).

The section's schema and its one strict parse live here, apart from the graph stage
(flows/graphs.py, which owns its plan, paths and outputs), for the same reason the annotate
section lives in tasks/annotation/runs.py: another reader may not import a flow. A results
record of an ablation (tasks/results/record.py) reads its entry (the corruption seed is the
record's seed), and a MAGE model entry names a variant by its graph run (`graph_run`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from tasks.annotation.runs import run_names, run_settings
from tasks.core.errors import CorefreproError
from tasks.core.settings import bounded, load_stage_settings
from tasks.graphs.dags import Corruption


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
class GraphReference:
    """One entry of params.yaml graphs.references, keyed by an annotation run: that run's
    coreference scored against the reference run's on the same graphs (graphs_reference@<run>,
    issue #58.5), e.g. babi-model against babi-entity-id, the links the corruption series
    corrupts."""

    corpus: str  # the run's corpus: the stage's data/docs/<corpus> dep (checked)
    reference: str  # an annotation run of the same corpus: the key


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
    # an annotation run's coreference scored against another run's (graphs_reference@<run>):
    # run -> GraphReference
    references: dict[str, GraphReference] = field(default_factory=dict)


def graph_settings() -> GraphSettings:
    """params.yaml graphs, parsed strictly."""
    return load_stage_settings(GraphSettings, "graphs")


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


def reference_entry(cfg: GraphSettings, run: str) -> GraphReference:
    """graphs.references.<run>, checked: the run and its reference are annotation runs of the
    corpus DVC tracks, and not the same run."""
    where = f"params.yaml graphs.references.{run}"
    if run not in cfg.references:
        raise CorefreproError(
            f"{where}: no such entry; known: {', '.join(cfg.references) or 'none'}"
        )
    entry = cfg.references[run]
    if entry.reference == run:
        raise CorefreproError(f"{where}.reference: the run itself (a run against its own "
                              "coreference scores 100)")  # fmt: skip
    for name, what in ((run, "run"), (entry.reference, "reference")):
        corpus = run_settings(name).corpus
        if entry.corpus != corpus:
            raise CorefreproError(f"{where}.corpus: {entry.corpus!r}, but the {what} {name!r} "
                                  f"annotates corpus {corpus!r}")  # fmt: skip
    return entry


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
