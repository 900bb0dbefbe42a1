"""Stage `graphs`: one annotation run -> data/graphs/<run>/graphs.parquet (MAGE DAGs).

    python -m flows.graphs --run synthetic-gold

Dhingra et al. §3.1-3.3: typed-edge graphs, decomposed into forward/backward DAGs per chain.
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from tasks.graphs import stage

build = task(stage.build_mage_graphs, name="graphs", task_run_name="graphs@{run}")


@flow(name="graphs")
def graphs(run: str) -> dict:
    return build(run)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run", required=True, help="a key of annotate.runs or annotate.model_runs in params.yaml"
    )
    run_cli(graphs, parser.parse_args(argv).run)


if __name__ == "__main__":
    main()
