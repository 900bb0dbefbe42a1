"""A stage-like flow that takes a while and logs when it starts and ends (for
tests/flows/test_stage_lock.py): `LOCK_PROBE_UNTIL=FILE python -m tests.flows.lock_probe ITEM
LOG` runs until FILE exists (the test says when, so a slow start of the other process under
load cannot end it first); without it, it ends at once."""

from __future__ import annotations

import os
import sys
import time

from flows.runtime import flow, run_cli


@flow(name="lock-probe")
def lock_probe(item: str, log: str) -> None:
    with open(log, "a") as fh:
        fh.write(f"start {item} {os.getpid()}\n")
    until = os.environ.get("LOCK_PROBE_UNTIL")
    deadline = time.time() + 120
    while until and not os.path.exists(until) and time.time() < deadline:
        time.sleep(0.05)
    with open(log, "a") as fh:
        fh.write(f"end {item} {os.getpid()}\n")


if __name__ == "__main__":
    run_cli(lock_probe, *sys.argv[1:3])
