"""Prague's control loop beside a classic flow in one RFC 3168 queue, over time.

    python benchmarks/rfc3168_trace.py [--cases 'pie:reno:ecn,fq_codel(1q):cubic:ecn']
                                        [--seed 1] [--prague '{"kind": "prague"}']

For each case of ``l4sim reproduce rfc3168-coexistence`` (qdisc:classic:ecn|noecn), samples
both flows every 2 ms over the testbed's window (18-58 s) and prints, per flow: mean cwnd,
SRTT, the marked fraction of segments delivered, marks per round, how often the window
went down (per round), and the share of time at cwnd 2. For Prague it also replays the
marks, round by round, through the alpha rule both L4STeam trees share (EWMA, g = 1/16, per
round) and prints the alpha that gives and the window DCTCP's law 2/alpha puts Prague at with
one reduction per round. For the classic flow it prints the signal per packet that the
square-root law (cwnd = √(1.5/p), which l4sim's Reno and CUBIC follow here) needs to put
the flow at the testbed's rate with l4sim's RTT: the signal the testbed's AQM would have
had to give it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from typing import Any

from l4sim.engine.simulation import Simulation
from l4sim.experiments.rfc3168_coexistence import WINDOW_S, Case, cases, scenario

STEP_S = 0.002
MSS = 1448


def find(spec: str) -> Case:
    qdisc, classic, ecn = spec.split(":")
    for case in cases():
        if case.qdisc == qdisc and case.classic == classic and case.ecn_name == ecn:
            return case
    raise SystemExit(f"no case {spec!r}: give qdisc:cubic|reno:ecn|noecn")


def trace(case: Case, seed: int, prague: Any) -> list[dict[str, list[float]]]:
    """Per flow, each observed column sampled every STEP_S over the window."""
    sim = Simulation(scenario(case, seed, prague))
    sim.run_until(WINDOW_S[0])
    cols: list[dict[str, list[float]]] = [{}, {}]
    t = WINDOW_S[0]
    while t < WINDOW_S[1]:
        t += STEP_S
        sim.run_until(t)
        flows = sim.observe()["flows"]
        for i in (0, 1):
            for k, v in flows.items():
                if k != "ca_state":
                    cols[i].setdefault(k, []).append(float(v[i]))
    return cols


def rounds(col: dict[str, list[float]]) -> list[tuple[float, float]]:
    """(segments delivered, CE marks) per round of one SRTT."""
    out, start, elapsed = [], 0, 0.0
    for j in range(1, len(col["srtt_s"])):
        elapsed += STEP_S
        if elapsed >= col["srtt_s"][j]:
            acked = col["segments_acked"][j] - col["segments_acked"][start]
            out.append((acked, col["ecn_ce"][j] - col["ecn_ce"][start]))
            start, elapsed = j, 0.0
    return out


def describe(name: str, col: dict[str, list[float]]) -> tuple[str, float, float]:
    span = WINDOW_S[1] - WINDOW_S[0]
    cwnd, srtt = col["cwnd_pkts"], statistics.mean(col["srtt_s"])
    segs = col["segments_acked"][-1] - col["segments_acked"][0]
    marks = col["ecn_ce"][-1] - col["ecn_ce"][0]
    losses = col["losses"][-1] - col["losses"][0]
    downs = sum(b < a for a, b in itertools.pairwise(cwnd))
    n_rounds = span / srtt
    p = (marks + losses) / max(segs, 1)
    at_two = sum(c <= 2 for c in cwnd) / len(cwnd)
    line = (
        f"  {name:7} cwnd {statistics.mean(cwnd):6.1f} (at 2: {at_two:4.0%})"
        f"  srtt {1e3 * srtt:5.1f} ms  signal {100 * p:5.2f} %/seg  marks/round "
        f"{marks / n_rounds:5.2f}  losses {losses:4.0f}  window cuts/round {downs / n_rounds:4.2f}"
    )
    return line, p, srtt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default="pie:reno:ecn,fq_codel(1q):cubic:ecn")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prague", default='"prague"', help="the scalable sender's cca (JSON)")
    args = ap.parse_args()
    prague = json.loads(args.prague)
    for spec in args.cases.split(","):
        case = find(spec)
        cols = trace(case, args.seed, prague)
        print(f"{case.qdisc} {case.classic}-{case.ecn_name} (seed {args.seed}, {args.prague})")
        line, _, _ = describe("prague", cols[0])
        print(line)
        alpha, alphas = 1.0, []
        for acked, marked in rounds(cols[0]):
            alpha += (marked / max(acked, 1) - alpha) / 16
            alphas.append(alpha)
        a = statistics.mean(alphas[len(alphas) // 4 :])
        print(f"          replayed alpha {a:.4f}: DCTCP's law: window 2/alpha = {2 / a:6.1f}")
        line, p, srtt = describe("classic", cols[1])
        print(line)
        w_pub = case.testbed_classic_mbps * 1e6 * srtt / (8 * MSS)
        need = 1.5 / w_pub**2
        print(
            f"          at the testbed's {case.testbed_classic_mbps:.2f} Mbit/s and this SRTT the "
            f"classic cwnd would be {w_pub:4.1f}: the square-root law needs {100 * need:5.1f} % "
            f"signal ({need / max(p, 1e-9):4.1f}x what it got)"
        )


if __name__ == "__main__":
    main()
