"""`l4sim reproduce aqm-004`: paper 004's AQM comparison, on a subset to stay quick."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from cli_run import run_l4sim

pytest.importorskip("l4sim._core")

from l4sim.experiments import aqm_comparison


def test_cases_cover_the_paper_grid_plus_prague_on_l4s() -> None:
    cases = aqm_comparison.cases()
    # 6 AQMs x 2 rates x ECN on/off, plus Prague on the ECN-on L4S cases (2 AQMs x 2 rates).
    assert len(cases) == 6 * 2 * 2 + 2 * 2
    assert {c.aqm for c in cases if c.cca == "prague"} == set(aqm_comparison.L4S_AQMS)
    assert all(c.ecn for c in cases if c.cca == "prague")
    sc = aqm_comparison.scenario(aqm_comparison.Case("codel", "10Mbps", True))
    starts = [f.start for f in sc.flows]
    assert starts == [0, 10_000_000_000, 20_000_000_000, 30_000_000_000]
    assert sc.duration == 90_000_000_000


def test_codel_subset_writes_table_and_behaves(tmp_path: Path) -> None:
    proc = run_l4sim(
        "reproduce", "aqm-004", "--only", "codel", "--out", str(tmp_path), "--no-figures"
    )
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "table2.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["rate"], r["ecn"]) for r in rows] == [
        ("10Mbps", "False"),
        ("10Mbps", "True"),
        ("1Mbps", "False"),
        ("1Mbps", "True"),
    ]
    by = {(r["rate"], r["ecn"]): r for r in rows}
    off, on = by[("10Mbps", "False")], by[("10Mbps", "True")]
    # Without ECN CoDel drops; with ECN it marks instead (RFC 8289 §5 with RFC 3168).
    assert int(off["drops"]) > 0 and int(off["ecn_marks"]) == 0
    assert int(on["ecn_marks"]) > 0 and int(on["drops"]) <= int(off["drops"]) // 10
    # 90 s at 10 Mbps is at most 112.5 MB; the four staggered flows keep the link busy.
    assert 0.85 * 112.5 <= float(off["data_mbytes"]) <= 112.5
    # CoDel's 5 ms target, with 4 flows' sawteeth around it.
    assert float(off["sojourn_mean_ms"]) < 15
    assert float(off["paper_mbytes"]) == pytest.approx(46.574638)
    assert (tmp_path / "table2.md").read_text().count("| codel |") == 4
    assert (tmp_path / "codel-10Mbps-ecn-newreno" / "summary.json").exists()


def test_unknown_experiment_and_subset_are_one_sentence(tmp_path: Path) -> None:
    for args in (["nope"], ["aqm-004", "--only", "blue"]):
        proc = run_l4sim("reproduce", *args, "--out", str(tmp_path), timeout=60)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr and "known" in proc.stderr
