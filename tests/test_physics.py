"""Behaviour of the simulator against physics and the RFCs (issue: simulation core).

Tolerances come from the models, not from what the code printed: the link's payload share
(1448 / 1500 B), the Mathis et al. square-root law, the CUBIC K of RFC 9438.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import polars as pl
import pytest

pytest.importorskip("l4sim._core")

import l4sim

MSS = 1448
WIRE = 1500  # MSS + 52 B of IP/TCP/timestamp headers


def dumbbell(
    *,
    rate: str = "10Mbps",
    delay: str = "18ms",
    limit: str = "100p",
    loss: float = 0.0,
    duration: str = "60s",
    flows: list[dict[str, Any]] | None = None,
    seed: int = 1,
    sample_interval: str = "100ms",
) -> l4sim.Scenario:
    """Dumbbell with 1 Gbps / 1 ms access links (base RTT = 2·(delay + 2 ms))."""
    return l4sim.Scenario.parse(
        {
            "name": "physics",
            "seed": seed,
            "duration": duration,
            "sample_interval": sample_interval,
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "1ms"},
                "bottleneck": {
                    "rate": rate,
                    "delay": delay,
                    "loss": loss,
                    "qdisc": {"kind": "fifo", "limit": limit},
                },
            },
            "flows": flows or [{"kind": "tcp", "cca": "newreno"}],
        }
    )


def bottleneck(summary: dict[str, Any]) -> dict[str, Any]:
    return next(q for q in summary["queues"] if q["link"] == "r0->r1")


def mixed() -> l4sim.Scenario:
    """Bulk, sized and UDP traffic through a small lossy buffer: every kind of fate."""
    return dumbbell(
        limit="20p",
        loss=0.002,
        duration="10s",
        flows=[
            {"kind": "tcp", "cca": "newreno"},
            {"kind": "tcp", "cca": "cubic", "start": "1s"},
            {"kind": "tcp", "cca": "newreno", "size": "300KB", "start": "2s"},
            {"kind": "udp", "rate": "2Mbps", "packet_size": "1000B", "start": "0.5s"},
        ],
    )


def test_conservation_at_every_point_of_a_run() -> None:
    sim = l4sim.Simulation(mixed())
    for t in ["0.3s", "1.7s", "4.2s", "10s"]:
        sim.run_until(t)
        c = sim.conservation()
        assert c["sent"] == c["delivered"] + c["dropped_qdisc"] + c["dropped_loss"] + c["in_flight"]
    assert c["dropped_qdisc"] > 0 and c["dropped_loss"] > 0, "the scenario exercises both drops"
    s = sim.summary()
    # Drops by reason, as the queues report them, add up to the global counters.
    assert sum(q["drops"] for q in s["queues"]) == c["dropped_qdisc"]
    assert sum(q["lost"] for q in s["queues"]) == c["dropped_loss"]
    assert sum(f["drops"] for f in s["flows"]) == c["dropped_qdisc"] + c["dropped_loss"]
    # The sized flow completed and reports its completion time.
    sized = s["flows"][2]
    assert sized["bytes_acked"] == 300_000 and sized["fct_s"] is not None


def test_same_seed_same_everything_other_seed_differs() -> None:
    a = l4sim.run(mixed()).summary
    b = l4sim.run(mixed()).summary
    for r in (a, b):
        r.pop("wall_time_s")
    assert a == b
    sa, sb = l4sim.Simulation(mixed()), l4sim.Simulation(mixed())
    sa.run()
    sb.run()
    assert sa.flows().equals(sb.flows()) and sa.queues().equals(sb.queues())
    other = l4sim.Simulation(mixed().with_overrides(seed=2))
    other.run()
    assert other.summary() != sa.summary(), "the loss pattern depends on the seed"


def test_fork_continues_identically_and_diverges_when_changed() -> None:
    sim = l4sim.Simulation(mixed())
    sim.run_until("4s")
    twin = sim.fork()
    changed = sim.fork()
    changed.set_queue_limit("r0->r1", packets=5)
    for s in (sim, twin, changed):
        s.run()
    assert sim.summary() == twin.summary()
    assert sim.flows().equals(twin.flows()) and sim.queues().equals(twin.queues())
    assert changed.summary() != sim.summary()
    assert bottleneck(changed.summary())["drops"] > bottleneck(sim.summary())["drops"]
    # The fork shares nothing with its parent: the parent's history before 4 s is intact.
    early = sim.flows().filter(pl.col("time_s") <= 4.0)
    assert early.equals(changed.flows().filter(pl.col("time_s") <= 4.0))


def test_newreno_fills_the_link_and_halves_on_each_loss() -> None:
    # 10 Mbps, 40 ms base RTT (2 x (18 + 1 + 1) ms), FIFO of one BDP: 10e6 · 0.04 / 8 / 1500.
    bdp = math.ceil(10e6 * 0.040 / 8 / WIRE)
    sim = l4sim.Simulation(dumbbell(limit=f"{bdp}p", sample_interval="10ms"))
    sim.run()
    s = sim.summary()
    assert bottleneck(s)["utilization"] >= 0.95
    # Goodput is the payload share of the link at most.
    assert s["flows"][0]["goodput_bps"] <= 10e6 * MSS / WIRE
    assert s["flows"][0]["timeouts"] == 0
    # Skip the first second: slow start overshoots and its losses take two recoveries.
    steady = sim.flows().filter(pl.col("time_s") >= 1.0)
    rows = steady.select("cwnd_pkts", "ssthresh_pkts", "ca_state").rows()
    # Each congestion event sets ssthresh to half the window it interrupted (RFC 5681 eq. 4;
    # Linux halves cwnd), and recovery (PRR, RFC 6937) ends with cwnd = ssthresh.
    peak, halvings, exits = 0, [], []
    for (_, _, state0), (cwnd, ss, state) in itertools.pairwise(rows):
        if state == "recovery" and state0 != "recovery":
            halvings.append((peak, int(ss)))
            peak = 0
        if state0 == "recovery" and state != "recovery":
            exits.append((cwnd, int(ss)))
        peak = max(peak, cwnd)
    assert len(halvings) >= 10, "a sawtooth: regular loss events over 60 s"
    for before, after in halvings:
        assert abs(after - before / 2) <= 1, (before, after)
    for cwnd, ss in exits:
        assert ss <= cwnd <= ss + 1, "recovery ends at ssthresh (+1 if an ACK grew it since)"
    # With a one-BDP buffer the window oscillates between about 1 and 2 BDP.
    assert all(1.6 * bdp <= b <= 2.2 * bdp for b, _ in halvings[1:])


@pytest.mark.parametrize("cca", ["newreno", "cubic"])
def test_delivery_rate_of_a_bulk_flow_is_its_goodput(cca: str) -> None:
    # 10 Mbps, 40 ms base RTT, FIFO of two BDPs: after slow start the link never idles, so
    # each per-ACK delivery-rate sample (as Linux's tcp_info reports it) is the link's
    # payload rate, and goodput over 60 s is that rate times the utilisation (slow start's
    # first RTTs are the only idle time). Samples are whole segments over ACK-clocked
    # intervals: allow 3 %.
    bdp = math.ceil(10e6 * 0.040 / 8 / WIRE)
    s = l4sim.run(dumbbell(limit=f"{2 * bdp}p", flows=[{"kind": "tcp", "cca": cca}])).summary
    f = s["flows"][0]
    payload = 10e6 * MSS / WIRE
    util = bottleneck(s)["utilization"]
    assert util >= 0.97
    assert f["goodput_bps"] == pytest.approx(payload * util, rel=0.03)
    for key in ("delivery_rate_bps", "delivery_rate_time_mean_bps", "delivery_rate_last_bps"):
        assert f[key] == pytest.approx(payload, rel=0.03), key
    assert f["delivery_rate_bps"] == pytest.approx(f["goodput_bps"], rel=0.05)


@pytest.mark.parametrize("p", [0.001, 0.01])
def test_newreno_under_random_loss_follows_mathis(p: float) -> None:
    # Link far faster than the Mathis rate and a buffer that never fills: loss is the only
    # signal. Mathis et al. (1997): rate = MSS / RTT · sqrt(3 / (2p)); Linux-style
    # per-segment ACK counting makes delayed ACKs irrelevant (b = 1).
    rtt = 0.040
    sc = dumbbell(rate="100Mbps", delay="18ms", limit="10000p", loss=p, duration="300s")
    # The loss model drops data and ACKs alike; ACK loss barely matters to a cumulative-ACK
    # sender, data loss is the p of the model.
    s = l4sim.run(sc).summary
    goodput = s["flows"][0]["goodput_bps"]
    mathis = MSS * 8 / rtt * math.sqrt(3 / (2 * p))
    assert abs(goodput / mathis - 1) <= 0.25, f"goodput {goodput:.0f} vs Mathis {mathis:.0f}"


def regain_time(series: pl.DataFrame, share: float = 0.95) -> tuple[float, int]:
    """After the first fast recovery: (seconds from its end until cwnd is back at ``share``
    of the window before it, that window); +inf if never.

    Timed from the end of recovery, because NewReno and CUBIC share the same loss recovery;
    the window growth law is what differs."""
    rows = series.select("time_s", "cwnd_pkts", "ca_state").rows()
    start = next(i for i, r in enumerate(rows) if r[2] == "recovery")
    peak = max(c for _, c, _ in rows[:start])
    end = next(i for i in range(start, len(rows)) if rows[i][2] == "open")
    t0 = rows[end][0]
    t1 = next((t for t, c, _ in rows[end:] if c >= share * peak), math.inf)
    return t1 - t0, peak


def test_cubic_regains_its_window_faster_than_newreno() -> None:
    # 100 Mbps, 100 ms base RTT, 170-packet buffer (BDP = 833 packets, so the first loss comes
    # at about 1000). Slow start overflows a buffer holding less than half the window, so it
    # ends early (initial ssthresh 300, a Linux route metric) and the first congestion
    # event is a single overflow in congestion avoidance. The receiver is RFC 5681's
    # (`quickack = false`): with Linux's SACK compression the SACKs of the ~50 segments
    # lost at the overflow come bunched, PRR's sends land in bursts on the still-full
    # buffer, ~30 segments sent during recovery are lost too and a second reduction follows
    # (the kernel on this dumbbell, which `l4sim emulate` runs without the ssthresh route
    # metric, also cut twice on the ACK that ended its first recovery: 941 -> 685 -> 479);
    # RFC 9438's regain time is that of one reduction.
    out = {}
    for cca, duration in (("cubic", "40s"), ("newreno", "150s")):
        sc = dumbbell(
            rate="100Mbps",
            delay="48ms",
            limit="170p",
            duration=duration,
            sample_interval="10ms",
            flows=[{"kind": "tcp", "cca": cca, "init_ssthresh": 300, "quickack": False}],
        )
        sim = l4sim.Simulation(sc)
        sim.run()
        assert sim.summary()["flows"][0]["timeouts"] == 0
        out[cca] = regain_time(sim.flows())
    regain_c, w_max_c = out["cubic"]
    regain_r, w_max_r = out["newreno"]
    bdp = 100e6 * 0.1 / 8 / WIRE
    # cwnd keeps growing for about one RTT between the overflow and its detection: NewReno
    # by one segment, CUBIC before its first loss by at least 5 % (Linux's cap on `cnt`,
    # on by default), plus a few segments of ACK timing for either.
    assert bdp + 170 <= w_max_r <= bdp + 170 + 40, "first loss when pipe and buffer are full"
    assert bdp + 170 <= w_max_c <= (bdp + 170) * 1.05 + 40, "CUBIC's first loss"
    # RFC 9438 §4.2: W_cubic(t) = C (t - K)^3 + W_max with K = cbrt(W_max (1 - beta) / C);
    # 95 % of W_max is reached at t = K - cbrt(0.05 W_max / C), less the one-RTT look-ahead
    # of the target (§4.4), within a few RTTs.
    k = (w_max_c * (1 - 0.7) / 0.4) ** (1 / 3)
    t95 = k - (0.05 * w_max_c / 0.4) ** (1 / 3)
    assert t95 - 0.5 <= regain_c <= t95 + 0.3, (regain_c, t95)
    # NewReno: one segment per RTT from W_max / 2, RTT between 100 and 120 ms.
    segments = 0.95 * w_max_r - w_max_r // 2
    assert 0.9 * segments * 0.100 <= regain_r <= 1.1 * segments * 0.120, (regain_r, segments)
    assert regain_r > 4 * regain_c


def _lossy_small_windows(rack: bool) -> dict[str, Any]:
    """Four CUBIC flows on 2 Mbit/s with 2 % random loss and a 20-packet FIFO: windows of a
    few segments, where three duplicate ACKs are often not there to be had. RFC 6298's RTO
    either way, so that only the loss detection differs."""
    sc = l4sim.Scenario.parse(
        {
            "duration": "60s",
            "seed": 3,
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "100Mbps", "delay": "5ms"},
                "bottleneck": {
                    "rate": "2Mbps",
                    "delay": "10ms",
                    "loss": 0.02,
                    "qdisc": {"kind": "fifo", "limit": "20p"},
                },
            },
            "flows": [
                {"kind": "tcp", "cca": "cubic", "count": 4, "rack": rack, "linux_rto": False}
            ],
        }
    )
    sim = l4sim.Simulation(sc)
    sim.run()
    return sim.summary()


def test_rack_tlp_repairs_small_window_losses_without_timeouts() -> None:
    # RFC 8985: RACK finds a loss once a later segment is delivered (a quarter RTT on), and
    # TLP probes a silent tail, so most of what RFC 6675 leaves to the RTO is repaired
    # earlier; the timeouts' go-back-N resends vanish with them. Same link, same share.
    old, new = _lossy_small_windows(False), _lossy_small_windows(True)

    def total(s: dict[str, Any], key: str) -> float:
        return sum(f[key] for f in s["flows"])

    assert total(new, "timeouts") < 0.5 * total(old, "timeouts"), (old, new)
    assert total(new, "retransmits") < total(old, "retransmits")
    assert total(new, "goodput_bps") == pytest.approx(total(old, "goodput_bps"), rel=0.1)


def _five_flows(cca: str, qdisc: dict[str, Any], rack: bool) -> list[float]:
    """Five flows of one algorithm through a 10 Mbit/s bottleneck, 20 ms RTT, 20 s:
    each flow's goodput in Mbit/s (the emulator's small-window cases)."""
    ecn = qdisc.get("ecn", False)
    sc = l4sim.Scenario.parse(
        {
            "duration": "20s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "1ms"},
                "bottleneck": {"rate": "10Mbps", "delay": "8ms", "qdisc": qdisc},
            },
            "flows": [{"kind": "tcp", "cca": cca, "count": 5, "ecn": ecn, "rack": rack}],
        }
    )
    return [f["goodput_bps"] / 1e6 for f in l4sim.run(sc).summary["flows"]]


@pytest.mark.parametrize(
    ("cca", "qdisc"),
    [
        ("newreno", {"kind": "pie"}),
        ("bbr", {"kind": "red", "limit": "100p", "min_th": "5p", "max_th": "15p", "ecn": True}),
    ],
)
def test_rack_keeps_every_flow_going_after_a_timeout(cca: str, qdisc: dict[str, Any]) -> None:
    # With RACK only the head and the segments whose time is up are marked lost at an RTO
    # (Linux tcp_timeout_mark_lost), so cwnd must be the flight + 1 (tcp_enter_loss) and
    # the head must leave whatever cwnd says (tcp_retransmit_timer): otherwise the sender
    # waits for an ACK that cannot come. Under RED with ECN, BBR's Not-ECT retransmissions
    # are dropped where its ECT data is only marked (p ~ 0.8 in RED's gentle region);
    # Linux's five flows got 6.2-9.0 Mbit/s in four emulator runs (2026-11-23 and -26),
    # the weakest flow of a run 0.19-0.83 Mbit/s, where l4sim with RFC 6675 collapsed to
    # 3.2. Bounds: the kernel's lowest figures less the emulator comparison's 20 % (on
    # other seeds one flow of five can still sit in RTO back-off with nothing in flight,
    # resending its head, Not-ECT, at each RTO).
    share = _five_flows(cca, qdisc, rack=True)
    assert min(share) > 0.8 * 0.19 and sum(share) > 0.8 * 6.2, share


def test_a_fixed_receive_window_caps_the_rate_at_window_per_rtt() -> None:
    # 10 Mbit/s, base RTT 2·(18 + 2) = 40 ms: BDP 50 kB. A fixed 16 KiB window (SO_RCVBUF)
    # holds 11 whole segments (15 928 B); with every segment ACKed at once each one's round
    # trip is 40 ms plus its own 1.2 ms at the bottleneck (and ~0.1 ms of access links and
    # ACK), so the rate is 15 928 B per 41.3 ms: 3.09 Mbit/s of payload, no queue, and the
    # sender is limited by the window all the time (tcpi_rwnd_limited ~ the run).
    # Autotuning (the default) grows the window past the BDP within a few RTTs: the link
    # is full, and the window limits only while the buffer is growing.
    def flow(extra: dict[str, Any]) -> dict[str, Any]:
        sc = dumbbell(
            duration="20s", flows=[{"kind": "tcp", "cca": "cubic", "delack": False, **extra}]
        )
        return l4sim.run(sc).summary["flows"][0]

    fixed = flow({"rwnd": "16KiB"})
    rtt = 0.040 + WIRE * 8 / 10e6 + 0.0001
    assert fixed["goodput_bps"] == pytest.approx(11 * MSS * 8 / rtt, rel=0.01)
    assert fixed["rwnd_limited_s"] > 0.95 * 20
    auto = flow({})
    assert auto["goodput_bps"] > 0.95 * 10e6 * MSS / WIRE
    assert auto["rwnd_limited_s"] < 0.5


def test_reno_beside_bbr_under_red_ecn_does_not_stall() -> None:
    # Reno's retransmission of a hole is Not-ECT (RFC 3168 §6.1.5) and RED above max_th
    # drops it while it marks ECT data. With a fixed 64 MiB window Reno ran megabytes
    # past the hole, its SACKed ECT data kept RED's average up, and both flows stalled
    # (0.26 / 0.11 Mbit/s). Linux's autotuned window (tcp_rcv_space_adjust) stops the
    # sender at the edge offered when the hole opened. Bounds: the kernel's figures
    # through the same qdisc (l4sim emulate, 0.70 / 8.60 Mbit/s) less the emulator
    # comparison's 20 %.
    sc = l4sim.Scenario.parse(
        {
            "duration": "20s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "1ms"},
                "bottleneck": {
                    "rate": "10Mbps",
                    "delay": "8ms",
                    "qdisc": {
                        "kind": "red",
                        "limit": "100p",
                        "min_th": "5p",
                        "max_th": "15p",
                        "ecn": True,
                    },
                },
            },
            "flows": [
                {"kind": "tcp", "cca": "newreno", "ecn": True},
                {"kind": "tcp", "cca": "bbr", "ecn": True},
            ],
        }
    )
    reno, bbr = (f["goodput_bps"] / 1e6 for f in l4sim.run(sc).summary["flows"])
    assert reno > 0.8 * 0.70 and bbr > 0.8 * 8.60, (reno, bbr)
