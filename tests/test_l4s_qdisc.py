"""The L4S queue disciplines through the public API: DualPI2 (RFC 9332, Linux
``sch_dualpi2``) and FQ-L4S (FreeBSD ``dn_sched_l4s`` of paper 004).

Flows: UDP constant-bit-rate with a chosen ECN codepoint (``ect1`` → L queue,
``not_ect``/``ect0`` → Classic queue) and the TCPs available (NewReno/CUBIC with
``ecn = true`` send ECT(0), i.e. Classic). Numbers measured when these tests were written
are noted beside each assertion.
"""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

pytest.importorskip("l4sim._core")

import l4sim


def dumbbell(
    qdisc: Any,
    flows: list[dict[str, Any]],
    *,
    rate: str = "10Mbps",
    delay: str = "20ms",
    duration: str = "30s",
    seed: int = 1,
) -> l4sim.Scenario:
    """Dumbbell with 1 Gbps / 1 ms access links; the qdisc on the bottleneck r0 -> r1."""
    return l4sim.Scenario.parse(
        {
            "name": "l4s",
            "seed": seed,
            "duration": duration,
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "1ms"},
                "bottleneck": {"rate": rate, "delay": delay, "qdisc": qdisc},
            },
            "flows": flows,
        }
    )


def run(sc: l4sim.Scenario) -> dict[str, Any]:
    sim = l4sim.Simulation(sc)
    sim.run()
    return sim.summary()


def run_sim(sc: l4sim.Scenario) -> l4sim.Simulation:
    sim = l4sim.Simulation(sc)
    sim.run()
    return sim


def bottleneck(summary: dict[str, Any]) -> dict[str, Any]:
    return next(q for q in summary["queues"] if q["link"] == "r0->r1")


def classes(q: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per-class entries by name (the class name is in the entry's ``qdisc`` key)."""
    assert [c["qdisc"] for c in q["classes"]] == ["L4S", "Classic"]
    return {c["qdisc"]: c for c in q["classes"]}


def udp(rate: str, ecn: str) -> dict[str, Any]:
    return {"kind": "udp", "rate": rate, "ecn": ecn, "packet_size": "1500B"}


def ms(x: float | None) -> float:
    assert x is not None
    return x * 1e3


def assert_class_counters_add_up(q: dict[str, Any]) -> None:
    cl = q["classes"]
    assert sum(c["drops"] for c in cl) == q["drops"]
    assert sum(c["ecn_marks"] for c in cl) == q["ecn_marks"]
    assert sum(c["packets"] for c in cl) == q["packets"]


# --------------------------------------------------------------------------------------------
# Scenario layer.


def test_parameters_reach_the_core_in_core_units() -> None:
    sc = dumbbell(
        {
            "kind": "dualpi2",
            "target": "20ms",
            "tupdate": "10ms",
            "alpha": 0.3,
            "coupling": 1.5,
            "step_thresh": "2ms",
            "c_protection": 25,
            "ecn_mask": "any_ect",
            "limit": "500p",
        },
        [udp("1Mbps", "ect1")],
        duration="1s",
    )
    assert sc.to_core_config()["links"][0]["qdisc_ab"] == {
        "kind": "dualpi2",
        "limit_pkts": 500,
        "target_ns": 20_000_000,
        "tupdate_ns": 10_000_000,
        "alpha": 0.3,
        "coupling": 1.5,
        "c_protection": 25,
        "ecn_mask": "any_ect",
        "step_thresh_ns": 2_000_000,
    }
    pk = dumbbell({"kind": "dualpi2", "step_thresh": "5p", "variant": "rfc9332"}, [])
    core = pk.to_core_config()["links"][0]["qdisc_ab"]
    assert core == {"kind": "dualpi2", "variant": "rfc9332", "step_thresh_pkts": 5}
    fq = dumbbell({"kind": "fq_l4s", "pairs": 4, "coupling": 3}, [])
    core = fq.to_core_config()["links"][0]["qdisc_ab"]
    assert core == {"kind": "fq_l4s", "pairs": 4, "coupling": 3.0}
    for kind in ("dualpi2", "fq_l4s"):
        again = dumbbell(kind, [])
        assert again.to_core_config()["links"][0]["qdisc_ab"] == {"kind": kind}


@pytest.mark.parametrize(
    ("qdisc", "fragment"),
    [
        ({"kind": "dualpi2", "step_thresh": "3KB"}, "step_thresh must be a time"),
        ({"kind": "dualpi2", "c_protection": 120}, "must be at most 100"),
        ({"kind": "dualpi2", "variant": "bsd"}, "'linux' or 'rfc9332'"),
        ({"kind": "fq_l4s", "coupling": 0}, "greater than 0"),
    ],
)
def test_bad_input_is_one_clear_sentence(qdisc: dict[str, Any], fragment: str) -> None:
    with pytest.raises(l4sim.ScenarioError) as e:
        dumbbell(qdisc, [], duration="1s")
    msg = str(e.value)
    assert fragment in msg, msg
    assert "\n" not in msg


# --------------------------------------------------------------------------------------------
# DualPI2 with Classic traffic only: the PI2 controller holds the 15 ms target.


def test_classic_newreno_alone_is_held_near_the_target() -> None:
    s = run(dumbbell("dualpi2", [{"kind": "tcp", "cca": "newreno"}], duration="60s"))
    q = bottleneck(s)
    c = classes(q)
    assert c["L4S"]["packets"] == 0
    # One NewReno flow: each halving empties the queue and p' sits at 0 for a while (the
    # clamp biases the mean below target). Measured 10.5 ms, utilisation 0.928.
    assert 10.0 <= ms(c["Classic"]["sojourn_mean_s"]) <= 20.0
    assert q["utilization"] >= 0.9
    assert c["Classic"]["drops"] > 0
    assert_class_counters_add_up(q)


def test_classic_newreno_flows_are_held_at_the_target() -> None:
    flows = [{"kind": "tcp", "cca": "newreno", "count": 4}]
    q = bottleneck(run(dumbbell("dualpi2", flows, duration="60s")))
    c = classes(q)["Classic"]
    # Measured: mean 15.9 ms, median 14.7 ms, utilisation 0.987.
    assert 10.0 <= ms(c["sojourn_mean_s"]) <= 20.0
    assert 10.0 <= ms(c["sojourn_p50_s"]) <= 20.0
    assert q["utilization"] >= 0.95


def test_ecn_classic_traffic_is_marked_not_dropped_in_steady_state() -> None:
    flows = [{"kind": "tcp", "cca": "cubic", "ecn": True, "count": 4}]
    q = bottleneck(run(dumbbell("dualpi2", flows, duration="60s")))
    c = classes(q)
    # ECT(0) goes to the Classic queue (not L) and is marked with p'².
    assert c["L4S"]["packets"] == 0
    assert c["Classic"]["ecn_marks"] > 5 * c["Classic"]["drops"]
    assert 10.0 <= ms(c["Classic"]["sojourn_mean_s"]) <= 20.0


# --------------------------------------------------------------------------------------------
# DualPI2 with L4S (ECT(1)) traffic.


def test_l4s_udp_below_capacity_sees_no_queue_and_no_marks() -> None:
    q = bottleneck(run(dumbbell("dualpi2", [udp("5Mbps", "ect1")])))
    c = classes(q)
    assert c["L4S"]["packets"] > 10_000
    assert c["Classic"]["packets"] == 0
    assert q["ecn_marks"] == 0 and q["drops"] == 0
    assert ms(c["L4S"]["sojourn_p99_s"]) < 1.0


def test_unresponsive_l4s_overload_is_step_marked_and_held_by_overload_drops() -> None:
    # 12 Mbps of ECT(1) UDP into 10 Mbps: every packet queued over 1 ms is step-marked;
    # the L delay drives p' (max of both queues) into overload (k*p' > 1), where L packets
    # are dropped with p'², which holds the L queue near the PI target.
    q = bottleneck(run(dumbbell("dualpi2", [udp("12Mbps", "ect1")])))
    l4s = classes(q)["L4S"]
    # Measured: 25 000 sent on, 24 994 marked, 4 978 AQM drops, mean 16.9 ms.
    assert l4s["ecn_marks"] >= 0.99 * l4s["packets"]
    assert l4s["drops"] > 0.1 * l4s["packets"]
    assert 10.0 <= ms(l4s["sojourn_mean_s"]) <= 25.0
    assert q["utilization"] > 0.99
    assert_class_counters_add_up(q)


def test_l4s_udp_beside_cubic_gets_low_latency_and_classic_keeps_the_target() -> None:
    flows = [udp("4Mbps", "ect1"), {"kind": "tcp", "cca": "cubic", "ecn": True}]
    s = run(dumbbell("dualpi2", flows, duration="30s"))
    q = bottleneck(s)
    c = classes(q)
    # Measured: L mean 0.73 ms, p99 2.3 ms; Classic mean 15.2 ms; utilisation 0.979.
    assert ms(c["L4S"]["sojourn_mean_s"]) < 1.0
    assert ms(c["L4S"]["sojourn_p99_s"]) < 3.0
    assert 10.0 <= ms(c["Classic"]["sojourn_mean_s"]) <= 20.0
    assert c["L4S"]["ecn_marks"] > 0
    assert c["L4S"]["drops"] < 0.005 * c["L4S"]["packets"]
    assert q["utilization"] >= 0.95
    assert_class_counters_add_up(q)


def test_classic_protection_under_l_overload() -> None:
    # An unresponsive ECT(1) flow at the link rate cannot take the Classic flow's WRR share
    # away as scheduling; what the Classic flow loses is through the coupled drops.
    flows = [udp("10Mbps", "ect1"), udp("2Mbps", "not_ect")]
    q = bottleneck(run(dumbbell({"kind": "dualpi2", "c_protection": 30}, flows)))
    c = classes(q)
    assert c["Classic"]["utilization"] > 0.05
    assert c["L4S"]["utilization"] > 0.6
    assert_class_counters_add_up(q)


def test_rfc9332_variant_runs_and_ramps_l_marks() -> None:
    flows = [udp("4Mbps", "ect1"), {"kind": "tcp", "cca": "cubic", "ecn": True}]
    q = bottleneck(run(dumbbell({"kind": "dualpi2", "variant": "rfc9332"}, flows)))
    c = classes(q)
    # Measured: L mean 1.16 ms, median 0.66 ms; Classic mean 14.3 ms.
    assert ms(c["L4S"]["sojourn_p50_s"]) < 1.0
    assert 10.0 <= ms(c["Classic"]["sojourn_mean_s"]) <= 20.0
    assert c["L4S"]["ecn_marks"] > 0


# --------------------------------------------------------------------------------------------
# FQ-L4S (paper 004).


def test_fq_l4s_separates_l4s_from_classic() -> None:
    flows = [udp("4Mbps", "ect1"), {"kind": "tcp", "cca": "cubic", "ecn": True}]
    q = bottleneck(run(dumbbell("fq_l4s", flows)))
    assert q["qdisc"] == "fq_l4s"
    c = classes(q)
    # An L packet (4 Mbit/s CBR, below its fair share: its queue stays near empty) waits at
    # most for the Classic packet on the wire and one Classic packet its DRR round serves
    # first: 2 x 1514 B at 10 Mbit/s = 2.4 ms. Classic sits near PIE's 15 ms target.
    assert ms(c["L4S"]["sojourn_p99_s"]) <= 2.5
    assert c["L4S"]["drops"] == 0
    assert 10.0 <= ms(c["Classic"]["sojourn_p50_s"]) <= 20.0
    assert q["utilization"] >= 0.9
    assert_class_counters_add_up(q)


# --------------------------------------------------------------------------------------------
# TCP Prague (scalable, ECT(1)) beside CUBIC: the L4S promise.


def prague_cubic(seed: int = 1) -> l4sim.Simulation:
    """One Prague and one CUBIC flow over DualPI2, 100 Mbps, 20 ms base RTT, 60 s."""
    flows = [{"kind": "tcp", "cca": "prague"}, {"kind": "tcp", "cca": "cubic"}]
    # Dumbbell base RTT = 2 x (8 + 1 + 1) ms = 20 ms.
    sc = dumbbell("dualpi2", flows, rate="100Mbps", delay="8ms", duration="60s")
    return run_sim(sc.with_overrides(seed=seed))


@pytest.fixture(scope="module")
def prague_cubic_1() -> l4sim.Simulation:
    return prague_cubic(1)


def test_prague_beside_cubic_through_dualpi2(prague_cubic_1: l4sim.Simulation) -> None:
    sim = prague_cubic_1
    s = sim.summary()
    q = bottleneck(s)
    c = classes(q)
    # Measured: L p50 0.08 ms, p99 0.23 ms; Classic mean 13.5 ms; utilisation 0.999 (the L4S
    # team reports median 0.1-0.3 ms and p99 under 2 ms).
    assert ms(c["L4S"]["sojourn_p50_s"]) <= 0.5
    assert ms(c["L4S"]["sojourn_p99_s"]) <= 2.0
    assert 10.0 <= ms(c["Classic"]["sojourn_mean_s"]) <= 20.0
    assert q["utilization"] >= 0.95
    # No L4S packet dropped once both flows run: when both slow starts coincide, p' can pass
    # 1/k and Linux's `drop_overload` then drops L packets with p'^2 (some seeds: ~30).
    series = sim.queues()
    l4s = series.filter((pl.col("link") == "r0->r1") & (pl.col("class") == "L4S"))
    after_start = l4s.filter(pl.col("time_s") >= 5.0)["drops"]
    assert after_start[-1] == after_start[0], "no L4S drop in steady state"


# The Prague/CUBIC rate ratio is checked against a Linux L4S testbed in test_l4s_testbed.py
# (here, at 100 Mbit/s and 20 ms, it is 1.8-2.3 over seeds 1-5; the testbed measured 2.05 and
# 2.17 at 50 Mbit/s and 20 ms).


def test_dctcp_alone_in_the_l_queue_sits_at_the_step() -> None:
    # DCTCP with ECT(1) is classified into the L queue, whose 1 ms step marks it: the queue
    # stays around the step at full rate (RFC 9332 §2.5.1.3; RFC 8257 §3.1's K).
    flows = [{"kind": "tcp", "cca": "dctcp", "ect1": True}]
    sim = run_sim(dumbbell("dualpi2", flows, rate="100Mbps", delay="8ms", duration="30s"))
    q = bottleneck(sim.summary())
    c = classes(q)
    assert c["L4S"]["packets"] > 0.99 * q["packets"]
    steady = sim.queues().filter(
        (pl.col("link") == "r0->r1") & (pl.col("class") == "") & (pl.col("time_s") > 5.0)
    )
    assert steady["utilization"].mean() >= 0.95
    assert c["L4S"]["drops"] == 0 and c["L4S"]["ecn_marks"] > 0
    assert 0.3 <= ms(c["L4S"]["sojourn_mean_s"]) <= 1.5
    assert ms(c["L4S"]["sojourn_p99_s"]) <= 3.0
