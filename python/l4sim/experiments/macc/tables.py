"""MA-CC's Markdown tables (:mod:`l4sim.experiments.macc`): Fig. 4's metrics per scheme
beside the paper's numbers, and the generalisation table; every cell is the mean ± the
half-width of its 95 % confidence interval over training seeds (Student's t)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from l4sim.experiments._tables import md_rows, mean_ci

#: "At the paper's point": steady throughput within this fraction of the paper's, with a
#: MAD queue of at most MAX_MAD_QUEUE packets (the bar MA-CC's reproduction is held to).
WITHIN = 0.10
MAX_MAD_QUEUE = 5.0


def stats(xs: list[float], digits: int = 0) -> str:
    """Mean ± the half-width of its 95 % confidence interval over seeds (t quantile)."""
    mean, _, high, n = mean_ci(xs)
    if n == 0:
        return "-"
    half = 0.0 if high is None else high - mean
    return f"{mean:,.{digits}f} ± {half:,.{digits}f}"


def at_paper_point(row: Any, paper_kbps: float | None) -> bool | None:
    """Whether a seed's greedy episode reaches the paper's point in its last seconds (None
    where the paper gives no throughput)."""
    if paper_kbps is None:
        return None
    near = abs(row.steady_throughput_kbps - paper_kbps) <= WITHIN * paper_kbps
    return near and row.steady_mad_queue_pkts <= MAX_MAD_QUEUE


def results_table(
    rows: list[Any], schemes: list[str], paper: dict[str, tuple[float | None, ...]]
) -> str:
    """Per scheme (in ``schemes`` order): the whole greedy episode beside ``paper``'s numbers
    (throughput, RTT, MAD cwnd, MAD queue), its last seconds, and the seeds at the paper's
    point (:func:`at_paper_point`)."""
    head = (
        "| scheme | seeds | throughput kbit/s (paper) | RTT ms (paper) | MAD cwnd bytes (paper) "
        "| MAD queue pkts (paper) | last 10 s: throughput kbit/s | RTT ms | MAD cwnd bytes "
        "| MAD queue pkts | seeds at the paper's point |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for scheme in schemes:
        rs = [r for r in rows if r.scheme == scheme]
        if not rs:
            continue
        p = paper.get(scheme, (None,) * 4)

        def cell(vals: list[float], ref: float | None) -> str:
            return f"{stats(vals)} ({'-' if ref is None else f'{ref:,.0f}'})"

        hits = [at_paper_point(r, p[0]) for r in rs]
        lines.append(
            f"| {scheme} | {len(rs)} | {cell([r.throughput_kbps for r in rs], p[0])} "
            f"| {cell([r.rtt_ms for r in rs], p[1])} "
            f"| {cell([r.mad_cwnd_bytes for r in rs], p[2])} "
            f"| {cell([r.mad_queue_pkts for r in rs], p[3])} "
            f"| {stats([r.steady_throughput_kbps for r in rs])} "
            f"| {stats([r.steady_rtt_ms for r in rs])} "
            f"| {stats([r.steady_mad_cwnd_bytes for r in rs])} "
            f"| {stats([r.steady_mad_queue_pkts for r in rs], 1)} "
            f"| {'-' if p[0] is None else f'{sum(bool(h) for h in hits)} of {len(rs)}'} |"
        )
    return head + "\n".join(lines) + "\n"


def generalise_table(rows: list[Any]) -> str:
    """Per condition and scheme: mean ± 95 % CI over seeds (the episode's last seconds)."""
    head = (
        "| condition | scheme | throughput kbit/s | utilisation % | RTT ms | queue pkts "
        "| sum of cwnd pkts | CUBIC flow kbit/s |\n|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for cond in dict.fromkeys(r.condition for r in rows):
        for scheme in dict.fromkeys(r.scheme for r in rows):
            rs = [r for r in rows if r.condition == cond and r.scheme == scheme]
            if not rs:
                continue
            other = [r.other_kbps for r in rs if r.other_kbps is not None]
            lines.append(
                f"| {cond} | {scheme} | {stats([r.throughput_kbps for r in rs])} "
                f"| {stats([100 * r.utilisation for r in rs])} "
                f"| {stats([r.rtt_ms for r in rs])} | {stats([r.queue_pkts for r in rs], 1)} "
                f"| {stats([r.cwnd_sum_pkts for r in rs])} "
                f"| {stats(other) if other else '-'} |"
            )
    return head + "\n".join(lines) + "\n"


def headline(out_dir: Path) -> str:
    """What a full run shows, from its ``results.md``: MA-CC's and the single-agent
    schemes' last-10-s throughput over the training seeds, and how many of MA-CC's seeds
    reach the paper's point."""
    rows = {r["scheme"]: r for r in md_rows(out_dir / "results.md")}
    ma = rows["ma-cc"]
    kbps, point = "last 10 s: throughput kbit/s", "seeds at the paper's point"
    paper = ma["throughput kbit/s (paper)"].rsplit("(", 1)[1].rstrip(")")

    def others() -> str:
        return "; ".join(
            f"{s} {rows[s][kbps]}" for s in ("red+rl-tcp", "rl-aqm+newreno") if s in rows
        )

    return (
        f"MA-CC over {ma['seeds']} seeds: {ma[kbps]} kbit/s in the last 10 s (paper {paper}), "
        f"MAD queue {ma['MAD queue pkts']} packets; {ma[point]} seeds at the "
        f"paper's point (throughput within {100 * WITHIN:.0f} %, MAD queue ≤ {MAX_MAD_QUEUE:g} "
        f"packets). Single agents: {others()} kbit/s."
    )
