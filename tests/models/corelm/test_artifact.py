"""A trained CoreLM's artifact rebuilds it alone (models/corelm/artifact.py, issue #28): the
loaded model scores exactly as the one that was saved, and a folder that is not a CoreLM
artifact is refused in one line naming it."""

from __future__ import annotations

import re

import pytest
import torch

from models.corelm.artifact import ArtifactError, checkpoint_config, load_corelm, save_artifact
from models.corelm.backbone import TinySettings, load_backbone
from models.corelm.lm import CoreLMScorer, corelm
from models.corelm.model import CoreLM
from models.registry import language_model
from tasks.core.checkpoints import save_checkpoint
from tasks.evaluation.lm import LMRequestError, lambada, perplexity
from tests.models.corelm.conftest import TEXTS

STORY = "Mary went to the kitchen . She picked up the apple . Mary ate it ."
WORDS = STORY.split()
ENTITIES = [1, 0, 0, 2, 2, 0, 1, 0, 0, 3, 3, 0, 1, 0, 3, 0]
GATINGS = {
    "ft": {"gating": False},
    "corelm": {"gating": True, "n_heads": 2, "flow_rate": 0.3, "gate": "entity_ceiling",
               "norm": "entity_path", "mention_mean": "inclusive"},
    "table": {"gating": True, "n_heads": 4, "entity_vectors": "table"},
}  # fmt: skip


def _saved(tmp_path, kind: str, *, untie: bool = False) -> tuple[CoreLMScorer, object]:
    """(a scorer of the in-memory model, its artifact folder): a tiny CoreLM whose every
    weight is random (not the initial values a rebuilt module would have anyway)."""
    backbone = load_backbone("tiny", texts=TEXTS, tiny=TinySettings(
        vocab_size=300, n_layer=1, n_embd=32, n_head=2, n_positions=24))  # fmt: skip
    model = CoreLM(backbone.model, n_entities=3, **GATINGS[kind])
    if untie:  # cached mode: a head of its own, which the saved config must say
        model.untie_head()
    with torch.no_grad():
        torch.manual_seed(0)
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    model.eval()
    folder = tmp_path / "artifacts" / "train_corelm" / kind
    save_checkpoint(folder / "best.pt", model, checkpoint_config(
        model, "tiny", mode="cached" if untie else "paper", ft_backbone="frozen"))  # fmt: skip
    save_artifact(folder, backbone)
    scorer = CoreLMScorer(model, backbone.tokenizer, bos_id=backbone.prefix_id,
                          max_length=backbone.max_length)  # fmt: skip
    return scorer, folder


def _scores(scorer: CoreLMScorer) -> tuple:
    long = " ".join([STORY] * 3)  # beyond the window: several rolling windows
    rolling = tuple(s.loglikelihood for s in scorer.loglikelihood_rolling([STORY, long]))
    cloze = lambada(scorer, [STORY, "John travelled to the garden . Then he dropped the football"])
    return rolling, cloze.loglikelihoods, cloze.correct


@pytest.mark.parametrize(("kind", "untie"), [("ft", False), ("corelm", False), ("table", False),
                                             ("corelm", True)])  # fmt: skip
def test_a_loaded_artifact_scores_as_the_saved_model(tmp_path, kind, untie):
    saved, folder = _saved(tmp_path, kind, untie=untie)
    loaded = corelm(checkpoint=folder)
    assert loaded.name == kind and loaded.max_length == 24 and loaded.bos_id == saved.bos_id
    assert loaded.tokenize(STORY) == saved.tokenize(STORY)
    assert _scores(loaded) == _scores(saved)
    if kind != "ft":  # and with test-time entities (the gating layer's settings came back)
        mode = "table" if kind == "table" else "running_mean"
        with_entities = []
        for scorer in (CoreLMScorer(saved.model, saved.tokenizer, bos_id=saved.bos_id,
                                    max_length=24, entity_mode=mode),
                       corelm(checkpoint=folder / "best.pt", entity_mode=mode)):  # fmt: skip
            scorer.annotate(WORDS, ENTITIES)
            with_entities.append(perplexity(scorer, [STORY]).loglikelihood)
            assert scorer.misses == 0
        assert with_entities[0] == with_entities[1] != _scores(saved)[0][0]


def test_the_registry_builds_a_scorer_from_a_checkpoint(tmp_path):
    saved, folder = _saved(tmp_path, "corelm")
    lm = language_model("corelm", checkpoint=str(folder), max_length=8, batch_size=2, name="x")
    assert (lm.name, lm.max_length, lm.batch_size) == ("x", 8, 2)
    assert isinstance(language_model("corelm", model=saved.model, tokenizer=saved.tokenizer,
                                     bos_id=0), CoreLMScorer)  # fmt: skip
    with pytest.raises(LMRequestError, match="give checkpoint=<a train_corelm artifact"):
        language_model("corelm", max_length=8)
    with pytest.raises(LMRequestError, match="cannot be given with it"):
        corelm(checkpoint=folder, model=saved.model)
    with pytest.raises(LMRequestError, match=r"max_length 25 outside \[1, 24\]"):
        corelm(checkpoint=folder, max_length=25)
    with pytest.raises(LMRequestError, match="entity_mode 'context_mean'"):
        corelm(checkpoint=folder, entity_mode="context_mean")
    assert corelm(checkpoint=folder, entity_mode=None).entity_mode == "none"  # model_args' none


def test_what_is_not_a_corelm_artifact_is_refused_naming_it(tmp_path):
    _, folder = _saved(tmp_path, "corelm")
    missing = tmp_path / "artifacts" / "train_corelm" / "nothing"
    with pytest.raises(ArtifactError, match=re.escape(f"{missing}: no such CoreLM artifact")):
        load_corelm(missing)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ArtifactError, match="notes.txt: not a CoreLM artifact"):
        load_corelm(tmp_path / "notes.txt")
    with pytest.raises(ArtifactError, match=re.escape(f"{tmp_path}: no best.pt")):
        load_corelm(tmp_path)
    best = folder / "best.pt"
    state = torch.load(best, weights_only=True)
    foreign = tmp_path / "artifacts" / "foreign"
    save_artifact(foreign, load_backbone("tiny", texts=TEXTS, tiny=TinySettings(vocab_size=300)))
    torch.save({"config": {"hidden": 8}, "state_dict": {}}, foreign / "best.pt")
    with pytest.raises(ArtifactError, match=r"foreign/best.pt: not a CoreLM checkpoint \(its "):
        load_corelm(foreign)
    old = {k: v for k, v in state["config"].items() if k not in ("n_heads", "flow_rate")}
    torch.save({**state, "config": old}, foreign / "best.pt")
    with pytest.raises(ArtifactError, match=r"lacks the gating layer's \['n_heads', 'flow_rate'\]"):
        load_corelm(foreign)
    torch.save(state, foreign / "best.pt")  # a config that fits, weights of another shape
    with pytest.raises(ArtifactError, match="its weights do not fit the model rebuilt"):
        load_corelm(foreign)
    (folder / "backbone" / "config.json").write_text("{not json")
    with pytest.raises(ArtifactError, match="backbone: cannot build the backbone from its config"):
        load_corelm(folder)
    for path in (folder / "backbone").iterdir():
        path.unlink()
    (folder / "backbone").rmdir()
    with pytest.raises(ArtifactError, match=re.escape(f"{folder}: no backbone/")):
        load_corelm(folder)
