"""README.md and docs/: every relative link and #anchor resolves (GitHub's heading slugs), and
every command, `python -m` module, DVC stage, preset and `-S` setting they name exists.

The `-S` sets themselves are rewritten into a params.yaml DVC reads by
tests/flows/test_user_commands.py; this file checks the names, statically and fast.
"""

from __future__ import annotations

import re
import shlex
import sys
from functools import cache
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT

DOCS = sorted([REPO_ROOT / "README.md", *(REPO_ROOT / "docs").rglob("*.md")])
PAGES = [p.relative_to(REPO_ROOT).as_posix() for p in DOCS]
PARAMS = yaml.safe_load((REPO_ROOT / "params.yaml").read_text())
STAGES = set(yaml.safe_load((REPO_ROOT / "dvc.yaml").read_text())["stages"])
PRESETS = {p.stem for p in (REPO_ROOT / "presets").glob("*.yaml")}
VENV_BIN = Path(sys.executable).parent
# tools a command may start with (`uv run <tool>` or bare); each must be installed beside python
TOOLS = {"dvc", "pytest", "python", "prefect", "mlflow", "ruff", "torchrun", "dask", "lm_eval"}

FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def _prose(text: str) -> str:
    """*text* without fenced code blocks and inline code spans (links there are not links)."""
    out, fence = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fence = not fence
            continue
        out.append("" if fence else CODE_SPAN.sub("", line))
    return "\n".join(out)


def _code(text: str) -> list[str]:
    """Fenced code lines (continuations joined) and inline code spans of *text*."""
    blocks, fence, spans = [], False, []
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fence = not fence
            continue
        if fence:
            blocks.append(line)
        else:
            spans += [m[2].strip() for m in CODE_SPAN.finditer(line)]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(blocks)).splitlines()
    indented = [  # four-space code blocks (after a blank line) in the moved prose
        line.strip() for line in text.splitlines() if line.startswith("    ") and "-m " in line
    ]
    return joined + indented + spans


def github_slug(heading: str) -> str:
    """GitHub's anchor of a heading: rendered text, lowercased, punctuation dropped, spaces to -."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # \w: unicode letters, digits, underscore
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor GitHub gives *path*: its headings' slugs (repeats get -1, -2, ...) and ids."""
    seen: dict[str, int] = {}
    out = set()
    fence = False
    text = path.read_text()
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fence = not fence
            continue
        if not fence and (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            slug = github_slug(m[1])
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    out |= set(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", text))
    return frozenset(out)


def _links(path: Path) -> list[str]:
    return [m[1] for m in LINK.finditer(_prose(path.read_text()))]


def _all_code() -> list[tuple[str, str]]:
    return [
        (page, line) for page, p in zip(PAGES, DOCS, strict=True) for line in _code(p.read_text())
    ]


def test_the_docs_exist_and_the_readme_is_short():
    readme = (REPO_ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for page in ["docs/README.md", "docs/experiments/README.md", "docs/development.md",
                 "docs/operations.md", "docs/reproducibility.md", "docs/data.md",
                 *(f"docs/families/{f}.md" for f in
                   ["mage", "coref", "stanza_coref", "entitynlm", "corelm"]),
                 *(f"docs/experiments/{f}.md" for f in
                   ["mage", "coref", "entitynlm", "corelm"])]:  # fmt: skip
        assert page in PAGES, page
    assert "failure-behaviour" in anchors(REPO_ROOT / "docs" / "development.md")


def test_github_slugs():
    assert github_slug("Same bytes on every machine") == "same-bytes-on-every-machine"
    assert github_slug("A team's DVC remote") == "a-teams-dvc-remote"
    assert (
        github_slug("ASL − baseline, tested (`compare_coref`)")
        == "asl--baseline-tested-compare_coref"
    )
    assert github_slug("Pretrained-LM input features (issue #27.2)") == (
        "pretrained-lm-input-features-issue-272"
    )
    assert github_slug("The papers' claims") == "the-papers-claims"


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_and_anchor_resolves(page):
    path = REPO_ROOT / page
    links = _links(path)
    broken = []
    for target in links:
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not checked here
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            broken.append(f"{target}: no such file")
            continue
        if REPO_ROOT.resolve() not in [dest, *dest.parents]:
            broken.append(f"{target}: outside the repository")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert not broken, f"{page}: " + "; ".join(broken)


def test_the_docs_link_to_their_pages():
    """The indexes reach every page: a page no one links to is lost."""
    linked = set()
    for path in DOCS:
        for target in _links(path):
            file_part = target.partition("#")[0]
            if file_part and not re.match(r"[a-z][a-z0-9+.-]*:", file_part):
                linked.add((path.parent / file_part).resolve())
    orphans = [page for page, p in zip(PAGES, DOCS, strict=True) if p.resolve() not in linked
               and page != "README.md"]  # fmt: skip
    assert not orphans


def _modules() -> list[tuple[str, str, str]]:
    """(page, module, the rest of its command line) of every `python -m` / `torchrun -m`."""
    found = []
    for page, line in _all_code():
        for m in re.finditer(r"(?:python|torchrun)\b[^|;&`]*?\s-m\s+([\w.<>]+)([^|;&`#]*)", line):
            found.append((page, m[1], m[2]))
    return found


def test_the_docs_name_modules():
    """The checks below must not pass by finding nothing."""
    named = {module for _, module, _ in _modules()}
    assert {"tasks.core.presets", "flows.train_mage", "tasks.results.record"} <= named


@cache
def _module_source(module: str) -> str | None:
    base = REPO_ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__main__.py", base / "__init__.py"):
        if path.is_file():
            return path.read_text()
    return None


def test_every_python_m_module_and_its_options_exist():
    problems = []
    for page, module, rest in _modules():
        if "<" in module:  # a pattern such as flows.<stage>
            continue
        if module.split(".")[0] not in {"flows", "tasks", "models"}:
            continue
        source = _module_source(module)
        if source is None:
            problems.append(f"{page}: python -m {module}: no such module")
            continue
        words = rest.split(" -- ")[0].split()
        runtime = _module_source("flows.runtime") or ""
        for flag in (w.split("=")[0] for w in words if w.startswith("--")):
            if module != "models.harness" and f'"{flag}"' not in source + runtime:
                problems.append(f"{page}: python -m {module} {flag}: no such option")
        # a module with subcommands (argparse add_parser) names each verb as a string
        verbs = "add_parser(" in source
        if verbs and words and not words[0].startswith("-"):
            if f'"{words[0]}"' not in source:
                problems.append(f"{page}: python -m {module} {words[0]}: no such command")
            elif module == "tasks.core.presets" and len(words) > 1 and words[1] not in PRESETS:
                problems.append(f"{page}: preset {words[1]}: no presets/{words[1]}.yaml")
    assert not problems, "\n".join(problems)


def test_every_tool_a_command_starts_with_is_installed():
    problems = []
    for page, line in _all_code():
        for m in re.finditer(r"\buv run\s+(?:--\S+\s+)*([\w-]+)", line):
            if m[1] not in TOOLS:
                problems.append(f"{page}: uv run {m[1]}: not a tool of this project")
    for tool in TOOLS:
        assert (VENV_BIN / tool).exists() or tool == "python", tool
    assert not problems, "\n".join(problems)


# the stages "Adding a model family" (docs/development.md) has the reader create: train_x, and
# the worked example's train_toy in a copy of the project (tests/flows/test_new_family.py)
EXAMPLE_STAGES = {"train_x", "train_toy"}


def test_every_dvc_stage_named_exists():
    """`stage@item` names and `dvc repro <stage>` targets are stages of dvc.yaml."""
    named = set()
    for _page, line in _all_code():
        named |= set(re.findall(r"^([a-z][a-z0-9_]*)@", line.strip()))
        for m in re.finditer(r"^(?:uv run )?dvc (?:repro|exp run)\b([^|;&#]*)", line.strip()):
            words = shlex.split(m[1].replace("`", ""), posix=True) if "'" in m[1] else m[1].split()
            skip = False
            for word in words:
                if skip:
                    skip = False
                    continue
                if word in {"-S", "--set-param", "-n", "--name"}:
                    skip = True
                    continue
                if word.startswith("-") or "=" in word or "<" in word:
                    continue
                named.add(word.split("@")[0])
    for path in DOCS:  # the first column of a `| stage | ... |` table
        in_table = False
        for line in path.read_text().splitlines():
            if re.match(r"\|\s*stage\s*\|", line):
                in_table = True
            elif in_table and line.startswith("|"):
                cell = line.split("|")[1]
                named |= {span[2].split("@")[0] for span in CODE_SPAN.finditer(cell)}
            else:
                in_table = False
    named.discard("---")
    assert {"train_coref", "annotate", "report", "compare_coref"} <= named  # found some
    unknown = {n for n in named if n not in STAGES | EXAMPLE_STAGES}
    assert not unknown, f"not stages of dvc.yaml: {sorted(unknown)}"


def test_every_preset_named_exists_and_the_readme_lists_them_all():
    readme = (REPO_ROOT / "README.md").read_text()
    listed = set(re.findall(r"^\| `([a-z0-9-]+)` \| [^|]*Table", readme, flags=re.M))
    assert listed == PRESETS
    for page, line in _all_code():
        for m in re.finditer(r"presets (?:show|run|resume) ([a-z0-9-]+)", line):
            assert m[1] in PRESETS, f"{page}: preset {m[1]}"


def _override_keys() -> list[tuple[str, str]]:
    from tests.flows.test_user_commands import _documented_overrides

    return [(path.relative_to(REPO_ROOT).as_posix(), o.split("=", 1)[0])
            for path in DOCS for s in _documented_overrides(path) for o in s]  # fmt: skip


def _has(node, dotted: str) -> bool:
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_every_set_param_key_exists_in_params_yaml():
    """`-S key=value` sets a key params.yaml has; `+key=value` adds one under a section it has."""
    keys = _override_keys()
    assert len(keys) > 20
    problems = []
    for page, key in keys:
        if key.startswith("+"):
            parent = key[1:].rsplit(".", 1)[0]
            if "." in key and not _has(PARAMS, parent):
                problems.append(f"{page}: {key}: params.yaml has no section {parent}")
        elif not _has(PARAMS, key.lstrip("~")):
            problems.append(f"{page}: -S {key}: no such setting in params.yaml")
    assert not problems, "\n".join(problems)


# settings named in prose (`train_coref.model.lm_features: minilm`): the sections whose keys
# are names a user adds (runs, corpora, models, ablations) are checked down to that section
OPEN_SECTIONS = ("annotate.runs", "annotate.model_runs", "annotate.stanza_runs", "derive",
                 "graphs.ablations", "graphs.references", "train_mage.task_settings",
                 "train_mage.models", "lm_features.encoders", "download", "normalize")  # fmt: skip


def test_every_setting_named_in_the_docs_exists():
    problems = []
    sections = set(PARAMS)
    for page, span in _all_code():
        m = re.fullmatch(r"\+?([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_-]+)+)(?:\s*[:=].*)?", span.strip())
        if not m or m[1].split(".")[0] not in sections or "/" in span.split(":")[0]:
            continue
        key = m[1]
        if re.search(r"\.(py|yaml|json|pt|md|parquet)$", key) or "unknown setting" in span:
            continue
        if any(key == s or key.startswith(s + ".") for s in OPEN_SECTIONS):
            key = next(s for s in OPEN_SECTIONS if key == s or key.startswith(s + "."))
        if not _has(PARAMS, key):
            problems.append(f"{page}: `{span}`")
    assert not problems, "settings not in params.yaml:\n" + "\n".join(sorted(set(problems)))


def test_the_readme_states_no_measured_number():
    """Figures live in the records, the report and the lab notebook, never in the README: a
    bare number in its prose is a table or equation number, a year or a version."""
    prose = re.sub(r"\]\([^)]*\)", "]", _prose((REPO_ROOT / "README.md").read_text()))
    allowed = re.compile(r"(Tables?|Python ≥|Eq\.|§|issue #|et al\.,?)\s*$")
    numbers = []
    for line in prose.splitlines():
        for m in re.finditer(r"(?<![\w.\-/#])\d+(?:[.,]\d+)*\s*%?(?![\w\-])", line):
            year = re.fullmatch(r"(19|20)\d\d", m[0])
            if not year and not allowed.search(line[: m.start()]):
                numbers.append(f"{m[0]!r} in {line.strip()[:80]!r}")
    assert not numbers, "\n".join(numbers)


def test_the_lab_notebook_keeps_every_transcribed_figure_and_links_its_record():
    """A transcribed record quotes the text it came from (README.md at dc50b4c); that text now
    lives in docs/experiments/, verbatim, and the entry links the record."""
    notebook = [p for p in DOCS if "experiments" in p.parts]
    text = re.sub(r"\s+", " ", "".join(p.read_text() for p in notebook))
    linked = {(p.parent / t.partition("#")[0]).resolve() for p in notebook for t in _links(p)}
    entries = yaml.safe_load((REPO_ROOT / "results" / "transcribed.yaml").read_text())
    assert entries
    problems = []
    for e in entries:
        for part in (p.strip() for p in e["quote"].split("...")):
            if part and re.sub(r"\s+", " ", part) not in text:
                problems.append(f"{e['item']}: quote not in docs/experiments: {part[:60]!r}")
        record = (
            REPO_ROOT / "results" / e.get("preset", "readme") / e["stage"] / f"{e['item']}.json"
        )
        if record.resolve() not in linked:
            problems.append(f"{e['item']}: docs/experiments does not link {record.name}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_no_placeholder_is_swallowed_as_html(page):
    """`<run>` or `<s>` outside code is an HTML tag to GitHub: hidden, or strikes the text out."""
    html = {"a", "br", "details", "summary", "sub", "sup", "img", "p", "div"}
    tags = re.findall(
        r"</?([A-Za-z][\w-]*)(?:\s[^<>\n]*)?/?>", _prose((REPO_ROOT / page).read_text())
    )
    assert not [t for t in tags if t.lower() not in html]
