"""Issue #55.5, checked, not trusted: every number the committed report (reports/results.md)
prints in the table rows of its claims and real-data sections comes from a results record
(results/**) or from the papers' numbers (tasks/report/paper_results.yaml), recomputed here
from those files, never read back from the report's code; and a record's data digests match
the files it names where that data is present in this checkout (else skipped, with the
reason)."""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import re
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT

REPORT = REPO_ROOT / "reports" / "results.md"
RESULTS = REPO_ROOT / "results"
PAPERS = REPO_ROOT / "tasks" / "report" / "paper_results.yaml"
# the sections checked: from the claims table to the smoke run on generated data
FIRST, LAST = "## The papers' claims", "## Smoke run on generated data"
LINK = re.compile(r"\]\((\.\./results/[^)]*)\)")
# a printed figure: not part of a word (qa2, drop10, ga-mage16) or of "#58.5"
NUMBER = re.compile(r"(?<![\w#.])[-+−]?\d+(?:\.\d+)?(?![\w.])")
# claims-table columns that hold prose (the protocol, the status), not figures
PROSE = (
    "claim",
    "paper table",
    "metric",
    "how ours differs",
    "status",
    "records",
    "paper, table, row",
)


def _numbers(value: object) -> Iterator[float]:
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield float(value)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)


def _printed(text: str) -> list[tuple[float, int]]:
    """The figures of a cell's text (link targets left out): (value, decimals printed)."""
    text = LINK.sub("]", text)
    out = []
    for token in NUMBER.findall(text):
        token = token.replace("−", "-").lstrip("+")
        out.append((float(token), len(token.split(".", 1)[1]) if "." in token else 0))
    return out


def _matches(value: float, decimals: int, candidates: list[float]) -> bool:
    """Some candidate (sorted) prints as *value* at *decimals* places."""
    tolerance = 0.5 * 10**-decimals + 1e-9
    i = bisect.bisect_left(candidates, value - tolerance)
    return i < len(candidates) and candidates[i] <= value + tolerance


def _records(link: str) -> list[dict]:
    path = (REPORT.parent / link).resolve()
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    assert files and all(f.is_file() for f in files), f"{link}: no record there"
    return [json.loads(f.read_text(encoding="utf-8")) for f in files]


def _derived(records: list[dict]) -> set[float]:
    """Every figure a row may print from its records: their own numbers; per split and unit
    (one metric, or two readings of one figure), the paired per-seed differences of two records (mean, sd), the unpaired difference of
    means and its spread; the mean over seeds of each seed's mean over the records, its sd,
    and of each seed's count of records above 5 % (bAbI's failed tasks)."""
    out = set(itertools.chain.from_iterable(_numbers(r) for r in records))
    # a claim compares one metric, or two readings of one figure (b_metric): same split, unit
    comparable: dict[tuple, list[dict]] = {}
    for r in records:
        for m in r["metrics"].values():
            comparable.setdefault((m.get("split"), m.get("unit")), []).append(m)
    for having in comparable.values():
        for a, b in itertools.permutations(having, 2):
            seeds = sorted(set(a["per_seed"]) & set(b["per_seed"]))
            diffs = [b["per_seed"][s] - a["per_seed"][s] for s in seeds
                     if a["per_seed"][s] is not None and b["per_seed"][s] is not None]  # fmt: skip
            out |= {statistics.fmean(diffs)} if diffs else set()
            out |= {statistics.stdev(diffs)} if len(diffs) > 1 else set()
            if a["mean"] is not None and b["mean"] is not None:
                out.add(b["mean"] - a["mean"])
                sa, sb = a["sd"] or 0.0, b["sd"] or 0.0
                out |= {(sa**2 + sb**2) ** 0.5, (sa**2 / a["n"] + sb**2 / b["n"]) ** 0.5}
    # a table's mean over tasks: per model (a record's row "GA, qa2" -> "GA"), each seed's
    # mean over the model's records, and each seed's failed count; then over seeds, and
    # one model's per-seed means minus another's (a claim over the mean)
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        for metric, m in r["metrics"].items():
            groups.setdefault((r["row"].split(",")[0], metric), []).append(m)
    per_seed: dict[tuple, dict[str, float]] = {}
    for key, having in groups.items():
        seeds = set.intersection(*(set(m["per_seed"]) for m in having))
        seeds = sorted(s for s in seeds if all(m["per_seed"][s] is not None for m in having))
        if len(having) < 2 or not seeds:
            continue
        means = {s: statistics.fmean(m["per_seed"][s] for m in having) for s in seeds}
        failed = [sum(m["per_seed"][s] > 5 for m in having) for s in seeds]
        per_seed[key] = means
        for series in (list(means.values()), failed):
            out.add(statistics.fmean(series))
            out |= {statistics.stdev(series)} if len(series) > 1 else set()
    for (ka, a), (kb, b) in itertools.permutations(per_seed.items(), 2):
        diffs = [b[s] - a[s] for s in sorted(set(a) & set(b))]
        if ka[1] == kb[1] and diffs:
            out.add(statistics.fmean(diffs))
            out |= {statistics.stdev(diffs)} if len(diffs) > 1 else set()
    return out


def _paper_numbers() -> tuple[set[float], set[float]]:
    """The papers' printed numbers, and the difference of any two of one table (a claim's
    b − a, checked only in the claims table's paper column)."""
    spec = yaml.safe_load(PAPERS.read_text(encoding="utf-8"))
    numbers, diffs = set(), set()
    for table in spec.get("tables", []):
        values = set(_numbers(table.get("rows", [])))
        numbers |= values
        diffs |= {b - a for a, b in itertools.permutations(values, 2)}
    return numbers, diffs


def _tables(text: str) -> Iterator[tuple[str, list[str], list[list[str]]]]:
    """(heading, header cells, body rows) of every markdown table in the checked sections."""
    section = text.split(FIRST, 1)[1].split(LAST, 1)[0]
    heading, lines = FIRST, section.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("#"):
            heading = lines[i]
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = _cells(lines[i])
            rows, i = [], i + 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            yield heading, header, rows
            continue
        i += 1


def _cells(line: str) -> list[str]:
    """A markdown table row's cells; an escaped pipe (`\\|`, e.g. P(x\\|z)) stays in its cell."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def test_every_figure_in_the_claims_and_real_data_tables_comes_from_a_record_or_the_papers():
    text = REPORT.read_text(encoding="utf-8")
    paper_numbers, paper_diffs = _paper_numbers()
    paper_diffs = sorted(paper_numbers | paper_diffs)
    tables = list(_tables(text))
    assert len(tables) >= 3, "the claims table and the real-data tables"
    checked, unmatched = 0, []
    for heading, header, rows in tables:
        table_links = [link for row in rows for cell in row for link in LINK.findall(cell)]
        table_records = [r for link in dict.fromkeys(table_links) for r in _records(link)]
        # a row draws on its own records; a row without links (a table's mean, its failed
        # count, a corruption level's F1) on the table's records and their presets' records
        presets = {r["preset"] for r in table_records}
        wider = _derived(table_records) | set(
            itertools.chain.from_iterable(
                _numbers(json.loads(p.read_text(encoding="utf-8")))
                for preset in presets
                for p in (RESULTS / preset).rglob("*.json")
            )
        )
        for row in rows:
            links = [link for cell in row for link in LINK.findall(cell)]
            own = [r for link in dict.fromkeys(links) for r in _records(link)]
            sources = sorted(_derived(own) | wider | paper_numbers)
            for name, cell in zip(header, row, strict=True):
                if name.startswith(PROSE) or cell == row[0] and not LINK.search(cell):
                    continue  # prose, or the row's label (a task, a corruption level)
                for value, decimals in _printed(cell):
                    checked += 1
                    if not _matches(value, decimals, sources) and not (
                        name.startswith("paper:") and _matches(value, decimals, paper_diffs)
                    ):
                        unmatched.append(f"{heading} / {row[0]} / {name}: {value}")
    assert checked > 100, checked  # the tables were read
    assert not unmatched, "figures with no record or paper number behind them:\n" + "\n".join(
        unmatched
    )


def test_a_linked_cell_prints_its_records_mean_sd_and_seeds():
    """A real-data cell `[m ± s (n)](record)` is that record's figure for one of its
    metrics: the mean, the sd and the number of seeds, as rounded."""
    text = REPORT.read_text(encoding="utf-8")
    cell = re.compile(
        r"\[(-?[\d.]+)(?: ± ([\d.]+) \((\d+)\)| \((1) seed\))\]\((\.\./results/[^)]*\.json)\)"
    )
    found = 0
    for mean, sd, n, one, link in cell.findall(text.split(FIRST, 1)[1].split(LAST, 1)[0]):
        (record,) = _records(link)
        decimals = len(mean.split(".", 1)[1]) if "." in mean else 0
        fits = [
            m for m in record["metrics"].values()
            if m["mean"] is not None and abs(m["mean"] - float(mean)) <= 0.5 * 10**-decimals + 1e-9
            and m["n"] == int(n or one)
            and (not sd or abs((m["sd"] or 0.0) - float(sd)) <= 0.05 + 1e-9)
        ]  # fmt: skip
        assert fits, f"{link}: no metric with mean {mean}, sd {sd or '-'}, n {n or one}"
        found += 1
    assert found > 50, found


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


DATA = sorted(
    {
        (name, digest)
        for p in RESULTS.rglob("*.json")
        for name, digest in (json.loads(p.read_text(encoding="utf-8")).get("data") or {}).items()
        if isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)
    }  # fmt: skip
)


@pytest.mark.parametrize(("name", "digest"), DATA or [("-", "-")])
def test_a_records_data_digest_matches_the_data_where_it_is_present(name, digest):
    """The sha256 a record states for each data file it names: checked against the file in
    this checkout (the records' data are pipeline outputs of a run on the mirror, present
    only where that run was reproduced). Every record states one per file (the claim)."""
    if name == "-":
        pytest.skip("no record names a data file")
    path = REPO_ROOT / name
    if not path.is_file():
        pytest.skip(f"{name} is not in this checkout (a pipeline output of a run on the mirror)")
    assert _digest(path) == digest, f"{name}: sha256 differs from the records'"


def test_every_record_names_its_data_with_a_digest():
    for path in sorted(RESULTS.rglob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        data = record.get("data")
        assert isinstance(data, dict), f"{path}: no data"
        for name, digest in data.items():
            ok = isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)
            assert ok or record.get("source", "").startswith("transcribed"), (
                f"{path}: data {name} has no sha256 ({digest!r})"
            )
