"""l4sim's TCP, RFC and Linux variants, against the kernel's through the same qdiscs.

The kernel's side comes from two emulation benchmarks, kept in `benchmarks/data/`:
`emulate_small_windows.json` (`sudo python benchmarks/emulate_small_windows.py`: 20 cases,
10 Mbit/s, FIFO / CoDel / PIE / RED with ECN, five flows of one algorithm or Reno / CUBIC
beside BBR, 20 s) and `emulate_vs_sim.json` (`sudo python benchmarks/emulate_vs_sim.py`:
60 cases, five qdiscs x Reno / CUBIC / BBR x 1 and 4 flows x 10 and 50 Mbit/s). This script
reruns only the simulation, once per set of l4sim's Linux-behaviour TCP options, and counts
(1) the small-window flows within 20 % of the kernel's goodput, matched by index (as the
emulation benchmark does) and with the flows of one algorithm sorted (equal flows trade
places from run to run), and (2) the grid's cases within 10 % in goodput and 20 % in mean
sojourn (all, and without BBR, whose model differs from Linux's for its own reasons).

    python benchmarks/linux_tcp_vs_kernel.py [--table]

`--table` prints instead the per-flow table of the small-window cases for l4sim's default
TCP: each case's kernel and l4sim goodputs, flows of one algorithm sorted, misses starred.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from emulate_small_windows import scenario
from emulate_vs_sim import figures
from emulate_vs_sim import scenario as grid_scenario
from l4sim import run
from l4sim.scenario import loads

DATA = Path(__file__).resolve().parent / "data" / "emulate_small_windows.json"
GRID = Path(__file__).resolve().parent / "data" / "emulate_vs_sim.json"
TOL = 0.20
#: CUBIC's three Linux behaviours (l4sim's defaults) off.
CUBIC_RFC = {"hystart": False, "linux_alpha": False, "initial_cap": False}

VARIANTS: dict[str, dict[str, Any]] = {
    "default (Linux quick ACKs, CUBIC, RACK-TLP, RTO, receive-buffer autotuning)": {},
    "CUBIC as RFC 9438 (no HyStart, RFC alpha, no 5 % cap)": {"cubic": CUBIC_RFC},
    "no quickack (RFC 5681 receiver)": {"quickack": False},
    "RFC 6675 loss detection (rack = false)": {"rack": False},
    "RFC 6298 RTO (linux_rto = false)": {"linux_rto": False},
    "both (RFC 6675 and RFC 6298)": {"rack": False, "linux_rto": False},
    "prr_in_cwr": {"prr_in_cwr": True},
    "fixed 64 MiB window (no receive-buffer autotuning)": {"rwnd": "64MiB"},
}


def with_options(sc: Any, opts: dict[str, Any]) -> Any:
    """`sc` with TCP options `opts` on every flow (`opts["cubic"]`: CUBIC options for the
    CUBIC flows)."""
    d = sc.to_dict()
    cubic = opts.get("cubic", {})
    for f in d["flows"]:
        f.update({k: v for k, v in opts.items() if k != "cubic"})
        cca = f.get("cca")
        if cubic and (cca == "cubic" or (isinstance(cca, dict) and cca["kind"] == "cubic")):
            f["cca"] = {**(cca if isinstance(cca, dict) else {"kind": "cubic"}), **cubic}
    return type(sc).parse(d)


def goodputs(case: dict[str, Any], opts: dict[str, Any]) -> tuple[list[float], list[str]]:
    sc = loads(scenario(case["qdisc"], case["mix"], "20s"))
    s = run(with_options(sc, opts)).summary
    ccs = [f["cca"] for f in s["flows"]]
    return [f["goodput_bps"] for f in s["flows"]], ccs


def within(sim: list[float], kern: list[float]) -> int:
    return sum(k > 0 and abs(s / k - 1) <= TOL for s, k in zip(sim, kern, strict=True))


def by_cc_sorted(xs: list[float], ccs: list[str]) -> list[float]:
    out: list[float] = []
    for cc in dict.fromkeys(ccs):
        out += sorted(x for x, c in zip(xs, ccs, strict=True) if c == cc)
    return out


def grid_case(name: str, opts: dict[str, Any]) -> dict[str, Any]:
    """Simulate the emulation grid's case `cmp_<qdisc>_<cca>_<n>f_<rate>M` with `opts`."""
    parts = name.split("_")
    qdisc, cca = "_".join(parts[1:-3]), parts[-3]
    flows, mbps = int(parts[-2][:-1]), int(parts[-1][:-1])
    sc = loads(grid_scenario(qdisc, cca, flows, mbps, "20s"))
    return figures(run(with_options(sc, opts)).summary)


def grid(path: Path) -> None:
    cases = json.loads(path.read_text())
    nb = sum("_bbr_" not in c["name"] for c in cases)
    print(
        f"\n| l4sim TCP | goodput within 10 % (of {len(cases)}) | mean sojourn within 20 % "
        f"| without BBR (of {nb}) |"
    )
    print("|---|---|---|---|")
    for name, opts in VARIANTS.items():
        good = soj = soj_nb = 0
        for c in cases:
            sim, kern = grid_case(c["name"], opts), c["emu"]
            good += abs(kern["goodput_bps"] / sim["goodput_bps"] - 1) <= 0.10
            s = sim["sojourn_mean_s"]
            ok = s > 0 and abs(kern["sojourn_mean_s"] / s - 1) <= TOL
            soj += ok
            soj_nb += ok and "_bbr_" not in c["name"]
        print(f"| {name} | {good} | {soj} | {soj_nb} |", flush=True)


def per_flow_table(cases: list[dict[str, Any]]) -> None:
    """Kernel vs l4sim (default TCP) per flow, in the order of the mix, the flows of one
    algorithm sorted; `*` marks a flow more than 20 % off."""
    print("| qdisc | flows | kernel Mbit/s | l4sim Mbit/s | within 20 % |")
    print("|---|---|---|---|---|")
    total = ok = 0
    for c in cases:
        sim, ccs = goodputs(c, {})
        kern = by_cc_sorted(c["emu"]["flow_goodputs_bps"], ccs)
        sim = by_cc_sorted(sim, ccs)
        miss = [not (k > 0 and abs(s / k - 1) <= TOL) for s, k in zip(sim, kern, strict=True)]
        k_cells = " / ".join(f"{k / 1e6:.2f}" for k in kern)
        s_cells = " / ".join(
            f"{s / 1e6:.2f}{'*' if m else ''}" for s, m in zip(sim, miss, strict=True)
        )
        n_ok = len(sim) - sum(miss)
        total += len(sim)
        ok += n_ok
        print(f"| {c['qdisc']} | {c['mix']} | {k_cells} | {s_cells} | {n_ok} of {len(sim)} |")
    print(f"\n{ok} of {total} flows within 20 % of the kernel (flows of one algorithm sorted)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", type=Path, default=DATA)
    ap.add_argument("--grid", type=Path, default=GRID)
    ap.add_argument("--table", action="store_true", help="per-flow table, default TCP only")
    args = ap.parse_args()
    cases = json.loads(args.kernel.read_text())
    if args.table:
        per_flow_table(cases)
        return 0
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
    grid(args.grid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
