"""Who gets what, at what delay, when congestion control *a* meets *b* in queue *q*.

Two long-running flows, one of each algorithm, share a dumbbell bottleneck for ``DURATION_S``
(both start together; the RTT is all on the bottleneck, the access links are 10x faster and
add no delay). Each pair runs through every queue at every rate and RTT of the grid, over
``--seeds`` seeds of 250 us of host jitter (as ``l4s-rtt-fairness`` models a testbed's
timing noise). Per flow: its goodput over the steady window (``WINDOW``: the last two
thirds of the run, after slow start and the first back-offs), its share of the pair's
goodput, its drops and CE marks in that window, and its p99 queueing delay (its data
packets' one-way delay p99 less the path's propagation and serialisation, over the whole
run: the slow start is in it). Per pair: Jain's index of the two goodputs.

The senders and queues are l4sim's defaults, which are Linux's: Prague and DCTCP negotiate
their own ECN (Accurate ECN, ECT(1) for Prague; classic ECN for DCTCP, as ``tcp_dctcp``
asks); CUBIC and Reno use none (``net.ipv4.tcp_ecn = 2``: a Linux client does not ask);
BBR v1 and BBRv3 none (BBRv3's L4S response needs ``ecn_enable``). The queues:
``dualpi2`` (sch_dualpi2's defaults), ``fq_codel`` (its defaults, ECN on), ``fq_codel1``
(one flow queue: a single RFC 3168 queue, ECN on), ``pie`` (RFC 8033 with ECN), and a
drop-tail FIFO of 1 and 5 bandwidth-delay products.

The full grid (every pair of ``CCAS`` and each algorithm against itself, 6 queues, 3 rates,
3 RTTs, 4 seeds) is 4 536 runs; ``--quick`` is Prague and BBR v1 against CUBIC through
DualPI2 and the single fq_codel queue at 10 Mbit/s and 20 ms, one seed. Figures: one heatmap
per queue of the row algorithm's share against the column's, at each rate and RTT.

The 1-vs-N case (group ``1vN``): one flow of *a* against ``MANY`` = 4 flows of *b*, every
ordered pair of different algorithms, through DualPI2 and fq_codel at 100 Mbit/s and 40 ms
(``--quick``: Prague and BBR v1 against CUBIC and back, at the quick grid's 10 Mbit/s and
20 ms). Per case: the one flow's share of the five goodputs beside its fair share, 1/5,
and Jain's index of the five (per seed, then averaged); ``one_vs_n.md`` / ``.csv``,
``one_vs_n_per_seed.csv`` and the figure ``one_vs_n.png``. Naming ``1vN`` in ``--only``
runs these instead of the pairs (``pairs`` names those).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from l4sim.engine.simulation import Simulation
from l4sim.executors import Executor
from l4sim.experiments._cases import run_seeded, seeded_hooks, seeds_for
from l4sim.experiments._tables import (
    finding_titles,
    read_csv,
    span,
    write_csv,
    write_per_seed,
    write_table,
)
from l4sim.experiments.base import Option, declare, quick_option, seeds_option
from l4sim.experiments.coexistence_figures import ORDER, plot, plot_many, plot_point
from l4sim.scenario import Scenario
from l4sim.scenario.ccas import CCA_KINDS

#: The senders, scalable first; ``bbr3`` only where this build has it.
CCAS: tuple[str, ...] = tuple(c for c in ORDER if c in CCA_KINDS)
QUEUES: tuple[str, ...] = ("dualpi2", "fq_codel", "fq_codel1", "pie", "fifo1bdp", "fifo5bdp")
RATES_MBPS: tuple[int, ...] = (10, 100, 1000)
RTTS_MS: tuple[int, ...] = (10, 40, 160)
DEFAULT_SEEDS = (1, 2, 3, 4)
DURATION_S = 30.0
#: The steady window: the last two thirds of the run.
WINDOW = (DURATION_S / 3, DURATION_S)
HOST_JITTER_US = 250.0
MSS_WIRE_BYTES = 1500
ACCESS_FACTOR = 10  # access links this many times the bottleneck's rate
TABLE = "table.md"
FINDINGS = "findings.md"

QUICK = {"ccas": ("prague", "bbr", "cubic"), "queues": ("dualpi2", "fq_codel1")}
QUICK_GRID = {"rates": (10,), "rtts": (20,)}
#: The 1-vs-N case: one flow of a against MANY of b, in these queues at this rate and RTT.
ONE_VS_N = "1vN"
MANY = 4
MANY_QUEUES = ("dualpi2", "fq_codel")
MANY_POINT = (100, 40)
MANY_TABLE = "one_vs_n.md"
SHAPES = ("pairs", ONE_VS_N)
GROUPS = (*SHAPES, *CCAS, *QUEUES, *(f"{r}M" for r in RATES_MBPS), *(f"{t}ms" for t in RTTS_MS))


@dataclass(frozen=True)
class Case:
    a: str
    b: str
    queue: str
    rate_mbps: int
    rtt_ms: int
    #: Flows of ``b`` beside the one of ``a``.
    n: int = 1

    @property
    def name(self) -> str:
        b = self.b if self.n == 1 else f"{self.n}x{self.b}"
        return f"{self.a}-{b}-{self.queue}-{self.rate_mbps}M-{self.rtt_ms}ms"

    @property
    def flows(self) -> tuple[str, ...]:
        return (self.a, *(self.b,) * self.n)


def _picked(groups: Iterable[str], quick: bool) -> dict[str, list[Any]]:
    """Each kind's members that ``groups`` names (a kind not named: all of it)."""
    wanted = set(groups)

    def pick(kinds: Iterable[Any], name: Callable[[Any], str] = str) -> list[Any]:
        return [k for k in kinds if name(k) in wanted] or list(kinds)

    return {
        "shapes": pick(SHAPES),
        "ccas": pick(QUICK["ccas"] if quick else CCAS),
        "queues": pick(QUICK["queues"] if quick else QUEUES),
        "rates": pick(QUICK_GRID["rates"] if quick else RATES_MBPS, lambda r: f"{r}M"),
        "rtts": pick(QUICK_GRID["rtts"] if quick else RTTS_MS, lambda t: f"{t}ms"),
    }


def cases(groups: Iterable[str] = GROUPS, *, quick: bool = False) -> list[Case]:
    """The grid's pairs (each unordered pair once, and each algorithm against itself), in
    table order, restricted to the algorithms, queues, rates and RTTs ``groups`` names (a
    kind not named: all of it; a pair runs when both its algorithms are named)."""
    k = _picked(groups, quick)
    if "pairs" not in k["shapes"]:
        return []
    if quick:  # the contrasts the suite checks: scalable and BBR against CUBIC
        pairs = [(c, "cubic") for c in k["ccas"] if c != "cubic"]
    else:
        pairs = list(itertools.combinations_with_replacement(k["ccas"], 2))
    points = itertools.product(k["queues"], k["rates"], k["rtts"])
    return [Case(a, b, q, r, t) for q, r, t in points for a, b in pairs]


def many_cases(groups: Iterable[str] = GROUPS, *, quick: bool = False) -> list[Case]:
    """The 1-vs-N cases ``groups`` names: every ordered pair of different algorithms named
    (``quick``: those with CUBIC on one side) in the named queues of ``MANY_QUEUES``, when
    the rate and RTT of ``MANY_POINT`` (``quick``: the quick grid's) are named."""
    k = _picked(groups, quick)
    rate, rtt = (QUICK_GRID["rates"][0], QUICK_GRID["rtts"][0]) if quick else MANY_POINT
    if ONE_VS_N not in k["shapes"] or rate not in k["rates"] or rtt not in k["rtts"]:
        return []
    pairs = [(a, b) for a in k["ccas"] for b in k["ccas"] if a != b]
    if quick:
        pairs = [(a, b) for a, b in pairs if "cubic" in (a, b)]
    queues = [q for q in k["queues"] if q in MANY_QUEUES]
    return [Case(a, b, q, rate, rtt, MANY) for q in queues for a, b in pairs]


def all_cases(groups: Iterable[str] = GROUPS, *, quick: bool = False) -> list[Case]:
    return cases(groups, quick=quick) + many_cases(groups, quick=quick)


def bdp_packets(rate_mbps: int, rtt_ms: int) -> int:
    return max(1, round(rate_mbps * 1e6 * rtt_ms / 1e3 / 8 / MSS_WIRE_BYTES))


def qdisc_for(queue: str, rate_mbps: int, rtt_ms: int) -> dict[str, Any]:
    """The bottleneck's qdisc: the Linux defaults of each, the FIFOs sized in BDPs."""
    if queue == "dualpi2":
        return {"kind": "dualpi2"}
    if queue == "fq_codel":
        return {"kind": "fq_codel"}
    if queue == "fq_codel1":  # one flow queue: a single RFC 3168 queue
        return {"kind": "fq_codel", "flows": 1}
    if queue == "pie":
        return {"kind": "pie", "ecn": True}
    if queue in ("fifo1bdp", "fifo5bdp"):
        n = int(queue[4])
        return {"kind": "fifo", "limit": f"{n * bdp_packets(rate_mbps, rtt_ms)}p"}
    raise ValueError(f"no queue {queue!r}; known: {', '.join(QUEUES)}")


def scenario(case: Case, seed: int = 1, ccas: Mapping[str, Any] | None = None) -> Scenario:
    """The flows of ``case`` through its queue (``ccas``: an algorithm's name -> the cca table
    its flows run instead of the name, e.g. Prague set as ``l4sim emulate``'s BPF one)."""
    one_way = f"{case.rtt_ms / 2:g}ms"
    access = f"{case.rate_mbps * ACCESS_FACTOR}Mbps"
    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{DURATION_S:g}s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": access, "delay": "0ms", "jitter": f"{HOST_JITTER_US:g}us"},
                "bottleneck": {
                    "rate": f"{case.rate_mbps}Mbps",
                    "delay": one_way,
                    "qdisc": qdisc_for(case.queue, case.rate_mbps, case.rtt_ms),
                },
            },
            "flows": [{"kind": "tcp", "cca": (ccas or {}).get(c, c)} for c in case.flows],
        }
    )


def base_one_way_s(case: Case) -> float:
    """A data packet's one-way delay with no queue: the propagation and its serialisation
    on the two access links and the bottleneck."""
    bits = MSS_WIRE_BYTES * 8
    rate = case.rate_mbps * 1e6
    return case.rtt_ms / 2e3 + bits / rate + 2 * bits / (rate * ACCESS_FACTOR)


@dataclass
class Run:
    case: str
    seed: int
    a_mbps: float
    b_mbps: float
    a_qdelay_p99_ms: float
    b_qdelay_p99_ms: float
    a_drops: int
    b_drops: int
    a_marks: int
    b_marks: int


@dataclass
class ManyRun(Run):
    """One seed of a 1-vs-N case: the one flow of ``a``, and the ``n`` flows of ``b`` (their
    mean goodput and delay p99, their drops and marks all together; their least and most
    goodput) and Jain's index of all the flows."""

    b_min_mbps: float
    b_max_mbps: float
    jain: float


def jain(xs: list[float]) -> float:
    """Jain's fairness index of ``xs``: (sum x)^2 / (n sum x^2); 1 is an even split."""
    total = sum(xs)
    return total * total / (len(xs) * sum(x * x for x in xs)) if total > 0 else math.nan


def _run(task: tuple[Case, int], ccas: Mapping[str, Any] | None = None) -> Run | ManyRun:
    case, seed = task
    mbps, qd, drops, marks = _measure(case, seed, ccas)
    if case.n > 1:
        bs = mbps[1:]
        return ManyRun(
            case.name,
            seed,
            mbps[0],
            statistics.fmean(bs),
            qd[0],
            statistics.fmean(qd[1:]),
            drops[0],
            sum(drops[1:]),
            marks[0],
            sum(marks[1:]),
            b_min_mbps=min(bs),
            b_max_mbps=max(bs),
            jain=jain(mbps),
        )
    return Run(case.name, seed, *mbps, *qd, *drops, *marks)


def _measure(
    case: Case, seed: int, ccas: Mapping[str, Any] | None = None
) -> tuple[list[float], list[float], list[int], list[int]]:
    """Each flow's goodput (Mbit/s), queue delay p99 (ms), drops and marks."""
    sim = Simulation(scenario(case, seed, ccas))
    sim.run_until(WINDOW[0])
    before = sim.summary()["flows"]
    sim.run_until(WINDOW[1])
    after = sim.summary()["flows"]
    span = WINDOW[1] - WINDOW[0]

    def rate(i: int) -> float:
        return (after[i]["bytes_acked"] - before[i]["bytes_acked"]) * 8 / span / 1e6

    def qdelay(i: int) -> float:
        p99 = after[i]["owd_p99_s"]
        return math.nan if p99 is None else max(0.0, p99 - base_one_way_s(case)) * 1e3

    def grew(i: int, key: str) -> int:
        return int(after[i][key] - before[i][key])

    each = range(len(case.flows))
    return (
        [rate(i) for i in each],
        [qdelay(i) for i in each],
        [grew(i, "drops") for i in each],
        [grew(i, "ecn_marks") for i in each],
    )


@dataclass
class Row:
    case: str
    a: str
    b: str
    queue: str
    rate_mbps: int
    rtt_ms: int
    a_share: float
    jain: float
    a_mbps: float
    b_mbps: float
    a_qdelay_p99_ms: float
    b_qdelay_p99_ms: float
    a_drops: float
    b_drops: float
    a_marks: float
    b_marks: float
    utilisation: float
    seeds: int


def _row(case: Case, runs: list[Run] | list[ManyRun]) -> Row:
    def mean(field: str) -> float:
        return statistics.fmean(getattr(r, field) for r in runs)

    a, b = mean("a_mbps"), mean("b_mbps")
    total = a + b
    return Row(
        case.name,
        case.a,
        case.b,
        case.queue,
        case.rate_mbps,
        case.rtt_ms,
        a / total if total > 0 else math.nan,
        total * total / (2 * (a * a + b * b)) if total > 0 else math.nan,
        a,
        b,
        mean("a_qdelay_p99_ms"),
        mean("b_qdelay_p99_ms"),
        mean("a_drops"),
        mean("b_drops"),
        mean("a_marks"),
        mean("b_marks"),
        total / case.rate_mbps,
        len(runs),
    )


@dataclass
class ManyRow(Row):
    """A 1-vs-N case over its seeds, as a pair's row with ``b_*`` each b flow's mean (drops
    and marks: all of them together), ``a_share`` of the whole link beside ``fair_share``
    (1 / (n + 1)) and ``jain`` the mean of each seed's index over all n + 1 flows."""

    n: int
    fair_share: float
    a_over_fair: float
    b_min_mbps: float
    b_max_mbps: float


def _many_row(case: Case, runs: list[ManyRun]) -> ManyRow:
    a, b = (statistics.fmean(getattr(r, f) for r in runs) for f in ("a_mbps", "b_mbps"))
    total = a + case.n * b
    share = a / total if total > 0 else math.nan
    fair = 1 / (case.n + 1)
    base = asdict(_row(case, runs))
    base.update(a_share=share, utilisation=total / case.rate_mbps)
    base["jain"] = statistics.fmean(r.jain for r in runs)
    return ManyRow(
        **base,
        n=case.n,
        fair_share=fair,
        a_over_fair=share / fair,
        b_min_mbps=min(r.b_min_mbps for r in runs),
        b_max_mbps=max(r.b_max_mbps for r in runs),
    )


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
    """Every case of the grid (or the subsets in ``only``; ``quick``: the small grid, one
    seed) over ``seeds``: ``table.md``, ``table.csv``, ``per_seed.csv`` and (``figures``)
    one heatmap per queue; the 1-vs-N cases named: ``one_vs_n.md`` and ``.csv``,
    ``one_vs_n_per_seed.csv`` and ``one_vs_n.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups = only if only is not None else GROUPS
    todo = cases(groups, quick=quick)
    many = many_cases(groups, quick=quick)
    seed_list = seeds_for(seeds, quick, DEFAULT_SEEDS)
    runs, per_case = run_seeded(_run, [*todo, *many], seed_list, executor, on_case)
    rows = [_row(c, r) for c, r in zip(todo, per_case, strict=False)]
    many_rows = [_many_row(c, r) for c, r in zip(many, per_case[len(todo) :], strict=True)]
    if rows:
        write_per_seed(out, [r for r in runs if not isinstance(r, ManyRun)])
        write_table(rows, out, TABLE, markdown_table(rows))
        (out / FINDINGS).write_text(findings(rows))
    if many_rows:
        write_csv(out / "one_vs_n_per_seed.csv", [r for r in runs if isinstance(r, ManyRun)])
        write_table(many_rows, out, MANY_TABLE, many_table(many_rows))
    if figures:
        for queue in dict.fromkeys(r.queue for r in rows):
            plot(rows, queue, out / f"share_{queue}.png")
        for rate, rtt in dict.fromkeys((r.rate_mbps, r.rtt_ms) for r in rows):
            queues = [q for q in QUEUES if any(r.queue == q for r in rows)]
            plot_point(rows, queues, rate, rtt, out / f"share_{rate}M_{rtt}ms.png")
        if many_rows:
            plot_many(many_rows, out / "one_vs_n.png")
    return [*rows, *many_rows]


def _spread(xs: list[float], fmt: str = "{:.2f}") -> str:
    """Median and range of ``xs``, or "not run"."""
    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return "not run"
    lo, mid, hi = min(xs), statistics.median(xs), max(xs)
    return f"{fmt.format(mid)} (from {fmt.format(lo)} to {fmt.format(hi)})"


def _shares(rows: list[Row], queue: str, scalable: set[str], classic: set[str]) -> list[float]:
    """The scalable algorithm's share in each row of ``queue`` that pairs one with a
    classic algorithm, over every rate and RTT."""
    out = []
    for r in rows:
        if r.queue != queue:
            continue
        if r.a in scalable and r.b in classic:
            out.append(r.a_share)
        elif r.b in scalable and r.a in classic:
            out.append(1 - r.a_share)
    return out


def findings(rows: list[Row]) -> str:
    """What a reader should take from the grid, each figure computed from ``rows``: the
    median (and range over rates and RTTs) of the shares and delays that tell the story."""
    l4s, classic = {"prague"}, {"cubic", "newreno"}
    unfair = [abs(r.a_share - 0.5) for r in rows if r.queue == "fq_codel" and r.a != r.b]
    delays = [
        (r.a_qdelay_p99_ms, r.b_qdelay_p99_ms)
        for r in rows
        if r.queue == "dualpi2" and r.a == "prague" and r.b in classic
    ]
    others = {"dctcp", "bbr", "bbr3"} & {r.a for r in rows}
    lines = [
        "**What the grid shows** (medians over every rate and RTT run, the range in brackets):",
        "",
        "1. **One RFC 3168 queue hands the link to the scalable sender.** In a single "
        "fq_codel queue Prague's share against CUBIC or Reno is "
        f"{_spread(_shares(rows, 'fq_codel1', l4s, classic))}, and in PIE "
        f"{_spread(_shares(rows, 'pie', l4s, classic))}; flow queueing (fq_codel) keeps "
        f"every pair within {_spread(unfair)} of an even split.",
        "2. **DualPI2 separates the delays, not always the rates.** Prague's queueing delay "
        f"p99 beside CUBIC or Reno is {_spread([d[0] for d in delays], '{:.1f}')} ms against "
        f"the classic flow's {_spread([d[1] for d in delays], '{:.1f}')} ms; Prague's share "
        f"is {_spread(_shares(rows, 'dualpi2', l4s, classic))}: the coupling balances rates "
        "at one RTT and drifts with RTT and rate.",
        "3. **Senders that are neither L4S nor classic break DualPI2's balance.** Against "
        "Prague in DualPI2, "
        + "; ".join(
            f"{o}'s share is {_spread(_shares(rows, 'dualpi2', {o}, l4s))}" for o in sorted(others)
        )
        + " (DCTCP's ECT(0) packets meet the squared classic probability; BBR answers "
        "neither the classic queue's drops below its loss threshold nor, without "
        "`ecn_low`, marks).",
        "",
    ]
    return "\n".join(lines)


def facts(out_dir: Path) -> dict[str, str]:
    """The 1-vs-N spans the docs' prose quotes, from ``one_vs_n.csv``: in fq_codel the lone
    flow's share over its fair fifth, the least Jain's index and the pairings; in DualPI2
    one BBR v1 flow's share over its fifth and goodput against four of any other algorithm,
    one CUBIC or Reno flow's against four BBR v1 flows, and the least Jain's index."""
    rows = read_csv(out_dir / "one_vs_n.csv")

    def of(key: str, queue: str, a: tuple[str, ...] = (), b: tuple[str, ...] = ()) -> list[float]:
        """Column ``key`` of ``queue``'s rows whose lone flow runs one of ``a`` against one
        of ``b`` (any, where empty)."""
        return [
            float(r[key])
            for r in rows
            if r["queue"] == queue and (not a or r["a"] in a) and (not b or r["b"] in b)
        ]

    classic = ("cubic", "newreno")
    return {
        "fq_codel_over_fair": span(of("a_over_fair", "fq_codel"), ".2f", " to "),
        "fq_codel_least_jain": f"{min(of('jain', 'fq_codel')):.2f}",
        "fq_codel_pairings": str(len(of("jain", "fq_codel"))),
        "dualpi2_bbr_over_fair": span(of("a_over_fair", "dualpi2", a=("bbr",)), ".1f", " to "),
        "dualpi2_bbr_mbps": span(of("a_mbps", "dualpi2", a=("bbr",)), ".0f", " to "),
        "dualpi2_under_bbr_over_fair": span(
            of("a_over_fair", "dualpi2", a=classic, b=("bbr",)), ".2f", " to "
        ),
        "dualpi2_least_jain": f"{min(of('jain', 'dualpi2')):.2f}",
    }


def headline(out_dir: Path) -> str:
    """What the grid shows: the bold title of each finding in its ``findings.md``."""
    return " ".join(finding_titles(out_dir / FINDINGS))


def _ms(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1f}"


def markdown_table(rows: list[Any]) -> str:
    """The pairs' table, then (where there are 1-vs-N rows) the 1-vs-N table."""
    many = [r for r in rows if isinstance(r, ManyRow)]
    rows = [r for r in rows if not isinstance(r, ManyRow)]
    if many:
        return (pairs_table(rows) + "\n" if rows else "") + many_table(many)
    return pairs_table(rows)


def many_table(rows: list[ManyRow]) -> str:
    n = rows[0].n
    head = (
        f"| a | {n} x b | queue | Mbit/s | RTT ms | a's share (fair {1 / (n + 1):.2f}) "
        "| a / fair | Jain | a / each b Mbit/s (b's range) | queue delay p99 ms (a / b) "
        "| drops (a / all b) | marks (a / all b) | utilisation |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r.a} | {r.b} | {r.queue} | {r.rate_mbps} | {r.rtt_ms} | {r.a_share:.2f} "
        f"| {r.a_over_fair:.2f} | {r.jain:.2f} | {r.a_mbps:.1f} / {r.b_mbps:.1f} "
        f"({r.b_min_mbps:.1f}-{r.b_max_mbps:.1f}) "
        f"| {_ms(r.a_qdelay_p99_ms)} / {_ms(r.b_qdelay_p99_ms)} "
        f"| {r.a_drops:.0f} / {r.b_drops:.0f} | {r.a_marks:.0f} / {r.b_marks:.0f} "
        f"| {r.utilisation:.2f} |"
        for r in rows
    ]
    note = f"\nMeans of {rows[0].seeds} seeds; one flow of a against {n} of b; Jain's index "
    note += f"over all {n + 1} flows (each seed's, averaged); goodput, drops and marks over "
    note += f"{WINDOW[0]:g}-{WINDOW[1]:g} s, queue delay p99 over the whole run (b: the mean "
    note += f"of its {n} flows').\n"
    return head + "\n".join(lines) + "\n" + note


def pairs_table(rows: list[Row]) -> str:
    seeds = rows[0].seeds if rows else 0
    head = (
        "| a | b | queue | Mbit/s | RTT ms | a's share | Jain | a / b Mbit/s | queue delay p99 "
        "ms (a / b) | drops (a / b) | marks (a / b) | utilisation |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r.a} | {r.b} | {r.queue} | {r.rate_mbps} | {r.rtt_ms} | {r.a_share:.2f} "
        f"| {r.jain:.2f} | {r.a_mbps:.1f} / {r.b_mbps:.1f} "
        f"| {_ms(r.a_qdelay_p99_ms)} / {_ms(r.b_qdelay_p99_ms)} "
        f"| {r.a_drops:.0f} / {r.b_drops:.0f} | {r.a_marks:.0f} / {r.b_marks:.0f} "
        f"| {r.utilisation:.2f} |"
        for r in rows
    ]
    note = f"\nMeans of {seeds} seeds; a flow's goodput, drops and marks over {WINDOW[0]:g}-"
    note += f"{WINDOW[1]:g} s, its queue delay p99 over the whole run.\n"
    return head + "\n".join(lines) + "\n" + note


scenarios, _cases = seeded_hooks(all_cases, scenario, DEFAULT_SEEDS)

OPTIONS: tuple[Option, ...] = (
    quick_option(
        "Prague and BBR v1 against CUBIC, DualPI2 and one fq_codel queue, one seed "
        "(1-vs-N: against 4 CUBIC and back, DualPI2)"
    ),
    seeds_option("Run each case with seeds 1..N of the hosts' jitter (default 4)."),
)

EXPERIMENT = declare(
    __name__,
    name="coexistence",
    title="Every scalable and classic sender against every queue: shares, delay, loss, marks",
    paper="the coexistence matrix L4S researchers assemble from testbeds (no single source)",
    groups=GROUPS,
    options=OPTIONS,
    tables=(TABLE, "table.csv", FINDINGS, MANY_TABLE, "one_vs_n.csv"),
    figures=("share_*.png", "one_vs_n.png"),
)
