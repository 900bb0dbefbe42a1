"""Stage `train_corelm`: one of the three models of CoreLM's Tables 1-2, trained and evaluated.

    python -m flows.train_corelm --model corelm     # zeroshot | ft | corelm

Layout (issue #54.4): this module is the stage's one home, read top to bottom:

1. its settings section, params.yaml `train_corelm` (TrainCoreLMSettings): the backbone
   (tiny | gpt2 | smollm2 | a directory), the training data (annotate runs with a CoreLM
   view, or corpora with gold mentions), the gating and training settings (Stylianou &
   Vlahavas, App. A) and what to evaluate, typed and parsed once per stage run (`settings()`);
2. its paths: artifacts/train_corelm/<model>/ (best.pt, history.json, items.json: per-item
   LAMBADA / CBT correctness for paired t-tests) and metrics/train_corelm/<model>.json;
3. its plan: the backbone and the CoreLM view windows, prepared once (`prepare_data`, sizes
   checked against the backbone);
4. its outputs: the params of a model's MLflow run (train_corelm@<model>/seed<k> in the
   experiment train_corelm; zeroshot trains nothing and has none) and the summary;
5. the family declaration (FAMILY, found through models/registry.py) and the flows.

The library, models/corelm/ (train.py: the gating, train and eval settings, CoreLMRecipe,
train_and_evaluate; backbone.py, model.py, evaluate.py), takes arguments: it reads no
params.yaml and logs nothing to MLflow.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.runtime import flow, run_cli, task, torchrun
from models.corelm.backbone import Backbone, TinySettings
from models.corelm.evaluate import EvalData
from models.corelm.train import (
    MODELS,
    CoreLMData,
    CoreLMRecipe,
    CoreLMTrain,
    EvalSettings,
    GatingSettings,
    Source,
    build_backbone,
    check_model,
    check_sizes,
    load_data,
    tiny_size_problems,
    train_and_evaluate,
    view_corpus,
)
from tasks.core.checkpoints import jsonable
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.fetch import mirror_setting
from tasks.core.layout import docs_dir, raw_dir, view_file
from tasks.core.settings import WritePath, bounded, settings_to_dict, stage_settings
from tasks.core.tracking import PAPERS, log_checkpoint, log_metrics, tracked_run
from tasks.training.family import Family
from tasks.training.loop import BEST, LAST, torch_threads
from tasks.training.stage import publish_seed, record_history, work_dir, write_summary

STAGE = "train_corelm"

# --------------------------------------------------------------------------- 1. settings


@dataclass
class TrainCoreLMSettings:
    """params.yaml train_corelm."""

    backbone: str = "tiny"  # tiny | gpt2 | smollm2 | <directory>
    tiny: TinySettings = field(default_factory=TinySettings)
    data: list[str] = bounded(["synthetic-gold", "handmade-gold"], min_items=1)
    models: list[str] = bounded(list(MODELS), min_items=1)
    gating: GatingSettings = field(default_factory=GatingSettings)
    train: CoreLMTrain = field(default_factory=CoreLMTrain)
    eval: EvalSettings = field(default_factory=EvalSettings)
    cache_dir: WritePath = "data/cache/pretrained"  # converted backbones (not a DVC output)

    def validate(self, path: str) -> None:
        from tasks.core.settings import ConfigError

        problems = []
        bad = [m for m in self.models if m not in MODELS]
        if bad:
            problems.append(f"{path}.models: {bad} not in {list(MODELS)}")
        if self.train.mode == "cached" and self.train.ft_backbone == "full":
            problems.append(f"{path}.train.ft_backbone: full needs mode paper (cached mode "
                            "trains on cached final hidden states)")  # fmt: skip
        if self.eval.heldout_split == "train":
            problems.append(f"{path}.eval.heldout_split: train is what the models learn from")
        problems += self.curve_problems(path)
        if self.backbone == "tiny":  # the other backbones' sizes are known once loaded
            problems += tiny_size_problems(self.tiny, self.gating, self.train, self.eval, path)
        if problems:
            raise ConfigError(problems)

    def curve_problems(self, path: str) -> list[str]:
        """eval.curve_docs: the settings a learning curve needs (a point every epoch of
        train.max_steps_per_epoch batches, the schedule over the whole run)."""
        t = self.train
        if self.eval.curve_docs is None:
            return []
        problems = []
        if t.patience is not None:
            problems.append(f"{path}.train.patience: {t.patience} would stop the curve early "
                            "(eval.curve_docs): set it null")  # fmt: skip
        if t.max_steps_per_epoch is not None and t.max_steps_per_epoch % t.accumulate:
            problems.append(f"{path}.train.max_steps_per_epoch: {t.max_steps_per_epoch} batches "
                            f"is not a multiple of train.accumulate {t.accumulate}: the curve's "
                            "points (eval.curve_docs) would not fall every N optimizer steps")  # fmt: skip
        if t.max_steps_per_epoch is not None:
            total = t.epochs * max(t.max_steps_per_epoch // t.accumulate, 1)
            if t.warmup_steps >= total:
                problems.append(f"{path}.train.warmup_steps: {t.warmup_steps} is not under the "
                                f"run's {total} optimizer steps (train.epochs x "
                                "max_steps_per_epoch / accumulate): the curve "
                                "(eval.curve_docs) would never see the decay")  # fmt: skip
        return problems


def settings() -> TrainCoreLMSettings:
    """params.yaml train_corelm, parsed strictly (the stage's one parse: passed on)."""
    return stage_settings(TrainCoreLMSettings, STAGE)


# --------------------------------------------------------------------------- 2. paths


def model_dir(model: str) -> Path:
    """One seed per model (train.seed): the artifacts sit in the model's folder, not seed<k>/."""
    return resolve_path(f"artifacts/{STAGE}") / model


def model_work_dir(model: str, seed: int, mode: str) -> Path:
    """Where the model trains and is evaluated (tasks/training/stage.py work_dir: untracked,
    so train.resume's last.pt survives a kill and DVC's removal of the stage's outputs), then
    published whole to model_dir. What an earlier run left there is removed first, but the
    resume state (last.pt) and, in cached mode, the hidden-state cache (its own key)."""
    work = work_dir(STAGE, model, seed)
    keep = {LAST, *(["hidden_cache.pt"] if mode == "cached" else [])}
    for path in sorted(work.iterdir()) if work.is_dir() else []:
        if path.name not in keep:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    return work


# --------------------------------------------------------------------------- 3. plan


def data_sources(names: Sequence[str]) -> list[Source]:
    """train_corelm.data: each name an annotation run with a CoreLM view (flows/view_corelm.py;
    its corpus from the view's metadata) or a corpus with gold mentions."""
    sources = []
    for name in names:
        view, docs = view_file(name, "corelm"), docs_dir(name)
        if view.is_file():
            sources.append(Source(name, docs_dir(view_corpus(view, name)), view))
        elif (docs / "mentions.parquet").is_file():
            sources.append(Source(name, docs))
        else:
            raise CorefreproError(f"{STAGE}.data: {name} is neither a view ({view}) nor a corpus "
                                  f"with gold mentions ({docs / 'mentions.parquet'})")  # fmt: skip
    return sources


def eval_data(ev: EvalSettings) -> EvalData:
    """Where the evaluation reads: the eval settings' corpora and runs, resolved."""

    def folder(corpus: str | None) -> Path | None:
        return docs_dir(corpus) if corpus else None

    def view(run: str | None) -> Path | None:
        return view_file(run, "corelm") if run else None

    return EvalData(wikitext2=folder(ev.wikitext2), wikitext103=folder(ev.wikitext103),
                    lambada=folder(ev.lambada), cbt=folder(ev.cbt),
                    lambada_raw=raw_dir(ev.lambada) if ev.lambada else None,
                    lambada_coref=view(ev.lambada_coref_run), cbt_coref=view(ev.cbt_coref_run))  # fmt: skip


def input_paths(cfg: TrainCoreLMSettings) -> list[Path]:
    """What every model of the stage reads (flows/inputs.py digests it): the training sources'
    views and documents' folders, and the evaluation's folders and views. An evaluation input
    that is absent is skipped by its reader, so here too."""
    paths = [p for s in data_sources(cfg.data) for p in (s.view, s.docs) if p is not None]
    paths += [p for p in dataclasses.astuple(eval_data(cfg.eval)) if p is not None]
    return [p for p in dict.fromkeys(paths) if p.exists()]


def backbone_of(cfg: TrainCoreLMSettings, mirror: str | None = None,
                sources: Sequence[Source] | None = None) -> Backbone:  # fmt: skip
    """The backbone the settings name (the tiny one's tokenizer trained on train_corelm.data's
    training texts, `sources` if already resolved; a gpt2 one's from the BPE files of `mirror`,
    the download.mirror)."""
    sources = data_sources(cfg.data) if sources is None else sources
    return build_backbone(cfg.backbone, sources, tiny=cfg.tiny, cache_dir=cfg.cache_dir,
                          seed=cfg.train.seed, mirror=mirror)  # fmt: skip


def prepare_data(cfg: TrainCoreLMSettings, *, mirror: str | None = None
                 ) -> tuple[Backbone, CoreLMData]:  # fmt: skip
    """The backbone and the CoreLM view windows of train_corelm.data, sizes checked against
    the backbone."""
    with torch_threads(cfg.train.threads):
        sources = data_sources(cfg.data)
        backbone = backbone_of(cfg, mirror, sources)
        check_sizes(backbone, cfg.gating, cfg.train, cfg.eval, STAGE)
        return backbone, load_data(sources, backbone.tokenizer)


# --------------------------------------------------------------------------- 4. outputs


def run_params(cfg: TrainCoreLMSettings) -> dict[str, Any]:
    """A model's settings as its MLflow run records them."""
    return {"backbone": cfg.backbone, "gating": settings_to_dict(cfg.gating),
            "train": settings_to_dict(cfg.train)}  # fmt: skip


def summarize(item: str, results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """metrics/train_corelm/<model>.json: CoreLM trains one seed per model (train.seed, as the
    paper reports one run), so the summary is that seed's metrics."""
    if len(results) != 1:
        raise CorefreproError(f"train_corelm {item}: one seed per model, got {len(results)}")
    return jsonable(dict(results[0]))


# --------------------------------------------------------------------------- 5. the family


def train_one_seed(item: str, seed: int, data: tuple[Backbone, CoreLMData],
                   settings: TrainCoreLMSettings, out_dir: str | Path, *,
                   log_metrics: Callable[..., None] | None = None) -> dict[str, Any]:  # fmt: skip
    """One model of Tables 1-2 (tasks/training/family.py SeedTrainer; item: zeroshot | ft |
    corelm, data: prepare_data's) under train.seed = `seed`: its metrics."""
    train = dataclasses.replace(settings.train, seed=int(seed))
    backbone, corpus = data
    return train_and_evaluate(item, backbone, corpus, settings.gating, train, settings.eval,
                              out_dir, eval_data=eval_data(settings.eval),
                              backbone_name=settings.backbone, log_metrics=log_metrics)  # fmt: skip


FAMILY = Family(
    name="corelm",
    paper=PAPERS[STAGE],
    settings=TrainCoreLMSettings,
    recipe=CoreLMRecipe,
    train_seed=train_one_seed,
    summarize=summarize,
)


# --------------------------------------------------------------------------- 6. the flows


def train_model(model: str, cfg: TrainCoreLMSettings | None = None, *,
                out_dir: Path | None = None, track: bool = True) -> dict:  # fmt: skip
    """The stage item: the model trained (unless zeroshot) under its MLflow run and evaluated
    into artifacts/train_corelm/<model>/ (or out_dir); the metrics the summary is made of."""
    cfg = cfg or settings()  # every setting checked before any work
    check_model(model)  # before the backbone is built
    data = prepare_data(cfg, mirror=mirror_setting())
    out_dir = Path(out_dir or model_dir(model))
    seed = cfg.train.seed
    work = model_work_dir(model, seed, cfg.train.mode) if cfg.train.resume else out_dir
    tracking = (
        tracked_run(
            STAGE, model, dataset="+".join(cfg.data), seed=seed, run_params=run_params(cfg)
        )  # fmt: skip
        if track and model != "zeroshot"  # zeroshot trains nothing: no run
        else contextlib.nullcontext(None)
    )
    with tracking as run:
        sink = log_metrics if run is not None else None
        metrics = FAMILY.train_seed(model, seed, data, cfg, work, log_metrics=sink)
        if work != out_dir:
            publish_seed(work, out_dir, None)
        if run is not None:
            record_history(out_dir)
            log_checkpoint(out_dir / BEST)
    return metrics


train_model_task = task(
    train_model, name="train-corelm-model", task_run_name="train_corelm@{model}"
)


@flow(name="train-corelm")
def train_corelm(model: str) -> dict:
    return write_summary(FAMILY, model, [train_model_task(model)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, choices=MODELS)
    model = parser.parse_args(argv).model
    if not run_cli(torchrun, "flows.train_corelm", lambda: settings().train.nproc, argv):
        run_cli(train_corelm, model)


if __name__ == "__main__":
    main()
