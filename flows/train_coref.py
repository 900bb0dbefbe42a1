"""Stage `train_coref`: one encoder of Luo & Glass Table 1 (baseline, LSL, ASL), all seeds.

    python -m flows.train_coref --encoder asl [--seed 3]

Layout (issue #54.4): this module is the stage's one home, read top to bottom:

1. its settings section, params.yaml `train_coref` (TrainCorefSettings): the corpora (GUM +
   LitBank by default; data/docs/<corpus>/), the shared model settings, each encoder's
   overrides (the stage's items: the keys of `encoders`), the training settings and the
   seeds, typed and parsed once per stage run (`settings()`), every encoder checked before
   any work;
2. its paths: what an item reads (the corpora's documents, the lm_features stage's files:
   flows/inputs.py digests them) and writes, placed by tasks/training/stage.py:
   artifacts/train_coref/<encoder>/seed<k>/{best.pt,history.json,metrics.json} (last.pt:
   data/cache/resume/) and metrics/train_coref/<encoder>.json;
3. its plan: an encoder's model settings (`encoder_model_cfg`) and what every seed of it
   reads, prepared once (`prepare_data`: the splits, glove_path resolved with the download
   settings and the mirror, the LM features of lm_features);
4. its outputs: the params of a seed's MLflow run (train_coref@<encoder>/seed<k> in the
   experiment train_coref) and the summary over the seeds;
5. the family declaration (FAMILY, found through models/registry.py) and the flows.

The library, models/coref/ (train.py: the E2E model's settings, CorefRecipe,
train_and_evaluate with dev-CoNLL-F1 model selection; data.py, features.py, stacked.py),
takes arguments: it reads no params.yaml, knows no output path and logs nothing to MLflow.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from flows import lm_features
from flows.runtime import Runner, flow, run_cli, task, torchrun
from models.coref.data import CorefDocument, load_splits, resolve_vectors
from models.coref.features import WordFeatures, training_features
from models.coref.train import (
    CorefModelSettings,
    CorefRecipe,
    CorefTrain,
    resolve_model,
    train_and_evaluate,
    train_and_evaluate_stacked,
)
from tasks.core.checkpoints import jsonable, pick_device
from tasks.core.config import params
from tasks.core.errors import CorefreproError
from tasks.core.fetch import mirror_setting, shared_download_settings
from tasks.core.layout import docs_dir
from tasks.core.settings import (
    ConfigError,
    Name,
    bounded,
    parse_settings,
    settings_to_dict,
    stage_settings,
)
from tasks.core.tracking import PAPERS
from tasks.training.family import Family
from tasks.training.stage import (
    check_workers,
    each_seed,
    seeds_to_train,
    train_tracked_seed,
    train_tracked_seeds_stacked,
    write_summary,
)

log = logging.getLogger("corefrepro.train_coref")
STAGE = "train_coref"

# --------------------------------------------------------------------------- 1. settings
# params.yaml train_coref: corpora, drop_singletons, seeds, model (shared model settings),
# encoders {name: model overrides} (the stage's items), train (CorefTrain fields).


@dataclass
class TrainCorefSettings:
    """params.yaml train_coref, checked whole before any training starts."""

    corpora: list[Name] = bounded(["gum", "litbank"], min_items=1)
    drop_singletons: bool = True
    seeds: list[int] = bounded([1], min_items=1)
    model: dict[str, Any] = field(default_factory=dict)  # CorefModelSettings keys
    encoders: dict[str, dict[str, Any]] = field(
        default_factory=lambda: {"baseline": {}, "lsl": {}, "asl": {}}
    )
    train: CorefTrain = field(default_factory=CorefTrain)
    # seeds trained at once, each in a process of its own (issue #57.4): run-only
    workers: int = bounded(1, ge=1)

    def validate(self, path: str) -> None:
        """The model settings of every encoder parse (train is a typed section)."""
        problems: list[str] = check_workers(self.workers, self.train, path)
        checks = [
            lambda name=name: parse_settings(
                CorefModelSettings, {**self.model, **(self.encoders[name] or {})},
                f"{path}.encoders.{name}" if self.encoders[name] else f"{path}.model",
            )
            for name in self.encoders
        ]  # fmt: skip
        for check in checks:
            try:
                check()
            except ConfigError as exc:
                problems.extend(p for p in exc.problems if p not in problems)
        if problems:
            raise ConfigError(problems)


def settings() -> TrainCorefSettings:
    """params.yaml train_coref, parsed strictly (the stage's one parse: the flow passes it on)."""
    return stage_settings(TrainCorefSettings, STAGE)


# --------------------------------------------------------------------------- 2-3. plan


def encoder_model_cfg(cfg: TrainCorefSettings, encoder: str) -> dict[str, Any]:
    """The model settings of item `encoder`: train_coref.model under encoders.<encoder>."""
    if encoder not in cfg.encoders:
        raise CorefreproError(
            f"params.yaml train_coref.encoders: no '{encoder}'; known: {sorted(cfg.encoders)}"
        )
    return {"encoder": encoder, **cfg.model, **(cfg.encoders[encoder] or {})}


@dataclass(frozen=True)
class CorefData:
    """What every seed of one encoder reads, prepared once (prepare_data): the splits,
    glove_path resolved (models/coref/data.py resolve_vectors, with the download settings and
    the mirror) and the LM features of the documents (None without lm_features)."""

    splits: Mapping[str, Sequence[CorefDocument]]
    vectors: tuple[Path | None, str] = (None, "random (glove_path: null)")
    features: WordFeatures | None = None


def prepare_data(encoder: str, cfg: TrainCorefSettings) -> CorefData:
    """What every seed of `encoder` reads: the splits of train_coref.corpora, glove_path
    resolved (download settings, mirror) and the LM features when lm_features is set."""
    splits = load_splits(map(docs_dir, cfg.corpora), drop_singletons=cfg.drop_singletons)
    log.info("%s on %s: %s documents", encoder, "+".join(cfg.corpora),
             {split: len(docs) for split, docs in splits.items()})  # fmt: skip
    mcfg = resolve_model(encoder_model_cfg(cfg, encoder))
    download = shared_download_settings(params("download"))
    vectors = resolve_vectors(mcfg.glove_path, download, mirror_setting())
    return CorefData(splits, vectors, word_features(cfg, mcfg, splits))


def word_features(cfg: TrainCorefSettings, mcfg, splits) -> WordFeatures | None:
    """The LM features of train_coref.corpora when model setting lm_features names an encoder:
    the lm_features stage's files (lm_cache: true) or the LM run live on the training device."""
    if mcfg.lm_features is None:
        return None
    documents = [d for docs in splits.values() for d in docs]
    return training_features(mcfg.lm_features, cfg.corpora, documents,
                             cache=bool(mcfg.lm_cache), device=pick_device(cfg.train.device),
                             cfg=lm_features.settings())  # fmt: skip


def stacked(cfg: TrainCorefSettings, seeds: Sequence[int]) -> bool:
    """Whether the seeds train stacked (train.seeds_stacked, more than one seed)."""
    return len(seeds) > 1 and cfg.train.seeds_stacked


# --------------------------------------------------------------------------- 4. outputs


def run_params(encoder: str, seed: int, splits, cfg: TrainCorefSettings) -> dict[str, Any]:
    """A seed's model and train settings and its data, as its MLflow run records them."""
    return {
        "model": settings_to_dict(resolve_model(encoder_model_cfg(cfg, encoder))),
        "train": settings_to_dict(dataclasses.replace(cfg.train, seed=int(seed))),
        "corpora": list(cfg.corpora),
        "drop_singletons": cfg.drop_singletons,
        "documents": {split: len(docs) for split, docs in splits.items()},
    }


RECORDED = ("embeddings", "embeddings_source", "device", "lm_features")  # MLflow params of a seed


def summarize(encoder: str, results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """metrics/train_coref/<encoder>.json: mean and spread over seeds of the dev and test scores,
    the seed with the best dev CoNLL F1, and each seed's numbers."""
    if not results:
        raise CorefreproError(f"{encoder}: no seed was trained")
    keys = ("conll_f1", "muc_f1", "bcub_f1", "ceafe_f1", "mentions_f1")

    def spread(split: str, key: str) -> dict[str, float | None]:
        values = [r[split][key] for r in results if r.get(split) and r[split].get(key) is not None]
        if not values:
            return {"mean": None, "std": None}
        return {"mean": float(np.mean(values)), "std": float(np.std(values))}

    chosen = max(results, key=lambda r: (r["dev"]["conll_f1"], -r["seed"]))
    out = {
        "encoder": encoder,
        "dataset": chosen.get("dataset"),
        "seeds": len(results),
        "device": chosen.get("device"),
        "embeddings": chosen.get("embeddings"),
        **({"lm_features": chosen["lm_features"]} if chosen.get("lm_features") else {}),
        "dev": {k: spread("dev", k) for k in keys},
        "test": {k: spread("test", k) for k in keys},
        "selected_seed": chosen["seed"],
        "selected": {"dev": chosen["dev"], "test": chosen["test"]},
        "wall_time_s": sum(r.get("wall_time_s") or 0.0 for r in results),
        "per_seed": {
            str(r["seed"]): {
                "dev_conll_f1": r["dev"]["conll_f1"],
                "test_conll_f1": (r["test"] or {}).get("conll_f1"),
                "best_epoch": r["best_epoch"],
                "epochs_run": r["epochs_run"],
                "wall_time_s": r.get("wall_time_s"),
            }
            for r in results
        },
    }
    return jsonable(out)


# --------------------------------------------------------------------------- 5. the family


def train_one_seed(item: str, seed: int, data: CorefData, settings: TrainCorefSettings,
                   out_dir: str | Path, *, log_metrics=None) -> dict[str, Any]:  # fmt: skip
    """One seed of encoder `item` (tasks/training/family.py SeedTrainer)."""
    splits = data.splits
    return train_and_evaluate(splits["train"], splits["dev"], splits["test"],
                              encoder_model_cfg(settings, item),
                              dataclasses.replace(settings.train, seed=int(seed)), out_dir,
                              log_metrics=log_metrics, features=data.features,
                              vectors=data.vectors)  # fmt: skip


def train_seeds_stacked(encoder: str, seeds: Sequence[int], data: CorefData,
                        cfg: TrainCorefSettings, out_dirs: Sequence[str | Path], *,
                        log_metrics=None) -> list[dict]:  # fmt: skip
    """train_one_seed for every seed at once (train_and_evaluate_stacked): out_dirs[i] and
    log_metrics[i] (one sink per seed, or None) are seed i's."""
    splits = data.splits
    return train_and_evaluate_stacked(
        splits["train"], splits["dev"], splits["test"], encoder_model_cfg(cfg, encoder),
        [dataclasses.replace(cfg.train, seed=int(s)) for s in seeds], list(out_dirs),
        log_metrics=log_metrics, features=data.features, vectors=data.vectors,
    )  # fmt: skip


FAMILY = Family(
    name="coref",
    paper=PAPERS[STAGE],
    settings=TrainCorefSettings,
    recipe=CorefRecipe,
    train_seed=train_one_seed,
    summarize=summarize,
    train_seeds_stacked=train_seeds_stacked,
)


# --------------------------------------------------------------------------- 6. the flows


def train_seed(encoder: str, seed: int, data: CorefData, cfg: TrainCorefSettings, *,
               track: bool = True):  # fmt: skip
    """One seed of one encoder under its MLflow run; metrics.json beside the checkpoints."""
    return train_tracked_seed(FAMILY, encoder, seed, data, cfg, dataset="+".join(cfg.corpora),
                              run_params=run_params(encoder, seed, data.splits, cfg),
                              recorded=RECORDED, track=track)  # fmt: skip


def train_stacked(encoder: str, seeds: list[int], data: CorefData, cfg: TrainCorefSettings, *,
                  track: bool = True) -> list[dict]:  # fmt: skip
    """Every seed at once (models/coref/stacked.py), each recorded as train_seed records it."""
    return train_tracked_seeds_stacked(
        FAMILY, encoder, seeds, data, cfg, dataset="+".join(cfg.corpora),
        run_params=lambda s: run_params(encoder, s, data.splits, cfg), recorded=RECORDED,
        track=track,
    )  # fmt: skip


train_seed_task = task(
    train_seed, name="train-coref-seed", task_run_name="train_coref@{encoder}/seed{seed}"
)
train_stacked_task = task(
    train_stacked, name="train-coref-seeds-stacked", task_run_name="train_coref@{encoder}/stacked"
)


def seed_runner(encoder: str, seed: int | None = None) -> Runner:
    """Where the seeds train: train_coref.workers processes at once."""
    return Runner("processes", settings().workers)


@flow(name="train-coref", runner=seed_runner)
def train_coref(encoder: str, seed: int | None = None) -> dict:
    cfg = settings()  # every setting checked before any work
    encoder_model_cfg(cfg, encoder)  # fail early on an unknown encoder
    data = prepare_data(encoder, cfg)
    seeds = seeds_to_train(STAGE, encoder, cfg.seeds, seed)
    if stacked(cfg, seeds):  # one computation, each seed as if alone (#15.1)
        results = train_stacked_task(encoder, seeds, data, cfg)
    else:
        calls = [{"encoder": encoder, "seed": s, "data": data, "cfg": cfg} for s in seeds]
        results = each_seed(train_seed_task, calls, cfg.workers)
    return write_summary(FAMILY, encoder, results)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # the stage's items are the keys of train_coref.encoders, listed there only (dvc.yaml's
    # foreach reads them; an unknown one is refused naming that setting)
    parser.add_argument("--encoder", required=True, help="a key of train_coref.encoders")
    parser.add_argument("--seed", type=int, default=None, help="one seed instead of params' seeds")
    args = parser.parse_args(argv)

    def nproc() -> int:
        cfg = settings()
        encoder_model_cfg(cfg, args.encoder)  # unknown: one line naming the setting, no process
        return cfg.train.nproc

    if not run_cli(torchrun, "flows.train_coref", nproc, argv):
        run_cli(train_coref, args.encoder, args.seed)


if __name__ == "__main__":
    main()
