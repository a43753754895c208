"""The coexistence matrix's figures: heatmaps of the row algorithm's share against the
column's (pairs, one figure per queue or per rate and RTT), and the 1-vs-N case's share over
its fair share. Rows are :mod:`l4sim.experiments.coexistence`'s ``Row`` and ``ManyRow``."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The algorithms in the order the axes list them, scalable first.
ORDER = ("prague", "dctcp", "bbr3", "bbr", "cubic", "newreno")


def _names(rows: list[Any]) -> list[str]:
    """The algorithms ``rows`` name, in :data:`ORDER` (any other after them)."""
    seen = dict.fromkeys(x for r in rows for x in (r.a, r.b))
    return [c for c in ORDER if c in seen] + [c for c in seen if c not in ORDER]


def share_matrix(rows: list[Any], queue: str, rate: int, rtt: int) -> tuple[list[str], Any]:
    """The share of the row algorithm against the column algorithm (NaN: not run)."""
    import numpy as np

    names = _names(rows)
    m = np.full((len(names), len(names)), np.nan)
    for r in rows:
        if (r.queue, r.rate_mbps, r.rtt_ms) != (queue, rate, rtt):
            continue
        i, j = names.index(r.a), names.index(r.b)
        m[i, j] = r.a_share
        m[j, i] = 1 - r.a_share
    return names, m


def _heatmap(ax: Any, names: list[str], m: Any, title: str, vmax: float = 1.0) -> Any:
    import numpy as np

    image = ax.imshow(m, vmin=0, vmax=vmax, cmap="RdBu_r")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_title(title, fontsize=9)
    for (y, x), v in np.ndenumerate(m):
        if not math.isnan(v):
            ax.text(x, y, f"{v:.2f}", ha="center", va="center", fontsize=7)
    return image


def _panels(
    n_rows: int,
    n_cols: int,
    draw: Callable[[Any, int, int], Any],
    title: str,
    path: Path,
    label: str = "row's share",
) -> None:
    from l4sim.plot import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(
        n_rows, n_cols, figsize=(3.6 * n_cols + 1.2, 3.4 * n_rows), squeeze=False
    )
    image = None
    for i, j in itertools.product(range(n_rows), range(n_cols)):
        image = draw(axes[i][j], i, j) or image
    fig.suptitle(title)
    fig.subplots_adjust(wspace=0.55, hspace=0.55)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label=label)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def plot(rows: list[Any], queue: str, path: Path) -> None:
    """One heatmap per rate and RTT: the row algorithm's share of the pair's goodput."""
    rates = sorted({r.rate_mbps for r in rows if r.queue == queue})
    rtts = sorted({r.rtt_ms for r in rows if r.queue == queue})

    def draw(ax: Any, i: int, j: int) -> Any:
        names, m = share_matrix(rows, queue, rates[i], rtts[j])
        return _heatmap(ax, names, m, f"{rates[i]} Mbit/s, {rtts[j]} ms")

    title = f"{queue}: the row's share of the pair's goodput (0.5 is fair)"
    _panels(len(rates), len(rtts), draw, title, path)


def plot_point(rows: list[Any], queues: list[str], rate: int, rtt: int, path: Path) -> None:
    """Every queue of ``queues`` at one rate and RTT, two rows of three panels."""
    cols = min(3, len(queues))

    def draw(ax: Any, i: int, j: int) -> Any:
        k = i * cols + j
        if k >= len(queues):
            ax.axis("off")
            return None
        names, m = share_matrix(rows, queues[k], rate, rtt)
        return _heatmap(ax, names, m, queues[k])

    title = f"{rate} Mbit/s, {rtt} ms: the row's share of the pair's goodput (0.5 is fair)"
    _panels(math.ceil(len(queues) / cols), cols, draw, title, path)


def plot_many(rows: list[Any], path: Path) -> None:
    """One heatmap per queue: the one flow of the row algorithm against the column's n
    flows, its share over its fair share (1 is fair, 2 is twice)."""
    import numpy as np

    queues = list(dict.fromkeys(r.queue for r in rows))
    names = _names(rows)

    def draw(ax: Any, i: int, j: int) -> Any:
        m = np.full((len(names), len(names)), np.nan)
        for r in rows:
            if r.queue == queues[j]:
                m[names.index(r.a), names.index(r.b)] = r.a_over_fair
        return _heatmap(ax, names, m, f"{queues[j]}: 1 row vs {rows[0].n} column", vmax=2.0)

    r0 = rows[0]
    title = f"{r0.rate_mbps} Mbit/s, {r0.rtt_ms} ms: the one flow's share over its fair share"
    _panels(1, len(queues), draw, title, path, label="share / fair share")
