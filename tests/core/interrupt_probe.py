"""A stand-in for `dvc exp run` (tests/core/test_presets.py): `python -m
tests.core.interrupt_probe DIR` writes DIR/ready, then waits (at most 120 s); on SIGINT it
writes DIR/cleaned, as DVC finishes its own clean-up, and exits 130."""

from __future__ import annotations

import sys
import time
from pathlib import Path

folder = Path(sys.argv[1])
try:
    (folder / "ready").touch()
    deadline = time.time() + 120
    while time.time() < deadline:
        time.sleep(0.05)
except KeyboardInterrupt:
    (folder / "cleaned").touch()
    raise SystemExit(130) from None
