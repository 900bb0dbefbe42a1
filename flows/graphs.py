"""Stage `graphs`: one annotation run -> data/graphs/<run>/{graphs,entitynlm,corelm}.parquet.

    python -m flows.graphs --run synthetic-gold

MAGE DAGs (Dhingra et al. §3.1-3.3, chain-decomposed), EntityNLM R/E/L (Ji et al. §2) and
CoreLM entity-id streams (Stylianou & Vlahavas §4.1), all from the same annotation.
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from tasks import graph_stage

build_run = task(graph_stage.build_run, name="build-graphs-and-views")


@flow(name="graphs")
def graphs(run: str) -> dict:
    return build_run(run)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run", required=True, help="a key of annotate.runs or annotate.model_runs in params.yaml"
    )
    args = parser.parse_args(argv)
    run_cli(graphs, args.run)


if __name__ == "__main__":
    main()
