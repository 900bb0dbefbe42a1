"""tasks/report/mage.py render_placement: the coreference placement ablation (issue #15.3),
labelled as not in the paper, pairs each sentence-placement run with its paper-placement run."""

from __future__ import annotations

from tasks.report.common import Run
from tasks.report.mage import render_placement, render_unmatched


def _run(model: str, task: str, error: float, placement: str | None = None, dev=None) -> Run:
    """dev: each seed's dev accuracy (per_seed), else one dev error equal to the test error."""
    metrics = {"model": model, "task": task, "dataset": f"babi/{task}", "test_error": error,
               "seeds": 3, "epochs_run": 4, "best_epoch": 2, "test_n": 10}  # fmt: skip
    if dev:
        metrics["per_seed"] = {str(k + 1): {"dev_acc": a} for k, a in enumerate(dev)}
    else:
        metrics["dev_error"] = error
    if placement:
        metrics["coref_placement"] = placement
    return Run(model, task, "babi", f"metrics/train_mage/{model}-{task}.json", metrics)


def test_ablation_table_pairs_the_two_placements():
    runs = [
        _run("ga-mage16", "qa2", 0.25, dev=[0.5, 0.6, 0.7]),
        _run("ga-mage16-sentence", "qa2", 0.20, "sentence", dev=[0.8, 0.8, 0.8]),
        _run("bigru-mage16-sentence", "qa3", 0.5, "sentence"),  # no paper-placement run
    ]
    text = "\n".join(render_placement(runs))
    assert "Ablation (not in the paper)" in text
    # dev error mean ± sd over seeds (40 ± 8.2 and 20 ± 0), Δ of the means, test with its n
    row = "| `ga-mage16` | qa2 | 40.0 ± 8.2 | 20.0 ± 0.0 | -20.0 | 25.0 / 20.0 (10) | 3 | 4 (2) |"
    assert row in text
    assert "| `bigru-mage16` | qa3 | — | 50.0 | — | — / 50.0 (10) |" in text
    # rendered with the family's other runs
    assert "Ablation (not in the paper)" in "\n".join(render_unmatched([], runs, {}, None))


def test_no_sentence_runs_no_table():
    assert render_placement([_run("ga-mage16", "qa2", 0.25)]) == []
