"""Re-measure the kernel side of ``l4sim reproduce classic-queue`` (issue 35's grid): every
case of :mod:`l4sim.experiments.classic_queue` through ``l4sim emulate`` (root; real time),
written to the reference CSV the reproduction compares with.

    sudo python benchmarks/emulate_classic_queue.py [--only 50Mbps,...] [--raw FILE]
        [--csv python/l4sim/data/reference/kernel_classic_queue.csv] [--lock FILE]

Each emulated run is its own process under ``flock LOCK`` (default
``/tmp/l4sim-emu.lock``), so that no two emulations on the machine overlap while others can
interleave between runs. Every run's figures are appended to ``--raw`` (JSON lines; a
re-run skips the runs already there, so it resumes), and the CSV is rewritten from it after
each run. ``--runs N`` runs each grid case N times (the issue's cases four times), for the
kernel's own run-to-run spread. ``--case NAME --run K`` (what each locked process runs)
emulates one run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from l4sim.experiments.classic_queue import (  # noqa: E402
    GROUPS,
    ISSUE,
    ISSUE_RUNS,
    REFERENCE,
    Case,
    cases,
    measure,
    scenario,
)

CSV = ROOT / "python" / "l4sim" / "data" / "reference" / REFERENCE
RAW = ROOT / "benchmarks" / "data" / "emulate_classic_queue.jsonl"
LOCK = "/tmp/l4sim-emu.lock"
FIELDS = (
    "case",
    "run",
    "rate_mbps",
    "rtt_ms",
    "qdisc",
    "ecn",
    "flow",
    "cca",
    "mbps",
    "retransmits",
    "sojourn_ms",
    "drops",
    "marks",
)


def runs_of(case: Case, grid_runs: int = 1) -> int:
    return ISSUE_RUNS if case.name.startswith(ISSUE) else grid_runs


def emulate_one(case: Case, run: int) -> dict[str, Any]:
    from l4sim.emulate import emulate

    t = time.time()
    res = emulate(scenario(case))
    m = measure(case, res.summary, res.flows)
    emu = res.summary["emulation"]
    return {
        "case": case.name,
        "run": run,
        **m,
        "kernel": emu["kernel"],
        "kernel_ccas": [f.get("kernel_cca") for f in res.summary["flows"]],
        "lateness_p99_us": emu["router_lateness_us"].get("p99"),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        "wall_s": round(time.time() - t, 1),
    }


def write_csv(raw: Path, csv_path: Path, command: str) -> int:
    """Rewrite ``csv_path`` from the runs in ``raw`` (in the grid's case order)."""
    runs = [json.loads(x) for x in raw.read_text().splitlines() if x.strip()]
    by = {(r["case"], r["run"]): r for r in runs}
    order = {c.name: c for c in cases(GROUPS)}
    kernels = sorted({r["kernel"] for r in runs}) or ["(none yet)"]
    dates = sorted({r["date"] for r in runs}) or ["(none yet)"]
    lines = [
        "# The kernel's TCP (Linux CUBIC, Reno, BBR; DCTCP as l4sim's BPF struct_ops DCTCP)",
        "# through l4sim's router (l4sim emulate) on this project's 2-core VM, for",
        "# `l4sim reproduce classic-queue` (python/l4sim/experiments/classic_queue/__init__.py).",
        f"# Measured {' to '.join(dict.fromkeys([dates[0], dates[-1]]))} on "
        f"{', '.join(kernels)}; command: {command}",
        "# mbps: each flow's goodput at the receiver over [5 s, 20 s] (grid) or the whole",
        "# 30 s (issue35 cases); sojourn_ms, drops, marks: the bottleneck, whole run.",
        ",".join(FIELDS),
    ]
    n = 0
    for name, case in order.items():
        for run in range(1, 1 + max((k for n, k in by if n == name), default=0)):
            r = by.get((name, run))
            if r is None:
                continue
            n += 1
            for i, cca in enumerate(case.flows):
                vals = [
                    name,
                    run,
                    case.rate_mbps,
                    case.rtt_ms,
                    case.qdisc,
                    int(case.ecn),
                    i,
                    cca,
                    f"{r['mbps'][i]:.4f}",
                    r["retransmits"][i],
                    f"{r['sojourn_ms']:.3f}",
                    r["drops"],
                    r["marks"],
                ]
                lines.append(",".join(str(v) for v in vals))
    csv_path.write_text("\n".join(lines) + "\n")
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated groups of classic-queue (default: all)")
    ap.add_argument("--raw", type=Path, default=RAW)
    ap.add_argument("--csv", type=Path, default=CSV)
    ap.add_argument("--lock", default=LOCK)
    ap.add_argument("--case", help="emulate this one case (what each locked process runs)")
    ap.add_argument("--run", type=int, default=1)
    ap.add_argument(
        "--runs", type=int, default=1, help="runs of each grid case (the kernel's spread)"
    )
    args = ap.parse_args()
    if args.case:
        case = next(c for c in cases(GROUPS) if c.name == args.case)
        rec = emulate_one(case, args.run)
        with open(args.raw, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(f"{case.name} run {args.run}: {rec['mbps']} Mbit/s ({rec['wall_s']} s)", flush=True)
        return 0
    if os.geteuid() != 0:
        print("emulation needs root (network namespaces, TUN devices)", file=sys.stderr)
        return 2
    groups = args.only.split(",") if args.only else list(GROUPS)
    command = "sudo python benchmarks/emulate_classic_queue.py"
    args.raw.parent.mkdir(parents=True, exist_ok=True)
    args.raw.touch()
    for case in cases(groups):
        for run in range(1, runs_of(case, args.runs) + 1):
            done = {
                (r["case"], r["run"])
                for r in (json.loads(x) for x in args.raw.read_text().splitlines() if x.strip())
            }
            if (case.name, run) in done:
                continue
            cmd = ["flock", args.lock, sys.executable, __file__, "--case", case.name]
            cmd += ["--run", str(run), "--raw", str(args.raw)]
            rc = subprocess.call(cmd)
            if rc != 0:
                print(f"{case.name} run {run} failed (exit {rc})", file=sys.stderr, flush=True)
            write_csv(args.raw, args.csv, command)
    print(f"{write_csv(args.raw, args.csv, command)} runs in {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
