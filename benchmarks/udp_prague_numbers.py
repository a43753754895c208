"""UDP Prague's measured behaviour for docs/media.md: alone, beside TCP Prague, over each
feedback kind, through a capacity drop and a loss-only FIFO, and the example scenario.

    python benchmarks/udp_prague_numbers.py [--out benchmarks/data/udp_prague]

Writes ``OUT.json`` (every number) and ``OUT.md`` (the tables docs/media.md includes). All
runs are simulations with seed 1: the same bytes every time.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import l4sim

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = l4sim.load(ROOT / "scenarios" / "media_udp_prague_dualpi2.toml")
BULK: dict[str, Any] = {"kind": "udp", "rate": "1Gbps", "packet_size": "1400B", "cc": "udp_prague"}


def dumbbell(flows: list[dict[str, Any]], duration: str, **bottleneck: Any) -> l4sim.Scenario:
    """The example scenario's topology (1 Gbit/s / 1 ms access links, a 100 Mbit/s / 12 ms
    DualPI2 bottleneck: 28 ms base RTT), its bottleneck changed by ``bottleneck``."""
    topology = EXAMPLE.to_dict()["topology"]
    topology["bottleneck"].update(bottleneck)
    return EXAMPLE.with_overrides(flows=flows, duration=duration, topology=topology)


def bottleneck(summary: dict[str, Any]) -> dict[str, Any]:
    return next(q for q in summary["queues"] if q["link"] == "r0->r1")


def trace(sc: l4sim.Scenario, step: float) -> tuple[list[list[float]], dict[str, Any]]:
    """Each flow's delivered rate (Mbit/s) in every ``step`` s of the run, and the summary."""
    sim = l4sim.Simulation(sc)
    end = float(sc.duration) / 1e9
    prev = [0] * len(sc.flows)
    rows: list[list[float]] = []
    t = step
    while t <= end + 1e-9:
        sim.run_until(f"{t:.3f}s")
        now = [f["bytes_acked"] for f in sim.summary()["flows"]]
        rows.append([(b - a) * 8 / step / 1e6 for a, b in zip(prev, now, strict=True)])
        prev, t = now, t + step
    sim.run()
    return rows, sim.summary()


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def first_at(rows: list[list[float]], step: float, after: float, level: float) -> float:
    """Seconds after ``after`` until flow 0's rate first reaches ``level`` Mbit/s."""
    for i, r in enumerate(rows):
        t = (i + 1) * step
        if t > after and r[0] >= level:
            return round(t - after, 3)
    return float("nan")


def l4s_delay(summary: dict[str, Any]) -> dict[str, float]:
    c = bottleneck(summary)["classes"][0]
    return {"l_p50_ms": c["sojourn_p50_s"] * 1e3, "l_p99_ms": c["sojourn_p99_s"] * 1e3}


def alone_by_feedback() -> list[dict[str, Any]]:
    out = []
    for name, fb in [
        ("prague (per-packet ACKs)", "prague"),
        ("rfc8888, 5 ms", {"kind": "rfc8888", "interval": "5ms"}),
        ("rfc8888, 25 ms (the reference's period)", {"kind": "rfc8888", "interval": "25ms"}),
    ]:
        rows, s = trace(dumbbell([{**BULK, "feedback": fb}], "12s"), 0.1)
        f = s["flows"][0]
        out.append(
            {
                "feedback": name,
                "ramp_to_90pct_s": first_at(rows, 0.1, 0.0, 90.0),
                "rate_4_12s_mbps": mean([r[0] for r in rows[40:]]),
                "feedback_bytes_pct": 100 * f["feedback"]["bytes_sent"] / f["bytes_acked"],
                **l4s_delay(s),
            }
        )
    return out


def capacity_drop() -> list[dict[str, Any]]:
    """UDP Prague, and TCP Prague for comparison, through 100 → 20 → 100 Mbit/s."""
    steps = [
        {"at": "0s", "rate": "100Mbps"},
        {"at": "6s", "rate": "20Mbps"},
        {"at": "10s", "rate": "100Mbps"},
    ]
    out = []
    for name, flow in [("udp_prague", BULK), ("TCP Prague", {"kind": "tcp", "cca": "prague"})]:
        sc = dumbbell([flow], "14s", schedule=steps)
        rows, _ = trace(sc, 0.1)
        q = l4sim.run(sc).queues
        low = q.filter(
            (q["link"] == "r0->r1")
            & (q["class"] == "L4S")
            & (q["time_s"] > 6.0)
            & (q["time_s"] <= 10.0)
        )
        high = low.filter(low["sojourn_s"] > 0.001)["time_s"]
        out.append(
            {
                "flow": name,
                "l_sojourn_peak_ms": float(low["sojourn_s"].max()) * 1e3,  # type: ignore[arg-type]
                "l_sojourn_over_1ms_for_s": round(float(high.max()) - 6.0, 1) if len(high) else 0.0,
                "rate_7_10s_mbps": mean([r[0] for r in rows[70:100]]),
                "to_90pct_of_100_after_rise_s": first_at(rows, 0.1, 10.0, 90.0),
                "rate_12_14s_mbps": mean([r[0] for r in rows[120:]]),
            }
        )
    return out


def beside_tcp_prague() -> dict[str, Any]:
    rows, s = trace(dumbbell([BULK, {"kind": "tcp", "cca": "prague"}], "20s"), 1.0)
    udp, tcp = mean([r[0] for r in rows[8:]]), mean([r[1] for r in rows[8:]])
    return {"udp_prague_mbps": udp, "tcp_prague_mbps": tcp, "ratio": udp / tcp, **l4s_delay(s)}


def fifo_without_ecn() -> list[dict[str, Any]]:
    out = []
    fifo = {"kind": "fifo", "limit": "200p"}
    for name, flow in [
        ("udp_prague, Not-ECT", {**BULK, "ecn": "not_ect"}),
        ("no CC, 60 Mbit/s", {"kind": "udp", "rate": "60Mbps", "packet_size": "1400B"}),
    ]:
        rows, s = trace(dumbbell([flow], "20s", rate="50Mbps", qdisc=fifo), 1.0)
        q = bottleneck(s)
        out.append(
            {
                "flow": name,
                "rate_4_20s_mbps": mean([r[0] for r in rows[4:]]),
                "drops": q["drops"],
                "backlog_mean_pkts": q["backlog_mean_pkts"],
                "sojourn_p99_ms": q["sojourn_p99_s"] * 1e3,
            }
        )
    return out


def example() -> dict[str, Any]:
    s = l4sim.run(EXAMPLE).summary
    flows = [
        {
            "goodput_mbps": f["goodput_bps"] / 1e6,
            "owd_p99_ms": f["owd_p99_s"] * 1e3,
            "ce_marks": f["ecn_marks"],
        }
        for f in s["flows"]
    ]
    fr = s["flows"][1]["frames"]
    frames = {
        "produced": fr["produced"],
        "complete": fr["complete"],
        "late": fr["late"],
        "delay_p50_ms": fr["delay_p50_s"] * 1e3,
        "delay_p99_ms": fr["delay_p99_s"] * 1e3,
        "target_mbps": fr["target_rate_bps"] / 1e6,
    }
    return {"flows": flows, "video_frames": frames, **l4s_delay(s)}


def table(rows: list[dict[str, Any]]) -> str:
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        cells = [f"{v:.2f}" if isinstance(v, float) else str(v) for v in r.values()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks/data/udp_prague"))
    out = Path(ap.parse_args().out)
    data = {
        "alone_by_feedback": alone_by_feedback(),
        "beside_tcp_prague": beside_tcp_prague(),
        "capacity_drop": capacity_drop(),
        "fifo_without_ecn": fifo_without_ecn(),
        "example": example(),
    }
    out.with_suffix(".json").write_text(json.dumps(data, indent=1) + "\n")
    ex = data["example"]
    md = "\n\n".join(
        [
            "**Alone, by feedback kind** (100 Mbit/s DualPI2, 28 ms; L-queue sojourn over the "
            "whole run):\n\n" + table(data["alone_by_feedback"]),
            "**Beside one TCP Prague flow** (8-20 s):\n\n" + table([data["beside_tcp_prague"]]),
            "**Capacity 100 → 20 → 100 Mbit/s** (steps at 6 s and 10 s; 0.1 s bins; the L "
            "queue's mean sojourn per bin between the steps: its peak, and how long after the drop "
            "it stays above 1 ms):\n\n" + table(data["capacity_drop"]),
            "**A 200-packet FIFO without ECN at 50 Mbit/s**:\n\n" + table(data["fifo_without_ecn"]),
            "**The example scenario** (flows 0 bulk, 1 video, 2 TCP Prague from 10 s; L queue "
            f"p50 {ex['l_p50_ms']:.2f} ms, p99 {ex['l_p99_ms']:.2f} ms):\n\n"
            + table(ex["flows"])
            + "\n\nVideo frames:\n\n"
            + table([ex["video_frames"]]),
        ]
    )
    out.with_suffix(".md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
