"""Speed of l4sim on every shipped scenario (scenarios/*.toml); no ns-3.

    python benchmarks/bench_scenarios.py [--repeat N] [--json out.json] [--out DIR] [GLOB ...]

Each scenario runs through `l4sim.run` as written (its own duration). Printed per scenario:
simulated seconds, wall seconds of the simulation loop (`summary["wall_time_s"]`: excludes
import and scenario loading; best of --repeat), times faster than real time, events
processed and events per wall second. Scenarios whose only slowest link is a single
10 Mbps bottleneck are marked `*`: there the goal is at least 1000x real time (a 10 Mbps
flow needs ~4-5 k events per simulated second). The exit status is 0 whatever the speed
(wall times depend on the machine); see the `goal` column. ``--out DIR`` also writes the
table as DIR/bench_scenarios.md under a stamp line (command, commit, date, load).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

from bench_out import Report  # noqa: E402
from bench_vs_ns3 import _import_l4sim  # noqa: E402

#: Speed goal (times real time) for the 10 Mbps single-bottleneck scenarios.
GOAL_X = 1000.0


def single_10m_bottleneck(sc) -> bool:
    """True if exactly one link is the slowest and it runs at 10 Mbps."""
    rates = [lk["rate_bps"] for lk in sc.to_core_config()["links"]]
    slowest = min(rates)
    return slowest == 10_000_000 and rates.count(slowest) == 1


def bench(l4sim, path: Path, repeat: int) -> dict[str, Any]:
    sc = l4sim.load(path)
    walls, summary = [], None
    for _ in range(repeat):
        summary = l4sim.run(sc).summary
        walls.append(float(summary["wall_time_s"]))
    wall = min(walls)
    sim = float(summary["sim_time_s"])
    events = int(summary["events"])
    return {
        "scenario": path.name,
        "name": sc.name,
        "flows": len(summary["flows"]),
        "sim_s": sim,
        "wall_s": wall,
        "wall_s_all": walls,
        "speed_x": sim / wall if wall > 0 else math.inf,
        "events": events,
        "events_per_s": events / wall if wall > 0 else math.inf,
        "single_10m": single_10m_bottleneck(sc),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("globs", nargs="*", default=["*.toml"], help="scenario file globs")
    ap.add_argument("--repeat", type=int, default=1, help="runs per scenario; best wall time")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    ap.add_argument("--out", help="also write the table as Markdown into this directory")
    args = ap.parse_args(argv)
    out = Report(args.out, argv if argv is None else [__file__, *argv])
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")

    l4sim = _import_l4sim()
    paths = sorted({p for g in args.globs for p in (REPO / "scenarios").glob(g)})
    if not paths:
        ap.error(f"no scenario matches {args.globs}")
    rows, failed = [], 0
    for p in paths:
        try:
            rows.append(bench(l4sim, p, args.repeat))
        except Exception as e:  # report and go on
            failed += 1
            rows.append({"scenario": p.name, "error": f"{type(e).__name__}: {e}"})

    print(
        f"{'scenario':26} {'flows':>5} {'sim s':>6} {'wall s':>8} {'x real time':>11}"
        f" {'events':>10} {'M events/s':>10}  goal"
    )
    for r in rows:
        if "error" in r:
            print(f"{r['scenario']:26} error: {r['error']}")
            continue
        goal = ""
        if r["single_10m"]:
            goal = f"* >= {GOAL_X:.0f}x: " + ("ok" if r["speed_x"] >= GOAL_X else "MISS")
        print(
            f"{r['scenario']:26} {r['flows']:>5} {r['sim_s']:>6.0f} {r['wall_s']:>8.4f}"
            f" {r['speed_x']:>11.0f} {r['events']:>10,d} {r['events_per_s'] / 1e6:>10.2f}  {goal}"
        )
    print(f"\n* single 10 Mbps bottleneck; best of {args.repeat}; wall = simulation loop only")
    out.table(
        "bench_scenarios",
        ["scenario", "flows", "sim s", "wall s", "x real time", "events", "M events/s", "goal"],
        [
            [f"`{r['scenario']}`", "error", "", "", "", "", "", r["error"]]
            if "error" in r
            else [
                f"`{r['scenario']}`",
                r["flows"],
                f"{r['sim_s']:.0f}",
                f"{r['wall_s']:.4f}",
                f"{r['speed_x']:,.0f}",
                f"{r['events']:,d}",
                f"{r['events_per_s'] / 1e6:.2f}",
                (("ok" if r["speed_x"] >= GOAL_X else "MISS") + f" (≥ {GOAL_X:.0f}x)")
                if r["single_10m"]
                else "",
            ]
            for r in rows
        ],
        f"Best of {args.repeat}; wall: the simulation loop only. Goal: ≥ {GOAL_X:.0f}x real "
        "time where a single 10 Mbit/s bottleneck is the slowest link.",
    )
    if args.json is not None:
        meta = {
            "python": sys.version.split()[0],
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "l4sim_version": getattr(l4sim, "__version__", None),
            "repeat": args.repeat,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"meta": meta, "scenarios": rows}, indent=1))
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
