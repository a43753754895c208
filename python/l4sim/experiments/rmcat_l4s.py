"""SCReAM v2 beside TCP Prague through DualPI2 (rmcat's ``l4s`` case) against SCReAM's own
test record (EricssonResearch/scream ``test-record.md``, 2024-10-31, test 2: SCReAM's rate
in Mbit/s beside 0-4 TCP Prague flows at 100 Mbit/s, per RTT), kept in
``l4sim/data/reference/scream_test_record.csv``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

L4S_PRAGUE = (0, 1, 2, 3, 4)
RECORD = Path(__file__).parents[1] / "data" / "reference" / "scream_test_record.csv"


def num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def record() -> dict[tuple[int, int], float]:
    """SCReAM's rate (Mbit/s) in its test record's test 2 per (RTT ms, Prague flows)."""
    lines = [x for x in RECORD.read_text().splitlines() if not x.startswith("#")]
    head = lines[0].split(",")
    rows = [dict(zip(head, x.split(","), strict=True)) for x in lines[1:]]
    return {
        (int(r["rtt_ms"]), n): float(r[f"tcp{n}"])
        for r in rows
        if r["test"] == "2"
        for n in L4S_PRAGUE
    }


def against_record(
    rows: list[Any], flows: dict[tuple[str, int], dict[str, Any]]
) -> list[dict[str, Any]]:
    """SCReAM v2 beside N TCP Prague flows (``rows``: rmcat's rows of the L4S case;
    ``flows``: each flow's means over the seeds by case and flow id), one dict per row: the
    rules, RTT, Prague flow count, SCReAM's rate and the record's, each Prague flow's rate,
    SCReAM's share, its frame delay p99 and the L queue's delay p99."""
    ref = record()
    out = []
    for r in rows:
        prague = [flows[(r.case, i)]["rate_mbps"] for i in range(1, r.prague + 1)]
        rec = ref.get((r.rtt_ms, r.prague))
        out.append(
            {
                "rules": r.rules,
                "rtt_ms": r.rtt_ms,
                "prague": r.prague,
                "scream_mbps": r.media_mbps,
                "record_mbps": rec,
                "ratio": rec and r.media_mbps / rec,
                "prague_mbps": " ".join(f"{p:.2f}" for p in prague),
                "share": r.media_mbps / (r.media_mbps + sum(prague)),
                "p99_ms": r.p99_ms,
                "queue_p99_ms": r.queue_p99_ms,
            }
        )
    return out


def l4s_table(table: list[dict[str, Any]], window: str, seeds: int) -> str:
    """:func:`against_record`'s rows as markdown (``window``: the span the rates are over)."""
    head = (
        "| rules | RTT (ms) | Prague flows | SCReAM (Mbit/s) | record (Mbit/s) | ours / "
        "record | each Prague flow (Mbit/s) | SCReAM's share | frame delay p99 (ms) | queue "
        "delay p99 (ms) |\n|---|---:|---:|---:|---:|---:|---|---:|---:|---:|\n"
    )
    lines = [
        f"| {r['rules']} | {r['rtt_ms']} | {r['prague']} | {r['scream_mbps']:.1f} "
        f"| {num(r['record_mbps'], 'g')} | {num(r['ratio'], '.2f')} "
        f"| {', '.join(f'{float(p):.1f}' for p in r['prague_mbps'].split()) or '-'} "
        f"| {r['share']:.2f} | {num(r['p99_ms'], '.1f')} | {num(r['queue_p99_ms'], '.2f')} |"
        for r in table
    ]
    note = (
        f"Rates over {window}, means of {seeds} seed(s); "
        "the equal share with N Prague flows is 1/(N+1); frame delay over the whole run. "
        "Record: SCReAM's `test-record.md` (2024-10-31, test 2, one run each, about +/- 5 %)."
    )
    return head + "\n".join(lines) + "\n\n" + note + "\n"
