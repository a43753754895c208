"""``l4sim emulate`` with a BPF DCTCP (:mod:`l4sim.emulate.bpf`): built for this kernel,
registered for the run, removed after it; DCTCP's signature through a step marker.

The end-to-end tests need root, network namespaces, the kernel's BTF, clang and bpftool;
where any is missing they say which and skip. The error sentences are tested everywhere,
with the missing pieces monkeypatched."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from l4sim import emulate as emu
from l4sim.emulate import bpf
from l4sim.errors import EmulationError
from l4sim.scenario import loads
from netns import bpf_reason

NAME = bpf.BPF_CCAS["dctcp"]


REASON = bpf_reason("dctcp")
needs_bpf = pytest.mark.skipif(REASON is not None, reason=REASON or "")


# A step marker at K packets (RED on the instantaneous queue, marking ECT, never dropping
# below the limit): DCTCP's AQM (RFC 8257 §3.1). 20 Mbit/s, 20 ms base RTT: a BDP of 35
# packets, so K = 5 is at DCTCP's full-utilisation bound (K > BDP / 7) and far below what
# CUBIC's 0.7 reduction needs (K > 0.43 BDP).
STEP = """
name = "emu_dctcp_step"
duration = "5s"
[topology]
preset = "dumbbell"
[topology.bottleneck]
rate = "20Mbps"
delay = "10ms"
[topology.bottleneck.qdisc]
kind = "red"
limit = "200p"
min_th = "5p"
max_th = "6p"
w_q = 1.0
harddrop = false
ecn = true
[[flows]]
kind = "tcp"
"""


def _loaded() -> bool:
    return NAME in emu.kernel_ccas()


def test_not_root_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bpf, "_euid", lambda: 1000)
    with pytest.raises(EmulationError, match=r"^loading a BPF congestion control .* needs root$"):
        bpf.check_tools()


def test_no_btf_is_one_sentence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(bpf, "_euid", lambda: 0)
    monkeypatch.setattr(bpf, "_BTF", tmp_path / "vmlinux")
    with pytest.raises(EmulationError, match=r"this kernel has no BTF"):
        bpf.check_tools()


@pytest.mark.parametrize("tool", ["clang", "bpftool"])
def test_a_missing_tool_is_one_sentence(monkeypatch: pytest.MonkeyPatch, tool: str) -> None:
    monkeypatch.setattr(bpf, "_euid", lambda: 0)
    monkeypatch.setattr(bpf, "_BTF", Path(__file__))  # any file: the BTF is there
    monkeypatch.setattr(bpf, "_which", lambda t: None if t == tool else f"/usr/bin/{t}")
    msg = f"the BPF DCTCP needs {tool}; install clang and bpftool: apt-get install clang "
    with pytest.raises(EmulationError, match=msg + "bpftool libbpf-dev$"):
        bpf.check_tools()


def test_dctcp_without_the_tools_fails_before_anything_is_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(emu, "kernel_ccas", lambda: ["reno", "cubic"])
    monkeypatch.setattr(bpf, "_euid", lambda: 0)
    monkeypatch.setattr(bpf, "_BTF", Path(__file__))
    monkeypatch.setattr(bpf, "_which", lambda t: None)
    with pytest.raises(EmulationError, match="needs clang and bpftool; install"):
        emu._hosts_and_flows(loads(STEP + 'cca = "dctcp"\n'), 1)


def test_the_kernel_has_its_own_dctcp_it_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emu, "kernel_ccas", lambda: ["reno", "cubic", "dctcp"])
    _, flows = emu._hosts_and_flows(loads(STEP + 'cca = "dctcp"\n'), 1)
    assert flows[0].kernel_cca == "dctcp" and flows[0].src.ecn == 1


def test_the_verifiers_last_word_is_kept() -> None:
    out = (
        "libbpf: prog 'x': BPF program load failed: Permission denied\n"
        "libbpf: prog 'x': -- BEGIN PROG LOAD LOG --\n0: R1=ctx() R10=fp0\n"
        "11: (63) *(u32 *)(r1 +1672) = r3\nno write support to tcp_sock at off 1672\n"
        "processed 12 insns (limit 1000000) max_states_per_insn 0 total_states 0\n"
        "-- END PROG LOAD LOG --\nlibbpf: failed to load object 'x.o'\n"
    )
    assert bpf.verifier_line(out) == "no write support to tcp_sock at off 1672"
    assert bpf.verifier_line("Error: failed to open object file\n") == (
        "Error: failed to open object file"
    )


@needs_bpf
def test_a_program_the_verifier_refuses_is_one_sentence(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The same DCTCP writing a field the kernel keeps read-only to a CC (snd_una).
    src = bpf.SOURCE.read_text().replace(
        "ca->loss_cwnd = 0;", "ca->loss_cwnd = 0;\n\t((struct tcp_sock *)tp)->snd_una = 1;", 1
    )
    bad = tmp_path / "l4sim_dctcp.bpf.c"
    bad.write_text(src)
    monkeypatch.setattr(bpf, "cache_dir", lambda: tmp_path / "cache")
    obj = bpf.build(bad)
    monkeypatch.setattr(bpf, "build", lambda source=bpf.SOURCE, kind="dctcp": obj)
    bpf.cleanup_leftovers()
    with pytest.raises(
        EmulationError, match=r"refused the BPF DCTCP: no write support to tcp_sock"
    ):
        bpf.load("dctcp")
    assert not _loaded() and bpf._owner(NAME) is None


@needs_bpf
def test_a_cc_left_by_a_killed_run_is_removed() -> None:
    bpf.cleanup_leftovers()
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert bpf.load("dctcp") and _loaded()
    bpf._pid_file(NAME).write_text(f"{dead.pid}\n")  # as if a run that is gone had loaded it
    assert bpf.cleanup_leftovers() == [NAME]
    assert not _loaded() and not bpf._pid_file(NAME).exists()


@needs_bpf
def test_dctcp_in_bpf_holds_a_short_queue_at_full_rate() -> None:
    bpf.cleanup_leftovers()
    s = emu.emulate(loads(STEP + 'cca = "dctcp"\n')).summary
    flow, q = s["flows"][0], s["queues"][0]
    assert flow["cca"] == "dctcp" and flow["kernel_cca"] == NAME
    assert not _loaded() and not bpf._pid_file(NAME).exists()  # removed after the run
    # The step marker marks, the sender sees the echoes; ECN, so nothing is dropped.
    assert q["ecn_marks"] > 0 and flow["delivered_ce"] > 0
    assert q["drops"] == 0 and flow["retransmits"] <= 2
    # The queue stays near K = 5 packets (0.6 ms each at 20 Mbit/s), with the link full.
    assert q["backlog_mean_pkts"] < 15 and q["sojourn_mean_s"] < 0.010
    assert flow["goodput_bps"] > 0.75 * 20e6 * 1448 / 1500

    # CUBIC with ECN through the same marker: as short a queue, at a lower rate (it halves
    # most of the way on each mark, DCTCP by the marked fraction).
    c = emu.emulate(loads(STEP + 'cca = "cubic"\necn = true\n')).summary
    cflow, cq = c["flows"][0], c["queues"][0]
    assert cflow["kernel_cca"] == "cubic" and cq["ecn_marks"] > 0
    assert flow["goodput_bps"] > 1.05 * cflow["goodput_bps"]
    print(
        f"dctcp {flow['goodput_bps'] / 1e6:.2f} Mbit/s {q['ecn_marks']} marks sojourn "
        f"{q['sojourn_mean_s'] * 1e3:.2f} ms; cubic {cflow['goodput_bps'] / 1e6:.2f} Mbit/s "
        f"{cq['ecn_marks']} marks sojourn {cq['sojourn_mean_s'] * 1e3:.2f} ms"
    )


def test_the_source_ships_in_the_package() -> None:
    assert bpf.SOURCE.is_file() and 'char _license[] SEC("license") = "GPL";' in (
        bpf.SOURCE.read_text()
    )
    package = Path(bpf.__file__).parents[1]  # l4sim/, whose data/ the wheel carries
    assert os.path.commonpath([bpf.SOURCE, package]) == str(package)
