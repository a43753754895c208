"""Two builds of the Python package side by side on a many-flow scenario, alternated.

    # a package directory per build: a copy of python/l4sim with that build's extension
    mkdir -p /tmp/old && cp -r python/l4sim /tmp/old/
    cp OLD_BUILD/target/release/lib_core.so /tmp/old/l4sim/_core.abi3.so
    python benchmarks/ab_python.py /tmp/old python [--flows 1000] [--qdisc fq_codel]
                                   [--seconds 10] [--rounds 6]

The scenario is `bench_engine.many_scenario` (N NewReno flows through an N Mbit/s
bottleneck, FIFO or FQ-CoDel). Each round runs it once per package directory, each run in
a fresh process with that directory first on `PYTHONPATH`, so the machine's slow and fast
moments fall on both alike; best and median wall times are printed with the speed-up
against the first directory. `benchmarks/ab_speed.py` does the same for the Rust example.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_engine import many_scenario  # noqa: E402


def run(pkg_dir: Path, spec: dict[str, Any]) -> dict[str, Any]:
    """One run of `spec` in a fresh process importing l4sim from `pkg_dir`."""
    env = dict(os.environ, PYTHONPATH=str(pkg_dir))
    out = subprocess.run(
        [sys.executable, str(BENCH / "bench_engine.py"), "--child", json.dumps(spec)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("packages", nargs="+", help="directories holding an l4sim package")
    ap.add_argument("--flows", type=int, default=1000)
    ap.add_argument("--qdisc", choices=("fifo", "fq_codel"), default="fq_codel")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=6)
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    if a.flows < 1 or a.seconds <= 0:
        ap.error("--flows and --seconds must be positive")
    dirs = [Path(p).resolve() for p in a.packages]
    for d in dirs:
        if not (d / "l4sim" / "__init__.py").is_file():
            ap.error(f"{d} holds no l4sim package (expected {d}/l4sim/__init__.py)")
    spec = many_scenario(a.flows, a.seconds, a.qdisc)
    walls: list[list[float]] = [[] for _ in dirs]
    events = [0] * len(dirs)
    try:
        for r in range(a.rounds):
            for i, d in enumerate(dirs):
                res = run(d, spec)
                walls[i].append(res["wall_s"])
                events[i] = res["events"]
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr, flush=True)
    except (OSError, subprocess.CalledProcessError, json.JSONDecodeError) as e:
        print(f"a run failed: {e}", file=sys.stderr)
        return 2
    base_best, base_med = min(walls[0]), statistics.median(walls[0])
    for i, d in enumerate(dirs):
        best, med = min(walls[i]), statistics.median(walls[i])
        print(
            f"{d}: best {best:.3f} s, median {med:.3f} s, {events[i]:,} events; "
            f"{base_best / best:.3f}x (best) {base_med / med:.3f}x (median) the first"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
