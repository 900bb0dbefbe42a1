"""What every training loop shares: seeding, device choice, config-checked checkpoints, JSON.

A checkpoint carries the configuration it was trained under; loading it under any other
configuration is refused with the differences named, never silently mixed.
"""

from __future__ import annotations

import math
import pickle
import random
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tasks.core import storage
from tasks.core.errors import CorefreproError, first_line


class CheckpointMismatchError(CorefreproError):
    """A checkpoint trained under another configuration than the one requested."""


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds every CUDA device


def pick_device(setting: str) -> torch.device:
    if setting == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if setting == "cuda" and not torch.cuda.is_available():
        raise CorefreproError(
            "train device 'cuda' requested but torch.cuda.is_available() is False"
        )
    return torch.device(setting)


def config_diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    """Human-readable differences between a checkpoint's config (a) and the requested one (b)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += config_diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{prefix}{k}.")
        return out
    if a != b:
        show = lambda v: repr(v) if len(repr(v)) < 80 else repr(v)[:77] + "..."  # noqa: E731
        return [f"{prefix.rstrip('.')}: {show(a)} (checkpoint) != {show(b)} (requested)"]
    return []


def save_checkpoint(path: str | Path, model: torch.nn.Module, config: Mapping, **info: Any) -> None:
    """Atomically: a crash while saving leaves the previous checkpoint intact."""
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    # through a file object: torch.save(obj, <path>) names the zip's records after the
    # (random) temporary file, which would make equal checkpoints differ byte for byte
    with storage.atomic_path(path) as tmp, tmp.open("wb") as fh:
        torch.save({"config": dict(config), "state_dict": state, **info}, fh)


def _safe_load(path: Path) -> dict:
    """torch.load with weights_only=True: tensors and plain containers only, so a planted
    checkpoint cannot run code when it is unpickled (every checkpoint the project writes is
    made of tensors, dicts, lists, tuples, strings and numbers)."""
    if not zipfile.is_zipfile(path):  # torch.save writes zip archives; a cut one has no index
        raise CorefreproError(
            f"{path}: unreadable checkpoint (not a complete zip archive, "
            f"{path.stat().st_size} bytes): it is truncated or not a torch checkpoint. Remove it "
            "and rerun the stage that writes it."
        )
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise CorefreproError(
            f"{path}: refused: not a plain checkpoint of this project (it holds objects that "
            f"would run code when loaded: {first_line(exc)}). Retrain, or remove the file."
        ) from None
    except (RuntimeError, EOFError, KeyError, ValueError, OSError) as exc:
        # truncated (miniz: no central directory), empty (EOFError), not a torch file at all
        raise CorefreproError(
            f"{path}: unreadable checkpoint ({first_line(exc)}): it is truncated or not a "
            "torch checkpoint. Remove it and rerun the stage that writes it."
        ) from None


def load_checkpoint(
    path: str | Path, config: Mapping | None = None, *, train_hint: str = ""
) -> dict:
    """The checkpoint dict; with `config`, refuse one trained under any other configuration."""
    path = Path(path)
    if not path.exists():
        raise CorefreproError(f"{path}: no checkpoint (train the model first{train_hint})")
    ckpt = _safe_load(path)
    if config is not None:
        diffs = config_diff(ckpt.get("config", {}), dict(config))
        if diffs:
            raise CheckpointMismatchError(
                f"{path}: checkpoint was trained under a different configuration "
                f"({len(diffs)} difference(s)): "
                + "; ".join(diffs[:8])
                + ("; ..." if len(diffs) > 8 else "")
                + ". Retrain, or remove the checkpoint."
            )
    return ckpt


def jsonable(obj: Any) -> Any:
    """NaN/inf -> None (strict JSON), floats rounded for stable, readable files."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, float):
        return round(obj, 6) if math.isfinite(obj) else None
    return obj
