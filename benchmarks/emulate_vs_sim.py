"""Simulation vs emulation: the same scenarios in l4sim's simulator and on the kernel's TCP
through ``l4sim emulate`` (root needed; every case runs in real time).

Cases: FIFO (100 packets), CoDel, PIE, FQ-CoDel, DualPI2 (their defaults) x Reno, CUBIC,
BBR x 1 and 4 bulk flows x 10 and 50 Mbit/s, a dumbbell with 20 ms base RTT (bottleneck
8 ms, access links 1 ms each way). CUBIC runs with HyStart in the simulator too
(``hystart = true``, l4sim's default since issue 17, written out because the kept kernel
results were compared against it before), as Linux has it on. Compared: total goodput
(within 10 %) and the bottleneck's mean sojourn (within 20 %; where both are under 1 ms,
within 0.2 ms).

    sudo python benchmarks/emulate_vs_sim.py [--duration 20s] [--quick] [--json out.json]

prints one Markdown row per case (the README's table) and writes every figure to the JSON
file. ``--quick``: FIFO and CoDel x CUBIC x 1 flow at 10 Mbit/s, 5 s.
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

from l4sim import run
from l4sim.emulate import emulate
from l4sim.scenario import loads

QDISCS = {
    "fifo": '{ kind = "fifo", limit = "100p" }',
    "codel": '{ kind = "codel" }',
    "pie": '{ kind = "pie" }',
    "fq_codel": '{ kind = "fq_codel" }',
    "dualpi2": '{ kind = "dualpi2" }',
}
CCAS = {"reno": '"newreno"', "cubic": '{ kind = "cubic", hystart = true }', "bbr": '"bbr"'}
GOODPUT_TOL, SOJOURN_TOL, SOJOURN_FLOOR_S = 0.10, 0.20, 0.2e-3


def dumbbell(name: str, qdisc: str, flows: str, mbps: int, duration: str) -> str:
    """The comparison's dumbbell (20 ms base RTT) with a qdisc table and flow tables."""
    return f"""
name = "{name}"
duration = "{duration}"
[topology]
preset = "dumbbell"
access = {{ rate = "1Gbps", delay = "1ms" }}
[topology.bottleneck]
rate = "{mbps}Mbps"
delay = "8ms"
qdisc = {qdisc}
{flows}"""


def scenario(qdisc: str, cca: str, flows: int, mbps: int, duration: str) -> str:
    table = f'[[flows]]\nkind = "tcp"\ncca = {CCAS[cca]}\ncount = {flows}\n'
    return dumbbell(f"cmp_{qdisc}_{cca}_{flows}f_{mbps}M", QDISCS[qdisc], table, mbps, duration)


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    q = next(x for x in summary["queues"] if x["link"] == "r0->r1")
    goodputs = [f["goodput_bps"] for f in summary["flows"]]
    return {
        "goodput_bps": sum(goodputs),
        "flow_goodputs_bps": goodputs,
        "jain": summary["jain_fairness"],
        "sojourn_mean_s": q["sojourn_mean_s"] or 0.0,
        "sojourn_p99_s": q["sojourn_p99_s"] or 0.0,
        "drops": q["drops"],
        "retransmits": sum(f["retransmits"] or 0 for f in summary["flows"]),
        "srtt_mean_s": [f["srtt_mean_s"] for f in summary["flows"]],
        "utilization": q["utilization"],
    }


def compare(sim: dict[str, Any], emu: dict[str, Any]) -> dict[str, Any]:
    g = emu["goodput_bps"] / sim["goodput_bps"] - 1 if sim["goodput_bps"] else float("nan")
    a, b = sim["sojourn_mean_s"], emu["sojourn_mean_s"]
    small = max(a, b) < 1e-3
    s = (b - a) / a if a > 0 else float("inf")
    return {
        "goodput_err": g,
        "sojourn_err": s,
        "goodput_ok": abs(g) <= GOODPUT_TOL,
        "sojourn_ok": abs(b - a) <= SOJOURN_FLOOR_S if small else abs(s) <= SOJOURN_TOL,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", default="20s")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", type=Path, default=Path("emulate_vs_sim.json"))
    ap.add_argument("--only", help="run only cases whose name contains this text")
    args = ap.parse_args()
    if args.quick:
        cases = [(q, "cubic", 1, 10) for q in ("fifo", "codel")]
        args.duration = "5s"
    else:
        cases = list(itertools.product(QDISCS, CCAS, (1, 4), (10, 50)))
    results: list[dict[str, Any]] = []
    if args.json.is_file():
        results = json.loads(args.json.read_text())  # resume
    done = {r["name"] for r in results}
    print(
        "| qdisc | cca | flows | Mbit/s | goodput sim / emu (Mbit/s) | err | "
        "sojourn sim / emu (ms) | err | retx sim / emu |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for qdisc, cca, flows, mbps in cases:
        text = scenario(qdisc, cca, flows, mbps, args.duration)
        sc = loads(text)
        if args.only and args.only not in sc.name:
            continue
        if sc.name not in done:
            t = time.perf_counter()
            sim = figures(run(sc).summary)
            emu = figures(emulate(sc).summary)
            results.append(
                {"name": sc.name, "qdisc": qdisc, "cca": cca, "flows": flows, "mbps": mbps}
                | {"sim": sim, "emu": emu, "wall_s": time.perf_counter() - t}
                | compare(sim, emu)
            )
            args.json.write_text(json.dumps(results, indent=1))
        r = next(x for x in results if x["name"] == sc.name)
        sim, emu = r["sim"], r["emu"]

        def mark(ok: bool) -> str:
            return "" if ok else " **miss**"

        print(
            f"| {qdisc} | {cca} | {flows} | {mbps} | {sim['goodput_bps'] / 1e6:.2f} / "
            f"{emu['goodput_bps'] / 1e6:.2f} | {100 * r['goodput_err']:+.1f} %"
            f"{mark(r['goodput_ok'])} | {1e3 * sim['sojourn_mean_s']:.2f} / "
            f"{1e3 * emu['sojourn_mean_s']:.2f} | {100 * r['sojourn_err']:+.0f} %"
            f"{mark(r['sojourn_ok'])} | {sim['retransmits']} / {emu['retransmits']} |",
            flush=True,
        )
    n = len(results)
    print(
        f"\n{sum(r['goodput_ok'] for r in results)}/{n} within 10 % goodput, "
        f"{sum(r['sojourn_ok'] for r in results)}/{n} within 20 % mean sojourn"
    )


if __name__ == "__main__":
    main()
