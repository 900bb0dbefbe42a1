"""tasks/report/mage.py render_placement: the coreference placement ablation (issue #15.3),
labelled as not in the paper, pairs each sentence-placement run with its paper-placement run."""

from __future__ import annotations

from tasks.report.common import Run
from tasks.report.mage import render_placement, render_unmatched


def _run(model: str, task: str, error: float, placement: str | None = None) -> Run:
    metrics = {"model": model, "task": task, "dataset": f"babi/{task}", "test_error": error,
               "seeds": 3, "epochs_run": 4, "best_epoch": 2}  # fmt: skip
    if placement:
        metrics["coref_placement"] = placement
    return Run(model, task, "babi", f"metrics/train_mage/{model}-{task}.json", metrics)


def test_ablation_table_pairs_the_two_placements():
    runs = [
        _run("ga-mage16", "qa2", 0.25),
        _run("ga-mage16-sentence", "qa2", 0.20, "sentence"),
        _run("bigru-mage16-sentence", "qa3", 0.5, "sentence"),  # no paper-placement run
    ]
    text = "\n".join(render_placement(runs))
    assert "Ablation (not in the paper)" in text
    assert "| `ga-mage16` | qa2 | 25.0 | 20.0 | -5.0 | 3 | 4 (2) | babi/qa2 |" in text
    assert "| `bigru-mage16` | qa3 | — | 50.0 | — |" in text
    # rendered with the family's other runs
    assert "Ablation (not in the paper)" in "\n".join(render_unmatched([], runs, {}, None))


def test_no_sentence_runs_no_table():
    assert render_placement([_run("ga-mage16", "qa2", 0.25)]) == []
