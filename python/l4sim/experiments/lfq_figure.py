"""LFQ's Fig. 8: each model's output buffer against bandwidth and delay, per CC."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


def fig8(rows: Iterable[Any], path: Path, models: Sequence[str], ccas: Sequence[str]) -> None:
    """One panel per CC and sweep, one line per model: the mean over the seeds at each
    point, and where several seeds share a point (training seeds on the grid) their range
    shaded. ``rows``: :class:`l4sim.experiments.lfq.Row`."""
    from l4sim.plot import pyplot

    plt = pyplot()
    rows = list(rows)
    fig, axes = plt.subplots(2, 2, figsize=(9, 6), sharey=True)
    for i, cca in enumerate(ccas):
        for j, sweep in enumerate(("bw", "delay")):
            ax = axes[i][j]
            for m in models:
                at: dict[float, list[float]] = {}
                for r in rows:
                    if r.qdisc == m and r.cca == cca and r.sweep == sweep:
                        at.setdefault(r.x, []).append(r.output or 0.0)
                xs = sorted(at)
                if not xs:
                    continue
                (line,) = ax.plot(xs, [statistics.fmean(at[x]) for x in xs], label=m)
                if any(len(v) > 1 for v in at.values()):
                    lo, hi = [min(at[x]) for x in xs], [max(at[x]) for x in xs]
                    ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
            ax.set_title(f"{cca}, varying {'bandwidth' if sweep == 'bw' else 'delay'}")
            ax.set_xlabel("Mbit/s" if sweep == "bw" else "ms")
            ax.set_ylabel("output buffer (packets)")
    axes[0][0].legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
