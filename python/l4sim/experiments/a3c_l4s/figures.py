"""a3c-004's figures (:mod:`l4sim.experiments.a3c_l4s`): the Fig. 25-style convergence of
each run, the learning curves over seeds, the learned policies and the delay-weight front."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from l4sim.experiments._tables import mean_ci
from l4sim.experiments.a3c_l4s.training import PI_TARGET, Trained, variant, variant_reward

#: Episodes per point of the learning curves (a running mean: one episode is one random
#: scenario, whose reward says more about the traffic than about the policy).
SMOOTH = 10


def plot_convergence(trained: Sequence[Trained], out: Path) -> None:
    """Fig. 25 style, per reward of the main table: each worker's mean reward per tupdate
    by episode and the running mean of the last ``2 x workers`` episodes of any worker;
    one panel per seed."""
    from l4sim.plot import pyplot

    plt = pyplot()
    for reward in ("delay", "utility"):
        runs = [t for t in trained if t.variant == reward]
        if not runs:
            continue
        fig, axes = plt.subplots(1, len(runs), figsize=(3.2 * len(runs), 3), squeeze=False)
        for ax, t in zip(axes[0], runs, strict=True):
            for w, rs in sorted(t.by_worker().items()):
                ax.plot(rs, lw=0.6, alpha=0.6, label=f"worker {w}")
            rs = [r for _w, _e, r in t.curve]
            win = 2 * t.workers
            g = [statistics.fmean(rs[max(0, i + 1 - win) : i + 1]) for i in range(len(rs))]
            ax.plot([i / t.workers for i in range(len(g))], g, "k", lw=1.2, label="global")
            ax.set_title(f"{reward}, seed {t.seed}", fontsize=9)
            ax.set_xlabel("episode")
        axes[0][0].set_ylabel("mean reward per tupdate")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"convergence-{reward}.png", dpi=100)
        plt.close(fig)


def _smooth(xs: list[float], n: int) -> list[float]:
    return [statistics.fmean(xs[max(0, i + 1 - n) : i + 1]) for i in range(len(xs))]


def learning_curves(trained: Sequence[Trained]) -> dict[str, list[tuple[float, float, float]]]:
    """Variant -> per episode: mean and 95 % CI over seeds of the reward per tupdate
    (averaged over the workers, running mean over :data:`SMOOTH` episodes)."""
    out: dict[str, list[tuple[float, float, float]]] = {}
    for v in dict.fromkeys(t.variant for t in trained):
        curves = [_smooth(t.per_episode(), SMOOTH) for t in trained if t.variant == v]
        n = min(map(len, curves))
        pts = []
        for e in range(n):
            m, lo, hi, _k = mean_ci(c[e] for c in curves)
            pts.append((m, m if lo is None else lo, m if hi is None else hi))
        out[v] = pts
    return out


def plot_learning_curves(trained: Sequence[Trained], out: Path) -> None:
    """One panel per variant (up to 5 a row): mean ± 95 % CI over seeds of the smoothed
    reward."""
    from l4sim.plot import pyplot

    plt = pyplot()
    curves = learning_curves(trained)
    cols = min(5, len(curves))
    rows = -(-len(curves) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.0 * cols, 2.7 * rows), squeeze=False)
    for ax, (v, pts) in zip(axes.flat, curves.items(), strict=False):
        x = range(1, len(pts) + 1)
        ax.plot(x, [p[0] for p in pts], "k", lw=1.2)
        ax.fill_between(x, [p[1] for p in pts], [p[2] for p in pts], alpha=0.3)
        n = sum(t.variant == v for t in trained)
        reward, w = variant_reward(v)
        label = "delay (paper)" if reward == "delay" else f"utility, w = {w:g}"
        if v.endswith(PI_TARGET):
            label += ", sets PI target"
        ax.set_title(f"{label} ({n} seeds)", fontsize=8)
        ax.set_xlabel("episode (per worker)", fontsize=8)
    for ax in list(axes.flat)[len(curves) :]:
        ax.set_visible(False)
    for row in axes:
        row[0].set_ylabel(f"reward per tupdate\n(mean of {SMOOTH} episodes)", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "learning-curves.png", dpi=100)
    plt.close(fig)


def plot_policies(out: Path, variants: Iterable[str], seeds: Iterable[int]) -> None:
    """Each learned policy's p' against the queue delay (current = old delay, 10 Mbit/s
    full link, p' features at 0), from the Rust evaluation of the written files."""
    from l4sim.plot import pyplot

    plt = pyplot()
    import numpy as np

    from l4sim.native import core

    delays = np.linspace(0.0, 1.0, 51)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for v, style in zip(variants, ("-", "--", ":", "-."), strict=False):
        for seed in seeds:
            states = np.zeros((len(delays), 12), np.float32)
            states[:, 2] = states[:, 3] = delays
            states[:, 6] = states[:, 7] = 1.0
            path = out / "train" / f"{v}-s{seed}" / "policy.safetensors"
            p = core().policy_infer("a3c", str(path), states.tolist())
            ax.plot(delays * 100, p, style, label=f"{v} s{seed}")
    ax.set_xlabel("queue delay, ms (feature x 100 ms)")
    ax.set_ylabel("p'")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "policy.png", dpi=100)
    plt.close(fig)


def plot_front(rows: Sequence[Any], fronts: Sequence[dict[str, Any]], out: Path) -> None:
    """Per front scenario: PI at its fixed targets (a line) and its default point, each
    deployed policy (utilisation, Classic mean delay; squares: the actor sets p',
    triangles: it sets PI's target) and each weight's mean ± 95 % CI."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    from l4sim.plot import pyplot

    plt = pyplot()
    scs = list(dict.fromkeys(f["scenario"] for f in fronts))
    fig, axes = plt.subplots(1, len(scs), figsize=(5.2 * len(scs), 4.0), squeeze=False)
    weights = list(dict.fromkeys(f["delay_weight"] for f in fronts if f["delay_weight"]))
    for ax, sc in zip(axes[0], scs, strict=True):
        here = [f for f in fronts if f["scenario"] == sc]
        fixed = sorted(
            (f["classic_mean_ms"], f["utilisation"]) for f in here if f["controller"] != "PI"
            and not f["delay_weight"]
        )  # fmt: skip
        if fixed:
            ax.plot(*zip(*fixed, strict=True), "--.", color="0.5", lw=1, label="PI, fixed targets")
        for f in here:
            if f["controller"] == "PI":
                ax.plot(f["classic_mean_ms"], f["utilisation"], "r*", ms=14, label="PI (15 ms)")
            if not f["delay_weight"]:
                continue
            w = f["delay_weight"]
            target = f["controller"] == "A3C sets PI target"
            suffix = "-t" if target else ""
            aqm = f"a3c-{variant(float(w))}{suffix}"
            pts = [r for r in rows if r.scenario == sc and r.aqm == aqm]
            colour = f"C{weights.index(w)}"
            marker = "^" if target else "s"
            ax.plot(
                [r.classic_mean_ms for r in pts],
                [r.utilisation for r in pts],
                marker,
                color=colour,
                alpha=0.3,
                ms=4,
            )
            xerr = yerr = None
            if f["classic_ci95_high"] is not None:
                xerr = [
                    [f["classic_mean_ms"] - f["classic_ci95_low"]],
                    [f["classic_ci95_high"] - f["classic_mean_ms"]],
                ]
            if f["utilisation_ci95_high"] is not None:
                yerr = [
                    [f["utilisation"] - f["utilisation_ci95_low"]],
                    [f["utilisation_ci95_high"] - f["utilisation"]],
                ]
            ax.errorbar(
                [f["classic_mean_ms"]],
                [f["utilisation"]],
                xerr=xerr,
                yerr=yerr,
                fmt=marker,
                color=colour,
                mfc="none" if target else colour,
                label=f"w = {w}, " + ("sets PI target" if target else "sets p'"),
            )
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("Classic mean queue delay, ms (log)")
        ax.set_ylabel("utilisation")
        ax.set_title(sc, fontsize=9)
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "front.png", dpi=100)
    plt.close(fig)
