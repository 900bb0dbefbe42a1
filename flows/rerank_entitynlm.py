"""Stage `rerank_entitynlm`: coreference reranking with EntityNLM (Ji et al. 2017 §5.2, Table 2).

    python -m flows.rerank_entitynlm --corpus handmade

params.yaml rerank_entitynlm names the EntityNLM checkpoint and the significance test's
settings; kbest.corpora the corpora (one stage each). The work is
models/entitynlm/rerank_stage.py's; it writes metrics/rerank_entitynlm/<corpus>.json and one
MLflow run (experiment "rerank_entitynlm").
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from models.entitynlm import rerank_stage as stage

run_corpus = task(stage.run, name="rerank-entitynlm", task_run_name="rerank_entitynlm@{corpus}")


@flow(name="rerank_entitynlm")
def rerank_entitynlm(corpus: str) -> dict:
    return run_corpus(corpus)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a corpus of kbest.corpora")
    args = parser.parse_args(argv)
    run_cli(rerank_entitynlm, args.corpus)


if __name__ == "__main__":
    main()
