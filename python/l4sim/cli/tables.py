"""The tables the commands print (rich): a run's flows and queues, a sweep, an evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from l4sim.cli._app import out_console
from l4sim.units import format_number


def _num(value: Any, scale: float = 1.0, fmt: str = "{:.2f}") -> str:
    return format_number(value, fmt, scale)


#: The qdiscs that give each flow a queue of its own.
FLOW_QUEUEING = frozenset({"fq", "fq_codel", "fq_pie", "fq_l4s"})


def _flow_table(summary: dict[str, Any]) -> Table:
    flows = summary.get("flows", [])
    # Columns shown only when a flow needs them: a sized flow's completion time, the ECN.
    sized = any(f.get("fct_s") is not None for f in flows)
    ecn = any(f.get("ecn") not in (None, "off", "not_ect") for f in flows)
    # Behind a flow-queueing qdisc each flow has a queue of its own: its one-way delay's
    # tail (propagation included) is that queue's, which the blended queue row hides.
    per_flow = any(_busy(q) and q.get("qdisc") in FLOW_QUEUEING for q in summary.get("queues", []))
    late = any((f.get("start_s") or 0) > 0 for f in flows)  # a start column when one differs
    table = Table(title="Flows", title_justify="left")
    for col, justify in [
        ("id", "right"),
        ("flow", "left"),
        *([("ecn", "left")] if ecn else []),
        ("path", "left"),
        *([("start s", "right")] if late else []),
        ("goodput Mbps", "right"),
        ("retx", "right"),
        ("srtt ms", "right"),
        *([("owd p99 ms", "right")] if per_flow else []),
        *([("fct s", "right")] if sized else []),
    ]:
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for f in flows:
        table.add_row(
            str(f.get("id")),
            f"{f.get('kind')} {f.get('cca') or ''}".strip(),
            *([str(f.get("ecn") or "-")] if ecn else []),
            f"{f.get('src')}→{f.get('dst')}",
            *([_num(f.get("start_s"), fmt="{:g}")] if late else []),
            _num(f.get("goodput_bps"), 1e-6),
            str(f.get("retransmits", "-")),
            _num(f.get("srtt_mean_s"), 1e3, "{:.1f}"),
            *([_num(f.get("owd_p99_s"), 1e3, "{:.1f}")] if per_flow else []),
            *([_num(f.get("fct_s"), fmt="{:.3f}")] if sized else []),
        )
    return table


def _busy(q: dict[str, Any]) -> bool:
    """Worth a row: the queue dropped or marked, held packets, or was busy half the time."""
    return bool(
        (q.get("drops") or 0) > 0
        or (q.get("ecn_marks") or 0) > 0
        or (q.get("backlog_mean_pkts") or 0) >= 0.1
        or (q.get("utilization") or 0) >= 0.5
    )


def _queue_table(summary: dict[str, Any]) -> Table:
    queues = summary.get("queues", [])
    shown = [q for q in queues if _busy(q)] or queues[:1]
    hidden = len(queues) - len(shown)
    title = "Queues" + (f" ({hidden} lightly used ones are in summary.json)" if hidden else "")
    table = Table(title=title, title_justify="left")
    for col in [
        "link",
        "qdisc",
        "util %",
        "delay ms",
        "p99 ms",
        "backlog",
        "drops",
        "marks",
    ]:
        table.add_column(col, justify="left" if col in ("link", "qdisc") else "right")
    for q in shown:
        table.add_row(*_queue_cells(q, str(q.get("link")), str(q.get("qdisc"))))
        # A multi-class qdisc (DualPI2's L4S and Classic queues) reports each class too:
        # one row per class under the whole queue's.
        classes = q.get("classes") or []
        for i, c in enumerate(classes):
            branch = "└" if i == len(classes) - 1 else "├"
            table.add_row(*_queue_cells(c, "", f"{branch} {c.get('qdisc')}"))
    return table


def _queue_cells(q: dict[str, Any], link: str, qdisc: str) -> list[str]:
    return [
        link,
        qdisc,
        _num(q.get("utilization"), 100, "{:.1f}"),
        _num(q.get("sojourn_mean_s"), 1e3),
        _num(q.get("sojourn_p99_s"), 1e3),
        _num(q.get("backlog_mean_pkts"), fmt="{:.1f}"),
        str(q.get("drops", "-")),
        str(q.get("ecn_marks", "-")),
    ]


def _frame_lines(summary: dict[str, Any]) -> list[str]:
    """One line per media flow: its frames, how many were late, their delay."""
    lines = []
    for f in summary.get("flows", []):
        fr = f.get("frames")
        if not fr:
            continue
        lines.append(
            f"Frames of flow {f['id']}: {fr['complete']:,} of {fr['produced']:,} complete, "
            f"{fr['late']:,} late (> {fr['deadline_s'] * 1e3:g} ms); delay p50 "
            f"{_num(fr['delay_p50_s'], 1e3)} ms, p99 {_num(fr['delay_p99_s'], 1e3)} ms."
        )
    return lines


def _report(summary: dict[str, Any], paths: list[Path]) -> None:
    out_console.print(_flow_table(summary))
    out_console.print(_queue_table(summary))
    for line in _frame_lines(summary):
        out_console.print(line, soft_wrap=True)
    sim_t, wall = summary.get("sim_time_s") or 0.0, summary.get("wall_time_s") or 0.0
    speed = f" ({sim_t / wall:,.0f}x real time)" if wall > 0 else ""
    jain = summary.get("jain_fairness")
    jain_text = f"; Jain fairness {jain:.3f}" if isinstance(jain, int | float) else ""
    out_console.print(
        f"Simulated {sim_t:g} s in {wall:.2f} s{speed}, {summary.get('events', 0):,} events"
        f"{jain_text}.",
        soft_wrap=True,
    )
    if paths:
        folder = paths[0].parent
        names = ", ".join(p.name for p in paths)
        out_console.print(
            f"Results in [bold]{escape(str(folder))}[/]: {escape(names)}", soft_wrap=True
        )


def _sweep_table(outcome: Any) -> Table:
    table = Table(title=f"Sweep: {outcome.executor}", title_justify="left")
    for col in [
        "points",
        "done before",
        "run now",
        "ok",
        "failed",
        "retried",
        "wall s",
        "points/s",
    ]:
        table.add_column(col, justify="right")
    table.add_row(
        str(outcome.total),
        str(outcome.skipped),
        str(outcome.ran),
        str(outcome.ok),
        str(outcome.failed),
        str(outcome.retried),
        f"{outcome.wall_time_s:.2f}",
        f"{outcome.points_per_s:.1f}",
    )
    return table


def _eval_table(ev: dict[str, Any], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    for col in ["util %", "queue pkts", "queue BDP", "sRTT ms", "cwnd pkts", "drops", "return"]:
        table.add_column(col, justify="right")
    table.add_row(
        _num(ev.get("utilization"), 100, "{:.1f}"),
        _num(ev.get("queue_mean_pkts"), fmt="{:.1f}"),
        _num(ev.get("queue_mean_bdp"), fmt="{:.2f}"),
        _num(ev.get("srtt_mean_ms"), fmt="{:.1f}"),
        _num(ev.get("cwnd_mean_pkts"), fmt="{:.1f}"),
        str(ev.get("drops", "-")),
        _num(ev.get("return"), fmt="{:.4g}"),
    )
    return table
