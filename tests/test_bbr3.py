"""BBRv3 end to end (``cca = "bbr3"``): alone on a 100 Mbit/s dumbbell, under random loss
either side of its 2 % threshold, with ECN through DualPI2's L4S queue, seeds, bad input.

The expectations come from draft-ietf-ccwg-bbr and google/bbr's ``v3`` ``tcp_bbr.c``, not
from what the code printed: ProbeBW probes every min(63, BDP) rounds or 2-3 s, whichever
comes first, and after leaving ProbeRTT (every 5 s) the cycle starts over; a probe that
loses more than 2 % cuts inflight_hi; CE marks shrink inflight_lo while min_rtt ≤ 5 ms.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import polars as pl
import pytest

pytest.importorskip("l4sim._core")

from tests.cli_run import run_l4sim

import l4sim

WIRE = 1500  # MSS 1448 + 52 B of headers


def dumbbell(
    cca: Any,
    *,
    rate: str,
    delay: str,
    qdisc: dict[str, Any],
    duration: str,
    access_delay: str = "1ms",
    loss: float = 0.0,
    seed: int = 1,
    **flow: Any,
) -> l4sim.Scenario:
    """One TCP flow over ``rate`` / ``delay`` (RTT = 2 · (2 · access_delay + delay)),
    1 Gbit/s access links, sampled every 10 ms."""
    bottleneck: dict[str, Any] = {"rate": rate, "delay": delay, "qdisc": qdisc}
    if loss:
        bottleneck["loss"] = loss
    return l4sim.Scenario.parse(
        {
            "name": "bbr3",
            "seed": seed,
            "duration": duration,
            "sample_interval": "10ms",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": access_delay},
                "bottleneck": bottleneck,
            },
            "flows": [{"kind": "tcp", "cca": cca, **flow}],
        }
    )


def run(scenario: l4sim.Scenario) -> l4sim.Simulation:
    sim = l4sim.Simulation(scenario)
    sim.run()
    return sim


def bottleneck(summary: dict[str, Any]) -> dict[str, Any]:
    return next(q for q in summary["queues"] if q["link"] == "r0->r1")


def run_starts(rows: list[tuple[float, float]], above: float, gap: float) -> list[float]:
    """Start times of the runs of samples with value > ``above`` (runs closer than
    ``gap`` s are one)."""
    starts: list[float] = []
    last = -1e9
    for t, v in rows:
        if v > above:
            if t - last > gap:
                starts.append(t)
            last = t
    return starts


# 100 Mbit/s, RTT 2 · (1 + 8 + 1) ms = 20 ms: BDP ≈ 167 packets; FIFO of 2 BDP.
BDP_100M = 100e6 * 0.020 / 8 / WIRE


@pytest.fixture(scope="module")
def alone() -> l4sim.Simulation:
    return run(
        dumbbell(
            "bbr3",
            rate="100Mbps",
            delay="8ms",
            qdisc={"kind": "fifo", "limit": f"{round(2 * BDP_100M)}p"},
            duration="12s",
        )
    )


def test_bbr3_alone_fills_the_link(alone: l4sim.Simulation) -> None:
    s = alone.summary()
    flow = s["flows"][0]
    assert flow["cca"] == "bbr3"
    assert flow["timeouts"] == 0
    # Startup takes ~0.3 s of the 12; ProbeRTT (0.5 BDP for 200 ms every 5 s) and
    # DOWN's 0.91 a little more: ≥ 95 % over the whole run.
    q = bottleneck(s)
    assert q["utilization"] >= 0.95, q["utilization"]
    # The 2-BDP buffer never overflows: Startup's cwnd gain 2 and UP's 2.25 fit.
    assert q["drops"] == 0
    assert flow["goodput_bps"] >= 0.93 * 100e6 * 1448 / WIRE


def test_bbr3_probes_every_63_rounds_before_the_wall_clock(alone: l4sim.Simulation) -> None:
    """draft-ietf-ccwg-bbr: the next probe after min(63, BDP) rounds (62-63, randomised) or
    2-3 s, whichever comes first; at 20 ms the rounds win (~1.3 s), and each UP shows as a
    queue. ProbeRTT (cwnd ≤ 0.5 BDP) restarts the cycle, so a gap spanning one is longer."""
    q = alone.queues().filter(pl.col("link") == "r0->r1")
    ups = run_starts(q.select("time_s", "backlog_pkts").rows(), 0.25 * BDP_100M, 0.1)
    f = alone.flows().filter(pl.col("time_s") >= 1.0)
    probe_rtts = run_starts(
        [(t, -c) for t, c in f.select("time_s", "cwnd_pkts").rows()], -0.6 * BDP_100M, 0.1
    )
    assert 1 <= len(probe_rtts) <= 3, probe_rtts
    plain = []
    for a, b in itertools.pairwise(ups[1:]):  # ups[0] is Startup's queue
        if any(a < t < b for t in probe_rtts):
            # Cycle restarted on leaving ProbeRTT: still at most 63 rounds after it.
            assert b - a <= 2.6, (ups, probe_rtts)
        else:
            plain.append(b - a)
    assert len(plain) >= 4, (ups, probe_rtts)
    for gap in plain:
        # 62-63 rounds of ≥ 20 ms, plus REFILL (a round) and UP/DOWN (a few): well before
        # the 2 s the wall clock would wait.
        assert 62 * 0.020 <= gap <= 1.8, (plain, ups)


def loss_run(loss: float) -> l4sim.Simulation:
    # 20 Mbit/s, 40 ms RTT: BDP ≈ 67 packets; a 3-BDP FIFO, so losses are the link's.
    return run(
        dumbbell(
            "bbr3",
            rate="20Mbps",
            delay="18ms",
            qdisc={"kind": "fifo", "limit": "200p"},
            duration="30s",
            loss=loss,
        )
    )


def test_random_loss_above_two_percent_stops_bw_probing_below_it_does_not() -> None:
    """`bbr_is_inflight_too_high`: a probe losing more than `bbr_loss_thresh` (2 %) of
    what it had in flight cuts inflight_hi to where 2 % was crossed (and 0.7 x the target
    at least); below 2 % inflight_hi stands and the flow keeps ~its BDP in flight."""
    bdp = 20e6 * 0.040 / 8 / WIRE
    below, above = loss_run(0.01), loss_run(0.03)
    cw_below = below.flows().filter(pl.col("time_s") > 5)["cwnd_pkts"]
    cw_above = above.flows().filter(pl.col("time_s") > 5)["cwnd_pkts"]
    gp_below = below.summary()["flows"][0]["goodput_bps"]
    gp_above = above.summary()["flows"][0]["goodput_bps"]
    # 1 %: probing still lifts the window past the BDP, and the link stays mostly used.
    assert cw_below.mean() >= 0.9 * bdp, cw_below.mean()
    assert cw_below.quantile(0.9) >= 1.3 * bdp, cw_below.quantile(0.9)
    assert gp_below >= 0.75 * 20e6 * 1448 / WIRE, gp_below
    # 3 %: every probe is "too high"; the window stays well under the BDP.
    assert cw_above.mean() <= 0.7 * cw_below.mean(), (cw_above.mean(), cw_below.mean())
    assert cw_above.quantile(0.9) <= 0.6 * cw_below.quantile(0.9)
    assert gp_above <= 0.75 * gp_below, (gp_above, gp_below)


def ecn_run(**cca: Any) -> dict[str, Any]:
    # 100 Mbit/s, RTT 2 · (0.25 + 0.5 + 0.25) ms = 2 ms, DualPI2 (its L queue marks above
    # 1 ms); ECT(1) data goes to the L queue.
    s = dumbbell(
        {"kind": "bbr3", "ecn_low": True, **cca},
        rate="100Mbps",
        delay="0.5ms",
        access_delay="0.25ms",
        qdisc={"kind": "dualpi2"},
        duration="10s",
        ect1=True,
    )
    assert s.flows[0].ecn_mode() == "ecn"
    return run(s).summary()


def test_ce_marks_bound_bbr3_in_the_l4s_queue_only_below_ecn_max_rtt() -> None:
    """`bbr_update_ecn_alpha`: on an `ecn_low` path with min_rtt (2 ms) ≤ `ecn_max_rtt_us`
    (5 ms) each round with CE cuts inflight_lo by alpha/3, keeping the L queue shallow;
    with `ecn_max_rtt_us` below the path's min_rtt the same marks are ignored and only
    the cwnd gain of 2 bounds the queue."""
    used, ignored = ecn_run(), ecn_run(ecn_max_rtt_us=1000)
    for s in (used, ignored):
        q = bottleneck(s)
        l4s = next(c for c in q["classes"] if c["qdisc"] == "L4S")
        assert l4s["packets"] >= 0.99 * q["packets"]  # the data is in the L queue
        assert q["utilization"] >= 0.95
    lq_used = next(c for c in bottleneck(used)["classes"] if c["qdisc"] == "L4S")
    lq_ign = next(c for c in bottleneck(ignored)["classes"] if c["qdisc"] == "L4S")
    assert lq_used["sojourn_mean_s"] <= 0.6 * lq_ign["sojourn_mean_s"], (lq_used, lq_ign)
    assert lq_used["sojourn_p99_s"] <= 0.6 * lq_ign["sojourn_p99_s"], (lq_used, lq_ign)
    marked_used = lq_used["ecn_marks"] / lq_used["packets"]
    marked_ign = lq_ign["ecn_marks"] / lq_ign["packets"]
    assert marked_used <= 0.5 * marked_ign, (marked_used, marked_ign)


def test_same_seed_same_run() -> None:
    def once(seed: int) -> pl.DataFrame:
        return run(
            dumbbell(
                "bbr3",
                rate="20Mbps",
                delay="18ms",
                qdisc={"kind": "fifo", "limit": "100p"},
                duration="8s",
                loss=0.005,
                seed=seed,
            )
        ).flows()

    assert once(3).equals(once(3))
    assert not once(3).equals(once(4))


def test_an_invalid_option_is_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'duration = "1s"\n'
        "[topology]\n"
        'preset = "dumbbell"\n'
        '[topology.bottleneck]\nrate = "10Mbps"\ndelay = "10ms"\n'
        "[[flows]]\n"
        'kind = "tcp"\n'
        'cca = { kind = "bbr3", loss_thresh = 1.5 }\n'
    )
    proc = run_l4sim("run", str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "loss_thresh" in lines[0] and "Traceback" not in proc.stderr
