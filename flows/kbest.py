"""Stage `kbest`: k-best antecedent trees of one corpus, for EntityNLM's reranking experiment.

    python -m flows.kbest --corpus inscript

params.yaml kbest names the checkpoint (artifacts/train_coref/<encoder>/seed<seed>/best.pt, written
by train_coref), k (Ji et al. 2017 §5.2: 100) and the splits; data/docs/<corpus>/ is read and
data/kbest/<corpus>/kbest.parquet (tasks/core/schema.py KBEST) + metrics/kbest/<corpus>.json are
written. The heuristic and the table are models/coref/kbest.py's.
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from models.coref import kbest as stage

export_corpus = task(stage.export_corpus, name="kbest-export", task_run_name="kbest@{corpus}")


@flow(name="kbest")
def kbest(corpus: str) -> dict:
    return export_corpus(corpus)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a corpus of data/docs/ (kbest.corpora)")
    args = parser.parse_args(argv)
    run_cli(kbest, args.corpus)


if __name__ == "__main__":
    main()
