"""Inference cost of LFQ inside the core (paper 001): the same flow through plain ``fq``
and through ``fq`` in LFQ mode (the authors' 60 -> 256 x 3 -> 1 network, a decision every
n-th packet of the flow), wall time of each run, the slowdown, and the cost per decision
((LFQ wall - fq wall) / decisions). The network's last bias is set so it answers ~100
packets whatever the features, so both runs carry about the same traffic.

    python benchmarks/bench_lfq.py [--seconds 20] [--intervals 1 10 100] [--width 256]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch

import l4sim
from l4sim.agents import lfq


def wall(sc: l4sim.Scenario, repeat: int) -> tuple[float, dict]:
    best, summary = float("inf"), {}
    for _ in range(repeat):
        sim = l4sim.Simulation(sc)
        t = time.perf_counter()
        sim.run()
        best = min(best, time.perf_counter() - t)
        summary = sim.summary()
    return best, summary


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--intervals", type=int, nargs="+", default=[1, 10, 100])
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    torch.manual_seed(0)
    net = lfq.LfqNet(a.width)
    with torch.no_grad():
        net.fc4.weight.mul_(0.01)
        net.fc4.bias.fill_(100.0)
    with tempfile.TemporaryDirectory() as tmp:
        w = str(Path(tmp) / "w.safetensors")
        lfq.save_weights(w, net)
        base = {"kind": "fq", "per_flow_limit": "100p"}
        t_fq, s = wall(lfq.scenario(15.0, 15.0, "newreno", a.seconds, base), a.repeat)
        q = s["queues"][0]
        arrivals = q["packets"] + q["drops"]
        print(f"fq: {t_fq * 1e3:.1f} ms for {arrivals} arrivals at the bottleneck")
        print("interval  wall_ms  slowdown  decisions  ns/decision  ns/arrival  max_queue")
        for n in a.intervals:
            qd = {"kind": "fq", "lfq_policy": w, "lfq_interval": n}
            t, s = wall(lfq.scenario(15.0, 15.0, "newreno", a.seconds, qd), a.repeat)
            q = s["queues"][0]
            arr = q["packets"] + q["drops"]
            dec = -(-arr // n)
            print(
                f"{n:8d} {t * 1e3:8.1f} {t / t_fq:8.2f}x {dec:10d} "
                f"{(t - t_fq) / dec * 1e9:11.0f} {(t - t_fq) / arr * 1e9:11.0f} "
                f"{q['backlog_max_pkts']:10d}"
            )
        x = [[0.05 * (i % 7)] * 60 for i in range(20_000)]
        t = time.perf_counter()
        l4sim._core.lfq_infer(w, x)
        dt = time.perf_counter() - t
        print(f"lfq_infer: {dt / len(x) * 1e9:.0f} ns per row (with Python list conversion)")


if __name__ == "__main__":
    main()
