"""Scalable congestion control (DCTCP, TCP Prague) and ECN feedback (classic, DCTCP echo,
Accurate ECN) against a step-marking AQM, the kind L4S relies on (RFC 9331 §5).

A RED configured with min_th = K, max_th = K + 1 packet, max_p = 1 and an instantaneous
average (w_q = 1) marks every packet that finds K or more queued: DCTCP's step threshold
(RFC 8257 §3.1). At 100 Mbps a 1500-byte packet takes 0.12 ms, so K = 20 is 2.4 ms.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

pytest.importorskip("l4sim._core")

import l4sim

K = 20
PKT_S = 1500 * 8 / 100e6


def step_aqm_run(flow: dict[str, Any], duration: str = "20s") -> tuple[dict, pl.DataFrame, float]:
    """Summary, flow series and the bottleneck's utilisation after a 5 s warm-up."""
    sc = l4sim.Scenario.parse(
        {
            "name": "step",
            "duration": duration,
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "1ms"},
                "bottleneck": {
                    "rate": "100Mbps",
                    "delay": "8ms",
                    "qdisc": {
                        "kind": "red",
                        "limit": "1000p",
                        "min_th": f"{K}p",
                        "max_th": f"{K + 1}p",
                        "max_p": 1.0,
                        "w_q": 1.0,
                        "gentle": False,
                        "ecn": True,
                        "harddrop": False,
                    },
                },
            },
            "flows": [{"kind": "tcp", **flow}],
        }
    )
    sim = l4sim.Simulation(sc)
    sim.run()
    q = sim.queues().filter((pl.col("link") == "r0->r1") & (pl.col("time_s") > 5.0))
    return sim.summary(), sim.flows(), q["utilization"].mean()


@pytest.mark.parametrize(
    "flow",
    [{"cca": "dctcp"}, {"cca": "dctcp", "ect1": True}, {"cca": "prague"}],
    ids=["dctcp", "dctcp-ect1", "prague"],
)
def test_scalable_cc_fills_the_link_with_a_queue_at_the_step(flow: dict[str, Any]) -> None:
    s, series, utilization = step_aqm_run(flow)
    q = next(q for q in s["queues"] if q["link"] == "r0->r1")
    f = s["flows"][0]
    assert utilization >= 0.95
    assert q["drops"] == 0 and f["retransmits"] == 0, "ECN alone controls it"
    assert q["ecn_marks"] > 0 and f["ecn_marks"] == q["ecn_marks"]
    # The queue hovers at the step: mean sojourn within one packet-time per flow-window
    # of K packets, never a standing queue far above it.
    assert (K - 8) * PKT_S <= q["sojourn_mean_s"] <= (K + 4) * PKT_S
    assert q["sojourn_p99_s"] <= 2 * K * PKT_S
    # Small sawtooth: cwnd varies by a few segments around BDP + K (RFC 8257 §3.3), unlike
    # Reno's halving.
    steady = series.filter(pl.col("time_s") >= 5.0)["cwnd_pkts"]
    bdp = 100e6 * 0.020 / 8 / 1500
    assert steady.min() >= 0.85 * bdp
    assert steady.max() <= bdp + 2 * K


def test_classic_ecn_newreno_halves_on_each_echo() -> None:
    s, series, utilization = step_aqm_run({"cca": "newreno", "ecn": True})
    q = next(q for q in s["queues"] if q["link"] == "r0->r1")
    assert q["drops"] == 0 and q["ecn_marks"] > 0
    steady = series.filter(pl.col("time_s") >= 5.0)["cwnd_pkts"]
    bdp = 100e6 * 0.020 / 8 / 1500
    # RFC 3168 §6.1.2: the window halves, so it swings from about BDP + K down to half.
    assert steady.min() <= 0.6 * (bdp + K)
    assert utilization < 0.95, "a step AQM starves a classic flow of queue"


def _prague_beside_cubic(qdisc: dict[str, Any], ecn_fallback: int, **prague: Any) -> list[float]:
    """Each flow's goodput (bit/s): Prague and an ECN CUBIC at 50 Mbit/s and 20 ms RTT in one
    queue, 30 s (l4s-tests scenario 6's set-up)."""
    sc = l4sim.Scenario.parse(
        {
            "name": "rfc3168",
            "duration": "30s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "5ms"},
                "bottleneck": {"rate": "50Mbps", "delay": "0ms", "qdisc": qdisc},
            },
            "flows": [
                {"kind": "tcp", "cca": {"kind": "prague", "ecn_fallback": ecn_fallback, **prague}},
                {"kind": "tcp", "cca": "cubic", "ecn": True, "accecn": True},
            ],
        }
    )
    return [f["goodput_bps"] for f in l4sim.run(sc).summary["flows"]]


def test_prague_falls_back_to_a_classic_response_behind_an_rfc3168_aqm() -> None:
    """The L4STeam Prague's classic-ECN detection (`ecn_fallback = 1`): behind PIE's 15 ms
    queue its score passes the classic threshold and each reduction takes at least
    alpha = 0.625, so CUBIC beside it gets a share of the same order as its own instead of the
    few percent it keeps beside plain Prague (l4s-tests scenario 6: 1:20 to 1:60)."""
    for qdisc in ({"kind": "pie", "ecn": True}, {"kind": "fq_codel", "flows": 1}):
        plain = _prague_beside_cubic(qdisc, 0)
        fallback = _prague_beside_cubic(qdisc, 1)
        # Over the whole run (slow start included) CUBIC keeps about a tenth beside plain
        # Prague, at least three times that beside the one that falls back.
        assert plain[1] / sum(plain) < 0.15, (qdisc, plain)
        assert fallback[1] / sum(fallback) > 3 * plain[1] / sum(plain), (qdisc, fallback)


def test_the_2020_prague_tree_runs_and_dominates_an_rfc3168_queue_as_today_s() -> None:
    """`tree = "l4steam-2020"` reaches the core (its integer window gives other bytes than
    today's fractional one) and, with its RTT independence on as that tree's module had it,
    leaves CUBIC a small share behind PIE, as the 2020 testbed measured (1:20 to 1:60)."""
    qdisc = {"kind": "pie", "ecn": True}
    today = _prague_beside_cubic(qdisc, 0)
    old = _prague_beside_cubic(qdisc, 0, tree="l4steam-2020", rtt_independence=True)
    assert old != today
    assert _prague_beside_cubic(qdisc, 0, tree="l4steam-2025") == today
    assert old[1] / sum(old) < 0.15, old


def test_prague_keeps_its_l4s_response_in_dualpi2_with_detection_on() -> None:
    """Behind DualPI2's L queue (under 1 ms of queue and of jitter) the score stays on the
    L4S side, so detection changes nothing."""
    plain = _prague_beside_cubic({"kind": "dualpi2"}, 0)
    fallback = _prague_beside_cubic({"kind": "dualpi2"}, 1)
    for a, b in zip(plain, fallback, strict=True):
        assert abs(a - b) <= 0.02 * a, (plain, fallback)
