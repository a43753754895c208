"""Per-packet cost of the shipped LFQ networks side by side, in one run: plain ``fq``, the
3 x 64 (``--recipe fast``) and the 3 x 256 (``--recipe paper``, the default) weights of each
model, on the same 15 Mbit/s / 15 ms NewReno flow (10 s). The cost is CPU time of this process
(``time.process_time``, best of ``--repeat``) per packet arriving at the bottleneck qdisc, so
that the different buffers the networks choose (and so the different traffic) do not bias it,
and its ratio to plain ``fq``'s.

    python benchmarks/lfq_widths.py [--repeat 5] [--seconds 10]
"""

from __future__ import annotations

import argparse
import time

import l4sim
from l4sim.agents import lfq
from l4sim.agents.lfq_recipes import MODELS
from l4sim.experiments import lfq as lfq_experiment


def cost(qdisc: dict, seconds: float, repeat: int) -> tuple[float, int]:
    """Best CPU ns per arriving packet over ``repeat`` runs, and the packets of a run."""
    sc = lfq.scenario(15.0, 15.0, "newreno", seconds, qdisc)
    best, packets = float("inf"), 0
    for _ in range(repeat):
        sim = l4sim.Simulation(sc)
        t = time.process_time()
        sim.run()
        best = min(best, time.process_time() - t)
        packets = int(sim.summary()["queues"][0]["packets"])
    return best / packets * 1e9, packets


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args()
    base, packets = cost({"kind": "fq"}, a.seconds, a.repeat)
    print(f"{'qdisc':28s} {'packets':>8s} {'ns/packet':>10s} {'x fq':>6s}")
    print(f"{'fq (100 packets per flow)':28s} {packets:8d} {base:10.0f} {1.0:6.2f}")
    for model in MODELS:
        for fast, width in ((True, 64), (False, 256)):
            w = lfq_experiment.shipped_weights(model, fast)
            policy = {"kind": "lfq", "weights": str(w), "every": lfq_experiment.INTERVAL}
            q = {"kind": "fq", "policy": policy}
            ns, n = cost(q, a.seconds, a.repeat)
            print(f"{f'LFQ {model} 3 x {width}':28s} {n:8d} {ns:10.0f} {ns / base:6.2f}")


if __name__ == "__main__":
    main()
