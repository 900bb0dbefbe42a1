"""Stages `graphs` and `graphs_ablation`: an annotation run -> data/graphs/<run>/graphs.parquet.

    python -m flows.graphs --run synthetic-gold              # graphs@synthetic-gold
    python -m flows.graphs --ablation synthetic-gold-sentence
        # graphs_ablation@<name>: the variant params.yaml graphs.ablations.<name> sets
        # (coreference placement, segment order, mention span) -> data/graphs/<name>/

Dhingra et al. §3.1-3.3: typed-edge graphs, decomposed into forward/backward DAGs per chain.
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from tasks.graphs import stage

build = task(stage.build_mage_graphs, name="graphs", task_run_name="graphs@{run}")
build_ablation = task(stage.build_ablation, name="graphs-ablation",
                      task_run_name="graphs_ablation@{name}")  # fmt: skip


@flow(name="graphs")
def graphs(run: str) -> dict:
    return build(run)


@flow(name="graphs-ablation")
def graphs_ablation(name: str) -> dict:
    return build_ablation(name)


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
