"""Prague beside a classic flow in one RFC 3168 queue: l4sim against l4s-tests scenario 6.

    python benchmarks/rfc3168_probe.py [--seeds 1,2] [--prague '{"kind": "prague"}']
                                        [--classic-flow '{"delack": {"timeout": "200ms"}}']
                                        [--only pie,fq_codel(1q)] [--signals]

Runs every row of the published table with the scenarios of ``l4sim reproduce
rfc3168-coexistence`` (``l4sim.experiments.rfc3168_coexistence``). Prints each flow's
goodput over the testbed's window (18-58 s of 60 s) beside the published delivery rates,
the Prague:classic ratios and the classic flow's error; ``--signals`` adds each flow's share
of CE marks and drops per packet sent in that window (the congestion signal each flow saw).
``--prague`` swaps Prague's options (or the whole scalable sender, e.g. ``"dctcp"``) to test
a hypothesis; ``--classic-flow`` adds options to the classic flow (its receiver's ACK policy,
say).

The investigation this probe serves, and what it found, is on the fidelity page.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

from l4sim.engine.simulation import Simulation
from l4sim.experiments.rfc3168_coexistence import WINDOW_S, Case, cases, scenario
from l4sim.scenario import Scenario


def run(
    case: Case, seed: int, prague: Any = "prague", classic: dict[str, Any] | None = None
) -> list[dict[str, float]]:
    """Each flow's goodput (Mbit/s) and congestion signals per packet sent in the window."""
    sc = scenario(case, seed, prague)
    if classic:
        spec = sc.model_dump(mode="json", exclude_none=True)
        spec["flows"][1].update(classic)
        sc = Scenario.parse(spec)
    sim = Simulation(sc)
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
    ap.add_argument("--classic-flow", default="{}", help="options added to the classic flow (JSON)")
    ap.add_argument("--only", default="", help="comma-separated qdisc names")
    ap.add_argument("--signals", action="store_true")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    prague = json.loads(args.prague)
    classic = json.loads(args.classic_flow)
    only = {q for q in args.only.split(",") if q}
    errors, in_band = [], 0
    for case in cases():
        if only and case.qdisc not in only:
            continue
        runs = [run(case, s, prague, classic) for s in seeds]
        p = statistics.mean(r[0]["mbps"] for r in runs)
        c = statistics.mean(r[1]["mbps"] for r in runs)
        lp, lc = case.testbed_prague_mbps, case.testbed_classic_mbps
        err = c / lc - 1
        errors.append(err)
        in_band += abs(err) <= 0.2
        cls = f"{case.classic}-{case.ecn_name}"
        line = (
            f"{case.qdisc:22} {cls:12} linux {lp:5.2f} {lc:5.2f} ({lp / lc:3.0f}:1)  "
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
