"""The figures of the remote RL-TCP paper's stage 2, unified run, fair share and control-delay study
(:mod:`l4sim.experiments.remote_brain.stage2`; stage 1's Fig. 6/7 are
:mod:`l4sim.experiments.remote_brain`'s)."""

from __future__ import annotations

import statistics
from pathlib import Path

from l4sim.experiments._timeseries import plot_timeseries
from l4sim.experiments.remote_brain.stage2 import (
    DELAY_AGENTS,
    PAPER_DELAYS_MS,
    UNIFIED_QUEUES,
    Job,
    Result,
    _delay_groups,
    _mean_ci,
)
from l4sim.plot import pyplot


def plot_delay_study(results: list[Result], path: Path) -> Path:
    plt = pyplot()
    groups = _delay_groups(results)
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    metrics = (
        ("iot_mbps", "IoT goodput (Mbit/s)"),
        ("jain", "Jain index vs CUBIC"),
        ("iot_loss", "IoT loss (fraction)"),
        ("cwnd_cov", "IoT cwnd std / mean"),
    )
    for ax, (key, label) in zip(axes, metrics, strict=True):
        for agent, color in zip(DELAY_AGENTS, ("C0", "C2", "C3"), strict=False):
            for mode, style in (("fixed", "o-"), ("load", "s--")):
                gs = [rs for (a, c, _), rs in groups if a == agent and c == mode]
                if gs:
                    stats = [_mean_ci([getattr(r, key) for r in rs]) for rs in gs]
                    ax.errorbar(
                        [statistics.fmean(r.control_rtt_ms for r in rs) for rs in gs],
                        [m for m, _ in stats],
                        yerr=[sd for _, sd in stats],
                        fmt=style,
                        color=color,
                        capsize=2,
                        label=f"{agent}, {mode} delay" if mode == "fixed" else f"{agent}, load",
                    )
        ax.set_xlabel("control RTT (ms)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[1].axhline(0.9, color="grey", ls=":", lw=0.8)
    axes[0].legend(fontsize=7)
    fig.suptitle("Remote CC against one CUBIC flow vs the control RTT (fixed delay or load)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def draw_figures(results: list[Result], out: Path) -> None:
    """Fig. 8/9 (stage 2), the unified run, the fair-share runs and the delay study (stage
    1's Fig. 6/7: :mod:`l4sim.experiments.remote_brain`)."""
    fig_dir = out
    by = {r.job.name: r for r in results}
    s2 = [
        (f"stage 2, actions delayed {d:g} ms", by[n].trace)
        for d in PAPER_DELAYS_MS.values()
        if (n := Job("stage2", "rl-tcp", "fixed", 1, d).name) in by
    ]
    if s2:
        plot_timeseries(
            s2,
            "Stage 2 (Fig. 8/9): RL-TCP vs CUBIC, tail-drop FIFO",
            fig_dir / "remote_rl_tcp_000_stage2.png",
        )
    un = []
    for q in UNIFIED_QUEUES:
        r = by.get(Job("unified", "rl-tcp", q).name)
        if r is not None:
            un.append((f"unified, control path {q} ({r.control_rtt_ms:.0f} ms)", r.trace))
    if un:
        plot_timeseries(
            un,
            "Unified run: states and actions as packets (RL-TCP vs CUBIC on the data path)",
            fig_dir / "remote_rl_tcp_000_unified.png",
        )
    fs = []
    for agent, q in (("share", "fifo"), ("share-aware", "dualpi2"), ("rate-rule", "fifo")):
        r = by.get(Job("fairshare", agent, q, 1).name)
        if r is not None:
            fs.append((f"{agent}, control path {q}: Jain {r.jain:.3f}", r.trace))
    if fs:
        plot_timeseries(
            fs, "Fair-share remote CC (unified run)", fig_dir / "remote_rl_tcp_000_fairshare.png"
        )
    if _delay_groups(results):
        plot_delay_study(results, fig_dir / "remote_rl_tcp_000_control_delay.png")
