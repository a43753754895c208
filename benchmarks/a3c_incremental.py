"""A3C-L4S with an incremental action (issue 36): does an actor that *moves* p' (an integral
controller) reach DualPI2's PI where the memoryless actor that *sets* p' (a proportional
controller) stops short?

    python benchmarks/a3c_incremental.py [--weights 0.05,0.03] [--seeds 5] [--delta 0.01]
        [--episode-steps 100] [--out DIR] [--jobs N]

Trains ``utility-w<w>-i`` (``A3cConfig.delta_prob`` = ``--delta``, default
``DELTA_PROB``; p' in the state; all else as a3c-004's front: 2 workers x 250 episodes x
100 decisions of 4 tupdates, lock-step rounds, deterministic) on seeds 1..N, deploys each
actor in DualPI2 on a3c-004's front scenarios (4 NewReno at 10 Mbit/s; the dynamic
10 -> 2 -> 10 Mbit/s) beside PI, and prints each weight's mean +- 95 % CI and the issue's
goal checked on every policy. Measured 2026-11-26: 0 of 40 policies reach PI's point; they
drive p' to a bound (docs/reproductions/a3c-004.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from l4sim.executors import make_executor  # noqa: E402
from l4sim.experiments import a3c_004 as a3c  # noqa: E402
from l4sim.experiments._a3c_training import INCREMENTAL, Training, config  # noqa: E402
from l4sim.experiments._cases import run_cases  # noqa: E402
from l4sim.experiments._tables import mean_ci  # noqa: E402

#: Default --delta: p' moves by up to this much per 16 ms tupdate (the whole range [0, 0.5]
#: in 0.8 s, a few times what DualPI2's PI moves at a 10 ms queue error).
DELTA_PROB = 0.01


def train_one(task: tuple[Training, float, int]) -> tuple[float, float, float, float]:
    """Train one policy with ``delta_prob`` = delta and ``steps`` decisions per episode (the
    same budget of decisions); (first-10, last-10 episode reward, held-out reward of the
    untrained and the trained actor)."""
    import torch

    from l4sim.agents.a3c import Actor, evaluate, train

    t, delta, steps = task
    base = config(t)
    episodes = max(1, base.episodes * base.steps // steps)
    cfg = dataclasses.replace(base, delta_prob=delta, steps=steps, episodes=episodes)
    res = train(cfg, t.dir)
    curve = [c[2] for c in res.curve]
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    untrained = Actor()
    return (
        statistics.fmean(curve[:10]),
        statistics.fmean(curve[-10:]),
        evaluate(untrained, cfg, 10),
        evaluate(res.actor, cfg, 10),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="0.05,0.03")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("out/a3c-incremental"))
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--delta", type=float, default=DELTA_PROB)
    ap.add_argument(
        "--episode-steps", type=int, default=100, help="decisions per episode (same budget)"
    )
    args = ap.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    seeds = list(range(1, args.seeds + 1))
    todo = [a3c.Case(sc, "dualpi2") for sc in a3c.FRONT_SCENARIOS] + [
        a3c.Case(sc, f"a3c-{a3c.variant(w)}{INCREMENTAL}", s)
        for sc in a3c.FRONT_SCENARIOS
        for w in weights
        for s in seeds
    ]
    t0 = time.perf_counter()
    runs = a3c.trainings(todo, args.out, seeds, False, 2)
    with make_executor(args.jobs, None) as ex:
        tasks1: list[Any] = [(t, args.delta, args.episode_steps) for t in runs]
        trained = run_cases(train_one, tasks1, runs, ex)
        tasks = [
            (c, str(a3c._policy_path(args.out, c.variant, c.seed)) if c.variant else None)
            for c in todo
        ]
        rows = run_cases(a3c._run_case, tasks, todo, ex)
    print(
        f"delta_prob {args.delta} per tupdate, {args.episode_steps} decisions per episode; "
        f"wall {time.perf_counter() - t0:.0f} s"
    )
    for t, (f10, l10, u, tr) in zip(runs, trained, strict=True):
        print(
            f"{t.variant} s{t.seed}: first10 {f10:.3f} last10 {l10:.3f} "
            f"held-out {u:.3f} -> {tr:.3f}"
        )
    for sc in a3c.FRONT_SCENARIOS:
        pi = next(r for r in rows if r.scenario == sc and r.aqm == "dualpi2")
        print(f"\n{sc}: PI {pi.utilisation:.3f} at {pi.classic_mean_ms:.2f} ms")
        floor = 0.98 if sc == "10Mbps-newreno" else 1.0
        for w in weights:
            aqm = f"a3c-{a3c.variant(w)}{INCREMENTAL}"
            rs = [r for r in rows if r.scenario == sc and r.aqm == aqm]
            u, d = mean_ci(r.utilisation for r in rs), mean_ci(r.classic_mean_ms for r in rs)
            goal = [
                r
                for r in rs
                if r.utilisation >= floor * pi.utilisation
                and r.classic_mean_ms is not None
                and r.classic_mean_ms <= pi.classic_mean_ms
            ]
            pts = ", ".join(f"{r.utilisation:.3f}@{r.classic_mean_ms:.2f}" for r in rs)
            print(
                f"  w={w:g}-i: {u[0]:.3f} +- {u[2] - u[0]:.3f} at {d[0]:.2f} +- {d[2] - d[0]:.2f}"
                f" ms; goal met by {len(goal)} of {len(rs)}; points {pts}"
            )
        print(f"  (mean utilisation over all: {statistics.fmean(r.utilisation for r in rows):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
