"""Figures from a results directory: throughput, cwnd, RTT and queue delay over time.

Uses matplotlib's object API (``Figure`` + Agg canvas), so it never touches pyplot's global
state or needs a display.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from l4sim.engine.results import Result, make_dir, read
from l4sim.errors import L4simError

__all__ = ["FIGURES", "plot"]

FIGURES = ("throughput.png", "cwnd.png", "rtt.png", "queue.png", "overview.png")


def _flow_labels(result: Result) -> dict[int, tuple[str, str, float]]:
    """flow id → (label, kind, start time in s)."""
    out = {}
    for f in result.summary.get("flows", []):
        name = f.get("cca") or f.get("kind", "")
        label = f"flow {f['id']} {name} {f.get('src')}→{f.get('dst')}"
        out[int(f["id"])] = (label, f.get("kind", "tcp"), float(f.get("start_s") or 0.0))
    return out


def _flows(result: Result, tcp_only: bool = False) -> list[tuple[str, pl.DataFrame]]:
    labels = _flow_labels(result)
    df = result.flows
    if df.is_empty():
        return []
    out = []
    for fid in sorted(df["flow"].unique().to_list()):
        label, kind, start = labels.get(int(fid), (f"flow {fid}", "tcp", 0.0))
        if tcp_only and kind != "tcp":
            continue
        rows = df.filter((pl.col("flow") == fid) & (pl.col("time_s") >= start)).sort("time_s")
        out.append((label, rows))
    return out


def _busy_queues(result: Result) -> list[tuple[str, pl.DataFrame]]:
    """Queues that carried traffic and built a backlog (or dropped or marked packets), in
    summary order; if none did, the busiest queue. Idle access queues would only clutter.
    A multi-class queue (e.g. DualPI2) comes with one entry per class ("r0->r1 L4S")."""
    df = result.queues
    if "class" not in df.columns:
        df = df.with_columns(pl.lit("").alias("class"))
    classes = df.filter(pl.col("class") != "")
    df = df.filter(pl.col("class") == "")
    if df.is_empty():
        return []
    stats = df.group_by("link").agg(
        pl.col("backlog_pkts").max().alias("backlog"),
        (pl.col("drops").max() + pl.col("ecn_marks").max()).alias("events"),
        pl.col("utilization").mean().alias("util"),
    )
    order = [q["link"] for q in result.summary.get("queues", [])]
    carried = set(order) if order else set(stats["link"].to_list())
    busy = stats.filter(
        pl.col("link").is_in(list(carried)) & ((pl.col("backlog") > 1) | (pl.col("events") > 0))
    )
    links = busy["link"].to_list()
    if not links:
        links = stats.sort("util", descending=True)["link"].head(1).to_list()
    rank = {lk: i for i, lk in enumerate(order)}
    links.sort(key=lambda lk: (rank.get(lk, len(rank)), lk))
    out = []
    for lk in links:
        out.append((lk, df.filter(pl.col("link") == lk).sort("time_s")))
        mine = classes.filter(pl.col("link") == lk)
        for cls in mine["class"].unique(maintain_order=True).to_list():
            out.append((f"{lk} {cls}", mine.filter(pl.col("class") == cls).sort("time_s")))
    return out


def _no_data(ax: Axes) -> None:
    ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")


def _finish(ax: Axes, ylabel: str, title: str, legend: bool) -> None:
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if legend and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="small", loc="best")


def _lines(
    ax: Axes,
    rows: list[tuple[str, pl.DataFrame]],
    y: Callable[[pl.DataFrame], Any],
    ylabel: str,
    title: str,
    *,
    step: bool = False,
    from_zero: bool = True,
) -> None:
    """One line per labelled frame of ``rows``, ``y`` of it over time (``step``: a count,
    drawn as steps); "no data" when there are none."""
    for label, d in rows:
        if step:
            ax.step(d["time_s"], y(d), where="post", label=label, lw=1)
        else:
            ax.plot(d["time_s"], y(d), label=label, lw=1)
    if not rows:
        _no_data(ax)
    if from_zero:
        ax.set_ylim(bottom=0)
    _finish(ax, ylabel, title, True)


def _throughput(ax: Axes, result: Result) -> None:
    rows = _flows(result)
    _lines(ax, rows, lambda d: d["goodput_bps"] / 1e6, "goodput (Mbps)", "Per-flow goodput")


def _cwnd(ax: Axes, result: Result) -> None:
    rows = _flows(result, tcp_only=True)
    _lines(ax, rows, lambda d: d["cwnd_pkts"], "cwnd (packets)", "Congestion window", step=True)


def _rtt(ax: Axes, result: Result) -> None:
    rows = _flows(result, tcp_only=True)
    _lines(
        ax,
        rows,
        lambda d: d["srtt_s"] * 1e3,
        "smoothed RTT (ms)",
        "Round-trip time",
        from_zero=False,
    )


def _sojourn(ax: Axes, result: Result) -> None:
    rows = _busy_queues(result)
    _lines(ax, rows, lambda d: d["sojourn_s"] * 1e3, "queue delay (ms)", "Queue sojourn time")


def _backlog(ax: Axes, result: Result) -> None:
    rows = _busy_queues(result)
    _lines(ax, rows, lambda d: d["backlog_pkts"], "backlog (packets)", "Queue backlog", step=True)


def _frame_delay(ax: Axes, result: Result) -> None:
    """Each media flow's frame delays (first packet sent to last received) against the
    time the frame left, its deadline dashed; frames not complete (a packet lost, or still in
    flight at the end) as crosses at the top."""
    frames = result.frames if result.frames is not None else pl.DataFrame()
    labels = _flow_labels(result)
    top = 0.0
    for flow in sorted(set(frames["flow"].to_list())) if frames.height else []:
        d = frames.filter(pl.col("flow") == flow)
        done = d.filter(pl.col("delay_s").is_not_nan())
        name = labels[flow][0] if flow in labels else f"flow {flow}"
        line = ax.plot(done["sent_s"], done["delay_s"] * 1e3, lw=1, label=name)[0]
        top = max(top, float(done["delay_s"].max() or 0.0) * 1e3)
        lost = d.filter(pl.col("delay_s").is_nan() & pl.col("sent_s").is_not_nan())
        if lost.height:
            ax.plot(lost["sent_s"], [top] * lost.height, "x", color=line.get_color(), ms=3)
        deadline = result.summary["flows"][flow].get("frames", {}).get("deadline_s")
        if deadline is not None:
            ax.axhline(deadline * 1e3, color=line.get_color(), ls="--", lw=0.8)
    if not frames.height:
        _no_data(ax)
    ax.set_ylim(bottom=0)
    _finish(ax, "frame delay (ms)", "Frame delay (x: lost, or in flight at the end)", True)


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=120)
    except OSError as e:
        raise L4simError(f"cannot write figure {str(path)!r} ({e.strerror or e})") from None
    return path


def _single(draw: Callable[[Axes, Result], None], result: Result, path: Path) -> Path:
    fig = Figure(figsize=(8, 4))
    draw(fig.add_subplot(1, 1, 1), result)
    return _save(fig, path)


def plot(out_dir: str | Path, fig_dir: str | Path | None = None) -> list[Path]:
    """Draw the figures for the results in ``out_dir`` into ``fig_dir`` (default: the same
    directory); returns the PNG paths (``FIGURES``, and ``frame_delay.png`` for a run with
    media flows)."""
    result = read(out_dir)
    dest = make_dir(fig_dir if fig_dir is not None else out_dir, "figure directory")
    paths = [
        _single(_throughput, result, dest / "throughput.png"),
        _single(_cwnd, result, dest / "cwnd.png"),
        _single(_rtt, result, dest / "rtt.png"),
    ]

    fig = Figure(figsize=(8, 6))
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    _sojourn(ax1, result)
    _backlog(ax2, result)
    paths.append(_save(fig, dest / "queue.png"))

    fig = Figure(figsize=(13, 8))
    axes: Any = fig.subplots(2, 2, sharex=True)
    _throughput(axes[0, 0], result)
    _cwnd(axes[0, 1], result)
    _rtt(axes[1, 0], result)
    _sojourn(axes[1, 1], result)
    s = result.summary
    title = s.get("scenario", Path(out_dir).name)
    if "jain_fairness" in s and s["jain_fairness"] is not None:
        title += f" — Jain fairness {s['jain_fairness']:.3f}"
    fig.suptitle(title)
    paths.append(_save(fig, dest / "overview.png"))
    if result.frames is not None:  # media flows: their frames' delays
        paths.append(_single(_frame_delay, result, dest / "frame_delay.png"))
    return paths


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display, safe in worker
    processes): the one setup every experiment's figure code shares."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
