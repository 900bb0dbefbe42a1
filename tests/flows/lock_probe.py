"""A stage-like flow that takes a while and logs when it starts and ends (for
tests/flows/test_stage_lock.py): `LOCK_PROBE_SECONDS=2 python -m tests.flows.lock_probe ITEM LOG`."""

from __future__ import annotations

import os
import sys
import time

from flows.runtime import flow, run_cli


@flow(name="lock-probe")
def lock_probe(item: str, log: str) -> None:
    with open(log, "a") as fh:
        fh.write(f"start {item} {os.getpid()}\n")
    time.sleep(float(os.environ.get("LOCK_PROBE_SECONDS", "0")))
    with open(log, "a") as fh:
        fh.write(f"end {item} {os.getpid()}\n")


if __name__ == "__main__":
    run_cli(lock_probe, *sys.argv[1:3])
