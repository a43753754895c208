"""``l4s-bursts``' rows, table, findings and figure, each computed from the runs."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from l4sim.experiments import reference
from l4sim.experiments.l4s_bursts.runs import (
    CLEAN,
    GROUPS,
    PAIRS,
    S2_SLOT,
    S3_SLOT,
    SETTINGS,
    SWEEP_GAPS_MS,
    Case,
    Run,
)

REFERENCE = "l4s_tests_bursts.csv"
TABLE = "table.md"
FINDINGS = "findings.md"
#: The group whose unslotted runs a group's slotted runs are compared with.
_CLEAN_GROUP = {"acks": "sweep"}
_BASELINE = ("cubic", "fq_codel")

HEADINGS = {
    "s2": "Scenario 2: 50 Mbit/s cut to 25 at 30 s, netem `slot 800us 5ms packets 16`",
    "s3": "Scenario 3: 100 Mbit/s varying (50, 10, 90, 5), netem `slot 800us 5ms packets 32`",
    "sweep": "Burst size sweep: 50 Mbit/s, 20 ms, slots a fixed gap apart",
    "acks": "ACK aggregation: 4 ms bursts on the data only or the ACKs only",
    "czech": "Real-world Czech test (7 ms RTT), Scenario 2's slotting as the wireless link",
    "portland": "Real-world Portland test (160 ms RTT), Scenario 2's slotting as the wireless link",
    "step": "Scenario 2's bursts, 20 ms, DualPI2's step raised",
    "wifi": "The Wi-Fi link instead of netem: one 802.11ac station (40 MHz MCS 5, 80 MHz MCS 9), "
    "20 ms; utilisation is the AP's airtime to the station",
}


@dataclass
class Row:
    case: str
    group: str
    cca: str
    queue: str
    rate_mbps: int
    rtt_ms: int
    burst: str
    where: str
    utilisation: float
    utilisation_min: float
    utilisation_max: float
    utilisation_first: float
    utilisation_last: float
    goodput_mbps: float
    sojourn_p50_ms: float
    sojourn_p99_ms: float
    sojourn_mean_ms: float
    srtt_mean_ms: float
    srtt_p99_ms: float
    marks: float
    drops: float
    seeds: int
    #: One less the utilisation over the same pair's unslotted run (NaN: none run).
    util_drop: float
    #: The utilisation over CUBIC / fq_codel's under the same bursts (NaN: not run).
    util_vs_cubic_fq_codel: float
    #: The study's goodput for this case (NaN: it gives none).
    published_goodput_mbps: float

    @property
    def pair(self) -> str:
        return f"{self.cca}/{self.queue}"

    @property
    def gap_ms(self) -> float:
        if self.burst == CLEAN:
            return 0.0
        return float(self.burst.removesuffix("ms")) if self.burst.endswith("ms") else math.nan


def _published(case: Case) -> float:
    """The study's goodput for a real-world case: its test, sender, qdisc and step."""
    qdisc = "dualpi2" if case.queue.startswith("dualpi2") else case.queue
    step = (
        case.queue.removeprefix("dualpi2_step").removesuffix("ms") if "step" in case.queue else ""
    )
    for r in reference.rows(REFERENCE):
        if (r["test"], r["cca"], r["qdisc"]) != (
            f"{case.group}-{case.rate_mbps}M",
            case.cca,
            qdisc,
        ):
            continue
        if r["step_thresh_ms"] == step or (not step and r["step_thresh_ms"] in ("", "1")):
            return float(r["goodput_mbps"])
    return math.nan


#: The measurements a row averages over its seeds (every one of :class:`Run`'s but the names).
_MEANS = tuple(f.name for f in fields(Run) if f.name not in ("case", "seed"))


def published_reduction() -> float:
    """The lab tests' utilisation reduction of Prague / DualPI2 against CUBIC / fq_codel."""
    row = next(r for r in reference.rows(REFERENCE) if r["test"] == "lab-s2")
    return float(row["util_reduction"])


def rows_of(todo: Sequence[Case], per_case: Sequence[Sequence[Run]]) -> list[Row]:
    """One row per case: the mean over its seeds (utilisation's range too), each slotted
    case against its unslotted run and against CUBIC / fq_codel's under the same bursts."""
    util = {
        c: statistics.fmean(r.utilisation for r in runs)
        for c, runs in zip(todo, per_case, strict=True)
    }

    def util_of(case: Case, **change: Any) -> float:
        other = Case(**{**case.__dict__, **change})
        return util.get(other, math.nan)

    out = []
    for case, runs in zip(todo, per_case, strict=True):
        u = util[case]
        clean = math.nan
        if case.burst != CLEAN:
            group = _CLEAN_GROUP.get(case.group, case.group)
            clean = util_of(case, group=group, burst=CLEAN, where="both")
        base = util_of(case, cca=_BASELINE[0], queue=_BASELINE[1])
        means = {f: statistics.fmean(getattr(r, f) for r in runs) for f in _MEANS}
        out.append(
            Row(
                case=case.name,
                **vars(case),
                utilisation_min=min(r.utilisation for r in runs),
                utilisation_max=max(r.utilisation for r in runs),
                **means,
                seeds=len(runs),
                util_drop=1 - u / clean if clean > 0 else math.nan,
                util_vs_cubic_fq_codel=u / base if base > 0 else math.nan,
                published_goodput_mbps=_published(case),
            )
        )
    return out


def _seeds(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


def _below(drop: float) -> str:
    """A drop against the unslotted run in words ("68 % below", "4 % above")."""
    if math.isnan(drop):
        return "no unslotted run"
    return f"{100 * drop:.0f} % below" if drop >= 0 else f"{-100 * drop:.0f} % above"


def _f(x: float, fmt: str = "{:.2f}") -> str:
    return "-" if math.isnan(x) else fmt.format(x)


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{round(100 * x) or 0:.0f} %"  # no "-0 %"


def markdown_table(rows: list[Row]) -> str:
    """One table per group, in :data:`GROUPS` order."""
    parts = []
    for group in GROUPS:
        rs = [r for r in rows if r.group == group]
        if not rs:
            continue
        two = len(SETTINGS[group].windows) > 1
        head = (
            f"**{HEADINGS[group]}**\n\n"
            "| sender / queue | Mbit/s | RTT ms | bursts | utilisation (range) "
            + ("| before / after the cut " if two else "")
            + "| drop vs unslotted | ÷ CUBIC/fq_codel | goodput Mbit/s (published) "
            "| sojourn mean (window) / p50 / p99 (run) ms | sRTT mean / p99 ms | marks / drops |\n"
            + "|---" * (12 if two else 11)
            + "|\n"
        )
        lines = []
        for r in rs:
            burst = r.burst if r.where == "both" or r.burst == CLEAN else f"{r.burst}, {r.where}"
            pub = (
                f" ({r.published_goodput_mbps:.1f})"
                if not math.isnan(r.published_goodput_mbps)
                else ""
            )
            lines.append(
                f"| {r.pair} | {r.rate_mbps} | {r.rtt_ms} | {burst} "
                f"| {r.utilisation:.3f} ({r.utilisation_min:.3f}-{r.utilisation_max:.3f}) "
                + (f"| {r.utilisation_first:.3f} / {r.utilisation_last:.3f} " if two else "")
                + f"| {_pct(r.util_drop)} | {_f(r.util_vs_cubic_fq_codel)} "
                f"| {r.goodput_mbps:.1f}{pub} "
                f"| {r.sojourn_mean_ms:.2f} / {r.sojourn_p50_ms:.2f} / {r.sojourn_p99_ms:.2f} "
                f"| {r.srtt_mean_ms:.1f} / {r.srtt_p99_ms:.1f} | {r.marks:.0f} / {r.drops:.0f} |"
            )
        parts.append(head + "\n".join(lines) + "\n")
    seeds = rows[0].seeds if rows else 0
    note = (
        f"\nMeans of {_seeds(seeds)} (utilisation's range over them). Utilisation: the "
        "bottleneck's busy fraction over the steady windows (Scenario 2: 10-30 s and 40-60 s; "
        "Scenario 3: 5-60 s; sweep: 10-30 s; Czech 5-60 s; Portland 60-300 s); goodput over "
        "the same; sojourn: the bottleneck's, its mean over the windows (the 100 ms samples' "
        "means weighted by the bytes sent), its p50 and p99 over every packet of the whole "
        "run (slow start and rate steps included); sRTT: the "
        "flow's, sampled every 100 ms in the windows. Published: the study's goodput "
        "(`l4s_tests_bursts.csv`).\n"
    )
    if any(r.group == "wifi" for r in rows):
        note += (
            "Wi-Fi (5-20 s): utilisation is the fraction of the window the AP spent sending "
            "PPDUs to the station, the bottleneck the AP's queue for it; Mbit/s is the "
            "station's PHY rate.\n"
        )
    return "\n".join(parts) + note


def _find(rows: list[Row], **match: Any) -> Row | None:
    return next((r for r in rows if all(getattr(r, k) == v for k, v in match.items())), None)


def _lab(rows: list[Row], group: str, burst: str) -> list[str]:
    out = []
    for rtt in (20, 80):
        p = _find(rows, group=group, cca="prague", queue="dualpi2", rtt_ms=rtt, burst=burst)
        c = _find(rows, group=group, cca="cubic", queue="fq_codel", rtt_ms=rtt, burst=burst)
        if p is None or c is None:
            continue
        out.append(
            f"at {rtt} ms Prague / DualPI2 keeps the bottleneck {p.utilisation:.2f} busy "
            f"({p.utilisation_min:.2f}-{p.utilisation_max:.2f} over {_seeds(p.seeds)}; "
            f"{_below(p.util_drop)} its unslotted run), CUBIC / fq_codel "
            f"{c.utilisation:.2f} ({_below(c.util_drop)}): Prague / DualPI2 has "
            f"**{_pct(1 - p.util_vs_cubic_fq_codel)} less** than CUBIC / fq_codel"
        )
    return out


def _sweep(rows: list[Row], cca: str, queue: str, key: str = "utilisation") -> str:
    rs = sorted(
        (r for r in rows if r.group == "sweep" and (r.cca, r.queue) == (cca, queue)),
        key=lambda r: r.gap_ms,
    )
    return ", ".join(f"{getattr(r, key):.2f} ({r.gap_ms:g} ms)" for r in rs)


def law_points(rows: list[Row], queue: str) -> list[tuple[float, float]]:
    """(utilisation times burst length, burst length) of Prague's sweep through ``queue``
    where the utilisation is below 0.9: the step the bursts' queue settles under, if Prague
    backs off until a burst fits below it."""
    return [
        (r.utilisation * r.gap_ms, r.gap_ms)
        for r in rows
        if r.group == "sweep" and (r.cca, r.queue) == ("prague", queue) and 0 < r.utilisation < 0.9
    ]


def _law(rows: list[Row], queue: str) -> str:
    xs = [f"{x:.2f} ms ({gap:g} ms bursts)" for x, gap in law_points(rows, queue)]
    return ", ".join(xs) if xs else "none (every burst size kept it above 0.9)"


def findings(rows: list[Row]) -> str:
    """What the rows show, each figure computed from them."""
    lines = ["**What the runs show** (l4sim beside l4s-tests' published numbers):", ""]
    n = 1
    lab = _lab(rows, "s2", S2_SLOT)
    if lab:
        lines.append(
            f"{n}. **Scenario 2, the published lab case** (Figures 20, 21; published: Prague / "
            f"DualPI2 about {_pct(published_reduction())} below CUBIC / fq_codel): "
            + "; ".join(lab)
            + "."
        )
        n += 1
    lab = _lab(rows, "s3", S3_SLOT)
    if lab:
        lines.append(f"{n}. **Scenario 3** (no number published): " + "; ".join(lab) + ".")
        n += 1
    if any(r.group == "sweep" for r in rows):
        lines.append(
            f"{n}. **The trend with burst size** (fixed gaps, 50 Mbit/s, 20 ms): Prague / "
            f"DualPI2's utilisation {_sweep(rows, 'prague', 'dualpi2')}; CUBIC / fq_codel's "
            f"{_sweep(rows, 'cubic', 'fq_codel')}. Where it is below 0.9, Prague / DualPI2's "
            f"utilisation times the burst is {_law(rows, 'dualpi2')}, and with the step at "
            f"5 ms {_law(rows, 'dualpi2_step5ms')}: Prague backs off until a burst's queue "
            "fits under the step, so utilisation ≈ step / burst. The bottleneck's mean sojourn "
            "in the window: Prague / DualPI2 "
            f"{_sweep(rows, 'prague', 'dualpi2', 'sojourn_mean_ms')} ms, CUBIC / fq_codel "
            f"{_sweep(rows, 'cubic', 'fq_codel', 'sojourn_mean_ms')} ms; "
            f"the flow's mean sRTT: Prague / DualPI2 "
            f"{_sweep(rows, 'prague', 'dualpi2', 'srtt_mean_ms')} ms, CUBIC / fq_codel "
            f"{_sweep(rows, 'cubic', 'fq_codel', 'srtt_mean_ms')} ms (a packet waits at each "
            "slotted gate, data and ACKs, half a gap on average)."
        )
        n += 1
        cross = [
            f"{r.pair} {r.utilisation:.2f}"
            for r in rows
            if r.group == "sweep" and r.burst == "4ms" and (r.cca, r.queue) in PAIRS[2:]
        ]
        if cross:
            lines.append(
                f"{n}. **It is the L queue's step, not Prague or DualPI2 as such**: with 4 ms "
                "bursts " + ", ".join(cross) + "."
            )
            n += 1
    acks = [r for r in rows if r.group == "acks"]
    if acks:
        lines.append(
            f"{n}. **ACK aggregation** (4 ms bursts): "
            + "; ".join(
                f"{r.pair} with the {r.where} slotted {r.utilisation:.2f} "
                f"({_below(r.util_drop)} unslotted)"
                for r in acks
            )
            + ". Bunched ACKs alone cost neither: the paced Prague spreads what each bunch "
            "releases, and the bursts CUBIC sends stay under fq_codel's 5 ms target."
        )
        n += 1
    real = [r for r in rows if r.group in ("czech", "portland")]
    if real:
        lines.append(
            f"{n}. **The real-world tests** (goodput Mbit/s, ours / published): "
            + "; ".join(
                f"{r.group} {r.rate_mbps} Mbit/s {r.pair} {r.goodput_mbps:.1f} / "
                f"{_f(r.published_goodput_mbps, '{:.1f}')}"
                for r in real
            )
            + ". Their wireless link's bursts are not published; Scenario 2's slotting stands "
            "in for it."
        )
        n += 1
    wifi = _wifi(rows)
    if wifi:
        lines.append(f"{n}. **Over the Wi-Fi link** instead of netem's slots: " + wifi)
        n += 1
    steps = [r for r in rows if r.group == "step"]
    if steps:
        lines.append(
            f"{n}. **Raising DualPI2's step** on Scenario 2's bursts (20 ms): "
            + "; ".join(
                f"{r.queue.removeprefix('dualpi2_step')} {r.utilisation:.2f}" for r in steps
            )
            + "."
        )
    return "\n".join(lines) + "\n"


def _wifi(rows: list[Row]) -> str:
    """Prague / DualPI2 against CUBIC / fq_codel per Wi-Fi mode, in words ("" if none ran)."""
    out = []
    for burst in sorted({r.burst for r in rows if r.group == "wifi"}):
        p = _find(rows, group="wifi", cca="prague", queue="dualpi2", burst=burst)
        c = _find(rows, group="wifi", cca="cubic", queue="fq_codel", burst=burst)
        if p is None or c is None:
            continue
        out.append(
            f"at {burst.upper()} ({p.rate_mbps} Mbit/s PHY) Prague / DualPI2 gets "
            f"{p.goodput_mbps:.1f} Mbit/s (the AP's airtime to the station {p.utilisation:.2f}, "
            f"{_f(p.util_vs_cubic_fq_codel)} of CUBIC / fq_codel's), its sRTT {p.srtt_mean_ms:.1f} "
            f"ms and the AP queue's p99 {p.sojourn_p99_ms:.1f} ms; CUBIC / fq_codel "
            f"{c.goodput_mbps:.1f} Mbit/s, sRTT {c.srtt_mean_ms:.1f} ms, p99 "
            f"{c.sojourn_p99_ms:.1f} ms"
        )
    return "; ".join(out) + "." if out else ""


def plot_wifi(rows: list[Row], path: Path) -> None:
    """The ``wifi`` group: goodput and the flow's mean sRTT per mode and pair."""
    from l4sim.plot import pyplot

    plt = pyplot()
    rs = [r for r in rows if r.group == "wifi"]
    modes = sorted({r.burst for r in rs})
    fig, (ax_g, ax_r) = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.38
    for k, (cca, queue) in enumerate((("prague", "dualpi2"), ("cubic", "fq_codel"))):
        got = [_find(rs, cca=cca, queue=queue, burst=m) for m in modes]
        x = [i + (k - 0.5) * width for i in range(len(modes))]
        label = f"{cca} / {queue}"
        ax_g.bar(x, [g.goodput_mbps if g else 0.0 for g in got], width, label=label)
        ax_r.bar(x, [g.srtt_mean_ms if g else 0.0 for g in got], width, label=label)
    for ax, what in ((ax_g, "goodput, Mbit/s"), (ax_r, "flow's mean sRTT, ms (base 20)")):
        ax.set_xticks(range(len(modes)), [m.upper() for m in modes])
        ax.set_ylabel(what)
    ax_g.legend(fontsize=8)
    fig.suptitle("One 802.11ac station downloading through the AP's queue", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot(rows: list[Row], path: Path) -> None:
    """Utilisation, the bottleneck's mean sojourn and the flow's mean sRTT against the burst
    length, per pair (the sweep)."""
    from l4sim.plot import pyplot

    plt = pyplot()
    fig, (ax_u, ax_q, ax_r) = plt.subplots(1, 3, figsize=(15, 4))
    for cca, queue in PAIRS:
        rs = sorted(
            (r for r in rows if r.group == "sweep" and (r.cca, r.queue) == (cca, queue)),
            key=lambda r: r.gap_ms,
        )
        if not rs:
            continue
        x = [r.gap_ms for r in rs]
        u = [r.utilisation for r in rs]
        err = [
            [a - r.utilisation_min for a, r in zip(u, rs, strict=True)],
            [r.utilisation_max - a for a, r in zip(u, rs, strict=True)],
        ]
        label = f"{cca} / {queue}"
        ax_u.errorbar(x, u, yerr=err, marker="o", capsize=3, label=label)
        ax_q.plot(x, [r.sojourn_mean_ms for r in rs], marker="o", label=label)
        ax_r.plot(x, [r.srtt_mean_ms for r in rs], marker="o", label=label)
    xs = [g for g in SWEEP_GAPS_MS if g > 0]
    ax_u.plot(xs, [min(1.0, 1.0 / g) for g in xs], "k:", label="1 ms step / burst")
    ax_u.set(ylabel="bottleneck utilisation", ylim=(0, 1.05))
    ax_u.set_title("Utilisation (range over seeds)", fontsize=10)
    ax_q.set(ylabel="ms")
    ax_q.set_title("Bottleneck's mean sojourn", fontsize=10)
    ax_r.set(ylabel="ms")
    ax_r.set_title("Flow's mean sRTT (base 20 ms)", fontsize=10)
    for ax in (ax_u, ax_q, ax_r):
        ax.set_xlabel("burst (gap between slots), ms")
    ax_u.legend(fontsize=8)
    fig.suptitle("Bursts at a 50 Mbit/s, 20 ms bottleneck", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
