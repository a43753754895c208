"""The figure of :mod:`l4sim.experiments.classic_queue`: each flow's rate, l4sim against
the kernel, on log axes, with the ±20 % band."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def scatter(rows: list[Any], path: Path) -> None:
    """``sim_vs_kernel.png``: one point per flow measured on the kernel, dominant flows
    (BBR, DCTCP) and classic ones (CUBIC, Reno) marked apart."""
    from l4sim.plot import pyplot

    plt = pyplot()
    pts = [r for r in rows if r.kernel_mbps]
    fig, ax = plt.subplots(figsize=(5.6, 5.0))
    styles = {
        "bbr": ("tab:red", "^"),
        "dctcp": ("tab:purple", "v"),
        "cubic": ("tab:blue", "o"),
        "newreno": ("tab:green", "s"),
    }
    for cca, (color, marker) in styles.items():
        xs = [r.kernel_mbps for r in pts if r.cca == cca]
        ys = [r.sim_mbps for r in pts if r.cca == cca]
        if xs:
            ax.scatter(xs, ys, s=14, c=color, marker=marker, label=cca, alpha=0.8)
    lo, hi = 0.05, 60.0
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    for k in (0.8, 1.2):
        ax.plot([lo, hi], [k * lo, k * hi], color="grey", lw=0.6, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("kernel (l4sim emulate), Mbit/s")
    ax.set_ylabel("l4sim, Mbit/s")
    ax.set_title("Two flows in one classic queue: per-flow rate", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
