"""The published numbers the reproductions compare with, read from
``l4sim/data/reference/*.csv`` (each file's ``#`` header names its source; see the README
there)."""

from __future__ import annotations

import csv
from importlib.resources import files


def rows(name: str) -> list[dict[str, str]]:
    """The rows of reference file ``name`` (e.g. ``"paper004_table2.csv"``) as dicts of
    strings, in file order, comment lines skipped."""
    text = (files("l4sim") / "data" / "reference" / name).read_text(encoding="utf-8")
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


def number(cell: str) -> int | float | None:
    """A cell as a number: an integer without a decimal point, None when empty (not given)."""
    if cell == "":
        return None
    return float(cell) if any(c in cell for c in ".eE") else int(cell)
