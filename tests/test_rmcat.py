"""``l4sim reproduce rmcat``: its grid, the RFC 8867 cases' scenarios, the tables computed
from rows, and the contrast the RFC expects on a wired bottleneck: a media source with no
congestion control overloads the RFC's FIFO (frames late, packets lost) where SCReAM v2
follows the capacity."""

from __future__ import annotations

import pytest

pytest.importorskip("l4sim._core")

from l4sim.experiments import experiment
from l4sim.experiments import rmcat as rm


def test_the_grid_and_its_subsets() -> None:
    full = rm.cases()
    assert len(full) == len(rm.RMCAT) * 4 * 3 + 5 * 5 * 2
    assert experiment("rmcat").name == "rmcat"
    quick = rm.cases(quick=True)
    assert {c.test for c in quick} == {"5.1", "5.6", "l4s"}
    assert {c.queue for c in quick} == {"fifo", "dualpi2"}
    only = rm.cases(["5.4", "udp-prague", "fq_codel"])
    assert [c.name for c in only] == ["5.4-udp-prague-fq_codel"]
    l4s = rm.cases(["l4s"])
    assert [(c.prague, c.rtt_ms) for c in l4s[:5]] == [(n, 5) for n in range(5)]
    assert {c.rules for c in l4s} == {"latest", "2024-10-31"}
    assert {(c.rules, c.rtt_ms, c.prague) for c in quick if c.test == "l4s"} == {
        (r, 25, n) for r in ("latest", "2024-10-31") for n in (0, 1)
    }


def test_the_l4s_case_is_the_test_records_set_up() -> None:
    """SCReAM's test record (test 2): 1400-byte packets, 50 fixed-size frames a second, the
    rules of the record's commit when asked; the L4STeam kernel's RTT-independent Prague;
    its figures go beside ours in the table."""
    case = rm.Case("l4s", "scream-l4s", "dualpi2", 2, 10, "2024-10-31")
    sc = rm.scenario(case).to_dict()
    scream, prague, _ = sc["flows"]
    assert scream["packet_size"] == "1400B" and scream["source"]["fps"] == 50
    assert scream["source"]["noise"] == 0 and scream["cc"]["rules"] == "2024-10-31"
    assert prague["cca"] == {"kind": "prague", "rtt_independence": True}
    assert sc["duration"] == "60s"
    assert [f["start"] for f in sc["flows"][1:]] == ["20s", "40s"]
    assert rm.record()[(10, 2)] == 40 and rm.record()[(100, 4)] == 18
    r = rm.Row(case.name, "l4s", "scream-l4s", "dualpi2", 2, 10, "2024-10-31", 30.0, 30.0,
               20.0, 25.0, 30.0, 0.0, 0.0, 70.0, 1.0, 1)  # fmt: skip
    flows = {(case.name, i): {"rate_mbps": 35.0} for i in (1, 2)}
    table = rm.l4s_table(rm.against_record([r], flows), "10-20 s", 1)
    assert "| 2024-10-31 | 10 | 2 | 30.0 | 40 | 0.75 | 35.0, 35.0 | 0.30 |" in table


def test_the_scenarios_carry_the_rfc_parameters() -> None:
    c51 = rm.scenario(rm.Case("5.1", "none", "fifo")).to_dict()
    link = c51["topology"]["bottleneck"]
    assert [s["rate"] for s in link["schedule"]] == ["1Mbps", "2500kbps", "600kbps", "1Mbps"]
    # 300 ms of the first capacity (1 Mbit/s) as the drop-tail buffer.
    assert link["qdisc"] == {"kind": "fifo", "limit": "37500B"}
    assert c51["flows"][0]["rate"] == "1Mbps" and c51["flows"][0]["cc"] == {"kind": "none"}
    c53 = rm.scenario(rm.Case("5.3", "scream-l4s", "dualpi2")).to_dict()
    bwd = c53["topology"]["bottleneck"]["schedule_reverse"]
    assert [s["rate"] for s in bwd] == ["2Mbps", "800kbps", "2Mbps"]
    assert (c53["flows"][1]["src"], c53["flows"][1]["dst"]) == ("d1", "s1")
    c55 = rm.scenario(rm.Case("5.5", "udp-prague", "fq_codel")).to_dict()
    assert c55["topology"]["access_delays"] == ["8ms", "23ms", "48ms", "98ms", "148ms"]
    assert [f["start"] for f in c55["flows"]] == ["0s", "10s", "20s", "30s", "40s"]
    c56 = rm.scenario(rm.Case("5.6", "scream-classic", "fifo")).to_dict()
    assert c56["flows"][1]["cca"] == "newreno" and c56["flows"][0]["cc"]["mode"] == "classic"


def test_5_7_has_the_rfcs_short_tcp_flows() -> None:
    """RFC 8867 5.7: two media flows from 5 to 299 s; 10 users' downloads of 30-50 KB, a new
    connection each, 2 users on from the start, idle times of mean 10 s; one TCP row."""
    sc = rm.scenario(rm.Case("5.7", "scream-l4s", "fifo"), 3).to_dict()
    media, short = sc["flows"][:2], sc["flows"][2:]
    assert [(f["start"], f["stop"]) for f in media] == [("5s", "299s")] * 2
    assert sc["topology"]["pairs"] == 12
    users = {f["src"] for f in short}
    assert users == {f"s{k}" for k in range(2, 12)}
    assert all(30_000 <= int(f["size"].removesuffix("B")) <= 50_000 for f in short)
    raw = rm.short_tcp_flows(3, 2, 300)
    assert len(raw) == len(short)
    first = {
        u: min(float(f["start"].removesuffix("s")) for f in raw if f["src"] == u) for u in users
    }
    assert first["s2"] == first["s3"] == 0.0 and min(first[f"s{k}"] for k in range(4, 12)) > 0
    # About 300 s / 10 s downloads per user; the draws follow the seed.
    assert 150 < len(short) < 500
    assert rm.scenario(rm.Case("5.7", "none", "dualpi2"), 3).to_dict()["flows"][2:] == short
    assert rm.scenario(rm.Case("5.7", "none", "dualpi2"), 4).to_dict()["flows"][2:] != short
    rows = rm.measure(rm.Case("5.7", "none", "fifo"), 1)
    assert [r["kind"] for r in rows] == ["udp", "udp", "tcp"] and rows[2]["rate_mbps"] > 0.1


def test_no_cc_on_the_rfc_fifo_shows_the_harm_scream_avoids() -> None:
    """RFC 8867 5.1 (1 -> 2.5 -> 0.6 -> 1 Mbit/s, 100 ms RTT, 300 ms drop-tail buffer): the
    fixed-rate video (1 Mbit/s) overflows the buffer when the capacity drops to 0.6 Mbit/s
    and sits in a full queue from then on; SCReAM v2 follows the capacity."""
    none = rm.measure(rm.Case("5.1", "none", "fifo"), 1)[0]
    scream = rm.measure(rm.Case("5.1", "scream-l4s", "fifo"), 1)[0]
    assert none["loss_frac"] > 0.05 and scream["loss_frac"] < 0.01
    assert none["late_frac"] > 0.5 and scream["late_frac"] < 0.1
    assert none["p50_ms"] > 300 and scream["p50_ms"] < 100
    # SCReAM still uses the link: at least half the 1.2 Mbit/s mean capacity.
    assert scream["rate_mbps"] > 0.6


def row(sender: str, p99: float, late: float) -> rm.Row:
    return rm.Row(
        f"5.1-{sender}-fifo", "5.1", sender, "fifo", 0, 0, "", 1.0, 1.0, 80.0, 90.0, p99, late,
        0.0, None, 100.0, 2,
    )  # fmt: skip


def test_the_findings_are_computed_from_the_rows() -> None:
    rows = [row("scream-l4s", 120.0, 0.01), row("none", 500.0, 0.8)]
    md = rm.markdown_table(rows)
    assert "5.1 scream-l4s, FIFO: frame delay p99 120 ms against 500 ms" in md
    assert md.rstrip().endswith(": lower")
    rows[0].p99_ms = 600.0
    assert rm.markdown_table(rows).rstrip().endswith(": NOT lower")
    assert md.count("\n| 5.1 |") == 2
