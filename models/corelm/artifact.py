"""A trained CoreLM as a folder that rebuilds it alone (issue #28): what train_corelm leaves in
artifacts/train_corelm/<model>/ is enough to score the model anywhere, without params.yaml,
the training corpora or the backbone's source (the tiny backbone's tokenizer is trained on
the training texts; GPT-2's comes from the mirror).

- best.pt: every weight of the CoreLM (backbone included) and, in its config
  (`checkpoint_config`), what the module's shape depends on: gating or not, the gating
  layer's heads and flow rate, the gate form and norm, the entity vectors, the number of
  entities. Written by the training loop for ft and corelm; for zeroshot (nothing trained)
  by `save_artifact`, so that every model of the stage loads the same way.
- backbone/: the backbone's transformers config and its tokenizer (`save_pretrained`); no
  weights -- they are in best.pt once.

`load_corelm(folder or best.pt)` rebuilds the model from those two: the backbone from its
config (`from_config`), the CoreLM around it from the checkpoint's config, then the weights.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from models.corelm.backbone import Backbone
from models.corelm.model import CoreLM
from models.pretrained import refuse_remote_code
from tasks.core.checkpoints import load_checkpoint, save_checkpoint
from tasks.core.errors import CorefreproError, first_line
from tasks.core.storage import atomic_dir

BEST = "best.pt"
BACKBONE = "backbone"
# what load_corelm reads of best.pt's config (checkpoint_config writes them all)
REQUIRED = ("backbone", "gating", "n_entities")
GATING_KEYS = ("n_heads", "flow_rate", "dropout", "gate", "entity_vectors", "mention_mean")


class ArtifactError(CorefreproError):
    """A folder that is not a loadable CoreLM artifact (the message names it and says why)."""


@dataclass
class TrainedCoreLM:
    """A CoreLM loaded from its artifact, with its backbone (tokenizer, prefix token)."""

    model: CoreLM
    backbone: Backbone  # backbone.model is model.backbone
    config: dict[str, Any]  # best.pt's config
    folder: Path

    @property
    def name(self) -> str:
        """The stage item the folder holds (zeroshot, ft, corelm)."""
        return self.folder.name


def checkpoint_config(model: CoreLM, backbone: str, *, mode: str, ft_backbone: str | None
                      ) -> dict[str, Any]:  # fmt: skip
    """best.pt's config: the training setup it is checked against (tasks/training/loop.py
    load_best) and everything `load_corelm` needs to rebuild the module."""
    gating = model.gating
    return {"backbone": backbone, "gating": gating is not None,
            "n_entities": model.n_entities, "mode": mode,
            "entity_vectors": model.entity_vectors if gating else None,
            "mention_mean": model.mention_mean if gating else None,
            "gate": [gating.gate_form, gating.norm] if gating else None,
            "n_heads": gating.n_heads if gating else None,
            "flow_rate": gating.flow_rate if gating else None,
            "dropout": gating.dropout if gating else None,
            "ft_backbone": ft_backbone if gating is None else None}  # fmt: skip


def save_artifact(folder: str | Path, backbone: Backbone, model: CoreLM | None = None,
                  config: dict[str, Any] | None = None) -> None:  # fmt: skip
    """backbone/ (config + tokenizer) into *folder*; with *model* and *config*, best.pt too
    (zeroshot: no training loop wrote one). Call it after training: cached mode unties the
    head, which the saved config must say."""
    folder = Path(folder)
    with atomic_dir(folder / BACKBONE) as tmp:
        backbone.model.config.save_pretrained(tmp)
        backbone.tokenizer.save_pretrained(tmp)
    if model is not None and config is not None:
        save_checkpoint(folder / BEST, model, config, epoch=0)


def artifact_folder(path: str | Path) -> Path:
    """The artifact folder named by *path*: the folder itself, or its best.pt."""
    path = Path(path)
    if path.is_file() and path.name == BEST:
        return path.parent
    if not path.exists():
        raise ArtifactError(f"{path}: no such CoreLM artifact (train_corelm writes "
                            "artifacts/train_corelm/<model>/; run dvc repro train_corelm)")  # fmt: skip
    if not path.is_dir():
        raise ArtifactError(f"{path}: not a CoreLM artifact (give its folder or its {BEST})")
    return path


def load_corelm(path: str | Path, *, device: str | torch.device = "cpu") -> TrainedCoreLM:
    """The CoreLM saved in *path* (an artifact folder or its best.pt), in eval mode on *device*."""
    folder = artifact_folder(path)
    best, source = folder / BEST, folder / BACKBONE
    if not best.is_file():
        raise ArtifactError(f"{folder}: no {BEST}: not a trained CoreLM artifact")
    if not source.is_dir():
        raise ArtifactError(f"{folder}: no {BACKBONE}/ (the backbone's config and tokenizer, "
                            "written by train_corelm since issue #28): retrain the model")  # fmt: skip
    ckpt = load_checkpoint(best)
    config = _corelm_config(best, ckpt)
    backbone = _backbone(source, config["backbone"])
    model = _corelm(backbone.model, config)
    try:
        model.load_state_dict(ckpt["state_dict"])
    except (RuntimeError, KeyError, TypeError) as exc:
        raise ArtifactError(f"{best}: its weights do not fit the model rebuilt from "
                            f"{BACKBONE}/ and its config ({first_line(exc)})") from None  # fmt: skip
    model.to(device).eval()
    return TrainedCoreLM(model, backbone, config, folder)


def _corelm_config(best: Path, ckpt: object) -> dict[str, Any]:
    """best.pt's config, if it is a CoreLM's that says how to rebuild the module."""
    config = ckpt.get("config") if isinstance(ckpt, dict) else None
    if not isinstance(config, dict) or not isinstance(ckpt.get("state_dict"), dict):
        raise ArtifactError(f"{best}: not a CoreLM checkpoint (no config and state_dict)")
    missing = [k for k in REQUIRED if k not in config]
    if missing:
        raise ArtifactError(f"{best}: not a CoreLM checkpoint (its config has no {missing})")
    absent = [k for k in GATING_KEYS if config["gating"] and config.get(k) is None]
    if absent:
        raise ArtifactError(f"{best}: its config lacks the gating layer's {absent} (a "
                            "checkpoint from before issue #28): retrain the model")  # fmt: skip
    return config


def _backbone(source: Path, name: str) -> Backbone:
    """The backbone's architecture (random weights: best.pt holds the trained ones) and its
    tokenizer, from backbone/; a folder asking to run its own code is refused."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    refuse_remote_code(source)
    hf_config = _read(source, "config", lambda: AutoConfig.from_pretrained(
        str(source), trust_remote_code=False))  # fmt: skip
    model = _read(source, "config", lambda: AutoModelForCausalLM.from_config(
        hf_config, dtype=torch.float32, trust_remote_code=False))  # fmt: skip
    tokenizer = _read(source, "tokenizer", lambda: AutoTokenizer.from_pretrained(
        str(source), trust_remote_code=False))  # fmt: skip
    return Backbone(name, model.eval(), tokenizer)


def _read(source: Path, what: str, load: Callable[[], Any]) -> Any:
    """`load()`, with a damaged or foreign file as one line naming the folder (transformers
    raises OSError, JSONDecodeError, ValueError, ... with a traceback)."""
    try:
        return load()
    except Exception as exc:  # noqa: BLE001 - any failure to read the files is the user's to fix
        raise ArtifactError(f"{source}: cannot build the backbone from its {what} "
                            f"({type(exc).__name__}: {first_line(exc)}); retrain the model "
                            "or restore the folder (dvc checkout)") from None  # fmt: skip


def _corelm(backbone: torch.nn.Module, config: dict[str, Any]) -> CoreLM:
    if not config["gating"]:
        return CoreLM(backbone, config["n_entities"], gating=False)
    gate, norm = config["gate"]
    return CoreLM(backbone, config["n_entities"], gating=True, n_heads=config["n_heads"],
                  flow_rate=config["flow_rate"], dropout=config["dropout"], gate=gate,
                  norm=norm, entity_vectors=config["entity_vectors"],
                  mention_mean=config["mention_mean"])  # fmt: skip


__all__ = [
    "ArtifactError",
    "TrainedCoreLM",
    "artifact_folder",
    "checkpoint_config",
    "load_corelm",
    "save_artifact",
]
