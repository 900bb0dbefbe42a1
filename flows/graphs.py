"""Stage `graphs`: one annotation run -> data/graphs/<run>/graphs.parquet (MAGE DAGs).

    python -m flows.graphs --run synthetic-gold
    python -m flows.graphs --run synthetic-gold --placement sentence   # -> synthetic-gold-sentence
    python -m flows.graphs --run babi-entity-id --order document_query --mention-span no_determiner
        # -> babi-entity-id-document-query-no-determiner (one cell of the issue #33.11 grid)

Dhingra et al. §3.1-3.3: typed-edge graphs, decomposed into forward/backward DAGs per chain.
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from tasks.graphs import stage
from tasks.graphs.dags import MENTION_SPANS, ORDERS

build = task(stage.build_mage_graphs, name="graphs", task_run_name="graphs@{run}")


@flow(name="graphs")
def graphs(
    run: str,
    placement: str | None = None,
    order: str | None = None,
    mention_span: str | None = None,
) -> dict:
    return build(run, placement, order, mention_span)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run", required=True, help="a key of annotate.runs, model_runs or stanza_runs"
    )
    parser.add_argument(
        "--placement",
        choices=["paper", "sentence"],
        default=None,
        help="where a coreference edge leaves/enters a mention (default: graphs.coref_placement); "
        "sentence writes data/graphs/<run>-sentence/graphs.parquet",
    )
    parser.add_argument(
        "--order",
        choices=list(ORDERS),
        default=None,
        help="document/query order per item (default: graphs.order, random as §3.3); another "
        "writes data/graphs/<run>-<order>/graphs.parquet",
    )
    parser.add_argument(
        "--mention-span",
        choices=list(MENTION_SPANS),
        default=None,
        help="mention spans as annotated, or without a leading determiner (default: "
        "graphs.mention_span)",
    )
    args = parser.parse_args(argv)
    run_cli(graphs, args.run, args.placement, args.order, args.mention_span)


if __name__ == "__main__":
    main()
