"""Tables 1 and 2 of papers/003 for one model, through the shared LM interface
(tasks/evaluation/lm.py): perplexity (token- and word-level) on the held-out part of the
training corpora and WikiText-2, LAMBADA accuracy in both conventions, CBT by candidate
likelihood. CoreLM is scored without coreference (every token the static vector, App. A's
zero-shot) and, where annotations exist, with them ("<model>+coref"; entities' vectors from
their mentions' hidden states, models/corelm/lm.py). On the held-out part of the training
corpora "+coref" uses the corpora's own entities: that is the paper's GUMBY cell ("evaluated
on GUMBY, using the created entity representations", §4), which tasks/report/corelm.py puts in
the CoreLM row. Benchmarks whose corpus is absent are skipped (null). Per-item LAMBADA / CBT
correctness goes to <out>/items.json for paired t-tests; what each benchmark was scored on
(corpus, split, size) to the metrics' "eval_splits" (eval_splits).

CBT + coreference (eval.cbt_coref_run, an annotate run of the cbt corpus): App. B annotates
"the document as if the candidate was the answer in the cloze test" -- a coreference run per
candidate-filled text. The annotate stage annotates the cbt documents as they are (the 20
context sentences), so here every candidate's text carries the run's entity ids on its
context and none on the question and the candidate: CoreLM + context coreference, not the
paper's per-candidate annotation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from models.corelm.lm import CoreLMScorer
from models.registry import language_model
from tasks.core.errors import DataError
from tasks.core.storage import read_table, write_json
from tasks.corpora.lambada import TASK, TASK_OPENAI, released_passages
from tasks.corpora.wikitext import detokenize
from tasks.evaluation.lm import BLANK, ClozeItem, cbt, lambada, perplexity

log = logging.getLogger("corefrepro.train_corelm")


@dataclass(frozen=True)
class EvalData:
    """Where the evaluation reads, resolved by the stage from its eval settings: each corpus's
    documents' folder, LAMBADA's released files and the coreference runs' CoreLM views (None:
    not evaluated)."""

    wikitext2: Path | None = None
    wikitext103: Path | None = None
    lambada: Path | None = None
    lambada_raw: Path | None = None
    lambada_coref: Path | None = None
    cbt: Path | None = None
    cbt_coref: Path | None = None


def scorers(model_name: str, model, backbone, ev, device) -> dict[str, CoreLMScorer]:
    """'' = the model as it is; '+coref' = CoreLM given test-time coreference."""
    window = min(ev.block_size or backbone.max_length, backbone.max_length)
    kw = dict(bos_id=backbone.prefix_id, max_length=window, stride=ev.stride,
              batch_size=ev.batch_size, batch_tokens=ev.batch_tokens, device=device)  # fmt: skip
    kw.update(model=model, tokenizer=backbone.tokenizer)
    out = {model_name: language_model("corelm", name=model_name, **kw)}
    if model.gating is not None:
        out[f"{model_name}+coref"] = language_model(
            "corelm", entity_mode="running_mean", name=f"{model_name}+coref",
            cloze_entities=ev.cloze_entities, **kw,
        )  # fmt: skip
    return out


def _ppl(lm, texts, originals=None) -> dict[str, Any]:
    t0 = time.perf_counter()
    p = asdict(perplexity(lm, texts, originals=originals))
    p["eval_time_s"] = round(time.perf_counter() - t0, 2)
    return p


def heldout(lms, data, ev) -> dict[str, Any]:
    docs = data.split(ev.heldout_split, layer0=True)[: ev.heldout_max_docs or None]
    if not docs:
        log.warning("eval.heldout_split %s: no documents; held-out perplexity skipped",
                    ev.heldout_split)  # fmt: skip
        return {}
    texts = [" ".join(i.words) for i in docs]
    for lm in lms.values():
        for i in docs:
            lm.annotate(i.words, i.word_entities)
    return {name: _ppl(lm, texts) for name, lm in lms.items()}


def _documents(folder: Path | None, split: str) -> list[dict] | None:
    if folder is None:
        return None
    path = folder / "documents.parquet"
    if not path.is_file():
        return None
    return [d for d in read_table(path).to_pylist() if d["split"] == split]


def wikitext(lms, folder: Path | None, split: str, max_words: int | None) -> dict[str, Any]:
    """WikiText as lm-evaluation-harness's wikitext task scores it: each article detokenized
    (tasks/corpora/wikitext.py `detokenize`), words and bytes counted on the original WikiText
    tokens (`perplexity`'s originals), rolling windows of the model's context. max_words: the
    first that many original words (a CPU budget; the metrics count them)."""
    docs = _documents(folder, split)
    if not docs:
        return {}
    originals, budget = [], max_words
    for d in docs:
        words = d["tokens"] if budget is None else d["tokens"][:budget]
        if words:
            originals.append(" ".join(words))
        if budget is not None:
            budget -= len(words)
            if budget <= 0:
                break
    texts = [detokenize(o) for o in originals]
    return {name: _ppl(lm, texts, originals) for name, lm in lms.items() if "+coref" not in name}


def wikitext2(lms, ev, where: EvalData) -> dict[str, Any]:
    return wikitext(lms, where.wikitext2, ev.wikitext2_split, ev.wikitext2_max_words)


def wikitext103(lms, ev, where: EvalData) -> dict[str, Any]:
    return wikitext(lms, where.wikitext103, ev.wikitext103_split, ev.wikitext103_max_words)


def _lambada_passages(ev, where: EvalData) -> tuple[list[str], list[dict]] | None:
    if where.lambada is None:
        return None
    path = where.lambada / "items.parquet"
    if not path.is_file():
        return None
    docs = {d["doc_id"]: d for d in _documents(where.lambada, ev.lambada_split) or []}
    raw = where.lambada_raw
    released = released_passages(raw) if raw is not None else {}
    if not released:
        log.warning("eval.lambada %s: no released passages in %s; scoring the words joined "
                    "by spaces", ev.lambada, raw)  # fmt: skip
    task = lambada_task(ev)
    items = [i for i in read_table(path).to_pylist() if i["doc_id"] in docs and i["task"] == task]
    if not items:
        log.warning("eval.lambada %s: no %s items in split %s", ev.lambada, task, ev.lambada_split)
        return None
    items = items[: ev.lambada_max_items or None]
    rows = [docs[i["doc_id"]] for i in items]
    return [_released(d, i, released, raw) for d, i in zip(rows, items, strict=True)], rows


def lambada_task(ev) -> str:
    """The release scored (eval.lambada_task): OpenAI's detokenized test passages for the test
    split (Stylianou & Vlahavas App. A; the harness's lambada_openai), else the plain text;
    never both, which share their 5,153 passages."""
    if ev.lambada_task != "auto":
        return ev.lambada_task
    return TASK_OPENAI if ev.lambada_split == "test" else TASK


def _released(doc: dict, item: dict, released: dict[str, str], where: Path) -> str:
    """The passage as its file releases it (tasks/corpora/lambada.py `released_passages`);
    the words joined by spaces where the raw file is absent (a corpus not from the files)."""
    words = [*doc["tokens"], item["answer"]]
    text = released.get(doc["doc_id"])
    if text is None:
        return " ".join(words)
    if text.split() != words:
        raise DataError(where, f"{doc['doc_id']}: the released passage is not its words")
    return text


def lambada_eval(lms, ev, where: EvalData, items_out: dict) -> dict[str, Any]:
    loaded = _lambada_passages(ev, where)
    if not loaded:
        return {}
    passages, docs = loaded
    coref = _coref_run(where.lambada_coref, ev.lambada_coref_run, "lambada_coref_run")
    out = {}
    for name, lm in lms.items():
        if "+coref" in name:
            if coref is None:
                continue
            for d, p in zip(docs, passages, strict=True):
                ents = coref.get(d["doc_id"], [0] * len(d["tokens"]))
                # App. B: not the target word's
                lm.annotate(p.split(), [*ents, 0], text=p)
        for convention in ("full_word", "last_token"):
            t0 = time.perf_counter()
            r = lambada(lm, passages, convention=convention)
            out[f"{name}/{convention}"] = {"accuracy": r.accuracy, "n": r.n,
                                           "perplexity": r.perplexity,
                                           "eval_time_s": round(time.perf_counter() - t0, 2)}  # fmt: skip
            items_out[f"lambada/{name}/{convention}"] = list(r.correct)
    return out


def _coref_run(view: Path | None, run: str | None, what: str) -> dict[str, list[int]] | None:
    """doc_id -> layer-0 word entity ids of an annotate run's CoreLM view (None: no run)."""
    if view is None:
        return None
    if not view.is_file():
        log.warning("%s %s: no %s: CoreLM+coref on it skipped", what, run, view)
        return None
    return {r["doc_id"]: r["entity_ids"] for r in read_table(view).to_pylist() if r["layer"] == 0}


@dataclass
class CBTQuestion:
    """A CBT item with what annotating it needs: its document and the words of both parts."""

    item: ClozeItem
    doc_id: str
    context_words: list[str]  # the context sentences' words, as ClozeItem joins them
    context_index: list[int]  # their positions in the document (the view's word positions)
    query: list[str]  # the question's words, one of them XXXXX
    split: str  # the split of its question file (tasks/corpora/cbt.py: valid = dev, test)


def cbt_questions(ev, where: EvalData) -> dict[str, list[CBTQuestion]]:
    """CBT questions by type (task), from data/docs/<cbt>/items.parquet."""
    if where.cbt is None:
        return {}
    path = where.cbt / "items.parquet"
    if not path.is_file():
        return {}
    docs = {d["doc_id"]: d for d in read_table(where.cbt / "documents.parquet").to_pylist()}
    by_task: dict[str, list[CBTQuestion]] = {}
    for it in read_table(path).to_pylist():
        if not it["candidates"] or BLANK not in it["query"]:
            continue
        d = docs[it["doc_id"]]
        starts = [*d["sentence_starts"], it["context_end"]]
        spans = [(a, b) for a, b in zip(starts, starts[1:], strict=False) if a < b]
        sentences = [" ".join(d["tokens"][a:b]) for a, b in spans]
        index = [i for a, b in spans for i in range(a, b)]
        words = [d["tokens"][i] for i in index]
        item = ClozeItem(sentences, " ".join(it["query"]), list(it["candidates"]), it["answer"])
        by_task.setdefault(it["task"], []).append(
            CBTQuestion(item, it["doc_id"], words, index, list(it["query"]), it["split"])
        )
    return {t: v[: ev.cbt_max_items or None] for t, v in sorted(by_task.items())}


def cbt_items(ev, where: EvalData) -> dict[str, list[ClozeItem]]:
    """CBT questions by type (task), from data/docs/<cbt>/items.parquet."""
    return {t: [q.item for q in qs] for t, qs in cbt_questions(ev, where).items()}


def annotate_cbt(lm: CoreLMScorer, questions: list[CBTQuestion], coref: dict[str, list[int]]
                 ) -> int:  # fmt: skip
    """Register every candidate-filled text of *questions* with the run's context entities
    (module docstring); the number of questions the run annotated."""
    n = 0
    for q in questions:
        ents = coref.get(q.doc_id)
        if ents is None:
            continue
        n += 1
        context = [ents[i] if i < len(ents) else 0 for i in q.context_index]
        for candidate in q.item.candidates:
            filled = [w.replace(BLANK, candidate) for w in q.query]
            lm.annotate([*q.context_words, *filled], [*context, *[0] * len(filled)])
    return n


def cbt_eval(lms, ev, where: EvalData, items_out: dict,
             by_task: dict[str, list[CBTQuestion]] | None = None) -> dict[str, Any]:  # fmt: skip
    """CBT accuracy per scorer and question type (by_task: cbt_questions', read here if not
    given)."""
    out = {}
    coref = _coref_run(where.cbt_coref, ev.cbt_coref_run, "cbt_coref_run")
    by_task = cbt_questions(ev, where) if by_task is None else by_task
    for task, questions in by_task.items():
        items = [q.item for q in questions]
        for name, lm in lms.items():
            if "+coref" in name:
                if coref is None:
                    continue  # no CBT coreference run (eval.cbt_coref_run)
                lm.clear_annotations()
                if not annotate_cbt(lm, questions, coref):
                    log.warning("cbt_coref_run %s annotates no %s question", ev.cbt_coref_run, task)
                    continue
            r = cbt(lm, items)
            out[f"{name}/{task}"] = {"accuracy": r.accuracy, "n": r.n}
            items_out[f"cbt/{name}/{task}"] = list(r.correct)
            if "+coref" in name:
                out[f"{name}/{task}"]["unannotated_requests"] = lm.misses
                lm.clear_annotations()
                lm.misses = 0
    return out


def _brief(result: dict) -> str:
    keys = ("word_perplexity", "token_perplexity", "accuracy")
    return "; ".join(f"{name} " + " ".join(f"{k} {v[k]:.4g}" for k in keys if k in v)
                     for name, v in result.items())  # fmt: skip


def eval_splits(ev, data_names: Sequence[str], results: Mapping[str, Any],
                cbt_by_task: Mapping[str, Sequence[CBTQuestion]]) -> dict[str, dict[str, Any]]:  # fmt: skip
    """The metrics' "eval_splits": for each benchmark that gave figures, what they were scored
    on -- its corpus, its split and its size, the texts or questions every scorer of the model
    scored (`unit`; CBT: per question type) -- so that a results record reads them from the
    metrics file alone (tasks/results/record.py). CBT scores every question its corpus holds
    (normalize.cbt.question_splits' files): its split names theirs, joined by +."""

    def first(key: str) -> dict[str, Any]:
        return next(iter(results[key].values()))

    out: dict[str, dict[str, Any]] = {}
    if results.get("heldout"):
        out["heldout"] = {"corpus": "+".join(data_names), "split": ev.heldout_split,
                          "size": first("heldout")["n_texts"], "unit": "documents",
                          "words": first("heldout")["n_words"]}  # fmt: skip
    for key in ("wikitext2", "wikitext103"):
        if results.get(key):
            out[key] = {"corpus": getattr(ev, key), "split": getattr(ev, f"{key}_split"),
                        "size": first(key)["n_texts"], "unit": "articles",
                        "words": first(key)["n_words"]}  # fmt: skip
    if results.get("lambada"):
        out["lambada"] = {"corpus": ev.lambada, "split": ev.lambada_split,
                          "task": lambada_task(ev), "size": first("lambada")["n"],
                          "unit": "passages"}  # fmt: skip
    if results.get("cbt"):
        scored = {k.split("/")[-1] for k in results["cbt"]}
        splits = {q.split for task in scored for q in cbt_by_task[task]}
        out["cbt"] = {"corpus": ev.cbt, "split": "+".join(sorted(splits)),
                      "size": {t: len(cbt_by_task[t]) for t in sorted(scored)},
                      "unit": "questions"}  # fmt: skip
    return out


def evaluate_all(model_name, model, backbone, data, ev, where: EvalData, device, out_dir: Path
                 ) -> dict[str, Any]:  # fmt: skip
    """Every benchmark the settings name and `where` holds, scored by every scorer of the
    model; with what each was scored on (eval_splits)."""
    lms = scorers(model_name, model, backbone, ev, device)
    items: dict[str, list[bool]] = {}
    cbt_by_task = cbt_questions(ev, where)
    results: dict[str, Any] = {
        "perplexity_unit": "token = the backbone's subword tokens; word = whitespace words "
        "(WikiText: the original tokens, the text scored detokenized as the harness's wikitext)"
    }
    steps = {"heldout": lambda: heldout(lms, data, ev), "wikitext2": lambda: wikitext2(lms, ev, where),
             "wikitext103": lambda: wikitext103(lms, ev, where),
             "lambada": lambda: lambada_eval(lms, ev, where, items), "cbt": lambda: cbt_eval(lms, ev, where, items, cbt_by_task)}  # fmt: skip
    with torch.no_grad():
        for key, run in steps.items():
            t0 = time.perf_counter()
            results[key] = run()
            if results[key]:
                log.info("%s %s: %s (%.0f s)", model_name, key, _brief(results[key]),
                         time.perf_counter() - t0)  # fmt: skip
    results["eval_splits"] = eval_splits(ev, data.names, results, cbt_by_task)
    write_json(Path(out_dir) / "items.json", items)
    return results


__all__ = ["EvalData", "annotate_cbt", "cbt_items", "cbt_questions", "eval_splits",
           "evaluate_all", "scorers"]  # fmt: skip
