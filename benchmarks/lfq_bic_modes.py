"""Why LFQ's buffer for BIC steps up above 15 Mbit/s and alternates from one sweep point to
the next (lfq-001, `--weights paper-full`, Fig. 8): the same single flow (15 ms round trip, the
reproduction's `lfq.scenario`) through plain `fq` with a fixed per-flow buffer far below
the BDP (`--limit`, 10 packets: about where LFQ holds BIC), no learned policy at all, for
`--seconds`; per bandwidth the bottleneck's drops and mean queue for BIC and NewReno, beside
the buffer LFQ gives each in the reproduction's 5 s run (`paper-full` training seed 1,
offline-small). If BIC's own drop rate jumps and alternates with the bandwidth while
NewReno's stays level, the model is answering BIC's regime, not inventing it.

    python benchmarks/lfq_bic_modes.py [--limit 10] [--seconds 30] [--out benchmarks/data]

Writes `benchmarks/data/lfq_bic_modes.md`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(BENCH_DIR))

from bench_out import Report  # noqa: E402
from l4sim.agents import lfq  # noqa: E402
from l4sim.engine.simulation import Simulation  # noqa: E402
from l4sim.experiments import lfq as experiment  # noqa: E402

DELAY_MS = 15.0  # the bandwidth sweep's fixed delay (the reproduction's grid centre)
BANDWIDTHS = [float(b) for b in range(10, 26)]
CCAS = ("bic", "newreno")


def fixed_buffer(bw: float, cca: str, limit: int, seconds: float) -> tuple[int, float]:
    """(drops, mean queue in packets) of one flow through fq with a fixed per-flow limit."""
    qdisc = {"kind": "fq", "per_flow_limit": f"{limit}p"}
    sim = Simulation(lfq.scenario(bw, DELAY_MS, cca, seconds, qdisc))
    sim.run()
    queue = sim.summary()["queues"][0]
    return int(queue["drops"]), float(queue["backlog_mean_pkts"])


def learned_buffer(bw: float, cca: str) -> float:
    """LFQ's mean buffer for the flow, as the reproduction measures it (5 s, seed 1)."""
    weights = experiment.shipped_weights("offline-small", which="paper-full", seed=1)
    case = experiment.Case("offline-small", cca, "bw", bw, weights=str(weights))
    row = experiment._run_case(case)
    assert row.output is not None
    return row.output


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation (ties take their mean rank)."""
    rx, ry = (pl.Series(v).rank("average").to_numpy() for v in (x, y))
    return float(np.corrcoef(rx, ry)[0, 1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=10, help="fixed per-flow buffer (packets)")
    ap.add_argument("--seconds", type=float, default=30.0, help="each fixed-buffer run")
    ap.add_argument("--out", default=str(BENCH_DIR / "data"), help="'' to print only")
    args = ap.parse_args()
    if args.limit < 1 or args.seconds <= 0:
        raise SystemExit("--limit must be at least 1 packet and --seconds positive")
    rows, bic_drops, bic_buffers = [], [], []
    for bw in BANDWIDTHS:
        fixed = {cca: fixed_buffer(bw, cca, args.limit, args.seconds) for cca in CCAS}
        learned = {cca: learned_buffer(bw, cca) for cca in CCAS}
        row: list[object] = [f"{bw:.0f}"]
        row += [x for cca in CCAS for x in (fixed[cca][0], f"{fixed[cca][1]:.1f}")]
        row += [f"{learned[cca]:.1f}" for cca in CCAS]
        bic_drops.append(float(fixed["bic"][0]))
        bic_buffers.append(learned["bic"])
        rows.append(row)
        print(*row, sep="  ")
    head = ["Mbit/s", "BIC drops", "BIC mean queue", "NewReno drops", "NewReno mean queue"]
    head += ["LFQ buffer, BIC", "LFQ buffer, NewReno"]
    rho = spearman(bic_drops, bic_buffers)
    print(f"Spearman(BIC drops, LFQ buffer for BIC) = {rho:.2f}")
    note = (
        f"Spearman's rank correlation of BIC's drops with LFQ's buffer for BIC over these "
        f"bandwidths: {rho:.2f}. "
        f"Fixed buffer: plain `fq`, {args.limit} packets per flow, one flow for "
        f"{args.seconds:g} s, {DELAY_MS:g} ms round trip. LFQ buffer: the `paper-full` "
        "offline-small model of training seed 1, the reproduction's 5 s run (mean of its "
        "limit every 50 ms)."
    )
    Report(args.out or None).table("lfq_bic_modes", head, rows, note)


if __name__ == "__main__":
    main()
