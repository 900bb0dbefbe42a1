"""Deterministic splits and seeded draws keyed by names, not by position: a corpus reader
carving dev out of train, the graph stage ordering segments and MAGE carving dev documents all
get the same choice on every host and whatever order the rows arrive in."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any


def stable_fraction(key: str, seed: int) -> float:
    """A number in [0, 1) fixed by (key, seed): split assignment that survives reordering."""
    digest = hashlib.sha256(f"{seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def carve_dev(keys: Sequence[str], fraction: float, seed: int) -> set[str]:
    """Choose ~fraction of keys (at least one when fraction > 0) as dev, deterministically."""
    if fraction <= 0 or not keys:
        return set()
    ranked = sorted(keys, key=lambda k: stable_fraction(k, seed))
    n = max(1, round(fraction * len(keys)))
    return set(ranked[:n])


def seeded_rng(*parts: Any) -> random.Random:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
