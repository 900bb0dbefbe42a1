"""Flow `reproduce`: the whole DVC pipeline, one Prefect task per DVC stage, in DVC's order.

    python -m flows.reproduce                      # run once (dvc repro, stage by stage)
    python -m flows.reproduce --serve --cron "0 3 * * *"   # a deployment on a schedule
    prefect deployment run reproduce/reproduce       # on a worker of the pool (prefect.yaml)

Each stage runs `dvc repro --single-item <stage>` so DVC still decides what is up to date
(an up-to-date stage is a no-op) and records dvc.lock; Prefect adds retries and the UI. This is
where Prefect wraps whole DVC stages (docs/operations.md "What Prefect wraps"): under a server
each stage is a Prefect task run named as the stage, its output forwarded to the run's log.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys

from flows.runtime import PARENT_TASK_RUN_ENV, Runner, flow, orchestrated, run_cli, task
from tasks.core.config import REPO_ROOT

log = logging.getLogger("corefrepro")


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


def run_logger() -> logging.Logger | logging.LoggerAdapter:
    """The Prefect run's logger inside a Prefect flow or task run (its lines reach the run's log
    in the UI), the 'corefrepro' logger otherwise."""
    if orchestrated():
        from prefect.context import FlowRunContext, TaskRunContext
        from prefect.logging import get_run_logger

        if TaskRunContext.get() or FlowRunContext.get():
            return get_run_logger()
    return log


def _stage_env() -> dict[str, str]:
    """The stage command's environment: under Prefect, the id of this task run (the stage flow
    becomes its subflow, flows/runtime.py) and the API it talks to (so the stage is orchestrated
    too); not the PREFECT__* variables a worker or serve sets for this run (its flow run id,
    deployment, entrypoint), which name this run, not the stage's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT__")}
    env.pop(PARENT_TASK_RUN_ENV, None)
    if orchestrated():
        from prefect.context import TaskRunContext
        from prefect.settings import PREFECT_API_URL

        ctx = TaskRunContext.get()
        api = PREFECT_API_URL.value()
        if ctx and api:
            env[PARENT_TASK_RUN_ENV] = str(ctx.task_run.id)
            env.setdefault("PREFECT_API_URL", api)
    return env


_CLOCK = re.compile(r"^\d\d:\d\d:\d\d ")


_LEVEL = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL)\b:?")
_CONTINUATION = re.compile(r"^(\s|Traceback|[\w.]+(Error|Exception)\b)")


def _level(line: str, previous: int) -> int:
    """The level of a forwarded line: a stage's logging lines (`WARNING corefrepro...`), DVC's
    `ERROR: ...` and a stage's `error: ...` (run_cli) keep theirs in Prefect's log; a traceback's
    lines keep the level of the line that began it."""
    if match := _LEVEL.match(line):
        return logging.getLevelName(match.group(1))
    if line.startswith("error:"):
        return logging.ERROR
    if _CONTINUATION.match(line):
        return max(previous, logging.ERROR if line.startswith("Traceback") else logging.INFO)
    return logging.INFO


def _failure_reason(lines: list[str]) -> str:
    """The line saying why: the stage's own `error: ...` (run_cli), else DVC's ERROR, else the
    last line."""
    for prefix in ("error:", "ERROR"):
        found = [ln for ln in lines if ln.startswith(prefix)]
        if found:
            return found[-1]
    return lines[-1] if lines else "no output"


@task(name="dvc-stage", task_run_name="{stage}", retries=2, retry_delay_seconds=10)
def run_stage(stage: str, force: bool = False) -> str:
    """`dvc repro --single-item <stage>`, its output forwarded line by line to the run's log."""
    logger = run_logger()
    cmd = [sys.executable, "-m", "dvc", "repro", "--single-item", stage] + (
        ["--force"] if force else []
    )
    logger.info("$ dvc %s", " ".join(cmd[3:]))
    lines: list[str] = []
    with subprocess.Popen(
        cmd,
        cwd=REPO_ROOT,
        env=_stage_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    ) as proc:
        assert proc.stdout is not None
        level = logging.INFO
        for raw in proc.stdout:
            line = _CLOCK.sub("", raw.rstrip())  # Prefect stamps each record itself
            if line:
                lines.append(line)
                level = _level(line, level)
                logger.log(level, "%s", line)
    if proc.returncode != 0:
        reason = _failure_reason(lines)
        logger.error("%s failed (exit %d): %s", stage, proc.returncode, reason)
        raise RuntimeError(f"dvc stage {stage} failed (exit {proc.returncode}): {reason}")
    return "\n".join(lines)


@flow(name="reproduce", runner=Runner("threads", 1))
def reproduce(targets: list[str] | None = None, force: bool = False, retries: int = 2) -> list[str]:
    stages = planned_stages(targets)
    run_logger().info("%d stages: %s", len(stages), ", ".join(stages))
    stage_task = _stage_task(retries)
    for stage in stages:
        stage_task(stage, force=force)
    return stages


def _stage_task(retries: int):
    """run_stage with `retries`: under a Prefect server a Prefect task, so each DVC stage is a
    task run named as the stage (the one place Prefect tasks are made); else the plain step."""
    if not orchestrated():
        return task(run_stage.fn, name=run_stage.name, task_run_name=run_stage.task_run_name,
                    retries=retries, retry_delay_seconds=run_stage.retry_delay_seconds)  # fmt: skip
    from prefect import task as prefect_task
    from prefect.cache_policies import NO_CACHE

    # DVC owns caching; Prefect's input hashing would only cost time
    return prefect_task(run_stage.fn, name=run_stage.name, task_run_name=run_stage.task_run_name,
                        retries=retries, retry_delay_seconds=run_stage.retry_delay_seconds,
                        cache_policy=NO_CACHE)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="stages to reproduce (default: all)")
    parser.add_argument("--force", action="store_true", help="rerun stages even if up to date")
    parser.add_argument("--retries", type=int, default=2, help="retries of a failed stage")
    parser.add_argument("--serve", action="store_true", help="serve as a Prefect deployment")
    parser.add_argument("--cron", default=None, help='schedule for --serve, e.g. "0 3 * * *"')
    args = parser.parse_args(argv)
    if args.serve:
        reproduce.deployed.serve(
            name="corefrepro-reproduce",
            cron=args.cron,
            parameters={
                "targets": args.targets or None,
                "force": args.force,
                "retries": args.retries,
            },
        )
    else:
        run_cli(reproduce, args.targets or None, force=args.force, retries=args.retries)


if __name__ == "__main__":
    main()
