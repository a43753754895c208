"""`l4sim reproduce l4s-bursts`: Prague through DualPI2 loses the link behind a bursty link
where CUBIC through fq_codel does not (heistp/l4s-tests, "Underutilization with Bursty
Links"), and by how much physics says it must."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("l4sim._core")

from l4sim.experiments.l4s_bursts import report
from l4sim.experiments.l4s_bursts import runs as lb

#: 10 s at 50 Mbit/s and 20 ms, measured over the last 6 s (past slow start).
SHORT = lb.Setting(10.0, ((4.0, 10.0),))


@pytest.fixture
def short(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(lb.SETTINGS, "sweep", SHORT)
    monkeypatch.setitem(lb.SETTINGS, "acks", SHORT)


def _util(cca: str, queue: str, burst: str, where: str = lb.BOTH) -> lb.Run:
    group = "sweep" if where == lb.BOTH else "acks"
    return lb.measure(lb.Case(group, cca, queue, 50, 20, burst, where), seed=1)


@pytest.mark.usefixtures("short")
def test_4ms_bursts_cost_prague_in_dualpi2_the_link_and_not_cubic_in_fq_codel() -> None:
    """A 4 ms burst reaches the bottleneck as 4 ms of queue: past DualPI2's 1 ms step, so
    the L queue marks the burst's tail and Prague backs off until a burst fits under the
    step, about 1 ms / 4 ms of the link; under fq_codel's 5 ms target CUBIC hardly notices."""
    prague = {b: _util("prague", "dualpi2", b) for b in (lb.CLEAN, "4ms")}
    cubic = {b: _util("cubic", "fq_codel", b) for b in (lb.CLEAN, "4ms")}
    prague_drop = 1 - prague["4ms"].utilisation / prague[lb.CLEAN].utilisation
    cubic_drop = 1 - cubic["4ms"].utilisation / cubic[lb.CLEAN].utilisation
    assert prague[lb.CLEAN].utilisation > 0.95 and cubic[lb.CLEAN].utilisation > 0.95
    assert cubic_drop < 0.05
    assert prague_drop > cubic_drop + 0.5
    # utilisation ~ step / burst: 1 ms / 4 ms, within the sawtooth's slack
    assert 0.15 < prague["4ms"].utilisation < 0.4
    # the step still holds the L queue: a burst's tail is marked, not queued longer
    assert prague["4ms"].sojourn_p99_ms < 2.0
    # CUBIC's bursts queue in fq_codel instead: its median sojourn grows with them
    assert cubic["4ms"].sojourn_p50_ms > cubic[lb.CLEAN].sojourn_p50_ms + 1.0
    # a packet waits half a 4 ms gap at each slotted gate on average, data and ACKs: ~4 ms
    # more RTT for both
    for runs in (prague, cubic):
        assert runs["4ms"].srtt_mean_ms > runs[lb.CLEAN].srtt_mean_ms + 3.0


@pytest.mark.usefixtures("short")
def test_a_step_above_the_burst_or_bunched_acks_alone_keep_prague_at_the_link_rate() -> None:
    # a 5 ms step fits a 4 ms burst under it
    assert _util("prague", "dualpi2_step5ms", "4ms").utilisation > 0.9
    # ACK aggregation alone: Prague paces what each bunch of ACKs releases
    assert _util("prague", "dualpi2", "4ms", lb.ACKS).utilisation > 0.9


def test_the_slotting_sits_where_l4s_tests_put_netem() -> None:
    both = lb.scenario(lb.Case("s2", "prague", "dualpi2", 50, 20, lb.S2_SLOT)).to_dict()
    access = both["topology"]["access"]
    assert access["slot"] == access["slot_reverse"]
    assert access["slot"]["packets"] == 16
    assert both["topology"]["bottleneck"]["qdisc"]["kind"] == "dualpi2"
    data = lb.scenario(lb.Case("acks", "cubic", "fq_codel", 50, 20, "4ms", lb.DATA)).to_dict()
    assert "slot_reverse" not in data["topology"]["access"]
    assert data["topology"]["access"]["slot"] == {"min": "4ms"}
    clean = lb.scenario(lb.Case("s3", "cubic", "fq_codel", 100, 80, lb.CLEAN)).to_dict()
    assert "slot" not in clean["topology"]["access"]
    assert clean["topology"]["bottleneck"]["qdisc"]["ecn"] is False  # s3_cubic: noecn


def test_the_cases_and_the_published_numbers_they_meet() -> None:
    names = [c.name for c in lb.all_cases()]
    assert len(names) == len(set(names))
    quick = lb.cases(quick=True)
    assert {c.pair for c in quick} == {"prague/dualpi2", "cubic/fq_codel"}
    assert report.published_reduction() == 0.5
    czech = lb.Case("czech", "prague", "dualpi2", 20, 7, lb.S2_SLOT)
    assert report._published(czech) == 14.3
    assert report._published(lb.Case("czech", "prague", "dualpi2_step5ms", 40, 7, "")) == 36.9
    assert report._published(lb.Case("portland", "cubic", "dualpi2", 25, 160, "")) == 19.75
    assert math.isnan(report._published(lb.Case("s2", "prague", "dualpi2", 50, 20, "")))


def test_over_the_wifi_link_prague_in_dualpi2_loses_rate_and_keeps_its_delay() -> None:
    """One 802.11ac station (40 MHz MCS 5): the AP sends A-MPDUs of up to about 5 ms, so
    the station's DualPI2 sees bursts past its 1 ms step and Prague backs off below what
    CUBIC through mac80211's FQ-CoDel gets (measured over 5-20 s: 49.6 against 85.5
    Mbit/s), while its RTT stays near the base (21.5 ms against CUBIC's 43.2 ms, whose
    FQ-CoDel holds its 20 ms target)."""
    prague = lb.measure(lb.Case("wifi", "prague", "dualpi2", 120, 20, "mcs5"), seed=1)
    cubic = lb.measure(lb.Case("wifi", "cubic", "fq_codel", 120, 20, "mcs5"), seed=1)
    assert prague.goodput_mbps < 0.8 * cubic.goodput_mbps
    assert prague.utilisation < 0.8 * cubic.utilisation
    assert prague.srtt_mean_ms < 25.0 < cubic.srtt_mean_ms
    assert prague.sojourn_p99_ms < 2.0 and prague.marks > 0
    sc = lb.scenario(lb.Case("wifi", "cubic", "fq_codel", 120, 20, "mcs5")).to_dict()
    wifi = sc["topology"]["wifi"]
    assert (wifi["mcs"], wifi["qdisc"]["kind"], wifi["qdisc"]["target"]) == (5, "fq_codel", "20ms")
