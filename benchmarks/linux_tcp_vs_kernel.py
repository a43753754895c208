"""l4sim's TCP, RFC and Linux variants, against the kernel's through the same qdiscs.

The kernel's side comes from `sudo python benchmarks/emulate_small_windows.py` (kept in
`benchmarks/data/emulate_small_windows.json`: 20 cases, 10 Mbit/s, FIFO / CoDel / PIE /
RED with ECN, five flows of one algorithm or Reno / CUBIC beside BBR, 20 s, the kernel's TCP
through `l4sim emulate`). This script reruns only the simulation, once per set of l4sim's
Linux-behaviour TCP options, and counts the flows within 20 % of the kernel's goodput:
matched by index (as the emulation benchmark does), and with the flows of one algorithm
sorted (equal flows trade places from run to run; only the spread of shares is compared).

    python benchmarks/linux_tcp_vs_kernel.py [--kernel FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from emulate_small_windows import scenario
from l4sim import run
from l4sim.scenario import loads

DATA = Path(__file__).resolve().parent / "data" / "emulate_small_windows.json"
TOL = 0.20

VARIANTS: dict[str, dict[str, Any]] = {
    "RFC (default)": {},
    "rack": {"rack": True},
    "linux_rto": {"linux_rto": True},
    "rack + linux_rto": {"rack": True, "linux_rto": True},
    "rack + linux_rto + quickack + prr_in_cwr": {
        "rack": True,
        "linux_rto": True,
        "quickack": True,
        "prr_in_cwr": True,
    },
}


def goodputs(case: dict[str, Any], opts: dict[str, Any]) -> tuple[list[float], list[str]]:
    sc = loads(scenario(case["qdisc"], case["mix"], "20s"))
    d = sc.to_dict()
    for f in d["flows"]:
        f.update(opts)
    s = run(type(sc).parse(d)).summary
    ccs = [f["cca"] for f in s["flows"]]
    return [f["goodput_bps"] for f in s["flows"]], ccs


def within(sim: list[float], kern: list[float]) -> int:
    return sum(k > 0 and abs(s / k - 1) <= TOL for s, k in zip(sim, kern, strict=True))


def by_cc_sorted(xs: list[float], ccs: list[str]) -> list[float]:
    out: list[float] = []
    for cc in dict.fromkeys(ccs):
        out += sorted(x for x, c in zip(xs, ccs, strict=True) if c == cc)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", type=Path, default=DATA)
    args = ap.parse_args()
    cases = json.loads(args.kernel.read_text())
    n = sum(len(c["emu"]["flow_goodputs_bps"]) for c in cases)
    print(f"| l4sim TCP | flows within 20 % of the kernel (of {n}) | same, equal flows sorted |")
    print("|---|---|---|")
    for name, opts in VARIANTS.items():
        idx = srt = 0
        for c in cases:
            kern = c["emu"]["flow_goodputs_bps"]
            sim, ccs = goodputs(c, opts)
            idx += within(sim, kern)
            srt += within(by_cc_sorted(sim, ccs), by_cc_sorted(kern, ccs))
        print(f"| {name} | {idx} | {srt} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
