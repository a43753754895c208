"""``l4sim reproduce classic-queue`` (issue 35's grid): its cases and scenarios, the stored
kernel measurement's schema, and the simulation side of a few cells compared with it (no
root, a few seconds). What is asserted is what could break without anyone fixing the
numbers being compared: the CSV's shape, physics (no flow above the link, a filled link)
and that the comparison runs; not how close l4sim is to the kernel (that is the table's
job, docs/fidelity.md). With root and BPF: one shortened cell through ``l4sim emulate``."""

from __future__ import annotations

import csv
import dataclasses
from importlib.resources import files

import pytest

from l4sim.experiments import classic_queue as cq
from l4sim.experiments import experiment

#: The payload share of the bottleneck: 1448 payload bytes of 1500 on the wire (20 B IP,
#: 20 B TCP, 12 B timestamps).
PAYLOAD = 1448 / 1500


def test_registered_and_the_grid_as_issue_35_asks() -> None:
    assert experiment("classic-queue").name == "classic-queue"
    grid = cq.grid_cases()
    # 2 rates x 2 RTTs x 2 dominant x 2 classic x (5 AQMs x ECN on/off + pfifo).
    assert len(grid) == 2 * 2 * 2 * 2 * 11
    assert len({c.name for c in grid}) == len(grid)
    assert [c.rate_mbps for c in grid[: len(grid) // 2]] == [50] * (len(grid) // 2)
    assert len(cq.cases(["10Mbps", "pie", "dctcp"])) == 2 * 2 * 2
    assert [c.name for c in cq.cases(["issue35"])] == [
        "issue35-pie",
        "issue35-fq_codel1",
        "issue35-pfifo300",
    ]
    with pytest.raises(ValueError, match="unknown groups"):
        cq.cases(["100Mbps"])


def test_scenarios_mark_as_the_grid_says() -> None:
    def q(**kw: object) -> dict[str, object]:
        return cq.qdisc_for(dataclasses.replace(cq.grid_cases()[0], **kw))

    assert q(qdisc="fq_codel1", ecn=False) == {"kind": "fq_codel", "flows": 1, "ecn": False}
    # Beside DCTCP the AQM marks even when the classic flow has no ECN.
    assert q(qdisc="pie", ecn=False, flows=("dctcp", "cubic"))["ecn"] is True
    red = q(qdisc="ared", ecn=True, rate_mbps=10)
    assert red["limit"] == "100000B" and red["adaptive"] is True and red["variant"] == "linux"
    sc = cq.scenario(cq.Case(10, 40, "codel", True, ("bbr", "newreno")))
    # 40 ms base RTT: 2 x (1 + 18 + 1) ms; BBR without ECN, the classic flow with it.
    assert sc.topology.bottleneck.delay == 18_000_000
    assert [f.ecn for f in sc.flows] == [False, True]


def test_stored_kernel_csv_has_its_schema() -> None:
    text = (files("l4sim") / "data" / "reference" / cq.REFERENCE).read_text()
    head = [x for x in text.splitlines() if x.startswith("#")]
    assert any("Measured" in x and "Linux" in x for x in head)
    assert any("emulate_classic_queue.py" in x for x in head)
    rows = list(csv.DictReader(x for x in text.splitlines() if not x.startswith("#")))
    known = {c.name: c for c in cq.cases(cq.GROUPS)}
    assert rows
    runs: dict[tuple[str, str], list[dict[str, str]]] = {}
    for r in rows:
        runs.setdefault((r["case"], r["run"]), []).append(r)
    for (name, _), flows in runs.items():
        case = known[name]
        assert [f["cca"] for f in flows] == list(case.flows)
        total = sum(float(f["mbps"]) for f in flows)
        # Goodput at the receiver cannot exceed the link's payload rate (1 % for the
        # window's edges: samples 100 ms apart over a 15 s window).
        assert 0 < total <= case.rate_mbps * PAYLOAD * 1.01, name


def test_simulated_cells_compare_with_the_kernel(tmp_path: object) -> None:
    kern = cq.kernel_rows()
    names = [c.name for c in cq.grid_cases() if c.name in kern][:1] or [cq.grid_cases()[0].name]
    picks = [c for c in cq.grid_cases() if c.name in names]
    picks += [cq.Case(10, 10, "pfifo", False, ("dctcp", "newreno"))]
    for case in picks:
        sim = cq._simulate(case)
        total = sum(sim["mbps"])
        # Both flows bulk from t = 0: over [5 s, 20 s] the link is full, and the payload
        # rate bounds it (1 % for the window's edges).
        assert 0.9 * case.rate_mbps * PAYLOAD <= total <= case.rate_mbps * PAYLOAD * 1.01
        rows = cq.compare(case, sim, kern.get(case.name, []))
        assert [r.cca for r in rows] == list(case.flows)
        if case.name in kern:
            assert all(r.kernel_mbps is not None and r.err is not None for r in rows)
    text = cq.markdown_table(rows)
    assert text.startswith("| Mbit/s | RTT ms |")
    assert "(mean of 4 seeds)" in text.splitlines()[0]


def test_l4sim_side_is_the_mean_of_its_seeds() -> None:
    """Each seed is its own run (PIE's draws differ), and the row is their mean."""
    case = cq.Case(10, 10, "pie", False, ("bbr", "cubic"))
    sim = cq._simulate(case, seeds=[1, 2])
    one, two = (cq._simulate(case, seeds=[s]) for s in (1, 2))
    assert sim["seeds"] == [1, 2] and len(sim["runs"]) == 2
    assert one["mbps"] != two["mbps"]
    for i in range(2):
        assert sim["mbps"][i] == pytest.approx((one["mbps"][i] + two["mbps"][i]) / 2)
    assert cq.compare(case, sim, [])[0].sim_seeds == 2


@pytest.mark.skipif(
    __import__("os").geteuid() != 0, reason="needs root to create network namespaces"
)
def test_one_cell_through_the_kernel() -> None:
    """DCTCP (BPF) + CUBIC with ECN through PIE at 50 Mbit/s, 10 ms, 4 s: the benchmark's
    path (emulate, then measure) gives both flows a rate within the link."""
    from test_emulate_bpf import REASON

    if REASON is not None:
        pytest.skip(REASON)
    from l4sim.emulate import emulate

    case = cq.Case(50, 10, "pie", True, ("dctcp", "cubic"), 4.0, 1.0)
    res = emulate(cq.scenario(case))
    m = cq.measure(case, res.summary, res.flows)
    assert all(x > 0 for x in m["mbps"])
    # The kernel's rates are what the receiving application read between two samples taken
    # every sample_interval of wall time, so each edge of the window may be off by up to one
    # interval (the reader drains what TCP delivered earlier, e.g. when the 2-core machine is
    # busy): the link's payload over the window plus two intervals bounds the sum (measured
    # 2.7 % over the window alone once, with the suite running beside it).
    iv = cq.scenario(case).sample_interval / 1e9
    window = case.duration_s - case.measure_from_s
    assert sum(m["mbps"]) <= case.rate_mbps * PAYLOAD * (window + 2 * iv) / window
    assert res.summary["emulation"]["scalable_tcp"] == ["l4sim_dctcp"]
