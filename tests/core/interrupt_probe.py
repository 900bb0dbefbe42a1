"""A stand-in for `dvc exp run` (tests/core/test_presets.py): `python -m
tests.core.interrupt_probe DIR` writes DIR/ready, then waits (at most 120 s); on SIGINT it
writes DIR/cleaned, as DVC finishes its own clean-up, and exits 130."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

# Ctrl-C's default: a shell without job control starts background commands with SIGINT ignored
signal.signal(signal.SIGINT, signal.default_int_handler)
folder = Path(sys.argv[1])
try:
    (folder / "ready").touch()
    deadline = time.time() + 120
    while time.time() < deadline:
        time.sleep(0.05)
except KeyboardInterrupt:
    (folder / "cleaned").touch()
    raise SystemExit(130) from None
