"""Paper 000's stage 1 (Table 2): the control path's RTT through FIFO, FqCoDel and DualPI2."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")

from l4sim.experiments import remote_rl_tcp_000 as exp


def test_control_rtt_ordering_fifo_above_fq_codel_at_least_dualpi2_on_five_seeds() -> None:
    # The paper's claim (Table 2): prioritising the control flow shortens its RTT. A FIFO
    # shares CUBIC's standing queue with RS_1; FqCoDel isolates RS_1 and keeps its own
    # queue near CoDel's 5 ms; DualPI2's L queue marks at 1 ms. Base RTT 40 ms.
    for seed in exp.SEEDS:
        rtt = {q: exp.run_case(exp.Case(q, seed)).rs_rtt_ms for q in exp.QUEUES}
        assert rtt["fifo"] > rtt["fq_codel"] >= rtt["dualpi2"], (seed, rtt)
        assert rtt["dualpi2"] > 40.0, rtt  # never below the path's propagation RTT


def test_reproduce_quick_writes_table2(tmp_path: Path) -> None:
    rows = exp.reproduce(tmp_path, only=["fifo", "dualpi2"], quick=True)
    assert {r.queue for r in rows} == {"fifo", "dualpi2"} and len(rows) == 10
    text = (tmp_path / exp.TABLE).read_text()
    assert "| fifo |" in text and "| 105 |" in text
    assert (tmp_path / "table2.csv").is_file()


def test_an_action_never_takes_effect_before_its_packet_arrives() -> None:
    # The remote brain's action travels as a packet (a `control` flow from the server h1
    # to the device h0, 20 ms one way): the device's cwnd must not change before the packet
    # can have arrived (20 ms + its serialisation), and must change once it has (queueing
    # on the ACK direction is at most a few ms here).
    import l4sim

    sc = l4sim.Scenario.parse(
        {
            "duration": "3s",
            "topology": {"preset": "two_host", "rate": "10Mbps", "delay": "20ms"},
            "flows": [
                {"kind": "tcp", "cca": "external", "src": "h0", "dst": "h1"},
                {"kind": "control", "src": "h1", "dst": "h0"},
            ],
        }
    )
    sim = l4sim.Simulation(sc)
    sim.run_until(2.0)
    before = sim._sim.observe()["flows"]["cwnd_pkts"][0]
    target = 3 if before != 3 else 4
    sim.send_control(1, {"kind": "set_cwnd", "flow": 0, "cwnd": target})
    landed = None
    for k in range(1, 101):
        t = 2.0 + k * 0.0005
        sim.run_until(t)
        cwnd = sim._sim.observe()["flows"]["cwnd_pkts"][0]
        if cwnd == target and landed is None:
            landed = t
        if t < 2.020:
            assert cwnd == before, (t, cwnd)
    assert landed is not None and 2.020 <= landed <= 2.030, landed
