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

Points are grid x draws x seeds. Each point is keyed by a hash of its resolved (validated)
scenario; its result is written atomically to ``DIR/points/<key>.json`` the moment it
finishes, so a re-run skips every finished point and runs only new, changed or failed ones.
``DIR/sweep.parquet`` (rewritten atomically, also every few seconds while running) has one
row per flow and per queue of every point (``record`` = ``flow`` / ``queue``; ``failed``
for a point that failed, with its ``error``), the point's parameters as columns named by
their dotted keys, and ``point``, ``point_index``, ``seed``, ``status``, ``attempts``.
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
import time
import tomllib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4sim.executors import Executor, SerialExecutor
from l4sim.scenario import L4simError, Scenario, ScenarioError

__all__ = [
    "Point",
    "SweepError",
    "SweepOutcome",
    "SweepSpec",
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
#: sweep.parquet is rewritten at most this often while a sweep runs (and always at the end).
FLUSH_EVERY_S = 5.0

_TOP_KEYS = ("base", "seeds", "keep_results", "name", "grid", "draw")
_DISTRIBUTIONS = ("uniform", "choice")
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z%/]*)\s*$")


class SweepError(L4simError):
    """A sweep spec or output directory that cannot be used (one sentence)."""


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
    if seeds_value is None:
        seeds = None
    elif isinstance(seeds_value, int) and not isinstance(seeds_value, bool) and seeds_value >= 1:
        seeds = list(range(1, seeds_value + 1))
    elif (
        isinstance(seeds_value, list)
        and seeds_value
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds_value)
    ):
        seeds = list(dict.fromkeys(seeds_value))
    else:
        raise SweepError(
            f"{where}: seeds must be a count (seeds = 10 means 1..10) or a list of seeds >= 0"
        )
    keep = data.get("keep_results", False)
    if not isinstance(keep, bool):
        raise SweepError(f"{where}: keep_results must be true or false")
    name = data.get("name", Path(where).stem if root is not None else "sweep")
    if not isinstance(name, str):
        raise SweepError(f"{where}: name must be a string")
    return SweepSpec(
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


def points(spec: SweepSpec) -> list[Point]:
    """Every point of ``spec``, in order (grid, then draws, then seeds)."""
    rng = random.Random(spec.draw_seed)
    draws: list[dict[str, Any]] = [
        {d.key: d.draw(rng) for d in spec.draws} for _ in range(spec.draw_count)
    ] or [{}]
    combos = [
        dict(zip(spec.grid, values, strict=True))
        for values in itertools.product(*spec.grid.values())
    ]
    out: list[Point] = []
    for combo in combos:
        for drawn in draws:
            for seed in spec.seeds or [None]:
                params = {**combo, **drawn}
                data = copy.deepcopy(spec.base)
                for key, value in params.items():
                    set_key(data, key, value)
                if seed is not None:
                    data["seed"] = seed
                try:
                    sc = Scenario.parse(data, source="point")
                except ScenarioError as e:
                    out.append(
                        Point(len(out), params, seed, None, "invalid-" + _hash(data), str(e))
                    )
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


def _read_records(dir_: Path, wanted: set[str]) -> dict[str, dict[str, Any]]:
    records: dict[str, dict[str, Any]] = {}
    if not dir_.is_dir():
        return records
    for f in dir_.glob("*.json"):
        if f.stem not in wanted:
            continue
        try:
            rec = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # unreadable: the point runs again
        if isinstance(rec, dict) and rec.get("key") == f.stem:
            records[f.stem] = rec
    return records


def _scalar(v: Any) -> Any:
    return json.dumps(v) if isinstance(v, list | dict) else v


def sweep_rows(pts: list[Point], records: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of sweep.parquet for the points that have a record (or failed validation)."""
    rows: list[dict[str, Any]] = []
    for p in pts:
        rec = records.get(p.key)
        if rec is None and p.error is None:
            continue  # not run yet
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
            rows.append({**head, "record": "failed"})
            continue
        for f in summary.get("flows", []):
            rows.append({**head, "record": "flow", **{k: _scalar(v) for k, v in f.items()}})
        for q in summary.get("queues", []):
            rows.append({**head, "record": "queue", **{k: _scalar(v) for k, v in q.items()}})
    return rows


def _frame(rows: list[dict[str, Any]], param_keys: list[str]) -> Any:
    import polars as pl

    # A parameter whose values mix types (e.g. 10 and "10Mbps") becomes a string column.
    for key in param_keys:
        kinds = {type(r[key]) for r in rows if r.get(key) is not None}
        if len(kinds) > 1 and not kinds <= {int, float}:
            for r in rows:
                if r.get(key) is not None:
                    r[key] = str(r[key])
    if not rows:
        return pl.DataFrame(
            {"point": [], "record": []}, schema={"point": pl.String, "record": pl.String}
        )
    return pl.DataFrame(rows, infer_schema_length=None, strict=False)


def write_parquet(
    out: Path, spec: SweepSpec, pts: list[Point], records: dict[str, dict[str, Any]]
) -> Path:
    path = out / PARQUET
    df = _frame(sweep_rows(pts, records), spec.axes())
    _write_atomic(path, lambda p: df.write_parquet(p), sync=True)
    return path


def _meta(spec: SweepSpec, pts: list[Point], records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    ok = sum(1 for p in pts if records.get(p.key, {}).get("status") == "ok")
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
        "failed": sum(
            1 for p in pts if p.error or records.get(p.key, {}).get("status") == "failed"
        ),
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
    try:
        (out / POINTS).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SweepError(f"cannot create output directory {str(out)!r} ({e.strerror})") from None
    executor = executor or SerialExecutor()
    pts = points(spec)
    unique: dict[str, Point] = {}
    for p in pts:
        unique.setdefault(p.key, p)
    with _lock(out):
        for stale in [*out.glob(f".{PARQUET}.tmp-*"), *(out / POINTS).glob(".*.tmp-*")]:
            stale.unlink(missing_ok=True)
        records = _read_records(out / POINTS, set(unique))
        done_before = {k for k, r in records.items() if r.get("status") == "ok"}
        todo = [p for p in unique.values() if p.error is None and p.key not in done_before]
        invalid = sum(1 for p in unique.values() if p.error is not None)
        run_id = uuid.uuid4().hex[:12]
        failed = invalid
        retried = 0
        done = len(done_before) + invalid
        errors: list[tuple[int, str]] = [(p.index, p.error) for p in pts if p.error]
        if on_progress is not None:
            on_progress(done, failed, len(unique))
        start = time.perf_counter()
        last_flush = start
        interrupted = False
        tasks = [
            {
                "scenario": p.scenario,
                "keep_dir": str(out / RUNS / p.key) if spec.keep_results else None,
            }
            for p in todo
        ]
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
                records[p.key] = rec
                done += 1
                retried += outcome.attempts > 1
                if not outcome.ok:
                    failed += 1
                    errors.append((p.index, outcome.error or "failed"))
                if on_progress is not None:
                    on_progress(done, failed, len(unique))
                now = time.perf_counter()
                if now - last_flush >= FLUSH_EVERY_S:
                    write_parquet(out, spec, pts, records)
                    last_flush = now
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            wall = time.perf_counter() - start
            # The point files are the truth: a Ctrl-C between a point's file and its entry
            # in `records` must not leave that point out of sweep.parquet.
            records.update(_read_records(out / POINTS, set(unique)))
            parquet = write_parquet(out, spec, pts, records)
            _write_json(out / META, _meta(spec, pts, records))
        ran = sum(1 for p in todo if records.get(p.key, {}).get("run_id") == run_id)
        return SweepOutcome(
            total=len(unique),
            skipped=len(done_before),
            ran=ran,
            ok=sum(1 for k in unique if records.get(k, {}).get("status") == "ok"),
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
