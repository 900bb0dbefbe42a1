"""Stage `view_entitynlm`: one annotation run -> data/graphs/<run>/entitynlm.parquet.

    python -m flows.view_entitynlm --run handmade-gold

Ji et al. 2017 §2: per token R (in a mention), E (entity index), L (remaining mention length).
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from tasks.graphs import stage

build = task(stage.build_entitynlm, name="view_entitynlm", task_run_name="view_entitynlm@{run}")


@flow(name="view_entitynlm")
def view_entitynlm(run: str) -> dict:
    return build(run)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a key of annotate.runs in params.yaml")
    run_cli(view_entitynlm, parser.parse_args(argv).run)


if __name__ == "__main__":
    main()
