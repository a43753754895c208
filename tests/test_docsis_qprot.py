"""The DOCSIS 3.1 low-latency dual queue with Queue Protection (RFC 9957) through the
public API (``kind = "docsis_dualq"``): an unresponsive ECT(1) UDP flow at 1.5 times its
fair share beside two Prague flows, with Queue Protection on and off; determinism; NQB
flows; bad input. Numbers measured when these tests were written are noted beside each
assertion.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

pytest.importorskip("l4sim._core")

import l4sim

RATE_BPS = 50e6
#: Serialisation of one 1500-byte packet at 50 Mbit/s (240 us).
SER_S = 1500 * 8 / RATE_BPS


def scenario(
    qdisc: Any,
    *,
    seed: int = 1,
    udp_rate: str = "25Mbps",
    udp_ecn: str = "ect1",
    udp_nqb: bool = False,
) -> l4sim.Scenario:
    """Two Prague flows and, from 2 s, an unresponsive UDP flow (by default 25 Mbit/s of
    ECT(1): 1.5 x its fair share of 50/3 Mbit/s) over a 50 Mbit/s, 10 ms bottleneck
    running ``qdisc``."""
    udp: dict[str, Any] = {
        "kind": "udp",
        "rate": udp_rate,
        "ecn": udp_ecn,
        "packet_size": "1500B",
        "start": "2s",
    }
    if udp_nqb:
        udp["nqb"] = True
    return l4sim.Scenario.parse(
        {
            "name": "qprot",
            "seed": seed,
            "duration": "12s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "1ms"},
                "bottleneck": {"rate": "50Mbps", "delay": "10ms", "qdisc": qdisc},
            },
            "flows": [{"kind": "tcp", "cca": "prague", "count": 2}, udp],
        }
    )


def run(sc: l4sim.Scenario) -> dict[str, Any]:
    sim = l4sim.Simulation(sc)
    sim.run()
    return sim.summary()


@functools.cache
def summary(qprot: bool, udp_rate: str = "25Mbps") -> dict[str, Any]:
    return run(scenario({"kind": "docsis_dualq", "qprot": qprot}, udp_rate=udp_rate))


def classes(s: dict[str, Any]) -> dict[str, dict[str, Any]]:
    q = next(q for q in s["queues"] if q["link"] == "r0->r1")
    assert q["qdisc"] == "docsis_dualq"
    assert [c["qdisc"] for c in q["classes"]] == ["L4S", "Classic", "Sanctioned"]
    return {c["qdisc"]: c for c in q["classes"]}


def l_p99(s: dict[str, Any]) -> float:
    p99 = classes(s)["L4S"]["sojourn_p99_s"]
    assert p99 is not None
    return float(p99)


#: The L queue's delay bound with Queue Protection: 1 ms plus one packet's serialisation.
BOUND_S = 1e-3 + SER_S


def test_queue_protection_keeps_the_l_queue_within_1_ms_beside_a_1_5x_flow() -> None:
    on, off = summary(True), summary(False)
    # Sanctioned packets: measured 984 (the UDP flow's arrival, while the Prague flows
    # still hold their windows); none without Queue Protection.
    assert classes(on)["Sanctioned"]["packets"] > 100
    assert classes(off)["Sanctioned"]["packets"] == 0
    # L-queue sojourn p99: measured 1.006 ms with, 1.642 ms without (the L buffer even
    # overflows then: 27 drops, none with it).
    assert l_p99(on) <= BOUND_S, l_p99(on)
    assert classes(on)["L4S"]["drops"] == 0
    assert l_p99(off) > BOUND_S and classes(off)["L4S"]["drops"] > 0, classes(off)["L4S"]
    # Per flow (the summary's ``qprot_sanctioned``): the UDP flow takes most sanctions,
    # the Prague flows some while their windows still fill the L queue when it arrives
    # (measured: UDP 715, Prague 144 and 125).
    sanc = [f["qprot_sanctioned"] for f in on["flows"]]
    assert sanc[2] > sanc[0] + sanc[1], sanc
    assert sum(sanc) >= classes(on)["Sanctioned"]["packets"]
    assert [f["qprot_sanctioned"] for f in off["flows"]] == [0, 0, 0]
    # The UDP flow keeps its rate (Queue Protection guards delay, not throughput) and the
    # Prague flows the rest (measured 13.0 and 12.3 Mbit/s).
    flows = on["flows"]
    assert flows[2]["goodput_bps"] > 0.95 * 25e6
    assert min(f["goodput_bps"] for f in flows[:2]) > 0.2 * RATE_BPS


def test_without_queue_protection_a_larger_unresponsive_flow_builds_the_l_queue() -> None:
    # 40 Mbit/s of ECT(1) UDP: the harm of RFC 9957 §1 (measured p99 9.535 ms without,
    # 1.135 ms with Queue Protection, which sanctioned 1770 packets).
    on, off = summary(True, "40Mbps"), summary(False, "40Mbps")
    assert l_p99(off) > 5e-3, l_p99(off)
    assert l_p99(on) <= BOUND_S, l_p99(on)
    assert classes(on)["Sanctioned"]["packets"] > 1000


def test_same_seed_same_summary_and_nqb_flows_use_the_l_queue() -> None:
    q = {"kind": "docsis_dualq"}
    a = run(scenario(q, seed=7))
    b = run(scenario(q, seed=7))
    assert a == b
    # Only a path through a docsis_dualq reports sanctions.
    other = run(scenario({"kind": "dualpi2"}))
    assert all("qprot_sanctioned" not in f for f in other["flows"])
    # A Not-ECT flow marked NQB is classified into the L queue: Queue Protection then
    # sanctions it as it would an ECT(1) one.
    nqb = classes(run(scenario(q, udp_ecn="not_ect", udp_nqb=True)))
    # Without nqb the same Not-ECT flow is Classic from the start (the Prague flows'
    # slow start alone is sanctioned a little: measured 35 packets).
    plain = classes(run(scenario(q, udp_ecn="not_ect")))
    assert plain["Classic"]["packets"] > 10_000 > nqb["Classic"]["packets"]
    # NQB: measured 984 sanctioned, as the ECT(1) flow.
    assert nqb["Sanctioned"]["packets"] > 2 * plain["Sanctioned"]["packets"], (nqb, plain)


@pytest.mark.parametrize(
    ("qdisc", "words"),
    [
        ({"kind": "docsis_dualq", "sched_weight": 0}, "sched_weight"),
        ({"kind": "docsis_dualq", "bi_size": 12, "attempts": 3}, "at most 32"),
        ({"kind": "docsis_dualq", "lg_aging": 31}, "lg_aging"),
        ({"kind": "docsis_dualq", "sanction": "punish"}, "sanction"),
        ({"kind": "docsis_dualq", "critical_ql": "0s"}, "critical_ql"),
        ({"kind": "docsis_dualq", "qprot": "yes"}, "qprot"),
        ({"kind": "docsis_dualq", "no_such_key": 1}, "no_such_key"),
    ],
)
def test_bad_input_is_refused_in_one_sentence(qdisc: dict[str, Any], words: str) -> None:
    with pytest.raises(l4sim.ScenarioError) as e:
        scenario(qdisc)
    assert words in str(e.value)
