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
import json
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.executors import Executor, SerialExecutor
from l4sim.processes import deferred_interrupt
from l4sim.scenario import Scenario
from l4sim.sweep.spec import (
    MAX_POINTS,
    Point,
    SweepError,
    SweepSpec,
    SweepWarning,
    _nothing_valid,
    load_spec,
    parse_spec,
    points,
)
from l4sim.sweep.table import (
    META,
    PARQUET,
    POINTS,
    ROWS,
    _iter_records,
    _meta,
    _Table,
    _write_atomic,
    read_sweep,
)

__all__ = [
    "MAX_POINTS",
    "META",
    "PARQUET",
    "POINTS",
    "ROWS",
    "Point",
    "SweepError",
    "SweepOutcome",
    "SweepSpec",
    "SweepWarning",
    "load_spec",
    "parse_spec",
    "points",
    "read_sweep",
    "run_point",
    "run_sweep",
]

RUNS = "runs"
#: sweep.parquet is rewritten at most this often while a sweep runs (and always at the end).
FLUSH_EVERY_S = 5.0


def run_point(task: dict[str, Any]) -> dict[str, Any]:
    """Run one point (in a worker): its summary; with ``keep_dir``, also its results dir."""
    sc = Scenario.parse(task["scenario"], source="point")
    keep = task.get("keep_dir")
    if keep:
        from l4sim.engine.results import write
        from l4sim.engine.run import run

        result = run(sc)
        write(result, keep)
        return result.summary
    from l4sim.engine.simulation import Simulation

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


def _write_json(path: Path, data: Any) -> None:
    _write_atomic(path, lambda p: p.write_text(json.dumps(data) + "\n", encoding="utf-8"))


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
                # Ctrl-C waits for the point's file and its rows (it lands in map otherwise).
                with deferred_interrupt():
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
            # in the table must not leave that point out of sweep.parquet. A second signal
            # waits for sweep.parquet and sweep.json.
            with deferred_interrupt():
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
