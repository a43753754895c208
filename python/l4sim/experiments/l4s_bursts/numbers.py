"""The numbers ``l4s-bursts``' headline and docs page quote, computed from a full run's
``table.csv`` (:func:`facts`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from l4sim.experiments._tables import read_rows, span
from l4sim.experiments.l4s_bursts.report import Row, law_points

_S2 = "s2-{}-50M-20ms-netem16"


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def facts(out_dir: Path) -> dict[str, str]:
    """Scenario 2 at 20 ms (each pair's utilisation, its drop against the unslotted run,
    Prague / DualPI2's shortfall against CUBIC / fq_codel), the step / burst law, the raised
    steps, the real-world tests against the published goodputs, ACK aggregation, the
    sweep's sojourns and the Wi-Fi link, as the page writes them."""
    rows = read_rows(out_dir / "table.csv", Row)
    case = {r.case: r for r in rows}
    prague, cubic = case[_S2.format("prague-dualpi2")], case[_S2.format("cubic-fq_codel")]

    def pick(test: Callable[[Row], bool]) -> list[Row]:
        return [r for r in rows if test(r)]

    real = pick(lambda r: r.group in ("czech", "portland"))
    alone = {(r.group, r.rate_mbps): r for r in real if r.pair == "cubic/fq_codel"}
    default = [r for r in real if r.pair == "prague/dualpi2"]

    def err(r: Row) -> float:
        return r.goodput_mbps / r.published_goodput_mbps - 1

    def signed(rs: list[Row]) -> str:
        return " and ".join(f"{100 * err(r):+.0f}" for r in rs) + " %"

    def published_vs_cubic(r: Row) -> float:
        return r.published_goodput_mbps / alone[(r.group, r.rate_mbps)].published_goodput_mbps

    czech_ok = pick(lambda r: r.group == "czech" and r.pair != "prague/dualpi2")
    portland = [r for r in real if r.group == "portland"]
    sweep = {
        p: pick(lambda r, p=p: r.group == "sweep" and r.pair == p)
        for p in ("prague/dualpi2", "cubic/fq_codel")
    }
    acks = {(r.pair, r.where): r for r in pick(lambda r: r.group == "acks")}
    wifi = pick(lambda r: r.group == "wifi")
    out = {
        "s2_prague_util": f"{prague.utilisation:.2f}",
        "s2_cubic_util": f"{cubic.utilisation:.2f}",
        "s2_less": _pct(1 - prague.util_vs_cubic_fq_codel),
        "s2_prague_drop": _pct(prague.util_drop),
        "s2_cubic_drop": _pct(cubic.util_drop),
        "law_1ms": span([x for x, _ in law_points(rows, "dualpi2")], ".2f"),
        "law_5ms": span([x for x, _ in law_points(rows, "dualpi2_step5ms")], ".1f"),
        "czech_within": span([100 * abs(err(r)) for r in czech_ok], ".0f", " to "),
        "portland_cubic_within": span(
            [100 * abs(err(r)) for r in portland if r.cca == "cubic"], ".0f", " to "
        ),
        "portland_cubic_fq_codel_err": signed([r for r in portland if r.pair == "cubic/fq_codel"]),
        "portland_cubic_dualpi2_err": signed([r for r in portland if r.pair == "cubic/dualpi2"]),
        "prague_of_published": span([100 * (1 + err(r)) for r in default], ".0f", " to "),
        "real_prague_vs_cubic": span([r.util_vs_cubic_fq_codel for r in default], ".2f", " to "),
        "published_prague_vs_cubic": span([published_vs_cubic(r) for r in default], ".2f", " to "),
        "acks_prague_data_drop": _pct(acks[("prague/dualpi2", "data")].util_drop),
        "acks_prague_acks_drop": _pct(acks[("prague/dualpi2", "acks")].util_drop),
        "acks_cubic_drop": span(
            [100 * acks[("cubic/fq_codel", w)].util_drop for w in ("data", "acks")], ".0f", " to "
        )
        + " %",
        "sweep_prague_sojourn_ms": span(
            [r.sojourn_mean_ms for r in sweep["prague/dualpi2"]], ".1f"
        ),
        "sweep_cubic_sojourn_ms": span(
            [r.sojourn_mean_ms for r in sweep["cubic/fq_codel"]], ".1f", " to "
        ),
        "wifi_prague_vs_cubic": span(
            [r.util_vs_cubic_fq_codel for r in wifi if r.pair == "prague/dualpi2"], ".2f"
        ),
        "wifi_prague_srtt_above_base_ms": span(
            [r.srtt_mean_ms - r.rtt_ms for r in wifi if r.pair == "prague/dualpi2"], ".1f"
        ),
        "wifi_cubic_srtt_above_base_ms": span(
            [r.srtt_mean_ms - r.rtt_ms for r in wifi if r.pair == "cubic/fq_codel"], ".0f"
        ),
    }
    for r in real:
        if r.pair == "prague/dualpi2" and r.group == "czech":
            out[f"czech_{r.rate_mbps}M_prague_vs_cubic"] = f"{r.util_vs_cubic_fq_codel:.2f}"
            out[f"czech_{r.rate_mbps}M_published_prague_vs_cubic"] = f"{published_vs_cubic(r):.2f}"
    for r in pick(lambda r: r.group == "step"):
        out[f"step_{r.queue.removeprefix('dualpi2_step')}"] = f"{r.utilisation:.2f}"
    return out
