"""Stages `graphs` and `graphs_ablation`: an annotation run -> data/graphs/<run>/graphs.parquet;
`graphs_reference`: an annotation run's coreference scored against another run's on its graphs.

    python -m flows.graphs --run synthetic-gold              # graphs@synthetic-gold
    python -m flows.graphs --ablation synthetic-gold-sentence
        # graphs_ablation@<name>: the variant params.yaml graphs.ablations.<name> sets
        # (coreference placement, segment order, mention span) -> data/graphs/<name>/
    python -m flows.graphs --reference babi-model
        # graphs_reference@<run>: params.yaml graphs.references.<run> names the reference run
        # (e.g. babi-entity-id) -> metrics/graphs_reference/<run>.json

Dhingra et al. §3.1-3.3: typed-edge graphs, decomposed into forward/backward DAGs per chain.
The DVC stages graphs, graphs_model, graphs_stanza, graphs_ablation and graphs_reference all run
this module.

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
   variant its coreference scored against the annotation it came from); for
   graphs_reference@<run>, the run's coreference scored against its reference run's on the
   same graphs (issue #58.5: each annotator on the corruption series' axis), by the one
   scoring both use (coreference_scores);
5. the flows.

The libraries take arguments: tasks/graphs/dags.py builds the DAGs, tasks/graphs/annotated.py
reads a run's tables from the folders it is given (shared with the view stages,
flows/view_entitynlm.py and flows/view_corelm.py, which are their own stages' homes).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterable, Mapping
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
from tasks.graphs.dags import Corruption, build_graphs, graph_clusters
from tasks.graphs.runs import GraphSettings, ablation_entry, graph_settings, reference_entry

log = logging.getLogger("corefrepro.graphs")

STAGE = "graphs"
REFERENCE_STAGE = "graphs_reference"

# --------------------------------------------------------------------------- 1. settings
# params.yaml graphs: tasks/graphs/runs.py GraphSettings (graph_settings, ablation_entry)

# --------------------------------------------------------------------------- 2. paths


def table_path(run: str) -> Path:
    """data/graphs/<graph run>/graphs.parquet."""
    return graphs_dir(run) / f"{GRAPHS}.parquet"


def metrics_path(run: str) -> Path:
    return resolve_path(f"metrics/{STAGE}/{run}.json")


def reference_metrics_path(run: str) -> Path:
    """metrics/graphs_reference/<run>.json: graphs_reference@<run>'s scores."""
    return resolve_path(f"metrics/{REFERENCE_STAGE}/{run}.json")


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
        key = {graph_id: pair[0] for graph_id, pair in graphs.clusters.items()}
        response = {graph_id: pair[1] for graph_id, pair in graphs.clusters.items()}
        report["coreference_against_annotation"] = coreference_scores(key, response)
        log.info("%s: CoNLL F1 %.2f against %s's own coreference", out,
                 report["coreference_against_annotation"]["conll_f1"], run)  # fmt: skip
    meta = {"corpus": entry.corpus, "run": run, "annotator": entry.annotator, **graphs.metadata}
    storage.write_table(table_path(out), GRAPHS, graphs.rows, meta)
    storage.write_metrics(metrics_path(out), report)
    return report


def coreference_scores(key: Mapping[str, list], response: Mapping[str, list], *,
                       mentions: bool = False) -> dict[str, float]:  # fmt: skip
    """A coreference scored against a key, graph id -> clusters on both sides (MUC, B3, CEAF-e
    and CoNLL F1 in %, singletons kept; `mentions`: mention identification F1 too). The one
    scoring of a corrupted variant against the annotation it came from (graphs_ablation) and
    of an annotation run against a reference run (graphs_reference), so both lie on one axis."""
    metrics = (*CONLL_METRICS, "mentions") if mentions else CONLL_METRICS
    scores = score_coreference(dict(key), dict(response), metrics=metrics)
    out = {f"{m}_f1": round(100 * scores[m].f1, 4) for m in metrics}
    return {**out, "conll_f1": round(100 * conll_f1(scores), 4)}


def _graph_tasks(items: Any, graph_ids: Iterable[str]) -> dict[str, list[str]]:
    """task label -> its graphs' ids (item graphs; none for a corpus without items)."""
    task_of = dict(zip(items.column("item_id").to_pylist(), items.column("task").to_pylist(),
                       strict=True)) if items is not None and items.num_rows else {}  # fmt: skip
    out: dict[str, list[str]] = {}
    for graph_id in graph_ids:
        if task_of.get(graph_id) is not None:
            out.setdefault(task_of[graph_id], []).append(graph_id)
    return dict(sorted(out.items()))


def score_reference(cfg: GraphSettings, run: str) -> dict[str, Any]:
    """Stage graphs_reference@<run>: the run's coreference on its graphs (graphs@<run>'s: the
    section's seed, order and mention span) scored against graphs.references.<run>.reference's
    on the same graphs; graphs one side lacks count as empty there (the key's graphs decide)."""
    entry = reference_entry(cfg, run)
    clusters = {}
    for name in (entry.reference, run):
        data = read_annotation(docs_dir(entry.corpus), mentions_dir(name), items=True)
        clusters[name] = graph_clusters(data["documents"], data["items"], data["mentions"],
                                        data["query_mentions"], seed=cfg.seed, order=cfg.order,
                                        mention_span=cfg.mention_span)  # fmt: skip
    key, response = clusters[entry.reference], clusters[run]
    tasks = _graph_tasks(data["items"], key)
    report = {
        "run": run,
        "reference": entry.reference,
        "corpus": entry.corpus,
        "graphs": len(key),
        # mentions over the graphs (a story's once per question), the reference's and the run's
        "graph_mentions": {
            name: sum(len(c) for cs in clusters[name].values() for c in cs)
            for name in (entry.reference, run)
        },
        "coreference_against_reference": coreference_scores(key, response, mentions=True),
        # per task label (bAbI's qa<k>): an annotator may read one task's stories well and
        # another's not at all, so a reader's error per task sits at its task's score
        "by_task": {
            task: coreference_scores(
                {g: key[g] for g in ids},
                {g: response[g] for g in ids if g in response},
                mentions=True,
            )
            for task, ids in tasks.items()
        },
    }
    log.info("%s: CoNLL F1 %.2f against %s on %d graphs", run,
             report["coreference_against_reference"]["conll_f1"], entry.reference,
             len(key))  # fmt: skip
    storage.write_metrics(reference_metrics_path(run), report)
    return report


# --------------------------------------------------------------------------- 5. the flows


@task(name="graphs", task_run_name="graphs@{run}")
def build(run: str) -> dict[str, Any]:
    return build_mage_graphs(graph_settings(), run)


@task(name="graphs-ablation", task_run_name="graphs_ablation@{name}")
def build_variant(name: str) -> dict[str, Any]:
    return build_ablation(graph_settings(), name)


@task(name="graphs-reference", task_run_name="graphs_reference@{run}")
def score_against_reference(run: str) -> dict[str, Any]:
    return score_reference(graph_settings(), run)


@flow(name="graphs")
def graphs(run: str) -> dict:
    return build(run)


@flow(name="graphs-ablation")
def graphs_ablation(name: str) -> dict:
    return build_variant(name)


@flow(name="graphs-reference")
def graphs_reference(run: str) -> dict:
    return score_against_reference(run)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", help="a key of annotate.runs, model_runs or stanza_runs")
    which.add_argument("--ablation", help="a key of graphs.ablations")
    which.add_argument("--reference", help="a key of graphs.references (an annotation run)")
    args = parser.parse_args(argv)
    if args.run is not None:
        run_cli(graphs, args.run)
    elif args.ablation is not None:
        run_cli(graphs_ablation, args.ablation)
    else:
        run_cli(graphs_reference, args.reference)


if __name__ == "__main__":
    main()
