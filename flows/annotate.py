"""Stage `annotate`: coreference mentions for one (corpus, annotator) run.

    python -m flows.annotate --run synthetic-gold

params.yaml annotate.runs.<run> (or model_runs.<run>, stanza_runs.<run>) names the corpus and the
annotator; data/docs/<corpus>/ is read, and data/mentions/<run>/{mentions,query_mentions}.parquet
is written. Documents are annotated in shards on the configured task runner: threads,
processes, or dask (a LocalCluster under Prefect, a process pool without it; or, with
annotate.dask_address or DASK_SCHEDULER_ADDRESS, the running scheduler there). Each finished
shard is kept in data/cache/annotate/ under a fingerprint of its inputs, so an interrupted run
resumes where it stopped. Where the corpus has gold coreference, the run is scored against it
on the dev documents (metrics/annotate/<run>.json, MLflow experiment "annotation").
"""

from __future__ import annotations

import argparse
import logging
import time

from flows.runtime import Runner, flow, run_cli, task
from tasks.annotation import stage
from tasks.annotation.runs import dask_address
from tasks.core.progress import Progress

log = logging.getLogger("corefrepro.annotate")


def _runner(run: str) -> Runner:
    cfg = stage.settings()
    address, setting = dask_address(cfg)
    return Runner(
        cfg.executor,
        cfg.workers,
        address=address,
        address_setting=setting or "dask address",
    )


annotate_shard = task(
    stage.annotate_shard,
    name="annotate-shard",
    task_run_name="annotate@{run}/shard{shard}",
    retries=1,
)


@task(name="score-against-gold", task_run_name="score@{run}")
def score_run(run: str, report: dict) -> dict:
    return stage.score_and_log(run, report)


@flow(name="annotate", runner=_runner)
def annotate(run: str) -> dict:
    plan = stage.plan(run)
    total = sum(len(s["doc_ids"]) for s in plan.shards)
    log.info(
        "%s: %d documents in %d shards (%s annotator, %s)",
        run,
        total,
        len(plan.shards),
        plan.annotator,
        _runner(run),
    )
    started = time.perf_counter()
    bar = Progress(f"annotate@{run}", total, "docs", logger=log)

    def progress(i: int, result: dict) -> None:
        if result["cached"]:  # an interrupted run's finished shard: said, not redone
            log.info("%s: shard %d of %d [reused from cache]", run, i, len(plan.shards))
        bar.update(result["documents"])

    with bar:
        results = annotate_shard.map_kwargs(
            [
                {
                    "run": run,
                    "shard": s["index"],
                    "doc_ids": s["doc_ids"],
                    "fingerprint": plan.fingerprint,
                }
                for s in plan.shards
            ],
            on_done=progress,
        )
    elapsed = time.perf_counter() - started
    report = stage.merge_shards(plan, results, elapsed)
    return score_run(run, report)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--run", required=True, help="a key of annotate.runs, model_runs or stanza_runs"
    )
    args = parser.parse_args(argv)
    run_cli(annotate, args.run)


if __name__ == "__main__":
    main()
