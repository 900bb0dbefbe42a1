"""Stage `view_corelm`: one annotation run -> data/graphs/<run>/corelm.parquet.

    python -m flows.view_corelm --run handmade-gold

Stylianou & Vlahavas §4.1: entity-id streams, one copy of a document per nesting layer.

Layout (issue #54.4): this module is the stage's one home (the DVC stages view_corelm* all
run it): its settings section (params.yaml view_corelm, CoreLMViewSettings), its paths (the
run's tables read, data/graphs/<run>/corelm.parquet and metrics/view_corelm/<run>.json
written), and the flow. Its own section, apart from the graphs' and EntityNLM's, so a setting
of one family's view retrains nothing of another family. The libraries take arguments:
tasks/graphs/views.py encodes the view, tasks/graphs/annotated.py reads the run's tables from
the folders it is given (shared with flows/graphs.py and flows/view_entitynlm.py).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from flows.runtime import flow, run_cli, task
from tasks.annotation.runs import run_settings
from tasks.core import storage
from tasks.core.config import resolve_path
from tasks.core.layout import docs_dir, mentions_dir, view_file
from tasks.core.schema import CORELM_VIEW
from tasks.core.settings import bounded, load_stage_settings
from tasks.graphs.annotated import log_dropped, read_annotation
from tasks.graphs.views import build_corelm_view

log = logging.getLogger("corefrepro.graphs")

STAGE = "view_corelm"

# --------------------------------------------------------------------------- 1. settings


@dataclass
class CoreLMViewSettings:
    """params.yaml view_corelm (view_corelm@<run>)."""

    id_scope: Literal["corpus", "document"] = "corpus"
    max_entities: int | None = bounded(None, ge=1)
    drop_singletons: bool = False


def settings() -> CoreLMViewSettings:
    """params.yaml view_corelm, parsed strictly."""
    return load_stage_settings(CoreLMViewSettings, STAGE)


# --------------------------------------------------------------------------- 2. paths


def table_path(run: str) -> Path:
    return view_file(run, "corelm")


def metrics_path(run: str) -> Path:
    return resolve_path(f"metrics/{STAGE}/{run}.json")


# --------------------------------------------------------------------------- 3. the view


def build_corelm(cfg: CoreLMViewSettings, run: str) -> dict[str, Any]:
    """Stage view_corelm@<run>: entity-id streams per nesting layer (Stylianou & Vlahavas §4.1)."""
    entry = run_settings(run)
    data = read_annotation(docs_dir(entry.corpus), mentions_dir(run), items=False)
    view = build_corelm_view(
        data["documents"],
        data["mentions"],
        id_scope=cfg.id_scope,
        max_entities=cfg.max_entities,
        drop_singletons=cfg.drop_singletons,
    )
    log_dropped(log, run, "corelm", view.stats)
    log.info("%s: %d CoreLM instances", run, len(view.rows))
    stats = {k: v for k, v in sorted(view.stats.items()) if isinstance(v, int)}
    report = {"corelm_instances": len(view.rows), "corelm_stats": stats}
    meta = {"corpus": entry.corpus, "run": run, "annotator": entry.annotator}
    storage.write_table(table_path(run), CORELM_VIEW, view.rows, meta)
    storage.write_metrics(metrics_path(run), report)
    return report


# --------------------------------------------------------------------------- 4. the flow


@task(name="view_corelm", task_run_name="view_corelm@{run}")
def build(run: str) -> dict[str, Any]:
    return build_corelm(settings(), run)


@flow(name="view_corelm")
def view_corelm(run: str) -> dict:
    return build(run)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a key of annotate.runs in params.yaml")
    run_cli(view_corelm, parser.parse_args(argv).run)


if __name__ == "__main__":
    main()
