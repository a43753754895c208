"""Numbers in the docs' prose that come from a committed result, kept equal to it.

A page writes such a number as

    <!-- cell results/macc/results.md scheme=ma-cc seeds -->5<!-- /cell -->

naming the table file (a ``.csv``, its ``#`` lines skipped, or the first table of a ``.md``
that ``reproduce`` wrote), the row (one or more ``column=value``: the first row that
matches them all) and the column (quoted when it has spaces); the text between the
markers is that cell as the file has it. A number the prose derives from a result (a
median, a count over cases) comes from that result's ``facts.csv`` (``name=... value``),
which ``gen_docs.py`` writes from the experiment's ``facts``. A number a committed JSON
record holds (a training's ``train.json``) is ``FILE key.key...``: a float is shown to
three significant figures, or to the unit from 100 up.
``gen_docs.py`` rewrites it and ``--check`` fails when a page's text and its table disagree.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from l4sim.experiments._tables import md_text_rows

ROOT = Path(__file__).resolve().parents[1]
_CELL = re.compile(r"<!-- cell (?P<spec>.+?) -->(?P<value>.*?)<!-- /cell -->", re.DOTALL)


def _csv_rows(text: str) -> list[dict[str, str]]:
    """A CSV's rows; ``#`` lines (a reference file's note of its source) skipped."""
    lines = (line for line in io.StringIO(text) if not line.startswith("#"))
    return list(csv.DictReader(lines))


def _json_value(path: str, key: str) -> str:
    """The number at the dotted ``key`` of the JSON file ``path``, as the prose shows it."""
    file = ROOT / path
    if not file.is_file():
        raise SystemExit(f"a cell marker names {path}, which does not exist")
    value = json.loads(file.read_text(encoding="utf-8"))
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise SystemExit(f"{path} has no key {key!r}")
        value = value[part]
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise SystemExit(f"{path}'s {key!r} is not a number or a string")
    if isinstance(value, float):
        return str(round(value)) if abs(value) >= 100 else f"{value:.3g}"
    return str(value)


def lookup(spec: str, generated: Mapping[Path, str] | None = None) -> str:
    """The cell ``spec`` (``FILE column=value ... COLUMN``, or ``FILE.json key.key``) names,
    as its file has it (or as ``generated``, the files being generated in the same pass,
    will have it)."""
    words = shlex.split(spec)
    if len(words) == 2 and words[0].endswith(".json"):
        return _json_value(*words)
    if len(words) < 3 or not all("=" in w for w in words[1:-1]):
        raise SystemExit(f"a cell marker needs FILE column=value ... COLUMN, got {spec!r}")
    path, column = words[0], words[-1]
    want = dict(w.split("=", 1) for w in words[1:-1])
    file = ROOT / path
    if generated is not None and file in generated:
        text = generated[file]
    elif not file.is_file():
        raise SystemExit(f"a cell marker names {path}, which does not exist")
    else:
        text = file.read_text(encoding="utf-8")
    rows = _csv_rows(text) if file.suffix == ".csv" else md_text_rows(text)
    for row in rows:
        if all(row.get(k) == v for k, v in want.items()):
            if column not in row:
                raise SystemExit(f"{path} has no column {column!r} (cell {spec!r})")
            return row[column]
    raise SystemExit(f"{path} has no row with {want} (cell {spec!r})")


def refresh(text: str, generated: Mapping[Path, str] | None = None) -> str:
    """``text`` with every cell marker's value taken from its table."""
    return _CELL.sub(
        lambda m: f"<!-- cell {m['spec']} -->{lookup(m['spec'], generated)}<!-- /cell -->", text
    )


def pages(generated: Mapping[Path, str] | None = None) -> dict[Path, str]:
    """Every docs page that has a cell marker, with its cells refreshed (``generated``: the
    files the same pass writes, read before the disk's)."""
    out = {}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        if "<!-- cell " in text:
            out[page] = refresh(text, generated)
    return out
