"""One preset per paper table: the `-S` overrides of `dvc exp run` kept in a file, at CPU
scale and at paper scale, with what they cost.

Why files of overrides and not DVC's Hydra composition: Hydra would regenerate params.yaml
from conf/ on every `dvc exp run`, dropping the comments that document every setting there.
A preset is the list a user would type -- DVC's own override grammar (`key=value`,
`+key=value` to add a key), applied by DVC's own `dvc exp run -S` -- so an experiment run from
a preset is an ordinary DVC experiment (`dvc exp show` lists it with its parameters) and
params.yaml stays the one documented source.

presets/<name>.yaml, named as the table's id in tasks/report/paper_results.yaml (the report's
"Reproduce:" line names the preset):

    title: EntityNLM Table 3 -- InScript entity prediction
    mirror: true                  # reads corpora from the mirror (or the network)
    targets: [entity_prediction@inscript]   # what `dvc exp run` reproduces (then `report`)
    overrides: [...]              # both scales
    scales:
      cpu:                        # measured on the development machine (source)
        overrides: [...]
        hours: "about 3-4"        # the whole run on this CPU, as the cost text states it
        gpu_hours: not measured   # (the default) or the text's GPU figure
        numerics: native          # what the figures were measured with: native, portable
        threads: 1                # or "not stated" where the text does not say
        cost: "..."               # the detail: per step/epoch, the whole run, the source
        targets: [...]            # optional: stages this scale runs beside the preset's
      paper: {...}
    smoke:                        # after either scale: the embedded data, one batch per epoch
      targets: [...]              # (CI runs every preset so: tests/flows/test_pipeline.py)
      overrides: [...]

Every preset sets `numerics=native` (issue #57.1): its outputs are never the committed lock, so
it runs the host's fastest kernels; `-- -S numerics=portable` runs it on the pinned path
(docs/reproducibility.md). A smoke run keeps the workspace's mode and every other upstream
setting (`Preset.overrides_for`).

    uv run python -m tasks.core.presets list     # a line per preset and scale, then the detail
    uv run python -m tasks.core.presets show entitynlm-prediction --scale paper
    uv run python -m tasks.core.presets run entitynlm-prediction --scale cpu [-- --queue ...]
    uv run python -m tasks.core.presets run entitynlm-prediction --scale paper --smoke -- --temp
    uv run python -m tasks.core.presets resume entitynlm-prediction --scale cpu   # after a kill

Every run's targets end with the `report` stage (REPORT_STAGE): it alone writes the DVC
metrics (metrics/summary/), so an experiment that stopped at its training stage would commit
the workspace's figures as its own and `dvc exp show` would print them silently. A smoke run
(one batch on the embedded data, a check that the preset runs) stops at its own targets: the
report would rebuild every family's embedded training on the smoke data, minutes per preset
for figures nobody reads.

Why `resume` is `dvc repro` and not a second `dvc exp run`: `exp run` first restores every
stage's committed outputs, so an interrupted run loses the stages it had finished (each seed's
`last.pt` survives either way: it lives in data/cache/resume/, outside the outputs). The interrupted run left params.yaml
holding the preset's values; `resume` checks that it still does (params.yaml at HEAD with the
preset's overrides applied by DVC's own `apply_overrides`) and reproduces the targets with
`dvc repro`, which keeps persisted outputs.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tasks.core.config import REPO_ROOT, read_yaml
from tasks.core.errors import CorefreproError
from tasks.core.settings import ConfigError, key_path, parse_settings

PRESETS_DIR = REPO_ROOT / "presets"
Scale = str  # cpu, paper, or a further scale a preset names (e.g. cpu-converged)
REQUIRED_SCALES = ("cpu", "paper")
# the stage that writes the report and the DVC metrics (params.yaml report.summary): the last
# target of every preset run, so that the metrics an experiment commits are its own
REPORT_STAGE = "report"


NUMERICS = ("native", "portable", "not stated")  # what a cost was measured with
NOT_STATED = "not stated"
SUMMARY_WIDTH = 60  # the longest `hours` / `gpu_hours`: a summary fits one line


@dataclass
class ScaleSettings:
    """One scale of a preset: its own overrides (after the preset's shared ones) and cost:
    the summary `list` prints first (hours on this CPU and on a GPU, the numerics mode and
    thread count they were measured with), then the detail."""

    cost: str  # measured cost per step/epoch and the whole run; the source of each figure
    hours: str  # the whole run on this CPU, as the cost text states it (or "not stated")
    numerics: Literal["native", "portable", "not stated"]
    threads: int | str  # threads a job, or "not stated"
    gpu_hours: str = "not measured"
    overrides: list[str] = field(default_factory=list)
    # dvc.yaml stages this scale runs beside the preset's targets (stages no target depends
    # on, e.g. mage-coref-quality's annotators: graphs_reference scores each annotation)
    targets: list[str] = field(default_factory=list)

    def validate(self, path: str) -> None:
        problems = [f"{key_path(path, k)}: {v!r} is longer than {SUMMARY_WIDTH} characters "
                    "(the detail goes in cost)" for k, v in
                    (("hours", self.hours), ("gpu_hours", self.gpu_hours))
                    if len(v) > SUMMARY_WIDTH]  # fmt: skip
        if not (self.threads == NOT_STATED or (isinstance(self.threads, int)
                                                and self.threads >= 1)):  # fmt: skip
            problems.append(f"{key_path(path, 'threads')}: {self.threads!r}: expected a count "
                            f"or {NOT_STATED!r}")  # fmt: skip
        if problems:
            raise ConfigError(problems)

    def summary(self) -> list[str]:
        """hours on this CPU, GPU hours, and what they were measured with."""
        mode = "mode not stated" if self.numerics == NOT_STATED else self.numerics
        threads = ("threads not stated" if self.threads == NOT_STATED
                   else f"{self.threads} thread{'s' * (self.threads != 1)}")  # fmt: skip
        measured = (
            NOT_STATED if self.numerics == self.threads == NOT_STATED else f"{mode}, {threads}"
        )
        return [self.hours, self.gpu_hours, measured]


@dataclass
class SmokeSettings:
    """A preset at one step on the embedded data: its scale's settings (model sizes, readers,
    seeds stacked, precision...) on the project's own corpora and runs in place of the
    mirror's (the keys the preset adds are removed first), one epoch of one batch; it checks
    that the preset runs, not what it measures."""

    targets: list[str]  # the embedded counterparts of the preset's targets
    overrides: list[str] = field(default_factory=list)  # after the scale's


@dataclass
class Preset:
    """A presets/<name>.yaml file, parsed by the project's one strict parser."""

    title: str
    targets: list[str]  # dvc.yaml stages (name or name@item)
    scales: dict[str, ScaleSettings]  # cpu and paper, then any further ones
    smoke: SmokeSettings
    mirror: bool = True
    overrides: list[str] = field(default_factory=list)

    def validate(self, path: str) -> None:
        problems = []
        missing = [s for s in REQUIRED_SCALES if s not in self.scales]
        if missing:
            problems.append(f"{key_path(path, 'scales')}: must have cpu and paper, "
                            f"got {sorted(self.scales)}")  # fmt: skip
        lists = {"overrides": self.overrides, "smoke.overrides": self.smoke.overrides,
                 **{f"scales.{k}.overrides": v.overrides for k, v in self.scales.items()}}  # fmt: skip
        for where, overrides in lists.items():
            for i, override in enumerate(overrides):
                if "=" not in override or override.startswith(("=", "+=")):
                    problems.append(f"{key_path(path, where)}: {override!r} (item {i}) "
                                    "is not key=value")  # fmt: skip
        if problems:
            raise ConfigError(problems)

    def overrides_for(self, scale: Scale, smoke: bool = False) -> list[str]:
        """The scale's overrides; with *smoke*, those of the smoke targets' own params sections,
        then the smoke overlay. A smoke run checks the preset's own stages at the scale's
        settings; everything upstream stays the embedded default's, which the workspace has
        built, so DVC reruns the targets and not the pipeline before them (a preset's upstream
        settings -- the mirror's corpora and runs, the coreference model CoreLM reads, its
        `numerics` -- would rebuild minutes of it to check one batch). Keys the scale adds
        (`+key=`) name the mirror's runs: a smoke run leaves them out."""
        if scale not in self.scales:
            raise CorefreproError(f"scale {scale!r}: this preset's scales are "
                                  f"{', '.join(self.scales)}")  # fmt: skip
        own = [*self.overrides, *self.scales[scale].overrides]
        if not smoke:
            return own
        sections = {target.split("@", 1)[0] for target in self.smoke.targets}
        kept = [o for o in own
                if not o.startswith("+") and o.split("=", 1)[0].split(".")[0] in sections]  # fmt: skip
        return [*kept, *self.smoke.overrides]

    def targets_for(self, smoke: bool = False, scale: Scale | None = None) -> list[str]:
        """The preset's targets and the scale's own, then the stage that writes the DVC metrics
        (REPORT_STAGE): an experiment's `dvc exp show` row holds its own figures, never the
        committed ones. A smoke run's targets are its own (module docstring)."""
        if smoke:
            return list(self.smoke.targets)
        own = self.scales[scale].targets if scale in self.scales else []
        targets = [*self.targets, *(t for t in own if t not in self.targets)]
        return [*targets, *([REPORT_STAGE] if REPORT_STAGE not in targets else [])]


def names() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def load(name: str) -> Preset:
    """presets/<name>.yaml, checked whole: a bad one is one error naming the file and key."""
    path = PRESETS_DIR / f"{name}.yaml"
    if not path.is_file():
        raise CorefreproError(f"preset {name!r}: no {path} "
                              f"(presets: {', '.join(names())})")  # fmt: skip
    data = read_yaml(path)  # a syntax error: one line naming the file, line and column
    try:
        return parse_settings(Preset, data, "")
    except ConfigError as exc:
        raise CorefreproError(f"{path}: {exc}") from None


def command(
    name: str, scale: Scale, extra: list[str] | None = None, smoke: bool = False
) -> list[str]:
    """The `dvc exp run` argv that runs preset *name* at *scale* (*extra*: more of its options,
    e.g. --queue, --temp; *smoke*: one batch per epoch on the embedded data)."""
    preset = load(name)
    argv = ["dvc", "exp", "run"]
    for override in preset.overrides_for(scale, smoke):
        argv += ["-S", override]
    return [*argv, *(extra or []), *preset.targets_for(smoke, scale)]


def committed_params(root: Path = REPO_ROOT) -> str:
    """params.yaml as HEAD has it (what an experiment's overrides were applied to)."""
    done = subprocess.run(["git", "show", "HEAD:params.yaml"], cwd=root, capture_output=True,
                          text=True)  # fmt: skip
    if done.returncode:
        raise CorefreproError(f"{root}: cannot read params.yaml at HEAD ({done.stderr.strip()})")
    return done.stdout


def params_differences(base_text: str, params_path: Path, overrides: list[str]) -> list[str]:
    """Where *params_path* differs from *base_text* with *overrides* applied as `dvc exp run
    -S` applies them (DVC's `apply_overrides`): one "key: here vs preset" line each."""
    from dvc.utils.hydra import apply_overrides
    from dvc.utils.serialize import load_yaml

    with tempfile.TemporaryDirectory() as tmp:
        expected_path = Path(tmp) / "params.yaml"
        expected_path.write_text(base_text, encoding="utf-8")
        apply_overrides(expected_path, overrides)
        expected = load_yaml(expected_path)
    return _differences(load_yaml(params_path), expected, "")


def _differences(here: object, wanted: object, where: str) -> list[str]:
    if isinstance(here, dict) and isinstance(wanted, dict):
        return [line for key in sorted(set(here) | set(wanted), key=str)
                for line in _differences(here.get(key, "<absent>"), wanted.get(key, "<absent>"),
                                         key_path(where, str(key)))]  # fmt: skip
    return [] if here == wanted else [f"{where}: {here!r} here, {wanted!r} in the preset"]


def resume_command(name: str, scale: Scale, extra: list[str] | None = None, smoke: bool = False,
                   root: Path = REPO_ROOT) -> list[str]:  # fmt: skip
    """The `dvc repro` argv that continues preset *name*'s interrupted `run` (*extra*: the
    `-S key=value` pairs that run was given after `--`); refused, naming the keys, when
    params.yaml no longer holds the preset's settings."""
    preset = load(name)
    extra = list(extra or [])
    if len(extra) % 2 or any(flag not in ("-S", "--set-param") for flag in extra[::2]):
        raise CorefreproError(f"resume {name}: after -- only the run's `-S key=value` pairs "
                              f"(got {shlex.join(extra)})")  # fmt: skip
    overrides = [*preset.overrides_for(scale, smoke), *extra[1::2]]
    differences = params_differences(committed_params(root), root / "params.yaml", overrides)
    if differences:
        shown = "; ".join(differences[:3]) + (f"; and {len(differences) - 3} more"
                                             if len(differences) > 3 else "")  # fmt: skip
        raise CorefreproError(
            f"resume {name} --scale {scale}: {root / 'params.yaml'} does not hold the preset's "
            f"settings ({shown}): start it with `python -m tasks.core.presets run {name}`"
        )
    return ["dvc", "repro", *preset.targets_for(smoke, scale)]


def resume_scope(target: str, root: Path = REPO_ROOT) -> str:
    """What `dvc repro` keeps of an interrupted *target*: a training stage whose `train.resume`
    is on continues each seed from its last.pt (untracked, data/cache/resume/: no DVC command
    removes it); any other keeps only the stages (matrix or foreach items) that finished."""
    stage = target.split("@", 1)[0]
    params = read_yaml(root / "params.yaml")
    train = (params.get(stage) or {}).get("train") or {}
    if isinstance(train, dict) and train.get("resume"):
        return f"{target}: each seed continues from its last.pt"
    return f"{target}: finished stages are kept; an interrupted one restarts (resume off)"


def resume_hint(name: str, scale: Scale, smoke: bool, extra: list[str]) -> str:
    """The `resume` command line of a `run` with these arguments (its -S pairs kept)."""
    pairs = [x for i in range(0, len(extra) - 1) if extra[i] in ("-S", "--set-param")
             for x in extra[i : i + 2]]  # fmt: skip
    argv = ["uv", "run", "python", "-m", "tasks.core.presets", "resume", name, "--scale", scale]
    return shlex.join([*argv, *(["--smoke"] if smoke else []), *(["--", *pairs] if pairs else [])])


SUMMARY_HEADER = ("preset", "scale", "hours (this CPU)", "GPU hours", "measured with")


def _list() -> int:
    """A line per preset and scale (hours on this CPU, GPU hours, the numerics mode and
    threads they were measured with), then every preset's title and costs in detail; a broken
    file is flagged, the rest still listed."""
    loaded: dict[str, Preset] = {}
    broken = []
    for name in names():
        try:
            loaded[name] = load(name)
        except CorefreproError as exc:
            broken.append(f"{name}: BROKEN: {exc}")
    rows = [list(SUMMARY_HEADER)] + [[name, scale, *cfg.summary()]
                                     for name, preset in loaded.items()
                                     for scale, cfg in preset.scales.items()]  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(SUMMARY_HEADER) - 1)]
    for row in rows:
        print("  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]))
    print()
    for line in broken:
        print(line)
    for name, preset in loaded.items():
        print(f"{name}: {preset.title}")
        for scale, cfg in preset.scales.items():
            print(f"  {scale}: {' '.join(cfg.cost.split())}")
    return 1 if broken else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tasks.core.presets", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="verb", required=True)
    sub.add_parser("list", help="a line per preset and scale, then every cost in detail")
    helps = {"show": "print the dvc exp run command of a preset", "run": "run it",
             "resume": "continue an interrupted run with dvc repro (keeps each last.pt)"}  # fmt: skip
    for verb, help_ in helps.items():
        p = sub.add_parser(verb, help=help_)
        p.add_argument("name", choices=names())
        p.add_argument(
            "--scale", default="cpu", help="cpu, paper, or a further scale of the preset"
        )
        p.add_argument("--smoke", action="store_true",
                       help="the scale's settings on the embedded data, one batch per epoch")  # fmt: skip
    argv = sys.argv[1:] if argv is None else list(argv)
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []  # more `dvc exp run` arguments
    args = parser.parse_args(argv[: len(argv) - len(extra) - bool(extra or "--" in argv)])
    if args.verb == "list":
        return _list()
    if args.verb == "resume":
        argv_ = resume_command(args.name, args.scale, extra, args.smoke)
        for target in argv_[2:]:
            print(resume_scope(target), flush=True)
    else:
        argv_ = command(args.name, args.scale, extra, args.smoke)
    print(shlex.join(["uv", "run", *argv_]), flush=True)
    if args.verb == "show":
        return 0
    temp = args.verb == "run" and "--temp" in extra
    before = dvc_temp_entries(REPO_ROOT) if temp else set()
    returncode, interrupted = run_dvc(argv_)
    if not returncode or args.verb != "run" or "--queue" in extra:
        return returncode
    what = "interrupted" if interrupted else f"failed (exit {returncode})"
    if temp:  # DVC leaves a killed --temp run's copy behind, listed as Running by exp show
        left = sorted(dvc_temp_entries(REPO_ROOT) - before)
        for path in left:
            shutil.rmtree(path, ignore_errors=True)
        print(f"{what}: a --temp run keeps nothing to resume"
              + (f" (its temporary copy, {len(left)} folders under .dvc/tmp/exps/, removed)"
                 if left else "")
              + f"; run it again: `{shlex.join(['uv', 'run', *argv_])}`", file=sys.stderr)  # fmt: skip
    elif started(args.name, args.scale, args.smoke, extra):
        print(f"{what}: `{resume_hint(args.name, args.scale, args.smoke, extra)}` "
              "continues from each stage's last.pt (a second `run` restores the committed "
              "outputs first and loses them)", file=sys.stderr)  # fmt: skip
    # else: DVC refused the command before it applied the preset (a bad option): nothing ran
    return returncode


def run_dvc(argv: list[str]) -> tuple[int, bool]:
    """(exit status, interrupted) of `python -m <argv>`. On Ctrl-C this process waits for DVC
    to stop on its own (the terminal's Ctrl-C reaches it too; one sent to this process alone
    is passed on) instead of killing it mid-write; a second Ctrl-C kills it."""
    proc = subprocess.Popen([sys.executable, "-m", *argv], cwd=REPO_ROOT)
    try:
        return proc.wait(), False
    except KeyboardInterrupt:
        if not _in_terminal_foreground(proc.pid):  # else the terminal's Ctrl-C reached it
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(), True
        except KeyboardInterrupt:
            proc.kill()
            return proc.wait(), True


def _in_terminal_foreground(pid: int) -> bool:
    """Whether process *pid* is in the terminal's foreground group (a Ctrl-C there reaches it)."""
    try:
        return os.getpgid(pid) == os.tcgetpgrp(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError):
        return False


def started(name: str, scale: Scale, smoke: bool, extra: list[str]) -> bool:
    """Whether a failed `run` got as far as applying the preset to params.yaml (so `resume`
    has something to continue): DVC refuses a bad option before that."""
    pairs = [x for i in range(0, len(extra) - 1) if extra[i] in ("-S", "--set-param")
             for x in extra[i : i + 2]]  # fmt: skip
    try:
        resume_command(name, scale, pairs, smoke)
    except CorefreproError:
        return False
    return True


def dvc_temp_entries(root: Path) -> set[Path]:
    """The folders DVC 3 keeps for running `--temp` experiments: the copy
    (.dvc/tmp/exps/standalone/tmp*) and the run records `dvc exp show` reads
    (.dvc/tmp/exps/run/<rev>, .dvc/tmp/exps/standalone/run/<rev>)."""
    exps = root / ".dvc" / "tmp" / "exps"
    found = {p for p in (exps / "standalone").glob("tmp*") if p.is_dir()}
    for runs in (exps / "run", exps / "standalone" / "run"):
        found |= {p for p in runs.glob("*") if p.is_dir()}
    return found


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except CorefreproError as exc:  # a bad preset file: its one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
