"""What the time series cost: the same runs with default sampling (100 ms) and with sampling
every 10 s (nearly no rows), side by side, through the Python API including the DataFrames.

    python benchmarks/bench_sampling.py               # both cases, best of 3 rounds
    python benchmarks/bench_sampling.py --rounds 1    # one round (quicker, noisier)
    python benchmarks/bench_sampling.py --only 4flow  # the cases whose name contains 4flow
    python benchmarks/bench_sampling.py --drain       # frames by drain_series() (no copy)

Cases:

* ``1000flow_1G_10s``: 1 000 NewReno bulk flows over a 1 Gbit/s / 10 ms dumbbell bottleneck
  (FIFO 1 000 packets, 10 Gbit/s access), 10 s: many flow rows per sample.
* ``4flow_10M_60s``: ``scenarios/bench_4flow_10M.toml`` (4 flows, 10 Mbit/s, 60 s): few
  events per sample, so the per-sample work shows.

Each timed run builds the simulation, runs it to its end and builds the summary and the
flows and queues DataFrames (what ``l4sim.run`` does). Prints, per case, the least wall and
CPU time over the rounds with each interval, the rows, and the overhead of default sampling
in % (CPU time moves less than wall time when other work shares the machine).
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SPARSE = "10s"


def many_flows() -> dict[str, Any]:
    return {
        "name": "bench_1000flow_1G",
        "seed": 1,
        "duration": "10s",
        "topology": {
            "preset": "dumbbell",
            "access": {"rate": "10Gbps", "delay": "1ms"},
            "bottleneck": {
                "rate": "1Gbps",
                "delay": "10ms",
                "qdisc": {"kind": "fifo", "limit": "1000p"},
            },
        },
        "flows": [{"kind": "tcp", "cca": "newreno", "count": 1000}],
    }


def four_flows() -> dict[str, Any]:
    import l4sim

    return l4sim.load(ROOT / "scenarios" / "bench_4flow_10M.toml").to_dict()


CASES: dict[str, Callable[[], dict[str, Any]]] = {
    "1000flow_1G_10s": many_flows,
    "4flow_10M_60s": four_flows,
}


def timed(data: dict[str, Any], interval: str, drain: bool) -> tuple[float, float, int, int]:
    """Wall and CPU time of one run with sample_interval ``interval`` (build, run, summary,
    frames) and the rows of the flows and queues frames."""
    from l4sim import Scenario, Simulation

    scenario = Scenario.parse({**data, "sample_interval": interval})
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    sim = Simulation(scenario)
    sim.run()
    sim.summary()
    flows, queues = sim.drain_series() if drain else (sim.flows(), sim.queues())
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return wall, cpu, flows.height, queues.height


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="runs of each (the best is kept)")
    ap.add_argument("--only", default="", help="only the cases whose name contains this")
    ap.add_argument(
        "--drain",
        action="store_true",
        help="take the frames with drain_series() (no copy) instead of flows() and queues()",
    )
    args = ap.parse_args()
    print(
        f"{'case':18} {'interval':>8} {'wall s':>8} {'cpu s':>8} {'flow rows':>10} "
        f"{'queue rows':>10}"
    )
    for name, make in CASES.items():
        if args.only not in name:
            continue
        data = make()
        runs: dict[str, list[tuple[float, float, int, int]]] = {"100ms": [], SPARSE: []}
        for _ in range(max(1, args.rounds)):
            # Alternate the two so a change of machine load hits both alike.
            for interval in runs:
                runs[interval].append(timed(data, interval, args.drain))
        # The least of each (wall and CPU apart): what the machine's other work left alone.
        best = {k: (min(r[0] for r in v), min(r[1] for r in v), *v[0][2:]) for k, v in runs.items()}
        for interval, (wall, cpu, nf, nq) in best.items():
            print(f"{name:18} {interval:>8} {wall:8.3f} {cpu:8.3f} {nf:10d} {nq:10d}")
        (dw, dc, *_), (sw, sc, *_) = best["100ms"], best[SPARSE]
        print(
            f"{name:18} overhead of 100 ms sampling: wall {100 * (dw / sw - 1):+.1f} %, "
            f"CPU {100 * (dc / sc - 1):+.1f} %"
        )


if __name__ == "__main__":
    main()
