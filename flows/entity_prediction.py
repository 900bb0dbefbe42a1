"""Stage `entity_prediction`: InScript entity prediction (Ji et al. 2017 §5.3, Table 3).

    python -m flows.entity_prediction --corpus inscript

Reads data/docs/<corpus>/ (and, for InScript, the label kinds from data/raw/inscript: the slot
rules need ScrPart_* vs NPart, ...; tasks/corpora/inscript.mention_kinds), builds the slots of
every split (tasks/evaluation/entity_prediction.py), trains the shallow ranker on the train
slots, scores the two baselines and EntityNLM's predictor (models/entitynlm/apply.py,
checkpoint entity_prediction.entitynlm.checkpoint; ep.NO_CHECKPOINT or null: none), and writes
metrics/entity_prediction/<corpus>.json (accuracy per predictor per split, slot counts) and
data/entity_prediction/<corpus>/predictions.parquet (ENTITY_PREDICTIONS).

The embedded default has no InScript: it runs on `synthetic` (generated stories with gold
coreference, no label kinds, so every mention may be a slot) under the same rules, so the
stage is exercised by `dvc repro`; with the mirror, corpora: [inscript] is the paper's setting.
An InScript test split holding only the mirror's 10-story sample is reported as
"test_sample".

Test slots (``test_slots``): ``released`` (default) takes InScript's test slots from Modi et
al.'s release (data/raw/inscript/modi2017/humanPredictions.json, else the mirror's 10-story
sample of it; tasks/corpora/inscript.released_targets) when it covers every test story, and
adds Table 3's human row (``human``, ep.HumanMajority); without a release, or where it lacks a
test story, the rule's slots serve (said in a log line). ``rule``: the rule's slots always.
Dev and train always follow the rule (the release covers test stories only). The metrics'
``test_slots`` say which set was scored and compare the rule's with the release's.

Layout (issue #54.4): this module is the stage's one home, read top to bottom: its settings
section (params.yaml entity_prediction, parsed once by the flow and passed down; the nesting
rule is the EntityNLM view's, read from that stage's own module, flows/view_entitynlm.py),
its paths, its plan (the slot rules and the test slots), its outputs (predictions, metrics,
MLflow run) and the flow. The libraries take arguments: tasks/evaluation/entity_prediction.py
(slots, the baselines, scoring), models/entitynlm/apply.py (EntityNLM's predictor).
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import torch

from flows.runtime import flow, run_cli, task
from flows.view_entitynlm import settings as entitynlm_view_settings
from models.entitynlm.apply import entity_predictors
from tasks.core import numerics, storage
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.layout import check_checkpoint_path, docs_dir, raw_dir
from tasks.core.schema import DOCUMENTS, ENTITY_PREDICTIONS, MENTIONS, SPLITS
from tasks.core.settings import (
    ConfigError,
    Threads,
    bounded,
    load_stage_settings,
    settings_to_dict,
)
from tasks.evaluation import entity_prediction as ep

log = logging.getLogger("corefrepro.entity_prediction")
STAGE = "entity_prediction"
INSCRIPT_TEST_STORIES = 182  # the split file's test list (tasks/corpora/inscript.py)


# --------------------------------------------------------------------------- 1. settings


@dataclass
class ModelPredictorSettings:
    """params.yaml entity_prediction.entitynlm: a trained model's checkpoint (ep.NO_CHECKPOINT or
    null: skip it). The predictor itself is the model family's (models/entitynlm/apply.py);
    the flow builds it and hands it to `run`."""

    checkpoint: str | None = None

    def validate(self, path: str) -> None:
        if self.scored is not None:
            check_checkpoint_path(self.checkpoint, f"{path}.checkpoint")

    @property
    def scored(self) -> str | None:
        """The checkpoint to score, None for none (ep.NO_CHECKPOINT or null)."""
        return None if self.checkpoint in (None, ep.NO_CHECKPOINT) else self.checkpoint


@dataclass
class EntityPredictionSettings(ep.ProtocolSettings):
    """params.yaml entity_prediction: the corpora, the slot rules, the shallow ranker. The
    nesting rule is the EntityNLM view's for each corpus (view_entitynlm.nested /
    nested_for; issue #33.5: one rule for the mentions a model trains on and the slots it is
    asked about); `nested` here may only restate it."""

    nested: Literal["enclosing", "heads"] | None = None

    corpora: list[str] = field(default_factory=lambda: ["synthetic"])
    # the test slots: Modi et al.'s released targets where the release is at hand | the rule
    test_slots: Literal["released", "rule"] = "released"
    shallow: ep.ShallowSettings = field(default_factory=ep.ShallowSettings)
    threads: Threads = bounded(1, ge=1)  # torch intra-op threads
    entitynlm: ModelPredictorSettings = field(default_factory=ModelPredictorSettings)


def settings() -> EntityPredictionSettings:
    return load_stage_settings(EntityPredictionSettings, STAGE)


def protocol(cfg: EntityPredictionSettings, corpus: str) -> ep.ProtocolSettings:
    """The slot rules for `corpus`, nesting as the corpus's EntityNLM view."""
    rule = entitynlm_view_settings().nesting_rule(corpus)
    if cfg.nested is not None and cfg.nested != rule:
        raise ConfigError(
            f"{STAGE}.nested: {cfg.nested!r} differs from the EntityNLM view's rule for "
            f"{corpus} ({rule!r}, view_entitynlm.nested / nested_for); slots and training "
            "mentions must follow one rule"
        )
    rules = {f.name: getattr(cfg, f.name) for f in fields(ep.ProtocolSettings)}
    return ep.ProtocolSettings(**{**rules, "nested": rule})


# --------------------------------------------------------------------------- 2. paths


def predictions_dir(corpus: str) -> Path:
    return resolve_path(f"data/{STAGE}") / corpus


def metrics_path(corpus: str) -> Path:
    return resolve_path(f"metrics/{STAGE}") / f"{corpus}.json"


def load(corpus: str) -> tuple[list[dict], list[dict], dict | None]:
    """Documents, gold mentions and (InScript) label kinds of one corpus. An InScript
    document carries its per-token syntax and event labels under "syntax" (slot rule 3 and
    the rich shallow features read them)."""
    docs = storage.read_table(docs_dir(corpus) / f"{DOCUMENTS}.parquet", DOCUMENTS).to_pylist()
    mentions = storage.read_table(docs_dir(corpus) / f"{MENTIONS}.parquet", MENTIONS)
    gold = [m for m in mentions.to_pylist() if m["annotator"] == "gold"]
    if not gold:
        raise CorefreproError(f"{docs_dir(corpus)}: no gold mentions; entity prediction needs them")
    kinds = None
    if corpus == "inscript":
        from tasks.corpora.inscript import mention_kinds, story_syntax

        kinds = mention_kinds(raw_dir(corpus))
        syntax = story_syntax(raw_dir(corpus))
        docs = [{**d, "syntax": syntax[d["doc_id"]]} for d in docs]
    return docs, gold, kinds


def load_release(corpus: str) -> tuple[dict, Path] | None:
    """Modi et al.'s released targets of `corpus` and the file read (InScript only)."""
    if corpus != "inscript":
        return None
    from tasks.corpora.inscript import released_targets

    return released_targets(raw_dir(corpus))


# --------------------------------------------------------------------------- 3. plan


def choose_test_slots(
    cfg: EntityPredictionSettings, rules: ep.ProtocolSettings, docs: list[dict],
    gold: list[dict], rule_slots: list[ep.Slot], release: tuple[dict, Path] | None,
) -> tuple[list[ep.Slot], dict[str, Any]]:  # fmt: skip
    """The test slots and what the metrics say of them (module docstring, test_slots)."""
    if cfg.test_slots == "rule" or release is None:
        why = "test_slots: rule" if cfg.test_slots == "rule" else "no release"
        return rule_slots, {"set": "rule", "why": why}
    targets, path = release
    test_docs = {d["doc_id"] for d in docs if d["split"] == "test"}
    lacking = sorted(test_docs - set(targets))
    if lacking:
        log.info("%s lacks %d of the %d test stories (e.g. %s); the test slots follow the "
                 "rule", path, len(lacking), len(test_docs), lacking[0])  # fmt: skip
        return rule_slots, {"set": "rule", "why": f"{path.name} lacks {len(lacking)} test stories"}
    outside = len(set(targets) - test_docs)
    if outside:
        log.info("%s: %d released stories are not among the test documents; not scored",
                 path, outside)  # fmt: skip
    chosen = {d: t for d, t in targets.items() if d in test_docs}
    slot_list, unmatched = ep.released_slots(docs, gold, chosen, rules, str(path))
    if unmatched:
        log.warning("%s: %d released targets lie in no gold mention (e.g. %s %s); not scored",
                    path, len(unmatched), *unmatched[0])  # fmt: skip
    comparison = ep.compare_slot_sets(rule_slots, slot_list, unmatched)
    log.info("test slots: %d released targets of %s (%d stories); the rule picks %d there, "
             "missing %d, adding %d", comparison["released"], path.name,
             comparison["documents"], comparison["rule"], comparison["rule_misses"],
             comparison["rule_extra"])  # fmt: skip
    return slot_list, {"set": "released", "file": path.name, "comparison": comparison,
                       "unmatched": [list(u) for u in unmatched]}  # fmt: skip


def split_label(corpus: str, split: str, docs: list[dict]) -> str:
    n = sum(d["split"] == split for d in docs)
    if corpus == "inscript" and split == "test" and n < INSCRIPT_TEST_STORIES:
        return "test_sample"
    return split


# --------------------------------------------------------------------------- 4. outputs


def run(
    cfg: EntityPredictionSettings, corpus: str, extra: Sequence[ep.Predictor] = ()
) -> dict[str, Any]:
    """The stage on one corpus; returns the metrics written. `extra`: trained models'
    predictors (Table 3's EntityNLM), scored beside the two baselines."""
    from tasks.core.tracking import log_metrics, tracked_run

    rules = protocol(cfg, corpus)
    docs, gold, kinds = load(corpus)
    started = time.perf_counter()
    by_split = {sp: ep.slots(docs, gold, sp, rules, kinds) for sp in SPLITS}
    if not by_split["train"]:
        raise CorefreproError(f"{corpus}: no train slots to fit the shallow ranker on")
    by_split["test"], test_info = choose_test_slots(cfg, rules, docs, gold, by_split["test"],
                                             load_release(corpus))  # fmt: skip
    threads = torch.get_num_threads()
    if count := numerics.threads(cfg.threads, f"{STAGE}.threads"):
        torch.set_num_threads(count)
    try:
        rankers = [ep.ShallowRanker(cfg.shallow, features, name).fit(docs, by_split["train"])
                   for name, features in [("shallow", cfg.shallow.features),
                                          *cfg.shallow.extra_rows.items()]]  # fmt: skip
        human = [ep.HumanMajority()] if test_info["set"] == "released" else []
        predictors = [ep.AlwaysNew(), *rankers, *human, *extra]
        rows, results = _predict(predictors, docs, by_split, corpus)
    finally:
        torch.set_num_threads(threads)
    if human:
        test_info["human"] = {"ties": human[0].ties, "unmapped": human[0].unmapped}
    metrics = {
        "corpus": corpus,
        "protocol": settings_to_dict(rules),
        "slots": {split_label(corpus, sp, docs): len(v) for sp, v in by_split.items() if v},
        "documents": {
            split_label(corpus, sp, docs): len({s.doc_id for s in v})
            for sp, v in by_split.items()
            if v
        },
        "test_slots": test_info,
        "accuracy": results,
        "shallow_weights": {r.name: r.weights() for r in rankers},
        "unscored_slots": {p.name: p.unscored for p in extra if hasattr(p, "unscored")},
        "seconds": round(time.perf_counter() - started, 3),
    }
    with storage.atomic_dir(predictions_dir(corpus)) as tmp:
        storage.write_table(tmp / "predictions.parquet", ENTITY_PREDICTIONS, rows,
                            {"corpus": corpus})  # fmt: skip
    storage.write_metrics(metrics_path(corpus), metrics)
    flat = {f"{name}.{sp}.accuracy": r["accuracy"] for name, per in results.items()
            for sp, r in per.items()}  # fmt: skip
    with tracked_run(STAGE, corpus, dataset=corpus, seed=cfg.shallow.seed,
                     run_params=settings_to_dict(cfg)):  # fmt: skip
        log_metrics(flat)
    log.info("%s: %s", corpus, flat)
    return metrics


def _predict(predictors, docs, by_split, corpus):
    rows: list[dict[str, Any]] = []
    results: dict[str, dict[str, Any]] = {}
    for p in predictors:
        for sp, slot_list in by_split.items():
            if not slot_list or not getattr(p, "covers", lambda _: True)(slot_list):
                continue
            answers = ep.predict_all(p, docs, slot_list)
            results.setdefault(p.name, {})[split_label(corpus, sp, docs)] = ep.evaluate(
                answers, slot_list
            )
            rows += [
                {
                    "doc_id": s.doc_id,
                    "split": sp,
                    "start": s.start,
                    "end": s.end,
                    "predictor": p.name,
                    "prediction": a,
                    "gold": s.gold,
                    "n_candidates": len(s.candidates),
                }  # fmt: skip
                for s, a in zip(slot_list, answers, strict=True)
            ]
    return rows, results


# --------------------------------------------------------------------------- 5. the flow

run_corpus = task(run, name="entity-prediction", task_run_name="entity_prediction@{corpus}")


@flow(name="entity_prediction")
def entity_prediction(corpus: str) -> dict:
    cfg = settings()  # every setting checked before any work, then passed down
    return run_corpus(cfg, corpus, entity_predictors(cfg.entitynlm.scored))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="a corpus of data/docs/ with gold mentions")
    args = parser.parse_args(argv)
    run_cli(entity_prediction, args.corpus)


if __name__ == "__main__":
    main()
