"""Two builds of the engine side by side: alternate their runs, keep each one's best.

    cargo build --release -p l4sim-core --example speed && cp target/release/examples/speed /tmp/a
    ... change, rebuild, cp to /tmp/b ...
    python benchmarks/ab_speed.py /tmp/a /tmp/b [--case "1 100 60"] [--rounds 15]

Each round runs every binary once with the same arguments (flows, bottleneck Mbit/s,
seconds; see crates/l4sim-core/examples/speed.rs), so the machine's slow and fast moments
fall on both alike; the best wall time of each is printed with its speed relative to the
first binary. A shared VM moves single timings by 20-50 %: compare only within one run.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

WALL = re.compile(r"wall ([0-9.]+) s")


def wall_s(binary: str, args: list[str]) -> float:
    out = subprocess.run([binary, *args], capture_output=True, text=True, check=True).stdout
    m = WALL.search(out)
    if m is None:
        raise SystemExit(f"{binary} printed no wall time (is it the speed example?): {out!r}")
    return float(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binaries", nargs="+", help="speed-example binaries, the first is the base")
    ap.add_argument("--case", default="1 100 60", help="flows, Mbit/s, seconds")
    ap.add_argument("--rounds", type=int, default=15)
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    args = a.case.split()
    try:
        best = {b: float("inf") for b in a.binaries}
        for _ in range(a.rounds):
            for b in a.binaries:
                best[b] = min(best[b], wall_s(b, args))
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"could not run a binary: {e}", file=sys.stderr)
        return 2
    base = best[a.binaries[0]]
    for b in a.binaries:
        print(f"{b}: best {best[b]:.4f} s, {base / best[b]:.3f}x the first")
    return 0


if __name__ == "__main__":
    sys.exit(main())
