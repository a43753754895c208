"""The AQM comparison of "L4S in FreeBSD with A3C" (Table 2 and the per-case figures), on
l4sim.

The paper ("L4S in FreeBSD with A3C", §5): a client and a server joined through one router
whose bottleneck is 10 Mbps or 1 Mbps with 20 ms of delay; four NewReno flows start at 0,
10, 20 and 30 s and each lasts 60 s; AQMs CoDel, PIE, FQ-CoDel, FQ-PIE and the authors'
FQ-L4S, each with ECN on and off. Table 2 reports the total data transferred, including
retransmissions, in Mbytes. We add Linux's DualPI2 beside FQ-L4S, and — for the ECN-on L4S
cases — a TCP Prague run, which shows what a scalable congestion control gets from the L
queue that NewReno with ECN cannot.

Parameters are the paper's: CoDel target 5 ms / interval 100 ms; PIE target 15 ms, tupdate
15 ms, alpha 0.125, beta 1.25, max_burst 150 ms, max_ecnth 0.1; FQ-CoDel quantum 1514 B,
limit 10240 packets, 1024 flows; FQ-PIE and FQ-L4S 6 queues (3 pairs), limit 10240,
quantum 1514 B. FQ-L4S classifies as the authors' code does (``dn_sched_l4s``, the listing of
the paper's Algorithm 5: ``(ip->ip_tos & IPTOS_ECN_MASK) != 0``): any ECT codepoint or CE
goes to the L queue, so NewReno's ECT(0) is L4S there (``ecn_mask = "any_ect"``; the
paper's prose says ECT(1) only, which is l4sim's ``fq_l4s`` default ``l4s_ect``).
:data:`CLASSIFIERS` names both; ``reproduce(classifier=...)`` picks one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.engine.results import write
from l4sim.engine.run import run
from l4sim.executors import Executor
from l4sim.experiments import reference
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import read_csv, write_per_seed, write_table
from l4sim.experiments.base import declare
from l4sim.scenario import Scenario
from l4sim.units import format_number as _fmt

#: Where Table 2 of the paper lives (``l4sim/data/reference``).
REFERENCE = "paper004_table2.csv"

#: Table 2 of the paper: (AQM, rate) → (Mbytes without ECN, Mbytes with ECN).
PAPER_TABLE2: dict[tuple[str, str], tuple[float, float]] = {
    (r["aqm"], r["rate"]): (float(r["mbytes_noecn"]), float(r["mbytes_ecn"]))
    for r in reference.rows(REFERENCE)
}

_PIE = {
    "target": "15ms",
    "tupdate": "15ms",
    "alpha": 0.125,
    "beta": 1.25,
    "max_burst": "150ms",
    "max_ecnth": 0.1,
}

#: The queue disciplines compared, configured as in the paper (DualPI2: Linux defaults).
AQMS: dict[str, dict[str, Any]] = {
    "codel": {"kind": "codel", "target": "5ms", "interval": "100ms"},
    "pie": {"kind": "pie", **_PIE},
    "fq_codel": {
        "kind": "fq_codel",
        "target": "5ms",
        "interval": "100ms",
        "quantum": "1514B",
        "limit": "10240p",
        "flows": 1024,
    },
    "fq_pie": {"kind": "fq_pie", **_PIE, "quantum": "1514B", "limit": "10240p", "flows": 6},
    "fq_l4s": {"kind": "fq_l4s", **_PIE, "quantum": "1514B", "limit": "10240p", "pairs": 3},
    "dualpi2": {"kind": "dualpi2"},
}

#: Subsets ``l4sim reproduce aqm-004 --only`` accepts, and the table it writes.
GROUPS = tuple(AQMS)
TABLE = "table2.md"
#: Data transferred with ECN against without, per AQM and rate: the paper's and ours.
ECN_EFFECT = "ecn_effect.md"

#: The L4S AQMs, where the Prague variant is also run with ECN on.
L4S_AQMS = ("fq_l4s", "dualpi2")
RATES = ("10Mbps", "1Mbps")
FLOW_STARTS_S = (0, 10, 20, 30)
FLOW_LIFETIME_S = 60


#: FQ-L4S's L-queue classifiers (``ecn_mask``): the authors' code (``any_ect``: ECT(0),
#: ECT(1) and CE; the default here) and the paper's prose / RFC 9331 (``l4s_ect``).
CLASSIFIERS = ("any_ect", "l4s_ect")


@dataclass(frozen=True)
class Case:
    aqm: str
    rate: str
    ecn: bool
    cca: str = "newreno"
    #: FQ-L4S's classifier (one of :data:`CLASSIFIERS`); other AQMs ignore it.
    classifier: str = CLASSIFIERS[0]

    @property
    def name(self) -> str:
        tail = "" if self.classifier == CLASSIFIERS[0] or self.aqm != "fq_l4s" else "-l4sect"
        return f"{self.aqm}-{self.rate}-{'ecn' if self.ecn else 'noecn'}-{self.cca}{tail}"


def cases(
    aqms: Iterable[str] = AQMS, rates: Iterable[str] = RATES, classifier: str = CLASSIFIERS[0]
) -> list[Case]:
    """Every (AQM, rate, ECN) case with NewReno, plus Prague on the ECN-on L4S cases."""
    if classifier not in CLASSIFIERS:
        raise ValueError(f"classifier must be one of {CLASSIFIERS}, not {classifier!r}")
    out = []
    for aqm in aqms:
        for rate in rates:
            out += [Case(aqm, rate, False), Case(aqm, rate, True)]
            if aqm in L4S_AQMS:
                out.append(Case(aqm, rate, True, "prague"))
    return [Case(c.aqm, c.rate, c.ecn, c.cca, classifier) for c in out]


#: AQMs with an ECN switch of their own; "ECN on" turns it on with the hosts' (the paper's
#: "tested with ECN enabled and disabled"). DualPI2 always marks ECT traffic.
_ECN_SWITCH = ("codel", "pie", "fq_codel", "fq_pie", "fq_l4s")


def scenario(case: Case, seed: int = 1) -> Scenario:
    """The paper's testbed: client h0 — router r0 — server h1, bottleneck on r0's egress."""
    return Scenario.parse(scenario_dict(case, seed))


def scenario_dict(case: Case, seed: int = 1, qdisc: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`scenario` as a dict, with ``qdisc`` in place of the case's AQM if given (taken
    as it is: the case's classifier applies to its own FQ-L4S only)."""
    if qdisc is None:
        qdisc = dict(AQMS[case.aqm])
        if case.aqm == "fq_l4s":
            qdisc["ecn_mask"] = case.classifier
    else:
        qdisc = dict(qdisc)
    if case.aqm in _ECN_SWITCH:
        qdisc["ecn"] = case.ecn
    flows = [
        {
            "kind": "tcp",
            "cca": case.cca,
            "ecn": case.ecn,
            "src": "h0",
            "dst": "h1",
            "start": f"{t}s",
            "stop": f"{t + FLOW_LIFETIME_S}s",
        }
        for t in FLOW_STARTS_S
    ]
    return {
        "name": case.name,
        "seed": seed,
        "duration": f"{max(FLOW_STARTS_S) + FLOW_LIFETIME_S}s",
        "topology": {
            "preset": "path",
            "routers": 1,
            "link": {"rate": "1Gbps", "delay": "100us"},
            "bottleneck": {"rate": case.rate, "delay": "20ms", "qdisc": qdisc},
            "bottleneck_index": 1,
        },
        "flows": flows,
    }


@dataclass
class Row:
    case: str
    aqm: str
    rate: str
    ecn: bool
    cca: str
    data_mbytes: float
    paper_mbytes: float | None
    retransmits: int
    #: Payload delivered by all flows over the whole run, per second.
    goodput_mbps: float
    jain: float
    srtt_mean_ms: float | None
    sojourn_mean_ms: float | None
    sojourn_p99_ms: float | None
    l4s_sojourn_p99_ms: float | None
    drops: int
    ecn_marks: int


def _row(case: Case, summary: dict[str, Any]) -> Row:
    flows = summary["flows"]
    q = next(q for q in summary["queues"] if q["link"] == "r0->h1")
    srtts = [f["srtt_mean_s"] for f in flows if f["srtt_mean_s"] is not None]
    l4s = next((c for c in q.get("classes", []) if c["qdisc"] == "L4S"), None)
    paper = PAPER_TABLE2.get((case.aqm, case.rate))

    def ms(x: float | None) -> float | None:
        return None if x is None else x * 1e3

    return Row(
        case=case.name,
        aqm=case.aqm,
        rate=case.rate,
        ecn=case.ecn,
        cca=case.cca,
        data_mbytes=sum(f["bytes_sent"] for f in flows) / 1e6,
        paper_mbytes=None if paper is None or case.cca != "newreno" else paper[case.ecn],
        retransmits=sum(f["retransmits"] for f in flows),
        goodput_mbps=sum(f["bytes_acked"] for f in flows) * 8 / summary["sim_time_s"] / 1e6,
        jain=summary["jain_fairness"],
        srtt_mean_ms=ms(sum(srtts) / len(srtts)) if srtts else None,
        sojourn_mean_ms=ms(q["sojourn_mean_s"]),
        sojourn_p99_ms=ms(q["sojourn_p99_s"]),
        l4s_sojourn_p99_ms=ms(l4s["sojourn_p99_s"]) if l4s else None,
        drops=q["drops"],
        ecn_marks=q["ecn_marks"],
    )


def _run_case(task: tuple[Case, str, bool]) -> Row:
    """One case (in a worker): run it, write its results dir (and figures), return its row."""
    case, case_dir, figures = task
    result = run(scenario(case))
    write(result, case_dir)
    if figures:
        from l4sim.plot import plot  # matplotlib only when figures are wanted

        plot(case_dir)
    return _row(case, result.summary)


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    rates: Iterable[str] = RATES,
    figures: bool = True,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
    classifier: str = CLASSIFIERS[0],
) -> list[Row]:
    """Run every case on ``executor`` (default: serial), write each one's results (and
    figures) under ``out_dir/<case>``, and write ``table2.csv``, ``table2.md`` and
    ``ecn_effect.md`` (data with ECN against without, per AQM and rate). Returns
    the table rows. ``on_case(case, done, total)`` is called as each case finishes.
    ``classifier``: FQ-L4S's L-queue codepoints (:data:`CLASSIFIERS`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else AQMS, rates, classifier)
    tasks = [(case, str(out / case.name), figures) for case in todo]
    rows = run_cases(_run_case, tasks, todo, executor, on_case)
    write_table(rows, out, TABLE, markdown_table(rows))
    (out / ECN_EFFECT).write_text(ecn_effect_table(rows))
    write_per_seed(out, rows)  # one run per case, seed 1
    return rows


def ecn_effect_table(rows: list[Row]) -> str:
    """Per AQM and rate with a NewReno row each way: the data transferred without ECN and
    with it, in the paper and in l4sim, and the relative change (Table 2's ECN effect)."""

    def change(off: float, on: float) -> str:
        return f"{100 * (on / off - 1):+.1f} %"

    by = {(r.aqm, r.rate, r.ecn): r for r in rows if r.cca == "newreno"}
    lines = [
        "| AQM | rate | paper MB, off → on | paper | l4sim MB, off → on | l4sim |",
        "|---|---|---|---|---|---|",
    ]
    for (aqm, rate, ecn), off in by.items():
        on = by.get((aqm, rate, True))
        if ecn or on is None:
            continue
        paper = "-", "-"
        if off.paper_mbytes is not None and on.paper_mbytes is not None:
            paper = (
                f"{off.paper_mbytes:.2f} → {on.paper_mbytes:.2f}",
                change(off.paper_mbytes, on.paper_mbytes),
            )
        ours = f"{off.data_mbytes:.2f} → {on.data_mbytes:.2f}"
        lines.append(
            f"| {aqm} | {rate} | {paper[0]} | {paper[1]} | {ours} "
            f"| {change(off.data_mbytes, on.data_mbytes)} |"
        )
    return "\n".join(lines) + "\n"


def markdown_table(rows: list[Row]) -> str:
    """Table 2 side by side: ours and the paper's data transferred, plus what the paper
    could not measure (queue delay, drops, marks)."""
    head = (
        "| AQM | rate | ECN | CC | data MB (l4sim) | data MB (paper) | retx | goodput Mbps "
        "| Jain | mean sojourn ms | p99 sojourn ms | L4S p99 ms | drops | marks |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r.aqm} | {r.rate} | {'on' if r.ecn else 'off'} | {r.cca} | {r.data_mbytes:.2f} "
        f"| {_fmt(r.paper_mbytes)} | {r.retransmits} | {r.goodput_mbps:.2f} | {r.jain:.3f} "
        f"| {_fmt(r.sojourn_mean_ms)} | {_fmt(r.sojourn_p99_ms)} "
        f"| {_fmt(r.l4s_sojourn_p99_ms)} | {r.drops} | {r.ecn_marks} |"
        for r in rows
    ]
    return head + "\n".join(lines) + "\n"


def facts(out_dir: Path) -> dict[str, str]:
    """The numbers the docs' prose quotes, from a full run's ``table2.csv``: our volumes
    over the paper's (lowest-highest)."""
    rows = read_csv(out_dir / "table2.csv")
    ratios = [float(r["data_mbytes"]) / float(r["paper_mbytes"]) for r in rows if r["paper_mbytes"]]
    return {"volume_ratio": f"{min(ratios):.1f}-{max(ratios):.1f}"}


def headline(out_dir: Path) -> str:
    """What a full run shows, from its ``table2.csv``: our volumes against the paper's, and
    Prague's sojourn in DualPI2's L queue at 10 Mbit/s."""
    rows = read_csv(out_dir / "table2.csv")
    prague = next(
        r for r in rows if (r["aqm"], r["rate"], r["cca"]) == ("dualpi2", "10Mbps", "prague")
    )
    return (
        f"Data volumes {facts(out_dir)['volume_ratio']} times the paper's (its testbed's pipe "
        "carried the ACKs too); its ECN effects come from FreeBSD's senders and do not appear. "
        f"Prague in DualPI2's L queue at 10 Mbit/s: {float(prague['sojourn_mean_ms']):.2f} ms "
        f"mean, {float(prague['sojourn_p99_ms']):.2f} ms p99 sojourn, "
        f"{prague['retransmits']} retransmissions."
    )


EXPERIMENT = declare(
    __name__,
    name="aqm-comparison",
    aliases=("aqm-004",),
    title="AQM comparison: CoDel, PIE, FQ-CoDel, FQ-PIE, FQ-L4S and DualPI2, four NewReno flows",
    paper='Paper 004, "L4S in FreeBSD with A3C", §5, Table 2 (data transferred)',
    groups=GROUPS,
    tables=(TABLE, "table2.csv", ECN_EFFECT),
    figures=("<case>/*.png",),
    reference=(REFERENCE,),
    scenarios=lambda out_dir, groups, **_: {c.name: scenario(c) for c in cases(groups)},
)
