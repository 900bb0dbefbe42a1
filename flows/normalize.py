"""Stage `normalize`: data/raw/<corpus>/ -> data/docs/<corpus>/{documents,items,mentions}.parquet.

python -m flows.normalize --corpus babi
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from tasks import corpora
from tasks.core import layout
from tasks.corpora import ingest

normalize_task = task(
    ingest.normalize_corpus, name="normalize-corpus", task_run_name="normalize@{corpus}"
)


@flow(name="normalize")
def normalize(corpus: str) -> dict[str, int]:
    return normalize_task(corpus, layout.raw_dir(corpus), layout.docs_dir(corpus))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, choices=sorted(corpora.REGISTRY))
    args = parser.parse_args(argv)
    run_cli(normalize, args.corpus)


if __name__ == "__main__":
    main()
