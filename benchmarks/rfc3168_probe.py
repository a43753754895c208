"""Prague beside a classic flow in one RFC 3168 queue: l4sim against l4s-tests scenario 6.

    python benchmarks/rfc3168_probe.py [--seeds 1,2] [--prague '{"kind": "prague"}']
                                        [--only pie,fq_codel(1q)] [--signals]

Runs every row of the published table (``l4sim/data/reference/l4s_tests_s6.csv``): TCP Prague
and CUBIC or Reno (ECN-capable, or bleached to Not-ECT) share one fq_codel (one flow queue),
PIE or adaptive RED queue at 50 Mbit/s, both at 20 ms RTT, modelled as ``l4s-rtt-fairness``
models that testbed (Accurate ECN on both hosts, HTB's 14-byte overhead, 250 us of host
jitter, a 6 MiB receive buffer). Prints each flow's goodput over the testbed's window
(18-58 s of 60 s) beside the published delivery rates, the Prague:classic ratios and the
classic flow's error; ``--signals`` adds each flow's share of CE marks and drops per packet
sent in that window (the congestion signal each flow saw). ``--prague`` swaps Prague's
options (or the whole scalable sender, e.g. ``"dctcp"``) to test a hypothesis.

The investigation this probe serves, and what it found, is on the fidelity page.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from l4sim.experiments import reference
from l4sim.scenario import Scenario
from l4sim.simulation import Simulation

REFERENCE = "l4s_tests_s6.csv"
DURATION_S = 60
#: The testbed's steady-state window: 40 s ending 2 s before the end (steady_state.go).
WINDOW_S = (18.0, 58.0)
RATE_MBPS = 50


def qdisc(name: str) -> dict[str, Any]:
    """The bottleneck qdisc as l4s.batch's ``[Arg::s6_*]`` configures it."""
    if name == "fq_codel(1q)":  # fq_codel flows 1 (ECN on by default)
        return {"kind": "fq_codel", "flows": 1}
    if name == "fq_codel(1q,1ms/20ms)":
        return {"kind": "fq_codel", "flows": 1, "target": "1ms", "interval": "20ms"}
    if name == "pie":  # pie ecn
        return {"kind": "pie", "ecn": True}
    if name == "pie(100p/5ms)":  # pie limit 100 target 5ms tupdate 32ms alpha 2 beta 20 ecn
        return {"kind": "pie", "ecn": True, "limit": "100p", "target": "5ms", "tupdate": "32ms"}
    if name.startswith("red(") and name.endswith("b)"):
        # red limit N avpkt 1000 adaptive bandwidth 50Mbit ecn
        return {
            "kind": "red",
            "variant": "linux",
            "limit": f"{int(name[4:-2])}B",
            "avpkt": "1000B",
            "adaptive": True,
            "bandwidth": f"{RATE_MBPS}Mbps",
            "ecn": True,
        }
    raise ValueError(f"no scenario 6 qdisc {name!r}")


def scenario(row: dict[str, str], seed: int, prague: Any = "prague") -> Scenario:
    def flow(cca: Any, ecn: bool) -> dict[str, Any]:
        # tcp_ecn = 3 on the testbed's hosts: Accurate ECN for every ECN-capable flow.
        return {"kind": "tcp", "cca": cca, "ecn": ecn, "accecn": ecn, "rmem_max": "6MiB"}

    classic = "cubic" if row["cc2"] == "cubic" else "newreno"
    half_rtt = f"{int(row['rtt1_ms']) / 2:g}ms"
    return Scenario.parse(
        {
            "name": f"s6-{row['qdisc']}-{row['cc2']}-{row['ecn2']}",
            "seed": seed,
            "duration": f"{DURATION_S}s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "0ms", "jitter": "250us"},
                "access_delays": [half_rtt, half_rtt],
                "bottleneck": {
                    "rate": f"{RATE_MBPS}Mbps",
                    "delay": "0ms",
                    "qdisc": qdisc(row["qdisc"]),
                    "overhead": 14,
                },
            },
            "flows": [flow(prague, True), flow(classic, row["ecn2"] == "1")],
        }
    )


def run(row: dict[str, str], seed: int, prague: Any = "prague") -> list[dict[str, float]]:
    """Each flow's goodput (Mbit/s) and congestion signals per packet sent in the window."""
    sim = Simulation(scenario(row, seed, prague))
    sim.run_until(WINDOW_S[0])
    before = sim.summary()["flows"]
    sim.run_until(WINDOW_S[1])
    after = sim.summary()["flows"]
    span = WINDOW_S[1] - WINDOW_S[0]
    out = []
    for a, b in zip(before, after, strict=True):
        sent = max((b["bytes_sent"] - a["bytes_sent"]) / 1514, 1.0)
        out.append(
            {
                "mbps": (b["bytes_acked"] - a["bytes_acked"]) * 8 / span / 1e6,
                "marks": (b["ecn_marks"] - a["ecn_marks"]) / sent,
                "drops": (b["drops"] - a["drops"]) / sent,
            }
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="1,2,3,4")
    ap.add_argument("--prague", default='"prague"', help="the scalable sender's cca (JSON)")
    ap.add_argument("--only", default="", help="comma-separated qdisc names")
    ap.add_argument("--signals", action="store_true")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    prague = json.loads(args.prague)
    only = {q for q in args.only.split(",") if q}
    errors, in_band = [], 0
    for row in reference.rows(REFERENCE):
        if only and row["qdisc"] not in only:
            continue
        runs = [run(row, s, prague) for s in seeds]
        p = statistics.mean(r[0]["mbps"] for r in runs)
        c = statistics.mean(r[1]["mbps"] for r in runs)
        lp, lc = float(row["mbps1"]), float(row["mbps2"])
        err = c / lc - 1
        errors.append(err)
        in_band += abs(err) <= 0.2
        cls = f"{row['cc2']}-{'ecn' if row['ecn2'] == '1' else 'noecn'}"
        line = (
            f"{row['qdisc']:22} {cls:12} linux {lp:5.2f} {lc:5.2f} ({lp / lc:3.0f}:1)  "
            f"l4sim {p:5.2f} {c:5.2f} ({p / c:3.0f}:1)  classic {100 * err:+4.0f}%"
        )
        if args.signals:
            sig = [statistics.mean(r[i]["marks"] + r[i]["drops"] for r in runs) for i in (0, 1)]
            line += f"  signal/pkt prague {100 * sig[0]:.2f}% classic {100 * sig[1]:.2f}%"
        print(line, flush=True)
    if errors:
        print(
            f"classic flows within 20 %: {in_band} of {len(errors)}; "
            f"median error {100 * statistics.median(errors):+.0f}%"
        )


if __name__ == "__main__":
    main()
