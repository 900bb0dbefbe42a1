"""Stages `graphs` and `graphs_ablation`: an annotation run -> data/graphs/<run>/graphs.parquet.

    python -m flows.graphs --run synthetic-gold              # graphs@synthetic-gold
    python -m flows.graphs --ablation synthetic-gold-sentence
        # graphs_ablation@<name>: the variant params.yaml graphs.ablations.<name> sets
        # (coreference placement, segment order, mention span) -> data/graphs/<name>/

Dhingra et al. §3.1-3.3: typed-edge graphs, decomposed into forward/backward DAGs per chain.
The DVC stages graphs, graphs_model, graphs_stanza and graphs_ablation all run this module.

Layout (issue #54.4): this module is the graph stages' one home, read top to bottom:

1. its settings: params.yaml `graphs` (GraphSettings), parsed once per stage call and passed
   down; the schema, the ablation check and the graph-run naming live in tasks/graphs/runs.py
   because a results record of an ablation (tasks/results/record.py, a library that may not
   import a flow) reads the same section; an annotation run's corpus is annotate's
   (tasks/annotation/runs.py);
2. its paths: the run's tables read (data/docs/<corpus>/, data/mentions/<run>/), the table
   written (data/graphs/<graph run>/graphs.parquet) and its metrics
   (metrics/graphs/<graph run>.json);
3. its plan: which annotation run, and which reading (placement, order, span, corruption):
   the section's for graphs@<run>, an ablation entry's for graphs_ablation@<name>;
4. its outputs: the table with its metadata, the metrics (graph counts, and for a corrupted
   variant its coreference scored against the annotation it came from);
5. the flows.

The libraries take arguments: tasks/graphs/dags.py builds the DAGs, tasks/graphs/annotated.py
reads a run's tables from the folders it is given (shared with the view stages,
flows/view_entitynlm.py and flows/view_corelm.py, which are their own stages' homes).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flows.runtime import flow, run_cli, task
from tasks.annotation.runs import run_settings
from tasks.core import storage
from tasks.core.config import resolve_path
from tasks.core.layout import docs_dir, graphs_dir, mentions_dir
from tasks.core.schema import GRAPHS
from tasks.evaluation.coref import CONLL_METRICS, conll_f1, score_coreference
from tasks.graphs.annotated import log_dropped, read_annotation
from tasks.graphs.dags import Corruption, build_graphs
from tasks.graphs.runs import GraphSettings, ablation_entry, graph_settings

log = logging.getLogger("corefrepro.graphs")

STAGE = "graphs"

# --------------------------------------------------------------------------- 1. settings
# params.yaml graphs: tasks/graphs/runs.py GraphSettings (graph_settings, ablation_entry)

# --------------------------------------------------------------------------- 2. paths


def table_path(run: str) -> Path:
    """data/graphs/<graph run>/graphs.parquet."""
    return graphs_dir(run) / f"{GRAPHS}.parquet"


def metrics_path(run: str) -> Path:
    return resolve_path(f"metrics/{STAGE}/{run}.json")


# --------------------------------------------------------------------------- 3. plan


def build_mage_graphs(cfg: GraphSettings, run: str) -> dict[str, Any]:
    """Stage graphs@<run>: MAGE DAGs (Dhingra et al. §3.1-3.3), chain-decomposed, with the
    placement, segment order and mention span of params.yaml graphs."""
    return _build(run, run, cfg, cfg.coref_placement, cfg.order, cfg.mention_span)


def build_ablation(cfg: GraphSettings, name: str) -> dict[str, Any]:
    """Stage graphs_ablation@<name>: graphs.ablations.<name>'s variant of its run's graphs."""
    entry = ablation_entry(cfg, name)
    return _build(entry.run, name, cfg, entry.coref_placement, entry.order, entry.mention_span,
                  entry.corruption())  # fmt: skip


# --------------------------------------------------------------------------- 4. outputs


def _build(run: str, out: str, cfg: GraphSettings, placement: str, order: str,
           mention_span: str, corruption: Corruption | None = None) -> dict[str, Any]:  # fmt: skip
    entry = run_settings(run)
    data = read_annotation(docs_dir(entry.corpus), mentions_dir(run), items=True)
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
    log_dropped(log, run, "graphs", graphs.stats)
    log.info("%s: %d graphs (coreference placement %s, segment order %s, mention span %s)",
             out, len(graphs.rows), placement, order, mention_span)  # fmt: skip
    report = {"graphs": len(graphs.rows), "graph_stats": dict(sorted(graphs.stats.items()))}
    if corruption is not None:
        report["coreference_against_annotation"] = _corruption_scores(graphs.clusters)
        log.info("%s: CoNLL F1 %.2f against %s's own coreference", out,
                 report["coreference_against_annotation"]["conll_f1"], run)  # fmt: skip
    meta = {"corpus": entry.corpus, "run": run, "annotator": entry.annotator, **graphs.metadata}
    storage.write_table(table_path(out), GRAPHS, graphs.rows, meta)
    storage.write_metrics(metrics_path(out), report)
    return report


def _corruption_scores(clusters: Mapping[str, tuple[list, list]]) -> dict[str, float]:
    """The corrupted coreference scored against the annotation it came from (CoNLL F1 in %,
    singletons kept: the mentions are the same, only the links differ)."""
    key = {graph_id: pair[0] for graph_id, pair in clusters.items()}
    response = {graph_id: pair[1] for graph_id, pair in clusters.items()}
    scores = score_coreference(key, response, metrics=CONLL_METRICS)
    out = {f"{m}_f1": round(100 * scores[m].f1, 4) for m in CONLL_METRICS}
    return {**out, "conll_f1": round(100 * conll_f1(scores), 4)}


# --------------------------------------------------------------------------- 5. the flows


@task(name="graphs", task_run_name="graphs@{run}")
def build(run: str) -> dict[str, Any]:
    return build_mage_graphs(graph_settings(), run)


@task(name="graphs-ablation", task_run_name="graphs_ablation@{name}")
def build_variant(name: str) -> dict[str, Any]:
    return build_ablation(graph_settings(), name)


@flow(name="graphs")
def graphs(run: str) -> dict:
    return build(run)


@flow(name="graphs-ablation")
def graphs_ablation(name: str) -> dict:
    return build_variant(name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", help="a key of annotate.runs, model_runs or stanza_runs")
    which.add_argument("--ablation", help="a key of graphs.ablations")
    args = parser.parse_args(argv)
    if args.run is not None:
        run_cli(graphs, args.run)
    else:
        run_cli(graphs_ablation, args.ablation)


if __name__ == "__main__":
    main()
