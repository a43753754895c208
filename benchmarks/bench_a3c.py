"""A3C-L4S training speed (paper 004): wall time of a training run with 1, 2 (and 4)
Hogwild workers, each worker running the same number of episodes, the speed-up in total
environment steps per second over 1 worker, and the steps per second of each worker. Wall
time includes starting the worker processes; "steady" figures count from the first
finished episode to the last. ``--ray local`` also runs the Ray-task workers.

    python benchmarks/bench_a3c.py [--episodes 20] [--steps 100] [--workers 1 2 4] [--ray local]
"""

from __future__ import annotations

import argparse

from l4sim.agents.a3c import A3cConfig, train


def measure(workers: int, episodes: int, steps: int, ray: str | None) -> dict[str, float]:
    cfg = A3cConfig(workers=workers, episodes=episodes, steps=steps, seed=1, ray=ray)
    res = train(cfg)
    first = min(t for *_x, t in res.curve)
    last = max(t for *_x, t in res.curve)
    steady_steps = res.steps - workers * steps  # the first episodes end at `first` or later
    steady = steady_steps / (last - first) if last > first else float("nan")
    return {
        "wall_s": res.wall_s,
        "steps": res.steps,
        "steps_per_s": res.steps / res.wall_s,
        "steady_steps_per_s": steady,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--ray", default=None)
    a = ap.parse_args()
    runs = [("mp", w, None) for w in a.workers]
    if a.ray:
        runs += [("ray", w, a.ray) for w in a.workers if w > 1]
    base = None
    print(
        f"{'backend':8} {'workers':>7} {'steps':>7} {'wall s':>8} {'steps/s':>8} "
        f"{'speed-up':>8} {'steady/s':>9} {'per worker':>10}"
    )
    for backend, w, ray in runs:
        m = measure(w, a.episodes, a.steps, ray)
        if base is None:
            base = m["steps_per_s"]
        print(
            f"{backend:8} {w:7d} {m['steps']:7.0f} {m['wall_s']:8.1f} {m['steps_per_s']:8.0f} "
            f"{m['steps_per_s'] / base:8.2f} {m['steady_steps_per_s']:9.0f} "
            f"{m['steady_steps_per_s'] / w:10.0f}"
        )


if __name__ == "__main__":
    main()
