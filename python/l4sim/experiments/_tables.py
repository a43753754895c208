"""Writing an experiment's table: the rows as CSV and the Markdown rendering beside it."""

from __future__ import annotations

import csv
from dataclasses import asdict
from pathlib import Path
from typing import Any


def write_table(rows: list[Any], out: Path, table_md: str, markdown: str) -> None:
    """Write dataclass ``rows`` to ``out/<stem>.csv`` and ``markdown`` to ``out/table_md``."""
    stem = Path(table_md).stem
    with open(out / f"{stem}.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(asdict(rows[0])))
        w.writeheader()
        for r in rows:
            w.writerow(asdict(r))
    (out / table_md).write_text(markdown)
