"""Stage `entity_prediction`: InScript entity prediction (Ji et al. 2017 §5.3, Table 3).

    python -m flows.entity_prediction --corpus inscript

params.yaml entity_prediction holds the slot rules and the shallow ranker's settings; the
stage reads data/docs/<corpus>/ (InScript: also data/raw/inscript for the label kinds) and
writes metrics/entity_prediction/<corpus>.json and
data/entity_prediction/<corpus>/predictions.parquet. The work is
tasks/evaluation/entity_prediction_stage.py's (the baselines) and EntityNLM's predictor
(models/entitynlm/apply.py, checkpoint entity_prediction.entitynlm.checkpoint, null: none); the
embedded default runs on `synthetic`.
"""

from __future__ import annotations

import argparse

from flows.runtime import flow, run_cli, task
from models.entitynlm.apply import entity_predictors
from tasks.evaluation import entity_prediction_stage as stage

run_corpus = task(stage.run, name="entity-prediction", task_run_name="entity_prediction@{corpus}")


@flow(name="entity_prediction")
def entity_prediction(corpus: str) -> dict:
    cfg = stage.settings()
    return run_corpus(corpus, entity_predictors(cfg.entitynlm.checkpoint))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a corpus of data/docs/ with gold mentions")
    args = parser.parse_args(argv)
    run_cli(entity_prediction, args.corpus)


if __name__ == "__main__":
    main()
