"""Where one Gymnasium step's time goes, for each env: the engine, the binding, and Python.

    python benchmarks/bench_step_cost.py [--steps 3000] [--out FILE.json]

Each env is made with its defaults and stepped with a fixed action cycle (resets included).
Every call into the compiled core during ``step`` is timed by a proxy put between the env's
``Simulation`` and the core object: time inside ``run_until`` / ``run_until_trigger`` is the
engine's (the simulation itself, the GIL released); time inside every other core call
(``observe``, ``apply``, ``summary``, messages) is the binding's (building and converting
the data Python asks for); the rest of the step is Python (features, reward, action
decoding, the Gymnasium wrappers). The proxy's own cost (two ``perf_counter`` calls a core
call, about 0.2 us) is measured and taken out of the binding's share.

Printed: per env, us per step and each part's share, side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym

import l4sim.envs  # noqa: F401  (registers the env ids)
from l4sim.envs import ENV_IDS

PARTS = ("engine_us", "binding_us", "python_us")
ENGINE_CALLS = frozenset({"run", "run_until", "run_until_trigger"})


class _Timed:
    """Times every call into the wrapped core object, by kind."""

    def __init__(self, core: Any, clock: dict[str, float]):
        self._core = core
        self._clock = clock

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._core, name)
        if not callable(attr):
            return attr
        kind = "engine" if name in ENGINE_CALLS else "binding"
        clock = self._clock

        def call(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return attr(*args, **kwargs)
            finally:
                clock[kind] += time.perf_counter() - t
                clock["calls"] += 1

        return call


def _proxy_cost(n: int = 200_000) -> float:
    """Seconds the proxy adds per call (timed on a call that does nothing)."""

    class Nothing:
        def f(self) -> None:
            return None

    clock = {"engine": 0.0, "binding": 0.0, "calls": 0}
    timed = _Timed(Nothing(), clock)
    bare = Nothing()
    t = time.perf_counter()
    for _ in range(n):
        bare.f()
    plain = time.perf_counter() - t
    t = time.perf_counter()
    for _ in range(n):
        timed.f()
    return max(0.0, (time.perf_counter() - t - plain) / n)


def _attach(env: Any, clock: dict[str, float]) -> None:
    """Put the timer between the env's Simulation and its core object (after each reset)."""
    sim = env.unwrapped._sim
    guard = sim._sim  # the Simulation's one-call-at-a-time holder
    if not isinstance(guard._core, _Timed):
        guard._core = _Timed(guard._core, clock)


def measure(env_id: str, steps: int, action: Callable[[Any, int], Any]) -> dict[str, Any]:
    env = gym.make(env_id)
    clock = {"engine": 0.0, "binding": 0.0, "calls": 0}
    env.reset(seed=1)
    _attach(env, clock)
    for k in range(50):  # warm-up, not counted
        _, _, term, trunc, _ = env.step(action(env, k))
        if term or trunc:
            env.reset()
            _attach(env, clock)
    clock.update(engine=0.0, binding=0.0, calls=0)
    t0 = time.perf_counter()
    for k in range(steps):
        _, _, term, trunc, _ = env.step(action(env, k))
        if term or trunc:
            env.reset()
            _attach(env, clock)
    total = time.perf_counter() - t0
    env.close()
    return {"env": env_id, "steps": steps, "total_s": total, **clock}


def _cycle(env: Any, k: int) -> Any:
    """A fixed, valid action cycle for any action space: its own samples from a seeded
    space would differ between envs, this does not."""
    space = env.action_space
    if hasattr(space, "n"):
        return int(space.start + (k % space.n))
    low, high = space.low, space.high
    frac = (k % 5) / 4
    return (low + (high - low) * frac).astype(space.dtype)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--out", help="also write the rows as JSON")
    args = ap.parse_args()
    per_call = _proxy_cost()
    rows = []
    for env_id in ENV_IDS:
        r = measure(env_id, args.steps, _cycle)
        binding = max(0.0, r["binding"] - per_call * r["calls"])
        engine = max(0.0, r["engine"] - 0.0)
        python = max(0.0, r["total_s"] - engine - binding - per_call * r["calls"])
        n = r["steps"]
        rows.append(
            {
                "env": env_id,
                "us_per_step": 1e6 * (engine + binding + python) / n,
                "engine_us": 1e6 * engine / n,
                "binding_us": 1e6 * binding / n,
                "python_us": 1e6 * python / n,
                "core_calls_per_step": r["calls"] / n,
            }
        )
    print(f"proxy cost {per_call * 1e6:.2f} us a core call (taken out)")
    print(f"{'env':24} {'us/step':>8} {'engine':>14} {'binding':>14} {'python':>14} {'calls':>6}")
    for r in rows:
        t = r["us_per_step"]

        def cell(x: float, t: float = t) -> str:
            return f"{x:6.1f} ({100 * x / t:3.0f}%)"

        print(
            f"{r['env']:24} {t:8.1f} {cell(r['engine_us'])} {cell(r['binding_us'])} "
            f"{cell(r['python_us'])} {r['core_calls_per_step']:6.1f}"
        )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"steps": args.steps, "rows": rows}, fh, indent=2)
        # the same rows as a Markdown table, for the performance page to include
        lines = [
            "| env | µs a step | engine | binding | Python | core calls a step |",
            "|---|---|---|---|---|---|",
        ]
        for r in rows:
            t = r["us_per_step"]
            share = [f"{r[k]:.1f} µs ({100 * r[k] / t:.0f} %)" for k in PARTS]
            lines.append(
                f"| `{r['env']}` | {t:.1f} | {' | '.join(share)} | {r['core_calls_per_step']:.1f} |"
            )
        with open(args.out.removesuffix(".json") + ".md", "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
