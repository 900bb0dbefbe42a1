"""Every registered model family keeps the contract (tasks/training/family.py): one name
from dvc.yaml to the flow module, the params section, MLflow and the output paths, a recipe
the shared loop can drive, a report section."""

from __future__ import annotations

import importlib
import inspect

import pytest
import yaml

from models import registry
from tasks.core.errors import CorefreproError
from tasks.core.settings import parse_settings
from tasks.core.tracking import PAPERS
from tasks.training.family import SeedTrainer
from tasks.training.loop import Recipe
from tests.conftest import REPO_ROOT

RECIPE_METHODS = [n for n, v in vars(Recipe).items() if inspect.isfunction(v)]
# families whose stage finds them in the registry and trains a seed through the one
# signature (tasks/training/family.py SeedTrainer): all of them
SEED_TRAINER = list(inspect.signature(SeedTrainer.__call__).parameters)[1:]


@pytest.mark.parametrize("name", registry.names())
def test_family_is_wired_under_one_stage_name(name):
    """A family with a flow module of its own (the four paper families) or the generic family
    stage (flows/train.py: a new family's folder, registry line and params section only)."""
    family = registry.get(name)
    stage = family.stage
    assert family.name == name and stage == f"train_{name}"
    stages = yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"]
    spec = stages[stage].get("do", stages[stage])
    own_flow = (REPO_ROOT / "flows" / f"{stage}.py").is_file()
    generic = f"python -m flows.train {name} --item ${{item}}"
    assert (
        spec["cmd"].startswith(f"python -m flows.{stage} ") if own_flow else spec["cmd"] == generic
    )
    assert any(d.startswith(f"models/{name}/") for d in spec["deps"])
    assert "tasks/training/loop.py" in spec["deps"]  # trained through the one loop
    outs = [next(iter(o)) if isinstance(o, dict) else o for o in spec["outs"]]
    assert any(o.startswith(f"artifacts/{stage}/") for o in outs)
    assert any(o.startswith(f"metrics/{stage}/") for o in outs)  # metrics: plain outputs
    assert all(o.startswith((f"artifacts/{stage}/", f"metrics/{stage}/")) for o in outs)
    assert PAPERS.get(stage, family.paper) == family.paper  # the MLflow experiment's tag
    params = yaml.safe_load((REPO_ROOT / "params.yaml").read_text())
    parse_settings(family.settings, params[stage], stage)  # the shipped section is valid
    assert list(inspect.signature(family.train_seed).parameters) == SEED_TRAINER
    missing = [m for m in RECIPE_METHODS if not callable(getattr(family.recipe, m, None))]
    assert not missing, f"{family.recipe.__name__} lacks {missing}"
    assert f"tasks.report.{name}" in registry.reports()  # its section of the report
    if own_flow:
        flow = importlib.import_module(f"flows.{stage}")
        assert isinstance(flow.settings(), family.settings)  # the stage parses its section
        assert flow.FAMILY is family  # the stage trains the family the registry names
        report = importlib.import_module(f"tasks.report.{name}")  # the paper's tables
        assert report.SECTION.source == name and callable(report.render)
    else:  # the generic stage loads the data through the family, its report is family_section
        assert family.prepare_data is not None and "items" in params[stage]


def test_unknown_family_is_named_with_the_known_ones():
    with pytest.raises(
        CorefreproError, match="unknown model family 'entity'; known: coref, .*mage"
    ):
        registry.get("entity")
