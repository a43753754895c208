"""UDP Prague (L4STeam/udp_prague) as a datagram congestion control: its own ACKs, bulk over
a ``cbr`` source, frame mode over a ``video`` source (``crates/l4sim-core/src/app/
udp_prague.rs``, ``prague_ack.rs``; docs/media.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.test_udp_media import test_bad_media_input_is_one_sentence as one_sentence

import l4sim

ROOT = Path(__file__).resolve().parents[1]

#: A UDP Prague bulk flow: the CC sets the rate, ``rate`` only caps it.
BULK: dict[str, Any] = {"kind": "udp", "rate": "1Gbps", "cc": "udp_prague"}


#: The example scenario: its topology (1 Gbit/s / 1 ms access links, a 100 Mbit/s / 12 ms
#: DualPI2 bottleneck) is every test's.
EXAMPLE = l4sim.load(ROOT / "scenarios" / "media_udp_prague_dualpi2.toml")


def dumbbell(
    flows: list[dict[str, Any]], *, duration: str = "12s", **bottleneck: Any
) -> l4sim.Scenario:
    """The example's topology, its bottleneck changed by ``bottleneck``: base RTT 28 ms,
    above both Prague's 25 ms reference RTT (neither's RTT scaling applies)."""
    topology = EXAMPLE.to_dict()["topology"]
    topology["bottleneck"].update(bottleneck)
    return EXAMPLE.with_overrides(flows=flows, duration=duration, topology=topology)


def rates_between(sc: l4sim.Scenario, t0: float, t1: float) -> tuple[list[float], dict[str, Any]]:
    """Each flow's delivered rate (bit/s) from ``t0`` to ``t1`` s, and the summary at the end
    of the run."""
    sim = l4sim.Simulation(sc)
    sim.run_until(f"{t0}s")
    b0 = [f["bytes_acked"] for f in sim.summary()["flows"]]
    sim.run_until(f"{t1}s")
    b1 = [f["bytes_acked"] for f in sim.summary()["flows"]]
    sim.run()
    return [(b - a) * 8 / (t1 - t0) for a, b in zip(b0, b1, strict=True)], sim.summary()


def bottleneck(summary: dict[str, Any]) -> dict[str, Any]:
    """The bottleneck's forward queue (the dumbbell's r0 → r1)."""
    return next(q for q in summary["queues"] if q["link"] == "r0->r1")


def test_bulk_alone_fills_dualpi2_with_a_short_l_queue() -> None:
    """After its ramp from 100 kbit/s (about 3 s), UDP Prague alone fills 100 Mbit/s. Its L
    queue's p99 stays within 2 ms: DualPI2 CE-marks every L packet whose sojourn exceeds its
    1 ms step threshold, and the sender cuts by alpha/2 per vRTT on those marks, so the queue
    oscillates about the step, at most one vRTT's growth (1 ms of the rate) above it."""
    (rate,), s = rates_between(dumbbell([BULK]), 4.0, 12.0)
    assert rate >= 0.9 * 100e6, rate
    f = s["flows"][0]
    assert f["ecn_marks"] > 100 and f["drops"] == 0
    assert f["feedback"]["cc"] == "udp_prague"
    assert f["feedback"]["packets_ce"] == f["ecn_marks"]
    l4s = bottleneck(s)["classes"][0]
    assert l4s["qdisc"] == "L4S" and l4s["sojourn_p99_s"] <= 0.002, l4s


def test_beside_tcp_prague_the_two_share_dualpi2() -> None:
    """UDP Prague and TCP Prague (both ECT(1), both cutting by alpha/2 on CE once per RTT) in
    the L queue at 100 Mbit/s, 28 ms (above both's 25 ms reference RTT, so neither scales
    its growth): they see the same CE fraction, so each gets within a factor 1.5 of the
    other. The factor allows for their different additive increases: TCP Prague adds one
    segment per RTT, UDP Prague one packet per vRTT and, after some vRTTs without a cut,
    1 ms of its rate per vRTT (measured: 54 / 43 Mbit/s)."""
    (udp, tcp), _ = rates_between(
        dumbbell([BULK, {"kind": "tcp", "cca": "prague"}], duration="20s"), 8.0, 20.0
    )
    assert udp + tcp >= 0.9 * 100e6, (udp, tcp)
    assert 1 / 1.5 <= udp / tcp <= 1.5, (udp, tcp)


def test_through_a_fifo_without_ecn_it_backs_off_on_loss() -> None:
    """Not-ECT through a 200-packet tail-drop FIFO (1.7 BDP) at 50 Mbit/s: UDP Prague halves
    its window on each loss episode, so it loses a few packets every few seconds, the FIFO
    drains between episodes and the link stays busy; a sender that ignores loss, at 1.2
    times the link, keeps the FIFO full and loses a sixth of its packets."""
    fifo = {"kind": "fifo", "limit": "200p"}
    prague = {**BULK, "ecn": "not_ect"}
    sc = dumbbell([prague], rate="50Mbps", qdisc=fifo, duration="20s")
    (rate,), s = rates_between(sc, 4.0, 20.0)
    fb, q = s["flows"][0]["feedback"], bottleneck(s)
    assert rate >= 0.9 * 50e6, rate
    assert 0 < fb["packets_lost"] == q["drops"] <= 0.001 * fb["packets_acked"], (fb, q)
    assert q["backlog_mean_pkts"] < 0.7 * 200, q
    blind = {"kind": "udp", "rate": "60Mbps", "ecn": "not_ect"}
    q_blind = bottleneck(l4sim.run(dumbbell([blind], rate="50Mbps", qdisc=fifo)).summary)
    assert q_blind["backlog_mean_pkts"] > 0.95 * 200, q_blind
    assert q_blind["drops"] > 100 * q["drops"], q_blind


def test_it_recovers_after_a_capacity_drop() -> None:
    """DualPI2 at 100 → 20 → 100 Mbit/s (steps at 5 s and 8 s): UDP Prague follows the drop
    and, after the capacity returns, fills it again within 2 s."""
    sc = dumbbell(
        [BULK],
        schedule=[
            {"at": "0s", "rate": "100Mbps"},
            {"at": "5s", "rate": "20Mbps"},
            {"at": "8s", "rate": "100Mbps"},
        ],
    )
    sim = l4sim.Simulation(sc)
    marks = {}
    for t in (6, 8, 10, 12):
        sim.run_until(f"{t}s")
        marks[t] = sim.summary()["flows"][0]["bytes_acked"]
    low = (marks[8] - marks[6]) * 8 / 2
    back = (marks[12] - marks[10]) * 8 / 2
    assert 0.85 * 20e6 <= low <= 20e6 * 1.001, low
    assert back >= 0.9 * 100e6, back


def test_frame_mode_sets_the_video_target_and_paces_each_frame_over_its_budget() -> None:
    """A 60 frame/s video under UDP Prague through DualPI2 at 20 Mbit/s: the encoder's
    target is one frame budget (10 ms) of the rate per 16.7 ms frame interval, so frames use
    at most about 60 % of the link; each frame leaves in about the budget and arrives within
    the deadline."""
    video = {
        "kind": "udp",
        "rate": "1Mbps",
        "packet_size": "1200B",
        "source": {"kind": "video", "fps": 60, "noise": 0},
        "cc": {"kind": "udp_prague", "frame_budget": "10ms"},
    }
    s = l4sim.run(dumbbell([video], duration="10s", rate="20Mbps")).summary
    fr = s["flows"][0]["frames"]
    assert 0.3 * 20e6 <= fr["delivered_rate_bps"] <= 0.65 * 20e6, fr
    assert fr["complete"] >= 0.98 * fr["produced"] and fr["late"] == 0, fr
    # 14 ms of propagation, about 10 ms of pacing, a little queue.
    assert 0.014 <= fr["delay_p50_s"] <= 0.030, fr


def test_the_same_seed_gives_the_same_bytes() -> None:
    sc = dumbbell([BULK, {"kind": "tcp", "cca": "prague"}], duration="3s")
    a, b = l4sim.run(sc).summary, l4sim.run(sc).summary
    a.pop("wall_time_s", None)
    b.pop("wall_time_s", None)
    assert a == b


def test_udp_prague_defaults_to_ect1_and_its_own_acks() -> None:
    sc = dumbbell([BULK], duration="1s")
    flow = sc.flows[0]
    assert flow.ecn == "ect1" and flow.feedback is not None and flow.feedback.kind == "prague"
    udp = sc.to_core_config()["flows"][0]["udp"]
    assert udp["cc"] == {"kind": "udp_prague"} and udp["feedback"] == {"kind": "prague"}
    knobs = dumbbell(
        [{**BULK, "cc": {"kind": "udp_prague", "max_rate": "10Mbps", "init_window": 4}}]
    )
    cc = knobs.to_core_config()["flows"][0]["udp"]["cc"]
    assert cc == {"kind": "udp_prague", "max_rate_bps": 10_000_000, "init_window_pkts": 4}


@pytest.mark.parametrize(
    ("flow", "fragment"),
    [
        ('rate = "1Mbps"\ncc = "udp_prague"\necn = "ect0"', "not ect0"),
        ('rate = "1Mbps"\nfeedback = "prague"', "needs cc"),
        ('cc = "udp_prague"\nsource = { kind = "periodic", interval = "1s" }', "not a periodic"),
        ('rate = "1Mbps"\ncc = { kind = "udp_prague", min_rate = "2Mbps" }', "min_rate"),
    ],
)
def test_bad_udp_prague_input_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flow: str, fragment: str
) -> None:
    one_sentence(tmp_path, capsys, flow, fragment)


def test_the_example_scenario_runs() -> None:
    flows = l4sim.run(EXAMPLE.with_overrides(duration="11s")).summary["flows"]
    assert [f.get("feedback", {}).get("cc") for f in flows] == ["udp_prague", "udp_prague", None]
    assert flows[1]["frames"]["complete"] > 500 and flows[2]["bytes_acked"] > 0
