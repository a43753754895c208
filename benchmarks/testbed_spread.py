"""How far can a model agree with one run of the Linux testbed? Run-to-run spread of the
l4s-rtt-fairness cases.

The testbed's table (heistp/l4s-tests scenario 1) holds one 180 s run per case. Two flows
through a drop-tail FIFO are a chaotic system: which flow loses packets at each overflow
depends on sub-packet timing, so two runs of the same case differ. This script runs
`l4sim reproduce l4s-rtt-fairness`'s 144 cases with several seeds, the senders' access
links given an order-preserving per-packet jitter (uniform in [0, J], the hosts' timing
noise; without it a deterministic simulator repeats one run), and prints per qdisc:

- flows within 20 % of the testbed for each seed, and their mean;
- the *self-agreement ceiling*: for each flow, the fraction of pairs of our own runs that
  are within 20 % of each other, summed: what a perfect model would score, in expectation,
  against a single sample of a system as noisy as ours;
- the median error over all seeds.

    python benchmarks/testbed_spread.py [--seeds 5] [--jitter-us 250] [--jobs 2]

About 40 s per seed on 2 idle cores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile

from l4sim.executors import PoolExecutor
from l4sim.experiments import l4s_rtt_fairness as exp
from l4sim.experiments.l4s_rtt_fairness import TcpVariant

QDISCS = ("dualpi2", "fq_codel", "pfifo")
TOLERANCE = exp.TOLERANCE  # the bound: a flow agrees when within 20 % of Linux


def flows(row: exp.Row) -> tuple[float, float]:
    return row.l4sim1_mbps, row.l4sim2_mbps


def self_agreement(samples: list[float]) -> float:
    """Fraction of ordered pairs of runs within TOLERANCE of each other (x_i / x_j - 1)."""
    pairs = [(a, b) for a, b in itertools.permutations(samples, 2) if b > 0]
    if not pairs:
        return 1.0
    return sum(abs(a / b - 1.0) <= TOLERANCE for a, b in pairs) / len(pairs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--jitter-us", type=float, default=exp.HOST_JITTER_US)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="rates / qdiscs, comma-separated (default all)")
    ap.add_argument("--csv", help="also write every run's flows here")
    ap.add_argument("--flow", default="{}", help="TCP options as JSON, e.g. '{\"rack\": false}'")
    ap.add_argument("--cubic", default="{}", help="CUBIC options as JSON: '{\"hystart\": false}'")
    args = ap.parse_args()
    if args.seeds < 2 or args.jitter_us < 0:
        ap.error("--seeds must be at least 2 and --jitter-us not negative")
    try:
        flow_options = json.loads(args.flow)
        cubic_options = json.loads(args.cubic)
    except json.JSONDecodeError as e:
        ap.error(f"--flow / --cubic is not JSON: {e}")
    variant = TcpVariant.of(flow_options, cubic_options, access_jitter_us=args.jitter_us)
    runs: list[list[exp.Row]] = []
    with tempfile.TemporaryDirectory() as tmp, PoolExecutor(args.jobs) as ex:
        for seed in range(1, args.seeds + 1):
            runs.append(
                exp.reproduce(
                    tmp,
                    only=[g for g in args.only.split(",") if g] or None,
                    figures=False,
                    executor=ex,
                    variant=variant,
                    seed=seed,
                )
            )
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("seed,case,qdisc,flow1,flow2,testbed1,testbed2,l4sim1,l4sim2\n")
            for seed, rows in enumerate(runs, 1):
                for r in rows:
                    f.write(
                        f"{seed},{r.case},{r.qdisc},{r.flow1},{r.flow2},{r.testbed1_mbps},"
                        f"{r.testbed2_mbps},{r.l4sim1_mbps:.4f},{r.l4sim2_mbps:.4f}\n"
                    )
    print(
        f"access jitter 0-{args.jitter_us:g} us, seeds 1-{args.seeds}, "
        f"TCP {flow_options}, CUBIC {cubic_options}"
    )
    print("| qdisc | flows | within 20 % of Linux, per seed | mean | self-agreement ceiling |")
    print("|---|---|---|---|---|")
    totals = [0.0, 0.0]
    for q in [q for q in QDISCS if any(r.qdisc == q for r in runs[0])]:
        per_seed = [
            sum(abs(e) <= TOLERANCE for e in exp.flow_errors([r for r in rows if r.qdisc == q]))
            for rows in runs
        ]
        by_case = zip(*[[r for r in rows if r.qdisc == q] for rows in runs], strict=True)
        ceiling = 0.0
        n = 0
        for case_rows in by_case:
            for k in (0, 1):
                ceiling += self_agreement([flows(r)[k] for r in case_rows])
                n += 1
        mean = statistics.mean(per_seed)
        totals[0] += mean
        totals[1] += ceiling
        print(f"| {q} | {n} | {', '.join(map(str, per_seed))} | {mean:.1f} | {ceiling:.1f} |")
    errors = [abs(e) for rows in runs for e in exp.flow_errors(rows)]
    print(f"| all | {2 * len(runs[0])} | | {totals[0]:.1f} | {totals[1]:.1f} |")
    print(f"median error over all seeds: {statistics.median(errors):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
