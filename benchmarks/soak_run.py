"""Soak: one long run's memory, sampled, with the time series streamed to Parquet and kept.

    python benchmarks/soak_run.py                     # 1 h simulated at 100 Mbit/s
    python benchmarks/soak_run.py --duration 7200s --scenario scenarios/demo.toml

Runs ``l4sim run SCENARIO --duration D -q`` twice, with ``--stream`` and without, samples the
process's resident memory (``/proc/PID/status``) every 0.1 s and prints, for each, the
median RSS over the second quarter of the run (after warm-up) and over the last quarter,
their ratio, the peak, and whether the streamed run stayed flat within 10 %. Linux only.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def soak(scenario: Path, duration: str, stream: bool, out: Path) -> dict[str, float]:
    l4sim = Path(sys.executable).parent / "l4sim"
    cmd = [str(l4sim), "run", str(scenario), "--duration", duration, "-q", "--out", str(out)]
    if stream:
        cmd.append("--stream")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples: list[float] = []
    while proc.poll() is None:
        value = rss_mib(proc.pid)
        if value is not None:
            samples.append(value)
        time.sleep(0.1)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"l4sim run failed ({proc.returncode}): {proc.stderr.read()[-500:]}")
    if len(samples) < 8:
        raise SystemExit("the run was too short to sample: give a longer --duration")
    n = len(samples)
    early = statistics.median(samples[n // 4 : n // 2])
    late = statistics.median(samples[3 * n // 4 :])
    return {"wall_s": wall, "early": early, "late": late, "peak": max(samples), "n": n}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=ROOT / "scenarios/bench_1flow_100M.toml")
    parser.add_argument("--duration", default="3600s")
    args = parser.parse_args()
    if not args.scenario.is_file():
        print(f"error: scenario {str(args.scenario)!r} does not exist", file=sys.stderr)
        return 2
    print(f"{args.scenario.name}, {args.duration} simulated, default sampling\n")
    print("| series | wall | RSS 2nd quarter | RSS last quarter | ratio | peak | samples |")
    print("|---|---|---|---|---|---|---|")
    flat = True
    with tempfile.TemporaryDirectory(prefix="l4sim-soak-") as tmp:
        for stream in (True, False):
            r = soak(args.scenario, args.duration, stream, Path(tmp) / f"s{int(stream)}")
            ratio = r["late"] / r["early"]
            if stream:
                flat = ratio <= 1.10
            print(
                f"| {'streamed' if stream else 'kept'} | {r['wall_s']:.1f} s | "
                f"{r['early']:.0f} MiB | {r['late']:.0f} MiB | {ratio:.2f} | "
                f"{r['peak']:.0f} MiB | {r['n']:.0f} |"
            )
    print(f"\nstreamed run flat within 10 % after warm-up: {'yes' if flat else 'NO'}")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
