"""The lm-evaluation-harness model "corefrepro" (models/harness.py, issue #28) on a
CoreLM artifact with Entity-Gating: `simple_evaluate(model="corefrepro",
model_args="checkpoint=...")` on local LAMBADA- and WikiText-style tasks gives the figures of
the project's own `lambada` / `perplexity` on the same checkpoint, and so does the command
line `python -m models.harness`. Offline: local json tasks, HF_*_OFFLINE."""

from __future__ import annotations

import json
import math
import runpy
import sys

import pytest
import torch

from models.corelm.artifact import ArtifactError, checkpoint_config, save_artifact
from models.corelm.backbone import TinySettings, load_backbone
from models.corelm.lm import corelm
from models.corelm.model import CoreLM
from tasks.core.checkpoints import save_checkpoint
from tasks.corpora.wikitext import detokenize
from tasks.evaluation.lm import lambada, perplexity
from tests.models.corelm.conftest import TEXTS
from tests.models.corelm.test_harness_equality import (
    CONTEXT,
    PAGES,
    PASSAGES,
    sharp_gpt2,
    write_tasks,
)

lm_eval = pytest.importorskip("lm_eval")

TASKS = ["project_lambada", "project_wikitext"]


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    """Local files only, a private datasets cache (for every test of the module)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("HF_HUB_OFFLINE", "1")
        env.setenv("HF_DATASETS_OFFLINE", "1")
        env.setenv("HF_DATASETS_CACHE", str(tmp_path_factory.mktemp("hf-datasets")))
        env.setenv("COREFREPRO_CHECKPOINT_ROOTS", str(tmp_path_factory.getbasetemp()))  # artifact
        yield


@pytest.fixture(scope="module")
def artifact(tmp_path_factory, offline):
    """(artifact folder, tasks folder, LAMBADA passages): a tiny CoreLM with gating saved as
    train_corelm saves it, on a backbone with large random weights (scores depend on every
    token of context; test_harness_equality.py says why)."""
    tmp = tmp_path_factory.mktemp("corefrepro")
    backbone = load_backbone("tiny", texts=TEXTS, tiny=TinySettings(vocab_size=300))
    backbone.model = sharp_gpt2(backbone)
    model = CoreLM(backbone.model, n_entities=3, gating=True, n_heads=2).eval()
    folder = tmp / "artifacts" / "corelm"
    save_checkpoint(folder / "best.pt", model, checkpoint_config(
        model, "tiny", mode="paper", ft_backbone="frozen"))  # fmt: skip
    save_artifact(folder, backbone)
    passages = PASSAGES + _greedy_passages(corelm(checkpoint=folder))
    return folder, write_tasks(tmp, passages), passages


def _greedy_passages(scorer) -> list[str]:
    """Passages whose last word is the model's greedy next token (so that accuracy is
    neither 0 nor 1): prefixes of the texts cut at a space, plus that token."""
    out = []
    for text in [*TEXTS[:3], *PASSAGES]:
        for cut in [k for k, c in enumerate(text) if c == " "][2:]:
            ids = scorer.tokenize(text[:cut])[-CONTEXT:]
            with torch.no_grad():
                best = int(scorer.model(torch.tensor([ids]), entity_mode="none")[0, -1].argmax())
            word = scorer.tokenizer.decode([best])
            if word.startswith(" ") and word[1:].strip() and not any(c.isspace() for c in word[1:]):
                out.append(text[:cut] + word)
            if len(out) == 4:
                return out
    return out


@pytest.fixture(scope="module")
def harness_results(artifact):
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    import models.harness  # noqa: F401 - registers "corefrepro"

    folder, tasks, _ = artifact
    return simple_evaluate(
        model="corefrepro",
        model_args=f"checkpoint={folder}",
        tasks=TASKS,
        task_manager=TaskManager(include_path=str(tasks), include_defaults=False),
        batch_size=2,
        device="cpu",
        log_samples=False,
    )["results"]


def test_lambada_through_the_harness_equals_the_project(artifact, harness_results):
    folder, _, passages = artifact
    ours = lambada(corelm(checkpoint=folder), passages)
    theirs = harness_results["project_lambada"]
    assert 0 < ours.accuracy < 1 and ours.accuracy == theirs["acc,none"]
    assert math.isclose(ours.perplexity, theirs["perplexity,none"], rel_tol=1e-6)


def test_wikitext_through_the_harness_equals_the_project(artifact, harness_results):
    scorer = corelm(checkpoint=artifact[0])
    texts = [detokenize(p) for p in PAGES]
    assert all(len(scorer.tokenize(t)) > 2 * CONTEXT for t in texts)  # several windows
    ours = perplexity(scorer, texts, originals=PAGES)
    theirs = harness_results["project_wikitext"]
    assert math.isclose(ours.word_perplexity, theirs["word_perplexity,none"], rel_tol=1e-6)
    assert math.isclose(ours.byte_perplexity, theirs["byte_perplexity,none"], rel_tol=1e-6)
    assert math.isclose(ours.bits_per_byte, theirs["bits_per_byte,none"], rel_tol=1e-6)


@pytest.mark.filterwarnings("ignore:'models.harness' found in sys.modules")
def test_the_command_line_runs_a_task_on_the_checkpoint(artifact, harness_results, tmp_path,
                                                        monkeypatch):  # fmt: skip
    """`python -m models.harness <lm_eval's arguments>`, run as __main__ in this
    process (lm_eval's CLI indexes its own ~15k task files too: ~10 s)."""
    folder, tasks, _ = artifact
    argv = ["--model", "corefrepro", "--model_args", f"checkpoint={folder}", "--tasks",
            "project_lambada", "--include_path", str(tasks), "--device", "cpu",
            "--output_path", str(tmp_path / "out")]  # fmt: skip
    monkeypatch.setattr(sys, "argv", ["harness.py", *argv])
    runpy.run_module("models.harness", run_name="__main__")
    (saved,) = (tmp_path / "out").rglob("results_*.json")
    results = json.loads(saved.read_text())["results"]["project_lambada"]
    assert results["acc,none"] == harness_results["project_lambada"]["acc,none"]
    assert math.isclose(results["perplexity,none"],
                        harness_results["project_lambada"]["perplexity,none"], rel_tol=1e-9)  # fmt: skip


def test_a_pipeline_error_ends_the_command_line_in_one_line(monkeypatch, capsys):
    import lm_eval.__main__

    from models import harness

    def fail():
        raise ArtifactError("artifacts/train_corelm/x: no such CoreLM artifact")

    monkeypatch.setattr(lm_eval.__main__, "cli_evaluate", fail)
    with pytest.raises(SystemExit) as stop:
        harness.main(["--model", "corefrepro"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: artifacts/train_corelm/x: no such CoreLM artifact\n"


def test_any_registered_lm_and_the_harness_own_options(artifact):
    from lm_eval.api.instance import Instance
    from lm_eval.api.registry import get_model

    from models.harness import HarnessError, HarnessLM

    assert get_model("corefrepro") is HarnessLM and get_model("hf").__name__ == "HFLM"
    lm = HarnessLM(checkpoint=str(artifact[0]), batch_size="auto", device="cuda:0")
    assert lm.lm.batch_size == 8  # "auto": the factory's default
    if not torch.cuda.is_available():
        assert lm.lm.device == torch.device("cpu")  # as the harness's hf model falls back
    # a factory that takes neither batch_size nor device: the harness's values are not passed
    table = HarnessLM(lm="table", probs={(): {"a": 0.5, "b": 0.5}}, batch_size=4, device="cpu")
    pairs = [Instance("loglikelihood", {}, ("a", " b a"), 0, ("t", 0, 1)),
             Instance("loglikelihood", {}, ("", "a"), 1, ("t", 0, 1))]  # fmt: skip
    assert table.loglikelihood(pairs) == [(2 * math.log(0.5), False), (math.log(0.5), True)]
    rolling = Instance("loglikelihood_rolling", {}, ("a b",), 0, ("t", 0, 1))
    assert table.loglikelihood_rolling([rolling]) == [2 * math.log(0.5)]
    with pytest.raises(HarnessError, match="generate_until .task t. is not supported"):
        table.generate_until([Instance("generate_until", {}, ("a", {}), 0, ("t", 0, 1))])
    with pytest.raises(HarnessError, match=r"task t, doc 0\) has arguments \(str, str, dict\)"):
        table.loglikelihood([Instance("loglikelihood", {}, ("a", " b", {"visual": 1}), 0,
                                      ("t", 0, 1))])  # fmt: skip
    with pytest.raises(HarnessError, match="batch_size 0 is not a positive integer"):
        HarnessLM(lm="table", probs={(): {"a": 1.0}}, batch_size=0)


def test_a_checkpoint_outside_the_artifacts_is_refused_as_everywhere(tmp_path, monkeypatch):
    """Issue #59 row 4: the harness adapter applies layout.check_checkpoint_path, links
    followed, before anything is unpickled."""
    from models.harness import HarnessLM
    from tasks.core.layout import REPO_ROOT, UnsafeNameError

    monkeypatch.delenv("COREFREPRO_CHECKPOINT_ROOTS", raising=False)
    outside = tmp_path / "corelm"
    outside.mkdir()
    with pytest.raises(UnsafeNameError, match="model_args checkpoint: .* outside the project's"):
        HarnessLM(checkpoint=str(outside))
    link = REPO_ROOT / "artifacts" / f".test-link-{tmp_path.name}"
    link.parent.mkdir(exist_ok=True)
    link.symlink_to(outside)
    try:
        with pytest.raises(UnsafeNameError, match="outside the project's"):
            HarnessLM(checkpoint=str(link))
    finally:
        link.unlink()
