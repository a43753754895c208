"""Paper 004's FQ-L4S classifier as the authors' code has it (issue 35, item 5).

The authors' ``dn_sched_l4s`` (the listing of the paper's Algorithm 5) sends a packet to the L
queue of its pair when ``(ip->ip_tos & IPTOS_ECN_MASK) != 0``: ECT(0), ECT(1) and CE all go
there, Not-ECT stays Classic. ``aqm-004`` runs that classifier (``ecn_mask = "any_ect"``) by
default; the Rust unit tests in ``qdisc/fq_l4s.rs`` check the codepoints one by one.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("l4sim._core")

from l4sim.engine.run import run
from l4sim.experiments import aqm_comparison
from l4sim.scenario import Scenario


def _one_flow(case: aqm_comparison.Case) -> dict[str, Any]:
    """The case's testbed with its first NewReno flow alone for 3 s."""
    d = aqm_comparison.scenario_dict(case)
    d["duration"] = "3s"
    d["flows"] = [{**d["flows"][0], "stop": "3s"}]
    return d


def _classes(case: aqm_comparison.Case) -> dict[str, dict[str, Any]]:
    summary = run(Scenario.parse(_one_flow(case))).summary
    q = next(q for q in summary["queues"] if q["link"] == "r0->h1")
    return {c["qdisc"]: c for c in q["classes"]}


def test_aqm004_runs_the_authors_any_ect_classifier_by_default() -> None:
    case = aqm_comparison.Case("fq_l4s", "10Mbps", True)
    assert case.classifier == "any_ect" and case.name == "fq_l4s-10Mbps-ecn-newreno"
    assert (
        aqm_comparison.scenario_dict(case)["topology"]["bottleneck"]["qdisc"]["ecn_mask"]
        == "any_ect"
    )
    other = aqm_comparison.Case("fq_l4s", "10Mbps", True, classifier="l4s_ect")
    assert other.name == "fq_l4s-10Mbps-ecn-newreno-l4sect"
    assert (
        aqm_comparison.scenario_dict(other)["topology"]["bottleneck"]["qdisc"]["ecn_mask"]
        == "l4s_ect"
    )
    # A qdisc given explicitly (a3c-004's) is taken as it is.
    given = {"kind": "fq_l4s", "pairs": 3}
    qdisc = aqm_comparison.scenario_dict(case, 1, given)["topology"]["bottleneck"]["qdisc"]
    assert "ecn_mask" not in qdisc
    with pytest.raises(ValueError, match="classifier"):
        aqm_comparison.cases(classifier="ect1")


def test_newreno_ect0_data_is_l4s_under_any_ect_and_classic_under_l4s_ect() -> None:
    # NewReno with ECN sends its new data ECT(0) and its retransmissions Not-ECT (RFC 3168
    # §6.1.5; FreeBSD's tcp_output and Linux alike): under the authors' classifier the data
    # goes to the L queues and the retransmissions to the Classic ones.
    any_ect = _classes(aqm_comparison.Case("fq_l4s", "10Mbps", True))
    assert any_ect["L4S"]["packets"] > any_ect["Classic"]["packets"] > 0
    assert any_ect["L4S"]["ecn_marks"] > 0  # ECT(0) is marked there, not only dropped
    l4s_ect = _classes(aqm_comparison.Case("fq_l4s", "10Mbps", True, classifier="l4s_ect"))
    assert l4s_ect["L4S"]["packets"] == 0 and l4s_ect["Classic"]["packets"] > 0
    # ECN off: every packet is Not-ECT, so both classifiers agree: all Classic.
    off = _classes(aqm_comparison.Case("fq_l4s", "10Mbps", False))
    assert off["L4S"]["packets"] == 0
