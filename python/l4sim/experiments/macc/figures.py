"""MA-CC's figures (:mod:`l4sim.experiments.macc`): the Fig. 4 bars and the Fig. 3
training curves; ``todo`` is (case directory name, scheme) pairs."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from l4sim.experiments._tables import mean_ci
from l4sim.metrics import running_mean as _smooth


def _band(runs: list[list[float]]) -> tuple[list[float], list[float], list[float]]:
    """Per position: the mean over runs and its 95 % CI (the mean itself with one run)."""
    n = min(len(r) for r in runs)
    stats = [mean_ci(r[i] for r in runs) for i in range(n)]
    mean = [m for m, _, _, _ in stats]
    low = [m if lo is None else lo for m, lo, _, _ in stats]
    high = [m if hi is None else hi for m, _, hi, _ in stats]
    return mean, low, high


def metrics_figure(rows: list[Any], schemes: list[str], out: Path) -> None:
    """Fig. 4 as bars: mean and std over training seeds of each scheme (``metrics.png``)."""
    from l4sim.plot import pyplot

    plt = pyplot()

    fields = [
        ("throughput_kbps", "throughput (kbit/s)"),
        ("rtt_ms", "RTT (ms)"),
        ("mad_cwnd_bytes", "MAD cwnd (bytes)"),
        ("mad_queue_pkts", "MAD queue (packets)"),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, (field_, label) in zip(axes, fields, strict=True):
        means, errs = [], []
        for s in schemes:
            mean, _, high, _ = mean_ci(getattr(r, field_) for r in rows if r.scheme == s)
            means.append(mean)
            errs.append(0.0 if high is None else high - mean)
        ax.bar(range(len(schemes)), means, yerr=errs, color="tab:blue", alpha=0.8)
        ax.set_xticks(range(len(schemes)), schemes, rotation=35, ha="right", fontsize=8)
        ax.set_title(label, fontsize=10)
    fig.suptitle("MA-CC (paper 002 Fig. 4): mean and 95 % CI over training seeds", fontsize=11)
    fig.tight_layout()
    fig.savefig(out / "metrics.png", dpi=110)
    plt.close(fig)


def plot_training(out: Path, todo: Iterable[tuple[str, str]], path: Path | None = None) -> None:
    """Learning curves, one line per learned scheme with its 95 % CI band over seeds: the
    throughput and the return of every training episode (Fig. 3 style, the exploring
    policy, moving average of 10 episodes) and the return of the greedy validation
    episodes (``curve.json``'s ``validation``)."""
    from l4sim.plot import pyplot

    plt = pyplot()

    curves: dict[str, list[dict[str, Any]]] = {}
    for name, scheme in todo:
        f = out / name / "curve.json"
        if f.is_file():
            curves.setdefault(scheme, []).append(json.loads(f.read_text()))
    if not curves:
        return
    fig, axes = plt.subplots(1, 3, figsize=(16, 3.9))
    for scheme, runs in curves.items():
        label = f"{scheme} ({len(runs)} seeds)"
        series = [
            [_smooth([e[0] for e in r["throughput_rtt"]]) for r in runs],
            [_smooth(r["returns"]) for r in runs],
        ]
        for ax, ys in zip(axes[:2], series, strict=True):
            mean, low, high = _band(ys)
            xs = range(1, len(mean) + 1)
            (line,) = ax.plot(xs, mean, label=label)
            ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.2)
        val = [r.get("validation") or [] for r in runs]
        if all(val):
            mean, low, high = _band([[v[1] for v in vs] for vs in val])
            xs = [v[0] + 1 for v in val[0]][: len(mean)]
            (line,) = axes[2].plot(xs, mean, label=label)
            axes[2].fill_between(xs, low, high, color=line.get_color(), alpha=0.2)
    axes[0].set_ylabel("throughput (kbit/s)")
    axes[1].set_ylabel("return (sum of team rewards)")
    axes[2].set_ylabel("greedy validation: mean reward per step")
    for ax in axes:
        ax.set_xlabel("training episode")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        "MA-CC (paper 002 Fig. 3): learning curves, mean and 95 % CI over training seeds",
        fontsize=11,
    )
    fig.tight_layout()
    fig.savefig(path or out / "training.png", dpi=110)
    plt.close(fig)
