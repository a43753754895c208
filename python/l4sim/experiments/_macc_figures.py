"""MA-CC's figures (:mod:`l4sim.experiments.macc_002`): the Fig. 4 bars and the Fig. 3
training curves; ``todo`` is (case directory name, scheme) pairs."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from l4sim.metrics import running_mean as _smooth


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
        means, sds = [], []
        for s in schemes:
            xs = [getattr(r, field_) for r in rows if r.scheme == s]
            means.append(statistics.fmean(xs))
            sds.append(statistics.stdev(xs) if len(xs) > 1 else 0.0)
        ax.bar(range(len(schemes)), means, yerr=sds, color="tab:blue", alpha=0.8)
        ax.set_xticks(range(len(schemes)), schemes, rotation=35, ha="right", fontsize=8)
        ax.set_title(label, fontsize=10)
    fig.suptitle("MA-CC (paper 002 Fig. 4): mean and std over training seeds", fontsize=11)
    fig.tight_layout()
    fig.savefig(out / "metrics.png", dpi=110)
    plt.close(fig)


def plot_training(out: Path, todo: Iterable[tuple[str, str]], path: Path | None = None) -> None:
    """Fig. 3-style training curves: throughput and RTT of every training episode (mean over
    seeds, moving average of 10 episodes), one line per learned scheme."""
    from l4sim.plot import pyplot

    plt = pyplot()

    curves: dict[str, list[list[tuple[float, float]]]] = {}
    for name, scheme in todo:
        f = out / name / "curve.json"
        if f.is_file():
            curves.setdefault(scheme, []).append(json.loads(f.read_text())["throughput_rtt"])
    if not curves:
        return
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    for scheme, runs in curves.items():
        n = min(len(r) for r in runs)
        for k, ax in enumerate(axes):
            ys = [statistics.fmean(r[i][k] for r in runs) for i in range(n)]
            ax.plot(range(1, n + 1), _smooth(ys), label=f"{scheme} ({len(runs)} seeds)")
    axes[0].set_ylabel("throughput (kbit/s)")
    axes[1].set_ylabel("mean RTT (ms)")
    for ax in axes:
        ax.set_xlabel("training episode")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("MA-CC (paper 002 Fig. 3): training episodes (exploring policy)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path or out / "training.png", dpi=110)
    plt.close(fig)
