"""Flow `reproduce`: the whole DVC pipeline, one Prefect task per DVC stage, in DVC's order.

    python -m flows.reproduce                      # run once (dvc repro, stage by stage)
    python -m flows.reproduce --serve --cron "0 3 * * *"   # a deployment on a schedule

Each stage runs `dvc repro --single-item <stage>` so DVC still decides what is up to date
(an up-to-date stage is a no-op) and records dvc.lock; Prefect adds retries and the UI.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys

from flows.runtime import Runner, flow, run_cli, task
from tasks.core.config import REPO_ROOT

log = logging.getLogger("corefrepro.reproduce")


def planned_stages(targets: list[str] | None = None) -> list[str]:
    """Stage addresses (e.g. 'normalize@babi') in the order `dvc repro` would run them."""
    from dvc.repo import Repo
    from dvc.repo.reproduce import plan_repro

    with Repo(str(REPO_ROOT)) as repo:
        graph = repo.index.graph
        stages = None
        if targets:
            stages = [s for t in targets for s in repo.stage.collect(t)]
        return [s.addressing for s in plan_repro(graph, stages) if s.cmd]


@task(name="dvc-stage", retries=2, retry_delay_seconds=10)
def run_stage(stage: str, force: bool = False) -> str:
    cmd = [sys.executable, "-m", "dvc", "repro", "--single-item", stage] + (
        ["--force"] if force else []
    )
    log.info("$ %s", " ".join(cmd[1:]))
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    if proc.stdout.strip():
        log.info("%s", proc.stdout.strip())
    if proc.returncode != 0:
        raise RuntimeError(
            f"dvc stage {stage} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}"
        )
    return proc.stdout


@flow(name="reproduce", runner=Runner("threads", 1))
def reproduce(targets: list[str] | None = None, force: bool = False) -> list[str]:
    stages = planned_stages(targets)
    log.info("%d stages: %s", len(stages), ", ".join(stages))
    for stage in stages:
        run_stage(stage, force=force)
    return stages


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="stages to reproduce (default: all)")
    parser.add_argument("--force", action="store_true", help="rerun stages even if up to date")
    parser.add_argument("--serve", action="store_true", help="serve as a Prefect deployment")
    parser.add_argument("--cron", default=None, help='schedule for --serve, e.g. "0 3 * * *"')
    args = parser.parse_args(argv)
    if args.serve:
        reproduce.prefect_flow.serve(
            name="corefrepro-reproduce",
            cron=args.cron,
            parameters={"targets": args.targets or None, "force": args.force},
        )
    else:
        run_cli(reproduce, args.targets or None, force=args.force)


if __name__ == "__main__":
    main()
