"""DCTCP on `docsis-qprot`'s upstream, paced and not, beside Prague (and ns-3's DCTCP).

    python benchmarks/docsis_dctcp_pacing.py [--seeds 3] [--ns3-bin out/ns3-docsis/docsis-qprot]

The two L4S flows alone (case `none-pgs-qprot`: proactive grants, Queue Protection, the
modem's virtual-queue L delay estimate) as DCTCP sending ECT(1) unpaced and paced, and as
Prague. Per sender: both flows' goodput, the CE-marked share of the L queue's packets, the
flows' share of time in CWR (sampled every 0.25 ms), and how the marks spread: the share of
25 ms windows (about one RTT) with a mark and the marks per MAP interval (2 ms) that has
one. Spread and CWR count from 2 s. With `--ns3-bin` (`benchmarks/ns3_docsis/build.sh`'s
program) ns-3's `TcpDctcp`, paced and not, the same. DCTCP does not grow its window in CWR
(Linux `tcp_cong_control`; ns-3 `TcpSocketBase::ProcessAck`), Prague does (its own
`cong_control`), so a mark in nearly every RTT costs DCTCP, not Prague, its rate.
Writes `benchmarks/data/docsis_dctcp_pacing.md`.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(BENCH_DIR))

from bench_out import git_head  # noqa: E402
from l4sim.engine.simulation import Simulation  # noqa: E402
from l4sim.experiments import docsis_qprot as dq  # noqa: E402
from ns3_docsis_qprot import run_ns3  # noqa: E402

OUT = BENCH_DIR / "data" / "docsis_dctcp_pacing.md"
CASE = dq.Case("none", "pgs", True)
SENDERS: dict[str, dict[str, Any] | None] = {
    "DCTCP": {"cca": "dctcp", "ect1": True},
    "DCTCP, paced": {"cca": "dctcp", "ect1": True, "pacing": True},
    "Prague": None,
}
STEP_NS = 250_000
FROM_NS = 2 * 10**9
WINDOW_NS = 25_000_000
MAP_NS = 2_000_000
COLUMNS = ("mbps", "ce", "cwr", "marked_windows", "marks_per_map")


def spread(per_window: Counter[int], per_map: Counter[int], span_ns: int) -> tuple[float, float]:
    """The share of 25 ms windows with a mark, and the marks per MAP interval that has one."""
    marks = sum(per_map.values())
    return len(per_window) / (span_ns / WINDOW_NS), marks / len(per_map) if per_map else 0.0


def l4sim_run(tcp: dict[str, Any] | None, seed: int) -> dict[str, float]:
    sim = Simulation(dq.scenario(CASE, seed, tcp))
    link = sim.observe()["queues"]["link"].index("r0->r1")
    per_window: Counter[int] = Counter()
    per_map: Counter[int] = Counter()
    cwr = samples = 0
    t, marks = 0, 0
    while t < sim.duration_ns:
        t += STEP_NS
        sim.run_until_ns(t)
        o = sim.observe()
        now = o["queues"]["ecn_marks"][link]
        if t > FROM_NS:
            states = o["flows"]["ca_state"][:2]
            cwr += sum(s == "cwr" for s in states)
            samples += len(states)
            if now > marks:
                per_window[(t - 1) // WINDOW_NS] += now - marks
                per_map[(t - 1) // MAP_NS] += now - marks
        marks = now
    s = sim.summary()
    low = s["queues"][0]["classes"][0]
    windows, per_marked_map = spread(per_window, per_map, sim.duration_ns - FROM_NS)
    return {
        "mbps": sum(f["goodput_bps"] for f in s["flows"][:2]) / 1e6,
        "ce": low["ecn_marks"] / low["packets"],
        "cwr": cwr / samples,
        "marked_windows": windows,
        "marks_per_map": per_marked_map,
    }


def ns3_run(binary: Path, pacing: bool, seed: int) -> dict[str, float]:
    r = run_ns3(binary, CASE, seed, f"--pacing={int(pacing)}")
    return {
        "mbps": r["tcp_mbps"],
        "ce": r["l_marked"] / r["l_packets"],
        "cwr": r["cwr_frac"],
        "marked_windows": r["marked_25ms_frac"],
        "marks_per_map": r["marks_per_marked_map"],
    }


def table(rows: list[tuple[str, str, list[dict[str, float]]]]) -> str:
    out = (
        "| sender | simulator | TCP (Mbit/s) | CE-marked | time in CWR "
        "| 25 ms windows with a mark | marks per marked MAP interval |\n"
        "|---|---|---:|---:|---:|---:|---:|\n"
    )
    for sender, simulator, runs in rows:
        m = {k: statistics.fmean(r[k] for r in runs) for k in COLUMNS}
        out += (
            f"| {sender} | {simulator} | {m['mbps']:.1f} | {m['ce']:.1%} | {m['cwr']:.0%} "
            f"| {m['marked_windows']:.0%} | {m['marks_per_map']:.2f} |\n"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--ns3-bin", type=Path, help="a built docsis-qprot program (build.sh)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.ns3_bin is not None and not args.ns3_bin.is_file():
        sys.exit(f"{args.ns3_bin} is not a built docsis-qprot program")
    seeds = range(1, args.seeds + 1)
    rows = [(name, "l4sim", [l4sim_run(tcp, s) for s in seeds]) for name, tcp in SENDERS.items()]
    if args.ns3_bin is not None:
        for name, pacing in (("DCTCP", False), ("DCTCP, paced", True)):
            rows.append((name, "ns-3 docsis", [ns3_run(args.ns3_bin, pacing, s) for s in seeds]))
    with_ns3 = " --ns3-bin ..." if args.ns3_bin is not None else ""
    stamp = (
        f"*Made by `python benchmarks/docsis_dctcp_pacing.py --seeds {args.seeds}{with_ns3}` "
        f"at l4sim commit `{git_head()}`"
        + (" against cablelabs/docsis-ns3 `02aa242` on ns-3 3.44" if with_ns3 else "")
        + f", {datetime.date.today().isoformat()}.*\n\n"
    )
    note = (
        f"\nCase `{CASE.name}` of `docsis-qprot` (ns-3: `benchmarks/ns3_docsis/docsis-qprot.cc`"
        f" with `--bad=0`), means of {args.seeds} seeds. CE-marked: the L queue's packets; time "
        "in CWR: both TCP flows' mean; the spread of the L queue's marks from 2 s.\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(stamp + table(rows) + note, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
