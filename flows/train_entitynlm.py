"""Stage `train_entitynlm`: one language model of Ji et al. 2017 Table 1, all seeds.

    python -m flows.train_entitynlm --model entitynlm [--seed 3]
    python -m flows.train_entitynlm --model 5gram   # the KenLM-style 5-gram (no seeds)

Layout (issue #54.4): this module is the stage's one home, read top to bottom:

1. its settings section, params.yaml `train_entitynlm` (TrainEntityNLMSettings): the
   annotation runs whose EntityNLM views are the data (data/graphs/<run>/entitynlm.parquet),
   the model, training and importance-sampling settings and the 5-gram's, typed and parsed
   once per stage run (`settings()`);
2. its paths: the 5-gram's ARPA (artifacts/train_entitynlm/5gram/model.arpa) and, placed by
   tasks/training/stage.py, artifacts/train_entitynlm/<model>/seed<k>/{best.pt,history.json,
   metrics.json} (EntityNLM also importance_documents.json: per document, the Eq. 11 estimate
   at each N and its two lower bounds) and metrics/train_entitynlm/<model>.json;
3. its plan: the data every seed of every model reads, prepared once (`prepare_data`: the
   splits and the training split's vocabulary);
4. its outputs: the params of a seed's MLflow run (experiment "train_entitynlm") and the
   summary over the seeds (Table 1's headline and its other readings, issue #56.1);
5. the family declaration (FAMILY, found through models/registry.py) and the flows.

The library, models/entitynlm/ (train.py: the model, train and evaluation settings, LMRecipe,
train_and_evaluate; ngram.py: the 5-gram; data.py, model.py, sampling.py), takes arguments:
it reads no params.yaml, knows no output path and logs nothing to MLflow.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.runtime import Runner, flow, run_cli, task, torchrun
from models.entitynlm import ngram
from models.entitynlm.sampling import DRAW_READINGS, READINGS, spread
from models.entitynlm.train import (
    MODELS,
    EvalSettings,
    LMRecipe,
    ModelSettings,
    TrainSettings,
    load_data,
    train_and_evaluate,
)
from tasks.core.checkpoints import jsonable
from tasks.core.errors import CorefreproError
from tasks.core.layout import view_file
from tasks.core.settings import (
    ConfigError,
    bounded,
    key_path,
    settings_to_dict,
    stage_settings,
)
from tasks.core.storage import write_metrics
from tasks.core.tracking import PAPERS, log_metrics, tracked_run
from tasks.evaluation.ngram import NgramSettings
from tasks.training.family import Family
from tasks.training.stage import check_workers, metrics_path, train_item, train_tracked_seed

STAGE = "train_entitynlm"

# --------------------------------------------------------------------------- 1. settings


@dataclass
class TrainEntityNLMSettings:
    """params.yaml train_entitynlm, checked whole before any training starts."""

    runs: list[str] = bounded(["synthetic-gold", "handmade-gold"], min_items=1)
    max_documents: dict[str, int | None] = field(default_factory=dict)  # per split; None = all
    drop_singletons: bool = True  # §4: entities with one mention are not mentions
    seeds: list[int] = bounded([1], min_items=1)
    model: ModelSettings = field(default_factory=ModelSettings)
    train: TrainSettings = field(default_factory=TrainSettings)
    evaluation: EvalSettings = field(default_factory=EvalSettings)
    ngram: NgramSettings = field(default_factory=NgramSettings)  # the 5-gram item (Table 1)
    # seeds trained at once, each in a process of its own (issue #57.4): run-only
    workers: int = bounded(1, ge=1)

    def validate(self, path: str) -> None:
        bad = sorted(set(self.max_documents) - {"train", "dev", "test"})
        problems = [f"{key_path(path, 'max_documents')}: unknown splits {bad}"] if bad else []
        problems += check_workers(self.workers, self.train, path)
        if problems:
            raise ConfigError(problems)


def settings() -> TrainEntityNLMSettings:
    """params.yaml train_entitynlm, parsed strictly (the stage's one parse)."""
    return stage_settings(TrainEntityNLMSettings, STAGE)


# --------------------------------------------------------------------------- 2. paths

ARPA = f"artifacts/{STAGE}/{ngram.ITEM}/model.arpa"  # the 5-gram item's model


def view_files(cfg: TrainEntityNLMSettings) -> dict[str, Path]:
    """annotation run -> its EntityNLM view (flows/view_entitynlm.py): what every model of
    the stage reads (flows/inputs.py digests them)."""
    return {run: view_file(run, "entitynlm") for run in cfg.runs}


# --------------------------------------------------------------------------- 3. plan


def prepare_data(cfg: TrainEntityNLMSettings):
    """({split: documents}, vocabulary of the training split) as the settings say: the data
    every seed of every model of the stage reads."""
    views = view_files(cfg)
    missing = [run for run, path in views.items() if not path.is_file()]
    if missing:
        raise CorefreproError(f"{STAGE}.runs: no EntityNLM view of {missing} "
                              f"(run `dvc repro view_entitynlm@{missing[0]}`)")  # fmt: skip
    return load_data(views, cfg.model, drop_singletons=cfg.drop_singletons,
                     max_documents=cfg.max_documents)  # fmt: skip


def token_documents(split: str, cfg: TrainEntityNLMSettings) -> list[list[str]]:
    """The tokens every language model of Table 1 is scored on (the 5-gram reads them): the
    documents of `split` of the settings (runs, max_documents), preprocessed
    (§4, models/entitynlm/data.py), words outside the training vocabulary replaced by `unk`.
    One list per document, in the order the neural models see them (doc_id)."""
    splits, vocab = prepare_data(cfg)
    if split not in splits:
        raise CorefreproError(f"unknown split {split!r}; known: {sorted(splits)}")
    return [vocab.unk(d.tokens) for d in splits[split]]


def dataset(cfg: TrainEntityNLMSettings) -> str:
    return "+".join(cfg.runs)


# --------------------------------------------------------------------------- 4. outputs


def run_params(cfg: TrainEntityNLMSettings, data) -> dict[str, Any]:
    """What a seed's MLflow run records of its settings and data."""
    splits, vocab = data
    return {"model": settings_to_dict(cfg.model), "train": settings_to_dict(cfg.train),
            "evaluation": settings_to_dict(cfg.evaluation), "runs": list(cfg.runs),
            "vocab_size": len(vocab),
            "documents": {s: len(d) for s, d in splits.items()}}  # fmt: skip


def _headline(r: Mapping[str, Any], split: str, n: str | None = None) -> float | None:
    """The Table 1 number: EntityNLM's importance-sampled perplexity (mean over sampling
    seeds; at N = n draws, else the headline N), the RNNLM's exact perplexity."""
    scores = r.get(split) or {}
    if r["model"] == "entitynlm":
        if n is not None:
            scores = (scores.get("is_grid") or {}).get(n) or {}
        return (scores.get("is_ppl") or {}).get("mean")
    return scores.get("ppl")


def _reading(r: Mapping[str, Any], split: str, name: str) -> float | None:
    """One training seed's Table 1 reading `name` (sampling.READINGS) on `split`: the draw
    readings as the mean over sampling seeds at the headline N, "words_gold" the words given
    the gold annotation (joint_perplexity's words_given_rel_ppl), "marginal" the headline."""
    scores = r.get(split) or {}
    if name == "marginal":
        return _headline(r, split)
    if name == "words_gold":
        return scores.get("words_given_rel_ppl")
    return (((scores.get("readings") or {}).get(name) or {}).get("ppl") or {}).get("mean")


def readings_summary(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """EntityNLM's Table 1 under each reading (sampling.READINGS, issue #56.1) over the
    training seeds: {reading: {dev_ppl, test_ppl: mean ± sd over training seeds (or None),
    per_seed: {seed: {dev_ppl, test_ppl}}}}; empty for seeds measured before the readings."""
    out: dict[str, Any] = {}
    for name in READINGS:
        per = {str(r["seed"]): {f"{sp}_ppl": _reading(r, sp, name) for sp in ("dev", "test")}
               for r in results}  # fmt: skip
        if all(v is None for seed in per.values() for v in seed.values()):
            continue
        out[name] = {f"{sp}_ppl": (spread(vs) if (vs := [p[f"{sp}_ppl"] for p in per.values()
                                                          if p[f"{sp}_ppl"] is not None]) else None)
                     for sp in ("dev", "test")}  # fmt: skip
        out[name]["per_seed"] = per
    return out if any(name in out for name in DRAW_READINGS) else {}


def summarize(kind: str, results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """metrics/train_entitynlm/<model>.json: headline dev/test perplexity (mean over training
    seeds), the seed with the best dev selection value, and each seed's numbers."""
    if not results:
        raise CorefreproError(f"{kind}: no seed was trained")
    key = "joint_ppl" if kind == "entitynlm" else "ppl"
    chosen = min(results, key=lambda r: (r["dev"][key], r["seed"]))

    def over_seeds(split, n=None):
        values = [v for v in (_headline(r, split, n) for r in results) if v is not None]
        return spread(values) if values else None

    def sampling(r):  # EntityNLM's IS figures of a seed (test's, else dev's)
        return r.get("test") or r.get("dev") or {}

    grid = sorted({n for r in results for n in sampling(r).get("is_grid") or {}}, key=int)
    by_samples = {"is_samples": sampling(chosen).get("is_samples"),
                  "dev_ppl_by_samples": {n: over_seeds("dev", n) for n in grid},
                  "test_ppl_by_samples": {n: over_seeds("test", n) for n in grid}}  # fmt: skip

    out = {
        "model": kind, "dataset": chosen.get("dataset"), "seeds": len(results),
        "vocab_size": chosen["vocab_size"], "documents": chosen["documents"],
        "tokens": chosen["tokens"],
        "dev_ppl": over_seeds("dev"), "test_ppl": over_seeds("test"),
        **(by_samples if kind == "entitynlm" else {}),
        **({"readings": readings} if kind == "entitynlm" and (readings := readings_summary(results))
           else {}),
        "selected_seed": chosen["seed"],
        "selected": {"dev": chosen["dev"], "test": chosen.get("test")},
        "epochs_run": chosen["epochs_run"], "best_epoch": chosen["best_epoch"],
        "train_tokens_per_s": chosen["train_tokens_per_s"], "device": chosen["device"],
        "wall_time_s": sum(r.get("wall_time_s") or 0.0 for r in results),
        "per_seed": {str(r["seed"]): {"dev_ppl": _headline(r, "dev"),
                                      "test_ppl": _headline(r, "test"),
                                      "best_epoch": r["best_epoch"]} for r in results},
    }  # fmt: skip
    return jsonable(out)


# --------------------------------------------------------------------------- 5. the family


def train_one_seed(item: str, seed: int, data, settings: TrainEntityNLMSettings,
                   out_dir: str | Path, *, log_metrics=None) -> dict[str, Any]:  # fmt: skip
    """One seed of model `item` (tasks/training/family.py SeedTrainer); data = prepare_data's
    (splits, vocabulary)."""
    splits, vocab = data
    return train_and_evaluate(item, splits, vocab, settings.model, settings.train,
                              settings.evaluation, seed, out_dir, log_fn=log_metrics)  # fmt: skip


FAMILY = Family(
    name="entitynlm",
    paper=PAPERS[STAGE],
    settings=TrainEntityNLMSettings,
    recipe=LMRecipe,
    train_seed=train_one_seed,
    summarize=summarize,
    prepare_data=prepare_data,  # (splits, vocabulary): what every seed of every model reads
    run_params=run_params,
    dataset=dataset,
)


# --------------------------------------------------------------------------- 6. the flows


def train_seed(kind: str, seed: int, data, cfg: TrainEntityNLMSettings, *, track: bool = True):
    """One seed of one model under its MLflow run; metrics.json beside its checkpoints."""
    return train_tracked_seed(FAMILY, kind, seed, data, cfg, dataset=dataset(cfg),
                              run_params=run_params(cfg, data), track=track)  # fmt: skip


def train_ngram_item(splits, vocab, cfg: TrainEntityNLMSettings, *,
                     track: bool = True) -> dict[str, Any]:  # fmt: skip
    """The stage item `5gram`: the ARPA estimated and scored (models/entitynlm/ngram.py
    train_ngram) under its MLflow run (experiment train_entitynlm)."""
    if not track:
        return ngram.train_ngram(splits, vocab, cfg.ngram, ARPA, dataset=dataset(cfg))
    params = {"ngram": settings_to_dict(cfg.ngram), "runs": list(cfg.runs)}
    with tracked_run(STAGE, ngram.ITEM, dataset=dataset(cfg), run_params=params):
        summary = ngram.train_ngram(splits, vocab, cfg.ngram, ARPA, dataset=dataset(cfg))
        log_metrics({f"{s}_ppl": summary[f"{s}_ppl"]["mean"] for s in ("dev", "test")
                     if summary.get(f"{s}_ppl")})  # fmt: skip
    return summary


train_seed_task = task(
    train_tracked_seed,
    name="train-entitynlm-seed",
    task_run_name="train_entitynlm@{item}/seed{seed}",
)
train_5gram = task(train_ngram_item, name="train-5gram", task_run_name="train_entitynlm@5gram")


def seed_runner(model: str, seed: int | None = None) -> Runner:
    """Where the seeds train: train_entitynlm.workers processes at once."""
    return Runner("processes", settings().workers)


@flow(name="train-entitynlm", runner=seed_runner)
def train_entitynlm(model: str, seed: int | None = None) -> dict:
    if model != ngram.ITEM:  # the neural models: the generic stage, seed by seed
        return train_item(FAMILY, model, seed, train_one=train_seed_task)
    cfg = settings()  # every setting checked before any work
    splits, vocab = prepare_data(cfg)
    summary = train_5gram(splits, vocab, cfg)  # the count-based baseline: no seeds, one ARPA
    write_metrics(metrics_path(STAGE, model), summary)
    return summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=[*MODELS, ngram.ITEM])
    parser.add_argument("--seed", type=int, default=None, help="one seed instead of params' seeds")
    args = parser.parse_args(argv)
    if not run_cli(torchrun, "flows.train_entitynlm", lambda: settings().train.nproc, argv):
        run_cli(train_entitynlm, args.model, args.seed)


if __name__ == "__main__":
    main()
