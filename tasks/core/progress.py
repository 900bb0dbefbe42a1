"""Progress with rate and ETA for long work (annotation shards, k-best documents, training
batches): a tqdm bar on a terminal; in logs (Prefect, CI, `dvc repro > log`) a line every
`every_s` seconds and one at the end, so a log never floods and never goes silent.

`STAGE_CLOCK`, the clock of a whole training stage: the stage plans every epoch of every seed (and
task) it will train (`STAGE_CLOCK.plan(n)`), the loop counts each epoch done, and each epoch's log
line ends with the stage's ETA (an upper bound: early stopping ends runs sooner).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("corefrepro.progress")


def _eta(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


class Progress:
    """`with Progress("annotate@gum-gold", total=200, unit="docs") as p: p.update(25)`."""

    def __init__(
        self,
        label: str,
        total: int | None,
        unit: str = "it",
        *,
        every_s: float = 30.0,
        logger: logging.Logger | None = None,
        bar: bool | None = None,
    ):
        self.label, self.total, self.unit, self.every_s = label, total, unit, every_s
        self.log = logger or log
        self.done = 0
        self.started = self._last = time.perf_counter()
        self._bar = None
        if sys.stderr.isatty() if bar is None else bar:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=label, unit=f" {unit}", leave=False,
                             dynamic_ncols=True)  # fmt: skip

    def line(self, note: str = "", now: float | None = None) -> str:
        """'label: 40/200 docs (25.0 docs/s, ETA 6 s)' — what a log line says."""
        now = time.perf_counter() if now is None else now
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        of = f"/{self.total}" if self.total is not None else ""
        eta = ""
        if self.total is not None and rate > 0 and self.done < self.total:
            eta = f", ETA {_eta((self.total - self.done) / rate)}"
        return f"{self.label}: {self.done}{of} {self.unit} ({rate:.1f} {self.unit}/s{eta}){note}"

    def update(self, n: int = 1, note: str = "") -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.perf_counter()
        if now - self._last >= self.every_s and self.total != self.done:
            self._last = now
            self.log.info(self.line(note, now))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        self.log.info("%s in %s", self.line(), _eta(time.perf_counter() - self.started))

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.close()
        elif self._bar is not None:
            self._bar.close()


class StageClock:
    """Epochs planned and done in this process's stage (each lane of stacked seeds counts)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.total = self.done = 0
        self.planned = False  # the stage planned its whole work (else: the runs started)
        self.started: float | None = None

    def plan(self, epochs: int) -> None:
        """The stage's whole work: `epochs` over all its seeds and tasks (before the first)."""
        self.total += int(epochs)
        self.planned = True

    def run_started(self, epochs: int, resumed: int = 0) -> None:
        """A run (fit) of `epochs` epochs, `resumed` of them already done by an earlier process
        (not this one's work); a stage that made no plan counts the runs as they start."""
        if not self.planned:
            self.total += int(epochs)
        self.total -= int(resumed)
        if self.started is None:
            self.started = time.perf_counter()

    def run_ended(self, planned: int, ran: int) -> None:
        """Epochs a run was planned for but did not need (early stopping, a time budget)."""
        self.total -= max(int(planned) - int(ran), 0)

    def tick(self, n: int = 1) -> None:
        self.done += n

    def line(self, now: float | None = None) -> str:
        """'stage 12/60 epochs, ETA 3 h 02 min' ('' before the first epoch is done)."""
        if not self.done or self.started is None or self.total <= 0:
            return ""
        now = time.perf_counter() if now is None else now
        left = max(self.total - self.done, 0)
        eta = f", ETA {_eta((now - self.started) / self.done * left)}" if left else ""
        return f"stage {self.done}/{self.total} epochs{eta}"


STAGE_CLOCK = StageClock()


def track(items: Iterable[T], label: str, total: int | None, unit: str = "it", **kw) -> Iterator[T]:
    """Iterate with a Progress (one update per item)."""
    with Progress(label, total, unit, **kw) as progress:
        for item in items:
            yield item
            progress.update()
