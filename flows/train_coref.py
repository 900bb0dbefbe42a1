"""Stage `train_coref`: one encoder of Luo & Glass Table 1 (baseline, LSL, ASL), all seeds.

    python -m flows.train_coref --encoder asl [--seed 3]

params.yaml train_coref names the corpora (GUM + LitBank by default; data/docs/<corpus>/),
the shared model settings, each encoder's overrides, the training settings and the seeds.
The family (models/coref, found through models/registry.py) trains each seed: the E2E model
with dev-CoNLL-F1 model selection. This stage parses the section, prepares the data once (the
splits, glove_path resolved with the download settings, the LM features of lm_features) and
places and records every seed (tasks/training/stage.py):
artifacts/train_coref/<encoder>/seed<k>/{best.pt,history.json,metrics.json} (last.pt: data/cache/resume/), one
MLflow run per seed (experiment "train_coref", run "train_coref@<encoder>/seed<k>");
metrics/train_coref/<encoder>.json summarizes the seeds run.
"""

from __future__ import annotations

import argparse
import logging

from flows import lm_features
from flows.runtime import flow, run_cli, task, torchrun
from models import registry
from models.coref.data import load_splits, resolve_vectors
from models.coref.features import WordFeatures, training_features
from models.coref.train import (
    RECORDED,
    CorefData,
    TrainCorefSettings,
    encoder_model_cfg,
    resolve_model,
    run_params,
    stacked,
)
from tasks.core.checkpoints import pick_device
from tasks.core.config import params
from tasks.core.fetch import mirror_setting, shared_download_settings
from tasks.training.stage import (
    load_settings,
    seeds_to_train,
    train_tracked_seed,
    train_tracked_seeds_stacked,
    write_summary,
)

log = logging.getLogger("corefrepro.train_coref")
FAMILY = registry.get("coref")
STAGE = FAMILY.stage


def settings() -> TrainCorefSettings:
    return load_settings(FAMILY)


def prepare_data(encoder: str, cfg: TrainCorefSettings) -> CorefData:
    """What every seed of `encoder` reads: the splits of train_coref.corpora, glove_path
    resolved (download settings, mirror) and the LM features when lm_features is set."""
    splits = load_splits(cfg.corpora, drop_singletons=cfg.drop_singletons)
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


@flow(name="train-coref")
def train_coref(encoder: str, seed: int | None = None) -> dict:
    cfg = settings()  # every setting checked before any work
    encoder_model_cfg(cfg, encoder)  # fail early on an unknown encoder
    data = prepare_data(encoder, cfg)
    seeds = seeds_to_train(STAGE, encoder, cfg.seeds, seed)
    if stacked(cfg, seeds):  # one computation, each seed as if alone (#15.1)
        results = train_stacked_task(encoder, seeds, data, cfg)
    else:
        results = [train_seed_task(encoder, s, data, cfg) for s in seeds]
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
