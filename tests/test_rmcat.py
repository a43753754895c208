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
    assert len(full) == len(rm.RMCAT) * 4 * 3 + 5 * 3
    assert experiment("rmcat").name == "rmcat"
    quick = rm.cases(quick=True)
    assert {c.test for c in quick} == {"5.1", "5.6", "l4s"}
    assert {c.queue for c in quick} == {"fifo", "dualpi2"}
    only = rm.cases(["5.4", "udp-prague", "fq_codel"])
    assert [c.name for c in only] == ["5.4-udp-prague-fq_codel"]
    l4s = rm.cases(["l4s"])
    assert [(c.prague, c.rtt_ms) for c in l4s[:5]] == [(n, 5) for n in range(5)]


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
        f"5.1-{sender}-fifo", "5.1", sender, "fifo", 0, 0, 1.0, 1.0, 80.0, 90.0, p99, late,
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
