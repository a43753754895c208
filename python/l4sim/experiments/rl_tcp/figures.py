"""RL-TCP's figures (:mod:`l4sim.experiments.rl_tcp`): the evaluation episode, one
training's return and the learning curves over training seeds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from l4sim.experiments._tables import mean_ci

Curve = tuple[list[int], list[float]]
"""A training's learning curve: episode end steps and episodic returns."""


def plot_episode(ev: Any, path: Path, bdp_pkts: float, rate_bps: float, base_rtt_s: float) -> Path:
    """cwnd, goodput, sRTT and bottleneck backlog over the evaluation episode, with the
    path's BDP, rate and base RTT as reference lines."""
    from l4sim.plot import pyplot

    plt = pyplot()

    t = ev.trace["time_s"]
    fig, axes = plt.subplots(4, 1, figsize=(8, 9), sharex=True)
    rows = [
        ("cwnd_pkts", "cwnd (segments)", bdp_pkts, "BDP"),
        ("goodput_mbps", "goodput (Mbps)", rate_bps / 1e6, "link rate"),
        ("srtt_ms", "sRTT (ms)", base_rtt_s * 1e3, "base RTT"),
        ("backlog_pkts", "bottleneck queue (pkts)", 2 * bdp_pkts, "2 BDP"),
    ]
    for ax, (key, label, ref, ref_label) in zip(axes, rows, strict=True):
        ax.plot(t, ev.trace[key], lw=1.2)
        ax.axhline(ref, color="grey", ls="--", lw=0.8, label=ref_label)
        ax.set_ylabel(label)
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(
        f"RL-TCP, DQN with the {ev.reward} reward: utilisation {ev.utilization:.1%}, "
        f"queue {ev.queue_mean_pkts:.1f} pkts, sRTT {ev.srtt_mean_ms:.0f} ms",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_training(end_steps: list[int], returns: list[float], path: Path) -> Path:
    """Episodic return over training steps, with a moving average."""
    from l4sim.plot import pyplot

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(end_steps, returns, lw=0.8, alpha=0.5, label="episode")
    if len(returns) >= 5:
        k = max(5, len(returns) // 20)
        avg = np.convolve(returns, np.ones(k) / k, mode="valid")
        ax.plot(end_steps[k - 1 :], avg, lw=1.8, label=f"mean of {k}")
    ax.set_xlabel("training step")
    ax.set_ylabel("episodic return")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_curves(curves: list[tuple[str, Curve]], path: Path) -> Path:
    """Each reward's episodic return against training step, one panel per reward (their
    scales differ by orders of magnitude): mean and 95 % CI band over its training seeds
    (the episodes have a fixed length, so they line up)."""
    from l4sim.plot import pyplot

    plt = pyplot()
    agents = list(dict.fromkeys(a for a, _ in curves))
    fig, axes = plt.subplots(1, len(agents), figsize=(6 * len(agents), 3.8), squeeze=False)
    for ax, agent in zip(axes[0], agents, strict=True):
        runs = [c for a, c in curves if a == agent]
        n = min(len(r) for _, r in runs)
        ys = np.array([r[:n] for _, r in runs], np.float64)
        x = np.array(runs[0][0][:n])
        ci = [mean_ci(ys[:, k]) for k in range(n)]
        ax.plot(x, [m for m, *_ in ci], lw=1.4, label=f"mean of {len(runs)} seeds")
        if len(runs) > 1:
            ax.fill_between(x, [c[1] for c in ci], [c[2] for c in ci], alpha=0.25, label="95 % CI")
        ax.set_title(agent, fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel("episodic return")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
