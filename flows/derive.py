"""Stage `derive`: a corpus made from another normalized corpus (tasks/graphs/derive.py).

    python -m flows.derive --corpus synthetic-mix

params.yaml derive.<name> names the source corpus and the kind (babi_mix: bAbI-Mix, Dhingra
et al. §4.2). Writes data/docs/<name>/{documents,items,mentions}.parquet and the per-split
counts to metrics/corpora/<name>.json (what stats@<corpus> writes for a normalized corpus).
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from tasks.core import storage
from tasks.core.config import resolve_path
from tasks.graphs import derive

derive_task = task(derive.derive_corpus, name="derive-corpus")


@flow(name="derive")
def derive_flow(corpus: str) -> dict:
    metrics = derive_task(corpus)
    storage.write_metrics(resolve_path(f"metrics/corpora/{corpus}.json"), metrics)
    return metrics


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a key of derive in params.yaml")
    args = parser.parse_args(argv)
    run_cli(derive_flow, args.corpus)


if __name__ == "__main__":
    main()
