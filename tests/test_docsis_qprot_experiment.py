"""``l4sim reproduce docsis-qprot``: its grid, its scenarios and its tables computed from
rows (the runs themselves are checked by the quick-output fingerprint, tests/test_results_guard.py,
and the model by tests/test_docsis_link.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("l4sim._core")

from l4sim.experiments import docsis_qprot as dq
from l4sim.experiments import experiment


def test_the_grid_and_its_subsets() -> None:
    every = dq.cases()
    length = [c for c in every if c.estimate == "length"]
    assert len(every) == (len(dq.BAD) + len(dq.LENGTH_BAD)) * len(dq.GRANTS) * 2
    assert {c.bad for c in length} == set(dq.LENGTH_BAD)
    assert len({c.name for c in every}) == len(every)
    quick = dq.cases(quick=True)
    assert {c.grants for c in quick} == {"pgs"} and len(quick) == 8
    assert {c.estimate for c in quick} == {"virtual"}
    only = dq.cases(["nqb-reno", "best-effort", "qprot"])
    assert [c.name for c in only] == ["nqb-reno-best-effort-qprot"]
    only = dq.cases(["nqb-cbr-1.5x-link", "pgs", "qprot", "length"])
    assert [c.name for c in only] == ["nqb-cbr-1.5x-link-pgs-qprot-length"]
    with pytest.raises(ValueError, match="length estimate only beside"):
        dq.cases(["nqb-reno", "length"])
    assert experiment("docsis-qprot").name == "docsis-qprot"


def test_bad_flows_are_what_their_names_say() -> None:
    assert dq.bad_flow("none") is None
    cbr = dq.bad_flow("nqb-cbr-3x")
    assert cbr is not None and cbr["rate"] == "50Mbps" and cbr["nqb"] and cbr["ecn"] == "not_ect"
    ect1 = dq.bad_flow("ect1-cbr-1.5x")
    assert ect1 is not None and ect1["rate"] == "25Mbps" and ect1["ecn"] == "ect1"
    assert "nqb" not in ect1
    link = dq.bad_flow("nqb-cbr-1.5x-link")
    assert link is not None and link["rate"] == "75Mbps" and link["nqb"]
    link = dq.bad_flow("ect1-cbr-1.5x-link")
    assert link is not None and link["rate"] == "75Mbps" and link["ecn"] == "ect1"
    reno = dq.bad_flow("nqb-reno")
    assert reno is not None and reno["cca"] == "newreno" and reno["nqb"]
    sc = dq.scenario(dq.Case("nqb-cbr-1.5x", "pgs", True)).to_dict()
    link = sc["topology"]["bottleneck"]
    assert link["docsis"]["pgs"] == "1250B" and link["docsis"]["max_sustained_rate"] == "50Mbps"
    assert link["qdisc"] == {"kind": "docsis_dualq", "qprot": True}
    sc = dq.scenario(dq.Case("none", "pgs", False, "length")).to_dict()
    assert sc["topology"]["bottleneck"]["qdisc"]["l_delay"] == "queue"


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


def test_the_link_relative_flow_is_held_against_1_ms_plus_the_map_delay() -> None:
    alone = row("none", True, 1.5, None)
    on, off = row("nqb-cbr-1.5x-link", True, 2.4, 0.4), row("nqb-cbr-1.5x-link", False, 9.9, 0.0)
    found = dq.findings([alone, on, off])
    assert len(found) == 1
    assert found[0].endswith("MAP-induced delay (1.50 ms alone): 2.50 ms: yes")
    on.l_p99_ms = 2.6
    assert dq.findings([alone, on, off])[0].endswith("2.50 ms: no")
    # A fair-share-relative flow is not held to that bound.
    fair = [row("nqb-cbr-1.5x", True, 9.0, 0.01), row("nqb-cbr-1.5x", False, 9.0, 0.0)]
    assert "MAP-induced" not in dq.findings([alone, *fair])[0]


def test_the_bounds_the_page_quotes_come_from_the_baseline_rows(tmp_path: Path) -> None:
    rows = {
        "none-pgs-qprot": {"l_p99_ms": "1.49"},
        "none-best-effort-qprot-length": {"l_p99_ms": "3.99"},
        "none-best-effort-qprot": {"l_p99_ms": ""},
    }
    assert dq.bounds(rows) == {"bound_pgs": "2.49", "bound_best_effort_length": "4.99"}


def test_the_ns3_cross_check_runs_dctcp_as_the_ns3_program_does(monkeypatch) -> None:
    """benchmarks/ns3_docsis_qprot.py's l4sim DCTCP flows send ECT(1) and are paced, as its
    ns-3 program's `TcpDctcp` flows are: unpaced, DCTCP gets about half the rate in either
    simulator, so a mismatch here would read as a difference between the simulators."""
    import importlib

    root = Path(__file__).resolve().parents[1]
    program = (root / "benchmarks" / "ns3_docsis" / "docsis-qprot.cc").read_text(encoding="utf-8")
    assert "bool pacing = true;" in program
    assert 'TcpSocketState::EnablePacing", BooleanValue(pacing)' in program
    assert 'TcpDctcp::UseEct0", BooleanValue(false)' in program
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    bench = importlib.import_module("ns3_docsis_qprot")
    flow = dq.scenario(dq.Case("none", "pgs", True), 1, bench.DCTCP).flows[0]
    assert (flow.cca.kind, flow.ect1, flow.pacing) == ("dctcp", True, True)
