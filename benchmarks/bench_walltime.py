"""Wall time of the commands the docs quote, on this machine: every reproduction (full and
quick), the demo and the RL-TCP training, each in a fresh output directory.

    python benchmarks/bench_walltime.py                 # the quick commands (~1 min)
    python benchmarks/bench_walltime.py --full          # and the full reproductions (~30 min)
    python benchmarks/bench_walltime.py --only aqm-004  # the commands naming aqm-004

Prints one Markdown table (command, wall time, exit code) under a line naming the machine
(CPU model, cores, memory), the date, the l4sim commit and the load average before and after;
the docs' reproduction pages quote these figures with that line. A figure measured while
something else ran (load average well above 0) is marked as such rather than dropped.
``--out DIR`` also writes the table as DIR/bench_walltime.md under a stamp line (command,
commit, date, load).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_out import Report  # noqa: E402

QUICK = [
    "l4sim demo --quiet --out {out}",
    "l4sim run scenarios/demo.toml --quiet --out {out}",
    "l4sim reproduce aqm-004 --only dualpi2 --no-figures --out {out}",
    "l4sim reproduce l4s-rtt-fairness --only 10Mbps,pfifo --no-figures --out {out}",
    "l4sim reproduce a3c-004 --quick --out {out}",
    "l4sim reproduce macc-002 --quick --out {out}",
    "l4sim reproduce lfq-001 --quick --out {out}",
    "l4sim reproduce remote-rl-tcp-000 --quick --out {out}",
    "l4sim train rl-tcp --steps 15000 --quiet --out {out}",
    "l4sim sweep examples/sweep_buffers.toml --quiet --out {out}",
]
FULL = [
    "l4sim reproduce aqm-004 --out {out}",
    "l4sim reproduce l4s-rtt-fairness --out {out}",
    "l4sim reproduce a3c-004 --out {out}",
    "l4sim reproduce rl-tcp --out {out}",
    "l4sim train rl-tcp --steps 50000 --quiet --out {out}",
    "l4sim reproduce lfq-001 --jobs 2 --out {out}",
    "l4sim reproduce remote-rl-tcp-000 --jobs 2 --out {out}",
    "l4sim reproduce macc-002 --jobs 2 --out {out}",
    "l4sim reproduce l4s-rtt-fairness --seeds 16 --out {out}",
]


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return f"{cpu}, {os.cpu_count()} cores{mem}; l4sim {commit or 'unknown commit'}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also the full reproductions")
    parser.add_argument("--only", default="", help="run only the commands containing this")
    parser.add_argument("--out", help="also write the table as Markdown into this directory")
    args = parser.parse_args()
    report = Report(args.out)
    commands = QUICK + (FULL if args.full else [])
    if args.only:
        commands = [c for c in commands if args.only in c]
    if not commands:
        print(f"no command contains {args.only!r}", file=sys.stderr)
        return 2
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    env["MPLBACKEND"] = "Agg"
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="l4sim-walltime-") as tmp:
        for i, template in enumerate(commands):
            out = Path(tmp) / f"run{i}"
            cmd = template.format(out=out)
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            done = subprocess.run(
                shlex.split(cmd),
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            wall = time.perf_counter() - t0
            shown = template.replace(" --out {out}", "")
            rows.append((shown, wall, done.returncode, load))
            status = "" if done.returncode == 0 else f"  (exit {done.returncode})"
            print(f"{wall:9.1f} s  load {load:4.2f}  {shown}{status}", file=sys.stderr, flush=True)
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
    print(f"Machine: {machine()}; {when}; load average {load_before:.2f} before.\n")
    print("| command | wall time | load average at start | exit |")
    print("|---|---|---|---|")
    for cmd, wall, code, load in rows:
        shown = f"{wall:.1f} s" if wall < 120 else f"{wall / 60:.1f} min"
        print(f"| `{cmd}` | {shown} | {load:.2f} | {code} |")
    report.table(
        "bench_walltime",
        ["command", "wall time", "load average at start", "exit"],
        [
            [
                f"`{cmd}`",
                f"{wall:.1f} s" if wall < 120 else f"{wall / 60:.1f} min",
                f"{load:.2f}",
                code,
            ]
            for cmd, wall, code, load in rows
        ],
        f"Machine: {machine()}.",
    )
    return 0 if all(code == 0 for _, _, code, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
