"""Write a results record from a finished training item: `python -m tasks.results.record`.

    python -m tasks.results.record train_mage ga-mage16-qa2 --preset mage-babi --scale cpu \
        --table "Table 1" --row "GA + MAGE(16), qa2" --data data/graphs/babi-entity-id/graphs.parquet

It reads every artifacts/<stage>/<item>/seed<k>/metrics.json of this workspace (the seeds'
wall times from logs/timings/), the seeds' MLflow runs (their ids, commit and numerics tags),
the settings that differ from HEAD's params.yaml (the overrides), the sha256 of each --data
file, and writes results/<preset>/<stage>/<item>.json (--out: another results folder, e.g.
main's from a lane workspace), merged seed by seed with what is there.

The 5-gram of Table 1 (`train_entitynlm 5gram`), a deterministic estimator, has no seed
folders: its record reads metrics/train_entitynlm/5gram.json (`selected.<split>.ppl` and
`.tokens`) and its seedless MLflow run `train_entitynlm@5gram`; its figures are stated (no
per-seed entry; its run's ids and wall time under "seed" 1), so a claim sets them against
every seed of the other side.

A transcribed record (source "transcribed, no run", tasks/results/transcribe.py) of the same
id never merges with a run's: `--replace-transcribed` replaces it whole with the run's record
(a run record is never replaced: the seeds merge as above, or the settings differ).

CoreLM (Tables 1-2, `train_corelm zeroshot|ft|corelm`) trains one seed per model, no seed
folder: its record reads metrics/train_corelm/<model>.json alone, under the training seed
the stage wrote there (`seed`, train_corelm.train.seed: a run per seed, each recorded,
merge); its held-out, WikiText, LAMBADA and CBT figures (_corelm_specs) on the split and
size the stage wrote beside them (`eval_splits`), and the learning curve it wrote there
(train_corelm.eval.curve_docs) into the record's optional `curve`, seed by seed.

    python -m tasks.results.record train_corelm corelm --preset corelm --scale cpu \
        --table "Table 1" --row CoreLM

Entity prediction (Table 3): one row per record, from metrics/entity_prediction/<corpus>.json

    python -m tasks.results.record entity_prediction inscript-entitynlm \
        --preset entitynlm-prediction --table "Table 3" --row EntityNLM

(items inscript-always-new, -shallow, -shallow-rich, -human, -entitynlm; the seed of each
row: STAGE_METRICS' note). Run it once per EntityNLM checkpoint (params.yaml
entity_prediction.entitynlm.checkpoint .../seed<k>/best.pt): the seeds merge into one record.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tasks.core import storage
from tasks.core.config import REPO_ROOT, resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.schema import curve_problems, record_problems
from tasks.core.tracking import git_sha
from tasks.results.records import (
    CBT,
    merge,
    metric_entry,
    new_record,
    ppl_metric,
    record_id,
    stated_metric_entry,
)

RESULTS_ROOT = "results"


@dataclass(frozen=True)
class MetricSpec:
    """One recorded figure: where it sits in a seed's metrics.json, its scale and unit."""

    name: str
    key: str  # dotted path in metrics.json
    scale: float
    unit: str
    better: str
    split: str
    size_key: str | None
    requires: str | None = None  # a dotted path the seed must hold for the figure to exist


def _pct(name, key, better, split, size_key):
    return MetricSpec(name, key, 100.0, "%", better, split, size_key)


def _ppl(name, key, split, size_key):
    return MetricSpec(name, key, 1.0, "ppl", "lower", split, size_key)


STAGE_METRICS = {
    "train_mage": [_pct("dev_error", "dev_error", "lower", "dev", "dev_n"),
                   _pct("test_error", "test_error", "lower", "test", "test_n")],
    "train_coref": [_pct("dev_conll_f1", "dev.conll_f1", "higher", "dev", "dev.documents"),
                    _pct("test_conll_f1", "test.conll_f1", "higher", "test", "test.documents")],
}  # fmt: skip
# a graph variant's coreference scored against its annotation (metrics/graphs/<name>.json),
# one "seed": the corruption's (graphs.ablations.<name>.corrupt_seed)
STAGE_METRICS["graphs_ablation"] = [
    MetricSpec(f"{m}_f1" if m != "conll" else "conll_f1",
               f"coreference_against_annotation.{m}_f1", 1.0, "%", "higher", "all", None)
    for m in ("conll", "muc", "bcub", "ceafe")
]  # fmt: skip
# an annotation run's coreference scored against a reference run's on the same graphs
# (metrics/graphs_reference/<run>.json, issue #58.5): the same figures on the same axis as a
# corrupted variant's, one "seed" (REFERENCE_SEED: the scoring draws nothing), and its mention
# identification F1 beside them
STAGE_METRICS["graphs_reference"] = [
    MetricSpec(f"{m}_f1", f"coreference_against_reference.{m}_f1", 1.0, "%", "higher", "all",
               None)
    for m in ("conll", "muc", "bcub", "ceafe", "mentions")
]  # fmt: skip
REFERENCE_SEED = "1"


def task_specs(stage: str, seeds: dict[str, dict[str, Any]]) -> list[MetricSpec]:
    """graphs_reference's scores per task label (the metrics' `by_task`), as
    `<metric>_f1_<task>` (conll_f1_qa16): a reader's error per task sits at its task's score."""
    if stage != "graphs_reference":
        return []
    tasks = sorted({t for m in seeds.values() for t in (m.get("by_task") or {})},
                   key=lambda t: (len(t), t))  # fmt: skip
    return [MetricSpec(f"{m}_f1_{task}", f"by_task.{task}.{m}_f1", 1.0, "%", "higher", "all",
                       None)
            for task in tasks for m in ("conll", "mentions")]  # fmt: skip


# Table 3's rows (metrics/entity_prediction/<corpus>.json, one file per corpus): the item is
# <corpus>-<predictor> with the predictor's _ written - (inscript-always-new, inscript-shallow,
# inscript-shallow-rich, inscript-human, inscript-entitynlm); its "seed" is the EntityNLM
# checkpoint's training seed (its seed<k> folder), the shallow ranker's seed for the rankers,
# 1 for the predictors without randomness (always-new, human)
STAGE_METRICS["entity_prediction"] = [
    _pct("dev_accuracy", "dev", "higher", "dev", None),
    _pct("test_accuracy", "test", "higher", "test", None),
]  # fmt: skip
PREDICTION_CHECKPOINT = "entity_prediction.entitynlm.checkpoint"
# Table 1 (Ji et al.): the RNNLM's exact perplexity, EntityNLM's headline (the marginal, Eq.
# 11, mean over sampling seeds) under the same names; and EntityNLM's other readings of §5.1
# (models/entitynlm/sampling.py READINGS, issue #56.1). A key "a|b": the first one present.
# A figure no seed has (the RNNLM's readings) is left out of the record.
_PPL = {
    "words_is": "readings.words_is.ppl.mean",
    "words_q_mix": "readings.words_q_mix.ppl.mean",
    "words_q_mean": "readings.words_q_mean.ppl.mean",
    "words_gold": "words_given_rel_ppl",
}
STAGE_METRICS["train_entitynlm"] = [
    MetricSpec(ppl_metric(split, name),
               f"{split}.is_ppl.mean|{split}.ppl" if name is None else f"{split}.{_PPL[name]}",
               1.0, "ppl", "lower", split, f"{split}.tokens")
    for name in (None, *_PPL) for split in ("dev", "test")
]  # fmt: skip


def _corelm_specs() -> list[MetricSpec]:
    """train_corelm's figures as templates: {item} is the model (its scorer; `{item}+coref`:
    CoreLM with entities), {heldout}, {wikitext2}, {wikitext103}, {lambada}, {cbt} the split
    each was scored on and `eval_splits.<benchmark>.size` its size, as the stage wrote them
    (models/corelm/evaluate.py eval_splits; stage_specs fills them). Held-out: the report's
    cell (CoreLM with the fine-tuning data's entities, tasks/report/corelm.py), CoreLM's
    figure without them beside it; `_coref`: CoreLM given an annotate run's entities
    (eval.lambada_coref_run, cbt_coref_run). A size counts the texts scored (documents,
    articles, passages) or, for CBT, the questions of the type."""
    own = "heldout.{item}"
    size = "eval_splits.{}.size"
    specs = [
        _ppl(ppl_metric("{heldout}"), f"{own}+coref.word_perplexity|{own}.word_perplexity",
             "{heldout}", size.format("heldout")),
        dataclasses.replace(_ppl(ppl_metric("{heldout}", "no_entities"), f"{own}.word_perplexity",
                                 "{heldout}", size.format("heldout")), requires=f"{own}+coref"),
        *(_ppl(f"{wt}_ppl", f"{wt}.{{item}}.word_perplexity", f"{{{wt}}}", size.format(wt))
          for wt in ("wikitext2", "wikitext103")),
    ]  # fmt: skip
    for scorer, suffix in (("{item}", ""), ("{item}+coref", "_coref")):
        full, last = f"lambada.{scorer}/full_word", f"lambada.{scorer}/last_token"
        specs += [_ppl(f"lambada_ppl{suffix}", f"{full}.perplexity", "{lambada}",
                       size.format("lambada")),
                  _pct(f"lambada_accuracy{suffix}", f"{full}.accuracy", "higher", "{lambada}",
                       size.format("lambada")),
                  _pct(f"lambada_last_token_accuracy{suffix}", f"{last}.accuracy", "higher",
                       "{lambada}", size.format("lambada"))]  # fmt: skip
        specs += [_pct(f"{column}_accuracy{suffix}", f"cbt.{scorer}/{task}.accuracy", "higher",
                       "{cbt}", f"{size.format('cbt')}.{task}") for column, task in CBT.items()]  # fmt: skip
    return specs


STAGE_METRICS["train_corelm"] = _corelm_specs()
# the benchmarks a train_corelm spec names a split of (stage_specs)
CORELM_BENCHMARKS = ("heldout", "wikitext2", "wikitext103", "lambada", "cbt")
# stages whose figures are what was evaluated: a figure no seed has is left out of the record
SPARSE = {"train_entitynlm", "train_corelm"}
PAPERS = {"train_mage": "Dhingra et al. 2018 (MAGE-GRU)",
          "train_coref": "Luo & Glass 2018 (cross-sentence coreference)",
          "graphs_ablation": "beyond the papers (corrupted coreference)",
          "graphs_reference": "beyond the papers (coreference quality)",
          "entity_prediction": "Ji et al. 2017 (EntityNLM)",
          "train_entitynlm": "Ji et al. 2017 (EntityNLM)",
          "train_corelm": "Stylianou & Vlahavas 2021 (CoreLM)"}  # fmt: skip


def _at(obj: Any, dotted: str) -> Any:
    if "|" in dotted:  # alternatives: the first present
        return next((v for k in dotted.split("|") if (v := _at(obj, k)) is not None), None)
    for part in dotted.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


# The seedless items (deterministic estimators, one run): their record states its figures
# (no per-seed entry), so a claim sets them against every seed of the other side
SEEDLESS = {("train_entitynlm", "5gram")}


def seed_metrics(root: Path, stage: str, item: str) -> dict[str, dict[str, Any]]:
    """seed -> its metrics.json (+ its timings), of every seed folder of the item; a graph
    variant: its one metrics file under its corruption seed; an annotation run scored against a
    reference: its metrics file as seed 1; a seedless item (SEEDLESS): its stage metrics file
    as seed 1."""
    if stage == "graphs_ablation":
        return _graph_metrics(root, item)
    if stage == "graphs_reference":
        return _reference_metrics(root, item)
    if stage == "entity_prediction":
        return _prediction_metrics(root, item)
    if (stage, item) in SEEDLESS:
        return _seedless_metrics(root, stage, item)
    if stage == "train_corelm":
        return _corelm_metrics(root, item)
    folder = root / "artifacts" / stage / item
    seeds = sorted(folder.glob("seed*/metrics.json")) if folder.is_dir() else []
    if not seeds:
        raise CorefreproError(f"{folder}: no seed<k>/metrics.json: train the item first")
    out = {}
    for path in seeds:
        metrics = {**json.loads(path.read_text()), "wall_time_s": wall_time(path)}
        out[path.parent.name.removeprefix("seed")] = metrics
    return out


def wall_time(path: Path) -> float | None:
    """`path`'s wall time from its logs/timings/ file (None: none written). That figure alone:
    the timings nest as the metrics do (EntityNLM's dev.is_time_s), so merging the file into
    the metrics would replace their dev and test sections."""
    timings = storage.timings_path(path)
    return json.loads(timings.read_text()).get("wall_time_s") if timings.is_file() else None


def _seedless_metrics(root: Path, stage: str, item: str) -> dict[str, dict[str, Any]]:
    """{"1": the item's figures}: metrics/<stage>/<item>.json as the 5-gram writes it
    (models/entitynlm/ngram.py train_ngram: `selected.<split>` = {ppl, tokens, ...}), its
    wall time from its timings file where one was written."""
    path = root / "metrics" / stage / f"{item}.json"
    metrics = read_metrics(path, f"run `dvc repro {stage}@{item}` first")
    selected = metrics.get("selected")
    if not isinstance(selected, dict) or not selected:
        raise CorefreproError(f"{path}: no `selected` figures (the 5-gram's dev/test scores)")
    return {"1": {**selected, "device": "cpu", "wall_time_s": wall_time(path)}}


def read_metrics(path: Path, missing: str) -> dict[str, Any]:
    """A stage's metrics file: an error naming it where it is absent (`missing`: how to make
    it), no JSON, or no object, never a traceback from deep in the record's build."""
    if not path.is_file():
        raise CorefreproError(f"{path}: missing: {missing}")
    try:
        metrics = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise CorefreproError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(metrics, dict):
        raise CorefreproError(f"{path}: not a JSON object (a stage's metrics file)")
    return metrics


def _corelm_metrics(root: Path, item: str) -> dict[str, dict[str, Any]]:
    """{seed: the model's metrics}: train_corelm trains one seed per model with no seed
    folder; metrics/train_corelm/<model>.json (models/corelm/train.py train_and_evaluate)
    states it all -- the training seed (`seed`), what each benchmark was scored on
    (`eval_splits`) and the learning curve (`curve`, checked here so that a bad one names the
    file) -- and nothing is read from params.yaml or the model's code."""
    path = root / "metrics" / "train_corelm" / f"{item}.json"
    rerun = f"run `dvc repro train_corelm@{item}`"
    metrics = read_metrics(path, f"{rerun} first")
    if metrics.get("model") != item:
        raise CorefreproError(f"{path}: model {metrics.get('model')!r}, expected {item!r}")
    seed, splits = metrics.get("seed"), metrics.get("eval_splits")
    if type(seed) is not int or not isinstance(splits, dict):
        raise CorefreproError(f"{path}: no integer `seed` and `eval_splits` object (the training "
                              f"seed, what each figure was scored on): {rerun} again")  # fmt: skip
    problems = curve_problems(metrics["curve"]) if "curve" in metrics else []
    if problems:
        raise CorefreproError(f"{path}: {'; '.join(problems)}")
    training = metrics.get("training") or {}
    return {str(seed): {**metrics, "best_epoch": training.get("best_epoch"),
                        "epochs_run": training.get("epochs"), "wall_time_s": wall_time(path)}}  # fmt: skip


def stage_specs(stage: str, item: str, seeds: dict[str, dict[str, Any]]) -> list[MetricSpec]:
    """The stage's metric specs; train_corelm's templates filled in for the item and the
    splits its metrics state (a benchmark not scored: its figures are absent, left out);
    graphs_reference's per task (task_specs)."""
    if stage != "train_corelm":
        return [*STAGE_METRICS[stage], *task_specs(stage, seeds)]
    splits = next(iter(seeds.values()))["eval_splits"]
    fill = {"item": item, **{b: str((splits.get(b) or {}).get("split", "unscored"))
                             for b in CORELM_BENCHMARKS}}  # fmt: skip
    fields = ("name", "key", "split", "requires")
    return [dataclasses.replace(spec, **{f: getattr(spec, f).format(**fill) for f in fields
                                         if getattr(spec, f) is not None})
            for spec in STAGE_METRICS[stage]]  # fmt: skip


def _value(metrics: dict[str, Any], spec: MetricSpec) -> float | None:
    """The spec's figure in one seed's metrics, scaled (None: absent, or spec.requires is)."""
    if spec.requires and _at(metrics, spec.requires) is None:
        return None
    value = _at(metrics, spec.key)
    return None if value is None else round(value * spec.scale, 4)


def prediction_row(root: Path, item: str) -> tuple[str, str, dict[str, Any]]:
    """(corpus, predictor, the corpus's metrics) of an entity_prediction item
    <corpus>-<predictor> (the predictor's _ as -), from metrics/entity_prediction/."""
    folder = root / "metrics" / "entity_prediction"
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if not item.startswith(f"{path.stem}-"):
            continue
        metrics = json.loads(path.read_text())
        wanted = item.removeprefix(f"{path.stem}-")
        for predictor in metrics.get("accuracy") or {}:
            if predictor.replace("_", "-") == wanted:
                return path.stem, predictor, metrics
        raise CorefreproError(f"{path}: no predictor {wanted!r} (item {item}); known: "
                              f"{sorted(metrics.get('accuracy') or {})}")  # fmt: skip
    raise CorefreproError(f"{folder}: no <corpus>.json for item {item!r} (<corpus>-<predictor>): "
                          "run `dvc repro entity_prediction@<corpus>` first")  # fmt: skip


def _prediction_settings(root: Path) -> dict[str, Any]:
    params = yaml.safe_load((root / "params.yaml").read_text()) or {}
    return params.get("entity_prediction") or {}


def prediction_seed(root: Path, predictor: str) -> tuple[str, Path | None]:
    """An entity_prediction row's "seed" (module note at STAGE_METRICS) and, for EntityNLM, its
    checkpoint's folder (the training seed's metrics.json)."""
    cfg = _prediction_settings(root)
    if predictor == "entitynlm":
        checkpoint = str((cfg.get("entitynlm") or {}).get("checkpoint") or "")
        found = re.search(r"(?:^|/)seed(\d+)/", checkpoint)
        if not found:
            raise CorefreproError(f"params.yaml {PREDICTION_CHECKPOINT}: {checkpoint!r} names no "
                                  "seed<k>/ folder: the EntityNLM row's seed is the checkpoint's "
                                  "training seed")  # fmt: skip
        return found.group(1), (root / checkpoint).parent
    if predictor in ("always_new", "human"):
        return "1", None
    return str((cfg.get("shallow") or {}).get("seed", 13)), None


def _prediction_metrics(root: Path, item: str) -> dict[str, dict[str, Any]]:
    """seed -> {dev, test: the row's accuracy figures (test: the InScript sample's test_sample
    where that is what was scored), test_split, wall_time_s, and, for EntityNLM, its training
    seed's best_epoch and epochs_run}."""
    corpus, predictor, metrics = prediction_row(root, item)
    seed, folder = prediction_seed(root, predictor)
    per = metrics["accuracy"][predictor]
    test_split = next((sp for sp in ("test", "test_sample") if sp in per), "test")
    out: dict[str, Any] = {"dev": per.get("dev"), "test": per.get(test_split),
                           "test_split": test_split, "wall_time_s": metrics.get("seconds"),
                           "corpus": corpus, "predictor": predictor, "device": "cpu"}  # fmt: skip
    trained = folder / "metrics.json" if folder else None
    if trained is not None and trained.is_file():
        seed_metrics_ = json.loads(trained.read_text())
        out.update({k: seed_metrics_.get(k) for k in ("best_epoch", "epochs_run")})
        out["device"] = str(seed_metrics_.get("device", "cpu"))
    return {seed: out}


def _graph_metrics(root: Path, item: str) -> dict[str, dict[str, Any]]:
    from tasks.graphs.runs import ablation_entry, graph_settings

    path = root / "metrics" / "graphs" / f"{item}.json"
    metrics = read_metrics(path, f"run `dvc repro graphs_ablation@{item}` first")
    entry = ablation_entry(graph_settings(), item)
    return {str(entry.corrupt_seed): metrics}


def _reference_metrics(root: Path, item: str) -> dict[str, dict[str, Any]]:
    """{REFERENCE_SEED: metrics/graphs_reference/<run>.json} (flows/graphs.py score_reference)."""
    path = root / "metrics" / "graphs_reference" / f"{item}.json"
    if not path.is_file():
        raise CorefreproError(f"{path}: missing: run `dvc repro graphs_reference@{item}` first")
    return {REFERENCE_SEED: {**json.loads(path.read_text()), "wall_time_s": wall_time(path)}}


def overrides(root: Path, stage: str | None = None) -> list[str]:
    """params.yaml's settings that differ from HEAD's, as `key=value` (dvc exp run -S form).
    entity_prediction: the EntityNLM checkpoint's seed<k> is the record's seed, not a setting,
    so it reads seed{seed} there (the seeds of one setting merge into one record); no
    checkpoint reads null, whether set as null or as the stage's NO_CHECKPOINT file."""
    head = subprocess.run(["git", "show", "HEAD:params.yaml"], cwd=root, capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    out = _diff(yaml.safe_load(head), yaml.safe_load((root / "params.yaml").read_text()))
    if stage == "entity_prediction":
        from tasks.evaluation.entity_prediction import NO_CHECKPOINT

        none = f"{PREDICTION_CHECKPOINT}={json.dumps(NO_CHECKPOINT)}"
        out = [f"{PREDICTION_CHECKPOINT}=null" if o == none else o for o in out]
        out = [re.sub(r"(?<=[\"/])seed\d+/", "seed{seed}/", o)
               if o.startswith("entity_prediction") else o for o in out]  # fmt: skip
    return sorted(out)


def _diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted({*a, *b}, key=str)
                for d in _diff(a.get(k), b.get(k), f"{prefix}{k}.")]  # fmt: skip
    if a == b:
        return []
    return [f"{prefix.rstrip('.')}={json.dumps(b, sort_keys=True)}"]


def mlflow_runs(stage: str, item: str, seeds: list[str | None]) -> dict[Any, dict[str, str]]:
    """seed -> {run_id, git_sha, numerics, host} of its newest FINISHED run in this workspace's
    MLflow store ({} for a seed without one); seed None: the item's seedless run
    `<stage>@<item>` (tasks/core/tracking.py tracked_run without a seed)."""
    from mlflow.tracking import MlflowClient

    from tasks.core.tracking import tracking_uri

    client = MlflowClient(tracking_uri())
    experiment = client.get_experiment_by_name(stage)
    if experiment is None:
        return {}
    out = {}
    for seed in seeds:
        suffix = "" if seed is None else f"/seed{seed}"
        runs = client.search_runs(
            [experiment.experiment_id],
            filter_string=f"tags.mlflow.runName = '{stage}@{item}{suffix}' "
            "and attributes.status = 'FINISHED'",
            order_by=["attributes.start_time DESC"], max_results=1,
        )  # fmt: skip
        if runs:
            tags = runs[0].data.tags
            numerics = tags.get("numerics", "unknown")
            if "threads" in tags:  # issue #57.4: the count its bytes depend on, the processes
                numerics += f" [torch threads {tags['threads']}, workers {tags.get('workers')}]"
            out[seed] = {"run_id": runs[0].info.run_id, "git_sha": tags.get("git_sha", "unknown"),
                         "numerics": numerics,
                         "host": tags.get("corefrepro.host", "unknown")}  # fmt: skip
    return out


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def build(stage: str, item: str, *, preset: str | None, scale: str | None, table: str, row: str,
          data: list[str], root: Path = REPO_ROOT) -> dict[str, Any]:  # fmt: skip
    if stage not in STAGE_METRICS:
        raise CorefreproError(f"record: no metric spec for stage {stage!r}; known: "
                              f"{sorted(STAGE_METRICS)} (tasks/results/record.py)")  # fmt: skip
    seeds = seed_metrics(root, stage, item)
    metrics = {}
    for spec in stage_specs(stage, item, seeds):
        if stage == "entity_prediction":
            metrics.update(_prediction_entry(spec, seeds))
            continue
        values = {s: _value(m, spec) for s, m in seeds.items()}
        if stage in SPARSE and all(v is None for v in values.values()):
            continue
        sizes = {_at(m, spec.size_key) for m in seeds.values()} if spec.size_key else {None}
        shape = {"split": spec.split, "split_size": sizes.pop() if len(sizes) == 1 else None,
                 "unit": spec.unit, "better": spec.better}  # fmt: skip
        if (stage, item) in SEEDLESS:  # one figure for every seed: stated, not per seed, so
            # a claim sets it against each seed of the other side (the report's seedless path)
            metrics[spec.name] = stated_metric_entry(next(iter(values.values())), None, 1, **shape)
            continue
        metrics[spec.name] = metric_entry(values, **shape)
    if stage == "entity_prediction":  # one stage run per corpus, under the shallow seed
        corpus = next(iter(seeds.values()))["corpus"]
        shallow = str((_prediction_settings(root).get("shallow") or {}).get("seed", 13))
        found = mlflow_runs(stage, corpus, [shallow]).get(shallow)
        runs = {s: found for s in seeds} if found else {}
    elif (stage, item) in SEEDLESS:  # its one run has no seed in its name
        found = mlflow_runs(stage, item, [None]).get(None)
        runs = {s: found for s in seeds} if found else {}
    else:
        runs = mlflow_runs(stage, item, list(seeds))
    commits = sorted({r["git_sha"] for r in runs.values()}) or [git_sha(root)]
    numerics = sorted({r["numerics"] for r in runs.values()}) or ["unknown"]
    curves = {s: m["curve"] for s, m in seeds.items() if m.get("curve")}  # train_corelm's
    return new_record(
        id=record_id(preset, stage, item), paper=PAPERS.get(stage, stage), table=table, row=row,
        source="run", stage=stage, item=item, preset=preset, scale=scale,
        overrides=overrides(root, stage), metrics=metrics,
        data={p: storage.sha256_of(root / p) for p in data},
        commit=", ".join(commits), numerics="; ".join(numerics),
        device=", ".join(sorted({str(m.get("device", "unknown")) for m in seeds.values()})),
        cpu=cpu_model(),
        epochs={s: {"best": m.get("best_epoch"), "run": m.get("epochs_run")}
                for s, m in seeds.items()},
        wall_time_s={s: m.get("wall_time_s") for s, m in seeds.items()},
        mlflow_run_ids={s: r["run_id"] for s, r in runs.items()},
        recorded_at=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **({"curve": curves} if curves else {}),
    )  # fmt: skip


def _prediction_entry(spec: MetricSpec, seeds: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """An entity_prediction row's accuracy on spec.split (its figures as the stage wrote them:
    {accuracy, n, ...}), as a percentage; absent where the row was not scored on that split."""
    figures = {s: m.get(spec.key) for s, m in seeds.items()}
    if all(not f for f in figures.values()):
        return {}
    values = {s: None if not f else round(f["accuracy"] * spec.scale, 4)
              for s, f in figures.items()}  # fmt: skip
    sizes = {f["n"] for f in figures.values() if f}
    split = spec.split
    if spec.split == "test":
        split = next(iter({m["test_split"] for m in seeds.values()}))
    return {spec.name: metric_entry(values, split=split,
                                    split_size=sizes.pop() if len(sizes) == 1 else None,
                                    unit=spec.unit, better=spec.better)}  # fmt: skip


def is_transcribed(record: dict[str, Any]) -> bool:
    """A record copied from prose (tasks/results/transcribe.py), not written from a run."""
    return str(record.get("source", "")).startswith("transcribed")


def existing(path: Path) -> dict[str, Any] | None:
    """The record at `path`, checked (None: no file there)."""
    if not path.is_file():
        return None
    try:
        old = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise CorefreproError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    problems = record_problems(old)
    if problems:
        raise CorefreproError(f"{path}: not a valid record ({'; '.join(problems)})")
    return old


def write(record: dict[str, Any], out: Path, *, replace_transcribed: bool = False) -> Path:
    """The record at out/<id>.json, merged with the one there (seed by seed). A run's record
    over a transcribed one (no per-seed figures, no data digests: the two never merge):
    replaces it whole with `replace_transcribed`, else an error saying so."""
    path = out / f"{record['id']}.json"
    old = existing(path)
    if old is not None and is_transcribed(old) and not is_transcribed(record):
        if not replace_transcribed:
            raise CorefreproError(
                f"{path}: a transcribed record (source {old['source']!r}) holds this id and "
                "never merges with a run's; pass --replace-transcribed to replace it whole"
            )
        merged = dict(record)
    else:
        merged = merge(old, record)
    path.parent.mkdir(parents=True, exist_ok=True)
    storage.write_text(path, json.dumps(merged, indent=2, sort_keys=True) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=sorted(STAGE_METRICS))
    parser.add_argument("item", help="the stage item, e.g. ga-mage16-qa2")
    parser.add_argument("--preset", default=None)
    parser.add_argument("--scale", default=None)
    parser.add_argument("--table", required=True, help="the paper's table, e.g. 'Table 1'")
    parser.add_argument("--row", required=True, help="the paper's row, e.g. 'GA, qa2'")
    parser.add_argument("--data", action="append", default=[],
                        help="a data file the item read (its sha256 is recorded); repeatable")  # fmt: skip
    parser.add_argument("--out", default=None, help="results folder (default: results/)")
    parser.add_argument("--replace-transcribed", action="store_true",
                        help="replace a transcribed record of the same id whole (never a run's)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        record = build(args.stage, args.item, preset=args.preset, scale=args.scale,
                       table=args.table, row=args.row, data=args.data)  # fmt: skip
        path = write(record, Path(args.out) if args.out else resolve_path(RESULTS_ROOT),
                     replace_transcribed=args.replace_transcribed)  # fmt: skip
    except CorefreproError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    shown = ", ".join(
        f"{k} {v['mean']} ± {v['sd']} (n {v['n']})" for k, v in record["metrics"].items()
    )
    curves = record.get("curve") or {}
    shown += "".join(f"; seed {s}'s curve: {len(c['points'])} points" for s, c in curves.items())
    print(f"{path}: {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
