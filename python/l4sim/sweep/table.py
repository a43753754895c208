"""A sweep's results on disk: the per-point records (``DIR/points/<key>.json``), the rows of
``DIR/sweep.parquet`` (spilled to ``DIR/.rows/`` while the sweep runs, merged at the end),
``DIR/sweep.json`` and :func:`read_sweep`. Written atomically; see :mod:`l4sim.sweep`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from l4sim import files
from l4sim.sweep.spec import Point, SweepError, SweepSpec
from l4sim.units import si_quantity

PARQUET = "sweep.parquet"
META = "sweep.json"
POINTS = "points"
ROWS = ".rows"  # sweep.parquet's rows while a sweep runs (see _Table)
STR = "_str"  # the suffix of a quantity axis's column of text as written ("15ms")


def _write_atomic(path: Path, write: Callable[[Path], None], sync: bool = False) -> None:
    """Write through a temporary file and rename it into place: a kill leaves the old file
    or the new one, never half of one. ``sync`` also survives a power cut (costs a flush)."""
    import polars as pl

    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        if sync:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except (OSError, pl.exceptions.ComputeError) as e:
        why = files.why_write_failed(e, path.parent)
        raise SweepError(f"cannot write {str(path)!r} ({why})") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _iter_records(dir_: Path, wanted: set[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(key, record)`` of every readable point file of ``wanted`` (one at a time)."""
    if not dir_.is_dir():
        return
    for f in dir_.glob("*.json"):
        if f.stem not in wanted:
            continue
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # unreadable: the point runs again
        if isinstance(rec, dict) and rec.get("key") == f.stem:
            yield f.stem, rec


def _read_records(dir_: Path, wanted: set[str]) -> dict[str, dict[str, Any]]:
    return dict(_iter_records(dir_, wanted))


def _scalar(v: Any) -> Any:
    return json.dumps(v) if isinstance(v, list | dict) else v


def class_prefix(name: str) -> str:
    """The column prefix of a queue class in sweep.parquet: ``"L4S"`` -> ``"class.l4s."``."""
    return "class." + (re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "unnamed") + "."


def _queue_row(q: dict[str, Any]) -> dict[str, Any]:
    """A queue's columns, each class's results (DualPI2's L4S and Classic queues) flattened
    beside them as typed columns: ``class.l4s.sojourn_p99_s``, ``class.classic.drops`` …"""
    row = {k: _scalar(v) for k, v in q.items() if k != "classes"}
    for c in q.get("classes") or []:
        prefix = class_prefix(str(c.get("qdisc")))
        row |= {prefix + k: v for k, v in c.items() if k not in ("link", "qdisc", "classes")}
    return row


def axis_units(axes: list[str], pts: list[Point]) -> dict[str, str]:
    """The axes whose values are all quantities of one kind (``"5ms"``, ``"15ms"``), each
    with the SI unit sweep.parquet stores it in (``"s"``; :func:`l4sim.units.si_quantity`)."""
    out: dict[str, str] = {}
    for key in axes:
        values = [p.params[key] for p in pts if p.params.get(key) is not None]
        found = {si_quantity(v)[1] if si_quantity(v) else None for v in values}
        if len(found) == 1 and None not in found:
            out[key] = found.pop()  # type: ignore[assignment]
    return out


_HEAD = ["point", "point_index", "seed"]
_STATUS = ["status", "error", "attempts", "sim_time_s", "wall_time_s", "events"]
_STATUS += ["jain_fairness", "record"]


def _point_rows(p: Point, rec: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The rows of sweep.parquet for point ``p`` given its record (None: it failed
    validation)."""
    head: dict[str, Any] = {
        "point": p.key,
        "point_index": p.index,
        "seed": p.seed if p.seed is not None else (p.scenario or {}).get("seed"),
        **p.params,
        "status": "failed" if rec is None else rec["status"],
        "error": p.error if rec is None else rec.get("error"),
        "attempts": 0 if rec is None else rec.get("attempts", 1),
    }
    summary = (rec or {}).get("summary") or {}
    for k in ("sim_time_s", "wall_time_s", "events", "jain_fairness"):
        head[k] = summary.get(k)
    if head["status"] != "ok":
        return [{**head, "record": "failed"}]
    rows = [
        {**head, "record": "flow", **{k: _scalar(v) for k, v in f.items()}}
        for f in summary.get("flows", [])
    ]
    rows += [{**head, "record": "queue", **_queue_row(q)} for q in summary.get("queues", [])]
    return rows


def sweep_rows(pts: list[Point], records: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of sweep.parquet for the points that have a record (or failed validation)."""
    rows: list[dict[str, Any]] = []
    for p in pts:
        rec = records.get(p.key)
        if rec is not None or p.error is not None:
            rows += _point_rows(p, rec)
    return rows


class _Table:
    """The rows of sweep.parquet, spilled to parquet files under ``DIR/.rows`` every
    :attr:`BATCH` rows and streamed from there into sweep.parquet, so the parent's memory
    stays flat however many points finish (as Python dicts a point's rows take ~10 KB).

    Rows of the records found when the sweep starts are "old": a point that runs again (it
    had failed) replaces its old rows. :meth:`close` removes the spill files."""

    BATCH = 5000  # rows kept in memory before they are spilled
    MERGE = 16  # spill files of a kind merged into one past this many

    def __init__(self, spec: SweepSpec, pts: list[Point], out: Path) -> None:
        self.dir = out / ROWS
        shutil.rmtree(self.dir, ignore_errors=True)  # a killed run's
        self.dir.mkdir()
        self.params = spec.axes()
        self.by_key: dict[str, list[Point]] = {}
        for p in pts:
            self.by_key.setdefault(p.key, []).append(p)
        # A parameter whose values mix types (e.g. 10 and "10Mbps") is a string column.
        self.as_text: list[str] = []
        for key in self.params:
            kinds = {type(p.params[key]) for p in pts if p.params.get(key) is not None}
            if len(kinds) > 1 and not kinds <= {int, float}:
                self.as_text.append(key)
        # A quantity axis ("5ms", "15ms") is stored as a number in SI units, so that it sorts
        # numerically, with the text as written beside it in "<axis>_str".
        self.units = axis_units(self.params, pts)
        self.files: dict[bool, list[Path]] = {True: [], False: []}  # old?, files
        self.rows: list[dict[str, Any]] = []
        self.rows_old = True
        self.spilled = 0
        self.old_keys: set[str] = set()
        self.replaced: set[str] = set()

    def add(self, key: str, rec: dict[str, Any] | None, *, old: bool = False) -> None:
        """Rows of the points of ``key`` (``rec`` None: they failed validation)."""
        if old != self.rows_old:
            self._spill()
            self.rows_old = old
        if old:
            self.old_keys.add(key)
        elif key in self.old_keys:
            self.replaced.add(key)
        for p in self.by_key.get(key, []):
            self.rows += _point_rows(p, rec)
        if len(self.rows) >= self.BATCH:
            self._spill()

    def _next_file(self) -> Path:
        self.spilled += 1
        return self.dir / f"{self.spilled:06d}.parquet"

    def _spill(self) -> None:
        if not self.rows:
            return
        import polars as pl

        for r in self.rows:
            for key in self.as_text:
                if r.get(key) is not None:
                    r[key] = str(r[key])
            for key in self.units:
                text = r.get(key)
                r[key + STR] = text
                r[key] = None if text is None else si_quantity(text)[0]  # type: ignore[index]
        path = self._next_file()
        rows = pl.DataFrame(self.rows, infer_schema_length=None, strict=False)
        _write_atomic(path, rows.write_parquet)
        self.rows = []
        files = self.files[self.rows_old]
        files.append(path)
        if len(files) > self.MERGE:
            merged = self._next_file()
            lf = pl.concat([pl.scan_parquet(f) for f in files], how="diagonal_relaxed")
            _write_atomic(merged, lf.sink_parquet)
            for f in files:
                f.unlink()
            files[:] = [merged]

    def lazy(self) -> Any:
        """Every row (a polars LazyFrame), old rows first; None when there is none."""
        import polars as pl

        self._spill()
        parts = [pl.scan_parquet(f) for f in self.files[True]]
        if self.replaced:
            gone = sorted(self.replaced)
            parts = [p.filter(~pl.col("point").is_in(gone)) for p in parts]
        parts += [pl.scan_parquet(f) for f in self.files[False]]
        if not parts:
            return None
        lf = parts[0] if len(parts) == 1 else pl.concat(parts, how="diagonal_relaxed")
        names = lf.collect_schema().names()
        params = [c for key in self.params for c in (key, key + STR)]
        # a swept key may be a head column itself (``seed`` in the grid)
        first = [c for c in dict.fromkeys([*_HEAD, *params, *_STATUS]) if c in names]
        return lf.select(first + sorted(c for c in names if c not in first))

    def write(self, out: Path, *, final: bool = False) -> Path:
        """Write sweep.parquet; ``final``: its rows in point order (else as they finished)."""
        import polars as pl

        path = out / PARQUET
        lf = self.lazy()
        if lf is None:
            # No point finished (a stop before the first): the head and status columns
            # still say what the table is.
            lf = pl.LazyFrame(schema=_empty_schema())
        elif final:
            lf = lf.sort("point_index", "record", maintain_order=True)
        _write_atomic(path, lambda p: lf.sink_parquet(p), sync=True)
        return path

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def write_parquet(
    out: Path, spec: SweepSpec, pts: list[Point], records: dict[str, dict[str, Any]]
) -> Path:
    """Write ``out/sweep.parquet`` with the rows of ``records`` (and of invalid points)."""
    table = _Table(spec, pts, out)
    try:
        for key, rec in records.items():
            table.add(key, rec)
        for p in pts:
            if p.error is not None:
                table.add(p.key, None)
        return table.write(out, final=True)
    finally:
        table.close()


def _meta(spec: SweepSpec, pts: list[Point], status: dict[str, str]) -> dict[str, Any]:
    """sweep.json; ``status`` is every finished point's ("ok" or "failed"), by key."""
    ok = sum(1 for p in pts if status.get(p.key) == "ok")
    return {
        "kind": "sweep",
        "name": spec.name,
        "base_source": spec.base_source,
        "base": spec.base,
        "grid": spec.grid,
        "draw": {
            "count": spec.draw_count,
            "seed": spec.draw_seed,
            "keys": {d.key: {d.kind: d.values} for d in spec.draws},
        },
        "axes": spec.axes(),
        "units": axis_units(spec.axes(), pts),
        "seeds": spec.seeds,
        "points": len(pts),
        "ok": ok,
        "failed": sum(1 for p in pts if p.error or status.get(p.key) == "failed"),
    }


def _empty_schema() -> dict[str, Any]:
    """The columns of a sweep table with no row."""
    import polars as pl

    types = {"point_index": pl.Int64, "seed": pl.Int64, "attempts": pl.Int64, "events": pl.Int64}
    types |= dict.fromkeys(["sim_time_s", "wall_time_s", "jain_fairness"], pl.Float64)
    return {c: types.get(c, pl.String) for c in [*_HEAD, *_STATUS]}


def read_sweep(out_dir: str | Path) -> tuple[Any, dict[str, Any]]:
    """``(sweep.parquet as a polars DataFrame, sweep.json)`` of a sweep directory."""
    import polars as pl

    out = Path(out_dir)
    if not (out / PARQUET).is_file():
        raise SweepError(
            f"{str(out)!r} holds no {PARQUET}; give a directory written by l4sim sweep"
        )
    meta: dict[str, Any] = {}
    if (out / META).is_file():
        with contextlib.suppress(ValueError, OSError):
            meta = json.loads((out / META).read_text(encoding="utf-8"))
    try:
        table = pl.read_parquet(out / PARQUET)
    except Exception as e:
        raise SweepError(f"{str(out / PARQUET)!r} is not a readable Parquet file ({e})") from None
    missing = [c for c in [*_HEAD, "status", "record"] if c not in table.columns]
    if missing:
        raise SweepError(
            f"{str(out / PARQUET)!r} is not a table written by l4sim sweep (no column "
            f"{', '.join(missing)})"
        )
    return table, meta
