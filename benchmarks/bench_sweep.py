"""Sweep speed: serial vs local process pool vs Ray, measured side by side in one run.

1. The 1 000-point sweep: a 10 Mbps dumbbell, 20 s simulated per point, a 2 x 5 x 10 grid
   (CC x flows x buffer) x 10 seeds, run serially and on a pool of ``--jobs`` workers:
   wall time, points/s, speed-up, and whether the two give the same rows.
2. Ray against the pool on 100 heavier points (100 Mbps, 120 s: >= 0.1 s each): Ray's wall
   time without and with starting its local runtime.

    python benchmarks/bench_sweep.py [--jobs 2] [--seeds 10] [--heavy 100] [--no-ray] [--out DIR]

Every sweep writes to a fresh temporary directory, so nothing is resumed. ``--out DIR``
also writes the table as DIR/bench_sweep.md under a stamp line (command, commit, date, load).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from l4sim.executors import Executor, PoolExecutor, SerialExecutor, default_jobs
from l4sim.sweep import SweepOutcome, parse_spec, run_sweep

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_out import Report  # noqa: E402


def grid_spec(seeds: int) -> Any:
    return parse_spec(
        {
            "base": str(ROOT / "scenarios" / "bench_1flow_10M.toml"),
            "seeds": seeds,
            "grid": {
                "duration": ["20s"],
                "topology.bottleneck.loss": [0.0005],
                "flows.0.cca": ["newreno", "cubic"],
                "flows.0.count": [1, 2, 3, 4, 5],
                "topology.bottleneck.qdisc.limit": [f"{n}p" for n in range(10, 101, 10)],
            },
        },
        where="bench",
    )


def heavy_spec(points: int) -> Any:
    return parse_spec(
        {
            "base": str(ROOT / "scenarios" / "bench_1flow_100M.toml"),
            "seeds": points,
            "grid": {"duration": ["120s"], "topology.bottleneck.loss": [0.0001]},
        },
        where="bench",
    )


def timed(
    spec: Any, make: Callable[[], Executor], tmp: Path, label: str
) -> tuple[SweepOutcome, pl.DataFrame]:
    """Run the sweep; its wall time counts from creating the executor to closing it."""
    out = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=tmp))
    start = time.perf_counter()
    with make() as ex:
        outcome = run_sweep(spec, out, ex)
    outcome.wall_time_s = time.perf_counter() - start
    assert outcome.failed == 0 and outcome.ran == outcome.total, outcome.errors[:3]
    df = pl.read_parquet(outcome.parquet).drop("wall_time_s", "attempts")
    return outcome, df.sort("point_index", "record", "id", "link")


def line(label: str, o: SweepOutcome, base: float | None = None) -> str:
    ratio = f"{base / o.wall_time_s:5.2f}x" if base else "     "
    return (
        f"  {label:<28} {o.ran:5d} points  {o.wall_time_s:8.2f} s  "
        f"{o.points_per_s:7.1f} points/s  {ratio}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=default_jobs())
    ap.add_argument("--seeds", type=int, default=10, help="seeds of the grid (10: 1 000 points)")
    ap.add_argument("--heavy", type=int, default=100, help="points of the Ray comparison")
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--out", help="also write the table as Markdown into this directory")
    args = ap.parse_args()
    out = Report(args.out)
    rows: list[list[object]] = []

    def keep(sweep: str, how: str, o: SweepOutcome, base: float, same: str) -> None:
        rows.append(
            [
                sweep,
                how,
                o.ran,
                f"{o.wall_time_s:.1f}",
                f"{o.ran / o.wall_time_s:.1f}",
                f"{base / o.wall_time_s:.2f}",
                same,
            ]
        )
        out.table(
            "bench_sweep",
            ["sweep", "run", "points", "wall s", "points/s", "vs serial", "same rows as serial"],
            rows,
            f"pool and Ray of {args.jobs} workers; grid: 10 Mbit/s dumbbell, 20 s a point; "
            "heavy: 100 Mbit/s, 120 s a point; Ray's start-up outside its wall time.",
        )

    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load:.2f}, pool of {args.jobs} workers")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        spec = grid_spec(args.seeds)
        print(f"\n1. grid: {spec.size()} points, 10 Mbps dumbbell, 20 s each")
        serial, s_df = timed(spec, SerialExecutor, tmp, "serial")
        per_point = serial.wall_time_s / serial.ran
        print(line("serial", serial) + f"  ({1e3 * per_point:.1f} ms per point)")
        pool, p_df = timed(spec, lambda: PoolExecutor(args.jobs), tmp, "pool")
        print(line(f"pool, {args.jobs} workers", pool, serial.wall_time_s))
        print(f"  same rows serial / pool: {s_df.equals(p_df)}")
        grid = f"grid, {spec.size()}"
        keep(grid, "serial", serial, serial.wall_time_s, "")
        keep(grid, "pool", pool, serial.wall_time_s, "yes" if s_df.equals(p_df) else "NO")

        heavy = heavy_spec(args.heavy)
        print(f"\n2. {heavy.size()} points, 100 Mbps dumbbell, 120 s each")
        serial_h, sh_df = timed(heavy, SerialExecutor, tmp, "serial-heavy")
        print(
            line("serial", serial_h) + f"  ({serial_h.wall_time_s / serial_h.ran:.2f} s per point)"
        )
        pool_h, ph_df = timed(heavy, lambda: PoolExecutor(args.jobs), tmp, "pool-heavy")
        print(line(f"pool, {args.jobs} workers", pool_h, serial_h.wall_time_s))
        heavy_name = f"heavy, {heavy.size()}"
        keep(heavy_name, "serial", serial_h, serial_h.wall_time_s, "")
        same = "yes" if sh_df.equals(ph_df) else "NO"
        keep(heavy_name, "pool", pool_h, serial_h.wall_time_s, same)
        if args.no_ray:
            return 0
        try:
            from l4sim.executors import RayExecutor
        except ImportError:  # pragma: no cover
            return 0
        start = time.perf_counter()
        ray_ex = RayExecutor(None, args.jobs)
        ray_ex._ensure()  # start the local runtime outside the timed sweep
        startup = time.perf_counter() - start
        ray_h, rh_df = timed(heavy, lambda: ray_ex, tmp, "ray-heavy")
        print(line(f"ray local, {ray_ex.jobs} CPUs", ray_h, serial_h.wall_time_s))
        print(
            f"  ray / pool wall time: {ray_h.wall_time_s / pool_h.wall_time_s:.2f} "
            f"(+ {startup:.1f} s to start Ray: "
            f"{(ray_h.wall_time_s + startup) / pool_h.wall_time_s:.2f} with it)"
        )
        print(f"  same rows serial / pool / ray: {sh_df.equals(ph_df) and sh_df.equals(rh_df)}")
        same = "yes" if sh_df.equals(rh_df) else "NO"
        ray_how = f"Ray local (+ {startup:.1f} s to start)"
        keep(heavy_name, ray_how, ray_h, serial_h.wall_time_s, same)
    return 0


if __name__ == "__main__":
    sys.exit(main())
