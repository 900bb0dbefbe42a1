"""The report's figures as PNG files: they render offline (DVC's Vega plots need a CDN), sit
beside reports/results.md in git and are DVC plots (dvc.yaml `plots`), so `dvc plots show`
and any markdown viewer show the same pictures.

Deterministic: the Agg backend, fixed sizes and no date in the PNG metadata, so an unchanged
input rewrites the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)

from tasks.core.storage import atomic_path  # noqa: E402
from tasks.report.common import Measured  # noqa: E402

METADATA = {"Software": None}  # no matplotlib version string: same bytes across upgrades
# the dev metric drawn per family, from the shared loop's history.json rows
CURVE_KEYS = ("dev_acc", "dev_conll_f1", "dev_ppl", "dev_perplexity", "dev_loss")


def _save(fig, path: Path) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata=METADATA)
    plt.close(fig)
    return path


def ours_vs_paper(rows: Sequence[Measured], path: Path) -> Path | None:
    """Paired bars per measured number: ours beside the paper's (the paper's hatched)."""
    rows = [r for r in rows if r.ours is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.2))
    ys = range(len(rows))
    ax.barh([y + 0.2 for y in ys], [r.ours for r in rows], height=0.4, label="ours")
    paper = [(y, r.paper) for y, r in zip(ys, rows, strict=True) if r.paper is not None]
    if paper:
        ax.barh([y - 0.2 for y, _ in paper], [v for _, v in paper], height=0.4, hatch="//",
                fill=False, label="paper")  # fmt: skip
    ax.set_yticks(list(ys), [f"{r.family}: {r.key()}" for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("Ours vs the papers (each bar in its row's metric)", fontsize=9)
    fig.tight_layout()
    return _save(fig, path)


def _histories(root: Path) -> dict[str, list[dict]]:
    """<run>/seed<k>/history.json under a stage's artifacts directory, by "<run>/seed<k>"."""
    out = {}
    for path in sorted(root.glob("*/seed*/history.json")) if root.is_dir() else []:
        rows = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(rows, list) and rows:
            out[f"{path.parent.parent.name}/{path.parent.name}"] = rows
    return out


def _dev_keys(keys) -> list[str]:
    return [k for k in keys if k.startswith("dev_")]


def learning_curves(family: str, artifacts: Path, path: Path) -> Path | None:
    """Train loss and the family's dev metric per epoch, one line per run and seed."""
    runs = _histories(artifacts)
    if not runs:
        return None
    logged = {k for rows in runs.values() for r in rows for k in r}
    # the family's dev metric: a known one, else the first dev_ key its history logs
    key = next((k for k in CURVE_KEYS if k in logged), min(_dev_keys(logged), default=None))
    fig, axes = plt.subplots(1, 2 if key else 1, figsize=(10 if key else 5, 3.5), squeeze=False)
    for name, rows in runs.items():
        epochs = [r["epoch"] for r in rows]
        axes[0][0].plot(epochs, [r.get("train_loss") for r in rows], marker=".", label=name)
        if key:
            axes[0][1].plot(epochs, [r.get(key) for r in rows], marker=".", label=name)
    axes[0][0].set(title=f"{family}: train loss", xlabel="epoch")
    if key:
        axes[0][1].set(title=f"{family}: {key}", xlabel="epoch")
    axes[0][-1].legend(fontsize=6)
    fig.tight_layout()
    return _save(fig, path)


def annotation_quality(metrics_dir: Path, path: Path) -> Path | None:
    """Dev CoNLL F1 (and MUC / B³ / CEAF-e F1) of every annotation run scored against gold."""
    scores: dict[str, Mapping] = {}
    for file in sorted(metrics_dir.glob("*.json")) if metrics_dir.is_dir() else []:
        dev = json.loads(file.read_text(encoding="utf-8")).get("dev") or {}
        if isinstance(dev, Mapping) and dev.get("conll_f1") is not None:
            scores[file.stem] = dev
    if not scores:
        return None
    keys = ("muc_f1", "bcub_f1", "ceafe_f1", "conll_f1")
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(scores) + 1.2))
    for i, key in enumerate(keys):
        ys = [y + (i - 1.5) * 0.2 for y in range(len(scores))]
        ax.barh(ys, [100 * (s.get(key) or 0.0) for s in scores.values()], height=0.2, label=key)
    ax.set_yticks(list(range(len(scores))), list(scores), fontsize=7)
    ax.invert_yaxis()
    ax.set(xlabel="F1 % on dev vs gold", xlim=(0, 100), title="Annotation quality per run")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return _save(fig, path)
