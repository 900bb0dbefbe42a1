"""Stage `graphs`: one annotation run -> data/graphs/<run>/graphs.parquet (MAGE DAGs).

    python -m flows.graphs --run synthetic-gold
    python -m flows.graphs --run synthetic-gold --placement sentence   # -> synthetic-gold-sentence

Dhingra et al. §3.1-3.3: typed-edge graphs, decomposed into forward/backward DAGs per chain.
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from tasks.graphs import stage

build = task(stage.build_mage_graphs, name="graphs", task_run_name="graphs@{run}")


@flow(name="graphs")
def graphs(run: str, placement: str | None = None) -> dict:
    return build(run, placement)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run", required=True, help="a key of annotate.runs or annotate.model_runs in params.yaml"
    )
    parser.add_argument(
        "--placement",
        choices=["paper", "sentence"],
        default=None,
        help="where a coreference edge leaves/enters a mention (default: graphs.coref_placement); "
        "sentence writes data/graphs/<run>-sentence/graphs.parquet",
    )
    args = parser.parse_args(argv)
    run_cli(graphs, args.run, args.placement)


if __name__ == "__main__":
    main()
