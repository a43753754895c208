"""Kernel vs l4sim per flow where classic TCP runs at small windows (issue 17's emulator
bullet): the kernel's Reno / CUBIC / BBR against l4sim's through the same userspace qdiscs
(FIFO 100 packets, CoDel, PIE, RED with ECN), each flow's goodput compared (within 20 %).

Cases at 10 Mbit/s, 20 ms base RTT (the dumbbell of ``emulate_vs_sim.py``): five flows of
one algorithm (2 Mbit/s and ~3-4 packets of window each), and Reno or CUBIC beside BBR (a
weaker flow beside a stronger competitor). RED: 100-packet limit, thresholds 5 / 15
packets, ECN on, and the flows ask for ECN.

    sudo python benchmarks/emulate_small_windows.py [--duration 20s] [--json out.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from emulate_vs_sim import CCAS, QDISCS, dumbbell, figures
from l4sim import run
from l4sim.emulate import emulate
from l4sim.scenario import loads

SMALL_QDISCS = {
    "fifo": QDISCS["fifo"],
    "codel": QDISCS["codel"],
    "pie": QDISCS["pie"],
    "red_ecn": '{ kind = "red", limit = "100p", min_th = "5p", max_th = "15p", ecn = true }',
}
MIXES: dict[str, list[tuple[str, int]]] = {
    "5 reno": [("reno", 5)],
    "5 cubic": [("cubic", 5)],
    "5 bbr": [("bbr", 5)],
    "reno+bbr": [("reno", 1), ("bbr", 1)],
    "cubic+bbr": [("cubic", 1), ("bbr", 1)],
}
FLOW_TOL = 0.20


def scenario(qdisc: str, mix: str, duration: str) -> str:
    ecn = "true" if qdisc == "red_ecn" else "false"
    flows = "".join(
        f'[[flows]]\nkind = "tcp"\ncca = {CCAS[c]}\ncount = {n}\necn = {ecn}\n'
        for c, n in MIXES[mix]
    )
    name = f"small_{qdisc}_{mix.replace(' ', '').replace('+', '_')}"
    return dumbbell(name, SMALL_QDISCS[qdisc], flows, 10, duration)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", default="20s")
    ap.add_argument("--json", type=Path, default=Path("emulate_small_windows.json"))
    args = ap.parse_args()
    results: list[dict[str, Any]] = []
    if args.json.is_file():
        results = json.loads(args.json.read_text())  # resume
    done = {r["name"] for r in results}
    print("| qdisc | flows | per-flow goodput sim (Mbit/s) | emu (Mbit/s) | within 20 % |")
    print("|---|---|---|---|---|")
    for qdisc, mix in itertools.product(SMALL_QDISCS, MIXES):
        sc = loads(scenario(qdisc, mix, args.duration))
        if sc.name not in done:
            t = time.perf_counter()
            sim, emu = figures(run(sc).summary), figures(emulate(sc).summary)
            errs = [
                e / s - 1 if s > 0 else float("inf")
                for s, e in zip(sim["flow_goodputs_bps"], emu["flow_goodputs_bps"], strict=True)
            ]
            results.append(
                {"name": sc.name, "qdisc": qdisc, "mix": mix, "sim": sim, "emu": emu}
                | {"flow_errs": errs, "wall_s": time.perf_counter() - t}
            )
            args.json.write_text(json.dumps(results, indent=1))
        r = next(x for x in results if x["name"] == sc.name)
        ok = sum(abs(e) <= FLOW_TOL for e in r["flow_errs"])

        def mbps(xs: list[float]) -> str:
            return " ".join(f"{x / 1e6:.2f}" for x in xs)

        print(
            f"| {qdisc} | {mix} | {mbps(r['sim']['flow_goodputs_bps'])} | "
            f"{mbps(r['emu']['flow_goodputs_bps'])} | {ok} of {len(r['flow_errs'])} |",
            flush=True,
        )
    flows = [e for r in results for e in r["flow_errs"]]
    print(f"\n{sum(abs(e) <= FLOW_TOL for e in flows)} of {len(flows)} flows within 20 %")


if __name__ == "__main__":
    main()
