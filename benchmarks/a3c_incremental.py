"""A3C-L4S with an integrating action (issue 36): does an actor that *moves* p' (an integral
controller), or one that sets the *target* of DualPI2's PI, reach PI's point where the
memoryless actor that *sets* p' (a proportional controller) stops short?

    python benchmarks/a3c_incremental.py [--action delta|target] [--weights 0.05,0.03]
        [--seeds 5] [--delta 0.01] [--target-ms 1,40] [--episode-steps 100] [--out DIR]
        [--jobs N]

``--action delta`` trains ``utility-w<w>-i`` (``A3cConfig.delta_prob`` = ``--delta``; p' in
the state); ``--action target`` trains ``utility-w<w>-t`` (``A3cConfig.pi_target_ms`` =
``--target-ms``: the action is PI's target, the PI law sets p'). All else as a3c-004's
front: 2 workers x 250 episodes x 100 decisions of 4 tupdates, lock-step rounds,
deterministic, seeds 1..N. Each actor is deployed in DualPI2 on a3c-004's front scenarios
(4 NewReno at 10 Mbit/s; the dynamic 10 -> 2 -> 10 Mbit/s) beside PI; prints each weight's
mean +- 95 % CI and the issue's goal checked on every policy. Measured 2026-11-26 (delta):
0 of 40 policies reach PI's point; they drive p' to a bound; target: see
docs/reproductions/a3c-004.md.
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
from l4sim.experiments import a3c_l4s as a3c  # noqa: E402
from l4sim.experiments._cases import run_cases  # noqa: E402
from l4sim.experiments._tables import mean_ci  # noqa: E402
from l4sim.experiments.a3c_l4s.training import (  # noqa: E402
    INCREMENTAL,
    PI_TARGET,
    Training,
    config,
)

#: Default --delta: p' moves by up to this much per 16 ms tupdate (the whole range [0, 0.5]
#: in 0.8 s, a few times what DualPI2's PI moves at a 10 ms queue error).
DELTA_PROB = 0.01


def train_one(task: tuple[Training, dict[str, Any], int]) -> tuple[float, float, float, float]:
    """Train one policy with the action settings ``action`` (A3cConfig fields) and ``steps``
    decisions per episode (the same budget of decisions); (first-10, last-10 episode
    reward, held-out reward of the untrained and the trained actor)."""
    import torch

    from l4sim.agents.a3c import Actor, evaluate, train

    t, action, steps = task
    base = config(t)
    episodes = max(1, base.episodes * base.steps // steps)
    cfg = dataclasses.replace(base, **action, steps=steps, episodes=episodes)
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
    ap.add_argument("--action", choices=("delta", "target"), default="delta")
    ap.add_argument("--delta", type=float, default=DELTA_PROB)
    ap.add_argument("--target-ms", default="1,40", help="lo,hi of PI's target (--action target)")
    ap.add_argument(
        "--episode-steps", type=int, default=100, help="decisions per episode (same budget)"
    )
    args = ap.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    seeds = list(range(1, args.seeds + 1))
    if args.action == "target":
        lo, hi = (float(v) for v in args.target_ms.split(","))
        suffix, action, what = PI_TARGET, {"pi_target_ms": (lo, hi)}, f"PI target {lo}-{hi} ms"
    else:
        suffix, action = INCREMENTAL, {"delta_prob": args.delta}
        what = f"delta_prob {args.delta} per tupdate"
    todo = [a3c.Case(sc, "dualpi2") for sc in a3c.FRONT_SCENARIOS] + [
        a3c.Case(sc, f"a3c-{a3c.variant(w)}{suffix}", s)
        for sc in a3c.FRONT_SCENARIOS
        for w in weights
        for s in seeds
    ]
    t0 = time.perf_counter()
    runs = a3c.trainings(todo, args.out, seeds, False, 2)
    with make_executor(args.jobs, None) as ex:
        tasks1: list[Any] = [(t, action, args.episode_steps) for t in runs]
        trained = run_cases(train_one, tasks1, runs, ex)
        tasks = [
            (c, str(a3c._policy_path(args.out, c.variant, c.seed)) if c.variant else None)
            for c in todo
        ]
        rows = run_cases(a3c._run_case, tasks, todo, ex)
    print(
        f"{what}, {args.episode_steps} decisions per episode; wall {time.perf_counter() - t0:.0f} s"
    )
    for t, (f10, l10, u, tr) in zip(runs, trained, strict=True):
        print(
            f"{t.variant} s{t.seed}: first10 {f10:.3f} last10 {l10:.3f} "
            f"held-out {u:.3f} -> {tr:.3f}"
        )
    for sc in a3c.FRONT_SCENARIOS:
        pi = next(r for r in rows if r.scenario == sc and r.aqm == "dualpi2")
        print(f"\n{sc}: PI {pi.utilisation:.3f} at {pi.classic_mean_ms:.2f} ms")
        for w in weights:
            aqm = f"a3c-{a3c.variant(w)}{suffix}"
            rs = [r for r in rows if r.scenario == sc and r.aqm == aqm]
            u, d = mean_ci(r.utilisation for r in rs), mean_ci(r.classic_mean_ms for r in rs)
            goal = [r for r in rs if a3c.meets_goal(r, pi)]
            pts = ", ".join(f"{r.utilisation:.3f}@{r.classic_mean_ms:.2f}" for r in rs)
            print(
                f"  w={w:g}{suffix}: {u[0]:.3f} +- {u[2] - u[0]:.3f} at {d[0]:.2f} "
                f"+- {d[2] - d[0]:.2f} ms; goal met by {len(goal)} of {len(rs)}; points {pts}"
            )
        print(f"  (mean utilisation over all: {statistics.fmean(r.utilisation for r in rows):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
