"""``l4sim emulate`` with a BPF TCP Prague (:mod:`l4sim.emulate.bpf`): built for this kernel,
registered for the run, its packets made ECT(1) on the way out; through DualPI2 it lands in
the L4S queue and answers the marks there.

The end-to-end test needs root, network namespaces, the kernel's BTF, clang and bpftool;
where any is missing it says which and skips. The error sentences are tested everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from l4sim import emulate as emu
from l4sim.emulate import bpf
from l4sim.errors import EmulationError
from l4sim.scenario import loads
from netns import bpf_reason

NAME = bpf.BPF_CCAS["prague"]


REASON = bpf_reason("prague", ("clang", "bpftool", "tc"))
needs_bpf = pytest.mark.skipif(REASON is not None, reason=REASON or "")


# DualPI2 at 20 Mbit/s, 20 ms base RTT (a BDP of 35 packets): its L4S queue marks ECT(1)
# packets above a 1 ms step, its Classic queue holds ECT(0) and Not-ECT.
DUALPI2 = """
name = "emu_prague_dualpi2"
duration = "6s"
[topology]
preset = "dumbbell"
[topology.bottleneck]
rate = "20Mbps"
delay = "10ms"
qdisc = { kind = "dualpi2" }
[[flows]]
kind = "tcp"
cca = "prague"
"""

CUBIC = '[[flows]]\nkind = "tcp"\ncca = "cubic"\n'


def _no_prague(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emu, "kernel_ccas", lambda: ["reno", "cubic"])
    monkeypatch.setattr(bpf, "_euid", lambda: 0)
    monkeypatch.setattr(bpf, "_BTF", Path(__file__))  # any file: the BTF is there


def test_a_missing_tool_names_the_bpf_prague(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_prague(monkeypatch)
    monkeypatch.setattr(bpf, "_which", lambda t: None)
    with pytest.raises(EmulationError, match=r"^the BPF Prague needs clang and bpftool; install"):
        emu._hosts_and_flows(loads(DUALPI2), 1)


def test_a_missing_tc_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_prague(monkeypatch)
    monkeypatch.setattr(bpf, "_which", lambda t: None if t == "tc" else f"/usr/bin/{t}")
    with pytest.raises(EmulationError, match=r"^the BPF Prague's ECT\(1\) marker needs tc: "):
        emu._hosts_and_flows(loads(DUALPI2), 1)


def test_prague_without_the_kernel_module_is_the_bpf_one_with_ect1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_prague(monkeypatch)
    monkeypatch.setattr(bpf, "_which", lambda t: f"/usr/bin/{t}")
    hosts, flows = emu._hosts_and_flows(loads(DUALPI2 + CUBIC), 1)
    assert [f.kernel_cca for f in flows] == [NAME, "cubic"]
    # Only the Prague sender's host rewrites ECT(0) to ECT(1); receivers and CUBIC's do not.
    assert flows[0].src.ect1 and not flows[1].src.ect1 and not flows[0].dst.ect1
    assert sum(h.ect1 for h in hosts) == 1


def test_prague_and_another_flow_from_one_host_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_prague(monkeypatch)
    monkeypatch.setattr(bpf, "_which", lambda t: f"/usr/bin/{t}")
    two = (
        'name = "two"\nduration = "1s"\n[topology]\npreset = "two_host"\n'
        'rate = "20Mbps"\ndelay = "5ms"\n'
        '[[flows]]\nkind = "tcp"\ncca = "prague"\n'
    )
    with pytest.raises(EmulationError, match=r"sends BPF Prague and other flows"):
        emu._hosts_and_flows(loads(two + CUBIC), 1)


def test_the_sources_ship_in_the_package() -> None:
    package = Path(bpf.__file__).parents[1]
    for src in (bpf.SOURCES["prague"], bpf.ECT1_SOURCE):
        assert src.is_file() and src.is_relative_to(package)
        assert 'char _license[] SEC("license") = "GPL";' in src.read_text()


@needs_bpf
def test_bpf_prague_negotiates_ecn_and_answers_dualpi2s_marks() -> None:
    bpf.cleanup_leftovers()
    s = emu.emulate(loads(DUALPI2)).summary
    flow, q = s["flows"][0], s["queues"][0]
    assert flow["cca"] == "prague" and flow["kernel_cca"] == NAME
    assert NAME in s["emulation"]["scalable_tcp"]
    l4s = next(c for c in q["classes"] if c["qdisc"] == "L4S")
    # ECN negotiated and the data ECT(1): nearly every packet goes to the L4S queue.
    assert l4s["packets"] > 0.95 * q["packets"]
    # It is marked, it hears the marks (Accurate ECN), and it answers them: the L4S queue
    # stays near DualPI2's 1 ms step with the link nearly full and nothing dropped.
    assert l4s["ecn_marks"] > 50 and flow["delivered_ce"] > 50
    assert q["drops"] == 0 and flow["retransmits"] <= 2
    assert l4s["sojourn_mean_s"] < 0.002
    assert flow["goodput_bps"] > 0.7 * 20e6 * 1448 / 1500
    assert NAME not in emu.kernel_ccas()  # removed after the run
    print(
        f"prague {flow['goodput_bps'] / 1e6:.2f} Mbit/s, {l4s['ecn_marks']} marks, "
        f"delivered_ce {flow['delivered_ce']}, L4S sojourn {l4s['sojourn_mean_s'] * 1e3:.2f} ms"
    )
