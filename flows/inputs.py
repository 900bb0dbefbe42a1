"""Stage `inputs_<stage>`: the digest of exactly the data one training item reads.

    python -m flows.inputs train_coref --item asl       # -> data/inputs/train_coref/asl.json
    python -m flows.inputs train_mage --item ga-mage16  # -> data/inputs/train_mage/ga-mage16.json

Why (issue #54.3): DVC cannot list a params.yaml list as deps (train_coref.corpora, a MAGE
model entry's own graph run), so a training item used to depend on whole folders (adding
LAMBADA retrained coreference) or not at all on what it read (a model entry's `data:` run).
This stage depends on the folders and on the settings that choose from them; its output
holds the sha256 of just the item's inputs, and the training item depends on that file: it
reruns when, and only when, what it reads changes. The items' reads come from the training
stages' own plans (flows/train_coref.py, flows/train_mage.py, flows/train_stanza_coref.py,
flows/train_entitynlm.py, flows/train_corelm.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from flows.runtime import flow, run_cli
from tasks.core import config, storage
from tasks.core.config import resolve_path
from tasks.core.errors import CorefreproError

INPUTS_ROOT = "data/inputs"


def coref_inputs(item: str) -> list[Path]:
    """train_coref@<encoder>: its corpora's documents and, when the encoder reads cached LM
    features, their feature files (flows/train_coref.py prepare_data)."""
    import flows.train_coref as stage
    from models.coref.features import features_dir
    from tasks.core.layout import docs_dir

    cfg = stage.settings()
    mcfg = stage.resolve_model(stage.encoder_model_cfg(cfg, item))
    paths = [docs_dir(c) for c in cfg.corpora]
    if mcfg.lm_features is not None and mcfg.lm_cache:
        paths += [features_dir(mcfg.lm_features, c) for c in cfg.corpora]
    return paths


def stanza_coref_inputs(item: str) -> list[Path]:
    """train_stanza_coref: its corpora's documents (flows/train_stanza_coref.py)."""
    import flows.train_stanza_coref as stage
    from tasks.core.layout import docs_dir

    return [docs_dir(c) for c in stage.settings().corpora]


def mage_inputs(item: str) -> list[Path]:
    """train_mage@<model>-<task>: the graph table of the model entry's graph run (its own
    `data:` or train_mage.data; flows/train_mage.py plan), the same for every task."""
    import flows.train_mage as stage

    return [stage.model_graphs(stage.settings(), item)]


def entitynlm_inputs(item: str) -> list[Path]:
    """train_entitynlm (every model): the EntityNLM views of its runs (flows/train_entitynlm.py)."""
    import flows.train_entitynlm as stage

    return list(stage.view_files(stage.settings()).values())


def corelm_inputs(item: str) -> list[Path]:
    """train_corelm (every model): its training views and evaluation corpora
    (flows/train_corelm.py input_paths)."""
    import flows.train_corelm as stage

    return stage.input_paths(stage.settings())


PLANS = {"train_coref": coref_inputs, "train_stanza_coref": stanza_coref_inputs,
         "train_mage": mage_inputs, "train_entitynlm": entitynlm_inputs,
         "train_corelm": corelm_inputs}  # fmt: skip


def digest(path: Path) -> str:
    """sha256 of a file, or of a folder's files (their relative paths and contents, sorted)."""
    if path.is_file():
        return storage.sha256_of(path)
    if not path.is_dir():
        raise CorefreproError(f"{path}: missing (run the stage that makes it first)")
    h = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and ".tmp" not in p.parts):
        h.update(f"{file.relative_to(path).as_posix()}\0{storage.sha256_of(file)}\n".encode())
    return h.hexdigest()


def inputs_path(stage: str, item: str | None) -> Path:
    root = resolve_path(INPUTS_ROOT)
    return root / stage / f"{item}.json" if item else root / f"{stage}.json"


@flow(name="inputs")
def inputs(stage: str, item: str | None = None) -> dict[str, str]:
    if stage not in PLANS:
        raise CorefreproError(f"inputs: no plan for stage {stage!r}; known: {sorted(PLANS)}")
    found = {
        p.relative_to(config.REPO_ROOT).as_posix(): digest(p) for p in PLANS[stage](item or "")
    }
    storage.write_text(inputs_path(stage, item), json.dumps(found, indent=1, sort_keys=True) + "\n")
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stage", choices=sorted(PLANS))
    parser.add_argument("--item", default=None, help="the stage's item (encoder, model)")
    args = parser.parse_args(argv)
    run_cli(inputs, args.stage, args.item)


if __name__ == "__main__":
    main()
