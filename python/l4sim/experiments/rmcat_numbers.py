"""The numbers ``rmcat``'s headline and docs page quote, computed from a full run's
``table.csv`` and ``l4s.csv`` (:func:`facts`, :func:`headline`)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from l4sim.experiments._tables import read_csv, span
from l4sim.experiments.rmcat_l4s import record

#: The variable-capacity cases, the congestion-controlled senders and the L4S ones.
VARIABLE = ("5.1", "5.2", "5.3")
CC = ("scream-l4s", "scream-classic", "udp-prague")
SCREAM = ("scream-l4s", "scream-classic")
L4S_SENDERS = ("scream-l4s", "udp-prague")
AQMS = ("fq_codel", "dualpi2")

Rows = list[dict[str, str]]
#: RMCAT's case definitions (``l4sim.experiments.rmcat.RMCAT``), passed in.
Cases = dict[str, dict[str, Any]]


def _fits(row: dict[str, str], match: dict[str, str | tuple[str, ...]]) -> bool:
    """Whether ``row``'s columns take the values in ``match`` (a tuple: any of them)."""
    return all(row[k] in v if isinstance(v, tuple) else row[k] == v for k, v in match.items())


def _pick(rows: Rows, key: str, scale: float = 1.0, **match: str | tuple[str, ...]) -> list[float]:
    """Column ``key`` (times ``scale``) of the ``match``ing rows where it has a value."""
    return [scale * float(r[key]) for r in rows if _fits(r, match) and r[key]]


def mean_capacity(case: dict[str, Any]) -> float:
    """The time-weighted mean of an RMCAT case's forward capacity (Mbit/s)."""
    steps = [*case["fwd"], (case["duration"], 0.0)]
    spans = itertools.pairwise(steps)
    return sum((t1 - t0) * c for (t0, c), (t1, _) in spans) / case["duration"]


def _of_equal(rows: Rows, cases: Cases, test: str, **match: str | tuple[str, ...]) -> list[float]:
    """The smallest media flow's share of an equal share of the media's total (%)."""
    n = len(cases[test]["flows"])
    return [
        100 * float(r["media_min_mbps"]) * n / float(r["media_mbps"])
        for r in rows
        if r["test"] == test and _fits(r, match)
    ]


def _variable_facts(rows: Rows) -> dict[str, str]:
    """The variable-capacity cases (5.1-5.3): the fixed-rate source against SCReAM."""

    def var(key: str, scale: float = 1.0, **m: str | tuple[str, ...]) -> list[float]:
        return _pick(rows, key, scale, test=VARIABLE, **m)

    return {
        "none_fifo_loss_pct": span(var("loss_frac", 100, sender="none", queue="fifo"), ".0f"),
        "none_fifo_queue_p99_s": span(
            var("queue_p99_ms", 1e-3, sender="none", queue="fifo"), ".1f"
        ),
        "none_fifo_p99_ms": span(var("p99_ms", sender="none", queue="fifo"), ".0f"),
        "none_dualpi2_queue_p99_ms": span(
            var("queue_p99_ms", sender="none", queue="dualpi2"), ".0f"
        ),
        "none_fq_codel_queue_p99_s": span(
            var("queue_p99_ms", 1e-3, sender="none", queue="fq_codel"), ".2f"
        ),
        "scream_fifo_loss_pct": span(
            var("loss_frac", 100, sender="scream-l4s", queue="fifo"), ".1f"
        ),
        "scream_fifo_p99_ms": span(var("p99_ms", sender="scream-l4s", queue="fifo"), ".0f"),
        "scream_fifo_queue_p99_ms": span(
            var("queue_p99_ms", sender="scream-l4s", queue="fifo"), ".0f"
        ),
        "scream_aqm_p99_ms": span(var("p99_ms", sender=SCREAM, queue=AQMS), ".0f"),
        "scream_l4s_dualpi2_p99_ms": span(
            var("p99_ms", sender="scream-l4s", queue="dualpi2"), ".0f"
        ),
    }


def _sharing_facts(rows: Rows, cases: Cases) -> dict[str, str]:
    """Sharing (5.4, 5.5), the TCP cases (5.6, 5.7) and the L4S senders' share of DualPI2
    at a few Mbit/s (5.1, 5.2, 5.4)."""
    few = [
        (100 * float(r["media_mbps"]) / mean_capacity(cases[r["test"]]), float(r["media_mbps"]))
        for r in rows
        if _fits(r, {"test": ("5.2", "5.4"), "sender": L4S_SENDERS, "queue": "dualpi2"})
    ]

    def of_equal(test: str, **m: str | tuple[str, ...]) -> str:
        return span(_of_equal(rows, cases, test, **m), ".0f")

    return {
        "share_5.4_pct": of_equal("5.4", sender=CC, queue=("fifo", "fq_codel")),
        "l4s_5.6_dualpi2_mbps": span(
            _pick(rows, "media_mbps", test="5.6", sender=L4S_SENDERS, queue="dualpi2"), ".2f"
        ),
        "cc_5.6_fq_codel_mbps": span(
            _pick(rows, "media_mbps", test="5.6", sender=CC, queue="fq_codel"), ".2f"
        ),
        "scream_5.7_fq_codel_mbps": span(
            _pick(rows, "media_mbps", test="5.7", sender=SCREAM, queue="fq_codel"), ".2f"
        ),
        "udp_prague_5.7_mbps": span(
            _pick(rows, "media_mbps", test="5.7", sender="udp-prague", queue=("fifo", "fq_codel")),
            ".2f",
        ),
        "udp_prague_5.7_late_pct": span(
            _pick(
                rows, "late_frac", 100, test="5.7", sender="udp-prague", queue=("fifo", "fq_codel")
            ),
            ".0f",
        ),
        "none_5.7_late_pct": span(_pick(rows, "late_frac", 100, test="5.7", sender="none"), ".0f"),
        "l4s_few_mbps_pct": span([pct for pct, _ in few], ".0f"),
        "l4s_few_mbps": span([mbps for _, mbps in few], ".1f"),
        "mean_capacity_5.1": f"{mean_capacity(cases['5.1']):.2f}",
        "mean_capacity_5.2": f"{mean_capacity(cases['5.2']):.1f}",
        "mean_capacity_5.4": f"{mean_capacity(cases['5.4']):.1f}",
        "rtt_fifo_scream_pct": of_equal("5.5", sender="scream-l4s", queue="fifo"),
        "rtt_fifo_udp_prague_pct": of_equal("5.5", sender="udp-prague", queue="fifo"),
        "rtt_fq_codel_pct": of_equal("5.5", sender=CC, queue="fq_codel"),
        "rtt_dualpi2_pct": of_equal("5.5", sender=CC, queue="dualpi2"),
    }


def _l4s_facts(l4s: Rows) -> dict[str, str]:
    """SCReAM v2 beside 0-4 TCP Prague flows against its test record: alone, beside 1-4 at
    5-50 ms with either rules, beside one with the record's rules, Prague's rates at 100 ms,
    frame and queue delay."""
    beside = [r for r in l4s if r["prague"] != "0" and int(r["rtt_ms"]) <= 50]
    old = "2024-10-31"
    return {
        "alone_vs_record": span(_pick(l4s, "ratio", prague="0"), ".2f"),
        "beside_latest_vs_record": span(_pick(beside, "ratio", rules="latest"), ".2f"),
        "beside_2024_vs_record": span(_pick(beside, "ratio", rules=old), ".2f"),
        "one_prague_2024_mbps": span(_pick(beside, "scream_mbps", rules=old, prague="1"), ".0f"),
        "one_prague_record_mbps": span(_pick(beside, "record_mbps", rules=old, prague="1"), ".0f"),
        "prague_at_100ms_mbps": span(
            [float(x) for r in l4s if r["rtt_ms"] == "100" for x in r["prague_mbps"].split()],
            ".0f",
        ),
        "l4s_frame_p99_ms": span(_pick(l4s, "p99_ms"), ".0f"),
        "l4s_queue_p99_ms": span(_pick(l4s, "queue_p99_ms"), ".1f"),
    }


def facts(out_dir: Path, cases: Cases) -> dict[str, str]:
    """The spans the docs page quotes, from ``table.csv`` and ``l4s.csv`` (``cases``:
    RMCAT's case definitions)."""
    rows = read_csv(out_dir / "table.csv")
    return {
        **_variable_facts(rows),
        **_sharing_facts(rows, cases),
        **_l4s_facts(read_csv(out_dir / "l4s.csv")),
    }


def headline(out_dir: Path) -> str:
    """What a full run shows, from its ``table.csv``: in the variable-capacity cases (5.1-5.3)
    through the RFC's FIFO, the fixed-rate source's loss and frame delay p99 against SCReAM's
    (L4S mode); SCReAM's rate beside a long TCP flow (5.6, FIFO) and beside four TCP Prague
    flows at 25 ms."""
    rows = read_csv(out_dir / "table.csv")
    f = _variable_facts(rows)
    tcp = next(
        r for r in rows if _fits(r, {"test": "5.6", "sender": "scream-l4s", "queue": "fifo"})
    )
    four = {
        r["rules"]: float(r["media_mbps"])
        for r in rows
        if (r["test"], r["prague"], r["rtt_ms"]) == ("l4s", "4", "25")
    }
    rec4 = record()[(25, 4)]
    return (
        f"Through RFC 8867's 300 ms FIFO as the capacity varies (5.1-5.3), media with no "
        f"congestion control loses {f['none_fifo_loss_pct']} % of its packets, "
        f"frame delay p99 {f['none_fifo_p99_ms']} ms; SCReAM v2 loses "
        f"{f['scream_fifo_loss_pct']} %, p99 {f['scream_fifo_p99_ms']} ms. It falls short "
        f"beside TCP: {float(tcp['media_mbps']):.2f} Mbit/s of 2 beside a NewReno flow (5.6), "
        f"{four['latest']:.1f} Mbit/s beside four TCP Prague flows (DualPI2, 100 Mbit/s, "
        f"25 ms; {four['2024-10-31']:.1f} with the rules of SCReAM's test record, whose "
        f"figure is {rec4:g})."
    )
