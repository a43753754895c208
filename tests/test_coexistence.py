"""`l4sim reproduce coexistence --quick`: pairs of senders through DualPI2 and one RFC 3168
queue, with the contrasts the L4S literature expects."""

from __future__ import annotations

import csv

import pytest

pytest.importorskip("l4sim._core")

from l4sim import cli
from l4sim.experiments import coexistence


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], dict[str, str]]:
    out = tmp_path_factory.mktemp("coex")
    with pytest.raises(SystemExit) as stop:
        cli.main(["reproduce", "coexistence", "--quick", "-q", "--jobs", "1", "--out", str(out)])
    assert stop.value.code == 0
    assert (out / "share_dualpi2.png").stat().st_size > 10_000
    assert (
        "single fq_codel queue Prague's share against CUBIC or Reno is 0."
        in (out / "findings.md").read_text()
    )
    with open(out / "table.csv") as fh:
        return {(r["a"], r["b"], r["queue"]): r for r in csv.DictReader(fh)}


def test_the_quick_grid_and_its_bookkeeping(
    rows: dict[tuple[str, str, str], dict[str, str]],
) -> None:
    assert set(rows) == {
        (a, "cubic", q) for a in ("prague", "bbr") for q in ("dualpi2", "fq_codel1")
    }
    for r in rows.values():
        a, b = float(r["a_mbps"]), float(r["b_mbps"])
        # two long flows keep a 10 Mbit/s link busy (goodput is payload: 1448 of 1500 B)
        assert (a + b) / 10 > 0.9
        assert float(r["a_share"]) == pytest.approx(a / (a + b), abs=1e-9)
        assert 0.5 <= float(r["jain"]) <= 1.0


def test_dualpi2_keeps_prague_out_of_cubics_queue(
    rows: dict[tuple[str, str, str], dict[str, str]],
) -> None:
    """RFC 9332: the L queue's delay is a small fraction of the classic queue's (its step
    marks at 1 ms; the classic PI targets 15 ms)."""
    r = rows[("prague", "cubic", "dualpi2")]
    assert float(r["a_qdelay_p99_ms"]) < 0.5 * float(r["b_qdelay_p99_ms"])
    assert int(float(r["a_marks"])) > 0 and int(float(r["b_marks"])) == 0


def test_prague_dominates_cubic_in_one_rfc3168_queue(
    rows: dict[tuple[str, str, str], dict[str, str]],
) -> None:
    """The harm L4S's critics measured (heistp/l4s-tests scenario 6: Prague:CUBIC 20:1 to
    60:1 in a single fq_codel queue at 50 Mbit/s): Prague takes most of the link."""
    assert float(rows[("prague", "cubic", "fq_codel1")]["a_share"]) > 0.8


def test_cases_cover_each_pair_once_and_filter_by_group() -> None:
    full = coexistence.cases()
    n = len(coexistence.CCAS)
    per_point = n * (n + 1) // 2
    assert len(full) == per_point * len(coexistence.QUEUES) * 9
    assert len({c.name for c in full}) == len(full)
    only = coexistence.cases(["prague", "cubic", "pie", "100M", "40ms"])
    assert [c.name for c in only] == [
        "prague-prague-pie-100M-40ms",
        "prague-cubic-pie-100M-40ms",
        "cubic-cubic-pie-100M-40ms",
    ]
    # 100 Mbit/s x 40 ms = 500 000 B = 333 packets of 1500 B; five of them
    assert coexistence.qdisc_for("fifo5bdp", 100, 40) == {"kind": "fifo", "limit": "1665p"}


def test_one_against_many_quick_form(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The 1-vs-N case's quick form (what ``--quick`` runs beside the pairs): one flow
    against four of CUBIC and back, in DualPI2. BBR v1 is the contrast that could fail: its
    share does not shrink with the number of loss-based flows it meets (Ware et al., IMC
    2019, "Modeling BBR's Interactions with Loss-Based Congestion Control": one BBR flow
    takes ~40 % of a deep buffer against any number of CUBIC flows), so one BBR flow gets
    well over its fifth, and one CUBIC flow against four BBR flows well under it."""
    out = tmp_path_factory.mktemp("coex1vn")
    coexistence.reproduce(out, only=["1vN"], quick=True, figures=False)
    assert not (out / "table.csv").exists()  # the pairs were not named
    with open(out / "one_vs_n.csv") as fh:
        rows = {(r["a"], r["b"]): r for r in csv.DictReader(fh)}
    assert set(rows) == {
        ("prague", "cubic"),
        ("bbr", "cubic"),
        ("cubic", "prague"),
        ("cubic", "bbr"),
    }
    for r in rows.values():
        assert r["queue"] == "dualpi2" and r["n"] == "4"
        a, b = float(r["a_mbps"]), float(r["b_mbps"])
        assert float(r["a_share"]) == pytest.approx(a / (a + 4 * b), abs=1e-9)
        assert float(r["a_over_fair"]) == pytest.approx(5 * float(r["a_share"]), abs=1e-9)
        assert float(r["utilisation"]) > 0.9
        assert 0.2 <= float(r["jain"]) <= 1.0
    assert float(rows[("bbr", "cubic")]["a_over_fair"]) > 2
    assert float(rows[("cubic", "bbr")]["a_over_fair"]) < 0.5
    assert float(rows[("bbr", "cubic")]["jain"]) < 0.7


def test_one_against_many_cases_and_groups() -> None:
    n = len(coexistence.CCAS)
    many = coexistence.many_cases()
    assert len(many) == n * (n - 1) * len(coexistence.MANY_QUEUES)
    assert {(c.rate_mbps, c.rtt_ms, c.n) for c in many} == {(100, 40, 4)}
    assert coexistence.cases(["1vN"]) == []  # naming 1vN runs it instead of the pairs
    assert coexistence.many_cases(["pie"]) == [] and coexistence.many_cases(["10M"]) == []
    assert [c.name for c in coexistence.many_cases(["1vN", "cubic", "newreno", "dualpi2"])] == [
        "cubic-4xnewreno-dualpi2-100M-40ms",
        "newreno-4xcubic-dualpi2-100M-40ms",
    ]
    flows = coexistence.scenario(many[0]).flows
    assert [f.cca.kind for f in flows] == [many[0].a] + [many[0].b] * 4
