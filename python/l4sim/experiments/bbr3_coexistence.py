"""BBRv3 beside CUBIC across buffer sizes, against the published measurements.

The set-up the measurement literature uses for this question: a dumbbell whose one
bottleneck (``RATE_MBPS``, a drop-tail FIFO of ``BUFFERS_BDP`` bandwidth-delay products)
two long flows share, both of the same RTT (``RTT_MS``, all on the bottleneck; the access
links are 10x faster, with 250 us of host jitter as ``coexistence`` has it), both started
together: one BBRv3 (``bbr3``) and one CUBIC; as the control whose behaviour is long
established, one BBR v1 and one CUBIC; and one BBRv3 whose loss threshold is 50 %
(``bbr3-lt50``, its loss response all but off) and one CUBIC, the control that isolates that
response. Each case runs over ``--seeds`` seeds (8).

Per run: each flow's goodput and loss rate over the steady window (the second half of the
run), BBR's share of the pair's goodput, and the share in each half of that window (their
difference, the drift, says whether the run had settled). Per case: the mean share over the
seeds with its standard deviation and range, Jain's index and the utilisation.

The published side (``l4sim/data/reference/bbr3_published.csv``; its README says how each
row was obtained) is what could be read: Zeynali et al., PAM 2024, whose abstract says BBRv3
leaves "little to no room" for CUBIC at similar RTTs (a bound: BBRv3 above one half), and
Cao et al., IMC 2019, for BBR v1: above 90 % in a shallow buffer, about 20 % in a deep one,
falling between. ``comparison.md`` sets ours beside each published row with a within-20 %
verdict (a share within 20 % of the published interval), ``trends.md`` the direction of
each series' share as the buffer grows beside the published direction, ``findings.md`` what
follows, every number computed from the rows.

Why 300 s: in a deep buffer CUBIC's queue stretches every round trip (at 16 BDP a round is
17 x 40 ms = 0.68 s) and its cubic epoch K = cbrt(W_max (1 - beta) / C) is over 10 s, so the
pair takes about 100 s to settle (BBR's share over the first 60 s is half the settled one or
less); the window starts at 150 s and its two halves agree within the drift the table shows.
``--quick``: 10 Mbit/s, 20 ms, 0.5 and 16 BDP, 60 s, one seed.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.engine.simulation import Simulation
from l4sim.executors import Executor
from l4sim.experiments import reference
from l4sim.experiments._cases import run_seeded, seeded_hooks, seeds_for
from l4sim.experiments._tables import (
    finding_titles,
    read_rows,
    write_csv,
    write_per_seed,
    write_table,
)
from l4sim.experiments.base import Option, declare, quick_option, seeds_option
from l4sim.scenario import Scenario

REFERENCE = "bbr3_published.csv"
#: The BBR beside CUBIC in each series -> its ``cca``: BBRv3; BBR v1, the control; and
#: BBRv3 with its loss threshold (``bbr_loss_thresh``, 2 %) at 50 %, its loss response all
#: but off, the control that says how much of BBRv3's share that response decides.
SERIES: dict[str, Any] = {
    "bbr3": "bbr3",
    "bbr": "bbr",
    "bbr3-lt50": {"kind": "bbr3", "loss_thresh": 0.5},
}
BUFFERS_BDP: tuple[float, ...] = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
RATE_MBPS = 100
RTT_MS = 40
DURATION_S = 300.0
DEFAULT_SEEDS = tuple(range(1, 9))
QUICK: dict[str, Any] = {
    "rate": 10,
    "rtt": 20,
    "duration": 60.0,
    "buffers": (0.5, 16.0),
    "series": ("bbr3", "bbr"),
}
HOST_JITTER_US = 250.0
MSS_WIRE_BYTES = 1500
MSS_PAYLOAD_BYTES = 1448
ACCESS_FACTOR = 10
#: A share agrees with a published one when within 20 % of the published interval.
TOLERANCE = 0.2
TABLE = "table.md"
COMPARISON = "comparison.md"
TRENDS = "trends.md"
FINDINGS = "findings.md"
LABELS = {"bbr3": "BBRv3", "bbr": "BBR v1", "bbr3-lt50": "BBRv3, loss_thresh 50 %"}


def _buffer_group(bdp: float) -> str:
    return f"{bdp:g}bdp"


GROUPS = (*SERIES, *(_buffer_group(b) for b in BUFFERS_BDP))


@dataclass(frozen=True)
class Case:
    cca: str
    buffer_bdp: float
    rate_mbps: int = RATE_MBPS
    rtt_ms: int = RTT_MS
    duration_s: float = DURATION_S

    @property
    def name(self) -> str:
        return (
            f"{self.cca}-cubic-{_buffer_group(self.buffer_bdp)}-{self.rate_mbps}M-{self.rtt_ms}ms"
        )

    @property
    def window(self) -> tuple[float, float]:
        """The steady window: the second half of the run."""
        return self.duration_s / 2, self.duration_s

    @property
    def limit_packets(self) -> int:
        bdp = self.rate_mbps * 1e6 * self.rtt_ms / 1e3 / 8 / MSS_WIRE_BYTES
        return max(2, round(self.buffer_bdp * bdp))


def cases(groups: Iterable[str] = GROUPS, *, quick: bool = False) -> list[Case]:
    """Each series at each buffer (``quick``: the small set-up), restricted to the series
    and buffers ``groups`` names (a kind not named: all of it)."""
    wanted = set(groups)
    kinds = QUICK["series"] if quick else tuple(SERIES)
    series = [s for s in kinds if s in wanted] or list(kinds)
    sizes = QUICK["buffers"] if quick else BUFFERS_BDP
    buffers = [b for b in sizes if _buffer_group(b) in wanted] or list(sizes)
    if quick:
        rate, rtt, duration = QUICK["rate"], QUICK["rtt"], QUICK["duration"]
        return [Case(s, b, rate, rtt, duration) for s in series for b in buffers]
    return [Case(s, b) for s in series for b in buffers]


def scenario(case: Case, seed: int = 1) -> Scenario:
    """BBR (flow 0) and CUBIC (flow 1) through the case's FIFO."""
    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{case.duration_s:g}s",
            "topology": {
                "preset": "dumbbell",
                "access": {
                    "rate": f"{case.rate_mbps * ACCESS_FACTOR}Mbps",
                    "delay": "0ms",
                    "jitter": f"{HOST_JITTER_US:g}us",
                },
                "bottleneck": {
                    "rate": f"{case.rate_mbps}Mbps",
                    "delay": f"{case.rtt_ms / 2:g}ms",
                    "qdisc": {"kind": "fifo", "limit": f"{case.limit_packets}p"},
                },
            },
            "flows": [
                {"kind": "tcp", "cca": SERIES[case.cca]},
                {"kind": "tcp", "cca": "cubic"},
            ],
        }
    )


@dataclass
class Run:
    case: str
    seed: int
    bbr_mbps: float
    cubic_mbps: float
    share: float
    share_first_half: float
    share_second_half: float
    bbr_drops: int
    cubic_drops: int
    bbr_loss_pct: float
    cubic_loss_pct: float


def _share(a: float, b: float) -> float:
    return a / (a + b) if a + b > 0 else math.nan


def _run(task: tuple[Case, int]) -> Run:
    case, seed = task
    start, end = case.window
    middle = (start + end) / 2
    sim = Simulation(scenario(case, seed))
    marks = []
    for t in (start, middle, end):
        sim.run_until(t)
        marks.append(sim.summary()["flows"])

    def acked(k: int, i: int) -> int:
        return marks[k][i]["bytes_acked"]

    def half(k: int) -> float:
        return _share(acked(k + 1, 0) - acked(k, 0), acked(k + 1, 1) - acked(k, 1))

    rates = [(acked(2, i) - acked(0, i)) * 8 / (end - start) / 1e6 for i in (0, 1)]
    drops = [int(marks[2][i]["drops"] - marks[0][i]["drops"]) for i in (0, 1)]
    # a flow's loss rate: its drops per full-size segment it sent in the window
    sent = [
        (marks[2][i]["bytes_sent"] - marks[0][i]["bytes_sent"]) / MSS_PAYLOAD_BYTES for i in (0, 1)
    ]
    loss = [100 * d / n if n > 0 else math.nan for d, n in zip(drops, sent, strict=True)]
    return Run(case.name, seed, *rates, _share(*rates), half(0), half(1), *drops, *loss)


@dataclass
class Row:
    case: str
    cca: str
    buffer_bdp: float
    rate_mbps: int
    rtt_ms: int
    share: float
    share_sd: float
    share_min: float
    share_max: float
    jain: float
    bbr_mbps: float
    cubic_mbps: float
    utilisation: float
    drift: float
    bbr_loss_pct: float
    cubic_loss_pct: float
    seeds: int


def _row(case: Case, runs: list[Run]) -> Row:
    shares = [r.share for r in runs]
    a = statistics.fmean(r.bbr_mbps for r in runs)
    b = statistics.fmean(r.cubic_mbps for r in runs)
    return Row(
        case.name,
        case.cca,
        case.buffer_bdp,
        case.rate_mbps,
        case.rtt_ms,
        statistics.fmean(shares),
        statistics.stdev(shares) if len(shares) > 1 else 0.0,
        min(shares),
        max(shares),
        (a + b) ** 2 / (2 * (a * a + b * b)) if a + b > 0 else math.nan,
        a,
        b,
        (a + b) / case.rate_mbps,
        statistics.fmean(abs(r.share_second_half - r.share_first_half) for r in runs),
        statistics.fmean(r.bbr_loss_pct for r in runs),
        statistics.fmean(r.cubic_loss_pct for r in runs),
        len(runs),
    )


@dataclass
class Comparison:
    source: str
    series: str
    buffer: str
    buffer_bdp: float
    published: str
    low: float
    high: float
    share: float
    share_sd: float
    off_by: float
    within: bool


def off_by(share: float, low: float, high: float) -> float:
    """How far ``share`` lies outside [low, high], relative to the edge it misses (0 when
    inside)."""
    if share < low:
        return (low - share) / low
    if share > high:
        return (share - high) / high
    return 0.0


def _published(ref: dict[str, str]) -> tuple[str, float, float]:
    value = reference.number(ref["value"]) if ref["kind"] == "value" else None
    if value is not None:
        return f"{value:g}", float(value), float(value)
    low, high = reference.number(ref["low"]), reference.number(ref["high"])
    return f"{low:g} to {high:g}", float(low or 0.0), float(high or 1.0)


def comparisons(rows: list[Row]) -> list[Comparison]:
    """Every published value or bound beside our share where we ran its series and buffer
    (a row without a buffer: at every buffer we ran)."""
    out = []
    for ref in reference.rows(REFERENCE):
        if ref["kind"] not in ("value", "bound"):
            continue
        text, low, high = _published(ref)
        at = reference.number(ref["buffer_bdp"])
        for r in rows:
            if r.cca != ref["series"] or (at is not None and r.buffer_bdp != at):
                continue
            miss = off_by(r.share, low, high)
            out.append(
                Comparison(
                    ref["source"],
                    r.cca,
                    ref["buffer"],
                    r.buffer_bdp,
                    text,
                    low,
                    high,
                    r.share,
                    r.share_sd,
                    miss,
                    miss <= TOLERANCE,
                )
            )
    return out


def direction(shares: list[float]) -> str:
    """The direction of a series' share as the buffer grows: ``falls`` or ``rises`` when the
    deepest buffer's share is at least 0.05 below (above) the shallowest's, else ``flat``."""
    if len(shares) < 2:
        return "-"
    change = shares[-1] - shares[0]
    return "falls" if change <= -0.05 else "rises" if change >= 0.05 else "flat"


def _series(rows: list[Row], cca: str) -> list[Row]:
    return sorted((r for r in rows if r.cca == cca), key=lambda r: r.buffer_bdp)


@dataclass
class Trend:
    series: str
    ours: str
    monotone_steps: str
    published: str
    source: str
    reproduced: str


def trends(rows: list[Row]) -> list[Trend]:
    """Each series' direction beside the published one (where one is published)."""
    refs = {r["series"]: r for r in reference.rows(REFERENCE) if r["kind"] == "trend"}
    out = []
    for cca in dict.fromkeys(r.cca for r in rows):
        shares = [r.share for r in _series(rows, cca)]
        ours = direction(shares)
        down = sum(b < a for a, b in itertools.pairwise(shares))
        ref = refs.get(cca)
        published = ref["value"] if ref else "not published in the sources read"
        verdict = ("yes" if ours == published else "no") if ref else "-"
        steps = f"{down} of {len(shares) - 1} steps down"
        out.append(Trend(cca, ours, steps, published, ref["source"] if ref else "-", verdict))
    return out


def _within(compared: list[Comparison]) -> str:
    return f"{sum(c.within for c in compared)} of {len(compared)}"


def facts(out_dir: Path) -> dict[str, str]:
    """The numbers the docs' prose quotes, from a full run's ``table.csv`` (shares and
    losses as the table has them)."""
    rows = read_rows(out_dir / "table.csv", Row)
    out = {"within": _within(comparisons(rows)), "bbr3_below_half_from": crossover(rows, "bbr3")}
    for r in rows:
        out[f"share_{r.cca}_{r.buffer_bdp:g}"] = f"{r.share:.2f}"
        out[f"loss_{r.cca}_{r.buffer_bdp:g}"] = f"{r.bbr_loss_pct:.2f}"
    return out | {"max_drift": f"{max(r.drift for r in rows):.2f}"}


def headline(out_dir: Path) -> str:
    """What a full run shows: the titles of its first two findings (the comparison with
    the published shares and trends)."""
    return " ".join(finding_titles(out_dir / FINDINGS)[:2])


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    quick: bool = False,
    seeds: Iterable[int] | None = None,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
) -> list[Row]:
    """Every case (or those ``only`` names; ``quick``: the small set-up, one seed) over
    ``seeds``: ``table.md``/``.csv``, ``comparison.md``/``.csv``, ``trends.md``/``.csv``,
    ``findings.md``, ``per_seed.csv`` and (``figures``) ``share_vs_buffer.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS, quick=quick)
    seed_list = seeds_for(seeds, quick, DEFAULT_SEEDS)
    runs, per_case = run_seeded(_run, todo, seed_list, executor, on_case)
    rows = [_row(c, r) for c, r in zip(todo, per_case, strict=True)]
    compared, directions = comparisons(rows), trends(rows)
    write_per_seed(out, runs)
    write_table(rows, out, TABLE, markdown_table(rows))
    write_csv(out / "comparison.csv", compared)
    (out / COMPARISON).write_text(comparison_table(compared))
    write_csv(out / "trends.csv", directions)
    (out / TRENDS).write_text(trend_table(directions))
    (out / FINDINGS).write_text(findings(rows, compared, directions))
    if figures:
        plot(rows, out / "share_vs_buffer.png")
    return rows


def _markdown(header: str, cells: Iterable[list[str]]) -> str:
    """A Markdown table: ``header`` (its columns separated by " | ") and a line per row."""
    lines = [f"| {header} |", "|" + "---|" * len(header.split(" | "))]
    return "\n".join([*lines, *("| " + " | ".join(c) + " |" for c in cells)]) + "\n"


def markdown_table(rows: list[Row]) -> str:
    seeds = rows[0].seeds if rows else 0
    header = (
        "BBR | buffer (BDP) | BBR's share, mean ± sd | range over seeds | Jain "
        "| BBR / CUBIC Mbit/s | loss % (BBR / CUBIC) | utilisation | drift"
    )
    cells = [
        [
            LABELS[r.cca],
            f"{r.buffer_bdp:g}",
            f"{r.share:.2f} ± {r.share_sd:.2f}",
            f"{r.share_min:.2f}-{r.share_max:.2f}",
            f"{r.jain:.2f}",
            f"{r.bbr_mbps:.1f} / {r.cubic_mbps:.1f}",
            f"{r.bbr_loss_pct:.2f} / {r.cubic_loss_pct:.2f}",
            f"{r.utilisation:.2f}",
            f"{r.drift:.2f}",
        ]
        for r in rows
    ]
    note = (
        f"\nMeans over {seeds} seeds of each flow's goodput over the second half of the run; "
        "loss: a flow's drops per segment it sent there; drift: the mean difference between "
        "the share of the window's two halves.\n"
    )
    return _markdown(header, cells) + note


def comparison_table(compared: list[Comparison]) -> str:
    header = (
        "source | BBR | published buffer | ours at (BDP) | published share "
        "| ours, mean ± sd | off by | within 20 %"
    )
    cells = [
        [
            c.source,
            LABELS[c.series],
            c.buffer,
            f"{c.buffer_bdp:g}",
            c.published,
            f"{c.share:.2f} ± {c.share_sd:.2f}",
            f"{100 * c.off_by:.0f} %",
            "yes" if c.within else "no",
        ]
        for c in compared
    ]
    tail = f"\n{_within(compared)} compared cases within 20 % of the published share.\n"
    return _markdown(header, cells) + tail


def trend_table(directions: list[Trend]) -> str:
    header = "BBR | ours as the buffer grows | steps | published | source | reproduced"
    cells = [
        [LABELS[t.series], t.ours, t.monotone_steps, t.published, t.source, t.reproduced]
        for t in directions
    ]
    return _markdown(header, cells)


def crossover(rows: list[Row], cca: str) -> str:
    """The smallest buffer at which the series' share is below one half, or "none"."""
    below = [r.buffer_bdp for r in _series(rows, cca) if r.share < 0.5]
    return f"{below[0]:g} BDP" if below else "none of the buffers run"


def findings(rows: list[Row], compared: list[Comparison], directions: list[Trend]) -> str:
    """What the rows say, every number computed from them."""
    pam = [c for c in compared if c.source == "zeynali2024"]
    held = [f"{c.buffer_bdp:g}" for c in pam if c.share > c.low]
    published = [t for t in directions if t.reproduced != "-"]
    unpublished = [LABELS[t.series] for t in directions if t.reproduced == "-"]
    v3 = {r.buffer_bdp: r.share for r in _series(rows, "bbr3")}
    v1 = {r.buffer_bdp: r.share for r in _series(rows, "bbr")}
    both = sorted(set(v3) & set(v1))
    gap = ", ".join(f"{b:g}: {v3[b] - v1[b]:+.2f}" for b in both)
    lt50 = {r.buffer_bdp: r.share for r in _series(rows, "bbr3-lt50")}
    off = ", ".join(f"{b:g}: {lt50[b]:.2f}" for b in sorted(set(lt50) & set(v1)))
    loss = {(r.cca, r.buffer_bdp): r.bbr_loss_pct for r in rows}
    losses = ", ".join(f"{b:g}: {loss[('bbr3', b)]:.2f} / {loss[('bbr', b)]:.2f}" for b in both)
    shares = ", ".join(f"{b:g}: {s:.2f}" for b, s in sorted(v3.items()))
    top = max(v3, key=lambda b: v3[b]) if v3 else None
    pam_text = (
        f"BBRv3 takes more than half (the PAM 2024 abstract's claim, at its weakest) at "
        f"{len(held)} of {len(pam)} buffers ({', '.join(held) or 'none'} BDP); its share "
        f"falls below one half from {crossover(rows, 'bbr3')} (BBRv3's share by buffer, BDP: "
        f"{shares}); at its most, {v3[top]:.2f} at {top:g} BDP, it leaves CUBIC "
        f"{1 - v3[top]:.2f}."
        if pam and top is not None
        else "No BBRv3 case ran."
    )
    no_trend = (
        f" No trend over buffer sizes was published for {', '.join(unpublished)} in the "
        "sources read."
        if unpublished
        else ""
    )
    lines = [
        "**What the comparison shows** (shares are BBR's of the pair's goodput, mean over "
        "the seeds):",
        "",
        f"1. **{_within(compared)} compared cases are within 20 % of the published "
        f"share.** {pam_text}",
        f"2. **Published trends reproduced: {sum(t.reproduced == 'yes' for t in published)} "
        f"of {len(published)}.** "
        + "; ".join(f"{LABELS[t.series]}'s share {t.ours} as the buffer grows" for t in directions)
        + "."
        + no_trend,
        "3. **BBRv3 against the BBR v1 control** (BBRv3's share less BBR v1's, by buffer in "
        f"BDP): {gap or 'not run'}; BBR's own loss rate, BBRv3 / BBR v1 in %: "
        f"{losses or 'not run'}."
        + (
            f" With its loss threshold at 50 % instead of 2 %, BBRv3's share is {off} "
            "(by buffer in BDP)."
            if off
            else ""
        ),
        "",
    ]
    return "\n".join(lines)


def plot(rows: list[Row], path: Path) -> None:
    """BBR's share against the buffer, ours (mean, range over seeds) and the published."""
    from l4sim.plot import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    colours = {"bbr3": "tab:red", "bbr": "tab:blue", "bbr3-lt50": "tab:orange"}
    for cca in dict.fromkeys(r.cca for r in rows):
        rs = _series(rows, cca)
        x = [r.buffer_bdp for r in rs]
        y = [r.share for r in rs]
        err = [[r.share - r.share_min for r in rs], [r.share_max - r.share for r in rs]]
        style = {"marker": "o", "capsize": 3, "color": colours[cca]}
        ax.errorbar(x, y, yerr=err, label=f"l4sim, {LABELS[cca]}", **style)
    xs = sorted({r.buffer_bdp for r in rows})
    for ref in reference.rows(REFERENCE):
        if ref["kind"] not in ("value", "bound"):
            continue
        text, low, high = _published(ref)
        colour = colours.get(ref["series"], "grey")
        at = reference.number(ref["buffer_bdp"])
        label = f"{ref['source']}, {LABELS.get(ref['series'], ref['series'])}: {text}"
        if at is None:
            ax.fill_between(xs, low, high, color=colour, alpha=0.08, label=label)
        elif low == high:
            ax.plot([at], [low], marker="*", markersize=13, color=colour, ls="", label=label)
        else:
            bound = {"marker": "^", "markersize": 9, "ls": "", "capsize": 4}
            ax.errorbar([at], [low], yerr=[[0], [high - low]], color=colour, label=label, **bound)
    ax.axhline(0.5, color="black", lw=0.6, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [f"{x:g}" for x in xs])
    ax.set_ylim(0, 1)
    ax.set_xlabel("FIFO buffer (bandwidth-delay products)")
    ax.set_ylabel("BBR's share of the pair's goodput")
    ax.set_title(f"One BBR beside one CUBIC, {rows[0].rate_mbps} Mbit/s, {rows[0].rtt_ms} ms")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


scenarios, _cases = seeded_hooks(cases, scenario, DEFAULT_SEEDS)

OPTIONS: tuple[Option, ...] = (
    quick_option("10 Mbit/s, 20 ms, 0.5 and 16 BDP, 60 s, one seed"),
    seeds_option("Run each case with seeds 1..N of the hosts' jitter (default 8)."),
)

EXPERIMENT = declare(
    __name__,
    name="bbr3-coexistence",
    title="BBRv3 (and BBR v1) beside CUBIC across buffer sizes, against published measurements",
    paper='Zeynali et al., "Promises and Potential of BBRv3", PAM 2024 (abstract); Cao et al., '
    "IMC 2019 (BBR v1)",
    groups=GROUPS,
    options=OPTIONS,
    tables=(TABLE, "table.csv", COMPARISON, "comparison.csv", TRENDS, "trends.csv", FINDINGS),
    figures=("share_vs_buffer.png",),
    reference=(REFERENCE,),
)
