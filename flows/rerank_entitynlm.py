"""Stage `rerank_entitynlm`: coreference reranking with EntityNLM (Ji et al. 2017 §5.2, Table 2).

    python -m flows.rerank_entitynlm --corpus handmade

Reads the kbest stage's trees (data/kbest/<corpus>/kbest.parquet), the corpus's documents and
gold mentions (data/docs/<corpus>/) and the trained EntityNLM (params.yaml rerank_entitynlm.
checkpoint), scores every tree with log P(X, R, E, L) (models/entitynlm/apply.py), reranks by
the LM alone and by the dev-tuned alpha mix (models/entitynlm/rerank.py) and writes
metrics/rerank_entitynlm/<corpus>.json: MUC/B3/CEAF-e/CoNLL of the 1-best and both reranked
systems on test, alpha and its dev grid, the approximate-randomization p-values; one MLflow
run (experiment "rerank_entitynlm"). kbest.corpora names the corpora (one stage each).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flows.runtime import flow, run_cli, task
from models.entitynlm import rerank
from models.entitynlm.apply import EntityNLMScorer, load_entitynlm
from tasks.core import storage
from tasks.core.checkpoints import jsonable
from tasks.core.config import resolve_path
from tasks.core.layout import check_checkpoint_path, docs_dir, kbest_dir
from tasks.core.schema import KBEST
from tasks.core.settings import Threads, bounded, load_stage_settings, settings_to_dict
from tasks.evaluation.significance import TRIALS
from tasks.training.loop import torch_threads

log = logging.getLogger("corefrepro.rerank_entitynlm")
STAGE = "rerank_entitynlm"


@dataclass
class RerankSettings:
    """params.yaml rerank_entitynlm."""

    checkpoint: str = "artifacts/train_entitynlm/entitynlm/seed1/best.pt"
    batch: int = bounded(32, ge=1)  # candidate trees per forward pass (they share one
    # document's LSTM states)
    trials: int = bounded(TRIALS, ge=1)  # approximate randomization shuffles
    seed: int = 0  # approximate randomization seed
    threads: Threads = bounded(1, ge=1)

    def validate(self, path: str) -> None:
        check_checkpoint_path(self.checkpoint, f"{path}.checkpoint")


def settings() -> RerankSettings:
    return load_stage_settings(RerankSettings, STAGE)


def metrics_path(corpus: str) -> Path:
    return resolve_path(f"metrics/{STAGE}") / f"{corpus}.json"


def report_dict(report: rerank.RerankReport, corpus: str, cfg: RerankSettings,
                unscored: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """unscored: documents with no words for the LM (their 1-best stands)."""
    return jsonable({
        "corpus": corpus, "checkpoint": cfg.checkpoint, "alpha": report.alpha,
        "lm_unscored_documents": sorted(unscored or []),
        "dev_grid": {f"{a:.2f}": f for a, f in sorted(report.dev_grid.items())},
        "test": report.test, "p_values": report.p_values, "changed": report.changed,
        "documents": report.documents, "trials": cfg.trials,
    })  # fmt: skip


def run(corpus: str, cfg: RerankSettings | None = None, *, track: bool = True) -> dict[str, Any]:
    """The stage on one corpus; returns the metrics written."""
    from tasks.core.tracking import log_metrics, tracked_run

    cfg = cfg or settings()
    with torch_threads(cfg.threads, f"{STAGE}.threads"):
        pair, vocab = load_entitynlm(resolve_path(cfg.checkpoint))
        scorer = EntityNLMScorer(pair, vocab, batch=cfg.batch)
        report = rerank.rerank_corpus(
            kbest_dir(corpus) / f"{KBEST}.parquet",
            docs_dir(corpus),
            scorer,
            trials=cfg.trials,
            seed=cfg.seed,
        )
    if scorer.unscored:
        log.warning("%s: %d document(s) have no words for the LM (masked text?), their 1-best "
                    "stands: %s", corpus, len(scorer.unscored), ", ".join(scorer.unscored[:5]))  # fmt: skip
    metrics = report_dict(report, corpus, cfg, scorer.unscored)
    storage.write_metrics(metrics_path(corpus), metrics)
    flat = {f"{system}.{k}": v for system, m in report.test.items() for k, v in m.items()}
    flat |= {f"p_value.{k}": v for k, v in report.p_values.items()} | {"alpha": report.alpha}
    if track:
        with tracked_run(STAGE, corpus, dataset=corpus, seed=cfg.seed,
                         run_params=settings_to_dict(cfg)):  # fmt: skip
            log_metrics(flat)
    log.info("%s: alpha %.2f, test CoNLL %s, p %s", corpus, report.alpha,
             {s: round(m["conll_f1"], 4) for s, m in report.test.items()}, report.p_values)  # fmt: skip
    return metrics


run_corpus = task(run, name="rerank-entitynlm", task_run_name="rerank_entitynlm@{corpus}")


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
