"""TCP Prague and CUBIC through DualPI2 against a Linux L4S testbed (Heist & Morton 2020,
scenario 1: two flows, 10 or 50 Mbit/s, path RTTs 10-160 ms; see
:mod:`l4sim.experiments.l4s_rtt_fairness`).

Tolerance: in the testbed, two runs of the same configuration (the table lists each mixed
pair twice, flows swapped) differ by up to 4 % per flow, and two flows that should be equal
(CUBIC vs CUBIC at one RTT) by up to 9 %; we allow 20 % per flow.

The issue asked for a Prague/CUBIC rate ratio within [0.5, 2] at 100 Mbit/s and 20 ms. The
testbed measured 2.05 and 2.17 at 50 Mbit/s and 20 ms (1.81 and 1.86 at 10 Mbit/s), and the
ratio grows with the rate; a model that matches Linux cannot stay under 2 there, so what is
asserted is agreement with Linux.

The same scenario's pfifo and fq_codel rows: in pfifo the testbed's own repeatability is poor
for the weaker flow (the two runs of a mixed pair, flows swapped, give Prague 7.55 and 9.78
Mbit/s at 50 Mbit/s and 10 ms, 5.88 and 12.24 at 20 ms), so a pfifo flow is compared with the
mean of the two runs; in fq_codel the two runs agree within 1 %.
"""

from __future__ import annotations

import csv
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")

from l4sim.experiments import l4s_rtt_fairness as rf

PER_FLOW_TOL = 0.20


def _row(rate: int, cc1: str, rtt1: int, cc2: str, rtt2: int, qdisc: str = "dualpi2") -> rf.Case:
    return next(
        c
        for c in rf.cases([qdisc])
        if (c.rate_mbps, c.cc1, c.rtt1_ms, c.cc2, c.rtt2_ms) == (rate, cc1, rtt1, cc2, rtt2)
    )


def test_table_has_the_testbeds_48_dualpi2_runs() -> None:
    cases = rf.cases(["dualpi2"])
    assert len(cases) == 48
    assert [len(rf.cases([g, "dualpi2"])) for g in rf.RATES] == [24, 24]
    # The DualPI2 cases keep their indices and names; the other qdiscs follow them.
    assert [c.name for c in rf.cases()[:2]] == [
        "00-50Mbps-cubic10-prague10",
        "01-50Mbps-prague10-cubic10",
    ]
    assert [len(rf.cases([q])) for q in rf.QDISCS] == [48, 48, 48]
    assert len(rf.cases()) == 144 and len(rf.cases(["10Mbps", "pfifo"])) == 24
    sc = rf.scenario(_row(50, "prague", 20, "cubic", 10), rf.DUALPI2_L4STEAM_2020)
    core = sc.to_core_config()
    names = [n["name"] for n in core["nodes"]]
    senders = [names.index(n) for n in ("s0", "s1")]
    delays = sorted(link["delay_ns"] for link in core["links"] if link["a"] in senders)
    # Path RTT = twice the sender access link's one-way delay (everything else is 0 ms).
    assert delays == [5_000_000, 10_000_000]
    # The testbed's HTB charges skb->len (1514 B for a 1500 B packet); the hosts' links
    # (veth, no shaper) charge nothing.
    overheads = {(names[x["a"]], names[x["b"]]): x["overhead_bytes"] for x in core["links"]}
    assert overheads.pop(("r0", "r1")) == 14 and set(overheads.values()) == {0}
    assert all(f["tcp"]["ecn"] for f in core["flows"])
    # tcp_ecn = 3 in the L4STeam kernel: AccECN feedback for CUBIC too.
    assert all(f["tcp"]["accecn"] for f in core["flows"])


@pytest.mark.parametrize(
    ("rate", "rtt"),
    [(50, 10), (50, 20), (10, 10), (10, 20)],
)
def test_prague_beside_cubic_at_equal_rtt_matches_linux(rate: int, rtt: int) -> None:
    # The testbed ran each mixed pair twice, flows swapped; both sides are compared as the
    # mean of the two orders (ours differ by up to 4 %, as the testbed's do).
    case = _row(rate, "prague", rtt, "cubic", rtt)
    swapped = _row(rate, "cubic", rtt, "prague", rtt)
    p1, c1 = rf.final_minute_mbps(case, rf.DUALPI2_L4STEAM_2020)
    c2, p2 = rf.final_minute_mbps(swapped, rf.DUALPI2_L4STEAM_2020)
    prague, cubic = (p1 + p2) / 2, (c1 + c2) / 2
    linux_prague = (case.testbed1_mbps + swapped.testbed2_mbps) / 2
    linux_cubic = (case.testbed2_mbps + swapped.testbed1_mbps) / 2
    assert prague == pytest.approx(linux_prague, rel=PER_FLOW_TOL)
    assert cubic == pytest.approx(linux_cubic, rel=PER_FLOW_TOL)
    # The L queue's advantage at these RTTs (Linux: 1.8-2.7), within the same tolerance.
    assert prague / cubic == pytest.approx(linux_prague / linux_cubic, rel=PER_FLOW_TOL)


def reproduce(only: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = ["reproduce", "l4s-rtt-fairness", "--only", only, "--out", str(out), *extra]
    return subprocess.run(
        [sys.executable, "-m", "l4sim", *cmd], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def ten_mbit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rttfair")
    proc = reproduce("10Mbps,dualpi2", out, "--no-figures")
    assert proc.returncode == 0, proc.stderr
    return out


def test_ten_mbit_table_agrees_with_linux(ten_mbit: Path) -> None:
    with open(ten_mbit / "table.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 24
    flows = [
        (float(r[f"testbed{i}_mbps"]), float(r[f"l4sim{i}_mbps"])) for r in rows for i in (1, 2)
    ]
    errs = [abs(ours / tb - 1) for tb, ours in flows]
    # Flows with at least a tenth of the link (a 0.2 Mbit/s flow's error is noise): with 48
    # flows, a few beyond 20 % are expected from run-to-run spread alone; ask for 90 %.
    big = [abs(ours / tb - 1) for tb, ours in flows if tb >= 1.0]
    assert sum(e <= PER_FLOW_TOL for e in big) >= 0.9 * len(big), sorted(big)
    assert statistics.median(errs) <= 0.10
    md = (ten_mbit / rf.TABLE).read_text()
    assert md.count("\n| 10 | dualpi2 |") == 24 and "flows within 20 %" in md


def test_mainline_step_starves_prague_at_ten_mbit(ten_mbit: Path) -> None:
    # Mainline's min_qlen_step = 0 marks every L packet that waited > 1 ms; at 10 Mbit/s one
    # 1514 B packet takes 1.2 ms to send, so L packets that arrive behind a Classic one are
    # marked: Prague falls below CUBIC, where the 2020 step guard (qlen(L) > 1) lets it lead.
    with open(ten_mbit / "table.csv") as fh:
        row = next(
            r
            for r in csv.DictReader(fh)
            if (r["flow1"], r["flow2"]) == ("prague(20ms)", "cubic(20ms)")
        )
    assert float(row["l4sim1_mbps"]) > float(row["l4sim2_mbps"])
    assert float(row["mainline1_mbps"]) < float(row["mainline2_mbps"])


def test_bad_subset_is_one_sentence(tmp_path: Path) -> None:
    proc = reproduce("100Mbps", tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "10Mbps" in proc.stderr


def test_bad_seeds_are_one_sentence(tmp_path: Path) -> None:
    proc = reproduce("10Mbps,fq_codel", tmp_path, "--seeds", "0")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--seeds" in proc.stderr
    cmd = ["reproduce", "aqm-004", "--seeds", "2", "--out", str(tmp_path)]
    proc = subprocess.run([sys.executable, "-m", "l4sim", *cmd], capture_output=True, text=True)
    assert proc.returncode == 2 and "has no --seeds mode" in proc.stderr
    assert not (tmp_path / "table.md").exists()


def test_averaged_row_counts_each_flows_agreement_per_run() -> None:
    def run(a: float, b: float) -> rf.Row:
        return rf.Row("c", 10, "cubic(10ms)", "prague(10ms)", 4.0, 5.0, a, b, None, None)

    # Flow 1 (testbed 4.0): 4.5 and 3.0 -> within 20 % once; flow 2 (5.0): 5.9 and 6.1
    # -> once (5.9 is +18 %, 6.1 is +22 %).
    row = rf.averaged([run(4.5, 5.9), run(3.0, 6.1)])
    assert (row.seeds, row.within1, row.within2) == (2, 0.5, 0.5)
    assert (row.l4sim1_mbps, row.l4sim2_mbps) == (3.75, 6.0)
    assert row.mainline1_mbps is None
    assert "3.0 of 4 flows" in rf.agreement([row, rf.averaged([run(4.0, 5.0), run(4.0, 5.0)])])


def test_seeded_reproduction_is_the_mean_of_jittered_runs(tmp_path: Path) -> None:
    rows = rf.reproduce(tmp_path, only=["10Mbps", "fq_codel"], figures=False, seeds=[1, 2])
    assert len(rows) == 24 and all(r.seeds == 2 for r in rows)
    case = rf.cases(["10Mbps", "fq_codel"])[5]
    noisy = rf.TcpVariant.of(access_jitter_us=rf.HOST_JITTER_US)
    runs = [rf.run_case(case, s, noisy) for s in (1, 2)]
    assert runs[0].l4sim1_mbps != runs[1].l4sim1_mbps  # the seeds' jitter differs
    assert rows[5] == rf.averaged(runs)
    md = (tmp_path / rf.TABLE).read_text()
    assert "mean of 2 seeds" in md and "on average over 2 seeds of host jitter" in md
    with open(tmp_path / "table.csv") as fh:
        assert {r["within1"] for r in csv.DictReader(fh)} <= {"0.0", "0.5", "1.0"}


def test_pfifo_lets_cubic_crowd_out_prague_as_in_linux() -> None:
    # One drop-tail queue of 1000 packets (the testbed's pfifo limit at 50 Mbit/s), no ECN
    # marks: Prague answers a loss as Reno does, CUBIC grows back faster and holds the queue.
    case = _row(50, "cubic", 10, "prague", 10, "pfifo")
    swapped = _row(50, "prague", 10, "cubic", 10, "pfifo")
    assert rf.qdisc_for(case) == {"kind": "fifo", "limit": "1000p"}
    # The testbed's two runs: CUBIC 39.98 and 37.77, Prague 7.55 and 9.78 Mbit/s; ours,
    # the same two (which flow starts first moves a drop-tail split by several %).
    c1, p1 = rf.final_minute_mbps(case, rf.qdisc_for(case))
    p2, c2 = rf.final_minute_mbps(swapped, rf.qdisc_for(swapped))
    cubic, prague = (c1 + c2) / 2, (p1 + p2) / 2
    linux_cubic = (case.testbed1_mbps + swapped.testbed2_mbps) / 2
    linux_prague = (case.testbed2_mbps + swapped.testbed1_mbps) / 2
    assert cubic == pytest.approx(linux_cubic, rel=PER_FLOW_TOL)
    assert cubic / prague > 3.0  # Linux: 5.30 and 3.86
    # A known gap (README, "Phase effects"): beside CUBIC in this deep drop-tail queue
    # l4sim's Prague keeps less than Linux's (6.0 against 8.7 Mbit/s here, ~6.5 over
    # jittered seeds with RFC or Linux CUBIC). Whoever closes it makes this an approx.
    assert prague < linux_prague


def test_fq_codel_shares_as_linux_but_long_rtt_cubic_falls_short() -> None:
    # fq_codel with Linux's defaults. Its DRR would split the link evenly, but CUBIC at
    # 80 ms cannot keep its own queue busy under CoDel's 5 ms target, so the Prague flow
    # takes the slack (Linux: 3.94 / 5.30 and, flows swapped, 5.28 / 3.95 Mbit/s). The two
    # runs agree within 1 %; Prague's share we hold to 10 % (the split hangs on CoDel's
    # timing), CUBIC's to the table's 20 %: CUBIC as Linux (the default) falls less deep
    # than Linux's (+10 %; it was +5 % with RFC 9438's CUBIC and PRR in CWR).
    case = _row(10, "cubic", 80, "prague", 80, "fq_codel")
    cubic, prague = rf.final_minute_mbps(case, rf.qdisc_for(case))
    assert prague == pytest.approx(case.testbed2_mbps, rel=0.10)
    assert cubic == pytest.approx(case.testbed1_mbps, rel=PER_FLOW_TOL)
    assert prague / cubic > 1.1  # DRR alone: 1.0; Linux: 1.35 and 1.34


def test_host_timing_noise_breaks_the_drop_tail_phase_effect() -> None:
    # Prague (20 ms) beside CUBIC (10 ms) in the 200-packet pfifo at 10 Mbit/s: without
    # jitter every run repeats one timing, and the overflow drops keep hitting the paced
    # Prague flow (Floyd & Jacobson's phase effects: 1.6 Mbit/s); with 0-250 us of
    # order-preserving jitter on the senders' access links the drops spread and Prague
    # keeps more (3.3 over these seeds; Linux: 3.40 Mbit/s).
    case = _row(10, "prague", 20, "cubic", 10, "pfifo")
    q = rf.qdisc_for(case)
    calm, _ = rf.final_minute_mbps(case, q)
    noisy = rf.TcpVariant.of(access_jitter_us=rf.HOST_JITTER_US)
    jittered = [rf.final_minute_mbps(case, q, seed, noisy)[0] for seed in (1, 2, 3)]
    assert statistics.mean(jittered) > 1.3 * calm, (calm, jittered)
    assert statistics.mean(jittered) < case.testbed1_mbps * (1 + PER_FLOW_TOL)
