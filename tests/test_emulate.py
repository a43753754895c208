"""``l4sim emulate``: the kernel's TCP between network namespaces through l4sim's router.

The end-to-end tests need root and network namespaces; where they cannot be created the
tests say so and skip. The router is the one the extension carries
(`python -m l4sim.emulate.router`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pytest

from l4sim import emulate as emu
from l4sim.errors import EmulationError
from l4sim.scenario import loads
from l4sim.schema.summary import summary_schema
from netns import ECT1, netns_reason

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "python")}


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
REASON = netns_reason()
MS = 1e-3
needs_netns = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(scope="module")
def router() -> list[str]:
    return emu.find_router()


def _ours(pid: int) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.startswith(f"{emu.PREFIX}{pid}-")]


DUMBBELL = """
name = "emu_dumbbell"
duration = "3s"
[topology]
preset = "dumbbell"
[topology.bottleneck]
rate = "10Mbps"
delay = "10ms"
qdisc = { kind = "fifo", limit = "60p" }
[[flows]]
kind = "tcp"
cca = "cubic"
[[flows]]
kind = "tcp"
cca = "newreno"
"""


@needs_netns
def test_dumbbell_run_end_to_end(router: list[str], tmp_path: Path) -> None:
    from l4sim.engine.results import read, write

    result = emu.emulate(loads(DUMBBELL))
    write(result, tmp_path)
    back = read(tmp_path)
    s = back.summary
    assert [f["kernel_cca"] for f in s["flows"]] == ["cubic", "reno"]
    # The emulator's writer against summary.json's schema (the contract's, strictly).
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(json.dumps(s)), summary_schema(emulated=True))
    total = sum(f["goodput_bps"] for f in s["flows"])
    # The bottleneck carries at most 10 Mbit/s x 1448/1500 of payload. Two flows fill it
    # after slow start, but the slow-start overshoot into a 60-packet buffer can cost a
    # flow an RTO (>= 200 ms, then slow start again) in a 3 s run: at least half of it.
    assert 0.5 * 9.65e6 < total < 10e6 * 1448 / 1500 * 1.01, total
    q = {x["link"]: x for x in s["queues"]}
    bott = q["r0->r1"]
    assert bott["qdisc"] == "fifo" and bott["utilization"] > 0.5
    assert bott["backlog_max_pkts"] <= 60
    # A standing queue: sojourn between one packet's time and the whole buffer's.
    assert 1.2e-3 < bott["sojourn_mean_s"] < 60 * 1.2e-3
    for f in s["flows"]:
        # RTT: 2 x (10 ms + 2 x 1 ms access) plus queueing, at most the buffer's 72 ms.
        assert 0.024 < f["srtt_mean_s"] < 0.024 + 0.08, f
        # tcpi_rwnd_limited: the kernel's autotuned window is no limit at a 30 kB BDP
        # beyond its first RTTs (it was read, in seconds, not left null).
        assert 0 <= f["rwnd_limited_s"] < 0.5, f
    assert s["emulation"]["router"]["unroutable"] == 0
    # The router knows each flow: every drop is at the bottleneck (access FIFOs of 1000
    # never fill), and data packets take at least the path's propagation (1 + 10 + 1 ms).
    assert sum(f["drops"] for f in s["flows"]) == bott["drops"]
    for f in s["flows"]:
        assert 0.012 < f["owd_mean_s"] < 0.012 + 0.08 and f["owd_p99_s"] >= f["owd_p50_s"]
    assert set(back.queues["link"].unique()) >= {"r0->r1", "r1->r0"}
    assert back.flows.filter(pl.col("flow") == 0).height >= 25
    assert _ours(os.getpid()) == []


@needs_netns
def test_dualpi2_marks_ect1_packets_on_their_real_headers(router: list[str]) -> None:
    # 12 Mbit/s of ECT(1) into 10 Mbit/s: the L4S queue grows past its 1 ms step and
    # DualPI2 marks (RFC 9332 §2.5.1.2); the receiver reads CE in the IP header.
    s = emu.emulate(loads(ECT1)).summary
    flow, q = s["flows"][0], s["queues"][0]
    assert q["qdisc"] == "dualpi2" and q["ecn_marks"] > 100
    assert flow["ecn_marks"] > 100
    # Headers written CE: the marked packets that left the router before the end (a few
    # were still queued); the receiver counts those that reached it.
    written = s["emulation"]["router"]["ce_written"]
    assert 0.95 * q["ecn_marks"] <= written <= q["ecn_marks"]
    assert flow["ecn_marks"] == written  # the router's per-flow count
    assert 0.95 * written <= flow["ecn_marks_received"] <= written  # the receiver's
    assert 0.9 * 10e6 < flow["goodput_bps"] < 10.1e6


STEPS = """
name = "emu_steps"
duration = "4s"
[topology]
preset = "two_host"
delay = "5ms"
rate = "10Mbps"
schedule = [{at = "0s", rate = "8Mbps"}, {at = "2s", rate = "3Mbps"}]
qdisc = { kind = "fifo", limit = "50p" }
[[flows]]
kind = "udp"
rate = "12Mbps"
"""


@needs_netns
def test_a_step_schedule_holds_in_the_router(router: list[str]) -> None:
    """The router runs the same rate schedule as the simulator (net/rate.rs): a saturating
    UDP flow's goodput follows 8 then 3 Mbit/s. Each window starts 0.5 s after a step (the
    50-packet FIFO drains in < 0.2 s at 3 Mbit/s); 1472-byte datagrams carry 1472/1500 of
    the wire rate; 5 % for the real clock's sampling of 100-ms intervals."""
    res = emu.emulate(loads(STEPS))
    f = res.flows.filter(pl.col("flow") == 0)

    def mean_bps(lo: float, hi: float) -> float:
        w = f.filter((pl.col("time_s") > lo) & (pl.col("time_s") <= hi))
        return float(w["goodput_bps"].mean())

    for (lo, hi), rate in (((0.5, 2.0), 8e6), ((2.5, 4.0), 3e6)):
        got = mean_bps(lo, hi)
        assert got == pytest.approx(rate * 1472 / 1500, rel=0.05), (lo, hi, got)


DOCSIS = """
name = "emu_docsis"
duration = "4s"
[topology]
preset = "two_host"
delay = "2ms"
rate = "20Mbps"
docsis = { max_sustained_rate = "10Mbps" }
docsis_reverse = {}
qdisc = { kind = "fifo", limit = "40p" }
[[flows]]
kind = "tcp"
cca = "cubic"
[[flows]]
kind = "udp"
src = "h1"
dst = "h0"
rate = "1Mbps"
"""


@needs_netns
def test_a_docsis_upstream_holds_in_the_router(router: list[str]) -> None:
    """The router runs the simulator's DOCSIS request-grant gate (net/docsis.rs) in both
    directions of a 20 Mbit/s channel: kernel CUBIC upstream gets the 10 Mbit/s its service
    flow is granted (not the channel's 20), and a light UDP stream the other way waits for
    its grants (a 4 ms request-grant loop with the 2 ms MAP interval and 2 ms request delay:
    4 to 6 ms alone; the simulator gives 5.7 ms with the ACKs queued beside it, the
    emulation measured 6.2). Against the simulator's run of the same scenario: goodput and
    the channel's utilisation within 5 % (both are the granted rate; measured 0.2 %), the
    upstream's mean sojourn within 25 % (kernel and simulated CUBIC fill the 40-packet FIFO
    with different sawtooths; measured 9 %), the other direction's within 20 % (the ACKs
    beside the stream come from two different TCPs; measured 10 %)."""
    from l4sim.engine.run import run

    scen = loads(DOCSIS)
    sim, got = run(scen).summary, emu.emulate(scen).summary
    qs, qg = ({x["link"]: x for x in s["queues"]} for s in (sim, got))
    for q in (qs, qg):
        assert 4 * MS < q["h1->h0"]["sojourn_mean_s"] < 7 * MS, q
    fs, fg = sim["flows"][0], got["flows"][0]
    assert fg["kernel_cca"] == "cubic"
    assert 0.9 * 10e6 < fg["goodput_bps"] < 10e6
    assert fg["goodput_bps"] == pytest.approx(fs["goodput_bps"], rel=0.05)
    up, down = qg["h0->h1"], qg["h1->h0"]
    assert up["utilization"] == pytest.approx(qs["h0->h1"]["utilization"], rel=0.05)
    assert up["sojourn_mean_s"] == pytest.approx(qs["h0->h1"]["sojourn_mean_s"], rel=0.25)
    assert down["sojourn_mean_s"] == pytest.approx(qs["h1->h0"]["sojourn_mean_s"], rel=0.2)


def test_without_root_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emu, "_euid", lambda: 1000)
    with pytest.raises(EmulationError, match="needs root"):
        emu.emulate(loads(ECT1))


@needs_netns
def test_without_root_the_cli_exits_nonzero() -> None:
    # An unprivileged user (nobody) runs the real CLI on a scenario it can read.
    if not _nobody_can_read(Path(emu.__file__)):
        pytest.skip("nobody cannot read this checkout (a private directory such as mktemp's)")
    with tempfile.NamedTemporaryFile("w", suffix=".toml", dir="/tmp") as f:
        f.write(ECT1)
        f.flush()
        os.chmod(f.name, 0o644)
        p = _as_nobody(f.name)
    assert p.returncode != 0
    assert "needs root" in p.stderr and "Traceback" not in p.stderr


def _nobody_can_read(path: Path) -> bool:
    """Every directory above ``path`` lets others through, and ``path`` lets them read."""
    dirs = [p for p in path.resolve().parents if p != Path("/")]
    return all(d.stat().st_mode & 0o001 for d in dirs) and bool(path.stat().st_mode & 0o004)


def _as_nobody(scen: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NOBODY, sys.executable, "-m", "l4sim", "emulate", scen, "--out", "/tmp/l4sim-noroot"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )


def _router_child(pid: int, timeout: float = 20.0) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1 : stat.rindex(")")]
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            if ppid == pid and comm.startswith("l4sim-router"):
                return int(d.name)
        time.sleep(0.05)
    raise AssertionError("the router did not start")


def _start_cli(tmp_path: Path) -> tuple[subprocess.Popen[str], int]:
    """A 30 s emulated dumbbell run by the CLI, and its router's pid once it runs."""
    scen = tmp_path / "s.toml"
    scen.write_text(DUMBBELL.replace('duration = "3s"', 'duration = "30s"'))
    proc = subprocess.Popen(
        [sys.executable, "-m", "l4sim", "emulate", str(scen), "--out", str(tmp_path / "o")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        rpid = _router_child(proc.pid)
    except AssertionError:
        proc.kill()
        raise
    assert len(_ours(proc.pid)) == 4  # s0, s1, d0, d1
    time.sleep(0.5)
    return proc, rpid


@needs_netns
def test_no_namespace_left_after_the_router_is_killed(router: list[str], tmp_path: Path) -> None:
    proc, rpid = _start_cli(tmp_path)
    try:
        os.kill(rpid, signal.SIGKILL)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert "router stopped unexpectedly" in err
    assert _ours(proc.pid) == []
    assert not (tmp_path / "o" / "summary.json").exists()


@needs_netns
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupting_a_run_removes_everything(router: list[str], tmp_path: Path, sig: int) -> None:
    proc, rpid = _start_cli(tmp_path)
    try:
        os.kill(proc.pid, sig)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err  # the CLI's status for an interrupted command
    assert _ours(proc.pid) == []
    assert not Path(f"/proc/{rpid}").exists()


@needs_netns
def test_leftovers_of_a_killed_run_are_removed() -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    name = f"{emu.PREFIX}{dead.pid}-h0"
    subprocess.run(["ip", "netns", "add", name], check=True)
    alive = f"{emu.PREFIX}{os.getppid()}-h0"  # a live process's namespace stays
    subprocess.run(["ip", "netns", "add", alive], check=True)
    try:
        assert name in emu.cleanup_leftovers()
        assert _ours(dead.pid) == [] and _ours(os.getppid()) == [alive]
    finally:
        subprocess.run(["ip", "netns", "del", alive], capture_output=True)
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_a_cca_the_kernel_lacks_is_one_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    # Prague and DCTCP have BPF stand-ins; BBR comes only from the kernel.
    monkeypatch.setattr(emu, "kernel_ccas", lambda: ["reno", "cubic"])
    sc = loads(DUMBBELL.replace('cca = "newreno"', 'cca = "bbr"'))
    with pytest.raises(EmulationError, match=r"'bbr' congestion control.*available: reno cubic"):
        emu._hosts_and_flows(sc, 1)


def test_mixed_ecn_on_one_host_is_refused() -> None:
    sc = loads(
        ECT1
        + '[[flows]]\nkind = "tcp"\ncca = "cubic"\necn = true\n'
        + '[[flows]]\nkind = "tcp"\ncca = "cubic"\n'
    )
    with pytest.raises(EmulationError, match="with and without ECN"):
        emu._hosts_and_flows(sc, 1)


def test_summary_keys_match_the_run_contract() -> None:
    """The keys of ``l4sim run``'s summary are all in an emulated one."""
    from l4sim import run

    sim = run(loads(ECT1.replace('"2s"', '"100ms"'))).summary
    flows = [
        {k: 0 for k in sim["flows"][0]} | {"kernel_cca": None, "bytes_received": 0}
    ]  # shape only
    router = {
        "channels": ["h0->h1"],
        "series": {k: [] for k in ("time_s", "link", "class", "backlog_pkts", "backlog_bytes")}
        | {k: [] for k in ("drops", "ecn_marks", "sojourn_s", "utilization")},
        "queues": sim["queues"],
        "counters": {"received": 0},
        "elapsed_s": 0.1,
        "lateness_us": {},
    }
    out = emu._result(loads(ECT1), flows, router, [], 0.1).summary
    assert set(sim) <= set(out)
    assert set(sim["flows"][0]) <= set(out["flows"][0])
    json.dumps(out)


@needs_netns
def test_an_lfq_policy_runs_in_the_router(router: list[str], tmp_path: Path) -> None:
    # LFQ (fq with a weights file): a network whose output is about 40 packets whatever
    # the features sets the flow's buffer in the router as in the simulator, so a CUBIC
    # flow that would fill fq's default 100-packet buffer is held near 40.
    torch = pytest.importorskip("torch")
    from l4sim.agents import lfq

    w = tmp_path / "w.safetensors"
    torch.manual_seed(0)
    net = lfq.LfqNet(16)
    with torch.no_grad():
        net.fc4.bias.fill_(40.0)
    lfq.save_weights(w, net)
    policy = f'{{ kind = "lfq", weights = "{w}" }}'
    text = ECT1.replace('{ kind = "dualpi2" }', f'{{ kind = "fq", policy = {policy} }}')
    text = text.split("[[flows]]")[0] + '[[flows]]\nkind = "tcp"\ncca = "cubic"\n'
    s = emu.emulate(loads(text.replace('"2s"', '"3s"'))).summary
    q = s["queues"][0]
    assert q["qdisc"] == "fq"
    assert 30 <= q["backlog_max_pkts"] <= 46, q
    assert q["drops"] > 0


@needs_netns
def test_kernel_tcp_negotiates_ecn_and_answers_the_routers_marks(router: list[str]) -> None:
    # tcp_ecn = 1 in the sender's namespace: the kernel negotiates ECN (RFC 3168 §6.1.1),
    # sends ECT(0), RED marks instead of dropping (thresholds of 2 and 4 packets on the
    # instantaneous queue, which slow start's bursts exceed; no hard drops below the
    # 100-packet limit), the receiver echoes ECE and the sender reduces: marks, no drops.
    red = '{ kind = "red", limit = "100p", min_th = "2p", max_th = "4p", w_q = 1.0, '
    red += "harddrop = false, ecn = true }"
    text = ECT1.replace('{ kind = "dualpi2" }', red)
    text = text.split("[[flows]]")[0] + '[[flows]]\nkind = "tcp"\ncca = "cubic"\necn = true\n'
    s = emu.emulate(loads(text)).summary
    flow, q = s["flows"][0], s["queues"][0]
    assert q["ecn_marks"] > 0 and q["drops"] == 0
    # (A retransmission without a drop can only be a spurious timeout on a loaded host.)
    assert flow["ecn_marks"] > 0 and flow["retransmits"] <= 2
    assert flow["delivered_ce"] > 0  # the sender saw ECE
    assert flow["goodput_bps"] > 0.5 * 10e6 * 1448 / 1500
