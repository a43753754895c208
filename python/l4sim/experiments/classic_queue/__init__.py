"""Classic TCP beside a dominant flow in one classic queue: l4sim against the kernel.

Issue 35's grid. Two bulk flows share ONE queue: a dominant flow that does not yield to
the AQM as a classic flow does (BBR v1, which ignores marks and keeps its own rate, or
DCTCP, which cuts by alpha / 2 on marks) and a classic flow (CUBIC or Reno). The queue is
fq_codel with a single flow queue (``flows = 1``), PIE (Linux defaults), Linux RED
(``variant = "linux"``, limit 80 ms of the link, thresholds as ``tc red`` derives them)
without and with Adaptive RED, CoDel (defaults) or a drop-tail pfifo of 120 ms; the
classic flow's ECN on or off (the AQM marks when it is on; DCTCP needs marks, so with
DCTCP the AQM's ECN is always on; pfifo never marks, so it is one case); 10 and 50 Mbit/s;
10 and 40 ms base RTT (a dumbbell: access links 1 Gbit/s / 1 ms, the bottleneck carries
the rest). 20 s runs, both flows from t = 0; each flow's rate is its goodput over
[5 s, 20 s].

The kernel's side is a stored measurement (:data:`REFERENCE`, in ``l4sim/data/reference``):
the same scenarios run by ``l4sim emulate`` on this project's VM, kernel CUBIC, Reno, BBR
and DCTCP (a BPF ``struct_ops`` DCTCP: the kernel has no ``tcp_dctcp``) through l4sim's
router. ``sudo python benchmarks/emulate_classic_queue.py`` re-measures it and rewrites the
file; ``l4sim reproduce classic-queue`` re-runs only the simulation (no root, seconds) and
compares each flow with the kernel's: within 20 % or not, and the Reno : CUBIC ratio of
each pair of cells that differ only in the classic flow.

Group ``issue35`` adds the issue's own three cases: NewReno, CUBIC and BBR, one flow each,
30 Mbit/s, bottleneck delay 15 ms, access 1 ms (34 ms base RTT), 30 s, through PIE
(defaults), fq_codel with one flow queue and a 300-packet pfifo; the whole run's goodput,
as the issue gives it; the kernel ran each four times (one run of three flows is a draw:
in the pfifo, which of NewReno and CUBIC gets more changes from run to run).

l4sim's side is the mean of :data:`SEEDS` seeds per case (``--seeds N``): the seed moves
PIE's and RED's random draws and BBR's gain-cycle phase, and one seed of a classic flow
with a window of a few packets is as noisy as one kernel run (the issue's PIE case: CUBIC
1.76-2.45 Mbit/s over seeds 1-8).

The ECT(1) DCTCP the issue also asks for cannot run on this kernel (Linux 6.18 resets a
BPF congestion control's socket to ECT(0), see docs/emulation.md): not in the grid.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from l4sim.executors import Executor
from l4sim.experiments import reference
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import bullet_lines, read_rows, write_csv, write_per_seed
from l4sim.experiments.base import declare, seeds_option
from l4sim.scenario import Scenario

#: The kernel's measurements (``l4sim/data/reference``).
REFERENCE = "kernel_classic_queue.csv"
TOLERANCE = 0.20
#: The issue's goal: both flows within 20 % on this share of the flows.
GOAL = 0.90

RATES = (50, 10)  # the 50 Mbit/s half first (it was measured first)
RTTS = (10, 40)
DOMINANT = ("bbr", "dctcp")
CLASSIC = ("cubic", "newreno")
QDISCS = ("fq_codel1", "pie", "red", "ared", "codel", "pfifo")
DURATION_S = 20.0
MEASURE_FROM_S = 5.0
ISSUE_QDISCS = ("pie", "fq_codel1", "pfifo300")
ISSUE_RUNS = 4
ISSUE = "issue35"
#: l4sim's side: the mean over these seeds of each case (``--seeds N``: 1..N).
SEEDS = (1, 2, 3, 4)
#: What ``--only`` selects: rates, qdiscs, dominant flows, classic flows, ``ecn`` /
#: ``noecn``, and ``issue35`` (the issue's three cases; alone: only them).
GROUPS = (
    *(f"{r}Mbps" for r in RATES),
    *(f"{r}ms" for r in RTTS),
    *QDISCS,
    *DOMINANT,
    *CLASSIC,
    "ecn",
    "noecn",
    ISSUE,
)
TABLE = "table.md"
#: The counts under the table, alone: what the docs page's verdict quotes.
AGREEMENT = "agreement.md"


@dataclass(frozen=True)
class Case:
    """One cell: ``flows`` (the dominant flow first), through ``qdisc`` at ``rate_mbps``
    and ``rtt_ms`` base RTT; ``ecn``: the classic flows' ECN (and the AQM's marking)."""

    rate_mbps: int
    rtt_ms: int
    qdisc: str
    ecn: bool
    flows: tuple[str, ...]
    duration_s: float = DURATION_S
    measure_from_s: float = MEASURE_FROM_S
    #: The issue's cases give the bottleneck's one-way delay, not the RTT.
    bottleneck_delay_ms: float | None = None

    @property
    def name(self) -> str:
        if self.bottleneck_delay_ms is not None:
            return f"{ISSUE}-{self.qdisc}"
        e = "ecn" if self.ecn else "noecn"
        return f"{self.rate_mbps}M-{self.rtt_ms}ms-{self.qdisc}-{e}-{'-'.join(self.flows)}"

    @property
    def dominant(self) -> str:
        return self.flows[0]

    @property
    def classic(self) -> str:
        return self.flows[-1]


def grid_cases() -> list[Case]:
    """Every grid cell, 50 Mbit/s first, then 10 ms before 40 ms."""
    out = []
    for rate in RATES:
        for rtt in RTTS:
            for dom in DOMINANT:
                for cl in CLASSIC:
                    for q in QDISCS:
                        for ecn in (False,) if q == "pfifo" else (False, True):
                            out.append(Case(rate, rtt, q, ecn, (dom, cl)))
    return out


def issue_cases() -> list[Case]:
    """The issue's three cases (NewReno + CUBIC + BBR at 30 Mbit/s)."""
    return [
        Case(30, 34, q, False, ("newreno", "cubic", "bbr"), 30.0, 0.0, 15.0) for q in ISSUE_QDISCS
    ]


def cases(groups: Iterable[str] = GROUPS) -> list[Case]:
    """The cells whose rate, RTT, qdisc, dominant flow, classic flow and ECN are each among
    those ``groups`` names (none of a kind named: all of that kind); ``issue35`` adds the
    issue's cases (named alone: only them)."""
    wanted = set(groups)
    unknown = wanted - set(GROUPS)
    if unknown:
        raise ValueError(f"unknown groups {sorted(unknown)}; known: {', '.join(GROUPS)}")
    grid = wanted - {ISSUE}
    out: list[Case] = []
    if grid or not wanted or wanted == set(GROUPS):

        def pick(kind: Iterable[str]) -> set[str]:
            names = set(kind)
            return wanted & names or names

        rates = pick(f"{r}Mbps" for r in RATES)
        rtts = pick(f"{r}ms" for r in RTTS)
        qdiscs, doms, cls = pick(QDISCS), pick(DOMINANT), pick(CLASSIC)
        ecns = pick(("ecn", "noecn"))
        out += [
            c
            for c in grid_cases()
            if f"{c.rate_mbps}Mbps" in rates
            and f"{c.rtt_ms}ms" in rtts
            and c.qdisc in qdiscs
            and c.dominant in doms
            and c.classic in cls
            and (c.qdisc == "pfifo" or ("ecn" if c.ecn else "noecn") in ecns)
        ]
    if ISSUE in wanted:
        out += issue_cases()
    return out


def qdisc_for(case: Case) -> dict[str, Any]:
    """The bottleneck qdisc of ``case``. The AQM marks when the classic flow asks for ECN,
    and always beside DCTCP (which needs marks)."""
    mark = case.ecn or "dctcp" in case.flows
    q = case.qdisc
    if q == "fq_codel1":
        return {"kind": "fq_codel", "flows": 1, "ecn": mark}
    if q in ("pie", "codel"):
        return {"kind": q, "ecn": mark}
    if q in ("red", "ared"):
        # `tc red limit L bandwidth R [adaptive] [ecn]`: L = 80 ms of the link, so
        # max = L / 4 (20 ms) and min = max / 3, as tc derives them.
        limit = round(case.rate_mbps * 1e6 / 8 * 0.080)
        red: dict[str, Any] = {
            "kind": "red",
            "variant": "linux",
            "limit": f"{limit}B",
            "bandwidth": f"{case.rate_mbps}Mbps",
            "ecn": mark,
        }
        return red | ({"adaptive": True} if q == "ared" else {})
    if q == "pfifo":  # 120 ms of the link in 1500-byte packets
        return {"kind": "fifo", "limit": f"{case.rate_mbps * 10}p"}
    if q == "pfifo300":
        return {"kind": "fifo", "limit": "300p"}
    raise ValueError(f"unknown qdisc {q!r}")


def scenario(case: Case, seed: int = 1) -> Scenario:
    """``case`` as a scenario: a dumbbell, one flow per sender, all from t = 0."""
    delay = case.bottleneck_delay_ms
    if delay is None:
        delay = case.rtt_ms / 2 - 2  # 1 ms access on each side
    flows = [
        {"kind": "tcp", "cca": cca, "ecn": cca == "dctcp" or (cca != "bbr" and case.ecn)}
        for cca in case.flows
    ]
    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{case.duration_s:g}s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "1ms"},
                "bottleneck": {
                    "rate": f"{case.rate_mbps}Mbps",
                    "delay": f"{delay:g}ms",
                    "qdisc": qdisc_for(case),
                },
            },
            "flows": flows,
        }
    )


def window_rates(flows: pl.DataFrame, n: int, t0: float, t1: float) -> list[float]:
    """Each of the ``n`` flows' goodput (bit/s) over [t0, t1] from the per-flow series'
    cumulative ``delivered_bytes`` (the samples nearest t0 and t1; 0 bytes at t0 = 0)."""
    out = []
    for i in range(n):
        f = flows.filter(pl.col("flow") == i).sort("time_s")
        if f.is_empty():
            out.append(0.0)
            continue
        t = f["time_s"].to_list()
        d = f["delivered_bytes"].to_list()

        def at(x: float, t: list[float] = t, d: list[int] = d) -> int:
            if x <= 0:
                return 0
            return d[min(range(len(t)), key=lambda j: abs(t[j] - x))]

        out.append((at(t1) - at(t0)) * 8 / (t1 - t0))
    return out


def measure(case: Case, summary: dict[str, Any], flows: pl.DataFrame) -> dict[str, Any]:
    """What is compared of one run (simulated or emulated): each flow's rate over the
    case's window, and the bottleneck's whole-run figures."""
    q = next(x for x in summary["queues"] if x["link"] == "r0->r1")
    return {
        "mbps": [
            r / 1e6
            for r in window_rates(flows, len(case.flows), case.measure_from_s, case.duration_s)
        ],
        "retransmits": [f.get("retransmits") or 0 for f in summary["flows"]],
        "sojourn_ms": 1e3 * (q["sojourn_mean_s"] or 0.0),
        "drops": q["drops"],
        "marks": q["ecn_marks"],
    }


@dataclass(frozen=True)
class Row:
    """One flow of one case: l4sim's rate and the kernel's (mean over its runs)."""

    case: str
    rate_mbps: int
    rtt_ms: int
    qdisc: str
    ecn: bool
    flow: int
    cca: str
    sim_mbps: float
    kernel_mbps: float | None
    kernel_runs: int
    err: float | None
    sim_sojourn_ms: float
    kernel_sojourn_ms: float | None
    sim_drops: int
    sim_marks: int
    #: The kernel's run-to-run spread, max / min - 1 over its runs (None: one run).
    kernel_spread: float | None = None
    #: Seeds averaged into ``sim_mbps``.
    sim_seeds: int = 1

    @property
    def within(self) -> bool:
        return self.err is not None and abs(self.err) <= TOLERANCE


def kernel_rows() -> dict[str, list[dict[str, str]]]:
    """The stored kernel measurements by case name (every run's flows), empty when the file
    does not exist yet."""
    try:
        rows = reference.rows(REFERENCE)
    except FileNotFoundError:
        return {}
    out: dict[str, list[dict[str, str]]] = {}
    for r in rows:
        out.setdefault(r["case"], []).append(r)
    return out


def _simulate(case: Case, seeds: Sequence[int] = SEEDS) -> dict[str, Any]:
    """:func:`measure` of ``case`` averaged over ``seeds`` (``runs``: each seed's)."""
    from l4sim.engine.run import run

    runs = []
    for seed in seeds:
        res = run(scenario(case, seed))
        runs.append(measure(case, res.summary, res.flows))
    return {
        "mbps": [statistics.fmean(r["mbps"][i] for r in runs) for i in range(len(case.flows))],
        "sojourn_ms": statistics.fmean(r["sojourn_ms"] for r in runs),
        "drops": round(statistics.fmean(r["drops"] for r in runs)),
        "marks": round(statistics.fmean(r["marks"] for r in runs)),
        "seeds": list(seeds),
        "runs": runs,
    }


def compare(case: Case, sim: dict[str, Any], kernel: list[dict[str, str]]) -> list[Row]:
    """One :class:`Row` per flow of ``case``: ``sim`` (:func:`measure`) beside the mean of
    the kernel's runs (``kernel``: its CSV rows)."""
    rows = []
    for i, cca in enumerate(case.flows):
        mine = [r for r in kernel if int(r["flow"]) == i]
        k = statistics.fmean(float(r["mbps"]) for r in mine) if mine else None
        ks = statistics.fmean(float(r["sojourn_ms"]) for r in mine) if mine else None
        s = sim["mbps"][i]
        ms = [float(r["mbps"]) for r in mine]
        spread = round(max(ms) / min(ms) - 1, 4) if len(ms) > 1 and min(ms) > 0 else None
        rows.append(
            Row(
                case.name,
                case.rate_mbps,
                case.rtt_ms,
                case.qdisc,
                case.ecn,
                i,
                cca,
                round(s, 4),
                None if k is None else round(k, 4),
                len(mine),
                None if not k else round(s / k - 1, 4),
                round(sim["sojourn_ms"], 3),
                None if ks is None else round(ks, 3),
                sim["drops"],
                sim["marks"],
                spread,
                len(sim.get("seeds", [1])),
            )
        )
    return rows


def reno_cubic_ratios(rows: list[Row]) -> list[tuple[str, float, float]]:
    """(cell, kernel ratio, l4sim ratio) of Reno's rate to CUBIC's, for each pair of grid
    cells that differ only in the classic flow and both measured on the kernel."""
    by = {(r.case, r.flow): r for r in rows}
    out = []
    for r in rows:
        if r.flow != 1 or r.cca != "newreno" or not r.case.endswith("-newreno"):
            continue
        cub = by.get((r.case[: -len("newreno")] + "cubic", 1))
        if cub is None or not r.kernel_mbps or not cub.kernel_mbps or not cub.sim_mbps:
            continue
        cell = r.case[: -len("-newreno")]
        out.append((cell, r.kernel_mbps / cub.kernel_mbps, r.sim_mbps / cub.sim_mbps))
    return out


def geomean(xs: Iterable[float]) -> float:
    xs = [x for x in xs if x > 0]
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else math.nan


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
    seeds: Sequence[int] = SEEDS,
) -> list[Row]:
    """Simulate every case on each of ``seeds`` (on ``executor``), compare each flow's mean
    with the stored kernel measurement, write ``table.md``, ``table.csv`` (one row per
    flow), ``per_seed.csv`` (one row per flow and seed) and (``figures``)
    ``sim_vs_kernel.png``; ``agreement.md`` repeats the table's counts for the docs page's
    verdict. Returns the rows."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds names no seed; give at least one")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS)
    sims = run_cases(functools.partial(_simulate, seeds=seeds), todo, todo, executor, on_case)
    kern = kernel_rows()
    rows = [r for c, s in zip(todo, sims, strict=True) for r in compare(c, s, kern.get(c.name, []))]
    write_csv(out / "table.csv", rows)
    (out / TABLE).write_text(markdown_table(rows))
    (out / AGREEMENT).write_text("".join(f"- {line}\n" for line in summary_lines(rows)))
    write_per_seed(
        out,
        [
            {"case": c.name, "flow": i, "cca": cca, "seed": seed, "sim_mbps": round(m, 4)}
            for c, sim in zip(todo, sims, strict=True)
            for seed, run in zip(sim["seeds"], sim["runs"], strict=True)
            for i, (cca, m) in enumerate(zip(c.flows, run["mbps"], strict=True))
        ],
    )
    if figures:
        from l4sim.experiments.classic_queue.figures import scatter

        scatter(rows, out / "sim_vs_kernel.png")
    return rows


def headline(out_dir: Path) -> str:
    """What a full run shows: the first counts of its ``agreement.md`` and the kernel's
    agreement with itself."""
    lines = bullet_lines(out_dir / AGREEMENT)
    return " ".join([*lines[:2], next(x for x in lines if x.startswith("The kernel against"))])


def _f(x: float | None, fmt: str = ".2f") -> str:
    return "—" if x is None else format(x, fmt)


def _counts(rows: list[Row]) -> dict[str, str]:
    """The agreement's numbers, as the counts under the table and the docs' prose write
    them; a group with no rows has no entry."""
    grid = [r for r in rows if not r.case.startswith(ISSUE) and r.kernel_mbps is not None]
    out = {}

    def count(rs: list[Row]) -> str:
        n = len(rs)
        k = sum(r.within for r in rs)
        return f"{k} of {n} ({100 * k / n:.0f} %)" if n else "0 of 0"

    if grid:
        out["grid_within"] = count(grid)
        out["dominant_within"] = count([r for r in grid if r.flow == 0])
        out["classic_within"] = count([r for r in grid if r.flow == 1])
        misses = [r for r in grid if not r.within]
        out["grid_misses"] = str(len(misses))
        out["classic_misses"] = str(sum(r.flow == 1 for r in misses))
        spread = [r for r in misses if (r.kernel_spread or 0) > abs(r.err or 0)]
        out["misses_in_kernel_spread"] = str(len(spread))  # the kernel's runs differ more
        for q in QDISCS:
            if any(r.qdisc == q for r in grid):
                out[f"{q}_within"] = count([r for r in grid if r.qdisc == q])
        for dom in DOMINANT:
            rs = [r for r in grid if r.case.split("-")[-2] == dom]
            if rs:
                out[f"beside_{dom}_within"] = count(rs)
        errs = [r.err for r in grid if r.flow == 1 and r.err is not None]
        if errs:
            out["classic_median_error"] = f"{100 * statistics.median(errs):+.0f} %"
    ratios = reno_cubic_ratios(rows)
    if ratios:
        out["reno_cubic_pairs"] = str(len(ratios))
        out["kernel_reno_cubic"] = f"{geomean(x[1] for x in ratios):.2f}"
        out["reno_cubic"] = f"{geomean(x[2] for x in ratios):.2f}"
    twice = [r for r in rows if r.kernel_spread is not None]
    if twice:
        k = sum(r.kernel_spread is not None and r.kernel_spread <= TOLERANCE for r in twice)
        out["kernel_self_within"] = f"{k} of {len(twice)}"
    issue = [r for r in rows if r.case.startswith(ISSUE) and r.kernel_mbps is not None]
    if issue:
        out["issue_within"] = count(issue)
    return out


def summary_lines(rows: list[Row]) -> list[str]:
    """The counts under the table: flows within 20 % (all, per role, per qdisc, per
    dominant flow) and the Reno : CUBIC ratios."""
    c = _counts(rows)
    lines = []
    if "grid_within" in c:
        lines.append(f"Grid flows within 20 % of the kernel: {c['grid_within']} (goal ≥ 90 %).")
        lines.append(
            f"Dominant flows: {c['dominant_within']}; classic flows: {c['classic_within']}."
        )
        per = [f"{q} {c[f'{q}_within']}" for q in QDISCS if f"{q}_within" in c]
        lines.append("Per qdisc: " + "; ".join(per) + ".")
        lines += [
            f"Beside {dom}: {c[f'beside_{dom}_within']}."
            for dom in DOMINANT
            if f"beside_{dom}_within" in c
        ]
        if "classic_median_error" in c:
            lines.append(
                f"Classic flow's error, median {c['classic_median_error']} (l4sim / kernel - 1)."
            )
    if "reno_cubic_pairs" in c:
        lines.append(
            f"Reno : CUBIC rate ratio, geometric mean over {c['reno_cubic_pairs']} cell pairs: "
            f"kernel {c['kernel_reno_cubic']}, l4sim {c['reno_cubic']}."
        )
    if "kernel_self_within" in c:
        lines.append(
            f"The kernel against itself: {c['kernel_self_within']} flows run more than once "
            f"within 20 % across their runs (max / min - 1 <= 0.2)."
        )
    if "issue_within" in c:
        lines.append(f"Issue 35's three cases: {c['issue_within']} flows within 20 %.")
    return lines


def facts(out_dir: Path) -> dict[str, str]:
    """The numbers the docs' prose quotes, from a full run's ``table.csv``."""
    return _counts(read_rows(out_dir / "table.csv", Row))


def breakdown_table(rows: list[Row]) -> str:
    """Per qdisc and dominant flow: the dominant and the classic flows within 20 % of the
    kernel, and the classic flow's median error (grid cells measured on the kernel)."""
    grid = [r for r in rows if not r.case.startswith(ISSUE) and r.kernel_mbps is not None]
    head = "| qdisc |" + "".join(
        f" {d}: within 20 % | classic: within 20 % | classic: median error |" for d in DOMINANT
    )
    lines = [head, "|---|" + "---|---|---|" * len(DOMINANT)]
    for q in (*QDISCS, "all"):
        cells = []
        for d in DOMINANT:
            rs = [r for r in grid if (q == "all" or r.qdisc == q) and r.case.split("-")[-2] == d]
            dom = [r for r in rs if r.flow == 0]
            cl = [r for r in rs if r.flow == 1]
            errs = [r.err for r in cl if r.err is not None]
            med = f"{100 * statistics.median(errs):+.0f} %" if errs else "—"
            cells.append(
                f" {sum(r.within for r in dom)} of {len(dom)} | "
                f"{sum(r.within for r in cl)} of {len(cl)} | {med} |"
            )
        lines.append(f"| {q} |" + "".join(cells))
    return "\n".join(lines) + "\n"


def markdown_table(rows: list[Row]) -> str:
    """One line per case: its flows (dominant first), each flow's rate in l4sim and in the
    kernel (Mbit/s; l4sim's mean over its seeds, the kernel's over its runs) and l4sim's
    error (a flow more than 20 % off starred), the bottleneck's mean sojourn; the counts
    below."""
    n = max((r.sim_seeds for r in rows), default=1)
    seeds = f" (mean of {n} seeds)" if n > 1 else ""
    head = (
        f"| Mbit/s | RTT ms | qdisc | ECN | flows | l4sim Mbit/s{seeds} | kernel Mbit/s | error "
        "| sojourn ms l4sim / kernel |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    cases: dict[str, list[Row]] = {}
    for r in rows:
        cases.setdefault(r.case, []).append(r)
    lines = []
    for rs in cases.values():
        r0 = rs[0]
        errs = " / ".join(
            "—" if r.err is None else f"{100 * r.err:+.0f} %{'' if r.within else ' *'}" for r in rs
        )
        q = r0.qdisc if r0.qdisc != "pfifo" else "pfifo (no marks)"
        ecn = "" if r0.qdisc.startswith("pfifo") else ("on" if r0.ecn else "off")
        lines.append(
            f"| {r0.rate_mbps} | {r0.rtt_ms} | {q} | {ecn} | "
            f"{' + '.join(r.cca for r in rs)} | {' / '.join(f'{r.sim_mbps:.2f}' for r in rs)} "
            f"| {' / '.join(_f(r.kernel_mbps) for r in rs)} | {errs} "
            f"| {r0.sim_sojourn_ms:.1f} / {_f(r0.kernel_sojourn_ms, '.1f')} |"
        )
    tail = "\n".join(summary_lines(rows))
    return head + "\n".join(lines) + "\n\n" + tail + "\n\n" + breakdown_table(rows)


EXPERIMENT = declare(
    __name__,
    name="classic-queue",
    title="Classic TCP beside a dominant flow (BBR, DCTCP) in one classic queue, "
    "l4sim against the kernel",
    paper="Issue 35, item 2: the kernel's TCP through l4sim's router (l4sim emulate), "
    "stored in kernel_classic_queue.csv",
    groups=GROUPS,
    options=(
        seeds_option(
            f"Average l4sim's side of each case over seeds 1..N (default {len(SEEDS)}).",
        ),
    ),
    tables=(TABLE, "table.csv", AGREEMENT),
    figures=("sim_vs_kernel.png",),
    reference=(REFERENCE,),
    scenarios=lambda out_dir, groups, **_: {c.name: scenario(c) for c in cases(groups)},
)
