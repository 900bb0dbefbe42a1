"""The 5-gram baseline of Ji et al. 2017 Table 1 as the third item of stage `train_entitynlm`.

It reads the very tokens the RNNLM and EntityNLM are scored on (`prepare_data`: §4
preprocessing, the training split's vocabulary, `unk` elsewhere), ONE DOCUMENT = ONE SEQUENCE
(§4 drops the sentence-final punctuation; the neural models' default sentence scope is given
the boundaries and restarts its LSTMs there, model.py, but predicts no </s> either).
Perplexity counts the same tokens as the RNNLM's: every word, `</s>` NOT counted (the neural
models have no end-of-document or end-of-sentence event); KenLM `query`'s own figure (with
`</s>`) is kept beside it as `ppl_with_eos`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from tasks.core.checkpoints import jsonable
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError
from tasks.core.settings import settings_to_dict
from tasks.core.tracking import log_metrics, tracked_run
from tasks.evaluation import ngram

ITEM = "5gram"
ARPA = f"artifacts/train_entitynlm/{ITEM}/model.arpa"


def word_perplexity(model: Any, documents: Sequence[Sequence[str]]) -> dict[str, float]:
    """exp(-1/T sum ln p(w_t | <s> w_<t)) over the words only (no </s>), T = word count, as
    models/entitynlm/sampling.py counts them; `ppl_with_eos` is KenLM query's figure."""
    if not documents:
        raise CorefreproError("5gram: no documents to score")
    log10 = sum(
        s[0] for d in documents for s in model.full_scores(" ".join(d), bos=True, eos=False)
    )
    tokens = sum(len(d) for d in documents)
    with_eos = ngram.perplexity(model, documents)
    return {"ppl": 10.0 ** (-log10 / tokens), "log_prob": log10 * math.log(10.0),
            "tokens": tokens, "ppl_with_eos": with_eos["perplexity"],
            "oov": with_eos["oov"]}  # fmt: skip


def train_ngram(splits, vocab, cfg, arpa_path: str = ARPA) -> dict[str, Any]:
    """Estimate the ARPA on the training documents, score dev and test (Table 1 row "5-gram");
    arpa_path relative to the repository (the stage's artifact)."""
    text = {s: [vocab.unk(x.tokens) for x in d] for s, d in splits.items()}
    ncfg = cfg.ngram
    path = ngram.estimate_arpa(text["train"], resolve_path(arpa_path), ncfg.order, estimator=ncfg.estimator,
                               discount_fallback=ncfg.discount_fallback)  # fmt: skip
    model = ngram.load(path)
    scores = {s: word_perplexity(model, text[s]) for s in ("dev", "test") if text[s]}
    stat = {s: {"mean": v["ppl"], "std": 0.0, "n": 1} for s, v in scores.items()}
    return jsonable({
        "model": ITEM, "dataset": "+".join(cfg.runs), "seeds": 1,
        "vocab_size": len(vocab), "documents": {s: len(d) for s, d in splits.items()},
        "tokens": {s: sum(len(x) for x in d) for s, d in text.items()},
        "dev_ppl": stat.get("dev"), "test_ppl": stat.get("test"),
        "selected": scores, "settings": settings_to_dict(ncfg),
        "sequence": "document", "eos_counted": False, "arpa": str(arpa_path),
    })  # fmt: skip


def train_item(splits, vocab, cfg, *, track: bool = True) -> dict[str, Any]:
    """The stage item `5gram`: train_ngram under its MLflow run (experiment train_entitynlm)."""
    if not track:
        return train_ngram(splits, vocab, cfg)
    run_params = {"ngram": settings_to_dict(cfg.ngram), "runs": list(cfg.runs)}
    with tracked_run("train_entitynlm", ITEM, dataset="+".join(cfg.runs), run_params=run_params):
        summary = train_ngram(splits, vocab, cfg)
        log_metrics({f"{s}_ppl": summary[f"{s}_ppl"]["mean"] for s in ("dev", "test")
                     if summary.get(f"{s}_ppl")})  # fmt: skip
    return summary
