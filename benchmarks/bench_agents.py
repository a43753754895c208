"""Agent steps per second: single env and vectorised (N = 1, 8, 32), 100 ms steps.

    python benchmarks/bench_agents.py [--steps 4000] [--scenario FILE | --heavy] [--out DIR]

Rows: the bare core (``run_until`` only: the simulation's own cost per step), the core plus
``observe()``, the single Gymnasium env (``TcpCwndEnv.step``) and ``SimBatchVectorEnv`` with
N simulations stepped in one call into Rust. "overhead" is the wall time per agent step
beyond the bare core's (observation, features, reward, action decoding, Python). Actions
alternate cwnd +1 / -1 segment, so every step applies an action. Resets are included.

The default env (one agent flow at 10 Mbps) costs the simulation ~5 us a step and Python
~15 us: more cores cannot help there. ``--heavy`` runs a simulation-bound env (the agent's
flow beside three CUBIC flows at 100 Mbps, ~250 us of simulation a step), where the vector
env spreads the simulations over the cores and computes each env's features while the
others still run; ``vs N=1`` is then the figure issue 15 asks for (>= 1.8x at N = 8 on
2 cores). ``--out DIR`` also writes the table as DIR/bench_agents.md (``--heavy``:
bench_agents_heavy.md) under a stamp line (command, commit, date, load).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from l4sim.engine.simulation import _core_module
from l4sim.envs import SimBatchVectorEnv, TcpCwndEnv
from l4sim.envs.defaults import TCP_HEAVY_SCENARIO, TCP_SCENARIO

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_out import Report


def bench_core(env: TcpCwndEnv, steps: int, observe: bool) -> float:
    core = _core_module()
    cfg = env._core_cfg
    per_ep = env.episode_steps
    t0 = time.perf_counter()
    done = 0
    seed = 0
    while done < steps:
        sim = core.Simulation(json.dumps({**cfg, "seed": seed}))
        seed += 1
        for k in range(1, min(per_ep, steps - done) + 1):
            sim.run_until(k * env.step_ns)
            if observe:
                sim.observe()
            done += 1
    return time.perf_counter() - t0


def bench_env(env: TcpCwndEnv, steps: int) -> float:
    t0 = time.perf_counter()
    env.reset(seed=0)
    for k in range(steps):
        _, _, term, trunc, _ = env.step(1 + (k & 1))
        if term or trunc:
            env.reset()
    return time.perf_counter() - t0


def bench_vector(n: int, steps: int, kwargs: dict) -> float:
    venv = SimBatchVectorEnv(TcpCwndEnv, n, **kwargs)
    rounds = max(1, steps // n)
    acts = [np.full(n, 1), np.full(n, 2)]
    t0 = time.perf_counter()
    venv.reset(seed=0)
    for k in range(rounds):
        venv.step(acts[k & 1])
    return (time.perf_counter() - t0) / (rounds * n) * steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4000, help="agent steps per row")
    ap.add_argument("--scenario", default=None, help="scenario TOML (default: 10 Mbps dumbbell)")
    ap.add_argument(
        "--heavy", action="store_true", help="a simulation-bound env (100 Mbps, 3 CUBIC flows)"
    )
    ap.add_argument("--out", help="also write the table as Markdown into this directory")
    args = ap.parse_args()
    out = Report(args.out)
    scenario = TCP_HEAVY_SCENARIO if args.heavy else TCP_SCENARIO
    kwargs = {"scenario": args.scenario or scenario, "step_interval": "100ms"}
    env = TcpCwndEnv(**kwargs)
    steps = args.steps
    rows = []
    core_s = bench_core(env, steps, observe=False)
    rows.append(("core run_until", core_s))
    rows.append(("core run_until + observe", bench_core(env, steps, observe=True)))
    rows.append(("TcpCwndEnv (single)", bench_env(env, steps)))
    for n in (1, 8, 32):
        rows.append((f"SimBatchVectorEnv N={n}", bench_vector(n, steps, kwargs)))
    print(f"{steps} agent steps of 100 ms on {env.scenario.name}, one process")
    print(f"{'':28} {'steps/s':>10} {'us/step':>9} {'overhead us':>12} {'vs N=1':>7}")
    base = core_s / steps * 1e6
    n1 = dict(rows)["SimBatchVectorEnv N=1"]
    for name, secs in rows:
        us = secs / steps * 1e6
        ratio = f"{n1 / secs:7.2f}" if name.startswith("SimBatch") else ""
        print(f"{name:28} {steps / secs:10.0f} {us:9.1f} {us - base:12.1f} {ratio:>7}")
    out.table(
        "bench_agents_heavy" if args.heavy else "bench_agents",
        ["", "steps/s", "µs a step", "overhead µs", "vs N=1"],
        [
            [
                name,
                f"{steps / secs:,.0f}",
                f"{secs / steps * 1e6:.1f}",
                f"{secs / steps * 1e6 - base:.1f}",
                f"{n1 / secs:.2f}" if name.startswith("SimBatch") else "",
            ]
            for name, secs in rows
        ],
        f"{steps} agent steps of 100 ms on {env.scenario.name}, one process; overhead: the "
        "time a step beyond the bare core's `run_until`.",
    )


if __name__ == "__main__":
    main()
