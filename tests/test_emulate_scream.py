"""``benchmarks/emulate_scream.py``: SCReAM's reference code in ``l4sim emulate`` beside
l4sim's SCReAM. Its pcap reading (the emulator's nanosecond captures, the simulator's
microsecond ones), its scenarios, and that the committed table is the CSV's."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import emulate_scream as es  # noqa: E402  (benchmarks/ is no package)


def _pcap(
    path: Path, magic: int, frac: float, packets: list[tuple[float, int, int, int, bool]]
) -> None:
    """A LINKTYPE_RAW pcap of IPv4 headers: (time, length, protocol, port, CE) each."""
    out = bytearray(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 64, 101))
    for t, size, proto, dport, ce in packets:
        ip = bytearray(28)
        ip[0], ip[1], ip[9] = 0x45, 3 if ce else 1, proto
        struct.pack_into(">H", ip, 22, dport)
        sec = int(t)
        out += struct.pack("<IIII", sec, round((t - sec) / frac), len(ip), size) + ip
    path.write_bytes(bytes(out))


@pytest.mark.parametrize(("magic", "frac"), [(0xA1B2C3D4, 1e-6), (0xA1B23C4D, 1e-9)])
def test_window_rates_read_either_timestamp_resolution(
    tmp_path: Path, magic: int, frac: float
) -> None:
    # Flow 0 (UDP to 30110) sends 1000 B every 10 ms from t = 100 s, every fourth packet
    # CE; a TCP flow to 5001 2000 B every 10 ms from t = 101 s; other traffic is ignored.
    pkts = [(100 + i * 0.01, 1000, 17, es.PORT, i % 4 == 0) for i in range(300)]
    pkts += [(101 + i * 0.01, 2000, 6, 5001, False) for i in range(200)]
    pkts += [(101.5, 9000, 6, 7, True)]
    pkts.sort()
    _pcap(tmp_path / "x.pcap", magic, frac, pkts)
    rates, ce = es.window_rates(tmp_path / "x.pcap", [(17, es.PORT), (6, 5001)], ((1, 2),))
    assert rates[0] == pytest.approx([0.8, 1.6], rel=0.02)
    assert ce == pytest.approx(0.25, abs=0.01)


def test_the_reference_runs_with_the_records_options() -> None:
    sc = es.emulated("prague2", Path("/opt/scream/bin"))
    flow = sc.flows[0]
    assert flow.kind == "command" and flow.port == es.PORT
    assert flow.sender[0] == "/opt/scream/bin/scream_bw_test_tx"
    assert "-microburstinterval" in flow.sender and flow.sender[-2:] == ["{dst}", "{port}"]
    assert [f.start for f in sc.flows[1:]] == [10 * 10**9] * 2
    ours = es.simulated("step", "2024-10-31")
    assert ours.flows[0].cc.rules == "2024-10-31"
    assert len(ours.topology.bottleneck.schedule) == 3


def test_the_committed_table_is_the_csvs() -> None:
    assert es.MD.read_text() == es.table(es.read_rows())
