"""Parameter sweeps: a base scenario, a grid, random draws and seeds; resumable; one Parquet.

A sweep spec (TOML)::

    base = "scenarios/bench_1flow_10M.toml"   # relative to the spec; or an inline [base] table
    seeds = [1, 2, 3]                          # or a count: seeds = 10 means 1..10
    keep_results = false                       # true: also write DIR/runs/<point>/ per point

    [grid]                                     # every combination of these values
    "topology.bottleneck.rate" = ["5Mbps", "10Mbps"]
    "flows.0.cca" = ["newreno", "cubic"]

    [draw]                                     # `count` random draws, the same for every
    count = 20                                 # grid combination (seeded by `seed`)
    seed = 1
    "flows.0.start" = { uniform = ["0s", "2s"] }
    "topology.bottleneck.qdisc.limit" = { choice = ["50p", "100p"] }

Points are grid x draws x seeds, at most :data:`MAX_POINTS` (counted before any is built).
A spec none of whose points is a valid scenario (a misspelt key, a value of the wrong type)
is refused up front, naming the key and value; a spec that varies nothing warns
(:class:`SweepWarning`). Each point is keyed by a hash of its resolved (validated)
scenario; its result is written atomically to ``DIR/points/<key>.json`` the moment it
finishes, so a re-run skips every finished point and runs only new, changed or failed ones.
``DIR/sweep.parquet`` (rewritten atomically, also every few seconds while running) has one
row per flow and per queue of every point (``record`` = ``flow`` / ``queue``; ``failed``
for a point that failed, with its ``error``), the point's parameters as columns named by
their dotted keys, and ``point``, ``point_index``, ``seed``, ``status``, ``attempts``; in
point order once the sweep ends (while it runs, as points finish). Its rows are spilled to
``DIR/.rows/`` as they come, not kept in memory, so a long sweep's parent stays flat.
``DIR/sweep.json`` describes the sweep (axes, counts, the base scenario) for ``l4sim report``.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import json
import math
import os
import random
import re
import shutil
import time
import tomllib
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4sim.executors import Executor, SerialExecutor
from l4sim.scenario import L4simError, Scenario, ScenarioError

__all__ = [
    "MAX_POINTS",
    "Point",
    "SweepError",
    "SweepOutcome",
    "SweepSpec",
    "SweepWarning",
    "load_spec",
    "points",
    "read_sweep",
    "run_point",
    "run_sweep",
]

PARQUET = "sweep.parquet"
META = "sweep.json"
POINTS = "points"
RUNS = "runs"
ROWS = ".rows"  # sweep.parquet's rows while a sweep runs (see _Table)
#: sweep.parquet is rewritten at most this often while a sweep runs (and always at the end).
FLUSH_EVERY_S = 5.0
#: The most points a sweep may have (grid combinations x draws x seeds); a spec with more is
#: refused before any point is built (each takes ~3 KB and ~1 ms to build and check).
MAX_POINTS = 100_000

_TOP_KEYS = ("base", "seeds", "keep_results", "name", "grid", "draw")
_DISTRIBUTIONS = ("uniform", "choice")
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z%/]*)\s*$")


class SweepError(L4simError):
    """A sweep spec or output directory that cannot be used (one sentence)."""


class SweepWarning(UserWarning):
    """A sweep spec that runs but probably not as meant (e.g. it varies nothing)."""


# --------------------------------------------------------------------------------------------
# The spec.


@dataclass
class Distribution:
    key: str
    kind: str  # "uniform" | "choice"
    values: list[Any]

    def draw(self, rng: random.Random) -> Any:
        if self.kind == "choice":
            return rng.choice(self.values)
        lo, hi = self.values
        if isinstance(lo, int) and isinstance(hi, int):
            return rng.randint(lo, hi)
        if isinstance(lo, str):
            (a, unit), (b, _) = _quantity(lo), _quantity(hi)
            return f"{rng.uniform(a, b):.6g}{unit}"
        return rng.uniform(float(lo), float(hi))


@dataclass
class SweepSpec:
    """A parsed sweep spec (see the module docstring)."""

    base: dict[str, Any]
    base_source: str
    grid: dict[str, list[Any]] = field(default_factory=dict)
    draws: list[Distribution] = field(default_factory=list)
    draw_count: int = 0
    draw_seed: int = 1
    seeds: list[int] | None = None
    keep_results: bool = False
    name: str = "sweep"

    def axes(self) -> list[str]:
        """The dotted keys that vary: grid keys, then drawn keys."""
        return list(self.grid) + [d.key for d in self.draws]

    def size(self) -> int:
        n = math.prod(len(v) for v in self.grid.values())
        return n * max(1, self.draw_count) * len(self.seeds or [None])


def _check_size(where: str, combos: int, draws: int, seeds: int) -> None:
    """Refuse a sweep of more than :data:`MAX_POINTS` points (before building any)."""
    factors = [(combos, "grid combination"), (max(1, draws), "draw"), (max(1, seeds), "seed")]
    total = math.prod(n for n, _ in factors)
    if total > MAX_POINTS:
        shown = " x ".join(f"{n:,} {what}{'s' if n != 1 else ''}" for n, what in factors)
        raise SweepError(
            f"{where}: the sweep has {total:,} points ({shown}), more than the {MAX_POINTS:,} a "
            "sweep may have; use fewer seeds, draws or grid values, or split it into sweeps"
        )


def _quantity(text: str) -> tuple[float, str]:
    m = _QUANTITY.match(text)
    if m is None:
        raise ValueError(text)
    return float(m.group(1)), m.group(2)


def _flatten(
    table: dict[str, Any], prefix: str = "", leaf: Callable[[Any], bool] = lambda v: False
):
    """``{"a": {"b": v}}`` -> ``{"a.b": v}`` (TOML's dotted keys nest; quoted ones do not)."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and not leaf(v):
            out.update(_flatten(v, key + ".", leaf))
        else:
            out[key] = v
    return out


def _parts(key: str) -> list[str | int]:
    return [int(p) if p.isdigit() else p for p in key.split(".")]


def _check_key(base: dict[str, Any], key: str, where: str) -> None:
    """The table (or list) that ``key`` sets a field of must exist in the base scenario."""
    node: Any = base
    parts = _parts(key)
    if any(p == "" for p in parts):
        raise SweepError(
            f"{where}: {key!r} is not a dotted scenario key like 'topology.bottleneck.rate'"
        )
    for depth, p in enumerate(parts[:-1]):
        here = ".".join(str(x) for x in parts[: depth + 1])
        if isinstance(node, list) and isinstance(p, int):
            if p >= len(node):
                raise SweepError(
                    f"{where}: {key!r} names item {p} of a list of {len(node)} in the base scenario"
                )
            node = node[p]
        elif isinstance(node, dict) and isinstance(p, str) and isinstance(node.get(p), dict | list):
            node = node[p]
        else:
            raise SweepError(f"{where}: {key!r}: the base scenario has no table {here!r}")


def set_key(data: dict[str, Any], key: str, value: Any) -> None:
    """Set dotted ``key`` (list items by index: ``flows.0.cca``) in scenario dict ``data``."""
    node: Any = data
    parts = _parts(key)
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value


def _read_toml(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        raise SweepError(f"{what} {str(path)!r} does not exist")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SweepError(f"{path}: not valid TOML ({e})") from None


def load_spec(path: str | Path) -> SweepSpec:
    """Read and check a sweep spec; every problem is one :class:`SweepError` sentence."""
    path = Path(path)
    return parse_spec(_read_toml(path, "sweep spec"), where=str(path), root=path.parent)


def parse_spec(
    data: dict[str, Any], *, where: str = "sweep", root: Path | None = None
) -> SweepSpec:
    """Check a spec given as a dict (as read from TOML); relative paths are from ``root``."""
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        raise SweepError(
            f"{where}: unknown key {unknown[0]!r}; a sweep spec has {', '.join(_TOP_KEYS)}"
        )
    base_value = data.get("base")
    if isinstance(base_value, str):
        base_path = (root or Path.cwd()) / base_value
        base = _read_toml(base_path, f"{where}: base scenario")
        base_source = str(base_path)
    elif isinstance(base_value, dict):
        base, base_source = base_value, f"{where} [base]"
    else:
        raise SweepError(
            f"{where}: 'base' must name a scenario file or be a [base] table with the scenario"
        )
    try:  # the base itself must be a valid scenario: its errors are not the grid's
        Scenario.parse(copy.deepcopy(base), source=base_source)
    except ScenarioError as e:
        raise SweepError(str(e)) from None

    grid_table = data.get("grid", {})
    if not isinstance(grid_table, dict):
        raise SweepError(f"{where}: [grid] must be a table of dotted keys and lists of values")
    grid = _flatten(grid_table)
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise SweepError(f"{where}: grid key {key!r} needs a non-empty list of values")
        _check_key(base, key, where)

    draws: list[Distribution] = []
    draw_count, draw_seed = 0, 1
    if "draw" in data:
        table = data["draw"]
        if not isinstance(table, dict):
            raise SweepError(f"{where}: [draw] must be a table")
        table = dict(table)
        draw_count = table.pop("count", None)
        draw_seed = table.pop("seed", 1)
        if not isinstance(draw_count, int) or isinstance(draw_count, bool) or draw_count < 1:
            raise SweepError(f"{where}: [draw] needs count = a whole number of draws >= 1")
        if not isinstance(draw_seed, int) or isinstance(draw_seed, bool):
            raise SweepError(f"{where}: [draw] seed must be a whole number")
        dists = _flatten(table, leaf=lambda v: any(k in v for k in _DISTRIBUTIONS))
        if not dists:
            raise SweepError(f"{where}: [draw] names no key to draw")
        for key, spec in dists.items():
            draws.append(_distribution(key, spec, where))
            _check_key(base, key, where)
        overlap = set(grid) & {d.key for d in draws}
        if overlap:
            raise SweepError(f"{where}: {sorted(overlap)[0]!r} is both in [grid] and in [draw]")

    seeds_value = data.get("seeds")
    seeds: list[int] | None
    count_only = isinstance(seeds_value, int) and not isinstance(seeds_value, bool)
    if seeds_value is None:
        n_seeds = 1
    elif count_only and seeds_value >= 1:
        n_seeds = seeds_value
    elif (
        isinstance(seeds_value, list)
        and seeds_value
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds_value)
    ):
        n_seeds = len(seeds_value)
    else:
        raise SweepError(
            f"{where}: seeds must be a count (seeds = 10 means 1..10) or a list of seeds >= 0"
        )
    # Count the points before building any list of them (seeds = 1000000000 must not).
    _check_size(where, math.prod(len(v) for v in grid.values()), draw_count, n_seeds)
    if seeds_value is None:
        seeds = None
    elif count_only:
        seeds = list(range(1, seeds_value + 1))
    else:
        seeds = list(dict.fromkeys(seeds_value))
    keep = data.get("keep_results", False)
    if not isinstance(keep, bool):
        raise SweepError(f"{where}: keep_results must be true or false")
    name = data.get("name", Path(where).stem if root is not None else "sweep")
    if not isinstance(name, str):
        raise SweepError(f"{where}: name must be a string")
    spec = SweepSpec(
        base=base,
        base_source=base_source,
        grid=grid,
        draws=draws,
        draw_count=draw_count,
        draw_seed=draw_seed,
        seeds=seeds,
        keep_results=keep,
        name=name,
    )
    if not spec.axes() and len(spec.seeds or [None]) <= 1:
        warnings.warn(
            SweepWarning(
                f"{where}: the spec has no [grid] values and no [draw], so the sweep runs the "
                "base scenario once; add [grid] keys, a [draw] table or seeds to vary it"
            ),
            stacklevel=2,
        )
    _check_some_point_is_valid(spec, where)
    return spec


def _distribution(key: str, spec: Any, where: str) -> Distribution:
    if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in _DISTRIBUTIONS:
        raise SweepError(
            f"{where}: draw key {key!r} needs one distribution: {{ uniform = [low, high] }} "
            "or { choice = [values...] }"
        )
    kind, values = next(iter(spec.items()))
    if not isinstance(values, list) or not values:
        raise SweepError(f"{where}: draw key {key!r}: {kind} needs a non-empty list")
    if kind == "uniform":
        ok = len(values) == 2
        if ok and all(isinstance(v, str) for v in values):
            try:
                (a, ua), (b, ub) = _quantity(values[0]), _quantity(values[1])
                ok = ua == ub and a <= b
            except ValueError:
                ok = False
        elif ok:
            ok = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            ok = ok and values[0] <= values[1]
        if not ok:
            raise SweepError(
                f"{where}: draw key {key!r}: uniform needs [low, high] with low <= high, both "
                'numbers or both quantities in one unit (e.g. ["0s", "2s"])'
            )
    return Distribution(key, kind, list(values))


# --------------------------------------------------------------------------------------------
# Points.


@dataclass
class Point:
    """One scenario of a sweep: its parameters, seed, resolved scenario and key."""

    index: int
    params: dict[str, Any]
    seed: int | None
    scenario: dict[str, Any] | None  # validated, as plain data; None when invalid
    key: str
    error: str | None = None


def _hash(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _params(spec: SweepSpec) -> Iterator[dict[str, Any]]:
    """The parameters of every grid combination and draw, in order (lazily: no list)."""
    rng = random.Random(spec.draw_seed)
    draws: list[dict[str, Any]] = [
        {d.key: d.draw(rng) for d in spec.draws} for _ in range(spec.draw_count)
    ] or [{}]
    for values in itertools.product(*spec.grid.values()):
        combo = dict(zip(spec.grid, values, strict=True))
        for drawn in draws:
            yield {**combo, **drawn}


def _scenario_data(spec: SweepSpec, params: dict[str, Any], seed: int | None) -> dict[str, Any]:
    data = copy.deepcopy(spec.base)
    for key, value in params.items():
        set_key(data, key, value)
    if seed is not None:
        data["seed"] = seed
    return data


def _problem(e: ScenarioError) -> str:
    """A point's scenario error without its ``point:`` prefix and final full stop."""
    return str(e).removeprefix("point: ").rstrip(".")


def _nothing_valid(spec: SweepSpec, where: str, params: dict[str, Any], error: str) -> SweepError:
    """The error for a sweep none of whose points is valid: it names the first key whose
    every value, alone on the base scenario, is invalid, else the first point's parameters."""
    axes: list[tuple[str, str, list[Any]]] = [("grid", k, v) for k, v in spec.grid.items()]
    axes += [("draw", d.key, d.values) for d in spec.draws]
    for kind, key, values in axes:
        problems: list[str] = []
        for value in values:
            try:
                Scenario.parse(_scenario_data(spec, {key: value}, None), source="point")
                break
            except ScenarioError as e:
                problems.append(_problem(e))
        else:
            return SweepError(
                f"{where}: {kind} key {key!r} = {values[0]!r} makes every point invalid: "
                f"{problems[0]}"
            )
    shown = ", ".join(f"{k} = {v!r}" for k, v in params.items()) or "the base scenario"
    return SweepError(f"{where}: every point of the sweep is invalid; the first ({shown}): {error}")


def _check_some_point_is_valid(spec: SweepSpec, where: str) -> None:
    """Refuse a sweep whose every point would fail validation (a misspelt key, a value of the
    wrong type), before any runs. Points are built until the first valid one (usually the
    first); a seed does not make a point valid or not, so one seed is enough."""
    seed = spec.seeds[0] if spec.seeds else None
    first: tuple[dict[str, Any], str] | None = None
    for params in _params(spec):
        try:
            Scenario.parse(_scenario_data(spec, params, seed), source="point")
            return
        except ScenarioError as e:
            first = first or (params, _problem(e))
    if first is not None:
        raise _nothing_valid(spec, where, *first)


def points(spec: SweepSpec) -> list[Point]:
    """Every point of ``spec``, in order (grid, then draws, then seeds)."""
    _check_size(
        spec.name,
        math.prod(len(v) for v in spec.grid.values()),
        spec.draw_count,
        len(spec.seeds or [None]),
    )
    out: list[Point] = []
    for params in _params(spec):
        for seed in spec.seeds or [None]:
            data = _scenario_data(spec, params, seed)
            try:
                sc = Scenario.parse(data, source="point")
            except ScenarioError as e:
                out.append(Point(len(out), params, seed, None, "invalid-" + _hash(data), str(e)))
                continue
            resolved = sc.to_dict()
            out.append(Point(len(out), params, seed, resolved, _hash(resolved)))
    return out


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """Run one point (in a worker): its summary; with ``keep_dir``, also its results dir."""
    sc = Scenario.parse(task["scenario"], source="point")
    keep = task.get("keep_dir")
    if keep:
        from l4sim.results import write
        from l4sim.run import run

        result = run(sc)
        write(result, keep)
        return result.summary
    from l4sim.simulation import Simulation

    start = time.perf_counter()
    sim = Simulation(sc)
    sim.run()
    core = sim.summary()
    wall = time.perf_counter() - start
    return {"scenario": sc.name, **core, "wall_time_s": wall}


# --------------------------------------------------------------------------------------------
# Running.


@dataclass
class SweepOutcome:
    """What a call of :func:`run_sweep` did."""

    total: int
    skipped: int  # finished in an earlier run
    ran: int
    ok: int
    failed: int
    retried: int
    wall_time_s: float
    executor: str
    parquet: Path
    errors: list[tuple[int, str]]  # (point index, error) of every failed point
    interrupted: bool = False

    @property
    def points_per_s(self) -> float:
        return self.ran / self.wall_time_s if self.wall_time_s > 0 else 0.0


def _write_atomic(path: Path, write: Callable[[Path], None], sync: bool = False) -> None:
    """Write through a temporary file and rename it into place: a kill leaves the old file
    or the new one, never half of one. ``sync`` also survives a power cut (costs a flush)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        if sync:
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _write_json(path: Path, data: Any) -> None:
    _write_atomic(path, lambda p: p.write_text(json.dumps(data) + "\n", encoding="utf-8"))


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


#: The first columns of sweep.parquet, in this order; the parameters follow ``seed``, the
#: flows' and queues' metrics (by name) follow ``record``.
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
    rows += [
        {**head, "record": "queue", **{k: _scalar(v) for k, v in q.items()}}
        for q in summary.get("queues", [])
    ]
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
        path = self._next_file()
        pl.DataFrame(self.rows, infer_schema_length=None, strict=False).write_parquet(path)
        self.rows = []
        files = self.files[self.rows_old]
        files.append(path)
        if len(files) > self.MERGE:
            merged = self._next_file()
            pl.concat([pl.scan_parquet(f) for f in files], how="diagonal_relaxed").sink_parquet(
                merged
            )
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
        first = [c for c in [*_HEAD, *self.params, *_STATUS] if c in names]
        return lf.select(first + sorted(c for c in names if c not in first))

    def write(self, out: Path, *, final: bool = False) -> Path:
        """Write sweep.parquet; ``final``: its rows in point order (else as they finished)."""
        import polars as pl

        path = out / PARQUET
        lf = self.lazy()
        if lf is None:
            lf = pl.LazyFrame(
                {"point": [], "record": []}, schema={"point": pl.String, "record": pl.String}
            )
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
        "seeds": spec.seeds,
        "points": len(pts),
        "ok": ok,
        "failed": sum(1 for p in pts if p.error or status.get(p.key) == "failed"),
    }


@contextlib.contextmanager
def _lock(out: Path) -> Iterator[None]:
    import fcntl

    fh = open(out / ".lock", "w")  # noqa: SIM115 (held for the whole sweep)
    try:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise SweepError(
                f"another sweep is writing to {str(out)!r}; wait for it or pick another --out"
            ) from None
        yield
    finally:
        fh.close()


class _Tasks(Sequence[dict[str, Any]]):
    """The executor's items, made when asked for (a list of them all would double the
    memory the points take)."""

    def __init__(self, todo: list[Point], keep: Path | None) -> None:
        self.todo, self.keep = todo, keep

    def __len__(self) -> int:
        return len(self.todo)

    def __getitem__(self, i: int) -> dict[str, Any]:  # type: ignore[override]
        p = self.todo[i]
        return {"scenario": p.scenario, "keep_dir": str(self.keep / p.key) if self.keep else None}


def run_sweep(
    spec: SweepSpec,
    out_dir: str | Path,
    executor: Executor | None = None,
    *,
    on_progress: Callable[[int, int, int], None] | None = None,
    point_fn: Callable[[dict[str, Any]], dict[str, Any]] = run_point,
) -> SweepOutcome:
    """Run every point of ``spec`` not already finished in ``out_dir``; returns counts.

    ``on_progress(done, failed, total)`` is called as points finish (``done`` counts the
    points finished earlier too). ``KeyboardInterrupt`` stops the sweep after writing
    ``sweep.parquet`` with every finished point; it propagates to the caller.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise SweepError(f"--out {str(out)!r} exists and is not a directory")
    pts = points(spec)
    if pts and all(p.error is not None for p in pts):  # load_spec refuses these already
        error = (pts[0].error or "").removeprefix("point: ").rstrip(".")
        raise _nothing_valid(spec, spec.name, pts[0].params, error)
    try:
        (out / POINTS).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SweepError(f"cannot create output directory {str(out)!r} ({e.strerror})") from None
    executor = executor or SerialExecutor()
    unique: dict[str, Point] = {}
    for p in pts:
        unique.setdefault(p.key, p)
    with _lock(out):
        for stale in [*out.glob(f".{PARQUET}.tmp-*"), *(out / POINTS).glob(".*.tmp-*")]:
            stale.unlink(missing_ok=True)
        table = _Table(spec, pts, out)
        status: dict[str, str] = {}  # every finished point's "ok" / "failed", by key
        for key, rec in _iter_records(out / POINTS, set(unique)):
            status[key] = rec.get("status", "failed")
            table.add(key, rec, old=True)
        for p in unique.values():
            if p.error is not None:
                table.add(p.key, None, old=True)
        done_before = {k for k, s in status.items() if s == "ok"}
        todo = [p for p in unique.values() if p.error is None and p.key not in done_before]
        invalid = sum(1 for p in unique.values() if p.error is not None)
        run_id = uuid.uuid4().hex[:12]
        ran: set[str] = set()  # keys finished by this run
        failed = invalid
        retried = 0
        done = len(done_before) + invalid
        errors: list[tuple[int, str]] = [(p.index, p.error) for p in pts if p.error]
        if on_progress is not None:
            on_progress(done, failed, len(unique))
        start = time.perf_counter()
        last_flush = start
        interrupted = False
        tasks = _Tasks(todo, out / RUNS if spec.keep_results else None)
        try:
            for i, outcome in executor.map(point_fn, tasks):
                p = todo[i]
                rec = {
                    "key": p.key,
                    "index": p.index,
                    "params": p.params,
                    "seed": p.seed,
                    "status": "ok" if outcome.ok else "failed",
                    "error": outcome.error,
                    "attempts": outcome.attempts,
                    "run_id": run_id,
                    "finished_at": time.time(),
                    "summary": outcome.value if outcome.ok else None,
                }
                _write_json(out / POINTS / f"{p.key}.json", rec)
                status[p.key] = rec["status"]
                ran.add(p.key)
                table.add(p.key, rec)
                done += 1
                retried += outcome.attempts > 1
                if not outcome.ok:
                    failed += 1
                    errors.append((p.index, outcome.error or "failed"))
                if on_progress is not None:
                    on_progress(done, failed, len(unique))
                now = time.perf_counter()
                if now - last_flush >= FLUSH_EVERY_S:
                    table.write(out)
                    last_flush = now
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            wall = time.perf_counter() - start
            # The point files are the truth: a Ctrl-C between a point's file and its entry
            # in the table must not leave that point out of sweep.parquet.
            unseen = {p.key for p in todo} - ran
            for key, rec in _iter_records(out / POINTS, unseen):
                if rec.get("run_id") == run_id:
                    status[key] = rec.get("status", "failed")
                    ran.add(key)
                    table.add(key, rec)
            try:
                parquet = table.write(out, final=True)
            finally:
                table.close()
            _write_json(out / META, _meta(spec, pts, status))
        return SweepOutcome(
            total=len(unique),
            skipped=len(done_before),
            ran=len(ran),
            ok=sum(1 for k in unique if status.get(k) == "ok"),
            failed=failed,
            retried=retried,
            wall_time_s=wall,
            executor=executor.describe(),
            parquet=parquet,
            errors=sorted(errors),
            interrupted=interrupted,
        )


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
        return pl.read_parquet(out / PARQUET), meta
    except Exception as e:
        raise SweepError(f"{str(out / PARQUET)!r} is not a readable Parquet file ({e})") from None
