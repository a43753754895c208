"""Congestion-control algorithms end to end: BBR v1 and BIC on a 10 Mbps / 40 ms dumbbell.

The expectations come from the algorithms' definitions (Linux ``tcp_bbr.c``,
``tcp_bic.c``), not from what the code printed: BBR keeps in flight about one BDP so the
bottleneck queue stays small and dips to 4 packets for 200 ms every 10 s (ProbeRTT); BIC
reduces by 819/1024 and creeps near the window of its last loss before probing beyond it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import polars as pl
import pytest

pytest.importorskip("l4sim._core")

import l4sim

WIRE = 1500  # MSS 1448 + 52 B of headers
RATE = 10e6
BASE_RTT = 0.040  # 2 · (18 ms bottleneck + 1 ms + 1 ms access)
BDP = RATE * BASE_RTT / 8 / WIRE  # 33.3 packets


def dumbbell(cca: str, *, limit: str, duration: str, seed: int = 1) -> l4sim.Scenario:
    """One flow over 10 Mbps / 18 ms, 1 Gbps / 1 ms access links, sampled every 10 ms."""
    return l4sim.Scenario.parse(
        {
            "name": f"cc-{cca}",
            "seed": seed,
            "duration": duration,
            "sample_interval": "10ms",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "1ms"},
                "bottleneck": {
                    "rate": "10Mbps",
                    "delay": "18ms",
                    "qdisc": {"kind": "fifo", "limit": limit},
                },
            },
            "flows": [{"kind": "tcp", "cca": cca}],
        }
    )


def bottleneck(summary: dict[str, Any]) -> dict[str, Any]:
    return next(q for q in summary["queues"] if q["link"] == "r0->r1")


def runs_below(rows: list[tuple[float, float]], level: float) -> list[tuple[float, float]]:
    """(start, end) times of the maximal runs of samples with value <= level."""
    out, start, prev_t = [], None, 0.0
    for t, v in rows:
        if v <= level and start is None:
            start = t
        elif v > level and start is not None:
            out.append((start, t))
            start = None
        prev_t = t
    if start is not None:
        out.append((start, prev_t))
    return out


@pytest.fixture(scope="module")
def bbr_run() -> l4sim.Simulation:
    # Generous FIFO (30 BDP): BBR, not the buffer, must keep the queue short.
    sim = l4sim.Simulation(dumbbell("bbr", limit="1000p", duration="35s"))
    sim.run()
    return sim


def test_bbr_fills_the_link_with_a_short_queue(bbr_run: l4sim.Simulation) -> None:
    s = bbr_run.summary()
    flow = s["flows"][0]
    assert flow["cca"] == "bbr"
    assert flow["timeouts"] == 0
    # ProbeRTT costs about 200 ms in 10 s and STARTUP a few RTTs: ≥ 95 % remains.
    assert bottleneck(s)["utilization"] >= 0.95
    assert flow["goodput_bps"] >= 0.93 * RATE * 1448 / WIRE
    # Steady state (after STARTUP/DRAIN): in flight ≈ BDP (+ 1/4 BDP while probing), so
    # the queue holds a fraction of a BDP, never the tens of BDP the buffer allows.
    q = bbr_run.queues().filter((pl.col("link") == "r0->r1") & (pl.col("time_s") >= 2.0))
    backlog = q["backlog_pkts"]
    assert backlog.mean() <= 0.5 * BDP, f"mean backlog {backlog.mean():.1f} pkts"
    assert backlog.quantile(0.99) <= BDP, f"p99 backlog {backlog.quantile(0.99):.1f} pkts"
    sojourn = q["sojourn_s"].fill_nan(None).drop_nulls()
    assert sojourn.mean() <= 0.5 * BASE_RTT, f"mean sojourn {sojourn.mean() * 1e3:.1f} ms"
    # And SRTT stays near the base RTT.
    f = bbr_run.flows().filter(pl.col("time_s") >= 2.0)
    assert f["srtt_s"].mean() <= 1.5 * BASE_RTT


def test_bbr_probes_rtt_every_ten_seconds_at_four_packets(bbr_run: l4sim.Simulation) -> None:
    f = bbr_run.flows().filter(pl.col("time_s") >= 0.5)
    dips = runs_below(f.select("time_s", "cwnd_pkts").rows(), 4)
    # 35 s: the min_rtt from the first ACKs expires after 10 s; then 10 s after the
    # previous ProbeRTT ended (≥ 10.2 s start to start), or later if a lower RTT sample
    # refreshed min_rtt in between.
    assert len(dips) == 3, f"cwnd ≤ 4 runs: {dips}"
    starts = [a for a, _ in dips]
    assert 9.5 <= starts[0] <= 11.0, dips
    for a, b in itertools.pairwise(starts):
        assert 10.2 <= b - a <= 11.0, dips
    for a, b in dips:
        # 200 ms at 4 packets, plus at most a round trip to drain and to finish the round;
        # the 10 ms sampling blurs both ends.
        assert 0.18 <= b - a <= 0.30, dips
    # Between dips, cwnd is back at about 2 BDP (cwnd_gain 2 + 3 segments of budget).
    steady = f.filter(pl.col("time_s").is_between(starts[0] + 1.0, starts[1] - 1.0))["cwnd_pkts"]
    assert 1.7 * BDP <= steady.median() <= 2.5 * BDP + 4, steady.median()


@pytest.fixture(scope="module")
def bic_run() -> l4sim.Simulation:
    # One-BDP FIFO: the window peaks at about 2 BDP (pipe + buffer) and BIC's reduction
    # to 0.8 of it stays above one BDP, so the link never idles.
    sim = l4sim.Simulation(dumbbell("bic", limit=f"{math.ceil(BDP)}p", duration="60s"))
    sim.run()
    return sim


def loss_cycles(series: pl.DataFrame) -> list[tuple[int, int, list[int]]]:
    """Per congestion event: (cwnd just before it, ssthresh it set, cwnd samples from the
    end of its recovery to the next event)."""
    rows = series.select("time_s", "cwnd_pkts", "ssthresh_pkts", "ca_state").rows()
    events = [
        i for i in range(1, len(rows)) if rows[i][3] == "recovery" and rows[i - 1][3] != "recovery"
    ]
    out = []
    for e0, e1 in itertools.pairwise(events):
        end = next(i for i in range(e0, e1) if rows[i][3] == "open")
        out.append((int(rows[e0 - 1][1]), int(rows[e0][2]), [int(r[1]) for r in rows[end:e1]]))
    return out


def test_bic_fills_the_link_and_reduces_by_beta(bic_run: l4sim.Simulation) -> None:
    s = bic_run.summary()
    assert s["flows"][0]["cca"] == "bic"
    assert s["flows"][0]["timeouts"] == 0
    assert bottleneck(s)["utilization"] >= 0.95
    cycles = loss_cycles(bic_run.flows().filter(pl.col("time_s") >= 1.0))
    assert len(cycles) >= 5, "regular congestion events over 60 s"
    for cwnd, ss, _ in cycles:
        # ssthresh = cwnd · 819/1024 at the loss (the sample 10 ms before it may miss a
        # last segment of growth).
        assert 0 <= ss - cwnd * 819 // 1024 <= 1, (cwnd, ss)


def test_bic_plateaus_near_the_last_maximum(bic_run: l4sim.Simulation) -> None:
    # Samples every 10 ms; the RTT is 40-80 ms here. NewReno would grow one segment per
    # RTT throughout, i.e. 2.5-5 segments per 200 ms.
    cycles = loss_cycles(bic_run.flows().filter(pl.col("time_s") >= 1.0))
    jumps = 0
    for cwnd, ss, c in cycles:
        assert len(c) > 30, (cwnd, ss, c)
        # Near last_max_cwnd BIC creeps (smooth_part: cnt = 5·cwnd, well under a segment
        # per RTT): most of each cycle grows by at most 2 segments in 200 ms.
        creep = sum(1 for i in range(len(c) - 20) if c[i + 20] - c[i] <= 2) / (len(c) - 20)
        assert creep >= 0.5, (cwnd, ss, creep, c)
        # Binary search: when last_max_cwnd is well above ssthresh (no fast convergence),
        # the first 100 ms close a quarter of the distance per cnt period: ≥ 4 segments.
        if c[10] - c[0] >= 4:
            jumps += 1
    assert jumps >= len(cycles) // 3, "fast approach after losses at a new maximum"


def _cubic_start(hystart: bool) -> dict[str, Any]:
    scen = l4sim.scenario.Scenario.parse(
        {
            # The start-up only: after HyStart's exit Linux's 5 % per RTT cap (on by default)
            # reaches the buffer's end in ~1.3 s, a loss that is not the start-up's.
            "duration": "1s",
            "topology": {
                "preset": "dumbbell",
                "bottleneck": {
                    "rate": "100Mbps",
                    "delay": "20ms",
                    "qdisc": {"kind": "fifo", "limit": "400p"},
                },
            },
            "flows": [{"kind": "tcp", "cca": {"kind": "cubic", "hystart": hystart}}],
        }
    )
    return l4sim.run(scen).summary


def test_cubic_hystart_leaves_slow_start_before_the_buffer_overflows():
    # 100 Mbit/s x 44 ms: a BDP of ~380 packets and a 400-packet buffer. Plain slow start
    # doubles past BDP + buffer and overflows it; HyStart's ACK train (ACKs 0.12 ms apart
    # for longer than half the 44 ms minimum RTT) ends slow start near half the BDP, before
    # any queue builds, so the start-up loses nothing (Linux tcp_cubic, Ha & Rhee 2011).
    plain, hy = _cubic_start(False), _cubic_start(True)
    assert plain["flows"][0]["retransmits"] > 0
    assert hy["flows"][0]["retransmits"] == 0
    drops = {q["link"]: q["drops"] for q in hy["queues"]}
    assert drops["r0->r1"] == 0


def test_cubic_fast_convergence_is_an_option_on_by_default():
    """CUBIC's `fast_convergence` (RFC 9438 §4.7, Linux's module parameter, default 1)
    reaches the core through the `cca` table: `true` is the default run byte for byte,
    `false` keeps W_max at the window of each loss and so grows back differently."""

    def summary(**options: bool) -> dict[str, Any]:
        sc = dumbbell("cubic", limit="20p", duration="6s")
        data = sc.to_dict()
        data["flows"][0]["cca"] = {"kind": "cubic", **options}
        flows = l4sim.Scenario.parse(data).to_core_config()["flows"]
        assert flows[0]["tcp"]["cca"] == {"kind": "cubic", **options}
        out = l4sim.run(l4sim.Scenario.parse(data)).summary
        return {k: v for k, v in out["flows"][0].items() if k != "cca"}

    default = summary()
    assert summary(fast_convergence=True) == default
    assert summary(fast_convergence=False) != default
