"""The project's LAMBADA and WikiText figures equal lm-evaluation-harness's on the same model
(issue #28): a tiny random GPT-2 saved with `save_pretrained`, scored by the project's
`CoreLMScorer` + tasks/evaluation/lm.py and by `lm_eval.simple_evaluate(model="hf")` on the
same local json files (tasks lambada_openai and wikitext 2.0, their yaml with
`dataset_path: json`). Skipped where lm-evaluation-harness is not installed (a dev
dependency). Measured: relative differences of 1e-7 to 1e-8 -- the harness sums a request's
token log probabilities in float32, the project in float64.
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from models.corelm.backbone import TinySettings, load_backbone
from models.corelm.lm import CoreLMScorer
from models.corelm.model import CoreLM
from tasks.corpora.wikitext import detokenize
from tasks.evaluation.lm import BLANK, ClozeItem, cbt, lambada, perplexity
from tests.models.corelm.conftest import TEXTS

lm_eval = pytest.importorskip("lm_eval")

CONTEXT = 32  # the model's context: WikiText pages below span several rolling windows
PASSAGES = [
    "Mary went to the kitchen.\n\nShe picked up the apple",
    'John travelled to the garden.\n"Then," he said, "I dropped the football',
    "The cake for Sam's party is in the garage until the party. Sam went to the garage",
    'He came in\n\n"Hello," she said and the cake',
]
PAGES = [
    " = The Kitchen = \n \n Mary went to the kitchen . She picked up the apple @-@ pie , "
    "and John travelled to the garden ( the one near the garage ) . \n \n = = Party = = \n "
    "\n The cake for Sam 's party is in the garage until the party . N of them came . \n",
    " = Garden = \n \n John travelled to the garden . Then he dropped the football there , "
    '" he said " . It cost 1 @,@ 000 apples . \n',
]
LAMBADA_YAML = """task: project_lambada
dataset_path: json
dataset_kwargs:
  data_files: {{test: {path}}}
output_type: loglikelihood
test_split: test
doc_to_text: "{{{{text.split(' ')[:-1]|join(' ')}}}}"
doc_to_target: "{{{{' '+text.split(' ')[-1]}}}}"
metric_list:
  - metric: perplexity
    aggregation: perplexity
    higher_is_better: false
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""
WIKITEXT_YAML = """task: project_wikitext
dataset_path: json
dataset_kwargs:
  data_files: {{test: {path}}}
output_type: loglikelihood_rolling
test_split: test
doc_to_text: ""
doc_to_target: !function wikitext_hooks.wikitext_detokenizer
process_results: !function wikitext_hooks.process_results
metric_list:
  - metric: word_perplexity
  - metric: byte_perplexity
  - metric: bits_per_byte
"""
# CBT as a harness multiple-choice task: the text up to the blank, each candidate with the rest
# of the question as a choice (target_delimiter " "), acc = the argmax of the choices' scores
CBT_YAML = """task: project_cbt
dataset_path: json
dataset_kwargs:
  data_files: {{test: {path}}}
output_type: multiple_choice
test_split: test
doc_to_text: "{{{{text}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{gold}}}}"
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""
CBT_ITEMS = [
    ClozeItem(["Mary went to the kitchen .", "She picked up the apple ."],
              f"John travelled to the {BLANK} . Then he dropped the football there .",
              ["garden", "kitchen", "party", "apple"], "garden"),
    ClozeItem(["John travelled to the garden ."], f"{BLANK} dropped the football there .",
              ["He", "She", "Mary", "The"], "He"),
    ClozeItem(["The cake for Sam 's party is in the garage ."],
              f"Sam went to the garage until the {BLANK} .", ["party", "cake", "garden"], "party"),
    ClozeItem(["Mary went to the kitchen ."], f"She picked up the {BLANK}",
              ["apple", "football", "cake"], "apple"),
]  # fmt: skip


def cbt_rows(items: list[ClozeItem]) -> list[dict]:
    """The harness's view of CBT items: text = context + the question up to the blank."""
    rows = []
    for item in items:
        before, after = item.question.split(BLANK)
        rows.append({"text": " ".join([*item.context, before]).rstrip(),
                     "choices": [c + after for c in item.candidates],
                     "gold": item.candidates.index(item.answer)})  # fmt: skip
    return rows


def write_tasks(tmp, passages: list[str]):
    """tmp/tasks: the harness tasks project_lambada (*passages*), project_wikitext (PAGES) and
    project_cbt (CBT_ITEMS) over local json files (TaskManager(include_path=...))."""
    tasks = tmp / "tasks"
    tasks.mkdir()
    for name, rows, yaml in (("lambada", [{"text": p} for p in passages], LAMBADA_YAML),
                             ("wikitext", [{"page": p} for p in PAGES], WIKITEXT_YAML),
                             ("cbt", cbt_rows(CBT_ITEMS), CBT_YAML)):  # fmt: skip
        data = tmp / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        (tasks / f"project_{name}.yaml").write_text(yaml.format(path=json.dumps(str(data))))
    (tasks / "wikitext_hooks.py").write_text(
        "from lm_eval.tasks.wikitext.preprocess_wikitext import (  # noqa: F401\n"
        "    process_results, wikitext_detokenizer)\n"
    )
    return tasks


def sharp_gpt2(backbone):
    """A tiny GPT-2 with large random weights (seed 0) for *backbone*'s tokenizer: scores that
    depend on every token of context (the default init is near uniform, where a window one
    token short changes a score by ~1e-7)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    return GPT2LMHeadModel(
        GPT2Config(vocab_size=len(backbone.tokenizer), n_positions=CONTEXT, n_embd=32,
                   n_layer=2, n_head=2, initializer_range=0.2,
                   bos_token_id=backbone.prefix_id, eos_token_id=backbone.prefix_id)
    ).eval()  # fmt: skip


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory):
    """(the project's scorer, the harness's results) on one saved tiny model."""
    tmp = tmp_path_factory.mktemp("harness")
    backbone = load_backbone(
        "tiny",
        texts=TEXTS,
        tiny=TinySettings(vocab_size=300, n_layer=2, n_embd=32, n_head=2, n_positions=CONTEXT),
    )
    backbone.model = sharp_gpt2(backbone)
    passages = PASSAGES + _greedy_passages(backbone)
    folder = tmp / "model"
    backbone.model.save_pretrained(folder)
    backbone.tokenizer.save_pretrained(folder)
    tasks = write_tasks(tmp, passages)
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    with pytest.MonkeyPatch.context() as env:  # local files only, a private datasets cache
        env.setenv("HF_HUB_OFFLINE", "1")
        env.setenv("HF_DATASETS_OFFLINE", "1")
        env.setenv("HF_DATASETS_CACHE", str(tmp / "hf-datasets"))
        out = simple_evaluate(
            model="hf",
            model_args=f"pretrained={folder},dtype=float32",
            tasks=["project_lambada", "project_wikitext", "project_cbt"],
            task_manager=TaskManager(include_path=str(tasks), include_defaults=False),
            batch_size=1,
            device="cpu",
            log_samples=True,
        )
    from transformers import AutoModelForCausalLM

    loaded = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)  # as HFLM loads
    model = CoreLM(loaded, n_entities=1, gating=False).eval()
    scorer = CoreLMScorer(model, backbone.tokenizer, bos_id=backbone.prefix_id,
                          max_length=backbone.max_length, batch_size=1)  # fmt: skip
    out["results"]["samples"] = out["samples"]
    return scorer, out["results"], passages


def _greedy_passages(backbone) -> list[str]:
    """Passages whose last word is the random model's greedy next token (a space and a word),
    so that accuracy is neither 0 nor 1: contexts are the prefixes of the texts at a space."""
    out = []
    for text in [*TEXTS[:3], *PASSAGES]:
        for cut in [k for k, c in enumerate(text) if c == " "][2:]:
            context = text[:cut]
            ids = backbone.tokenizer(context)["input_ids"][-CONTEXT:]  # no prefix: a context
            with torch.no_grad():
                best = int(backbone.model(torch.tensor([ids])).logits[0, -1].argmax())
            word = backbone.tokenizer.decode([best])
            if word.startswith(" ") and word[1:].strip() and not any(c.isspace() for c in word[1:]):
                out.append(context + word)
            if len(out) == 4:
                return out
    return out


def test_lambada_accuracy_and_perplexity_equal_the_harness(harness_run):
    scorer, results, passages = harness_run
    ours = lambada(scorer, passages)
    theirs = results["project_lambada"]
    assert 0 < ours.accuracy < 1 and ours.accuracy == theirs["acc,none"]
    assert math.isclose(ours.perplexity, theirs["perplexity,none"], rel_tol=1e-6)


def test_wikitext_word_and_byte_perplexity_equal_the_harness(harness_run):
    scorer, results, _ = harness_run
    assert all(len(scorer.tokenize(detokenize(p))) > 2 * CONTEXT for p in PAGES)  # windows
    ours = perplexity(scorer, [detokenize(p) for p in PAGES], originals=PAGES)
    theirs = results["project_wikitext"]
    assert math.isclose(ours.word_perplexity, theirs["word_perplexity,none"], rel_tol=1e-6)
    assert math.isclose(ours.byte_perplexity, theirs["byte_perplexity,none"], rel_tol=1e-6)
    assert math.isclose(ours.bits_per_byte, theirs["bits_per_byte,none"], rel_tol=1e-6)
    # and the check has teeth: a window one token short (the old scorer's context) is far off
    short = CoreLMScorer(scorer.model, scorer.tokenizer, bos_id=scorer.bos_id,
                         max_length=CONTEXT - 1, batch_size=1)  # fmt: skip
    off = perplexity(short, [detokenize(p) for p in PAGES], originals=PAGES).word_perplexity
    assert not math.isclose(off, theirs["word_perplexity,none"], rel_tol=1e-2)


def test_cbt_candidates_score_as_the_harness_multiple_choice(harness_run):
    """CBT (Radford et al. 2019 §3.2: each candidate with the rest of the question, given the
    text before the blank) is the harness's multiple_choice over those choices."""
    scorer, results, _ = harness_run
    ours = cbt(scorer, CBT_ITEMS)
    samples = sorted(results["samples"]["project_cbt"], key=lambda x: x["doc_id"])
    theirs = [[float(r[0][0]) for r in s["resps"]] for s in samples]  # [(ll, greedy)] per choice
    for mine, harness in zip(ours.scores, theirs, strict=True):
        assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(mine, harness, strict=True))
    assert ours.accuracy == results["project_cbt"]["acc,none"]
