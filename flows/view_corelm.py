"""Stage `view_corelm`: one annotation run -> data/graphs/<run>/corelm.parquet.

    python -m flows.view_corelm --run handmade-gold

Stylianou & Vlahavas §4.1: entity-id streams, one copy of a document per nesting layer.
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from tasks.graphs import stage

build = task(stage.build_corelm, name="view_corelm", task_run_name="view_corelm@{run}")


@flow(name="view_corelm")
def view_corelm(run: str) -> dict:
    return build(run)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a key of annotate.runs in params.yaml")
    run_cli(view_corelm, parser.parse_args(argv).run)


if __name__ == "__main__":
    main()
