"""What every reproduction writes beside its figures, in one place: a table as CSV and
Markdown (:func:`write_table`, :func:`write_csv`), the per-seed values the tables aggregate
(:func:`write_per_seed`, ``per_seed.csv``), the mean and 95 % confidence interval over the
training seeds (:func:`mean_ci`, :func:`write_ci`, ``ci.csv`` / ``ci.md``) and the wall times
kept out of the compared tables (:func:`write_timing`, ``timing.csv``).

The interval is Student's t: mean ± t(0.975, n - 1) s / sqrt(n), s the sample standard
deviation (n - 1 in the denominator). The t quantiles are :data:`T975` for n - 1 <= 30 (the
usual table, 4 decimals) and the Cornish-Fisher expansion of t in the normal quantile z
beyond (Abramowitz and Stegun 26.7.5; within 1e-4 there). One seed has no interval: its
bounds are left empty.
"""

from __future__ import annotations

import csv
import math
import re
import statistics
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

_Row = TypeVar("_Row")

PER_SEED = "per_seed.csv"
CI_TABLE = "ci.md"
TIMING = "timing.csv"

#: t(0.975, df) for df = 1..30.
T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom (``df`` >= 1)."""
    if df < 1:
        raise ValueError(f"a t quantile needs at least 1 degree of freedom, not {df}")
    if df <= len(T975):
        return T975[df - 1]
    z = statistics.NormalDist().inv_cdf(0.975)
    return (
        z
        + (z**3 + z) / (4 * df)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )


def mean_ci(values: Iterable[float | None]) -> tuple[float, float | None, float | None, int]:
    """(mean, ci95_low, ci95_high, n) of the finite ``values`` (None and NaN left out);
    the bounds are None for fewer than two values, the mean NaN for none."""
    xs = [float(x) for x in values if x is not None and not math.isnan(float(x))]
    n = len(xs)
    if n == 0:
        return math.nan, None, None, 0
    mean = statistics.fmean(xs)
    if n == 1:
        return mean, None, None, 1
    half = t975(n - 1) * statistics.stdev(xs) / math.sqrt(n)
    return mean, mean - half, mean + half, n


def _dicts(rows: Iterable[Any]) -> list[dict[str, Any]]:
    return [asdict(r) if is_dataclass(r) else dict(r) for r in rows]  # type: ignore[arg-type]


def write_csv(path: Path, rows: Iterable[Any], fields: Sequence[str] | None = None) -> None:
    """Write ``rows`` (dataclasses, dicts, or tuples in the order of ``fields``) to ``path``
    as CSV: one column per field."""
    rows = list(rows)
    if fields is not None and rows and isinstance(rows[0], tuple):
        rows = [dict(zip(fields, r, strict=True)) for r in rows]
    ds = _dicts(rows)
    names = list(fields) if fields is not None else list(dict.fromkeys(k for d in ds for k in d))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=names, extrasaction="ignore")
        w.writeheader()
        w.writerows(ds)


def write_table(rows: list[Any], out: Path, table_md: str, markdown: str) -> None:
    """Write ``rows`` to ``out/<stem>.csv`` and ``markdown`` to ``out/table_md``."""
    write_csv(out / f"{Path(table_md).stem}.csv", rows)
    (out / table_md).write_text(markdown)


def write_per_seed(out: Path, rows: Iterable[Any]) -> None:
    """``per_seed.csv``: one row per case and seed with the metrics the tables aggregate."""
    write_csv(out / PER_SEED, rows)


def write_timing(out: Path, rows: Iterable[Any]) -> None:
    """``timing.csv``: the wall times of a run (they differ run to run, so no compared
    table holds them)."""
    write_csv(out / TIMING, rows)


def seed_summary(
    rows: Iterable[Any], keys: Sequence[str], metrics: Sequence[str]
) -> list[dict[str, Any]]:
    """Mean and 95 % CI of each of ``metrics`` over the rows sharing ``keys`` (the seeds of
    one case): one row per group and metric, in first-seen order."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for d in _dicts(rows):
        groups.setdefault(tuple(d[k] for k in keys), []).append(d)
    out = []
    for key, ds in groups.items():
        for m in metrics:
            mean, low, high, n = mean_ci(d[m] for d in ds)
            out.append(
                {
                    **dict(zip(keys, key, strict=True)),
                    "metric": m,
                    "mean": mean,
                    "ci95_low": low,
                    "ci95_high": high,
                    "n_seeds": n,
                }
            )
    return out


def _g(x: float) -> str:
    return f"{x:.4g}"


def ci_markdown(summary: list[dict[str, Any]], keys: Sequence[str]) -> str:
    """The summary as Markdown: mean ± half-width of the 95 % CI (one seed: the mean)."""
    head = "| " + " | ".join([*keys, "metric", "mean ± 95 % CI", "seeds"]) + " |\n"
    head += "|" + "---|" * (len(keys) + 3) + "\n"
    lines = []
    for s in summary:
        if s["n_seeds"] == 0:
            cell = "-"
        elif s["ci95_high"] is None:
            cell = _g(s["mean"])
        else:
            cell = f"{_g(s['mean'])} ± {_g(s['ci95_high'] - s['mean'])}"
        cols = [str(s[k]) for k in keys]
        lines.append("| " + " | ".join([*cols, s["metric"], cell, str(s["n_seeds"])]) + " |")
    return head + "\n".join(lines) + "\n"


def write_ci(
    out: Path,
    rows: Iterable[Any],
    keys: Sequence[str],
    metrics: Sequence[str],
    select: Callable[[dict[str, Any]], bool] | None = None,
    name: str = CI_TABLE,
) -> list[dict[str, Any]]:
    """``ci.csv`` and ``ci.md`` (or ``name`` and its CSV): :func:`seed_summary` of the
    ``rows`` (those ``select`` keeps) grouped by ``keys``."""
    ds = [d for d in _dicts(rows) if select is None or select(d)]
    summary = seed_summary(ds, keys, metrics)
    if summary:
        write_table(summary, out, name, ci_markdown(summary, keys))
    return summary


def span(xs: Iterable[float], spec: str, sep: str = "-") -> str:
    """The least and the most of ``xs`` in format ``spec`` ("0.85-1.34"), one number where
    both print alike: a range the docs' prose quotes (``facts``)."""
    values = list(xs)
    lo, hi = format(min(values), spec), format(max(values), spec)
    return lo if lo == hi else f"{lo}{sep}{hi}"


def read_csv(path: Path) -> list[dict[str, str]]:
    """A table this package wrote (:func:`write_csv`), as text cells: what a headline reads
    back from a committed result."""
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _typed(text: str, tp: Any) -> Any:
    """``text`` (a CSV cell :func:`write_csv` wrote) as type ``tp``: an empty cell is None
    where ``tp`` allows it; bools are written ``True`` / ``False``."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        if text == "" and type(None) in args:
            return None
        tp = next(a for a in args if a is not type(None))
    if tp is bool:
        return text == "True"
    if tp in (int, float):
        return tp(text)
    return text


def read_rows(path: Path, cls: type[_Row]) -> list[_Row]:
    """A table :func:`write_csv` wrote from dataclass ``cls``, read back as ``cls`` rows
    (what a ``facts`` or ``headline`` function computes from a committed result)."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    return [
        cls(**{n: _typed(row[n], hints[n]) for n in names if n in row}) for row in read_csv(path)
    ]


def bullet_lines(path: Path) -> list[str]:
    """The ``- `` lines of a markdown file, without the dash."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line[2:] for line in lines if line.startswith("- ")]


def finding_titles(path: Path) -> list[str]:
    """The bold title of each numbered finding (``1. **...**``) of a findings file."""
    text = path.read_text(encoding="utf-8")
    return re.findall(r"^\d+\. \*\*(.+?)\*\*", text, flags=re.MULTILINE)


def md_rows(path: Path) -> list[dict[str, str]]:
    """The rows of the first markdown table in a file this package wrote, by header."""
    return md_text_rows(path.read_text(encoding="utf-8"))


def md_text_rows(text: str) -> list[dict[str, str]]:
    """The rows of the first markdown table in ``text``, by header."""
    lines = [x for x in text.splitlines() if x.startswith("|")]

    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    head = cells(lines[0])
    return [dict(zip(head, cells(x), strict=False)) for x in lines[2:]]
