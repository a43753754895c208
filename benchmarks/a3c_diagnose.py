"""Why A3C-L4S (paper 004) did not learn: a small, fast diagnostic (issue 36).

Three parts, each printing a table (``docs/reproductions/a3c-004.md``, "Why it did not learn,
and what changed", quotes them):

``landscape``
    The reward of *constant* p' policies on one fixed scenario (10 Mbit/s, 20 ms one way,
    four NewReno-ECN flows, 1 s under the PI law, then p' held for ``--seconds``), scored
    per 16 ms interval exactly as the trainer scores it: the paper's ``delay`` reward and
    the ``utility`` reward at several delay weights, over the paper's 100-step episode
    (the first 1.6 s) and over the steady state (after 5 s); with the PI controller's own
    run as the last row. Is the landscape informative, and where is its maximum?
``train``
    ``A3cConfig`` on that fixed scenario for ``--seeds`` seeds (``workers=1``, in process,
    deterministic): first-10 vs last-10 episode mean reward per step, for the paper's
    settings (``--paper``) or the defaults.
``deploy``
    The actors trained by ``train`` deployed in paper 004's 4-NewReno scenario (90 s,
    :mod:`l4sim.experiments.a3c_l4s`): utilisation and Classic mean delay beside PI's.

Usage (``PYTHONPATH=python``)::

    python benchmarks/a3c_diagnose.py landscape [--seconds 20] [--traffic-seeds 3]
    python benchmarks/a3c_diagnose.py train [--seeds 5] [--episodes 120] \
        [--delay-weights 1.0 0.3 0.1] [--paper] [--set name=value ...] [--out DIR]
    python benchmarks/a3c_diagnose.py deploy --out /tmp/a3c-diag

The settings that learn (docs: 4-5 of 5 seeds rising at w = 1.0, 0.1, 0.03) are
``A3cConfig``'s defaults since issue 36 (``action_repeat=4``, ``prob_in_state=False``):
``train --episodes 120 --delay-weights 1.0 0.1 0.03`` (10-30 s per seed and weight on an
idle core); ``--set action_repeat=1 prob_in_state=True`` gives the fixes without them.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np

from l4sim.agents.a3c import A3cConfig, train
from l4sim.agents.a3c.worker import OnlineEnv
from l4sim.envs import rewards

#: The fixed diagnostic scenario (as A3cConfig traffic ranges of width 0).
FIXED = {
    "rates_mbps": (10.0, 10.0),
    "delays_ms": (20.0, 20.0),
    "flows": (4, 4),
    "ccas": ("newreno",),
}
GRID = (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.15, 0.2, 0.3, 0.5)
WEIGHTS = (1.0, 0.3, 0.1, 0.03)
EPISODE = 100  # the paper's episode, in 16 ms steps
STEADY_S = 5.0


def _scores(p: float | None, seconds: float, seed: int) -> dict[str, float]:
    """Run one constant-p' (None: PI) episode; mean per-step rewards and link figures."""
    steps = round(seconds / 0.016)
    cfg = A3cConfig(**FIXED, steps=steps)
    env = OnlineEnv(cfg, seed)
    env.reset()
    recs = []
    for _ in range(steps):
        env.step(p)
        recs.append(env.last_step)
    steady = recs[round(STEADY_S / 0.016) :]
    out: dict[str, float] = {}
    for name, part in (("ep", recs[:EPISODE]), ("ss", steady)):
        out[f"delay_{name}"] = float(np.mean([rewards.a3c_l4s(q) for q in part]))
        for w in WEIGHTS:
            u = [rewards.a3c_utility(q, delay_weight=w) for q in part]
            out[f"u{w}_{name}"] = float(np.mean(u))
    out["util"] = float(np.mean([min(q.dequeue_rate_bps / q.rate_ref_bps, 1.0) for q in steady]))
    out["delay_ms"] = float(np.mean([q.sojourn_s for q in steady])) * 1e3
    return out


def landscape(seconds: float, traffic_seeds: int) -> None:
    cols = ["delay"] + [f"u{w}" for w in WEIGHTS]
    print(
        f"Constant p' on 10 Mbit/s, 20 ms, 4 NewReno-ECN; mean reward per 16 ms step over "
        f"the first {EPISODE} steps (ep) and after {STEADY_S:.0f} s of {seconds:.0f} s (ss); "
        f"mean of {traffic_seeds} traffic seeds"
    )
    head = " | ".join(f"{c} ep | {c} ss" for c in cols)
    print(f"| p' | {head} | util ss | delay ms ss |")
    print("|---" * (2 + 2 * len(cols) + 1) + "|")
    for p in (*GRID, None):
        runs = [_scores(p, seconds, s) for s in range(1, traffic_seeds + 1)]
        m = {k: statistics.fmean(r[k] for r in runs) for k in runs[0]}
        cells = " | ".join(f"{m[c + '_ep']:.3f} | {m[c + '_ss']:.3f}" for c in cols)
        label = "PI" if p is None else f"{p:.2f}"
        print(f"| {label} | {cells} | {m['util']:.3f} | {m['delay_ms']:.2f} |")


def _cfg(args: argparse.Namespace, seed: int, weight: float) -> A3cConfig:
    base = A3cConfig.paper() if args.paper else A3cConfig()
    return replace(
        base,
        **FIXED,
        workers=1,
        episodes=args.episodes,
        reward="utility",
        delay_weight=weight,
        seed=seed,
        **dict(_field(kv) for kv in args.set),
    )


def _field(kv: str) -> tuple[str, object]:
    """``name=value`` -> an A3cConfig field (value parsed as a Python literal if it is one)."""
    import ast

    k, v = kv.split("=", 1)
    try:
        return k, ast.literal_eval(v)
    except (ValueError, SyntaxError):
        return k, v


def train_seeds(args: argparse.Namespace) -> None:
    out = Path(args.out)
    print("| delay weight | seed | steps | wall s | first-10 | last-10 | rising |")
    print("|---|---|---|---|---|---|---|")
    for w in args.delay_weights:
        for seed in range(1, args.seeds + 1):
            cfg = _cfg(args, seed, w)
            d = out / f"w{w}-s{seed}"
            res = train(cfg, d)
            rs = [c[2] for c in res.curve]
            np.savetxt(d / "rewards.txt", rs)
            f10, l10 = statistics.fmean(rs[:10]), statistics.fmean(rs[-10:])
            print(
                f"| {w} | {seed} | {res.steps * cfg.action_repeat} | {res.wall_s:.0f} "
                f"| {f10:.3f} | {l10:.3f} | {'yes' if l10 > f10 else 'no'} |",
                flush=True,
            )


def deploy(args: argparse.Namespace) -> None:
    from l4sim.experiments import a3c_l4s

    case = a3c_l4s.Case("10Mbps-newreno", "dualpi2")
    pi = a3c_l4s._run_case((case, None))
    print("| policy | utilisation | Classic mean ms | util vs PI | delay <= PI |")
    print("|---|---|---|---|---|")
    print(f"| PI | {pi.utilisation:.3f} | {pi.classic_mean_ms:.2f} | - | - |")
    for d in sorted(Path(args.out).glob("w*-s*")):
        case = a3c_l4s.Case("10Mbps-newreno", "a3c-utility", 1)
        r = a3c_l4s._run_case((case, str(d / "policy.safetensors")))
        rel = r.utilisation / pi.utilisation - 1
        ok = r.classic_mean_ms is not None and r.classic_mean_ms <= pi.classic_mean_ms
        print(
            f"| {d.name} | {r.utilisation:.3f} | {r.classic_mean_ms:.2f} | {rel:+.1%} "
            f"| {'yes' if ok else 'no'} |",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("landscape")
    a.add_argument("--seconds", type=float, default=20.0)
    a.add_argument("--traffic-seeds", type=int, default=3)
    t = sub.add_parser("train")
    t.add_argument("--seeds", type=int, default=5)
    t.add_argument("--episodes", type=int, default=120)
    t.add_argument("--delay-weights", type=float, nargs="+", default=[1.0])
    t.add_argument("--paper", action="store_true", help="the paper's A3C settings")
    t.add_argument("--out", default="/tmp/a3c-diag")
    t.add_argument("--set", nargs="*", default=[], help="A3cConfig overrides: name=value")
    d = sub.add_parser("deploy")
    d.add_argument("--out", default="/tmp/a3c-diag")
    args = ap.parse_args()
    if args.cmd == "landscape":
        landscape(args.seconds, args.traffic_seeds)
    elif args.cmd == "train":
        train_seeds(args)
    else:
        deploy(args)


if __name__ == "__main__":
    main()
