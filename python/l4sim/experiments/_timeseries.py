"""Time series of several cases side by side: cwnd, RTT and queueing delay per flow (the
remote-brain experiment's Fig. 6-9 style figures)."""

from __future__ import annotations

from pathlib import Path

from l4sim.plot import pyplot

FLOW_LABELS = (("iot", "IoT (RL)"), ("cubic", "CUBIC, data path"), ("ctrl", "CUBIC, control path"))


def plot_timeseries(
    panels: list[tuple[str, dict[str, list[float]]]],
    title: str,
    path: Path,
    flows: tuple[tuple[str, str], ...] = FLOW_LABELS,
) -> Path:
    """The paper's Fig. 6-9: cwnd, RTT and queueing delay (sRTT - min RTT) per flow over
    time, one column per case."""
    plt = pyplot()
    cols = len(panels)
    fig, axes = plt.subplots(
        3, cols, figsize=(max(4.2 * cols, 9.0), 7.5), sharex=True, squeeze=False
    )
    rows = (
        ("cwnd", "cwnd (segments)"),
        ("rtt_ms", "RTT (ms)"),
        ("qdelay_ms", "queueing delay (ms)"),
    )
    for c, (label, tr) in enumerate(panels):
        t = tr["time_s"]
        for r, (key, ylabel) in enumerate(rows):
            ax = axes[r][c]
            for tag, name in flows:
                ys = tr.get(f"{tag}_{key}") or []
                if ys:
                    ax.plot(t[: len(ys)], ys, lw=0.6, label=name)
            if key == "rtt_ms" and tr.get("control_rtt_t"):
                ax.plot(tr["control_rtt_t"], tr["control_rtt_ms"], ".", ms=1.5, label="control RTT")
            ax.grid(alpha=0.3)
            if c == 0:
                ax.set_ylabel(ylabel)
            if r == 0:
                ax.set_title(label, fontsize=9)
            if r == 2:
                ax.set_xlabel("time (s)")
        axes[0][c].legend(fontsize=7, loc="upper right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
