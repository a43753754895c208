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


def _row(rate: int, cc1: str, rtt1: int, cc2: str, rtt2: int) -> rf.Case:
    return next(
        c
        for c in rf.cases()
        if (c.rate_mbps, c.cc1, c.rtt1_ms, c.cc2, c.rtt2_ms) == (rate, cc1, rtt1, cc2, rtt2)
    )


def test_table_has_the_testbeds_48_dualpi2_runs() -> None:
    cases = rf.cases()
    assert len(cases) == 48
    assert [len(rf.cases([g])) for g in rf.GROUPS] == [24, 24]
    sc = rf.scenario(_row(50, "prague", 20, "cubic", 10), rf.DUALPI2_L4STEAM_2020)
    core = sc.to_core_config()
    names = [n["name"] for n in core["nodes"]]
    senders = [names.index(n) for n in ("s0", "s1")]
    delays = sorted(link["delay_ns"] for link in core["links"] if link["a"] in senders)
    # Path RTT = twice the sender access link's one-way delay (everything else is 0 ms).
    assert delays == [5_000_000, 10_000_000]
    assert all(f["tcp"]["ecn"] for f in core["flows"])


@pytest.mark.parametrize(
    ("rate", "rtt"),
    [(50, 10), (50, 20), (10, 10), (10, 20)],
)
def test_prague_beside_cubic_at_equal_rtt_matches_linux(rate: int, rtt: int) -> None:
    case = _row(rate, "prague", rtt, "cubic", rtt)
    prague, cubic = rf.final_minute_mbps(case, rf.DUALPI2_L4STEAM_2020)
    assert prague == pytest.approx(case.testbed1_mbps, rel=PER_FLOW_TOL)
    assert cubic == pytest.approx(case.testbed2_mbps, rel=PER_FLOW_TOL)
    # The L queue's advantage at these RTTs (Linux: 1.8-2.7), within the same tolerance.
    testbed = case.testbed1_mbps / case.testbed2_mbps
    assert prague / cubic == pytest.approx(testbed, rel=PER_FLOW_TOL)


def reproduce(only: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = ["reproduce", "l4s-rtt-fairness", "--only", only, "--out", str(out), *extra]
    return subprocess.run(
        [sys.executable, "-m", "l4sim", *cmd], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def ten_mbit(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rttfair")
    proc = reproduce("10Mbps", out, "--no-figures")
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
    assert md.count("\n| 10 |") == 24 and "flows within 20 %" in md


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
