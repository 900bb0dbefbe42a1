"""Stage `stats`: per-corpus statistics as DVC metrics + plots, logged to MLflow.

    python -m flows.stats --corpus babi

Writes metrics/corpora/<corpus>.json and plots/corpora/<corpus>_doc_lengths.csv.
"""

from __future__ import annotations

import argparse
import csv
import io

from flows.runtime import flow, run_cli, task
from tasks import corpora
from tasks.core import layout, storage
from tasks.core.config import resolve_path
from tasks.core.tracking import log_file, log_metrics, tracked_run
from tasks.corpora import ingest


@task(name="corpus-stats", task_run_name="stats@{corpus}")
def compute_stats(corpus: str) -> tuple[dict, list[dict]]:
    return ingest.corpus_stats(layout.docs_dir(corpus))


@task(name="log-stats", task_run_name="log-stats@{corpus}")
def log_stats(corpus: str, metrics: dict, metrics_path: str) -> None:
    with tracked_run(
        "stats", corpus, dataset=corpus, run_params={"normalize": ingest.normalize_settings(corpus)}
    ):
        for split, values in metrics.items():
            log_metrics({f"{split}.{k}": float(v) for k, v in values.items()})
        log_file(metrics_path)


@flow(name="stats")
def stats(corpus: str) -> dict:
    metrics, plot = compute_stats(corpus)
    metrics_path = resolve_path(f"metrics/corpora/{corpus}.json")
    storage.write_metrics(metrics_path, metrics)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=["doc_tokens", "documents"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(plot)
    storage.write_text(resolve_path(f"plots/corpora/{corpus}_doc_lengths.csv"), buf.getvalue())
    log_stats(corpus, metrics, str(metrics_path))
    return metrics


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, choices=sorted(corpora.REGISTRY))
    args = parser.parse_args(argv)
    run_cli(stats, args.corpus)


if __name__ == "__main__":
    main()
