"""pcap captures (docs/captures.md): files read back with dpkt (and tshark when installed)
agree with summary.json, with IPv4 and with IPv6 headers; a capture changes no result; bad
capture keys are one sentence."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

import l4sim
from l4sim.engine.simulation import Simulation
from netns import ECT1

dpkt = pytest.importorskip("dpkt", reason="dpkt reads the pcap files (pip install dpkt)")

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = """
name = "pcap_dumbbell"
seed = 1
duration = "4s"

[topology]
preset = "dumbbell"
access = { rate = "1Gbps", delay = "1ms" }

[topology.bottleneck]
rate = "20Mbps"
delay = "10ms"
loss = 0.002
qdisc = { kind = "dualpi2" }

[[flows]]
kind = "tcp"
cca = "prague"

[[flows]]
kind = "tcp"
cca = "cubic"
"""

LINKS = ["r0->r1", "r1->r0", "s0->r0", "r0->s0", "s1->r0", "r0->s1", "r1->d0", "d0->r1", "r1->d1"]
ACCESS_S = 1e-3  # access delay
ACCESS_BPS = 1e9


def captures_toml(links: list[str], ip: int = 4) -> str:
    """``[[captures]]`` of ``links`` into pcap/ (IPv4) or pcap6/ (``ip = 6``)."""
    d = "pcap" if ip == 4 else "pcap6"
    return "".join(
        f'\n[[captures]]\nlink = "{link}"\nfile = "{d}/{link.replace("->", "-")}.pcap"\n'
        + (f"ip = {ip}\n" if ip != 4 else "")
        for link in links
    )


def read(path: Path) -> list[tuple[float, object]]:
    """(time s, dpkt IP or IP6 packet, by the version nibble) of each record; checks the
    file header."""
    with path.open("rb") as fh:
        r = dpkt.pcap.Reader(fh)
        assert r.datalink() == 101  # LINKTYPE_RAW
        assert r.snaplen == 128
        out = []
        for ts, buf in r:
            assert isinstance(ts, Decimal)  # the nanosecond format
            out.append((float(ts), dpkt.ip.IP(buf) if buf[0] >> 4 == 4 else dpkt.ip6.IP6(buf)))
        return out


def size(ip: object) -> int:
    """The packet's simulated size: the IPv4 total length; an IPv6 packet has a 40-byte
    header where the simulation counts 20."""
    return ip.len if ip.v == 4 else ip.plen + 20  # type: ignore[attr-defined]


def ecn(ip: object) -> int:
    """The ECN field (RFC 3168 §5): the TOS byte's or the traffic class's low two bits."""
    return (ip.tos if ip.v == 4 else ip.fc) & 3  # type: ignore[attr-defined]


def flow_of(ip: object) -> int:
    """Flow index from the ports (l4sim: sender port 10000 + flow, receiver port 5001)."""
    tcp = ip.data  # type: ignore[attr-defined]
    return (tcp.sport if tcp.dport == 5001 else tcp.dport) - 10_000


def tcp_option(tcp: object, kind: int) -> bytes | None:
    for k, v in dpkt.tcp.parse_opts(tcp.opts):  # type: ignore[attr-defined]
        if k == kind:
            return v
    return None


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    """One run with every link in LINKS captured twice: IPv4 into pcap/, IPv6 into pcap6/."""
    out = tmp_path_factory.mktemp("pcap")
    sc = l4sim.loads(SCENARIO + captures_toml(LINKS) + captures_toml(LINKS, 6), source="pcap.toml")
    result = l4sim.run(sc, out_dir=out)
    assert [c["packets"] > 0 for c in result.captures] == [True] * 2 * len(LINKS)
    return result.summary, out


@pytest.fixture(params=[4, 6], ids=["ipv4", "ipv6"])
def run(both: tuple[dict, Path], request: pytest.FixtureRequest) -> tuple[dict, Path]:
    """summary.json and the directory of the IPv4 or the IPv6 captures: every check below
    holds for both."""
    summary, out = both
    return summary, out / ("pcap" if request.param == 4 else "pcap6")


def test_packet_counts_are_the_queues(run: tuple[dict, Path]) -> None:
    """Every packet that left a qdisc is in its link's capture, with its real length:
    counts and bytes equal summary.json's per-link packets exactly."""
    summary, pcap = run
    queues = {q["link"]: q for q in summary["queues"]}
    for link in LINKS:
        pkts = read(pcap / f"{link.replace('->', '-')}.pcap")
        assert len(pkts) == queues[link]["packets"], link
        times = [t for t, _ in pkts]
        assert times == sorted(times)
        for _, ip in pkts:
            hlen = 20 if ip.v == 4 else 40
            assert (ip.v, ip.p if ip.v == 4 else ip.nxt) in ((4, 6), (6, 6)), link
            length = size(ip) - 20 + hlen  # the IP packet's
            assert length == hlen + len(bytes(ip.data)) or length > 128  # cut at the snaplen
    # Both flows cross the bottleneck, each in its own 5-tuple; only flow 0 uses s0->r0.
    per_flow = [0, 0]
    for _, ip in read(pcap / "r0-r1.pcap"):
        per_flow[flow_of(ip)] += 1
    assert min(per_flow) > 500 and sum(per_flow) == queues["r0->r1"]["packets"]
    assert {flow_of(ip) for _, ip in read(pcap / "s0-r0.pcap")} == {0}


def relative_seq(pkts: list[tuple[float, object]]) -> list[tuple[int, int]]:
    """[(start, end)) of each data segment, relative to the SYN's ISN + 1."""
    isn = next(ip.data.seq for _, ip in pkts if ip.data.flags & dpkt.tcp.TH_SYN)
    out = []
    for _, ip in pkts:
        n = size(ip) - 20 - 4 * ip.data.off
        if n > 0:
            s = (ip.data.seq - isn - 1) % 2**32
            out.append((s, s + n))
    return out


@pytest.mark.parametrize("flow", [0, 1])
def test_retransmissions_are_repeated_sequence_ranges(run: tuple[dict, Path], flow: int) -> None:
    """At the sender's egress every segment it sent is seen once, before any loss: the
    segments that repeat bytes already sent are summary.json's retransmits, and the
    payload adds up to its bytes_sent."""
    summary, pcap = run
    segs = relative_seq(read(pcap / f"s{flow}-r0.pcap"))
    high, rtx = 0, 0
    for s, e in segs:
        if s < high:
            rtx += 1
        high = max(high, e)
    f = summary["flows"][flow]
    assert f["retransmits"] > 0  # the bottleneck loses 0.2 % of packets
    assert rtx == f["retransmits"]
    assert sum(e - s for s, e in segs) == f["bytes_sent"]


def arrived_by_end(t: float, ip: object, end_s: float) -> bool:
    """A packet that left the last hop at ``t`` reached its destination within the run."""
    return t + size(ip) * 8 / ACCESS_BPS + ACCESS_S <= end_s + 1e-12


def test_ce_marks_and_the_ace_counter(run: tuple[dict, Path]) -> None:
    """The CE-marked data segments on the receiver's last hop that arrived within the run
    are summary.json's ecn_marks (DualPI2 marks Prague's ECT(1) segments; CUBIC without
    ECN sends Not-ECT); every AccECN ACK's ACE is 5 + the CE packets received before it,
    mod 8 (RFC 9768 §3.2.2), and it carries the AccECN option (kind 172)."""
    summary, pcap = run
    end = summary["sim_time_s"]
    ce_arrivals = []
    for flow in (0, 1):
        pkts = read(pcap / f"r1-d{flow}.pcap")
        ce = [(t, ip) for t, ip in pkts if ecn(ip) == 3 and arrived_by_end(t, ip, end)]
        assert len(ce) == summary["flows"][flow]["ecn_marks"]
        if flow == 0:
            assert len(ce) > 50
            assert all(ecn(ip) in (1, 3) for _, ip in pkts if size(ip) > 52)  # ECT(1) or CE
            ce_arrivals = sorted(t + size(ip) * 8 / ACCESS_BPS + ACCESS_S for t, ip in ce)
    acks = [(t, ip) for t, ip in read(pcap / "d0-r1.pcap") if not ip.data.flags & dpkt.tcp.TH_SYN]
    assert acks
    for t, ip in acks:
        tcp = ip.data
        # RFC 9768 §3.2.2: ACE is AE (the former NS bit), CWR and ECE: bits 8-6 of the
        # 16-bit word after the acknowledgement number.
        ace = int.from_bytes(bytes(tcp)[12:14], "big") >> 6 & 7
        seen = sum(1 for a in ce_arrivals if a <= t + 1e-12)
        assert ace == (5 + seen) % 8, (t, ace, seen)
        assert len(tcp_option(tcp, 172) or b"") == 9


@pytest.mark.parametrize("flow", [0, 1])
def test_rtt_from_timestamps(run: tuple[dict, Path], flow: int) -> None:
    """RTT samples from TSecr (microseconds) at the sender's ingress, taken as the sender
    takes them (RFC 7323 §4.1: now - TSecr, on ACKs that advance the cumulative ACK,
    RFC 7323 §4.2 / Linux FLAG_ACKED), smoothed as SRTT is (RFC 6298 §2: gain 1/8), average
    to summary.json's srtt_mean_s within 0.5 % (TSval's 1 us clock is 0.004 % of the RTT;
    the rest is the first sample, which the sender takes from the handshake); none is
    below the 24 ms base RTT."""
    summary, pcap = run
    samples, srtt, high = [], None, None
    for t, ip in read(pcap / f"r0-s{flow}.pcap"):
        tcp = ip.data
        if tcp.flags & dpkt.tcp.TH_SYN:
            high = tcp.ack
            continue
        if not 0 < (tcp.ack - high) % 2**32 < 2**31:
            continue  # a duplicate ACK: no RTT sample
        high = tcp.ack
        ts = tcp_option(tcp, dpkt.tcp.TCP_OPT_TIMESTAMP)
        assert ts is not None
        rtt = t + size(ip) * 8 / ACCESS_BPS + ACCESS_S - int.from_bytes(ts[4:8], "big") / 1e6
        assert rtt >= 0.024 - 2e-6  # 2 x (1 + 10 + 1) ms; TSval rounds to 1 us
        srtt = rtt if srtt is None else srtt + (rtt - srtt) / 8
        samples.append(srtt)
    mean = sum(samples) / len(samples)
    expected = summary["flows"][flow]["srtt_mean_s"]
    assert len(samples) > 1000
    assert abs(mean - expected) / expected < 0.005, (mean, expected)


def test_tshark_reads_the_capture(run: tuple[dict, Path]) -> None:
    """Wireshark's dissector (when installed) reads every frame as IPv4 or IPv6, finds no
    malformed one and no error in its expert info, finds every IPv4 checksum good, and every
    TCP checksum it can check (the whole segment is in the file: ACKs, not data cut at the
    snap length) good too; it counts the CE marks dpkt counts and sees SACK blocks."""
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed")
    _, pcap = run
    v6 = pcap.name == "pcap6"

    def count(display_filter: str, path: Path = pcap / "r0-r1.pcap") -> int:
        out = subprocess.run(
            [tshark, "-n", "-r", str(path), "-o", "ip.check_checksum:TRUE", "-o",
             "tcp.check_checksum:TRUE", "-Y", display_filter, "-T", "fields", "-e",
             "frame.number"],
            capture_output=True, text=True, check=True, timeout=120,
        ).stdout  # fmt: skip
        return len(out.split())

    pkts = read(pcap / "r0-r1.pcap")
    acks = pcap / "r1-r0.pcap"
    if v6:
        assert count("ipv6.version == 6 and ipv6.hlim == 64 and tcp") == len(pkts)
        assert count("ip") == 0
        both_ends = "ipv6.src == 2001:db8::/32 and ipv6.dst == 2001:db8::/32"
        assert count(f"{both_ends} and ipv6.flow != 0", acks) == len(read(acks))
        assert count("ipv6.tclass.ecn == 3") == sum(1 for _, ip in pkts if ecn(ip) == 3)
    else:
        assert count("ip") == len(pkts)
        assert count("ip.checksum.status == 1") == len(pkts)
        assert count("ip.dsfield.ecn == 3") == sum(1 for _, ip in pkts if ecn(ip) == 3)
    assert count("_ws.malformed or _ws.expert.severity >= error") == 0
    assert count("tcp.checksum.status == 0") == 0  # 0: bad, 1: good, 2: not checked
    assert count("tcp.checksum.status == 1", acks) == len(read(acks))
    assert count("tcp.options.sack_le", acks) > 0
    for path in (pcap / "r0-r1.pcap", acks):
        expert = subprocess.run(
            [tshark, "-n", "-r", str(path), "-o", "tcp.check_checksum:TRUE", "-q", "-z",
             "expert,error"],
            capture_output=True, text=True, check=True, timeout=120,
        ).stdout  # fmt: skip
        assert "Malformed" not in expert and "Bad checksum" not in expert, expert


def test_ipv6_captures_are_the_ipv4_ones(both: tuple[dict, Path]) -> None:
    """The IPv6 capture of a link holds the IPv4 capture's packets at the same times: the
    same TCP segment (but its checksum, over another pseudo-header) behind a 40-byte header
    (RFC 8200 §3: the ECN field as the traffic class's low bits, DSCP 0, a non-zero flow
    label per flow and direction, hop limit 64, 2001:db8::N+1 for 10.0.0.N+1)."""
    _, out = both
    for link in LINKS:
        name = f"{link.replace('->', '-')}.pcap"
        v4, v6 = read(out / "pcap" / name), read(out / "pcap6" / name)
        assert len(v4) == len(v6) > 0, link
        labels: dict[tuple[int, int], int] = {}
        for (t4, a), (t6, b) in zip(v4, v6, strict=True):
            assert t4 == t6 and b.v == 6 and b.nxt == a.p == 6 and b.hlim == 64
            assert (ecn(b), b.fc >> 2) == (ecn(a), 0) and size(b) == size(a)
            assert b.src[:4] == b.dst[:4] == bytes.fromhex("20010db8")
            assert (
                int.from_bytes(b.src, "big") & 0xFFFF_FFFF
                == int.from_bytes(a.src, "big") - 0x0A00_0000
            )
            assert (
                int.from_bytes(b.dst, "big") & 0xFFFF_FFFF
                == int.from_bytes(a.dst, "big") - 0x0A00_0000
            )
            sa, sb = bytes(a.data), bytes(b.data)
            k = min(len(sa), len(sb))  # the snap length cuts 20 bytes more of IPv6's
            assert sa[:16] == sb[:16] and sa[18:k] == sb[18:k], link
            assert (
                0 < b.flow < 2**20
                and labels.setdefault((a.data.sport, a.data.dport), b.flow) == b.flow
            )
        assert len(set(labels.values())) == len(labels), link  # one label per flow direction


@pytest.mark.parametrize("name", ["l4s_dualpi2", "aqm_fq_codel"])
def test_a_capture_changes_no_result(tmp_path: Path, name: str) -> None:
    """Shipped scenarios, with every link direction captured, give the same summary.json
    (but the wall time) as without captures."""
    base = l4sim.load(ROOT / "scenarios" / f"{name}.toml").with_overrides(duration="3s")
    links = [f"{a}->{b}" for a, b, _ in base.topology.links()]
    links += [f"{b}->{a}" for a, b, _ in base.topology.links()]
    captures = [{"link": x, "file": f"{i}.pcap"} for i, x in enumerate(links)]
    captures += [{"link": x, "file": f"{i}.v6.pcap", "ip": 6} for i, x in enumerate(links)]
    with_captures = base.with_overrides(captures=captures)
    plain = l4sim.run(base).summary
    captured = l4sim.run(with_captures, out_dir=tmp_path)
    for s in (plain, captured.summary):
        s.pop("wall_time_s")
    assert json.dumps(plain) == json.dumps(captured.summary)
    assert sum(c["packets"] for c in captured.captures) == 2 * sum(
        q["packets"] for q in plain["queues"]
    )


def test_a_fork_does_not_capture(tmp_path: Path) -> None:
    """The original keeps its capture; the fork runs alike and writes nothing."""
    sim = Simulation(l4sim.loads(SCENARIO))
    sim.capture("r0->r1", tmp_path / "a.pcap", flows=[1], snaplen=64)
    sim.run_until("1s")
    fork = sim.fork()
    sim.run()
    fork.run()
    assert fork.close_captures() == []
    (stats,) = sim.close_captures()
    assert stats["link"] == "r0->r1" and stats["packets"] > 100
    with (tmp_path / "a.pcap").open("rb") as fh:
        r = dpkt.pcap.Reader(fh)
        pkts = [dpkt.ip.IP(b) for _, b in r]
    assert r.snaplen == 64 and len(pkts) == stats["packets"]
    assert {flow_of(ip) for ip in pkts} == {1}
    assert fork.summary() == sim.summary()


@pytest.mark.parametrize(
    ("link", "kwargs", "fragment"),
    [
        ("r0->r9", {}, 'there is no link "r0->r9"'),
        ("r0->r1", {"snaplen": 0}, "snaplen 0 is outside 1..=262144 bytes"),
        ("r0->r1", {"snaplen": -5}, "snaplen -5 is outside"),
        ("r0->r1", {"flows": [2]}, "there is no flow 2; flows are 0..2"),
        ("r0->r1", {"flows": [-1]}, "there is no flow -1"),
        ("r0->r1", {"ip": 5}, "ip 5 is not an IP version; give 4 or 6"),
    ],
)
def test_bad_api_captures_are_one_sentence(
    tmp_path: Path, link: str, kwargs: dict, fragment: str
) -> None:
    sim = Simulation(l4sim.loads(SCENARIO))
    with pytest.raises(l4sim.errors.CoreError, match=r"^capture ") as e:
        sim.capture(link, tmp_path / "x.pcap", **kwargs)
    assert fragment in str(e.value) and "\n" not in str(e.value)
    assert sim.close_captures() == [] and not (tmp_path / "x.pcap").exists()


def run_cli(tmp_path: Path, capture: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.replace('"4s"', '"1s"') + capture)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    return subprocess.run(
        [sys.executable, "-m", "l4sim", "run", str(path), "-q", "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize(
    ("capture", "fragment"),
    [
        ('link = "r0->r1"\nfile = "/tmp/x.pcap"', "is an absolute path"),
        ('link = "r0->r1"\nfile = "../x.pcap"', "contains '..'"),
        ('link = "r0->r1"\nfile = "summary.json"', "would replace the run's own"),
        ('link = "r0->r9"\nfile = "x.pcap"', "'r0->r9' is not a link direction"),
        ('link = "r0->r1"\nfile = "x.pcap"\nflows = [2]', "names flow 2"),
        ('link = "r0->r1"\nfile = "x.pcap"\nsnaplen = 0', "snaplen"),
        ('link = "r0->r1"\nfile = "x.pcap"\nip = 5', "ip"),
        ('link = "r0->r1"\nfile = "evil/x.pcap"', "outside the output directory"),
        ('link = "r0->r1"\nfile = "dir"', "cannot create capture"),
    ],
)
def test_bad_captures_are_one_sentence(tmp_path: Path, capture: str, fragment: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "evil").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (out / "dir").mkdir()
    done = run_cli(tmp_path, "\n[[captures]]\n" + capture + "\n")
    assert done.returncode != 0
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0], lines[0]
    assert not (tmp_path / "elsewhere").exists()


EMULATED = (
    ECT1.replace('"emu_ect1"', '"emu_capture"')
    + """[[captures]]
link = "h0->h1"
file = "emu.pcap"
snaplen = 64
"""
)


def test_an_emulated_run_captures_the_real_packets(tmp_path: Path) -> None:
    """The router writes the real packets it sends on h0->h1 as they leave DualPI2: every
    one summary.json counts there, with the kernel's UDP header, the CE marks DualPI2 set
    (valid checksums), at wall-clock times within the run."""
    import time

    from netns import netns_reason

    reason = netns_reason()
    if reason is not None:
        pytest.skip(reason)
    from l4sim.emulate import emulate

    t0 = time.time()
    result = emulate(l4sim.loads(EMULATED), out_dir=tmp_path)
    t1 = time.time()
    (cap,) = result.captures
    q = {x["link"]: x for x in result.summary["queues"]}["h0->h1"]
    with (tmp_path / "emu.pcap").open("rb") as fh:
        r = dpkt.pcap.Reader(fh)
        assert (r.datalink(), r.snaplen) == (101, 64)
        raw = [(float(ts), b) for ts, b in r]
    pkts = [(t, dpkt.ip.IP(b)) for t, b in raw]
    assert cap["link"] == "h0->h1" and len(pkts) == cap["packets"] == q["packets"] > 1000
    assert all(t0 <= t <= t1 for t, _ in pkts)
    assert all(ip.p == 17 and ip.len > 1000 for _, ip in pkts)
    ce = 0
    for _, b in raw:
        total = sum(int.from_bytes(b[i : i + 2], "big") for i in range(0, 20, 2))
        while total > 0xFFFF:
            total = (total & 0xFFFF) + (total >> 16)
        assert total == 0xFFFF  # RFC 1071: the header sums to all ones with its checksum
        ce += b[1] & 3 == 3
    # 12 Mbit/s into 10: DualPI2 marks many of them (an overloaded L queue also drops).
    assert 0 < ce <= q["ecn_marks"]
