"""Stage `view_entitynlm`: one annotation run -> data/graphs/<run>/entitynlm.parquet.

    python -m flows.view_entitynlm --run handmade-gold

Ji et al. 2017 §2: per token R (in a mention), E (entity index), L (remaining mention length).

Layout (issue #54.4): this module is the stage's one home: its settings section
(params.yaml view_entitynlm, EntityNLMViewSettings; entity prediction, flows/
entity_prediction.py, reads its nesting rule from here: slots and training mentions follow
one rule), its paths (the run's tables read, data/graphs/<run>/entitynlm.parquet and
metrics/view_entitynlm/<run>.json written), and the flow. Its own section, apart from the
graphs' and CoreLM's, so a setting of one family's view retrains nothing of another family.
The libraries take arguments: tasks/graphs/views.py encodes the view, tasks/graphs/annotated.py
reads the run's tables from the folders it is given (shared with flows/graphs.py and
flows/view_corelm.py).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from flows.runtime import flow, run_cli, task
from tasks.annotation.runs import run_settings
from tasks.core import storage
from tasks.core.config import resolve_path
from tasks.core.layout import docs_dir, mentions_dir, view_file
from tasks.core.schema import ENTITYNLM_VIEW
from tasks.core.settings import bounded, load_stage_settings
from tasks.graphs.annotated import log_dropped, read_annotation
from tasks.graphs.views import L_MAX, build_entitynlm_view

log = logging.getLogger("corefrepro.graphs")

STAGE = "view_entitynlm"

# --------------------------------------------------------------------------- 1. settings


@dataclass
class EntityNLMViewSettings:
    """params.yaml view_entitynlm (view_entitynlm@<run>)."""

    l_max: int = bounded(L_MAX, ge=1)  # Ji et al. 2017 §2.1: longest mention length
    long_mentions: Literal["truncate", "skip"] = "truncate"
    drop_singletons_for: list[str] = field(default_factory=list)  # CoNLL-style corpora
    # nested mentions (views.resolve_nesting): the enclosing one (Ji et al. §4) or the inner
    # heads; entity prediction's slots follow the same rule (nesting_rule)
    nested: Literal["enclosing", "heads"] = "enclosing"
    # per-corpus rules: InScript labels heads, and Modi et al. 2017's released targets are
    # head tokens (tasks/evaluation/entity_prediction.py rule 3)
    nested_for: dict[str, Literal["enclosing", "heads"]] = field(default_factory=dict)

    def nesting_rule(self, corpus: str) -> str:
        """The nesting rule of the view of a run of `corpus`: nested_for, else nested."""
        return self.nested_for.get(corpus, self.nested)


def settings() -> EntityNLMViewSettings:
    """params.yaml view_entitynlm, parsed strictly (the view stage and entity prediction,
    whose slots follow the view's nesting rule)."""
    return load_stage_settings(EntityNLMViewSettings, STAGE)


# --------------------------------------------------------------------------- 2. paths


def table_path(run: str) -> Path:
    return view_file(run, "entitynlm")


def metrics_path(run: str) -> Path:
    return resolve_path(f"metrics/{STAGE}/{run}.json")


# --------------------------------------------------------------------------- 3. the view


def build_entitynlm(cfg: EntityNLMViewSettings, run: str) -> dict[str, Any]:
    """Stage view_entitynlm@<run>: R/E/L per token (Ji et al. 2017 §2)."""
    entry = run_settings(run)
    data = read_annotation(docs_dir(entry.corpus), mentions_dir(run), items=False)
    corpus = entry.corpus
    view = build_entitynlm_view(
        data["documents"],
        data["mentions"],
        l_max=cfg.l_max,
        long_mentions=cfg.long_mentions,
        drop_singletons=corpus in cfg.drop_singletons_for,
        nested=cfg.nesting_rule(corpus),
    )
    log_dropped(log, run, "entitynlm", view.stats)
    log.info("%s: %d EntityNLM documents", run, len(view.rows))
    report = {
        "entitynlm_documents": len(view.rows),
        "entitynlm_stats": dict(sorted(view.stats.items())),
    }
    meta = {"corpus": entry.corpus, "run": run, "annotator": entry.annotator}
    storage.write_table(table_path(run), ENTITYNLM_VIEW, view.rows, meta)
    storage.write_metrics(metrics_path(run), report)
    return report


# --------------------------------------------------------------------------- 4. the flow


@task(name="view_entitynlm", task_run_name="view_entitynlm@{run}")
def build(run: str) -> dict[str, Any]:
    return build_entitynlm(settings(), run)


@flow(name="view_entitynlm")
def view_entitynlm(run: str) -> dict:
    return build(run)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a key of annotate.runs in params.yaml")
    run_cli(view_entitynlm, parser.parse_args(argv).run)


if __name__ == "__main__":
    main()
