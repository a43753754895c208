"""DOCSIS Queue Protection: l4sim's `docsis-qprot` cases against CableLabs' ns-3 docsis module.

    python benchmarks/ns3_docsis_qprot.py --docsis-git DIR [--seeds 3]
    python benchmarks/ns3_docsis_qprot.py --ns3-bin out/ns3-docsis/docsis-qprot

The ns-3 side is `benchmarks/ns3_docsis/docsis-qprot.cc` on the module (a clone of
cablelabs/docsis-ns3 at `--docsis-git`, built against the ns-3 3.44 pip wheel by
`benchmarks/ns3_docsis/build.sh`; `--ns3-bin` reuses a built program). The l4sim side is
`l4sim.experiments.docsis_qprot`'s own scenario and measurement with the two L4S flows
DCTCP sending ECT(1), paced as the ns-3 program paces its DCTCP (ns-3 has no TCP Prague),
and with Prague as the experiment runs them.
Cases: the two TCP flows alone and beside the unresponsive 75 Mbit/s flow (1.5x the 50
Mbit/s service flow) in the L queue, proactive grants (PGS) or best effort, Queue Protection
on and off, the modem's virtual-queue L delay estimate and (`-length`) the L queue's length.
Writes `benchmarks/data/ns3_docsis_qprot.md` (and beside it `.csv`, the numbers the docs'
prose quotes): per case and simulator the L queue's sojourn
p99 and mean over the whole run (the mean over seeds; the p99's range over them), the TCP
flows' goodput, the bad flow's packets sanctioned, and for the bad flow with Queue
Protection the bound 1 ms + the MAP-induced delay (the flows' p99 alone); then ns-3's
virtual-queue state and the same cases with a longer loop-delay estimate in its CM.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_out import git_head  # noqa: E402
from l4sim.experiments import docsis_qprot as dq  # noqa: E402
from l4sim.experiments._tables import span  # noqa: E402

OUT = BENCH_DIR / "data" / "ns3_docsis_qprot.md"
#: DCTCP as the ns-3 program runs it (`TcpDctcp` with `UseEct0` false and
#: `TcpSocketState::EnablePacing`): ECT(1) and paced. Unpaced, each flow's ACK-clocked bursts
#: draw a mark in nearly every RTT from the modem's L queue, and DCTCP, which as Linux does
#: not grow its window in CWR, gets about half the rate in both simulators.
DCTCP = {"cca": "dctcp", "ect1": True, "pacing": True}
SIMULATORS = ("ns-3 docsis, DCTCP", "l4sim, DCTCP", "l4sim, Prague")
BAD = ("none", "nqb-cbr-1.5x-link")


def cases() -> list[dq.Case]:
    """The alone and 1.5x-the-link cases of the experiment, Queue Protection on and off
    beside the bad flow, both grant services and estimates (as ``dq.cases`` orders them)."""
    return [c for c in dq.cases(dq.GROUPS) if c.bad in BAD and (c.qprot or c.bad != "none")]


def ns3_args(case: dq.Case, seed: int, *extra: str) -> list[str]:
    return [
        *extra,
        f"--RngRun={seed}",
        f"--duration={dq.DURATION_S:g}",
        f"--qprot={int(case.qprot)}",
        f"--pgs={int(case.grants == 'pgs')}",
        f"--bad={int(case.bad != 'none')}",
        "--estimator=" + ("QDelayCoupledL" if case.estimate == "length" else "QDelayCoupledV"),
    ]


def run_ns3(binary: Path, case: dq.Case, seed: int, *extra: str) -> dict[str, float]:
    """One ns-3 run's ``key=value`` line, as numbers (``extra``: more program options)."""
    out = subprocess.run(
        [str(binary), *ns3_args(case, seed, *extra)], capture_output=True, text=True, check=True
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("l_p99_ms="))
    values = dict(kv.split("=", 1) for kv in line.split())
    return {k: float(v) for k, v in values.items()}


def ns3_metrics(r: dict[str, float]) -> dict[str, Any]:
    sent = r["udp_sent"]
    return {
        "l_p99_ms": r["l_p99_ms"],
        "l_mean_ms": r["l_mean_ms"],
        "l_p99_bad_ms": r["l_p99_bad_ms"] if r["udp_sent"] else None,
        "tcp_mbps": r["tcp_mbps"],
        "sanctioned_frac": r["udp_sanctioned"] / sent if sent else None,
        "raw": r,
    }


def l4sim_metrics(case: dq.Case, seed: int, tcp: dict[str, Any] | None) -> dict[str, Any]:
    m = dq.measure(case, seed, tcp)
    return {
        "l_p99_ms": m["l_p99_ms"],
        "l_mean_ms": m["l_mean_ms"],
        "l_p99_bad_ms": None,
        "tcp_mbps": m["prague_mbps"],
        "sanctioned_frac": m["sanctioned_frac"],
    }


@dataclass
class Row:
    case: dq.Case
    simulator: str
    runs: list[dict[str, Any]]

    def mean(self, key: str) -> float | None:
        xs = [r[key] for r in self.runs if r[key] is not None]
        return statistics.fmean(xs) if xs else None


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def bound(rows: list[Row], r: Row) -> float | None:
    """1 ms + the same simulator's p99 for the flows alone (Queue Protection on, the same
    grants and estimate), for the bad flow with Queue Protection; else None."""
    if r.case.bad == "none" or not r.case.qprot:
        return None
    alone = dq.Case("none", r.case.grants, True, r.case.estimate)
    base = next(b for b in rows if b.case == alone and b.simulator == r.simulator)
    p99 = base.mean("l_p99_ms")
    return None if p99 is None else dq.CRITICAL_MS + p99


def table(rows: list[Row]) -> str:
    head = (
        "| case | simulator | L-queue p99 (ms) | p99 over seeds | L-queue mean (ms) "
        "| p99 from 2 s (ms) | TCP (Mbit/s) | sanctioned | bound (ms) | p99 within bound |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n"
    )
    lines = []
    for r in rows:
        p99s = [x["l_p99_ms"] for x in r.runs if x["l_p99_ms"] is not None]
        b = bound(rows, r)
        p99 = r.mean("l_p99_ms")
        within = "-" if b is None or p99 is None else ("yes" if p99 <= b else "no")
        lines.append(
            f"| {r.case.name} | {r.simulator} | {_num(p99, '.2f')} "
            f"| {span(p99s, '.2f') if p99s else '-'} | {_num(r.mean('l_mean_ms'), '.2f')} "
            f"| {_num(r.mean('l_p99_bad_ms'), '.2f')} "
            f"| {_num(r.mean('tcp_mbps'), '.1f')} | {_num(r.mean('sanctioned_frac'), '.1%')} "
            f"| {_num(b, '.2f')} | {within} |"
        )
    return head + "\n".join(lines) + "\n"


def vq_state(rows: list[Row]) -> dict[str, dict[str, float]]:
    """Per ns-3 case with Queue Protection and the virtual queue, the means of its AlignVq
    trace (over the bad flow's time; alone, the whole run) and its CE-marked share."""
    out = {}
    for r in rows:
        if r.simulator != SIMULATORS[0] or r.case.estimate != "virtual" or not r.case.qprot:
            continue
        raw = [x["raw"] for x in r.runs]
        m = {k: statistics.fmean(x[k] for x in raw) for k in raw[0]}
        out[r.case.name] = {
            "actual": m["vq_actual_b"],
            "average": m["vq_avg_b"],
            "allowed": m["vq_allowed_b"],
            "vq_ms": m["vq_ms"],
            "ce": m["l_marked"] / m["l_packets"],
        }
    return out


def vq_notes(state: dict[str, dict[str, float]]) -> str:
    return "".join(
        f"- {name}: actual L bytes {v['actual']:.0f} (EWMA {v['average']:.0f}), allowed queue "
        f"(calcAllowedAQ) {v['allowed']:.0f} B, virtual queue {v['vq_ms']:.2f} ms; CE marks "
        f"{v['ce']:.1%} of the L queue's packets\n"
        for name, v in state.items()
    )


#: MAP intervals the ns-3 CM adds to its loop-delay estimate (the module's LoopDelayOffset,
#: default 1), hence to the allowed queue: the sensitivity of the bound to it.
LOOP_OFFSETS = (1.5, 2.0)


def loop_sensitivity(binary: Path, seeds: range) -> list[dict[str, float]]:
    """ns-3's L-queue p99 alone and beside the 1.5x-the-link flow (PGS, Queue Protection)
    with a longer loop-delay estimate in the CM, per offset in ``LOOP_OFFSETS``."""
    out = []
    for offset in LOOP_OFFSETS:
        p99, allowed = {}, 0.0
        for bad in BAD:
            case = dq.Case(bad, "pgs", True)
            runs = [run_ns3(binary, case, s, f"--loopDelayOffset={offset:g}") for s in seeds]
            p99[bad] = statistics.fmean(r["l_p99_ms"] for r in runs)
            allowed = statistics.fmean(r["vq_allowed_b"] for r in runs)
        alone, bad = p99["none"], p99[BAD[1]]
        bound_ms = dq.CRITICAL_MS + alone
        out.append(dict(offset=offset, allowed=allowed, alone=alone, bad=bad, bound=bound_ms))
    return out


def loop_notes(loops: list[dict[str, float]]) -> str:
    return "".join(
        f"- `LoopDelayOffset` {x['offset']:g} ({x['offset'] - 1:g} MAP interval more; allowed "
        f"queue {x['allowed']:.0f} B): p99 {x['alone']:.2f} ms alone, {x['bad']:.2f} ms beside "
        f"the bad flow, bound {x['bound']:.2f} ms: "
        f"{'within' if x['bad'] <= x['bound'] else 'above'}\n"
        for x in loops
    )


def facts(state: dict[str, dict[str, float]], loops: list[dict[str, float]]) -> str:
    """``name,value`` rows the docs' prose quotes (the page's cells): ns-3's L queue (kB)
    and virtual queue beside the bad flow and alone with PGS, its allowed queue, and its p99
    and bound with the loop-delay estimate half an interval longer."""
    link = state[dq.Case(BAD[1], "pgs", True).name]
    alone = state[dq.Case("none", "pgs", True).name]
    half = next(x for x in loops if x["offset"] == LOOP_OFFSETS[0])
    rows = {
        "ns3_link_pgs_actual_kb": f"{link['actual'] / 1e3:.1f}",
        "ns3_link_pgs_allowed_kb": f"{link['allowed'] / 1e3:.1f}",
        "ns3_link_pgs_vq_ms": f"{link['vq_ms']:.2f}",
        "ns3_alone_pgs_actual_kb": f"{alone['actual'] / 1e3:.1f}",
        "ns3_longer_loop_link_p99_ms": f"{half['bad']:.2f}",
        "ns3_longer_loop_bound_ms": f"{half['bound']:.2f}",
    }
    return "name,value\n" + "".join(f"{k},{v}\n" for k, v in rows.items())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--docsis-git", type=Path, help="a clone of cablelabs/docsis-ns3")
    src.add_argument("--ns3-bin", type=Path, help="a built docsis-qprot program")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)

    binary = args.ns3_bin
    if binary is None:
        build = BENCH_DIR / "ns3_docsis" / "build.sh"
        done = subprocess.run(
            [str(build), str(args.docsis_git)], capture_output=True, text=True, env=os.environ
        )
        if done.returncode != 0:
            sys.exit(f"building the ns-3 docsis module failed:\n{done.stderr[-3000:]}")
        binary = Path(done.stdout.strip().splitlines()[-1])
    if not binary.is_file():
        sys.exit(f"{binary} is not a built docsis-qprot program")

    seeds = range(1, args.seeds + 1)
    rows = []
    for case in cases():
        runs = {s: [] for s in SIMULATORS}
        for seed in seeds:
            runs[SIMULATORS[0]].append(ns3_metrics(run_ns3(binary, case, seed)))
            runs[SIMULATORS[1]].append(l4sim_metrics(case, seed, DCTCP))
            runs[SIMULATORS[2]].append(l4sim_metrics(case, seed, None))
        rows += [Row(case, s, runs[s]) for s in SIMULATORS]
        print(case.name, flush=True)

    rows.sort(key=lambda r: (r.case.estimate != "virtual", SIMULATORS.index(r.simulator)))
    stamp = (
        f"*Made by `python benchmarks/ns3_docsis_qprot.py --seeds {args.seeds}` at l4sim "
        f"commit `{git_head()}` against cablelabs/docsis-ns3 `02aa242` on ns-3 3.44 (pip "
        f"wheel), {datetime.date.today().isoformat()}.*\n\n"
    )
    note = (
        f"\nMeans of {args.seeds} seeds (ns-3: `RngRun`; l4sim: the hosts' jitter seed); the "
        "L queue's sojourn over the whole 12 s run, its p99 per run. Case names are "
        "`docsis-qprot`'s: `none` the two TCP flows alone, `nqb-cbr-1.5x-link` beside a "
        "75 Mbit/s unresponsive Not-ECT UDP flow in the L queue from 2 s (l4sim: DSCP 45, NQB; "
        "ns-3: DSCP 46, EF, which the module's classifier puts in the L queue), `pgs` with "
        "5 Mbit/s of proactive grants, `-length` with the L queue's length as the modem's L "
        "delay estimate instead of the virtual queue. Bound: 1 ms + the same simulator's p99 "
        "for the flows alone (the MAP-induced delay). p99 from 2 s: ns-3's over the bad flow's "
        "time (l4sim's summary keeps the whole run's).\n\n"
        "ns-3's virtual queue with Queue Protection (its AlignVq trace every 0.5 ms: means from "
        "the bad flow's start at 2 s, alone over the whole run):\n\n"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    state, loops = vq_state(rows), loop_sensitivity(binary, seeds)
    sensitivity = (
        "\nThe same two ns-3 cases (PGS, Queue Protection, virtual queue) with the CM's "
        "loop-delay estimate (Alloc Start Time - Ack Time + `LoopDelayOffset` MAP intervals, "
        "default 1) made longer, which raises the allowed queue and nothing else:\n\n"
        + loop_notes(loops)
    )
    text = stamp + table(rows) + note + vq_notes(state) + sensitivity
    args.out.write_text(text, encoding="utf-8")
    args.out.with_suffix(".csv").write_text(facts(state, loops), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
