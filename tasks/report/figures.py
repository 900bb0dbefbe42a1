"""The report's figures as PNG files: they render offline (DVC's Vega plots need a CDN), sit
beside reports/results.md in git and are DVC plots (dvc.yaml `plots`), so `dvc plots show`
and any markdown viewer show the same pictures.

Deterministic: the Agg backend, fixed sizes and no date in the PNG metadata, so an unchanged
input rewrites the same bytes.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen first)

from tasks.core.storage import atomic_path  # noqa: E402

METADATA = {"Software": None}  # no matplotlib version string: same bytes across upgrades
# the dev metric drawn per family, from the shared loop's history.json rows
CURVE_KEYS = ("dev_acc", "dev_conll_f1", "dev_ppl", "dev_perplexity", "dev_loss")


def _save(fig, path: Path) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata=METADATA)
    plt.close(fig)
    return path


@dataclass(frozen=True)
class ClaimPoint:
    """One claim as the figure draws it: the paper's b − a, ours (mean, sd or None)."""

    label: str
    metric: str  # the panel: one metric, one unit
    better: str  # higher | lower
    paper: float | None
    ours: float | None
    sd: float | None


def claims_vs_paper(points: Sequence[ClaimPoint], path: Path) -> Path | None:
    """The claims' differences b − a, ours (mean ± sd over seeds) beside the paper's, one
    panel per metric so each axis has one unit; what "better" means is in its label."""
    points = [p for p in points if p.ours is not None]
    if not points:
        return None
    metrics = sorted({p.metric for p in points})
    heights = [sum(p.metric == m for p in points) for m in metrics]
    fig, axes = plt.subplots(len(metrics), 1, figsize=(8, 0.5 * sum(heights) + 1.2 * len(metrics)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)  # fmt: skip
    for ax, metric in zip(axes[:, 0], metrics, strict=True):
        mine = [p for p in points if p.metric == metric]
        ys = list(range(len(mine)))
        ax.errorbar([p.ours for p in mine], ys, xerr=[p.sd or 0.0 for p in mine], fmt="o",
                    capsize=3, label="ours (mean ± sd over seeds)")  # fmt: skip
        paper = [(y, p.paper) for y, p in zip(ys, mine, strict=True) if p.paper is not None]
        ax.scatter([v for _, v in paper], [y for y, _ in paper], marker="x", color="black",
                   label="paper", zorder=3)  # fmt: skip
        ax.axvline(0.0, color="grey", linewidth=0.8)
        ax.set_yticks(ys, [p.label for p in mine], fontsize=7)
        ax.set_ylim(-0.7, len(mine) - 0.3)
        ax.invert_yaxis()
        ax.set_xlabel(f"b − a in {metric} ({mine[0].better} is better)", fontsize=8)
        ax.legend(fontsize=7, loc="best")
    axes[0][0].set_title("The papers' claims on real data: our difference beside the paper's",
                         fontsize=9)  # fmt: skip
    fig.tight_layout()
    return _save(fig, path)


# the markers of other annotators' points on a quality curve, in their order
ANNOTATOR_MARKERS = ("s", "^", "D", "v", "P", "X")


def quality_curve(title: str, metric: str, series: Mapping[str, Sequence], path: Path,
                  marks: Mapping[str, tuple] | None = None) -> Path | None:  # fmt: skip
    """A reader's error against its coreference's CoNLL F1: a line per task, mean ± sd over
    seeds at each corruption level (series: task -> [(F1, seed -> error, record id)]); other
    annotators' links as single points on the same axis (marks: "<task>, <annotator>" -> (F1,
    seed -> error, record id)), a marker per annotator in its task's colour."""
    drawn = {t: pts for t, pts in series.items() if len(pts) > 1}
    marks = {label: point for label, point in (marks or {}).items() if point[1]}
    if not drawn and not marks:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    colors: dict[str, str] = {}  # task -> the colour of its first line, its marks' colour
    for task, pts in drawn.items():
        pts = sorted(pts, key=lambda p: p[0])
        means = [statistics.fmean(v.values()) if v else float("nan") for _, v, _ in pts]
        sds = [statistics.stdev(v.values()) if len(v) > 1 else 0.0 for _, v, _ in pts]
        line = ax.errorbar([p[0] for p in pts], means, yerr=sds, marker="o", capsize=3,
                           label=task)  # fmt: skip
        colors.setdefault(task.split(", ")[0], line.lines[0].get_color())
    annotators = list(dict.fromkeys(label.rsplit(", ", 1)[-1] for label in marks))
    for label, (f1, errors, _) in marks.items():
        task, annotator = label.rsplit(", ", 1)
        marker = ANNOTATOR_MARKERS[annotators.index(annotator) % len(ANNOTATOR_MARKERS)]
        sd = statistics.stdev(errors.values()) if len(errors) > 1 else 0.0
        ax.errorbar([f1], [statistics.fmean(errors.values())], yerr=[sd], marker=marker,
                    markersize=8, linestyle="none", capsize=3, label=label,
                    color=colors.get(task), markeredgecolor="black")  # fmt: skip
    ax.set(xlabel="CoNLL F1 % of the coreference links against the annotation",
           ylabel=f"{metric} % (lower is better)", title=title)  # fmt: skip
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8 if not marks else 7, ncol=2 if marks else 1)
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


def doc_lengths(plots_dir: Path, path: Path) -> Path | None:
    """Every corpus's document-length histogram (`stats@<corpus>`'s
    <corpus>_doc_lengths.csv: doc_tokens bin start, documents), a panel per corpus: the
    stats stage's CSV plots drawn here as PNG, so `dvc plots show` needs no Vega from a CDN."""
    tables: dict[str, list[tuple[float, float]]] = {}
    for file in sorted(plots_dir.glob("*_doc_lengths.csv")) if plots_dir.is_dir() else []:
        lines = file.read_text(encoding="utf-8").splitlines()
        rows = [line.split(",") for line in lines[1:] if line.strip()]
        tables[file.name.removesuffix("_doc_lengths.csv")] = [(float(x), float(y))
                                                               for x, y in rows]  # fmt: skip
    if not tables:
        return None
    fig, axes = plt.subplots(len(tables), 1, figsize=(6, 2.2 * len(tables)), squeeze=False)
    for ax, (corpus, rows) in zip(axes[:, 0], tables.items(), strict=True):
        xs = [x for x, _ in rows]
        width = min((b - a for a, b in zip(xs, xs[1:], strict=False)), default=50.0)  # one bin
        ax.bar(xs, [y for _, y in rows], width=0.9 * width, align="edge")
        ax.set(title=f"{corpus}: document lengths", xlabel="tokens per document (bin start)",
               ylabel="documents")  # fmt: skip
        ax.title.set_fontsize(9)
    fig.tight_layout()
    return _save(fig, path)
