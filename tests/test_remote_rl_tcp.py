"""Paper 000's stage 1 (Table 2): the control path's RTT through FIFO, FqCoDel and DualPI2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("l4sim._core")

import l4sim
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


def _two_host(*control: tuple[str, str]) -> l4sim.Simulation:
    """h0 -> h1, 10 Mbit/s, 20 ms one way: an external-window TCP flow from h0 (the device)
    and one control flow per (src, dst) given."""
    flows: list[dict[str, Any]] = [{"kind": "tcp", "cca": "external", "src": "h0", "dst": "h1"}]
    flows += [{"kind": "control", "src": a, "dst": b} for a, b in control]
    return l4sim.Simulation(
        l4sim.Scenario.parse(
            {
                "duration": "3s",
                "topology": {"preset": "two_host", "rate": "10Mbps", "delay": "20ms"},
                "flows": flows,
            }
        )
    )


def test_an_action_never_takes_effect_before_its_packet_arrives() -> None:
    # The remote brain's action travels as a packet (a `control` flow from the server h1
    # to the device h0, 20 ms one way): the device's cwnd must not change before the packet
    # can have arrived (20 ms + its serialisation), and must change once it has (queueing
    # on the ACK direction is at most a few ms here).
    sim = _two_host(("h1", "h0"))
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


def test_remote_brain_loop_observation_and_action_travel_as_packets() -> None:
    # Paper 000's loop in one simulation: the device (h0) sends its observation as a packet
    # to the server (h1) on one control flow; the server wakes when it arrives, acts on
    # the state that packet carried, and its action travels back on another: the action
    # lands one control RTT (2 x 20 ms plus serialisation) after the observation was taken.
    sim = _two_host(("h0", "h1"), ("h1", "h0"))  # observations up, actions down
    sim.run_until(1.0)
    kept = {0: sim._sim.observe()}  # the device keeps what it sent
    sim.send_message(1, 0)
    assert sim.run_until_trigger(2.0), "the server wakes when the observation arrives"
    woke = sim.now_s if hasattr(sim, "now_s") else sim._sim.now_ns / 1e9
    (msg,) = sim.take_messages()
    assert msg["token"] == 0 and msg["sent_s"] == 1.0
    assert 1.020 <= woke == msg["delivered_s"] <= 1.025
    state = kept[msg["token"]]
    target = int(state["flows"]["cwnd_pkts"][0]) + 5
    sim.send_control(2, {"kind": "set_cwnd", "flow": 0, "cwnd": target})
    sim.run_until(woke + 0.0199)
    assert sim._sim.observe()["flows"]["cwnd_pkts"][0] != target
    sim.run_until(woke + 0.025)
    assert sim._sim.observe()["flows"]["cwnd_pkts"][0] == target
    with pytest.raises(l4sim.ActionError, match="not a control flow"):
        sim.send_message(0, 1)
