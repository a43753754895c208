"""The DOCSIS upstream link (``docsis`` on a link: request-grant with MAP intervals) through
the public API: a light stream's queueing delay against the MAP timing computed from first
principles; Queue Protection beside an unresponsive flow on that upstream, with and without
it; a link without ``docsis`` untouched; bad input. Numbers measured when these tests were
written are noted beside each assertion.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest

pytest.importorskip("l4sim._core")

import l4sim

MS = 1e-3


def scenario(
    flows: list[dict[str, Any]],
    *,
    docsis: dict[str, Any] | None,
    rate: str = "100Mbps",
    delay: str = "0.5ms",
    qdisc: dict[str, Any] | None = None,
) -> l4sim.Scenario:
    """A dumbbell whose bottleneck r0 -> r1 is the upstream (5 ms access links)."""
    bottleneck: dict[str, Any] = {"rate": rate, "delay": delay}
    if docsis is not None:
        bottleneck["docsis"] = docsis
    if qdisc is not None:
        bottleneck["qdisc"] = qdisc
    return l4sim.Scenario.parse(
        {
            "name": "docsis",
            "seed": 1,
            "duration": "12s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "5ms"},
                "bottleneck": bottleneck,
            },
            "flows": flows,
        }
    )


def run(sc: l4sim.Scenario) -> dict[str, Any]:
    sim = l4sim.Simulation(sc)
    sim.run()
    return sim.summary()


def upstream(s: dict[str, Any]) -> dict[str, Any]:
    return next(q for q in s["queues"] if q["link"] == "r0->r1")


#: A light stream: 250-byte packets 7.372 ms apart, a spacing whose phase in any MAP
#: interval of a few ms sweeps it evenly.
LIGHT = [{"kind": "udp", "rate": "271.3kbps", "packet_size": "250B"}]


@pytest.mark.parametrize(
    ("docsis", "interval_ms", "lead_ms"),
    [({}, 2.0, 1.0), ({"map_interval": "1ms", "map_lead": "0.6ms"}, 1.0, 0.6)],
)
def test_a_light_stream_waits_as_the_map_timing_implies(
    docsis: dict[str, Any], interval_ms: float, lead_ms: float
) -> None:
    # From first principles: a packet reaching the idle cable modem waits for the next
    # contention opportunity (uniform in (0, M]), its request takes the link's 1.5 ms to
    # the CMTS, which grants it in the first MAP built after that, M * ceil((1.5 + lead)
    # / M) after the request. The queueing delay is uniform in (D, D + M].
    m = interval_ms * MS
    d = m * math.ceil((1.5 + lead_ms) / interval_ms)
    q = upstream(run(scenario(LIGHT, docsis=docsis, delay="1.5ms")))
    assert q["packets"] > 1500
    # Measured: mean 5.000 / 3.500 ms, p50 4.997 / 3.498 ms, p99 5.980 / 3.990 ms; the
    # histogram's buckets hold a value within 0.4 %.
    assert q["sojourn_mean_s"] == pytest.approx(d + m / 2, abs=0.03 * m)
    assert q["sojourn_p50_s"] == pytest.approx(d + m / 2, abs=0.03 * m)
    assert q["sojourn_p99_s"] == pytest.approx(d + 0.99 * m, rel=0.006)
    assert q["sojourn_p99_s"] <= (d + m) * 1.004


def test_without_docsis_the_same_stream_never_waits() -> None:
    q = upstream(run(scenario(LIGHT, docsis=None, delay="1.5ms")))
    assert q["sojourn_p99_s"] == 0.0


PRAGUE = {"kind": "tcp", "cca": "prague", "count": 2}
#: 1.5 times the fair share of a 50 Mbit/s service flow shared by three flows.
BAD = {"kind": "udp", "rate": "25Mbps", "ecn": "ect1", "packet_size": "1500B", "start": "2s"}
#: The service flow's rate, and the L service flow's proactive grant: 5 Mbit/s (the
#: CableLabs ns-3 module's residential example), 1250 B every 2 ms interval. (PGS is the L
#: flow's alone and takes the aggregate's tokens: at the whole rate it would leave the
#: Classic flow, and the Prague flows' Not-ECT SYNs, nothing.)
SF = {"max_sustained_rate": "50Mbps", "pgs": "1250B"}


#: Three times the fair share: alone it fills the service flow.
BAD_3X = {**BAD, "rate": "50Mbps"}


@functools.cache
def qprot(on: bool, pgs: bool, bad: str = "1.5x") -> dict[str, Any]:
    docsis = SF if pgs else {"max_sustained_rate": "50Mbps"}
    flow = BAD if bad == "1.5x" else BAD_3X
    return run(scenario([PRAGUE, flow], docsis=docsis, qdisc={"kind": "docsis_dualq", "qprot": on}))


def l_queue(s: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in upstream(s)["classes"] if c["qdisc"] == "L4S")


def prague_bps(s: dict[str, Any]) -> float:
    return sum(f["goodput_bps"] for f in s["flows"][:2])


def test_queue_protection_on_a_docsis_upstream() -> None:
    # The proactive grant carries a tenth of the rate; the rest of the L flow's bytes wait
    # for the request-grant loop (D = 2 ms, M = 2 ms): the L queue's p99 bound is 1 ms +
    # one packet at 50 Mbit/s + D + M.
    bound = 1 * MS + 1500 * 8 / 50e6 + 4 * MS
    on, off = qprot(True, True), qprot(False, True)
    # Measured: 4.64 ms with Queue Protection, 4.70 without: the Prague flows yield to the
    # 1.5x flow, so the L queue's arrivals stay under the service flow's rate.
    assert l_queue(on)["sojourn_p99_s"] <= bound
    # The unresponsive flow takes the most sanctions (measured 64 against 41 and 42) and
    # keeps its rate; the Prague flows take the rest (measured 25.1 Mbit/s).
    sanc = [f["qprot_sanctioned"] for f in on["flows"]]
    assert sanc[2] > max(sanc[:2]) and sanc[2] > 50, sanc
    assert on["flows"][2]["goodput_bps"] > 0.95 * 25e6
    assert prague_bps(on) > 0.9 * 25e6
    assert [f["qprot_sanctioned"] for f in off["flows"]] == [0, 0, 0]
    # A flow that fills the service flow by itself builds the queue the RFC describes: it
    # fills the 10 ms L buffer without Queue Protection (measured p99 9.73 ms). With it,
    # the modem's virtual queue lets the actual queue hold the request-grant loop's bytes
    # (calcAllowedAQ: loopDelay = 0.5 + 1 + 2 = 3.5 ms at the rate) before it sees an
    # excess, then sanctions past CRITICALqL = 1 ms; grants come every M = 2 ms: the p99
    # stays within 3.5 + 1 + 2 ms + one packet (measured 5.78 ms), and the flow is the one
    # sanctioned (4695 packets against 290 of the Prague flows').
    on3, off3 = qprot(True, True, "3x"), qprot(False, True, "3x")
    assert l_queue(off3)["sojourn_p99_s"] > 0.9 * 10 * MS
    assert l_queue(on3)["sojourn_p99_s"] <= 6.5 * MS + 1500 * 8 / 50e6
    sanc = [f["qprot_sanctioned"] for f in on3["flows"]]
    assert sanc[2] > 5 * (sanc[0] + sanc[1]), sanc


def test_best_effort_grants_do_not_read_as_l_queue_delay() -> None:
    # Without proactive grants every byte waits for the request-grant loop (D = 2 ms,
    # M = 2 ms here). The modem's L delay estimate is MULPI's virtual queue, which allows
    # the bytes that loop holds: the Prague flows keep their rate (measured 25.1 Mbit/s
    # beside the 1.5x flow, 45.2 alone) and the L queue's p99 stays within 1 ms + one
    # packet + D + M (measured 4.70 ms; 4.83 without Queue Protection), which still
    # sanctions the unresponsive flow's packets (measured 109).
    bound = 1 * MS + 1500 * 8 / 50e6 + 4 * MS
    on, off = qprot(True, False), qprot(False, False)
    assert l_queue(on)["sojourn_p99_s"] <= bound
    assert prague_bps(on) > 0.9 * 25e6 and prague_bps(off) > 0.9 * 25e6
    assert on["flows"][2]["qprot_sanctioned"] > 0
    # Alone, with the virtual queue and with the length estimate, which reads the loop's
    # bytes as delay and marks the Prague flows down (measured 45.2 and 8.9 Mbit/s).
    be = {"max_sustained_rate": "50Mbps"}
    alone = {
        est: prague_bps(
            run(scenario([PRAGUE], docsis=be, qdisc={"kind": "docsis_dualq", "l_delay": est}))
        )
        for est in ("auto", "queue")
    }
    assert alone["auto"] > 40e6 and alone["queue"] < 0.5 * alone["auto"], alone


def test_same_seed_same_summary() -> None:
    sc = scenario([PRAGUE], docsis=SF, qdisc={"kind": "docsis_dualq"})
    assert run(sc) == run(sc)


@pytest.mark.parametrize(
    ("docsis", "words"),
    [
        ({"map_interval": "0s"}, "map_interval"),
        ({"map_interval": "200ms"}, "more than 100ms"),
        ({"max_sustained_rate": "0bps"}, "max_sustained_rate"),
        ({"pgs": "0B"}, "pgs"),
        ({"no_such_key": 1}, "no_such_key"),
    ],
)
def test_bad_input_is_refused_in_one_sentence(docsis: dict[str, Any], words: str) -> None:
    with pytest.raises(l4sim.ScenarioError) as e:
        scenario(LIGHT, docsis=docsis)
    assert words in str(e.value)


def test_a_docsis_direction_needs_a_constant_rate() -> None:
    with pytest.raises(l4sim.ScenarioError) as e:
        l4sim.Scenario.parse(
            {
                "name": "x",
                "duration": "1s",
                "topology": {
                    "preset": "dumbbell",
                    "bottleneck": {
                        "delay": "1ms",
                        "docsis": {},
                        "onoff": {"on": "1s", "off": "1s", "rate": "10Mbps"},
                    },
                },
                "flows": LIGHT,
            }
        )
    assert "docsis needs a constant rate" in str(e.value)


def test_the_emulator_accepts_a_docsis_link() -> None:
    # Its router runs the same request-grant gate (tests/test_emulate.py runs kernel TCP
    # through it).
    import l4sim.emulate as emu

    hosts, flows = emu._hosts_and_flows(scenario(LIGHT, docsis={}), 1)
    assert len(flows) == len(LIGHT) and len(hosts) == 2


def test_a_docsis_link_keeps_its_channel_rate() -> None:
    sim = l4sim.Simulation(scenario(LIGHT, docsis={}))
    with pytest.raises(l4sim.ActionError, match="r0->r1 is a DOCSIS upstream"):
        sim.apply({"kind": "set_link_rate", "link": "r0->r1", "rate_bps": 10**7})


@pytest.mark.parametrize(
    ("docsis", "share"),
    [
        ({"max_sustained_rate": "20Mbps"}, 0.2),
        ({"max_sustained_rate": "20Mbps", "peak_rate": "10Mbps"}, 0.1),
    ],
)
def test_grants_hold_a_bulk_flow_to_the_service_flows_rate(
    docsis: dict[str, Any], share: float
) -> None:
    # A CUBIC flow through a 100 Mbit/s channel: the CMTS grants at most the token
    # bucket's (and the peak rate's) bytes each interval, and piggy-backed requests keep the
    # grants coming. Measured: the channel busy 19.90 % and 9.96 % of the time.
    s = run(scenario([{"kind": "tcp", "cca": "cubic"}], docsis=docsis))
    assert share * 0.975 < upstream(s)["utilization"] <= share * 1.001
