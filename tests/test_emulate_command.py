"""Command flows: an external program pair that ``l4sim emulate`` runs as a flow in the
hosts' namespaces (the simulator refuses it in one sentence). The end-to-end tests need
root and network namespaces and skip where they cannot be created."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from l4sim import emulate as emu
from l4sim.errors import EmulationError, ScenarioError
from l4sim.scenario import loads
from netns import netns_reason

needs_netns = pytest.mark.skipif(netns_reason() is not None, reason=netns_reason() or "")

# Sends 300 packets of 1000 bytes (payload) at 8 Mbit/s from {sport} to {dst}:{port}, ECT(1).
SENDER = (
    "import socket,sys,time;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);"
    "s.setsockopt(socket.IPPROTO_IP,socket.IP_TOS,1);s.bind((sys.argv[1],int(sys.argv[4])));"
    "[(s.sendto(bytes(1000),(sys.argv[2],int(sys.argv[3]))),time.sleep(0.001)) "
    "for _ in range(300)];time.sleep(30)"
)
# Counts what arrives on {dst}:{port}; writes the count into {out}/got.txt on SIGTERM.
RECEIVER = (
    "import signal,socket,sys;s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);"
    "s.bind((sys.argv[1],int(sys.argv[2])));n=[0];"
    "signal.signal(signal.SIGTERM,lambda *a:(open(sys.argv[3],'w').write(str(n[0])),"
    "sys.exit(0)))\nwhile True:\n s.recv(2000);n[0]+=1"
)


def _scenario(sender: list[str], receiver: list[str] | None = None, extra: str = "") -> str:
    rx = f"receiver = {json.dumps(receiver)}\n" if receiver else ""
    return f"""
name = "emu_command"
duration = "2s"
[topology]
preset = "dumbbell"
access = {{ rate = "1Gbps", delay = "1ms" }}
[topology.bottleneck]
rate = "100Mbps"
delay = "10ms"
qdisc = "dualpi2"
[[flows]]
kind = "command"
port = 30110
sender = {json.dumps(sender)}
{rx}{extra}"""


PY = sys.executable


def test_an_unknown_template_field_is_one_sentence() -> None:
    with pytest.raises(ScenarioError, match=r"sender\[1\] '\{peer\}' names \{peer\}"):
        loads(_scenario(["prog", "{peer}"]))


def test_size_and_an_empty_program_are_refused() -> None:
    with pytest.raises(ScenarioError, match="size does not apply to a command flow"):
        loads(_scenario(["prog"], extra='size = "1MB"\n'))
    with pytest.raises(ScenarioError, match=r"sender\[0\] is empty"):
        loads(_scenario([" "]))


def test_the_simulator_refuses_a_command_flow() -> None:
    from l4sim import run

    with pytest.raises(ScenarioError, match=r"flows\[0\] is a command flow.*only `l4sim emulate`"):
        run(loads(_scenario(["prog", "{dst}", "{port}"])))


def test_a_missing_program_is_one_sentence() -> None:
    sc = loads(_scenario(["/nonexistent/scream_tx", "{dst}"]))
    with pytest.raises(EmulationError, match=r"flows\[0\]\.sender: the program '/nonexistent"):
        emu._hosts_and_flows(sc, 1)


def test_the_ports_are_the_flows_and_the_router_skips_its_config() -> None:
    sc = loads(_scenario([PY], extra="sport = 30111\n"))
    _, flows = emu._hosts_and_flows(sc, 1)
    assert (flows[0].port, flows[0].sport) == (30110, 30111)
    assert sc.to_core_config(without_commands=True)["flows"] == []


@needs_netns
def test_a_command_flow_runs_through_the_router(tmp_path: Path) -> None:
    sc = loads(
        _scenario(
            [PY, "-c", SENDER, "{src}", "{dst}", "{port}", "{sport}"],
            [PY, "-c", RECEIVER, "{dst}", "{port}", "{out}/got.txt"],
        )
    )
    s = emu.emulate(sc, out_dir=tmp_path).summary
    f = s["flows"][0]
    # Every packet arrived (8 Mbit/s through 100), each 1028 bytes on the wire, ECT(1):
    # the router counted them as the flow's (one-way delay: the 12 ms path).
    assert (tmp_path / "got.txt").read_text() == "300"
    assert f["kind"] == "command" and f["goodput_bps"] is None
    assert 0.012 < f["owd_p50_s"] < 0.0135
    l4s, classic = s["queues"][0]["classes"]
    assert l4s["packets"] >= 300 and classic["packets"] == 0
    assert (tmp_path / "flow0-sender.log").exists()


@needs_netns
def test_a_failing_program_is_one_sentence_naming_its_log(tmp_path: Path) -> None:
    sc = loads(_scenario([PY, "-c", "import sys; print('no'); sys.exit(3)"]))
    with pytest.raises(EmulationError, match=r"sender command exited with status 3.*flow0-sender"):
        emu.emulate(sc, out_dir=tmp_path)
    assert (tmp_path / "flow0-sender.log").read_text() == "no\n"


def test_without_an_output_directory_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emu, "_check_host", lambda: None)
    monkeypatch.setattr(emu, "cleanup_leftovers", lambda: [])
    sc = loads(_scenario([PY]))
    with pytest.raises(EmulationError, match="logs need an output directory"):
        emu.emulate(sc)
