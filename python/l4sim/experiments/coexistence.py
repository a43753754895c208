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
from l4sim.experiments._cases import run_seeded, seeded_hooks, seeds_for
from l4sim.experiments._tables import finding_titles, write_per_seed, write_table
from l4sim.experiments.base import Option, declare, quick_option, seeds_option
from l4sim.scenario import Scenario
from l4sim.scenario.ccas import CCA_KINDS

#: The senders, scalable first; ``bbr3`` only where this build has it.
CCAS: tuple[str, ...] = tuple(
    c for c in ("prague", "dctcp", "bbr3", "bbr", "cubic", "newreno") if c in CCA_KINDS
)
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
GROUPS = (*CCAS, *QUEUES, *(f"{r}M" for r in RATES_MBPS), *(f"{t}ms" for t in RTTS_MS))


@dataclass(frozen=True)
class Case:
    a: str
    b: str
    queue: str
    rate_mbps: int
    rtt_ms: int

    @property
    def name(self) -> str:
        return f"{self.a}-{self.b}-{self.queue}-{self.rate_mbps}M-{self.rtt_ms}ms"


def cases(groups: Iterable[str] = GROUPS, *, quick: bool = False) -> list[Case]:
    """The grid's pairs (each unordered pair once, and each algorithm against itself), in
    table order, restricted to the algorithms, queues, rates and RTTs ``groups`` names (a
    kind not named: all of it; a pair runs when both its algorithms are named)."""
    wanted = set(groups)

    def pick(kinds: Iterable[Any], name: Callable[[Any], str] = str) -> list[Any]:
        return [k for k in kinds if name(k) in wanted] or list(kinds)

    ccas = pick(QUICK["ccas"] if quick else CCAS)
    queues = pick(QUICK["queues"] if quick else QUEUES)
    rates = pick(QUICK_GRID["rates"] if quick else RATES_MBPS, lambda r: f"{r}M")
    rtts = pick(QUICK_GRID["rtts"] if quick else RTTS_MS, lambda t: f"{t}ms")
    if quick:  # the contrasts the suite checks: scalable and BBR against CUBIC
        pairs = [(c, "cubic") for c in ccas if c != "cubic"]
    else:
        pairs = list(itertools.combinations_with_replacement(ccas, 2))
    return [Case(a, b, q, r, t) for q in queues for r in rates for t in rtts for a, b in pairs]


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


def scenario(case: Case, seed: int = 1) -> Scenario:
    """The two flows of ``case`` through its queue."""
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
            "flows": [{"kind": "tcp", "cca": case.a}, {"kind": "tcp", "cca": case.b}],
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


def _run(task: tuple[Case, int]) -> Run:
    case, seed = task
    sim = Simulation(scenario(case, seed))
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

    return Run(
        case.name,
        seed,
        rate(0),
        rate(1),
        qdelay(0),
        qdelay(1),
        grew(0, "drops"),
        grew(1, "drops"),
        grew(0, "ecn_marks"),
        grew(1, "ecn_marks"),
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


def _row(case: Case, runs: list[Run]) -> Row:
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
    one heatmap per queue."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS, quick=quick)
    seed_list = seeds_for(seeds, quick, DEFAULT_SEEDS)
    runs, per_case = run_seeded(_run, todo, seed_list, executor, on_case)
    rows = [_row(c, r) for c, r in zip(todo, per_case, strict=True)]
    write_per_seed(out, runs)
    write_table(rows, out, TABLE, markdown_table(rows))
    (out / FINDINGS).write_text(findings(rows))
    if figures:
        for queue in dict.fromkeys(r.queue for r in rows):
            plot(rows, queue, out / f"share_{queue}.png")
        for rate, rtt in dict.fromkeys((r.rate_mbps, r.rtt_ms) for r in rows):
            plot_point(rows, rate, rtt, out / f"share_{rate}M_{rtt}ms.png")
    return rows


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


def headline(out_dir: Path) -> str:
    """What the grid shows: the bold title of each finding in its ``findings.md``."""
    return " ".join(finding_titles(out_dir / FINDINGS))


def _ms(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1f}"


def markdown_table(rows: list[Row]) -> str:
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


def share_matrix(rows: list[Row], queue: str, rate: int, rtt: int) -> tuple[list[str], Any]:
    """The share of the row algorithm against the column algorithm (NaN: not run)."""
    import numpy as np

    names = [c for c in CCAS if any(c in (r.a, r.b) for r in rows)]
    m = np.full((len(names), len(names)), np.nan)
    for r in rows:
        if (r.queue, r.rate_mbps, r.rtt_ms) != (queue, rate, rtt):
            continue
        i, j = names.index(r.a), names.index(r.b)
        m[i, j] = r.a_share
        m[j, i] = 1 - r.a_share
    return names, m


def _heatmap(ax: Any, names: list[str], m: Any, title: str) -> Any:
    import numpy as np

    image = ax.imshow(m, vmin=0, vmax=1, cmap="RdBu_r")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_title(title, fontsize=9)
    for (y, x), v in np.ndenumerate(m):
        if not math.isnan(v):
            ax.text(x, y, f"{v:.2f}", ha="center", va="center", fontsize=7)
    return image


def _panels(
    n_rows: int, n_cols: int, draw: Callable[[Any, int, int], Any], title: str, path: Path
) -> None:
    from l4sim.plot import pyplot

    plt = pyplot()
    fig, axes = plt.subplots(
        n_rows, n_cols, figsize=(3.6 * n_cols + 1.2, 3.4 * n_rows), squeeze=False
    )
    image = None
    for i, j in itertools.product(range(n_rows), range(n_cols)):
        image = draw(axes[i][j], i, j) or image
    fig.suptitle(title)
    fig.subplots_adjust(wspace=0.55, hspace=0.55)
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.8, label="row's share")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def plot(rows: list[Row], queue: str, path: Path) -> None:
    """One heatmap per rate and RTT: the row algorithm's share of the pair's goodput."""
    rates = sorted({r.rate_mbps for r in rows if r.queue == queue})
    rtts = sorted({r.rtt_ms for r in rows if r.queue == queue})

    def draw(ax: Any, i: int, j: int) -> Any:
        names, m = share_matrix(rows, queue, rates[i], rtts[j])
        return _heatmap(ax, names, m, f"{rates[i]} Mbit/s, {rtts[j]} ms")

    title = f"{queue}: the row's share of the pair's goodput (0.5 is fair)"
    _panels(len(rates), len(rtts), draw, title, path)


def plot_point(rows: list[Row], rate: int, rtt: int, path: Path) -> None:
    """Every queue at one rate and RTT, two rows of three panels."""
    queues = [q for q in QUEUES if any(r.queue == q for r in rows)]
    cols = min(3, len(queues))

    def draw(ax: Any, i: int, j: int) -> Any:
        k = i * cols + j
        if k >= len(queues):
            ax.axis("off")
            return None
        names, m = share_matrix(rows, queues[k], rate, rtt)
        return _heatmap(ax, names, m, queues[k])

    title = f"{rate} Mbit/s, {rtt} ms: the row's share of the pair's goodput (0.5 is fair)"
    _panels(math.ceil(len(queues) / cols), cols, draw, title, path)


scenarios, _cases = seeded_hooks(cases, scenario, DEFAULT_SEEDS)

OPTIONS: tuple[Option, ...] = (
    quick_option("Prague and BBR v1 against CUBIC, DualPI2 and one fq_codel queue, one seed"),
    seeds_option("Run each case with seeds 1..N of the hosts' jitter (default 4)."),
)

EXPERIMENT = declare(
    __name__,
    name="coexistence",
    title="Every scalable and classic sender against every queue: shares, delay, loss, marks",
    paper="the coexistence matrix L4S researchers assemble from testbeds (no single source)",
    groups=GROUPS,
    options=OPTIONS,
    tables=(TABLE, "table.csv", FINDINGS),
    figures=("share_*.png",),
)
