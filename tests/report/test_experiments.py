"""`python -m tasks.report.experiments`: what differs between DVC experiments fits a
120-column terminal (issue #55.4: `dvc exp show` cut the changed parameters off behind two
figure columns)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tasks.report.experiments import changed_columns, render, short_name

REPO = Path(__file__).resolve().parents[2]
SUMMARY = "metrics/summary/{}.json:{}"


def _row(name: str, figures: dict[str, float], params: dict[str, object]) -> dict[str, object]:
    row: dict[str, object] = {
        "Experiment": name,
        "rev": name[:7],
        "typ": "branch_commit",
        "Created": "10:31 AM",
    }
    for figure, value in figures.items():
        row[SUMMARY.format(figure, "ours")] = value
        row[SUMMARY.format(figure, "paper")] = 67.8
    row.update(params)
    row["data/graphs"] = f"md5-{name}"  # a dependency's hash differs per experiment
    return row


ROWS = [
    _row("workspace", {"coref/asl_f1": 98.5, "mage/bigru_syn2_err": 50.8, "corelm/ft_ppl": 607.045},
         {"train_mage.train.lr": 0.001, "train_coref.train.epochs": 2, "seed": 1}),
    _row("exp-with-a-long-name", {"coref/asl_f1": 61.3, "mage/bigru_syn2_err": 9.0, "corelm/ft_ppl": 607.045},
         {"train_mage.train.lr": 0.5, "train_coref.train.epochs": 2, "seed": 1}),
    _row("exp-a", {"coref/asl_f1": 60.1, "mage/bigru_syn2_err": 12.0, "corelm/ft_ppl": 55.5},
         {"train_mage.train.lr": 0.001, "train_coref.train.epochs": 7, "seed": 1}),
]  # fmt: skip


def test_only_what_differs_figures_first_without_paper_or_dependencies():
    changed = changed_columns(ROWS)
    assert [short_name(c) for c in changed] == [
        "coref/asl_f1", "mage/bigru_syn2_err", "corelm/ft_ppl",
        "train_mage.train.lr", "train_coref.train.epochs",
    ]  # fmt: skip


def test_short_names():
    assert short_name("metrics/summary/coref/asl_f1.json:ours") == "coref/asl_f1"
    assert short_name("metrics/train_mage/ga.json:dev_error") == "train_mage/ga:dev_error"
    assert short_name("train_mage.models.ga.hidden_size") == "train_mage.models.ga.hidden_size"


def test_fits_the_width_and_keeps_every_experiment_and_value():
    for width in (120, 60):
        text = render(ROWS, width)
        assert max(len(line) for line in text.splitlines()) <= width
        for row in ROWS:
            assert row["Experiment"] in text
        assert "61.3" in text and "55.5" in text and "0.5" in text and "7" in text
    narrow = render(ROWS, 45)
    assert narrow.count("figure / parameter") == 3  # a block per experiment, names repeated


def test_nothing_differs():
    assert "No figure or parameter differs" in render(ROWS[:1] * 2)


def _run(cmd: list[str], cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO), "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_reads_real_dvc_experiments(tmp_path: Path):
    """Two experiments saved by DVC itself: each one's changed figure and parameter shows."""
    _run(["git", "init", "-q"], tmp_path)
    _run([sys.executable, "-m", "dvc", "init", "-q"], tmp_path)
    (tmp_path / "metrics/summary/coref").mkdir(parents=True)
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  report:\n    cmd: 'true'\n    params: [train.lr]\n"
        "    metrics:\n      - metrics/summary/coref/asl_f1.json:\n          cache: false\n"
        "      - metrics/summary/coref/lsl_f1.json:\n          cache: false\n"
    )  # two summary files with the same keys, as the report writes them

    def state(lr: float, f1: float) -> None:
        (tmp_path / "params.yaml").write_text(f"train:\n  lr: {lr}\n")
        (tmp_path / "metrics/summary/coref/asl_f1.json").write_text(
            json.dumps({"ours": f1, "paper": 67.8})
        )
        (tmp_path / "metrics/summary/coref/lsl_f1.json").write_text(
            json.dumps({"ours": 90.0, "paper": 67.4})
        )

    state(0.001, 98.5)
    _run([sys.executable, "-m", "dvc", "commit", "-f", "-q"], tmp_path)
    _run(["git", "add", "-A"], tmp_path)
    _run(["git", "commit", "-qm", "base"], tmp_path)
    for name, lr, f1 in (("exp-a", 0.5, 61.3), ("exp-b", 0.1, 60.1)):
        state(lr, f1)
        _run([sys.executable, "-m", "dvc", "exp", "save", "-q", "-f", "-n", name], tmp_path)
        _run(["git", "checkout", "-q", "."], tmp_path)
    out = _run([sys.executable, "-m", "tasks.report.experiments", "--width", "120"], tmp_path)
    lines = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    assert lines["figure"][-2:] == ["exp-b", "exp-a"]
    assert lines["coref/asl_f1"][-2:] == ["60.1", "61.3"]
    assert lines["train.lr"][-2:] == ["0.1", "0.5"]
    assert "coref/lsl_f1" not in lines and "paper" not in out  # the same in every row; the paper's
