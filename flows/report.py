"""Stage `report`: reports/results.md, our metrics beside the papers' tables.

    python -m flows.report

Reads metrics/train_mage/<model>-<task>.json and metrics/train_coref/<encoder>.json (the
training stages' DVC metrics) and tasks/report/paper_results.yaml (the papers' numbers and the
model/task mapping); paths in params.yaml `report`. Missing metrics give "—" cells.
Deterministic output. tasks/report/build.py assembles it from the per-family renderers: the
report module of each family of models/registry.py (reports()), in the registry's order.
The report is also logged to MLflow (experiment `report`, run `report`, artifacts report/).
"""

from __future__ import annotations

import argparse
import logging

from flows.runtime import flow, run_cli, task
from models import registry
from tasks.core.tracking import tracked_run
from tasks.report import build as stage

log = logging.getLogger("corefrepro.report")


@task(name="log-report", task_run_name="report")
def log_report(out: str) -> None:
    """The report (and whatever sits beside it: figures) as artifacts of the MLflow run
    `report` (experiment `report`), so a newcomer finds it from the runs table too."""
    from pathlib import Path

    import mlflow

    with tracked_run("report", "", dataset="all"):
        mlflow.log_artifacts(str(Path(out).parent), artifact_path="report")


@flow(name="report")
def report() -> str:
    out = stage.build(registry.reports())  # one section per family, in the registry's order
    log.info("wrote %s", out)
    log_report(str(out))
    return str(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    run_cli(report)


if __name__ == "__main__":
    main()
