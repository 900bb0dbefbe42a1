"""What differs between DVC experiments, in a terminal: `python -m tasks.report.experiments`.

`dvc exp show --only-changed` names a figure's column by its file (every summary file has the
same keys, `ours` and `paper`), so two changed figures already fill a 120-column terminal and
the changed parameters land behind them, cut off. This command reads the same table through
DVC's API (`dvc.api.exp_show`) and turns it on its side: a row per figure or parameter that
differs between the experiments (the paper's figures and the dependency hashes left out), a
column per experiment, the figures named `<family>/<figure>`. Experiments that do not fit the
terminal's width go to a further block with the names repeated.
"""

from __future__ import annotations

import argparse
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

# exp_show's bookkeeping columns, not figures or parameters
_META = ("Experiment", "rev", "typ", "Created", "parent", "State", "Executor")
_NAME_WIDTH = 44
_MIN_CELL = 8


def _is_dependency(column: str) -> bool:
    """A dependency's column is its path (no `file:key`); its value is a hash."""
    return ":" not in column and "/" in column


def changed_columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The figures, then the parameters, whose values differ between the rows; the paper's
    figures (`:paper`) and dependencies left out."""
    columns = [c for row in rows for c in row if c not in _META]
    seen = list(dict.fromkeys(columns))
    changed = [c for c in seen
               if not c.endswith(":paper") and not _is_dependency(c)
               and len({repr(row.get(c)) for row in rows}) > 1]  # fmt: skip
    return sorted(changed, key=lambda c: (":" not in c, seen.index(c)))


def short_name(column: str) -> str:
    """`metrics/summary/coref/asl_f1.json:ours` -> `coref/asl_f1`; another metrics file's
    `file:key` keeps its key behind the file's last two parts; a parameter stays as it is."""
    if ":" not in column:
        return column
    path, key = column.rsplit(":", 1)
    parts = path.removesuffix(".json").split("/")
    name = "/".join(parts[-2:])
    return name if key == "ours" else f"{name}:{key}"


def _label(row: Mapping[str, Any]) -> str:
    return str(row.get("Experiment") or row.get("rev") or "?")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:.0f}"
    return str(value)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def _blocks(widths: Sequence[int], first: int, width: int) -> list[list[int]]:
    """The experiments' columns in groups that fit `width` beside the names' column."""
    blocks, block, used = [], [], first
    for i, w in enumerate(widths):
        if block and used + 2 + w > width:
            blocks.append(block)
            block, used = [], first
        block.append(i)
        used += 2 + w
    return [*blocks, block]


def render(rows: Sequence[Mapping[str, Any]], width: int = 120) -> str:
    """The changed figures and parameters, a row each, a column per experiment, in blocks no
    wider than `width`."""
    changed = changed_columns(rows)
    if not changed:
        return "No figure or parameter differs between the experiments shown."
    names = [short_name(c) for c in changed]
    name_width = min(_NAME_WIDTH, max(len(n) for n in [*names, "figure / parameter"]))
    labels = [_label(row) for row in rows]
    cells = [[_cell(row.get(c)) for c in changed] for row in rows]
    widths = [min(max(_MIN_CELL, len(label), *map(len, col)), max(_MIN_CELL, width - name_width - 2))
              for label, col in zip(labels, cells, strict=True)]  # fmt: skip
    lines: list[str] = []
    for block in _blocks(widths, name_width, width):
        rows_out = [["figure / parameter", *(labels[i] for i in block)]]
        rows_out += [[name, *(cells[i][k] for i in block)] for k, name in enumerate(names)]
        for n, row_out in enumerate(rows_out):
            line = [_fit(row_out[0], name_width).ljust(name_width)]
            line += [
                _fit(v, widths[i]).rjust(widths[i]) for v, i in zip(row_out[1:], block, strict=True)
            ]
            lines.append("  ".join(line))
            if n == 0:
                lines.append("  ".join("-" * len(part) for part in line))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num", type=int, default=1,
                        help="commits of main to show, each with its experiments (default 1)")  # fmt: skip
    parser.add_argument("--width", type=int, default=None,
                        help="columns (default: the terminal's)")  # fmt: skip
    args = parser.parse_args(argv)
    import dvc.api  # DVC's own reading of the experiments; slow to import, so here

    rows = dvc.api.exp_show(num=args.num)
    width = args.width or shutil.get_terminal_size((120, 40)).columns
    print(render(rows, width), end="")


if __name__ == "__main__":
    main()
