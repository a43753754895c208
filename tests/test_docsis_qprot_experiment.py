"""``l4sim reproduce docsis-qprot``: its grid, its scenarios and its tables computed from
rows (the runs themselves are checked by the quick-output fingerprint, tests/test_results_guard.py,
and the model by tests/test_docsis_link.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("l4sim._core")

from l4sim.experiments import docsis_qprot as dq
from l4sim.experiments import experiment


def test_the_grid_and_its_subsets() -> None:
    assert len(dq.cases()) == len(dq.BAD) * len(dq.GRANTS) * 2
    quick = dq.cases(quick=True)
    assert {c.grants for c in quick} == {"pgs"} and len(quick) == 6
    only = dq.cases(["nqb-reno", "best-effort", "qprot"])
    assert [c.name for c in only] == ["nqb-reno-best-effort-qprot"]
    assert experiment("docsis-qprot").name == "docsis-qprot"


def test_bad_flows_are_what_their_names_say() -> None:
    assert dq.bad_flow("none") is None
    cbr = dq.bad_flow("nqb-cbr-3x")
    assert cbr is not None and cbr["rate"] == "50Mbps" and cbr["nqb"] and cbr["ecn"] == "not_ect"
    ect1 = dq.bad_flow("ect1-cbr-1.5x")
    assert ect1 is not None and ect1["rate"] == "25Mbps" and ect1["ecn"] == "ect1"
    assert "nqb" not in ect1
    reno = dq.bad_flow("nqb-reno")
    assert reno is not None and reno["cca"] == "newreno" and reno["nqb"]
    sc = dq.scenario(dq.Case("nqb-cbr-1.5x", "pgs", True)).to_dict()
    link = sc["topology"]["bottleneck"]
    assert link["docsis"]["pgs"] == "12500B" and link["docsis"]["max_sustained_rate"] == "50Mbps"
    assert link["qdisc"] == {"kind": "docsis_dualq", "qprot": True}


def row(bad: str, on: bool, p99: float, frac: float | None) -> dq.Row:
    return dq.Row(
        f"{bad}-pgs-{on}", bad, "pgs", on, 20.0, 9.0, p99, 25.0, frac, 7.0 if on else None, 2
    )


def test_the_findings_are_computed_from_the_rows() -> None:
    rows = [row("nqb-cbr-1.5x", True, 1.0, 0.01), row("nqb-cbr-1.5x", False, 6.0, 0.0)]
    md = dq.markdown_table(rows)
    assert "sanctioned (1.0% of its packets, the first 7 ms after it started): yes" in md
    assert "(1.00 ms against 6.00 ms): yes" in md
    rows[0].l_p99_ms = 7.0
    assert "(7.00 ms against 6.00 ms): no" in dq.markdown_table(rows)
    assert md.count("\n| nqb-cbr-1.5x |") == 2
