"""Queue Protection on a DOCSIS upstream: an unresponsive or mis-marked flow in the
low-latency queue, with and without it (RFC 9957).

RFC 9957 (Briscoe & White, "The DOCSIS Queue Protection Algorithm to Preserve Low
Latency") explains why a shared low-latency (L) queue needs protecting: it relies on every
flow in it keeping the queue short, and a flow that does not (an unresponsive one, or a
classic one marked NQB or ECT(1) by mistake or malice) builds the queue every other L flow
then waits in. Queue Protection scores each flow's share of the L queue's congestion and,
once the queue's delay passes a critical level, redirects the packets of the flows with the
highest scores to the Classic queue ("sanctions" them).

We run it where DOCSIS runs it: on a cable modem's upstream (``docsis`` on the link: request
and grant per 2 ms MAP interval, a 50 Mbit/s service flow on a 100 Mbit/s channel, 0.5 ms
to the CMTS; ``docsis_dualq`` with Queue Protection as the modem's queue), two TCP Prague
flows with 21 ms of base RTT, and from 2 s one bad flow:

- ``nqb-cbr-1.5x`` / ``nqb-cbr-3x``: Not-ECT UDP marked NQB (DSCP 45, classified into the L
  queue) at 1.5 / 3 times its fair share of the service flow (25 / 50 Mbit/s);
- ``ect1-cbr-1.5x``: ECT(1) UDP at 1.5 times its share, which ignores every mark;
- ``nqb-cbr-1.5x-link`` / ``ect1-cbr-1.5x-link``: the same two unresponsive flows at 1.5
  times the service flow's whole rate (75 Mbit/s), which overloads the L queue by itself;
- ``nqb-reno``: a classic TCP Reno flow marked NQB: the L queue's AQM cannot signal a
  Not-ECT flow (it marks, never drops), so only the L buffer's overflow does;
- ``none``: the two Prague flows alone.

Each with Queue Protection on and off, and with two grant services: best effort (every byte
waits for the request-grant loop) and proactive grants (PGS: the L service flow's 5 Mbit/s
Guaranteed Grant Rate granted every interval unasked, the rest of its bytes requested).
The modem estimates its L delay as MULPI has a cable modem
do (the virtual queue); ``none`` and ``nqb-cbr-1.5x-link`` also run with the L queue's
length as the estimate (``-length``: the CMTS's estimate, the L queue's own delay), which
tells what Queue Protection holds apart from what the modem's estimate lets stand.

We report the Prague flows' rate and the L queue's delay p99 and mean (its sojourn: the
wait for a grant included), the bad flow's rate, the fraction of its packets sanctioned and
the time from its start to its first sanction. Each case is the mean of ``--seeds`` seeds
(3) of the hosts' jitter.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.engine.simulation import Simulation
from l4sim.executors import Executor
from l4sim.experiments._cases import run_seeded, seeded_hooks, seeds_for
from l4sim.experiments._tables import read_csv, span, write_per_seed, write_table
from l4sim.experiments.base import declare, quick_option, seeds_option
from l4sim.scenario import Scenario

TABLE = "table.md"
TABLE_CSV = "table.csv"
DEFAULT_SEEDS = (1, 2, 3)
DURATION_S = 12.0
BAD_START_S = 2.0
#: The service flow's Maximum Sustained Traffic Rate, and the channel's rate.
SF_MBPS = 50
CHANNEL_MBPS = 100
#: The fair share of each of three flows.
SHARE_MBPS = SF_MBPS / 3
#: The low-latency service flow's Guaranteed Grant Rate with PGS: a tenth of the aggregate
#: (5 of 50 Mbit/s, as the CableLabs ns-3 module's residential example), granted unasked
#: every 2 ms interval. (PGS grants belong to the L service flow alone, and take the
#: aggregate's tokens: a GGR of the whole rate would leave the Classic flow nothing.)
GGR_MBPS = SF_MBPS / 10
PGS_BYTES = int(GGR_MBPS * 10**6) // 8 * 2 // 1000
HOST_JITTER_US = 100
#: How finely the time to the first sanction is looked for (1 ms), and for how long (2 s).
SANCTION_STEP_NS = 10**6
SANCTION_LOOK_NS = 2 * 10**9
#: The bad flows' packet payloads: UDP packets of 1500 B, Reno segments of one MSS (the
#: default 1448 B), so their bytes sent over it count their packets.
UDP_BYTES = 1500
RENO_MSS = 1448

#: Bad flows: ``-1.5x`` / ``-3x`` are relative to a fair share of the service flow (one of
#: three flows), ``-1.5x-link`` to the service flow's whole rate.
BAD = (
    "none",
    "nqb-cbr-1.5x",
    "nqb-cbr-3x",
    "ect1-cbr-1.5x",
    "nqb-reno",
    "nqb-cbr-1.5x-link",
    "ect1-cbr-1.5x-link",
)
GRANTS = ("pgs", "best-effort")
QPROT = ("qprot", "no-qprot")
#: The L delay estimate: MULPI's for a cable modem (the virtual queue), or the L queue's
#: length (``l_delay = "queue"``), the latter only beside ``LENGTH_BAD``.
ESTIMATES = ("virtual", "length")
LENGTH_BAD = ("none", "nqb-cbr-1.5x-link")
GROUPS = (*BAD, *GRANTS, *QPROT, *ESTIMATES)
QUICK = {
    "bad": ("none", "nqb-cbr-1.5x", "ect1-cbr-1.5x", "nqb-cbr-1.5x-link"),
    "grants": ("pgs",),
    "estimates": ("virtual",),
}


@dataclass(frozen=True)
class Case:
    bad: str
    grants: str
    qprot: bool
    estimate: str = "virtual"

    @property
    def name(self) -> str:
        tail = "" if self.estimate == "virtual" else f"-{self.estimate}"
        return f"{self.bad}-{self.grants}-{'qprot' if self.qprot else 'no-qprot'}{tail}"


def cases(groups: Iterable[str] = GROUPS, *, quick: bool = False) -> list[Case]:
    wanted = set(groups)

    def pick(kind: str, full: tuple[str, ...]) -> list[str]:
        menu = QUICK[kind] if quick else full
        return [x for x in menu if x in wanted] or list(menu)

    bad, grants = pick("bad", BAD), pick("grants", GRANTS)
    qprot = [q == "qprot" for q in QPROT if q in wanted] or [True, False]
    out = [
        Case(b, g, q, e)
        for e in pick("estimates", ESTIMATES)
        for g in grants
        for b in bad
        if e == "virtual" or b in LENGTH_BAD
        for q in qprot
    ]
    if not out:
        raise ValueError(
            f"docsis-qprot runs the length estimate only beside {', '.join(LENGTH_BAD)}"
        )
    return out


def bad_flow(bad: str) -> dict[str, Any] | None:
    """The bad flow's scenario entry (None: no bad flow)."""
    if bad == "none":
        return None
    start = f"{BAD_START_S:g}s"
    if bad == "nqb-reno":
        return {"kind": "tcp", "cca": "newreno", "nqb": True, "start": start}
    kind, _, factor, *link = bad.split("-")
    rate = (SF_MBPS if link else SHARE_MBPS) * float(factor.rstrip("x"))
    ecn = "ect1" if kind == "ect1" else "not_ect"
    flow = {"kind": "udp", "rate": f"{rate:g}Mbps", "ecn": ecn, "packet_size": "1500B"}
    return {**flow, **({"nqb": True} if kind == "nqb" else {}), "start": start}


def scenario(case: Case, seed: int = 1, tcp: Mapping[str, Any] | None = None) -> Scenario:
    """The case's scenario; ``tcp`` replaces keys of the two L4S flows' entry (as
    ``{"cca": "dctcp", "ect1": True}`` beside a simulator that has no Prague)."""
    docsis: dict[str, Any] = {"max_sustained_rate": f"{SF_MBPS}Mbps"}
    if case.grants == "pgs":
        docsis["pgs"] = f"{PGS_BYTES}B"
    flows: list[dict[str, Any]] = [{"kind": "tcp", "cca": "prague", "count": 2, **(tcp or {})}]
    bad = bad_flow(case.bad)
    if bad is not None:
        flows.append(bad)
    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{DURATION_S:g}s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "5ms", "jitter": f"{HOST_JITTER_US}us"},
                "bottleneck": {
                    "rate": f"{CHANNEL_MBPS}Mbps",
                    "delay": "0.5ms",
                    "docsis": docsis,
                    "qdisc": {
                        "kind": "docsis_dualq",
                        "qprot": case.qprot,
                        **({"l_delay": "queue"} if case.estimate == "length" else {}),
                    },
                },
            },
            "flows": flows,
        }
    )


#: What each run measures (``per_seed.csv``'s columns after the case and seed).
METRICS = (
    "prague_mbps",
    "prague_min_mbps",
    "l_p99_ms",
    "bad_mbps",
    "sanctioned_frac",
    "first_sanction_ms",
    "l_mean_ms",
    "prague_sanctioned_frac",
)


def _first_sanction(sim: Simulation) -> float | None:
    """Run to the bad flow's first sanction (None: none within SANCTION_LOOK_NS)."""
    start = int(BAD_START_S * 1e9)
    for t in range(start + SANCTION_STEP_NS, start + SANCTION_LOOK_NS, SANCTION_STEP_NS):
        sim.run_until_ns(t)
        if sim.summary()["flows"][2].get("qprot_sanctioned", 0) > 0:
            return (t - start) / 1e6
    return None


def measure(case: Case, seed: int, tcp: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One run's ``METRICS``, after its case name and seed (``tcp``: as :func:`scenario`)."""
    sim = Simulation(scenario(case, seed, tcp))
    first = None
    if case.bad != "none" and case.qprot:
        sim.run_until_ns(int(BAD_START_S * 1e9))
        first = _first_sanction(sim)
    sim.run()
    s = sim.summary()
    up = next(q for q in s["queues"] if q["link"] == "r0->r1")
    l_queue = next(c for c in up["classes"] if c["qdisc"] == "L4S")
    prague = [f["goodput_bps"] / 1e6 for f in s["flows"][:2]]
    bad = s["flows"][2] if len(s["flows"]) > 2 else None
    frac = None
    if bad is not None and bad["bytes_sent"] > 0:
        size = RENO_MSS if case.bad == "nqb-reno" else UDP_BYTES
        frac = bad.get("qprot_sanctioned", 0) * size / bad["bytes_sent"]
    p99, mean = l_queue["sojourn_p99_s"], l_queue["sojourn_mean_s"]
    # The Prague flows' packets Queue Protection sanctioned, of those they sent (segments
    # of one MSS, the default 1448 B).
    prague_sent = sum(f["bytes_sent"] for f in s["flows"][:2]) / RENO_MSS
    prague_san = sum(f.get("qprot_sanctioned", 0) for f in s["flows"][:2])
    values = (
        sum(prague),
        min(prague),
        None if p99 is None else p99 * 1e3,
        None if bad is None else bad["goodput_bps"] / 1e6,
        frac,
        first,
        None if mean is None else mean * 1e3,
        prague_san / prague_sent if prague_sent else None,
    )
    return {"case": case.name, "seed": seed, **dict(zip(METRICS, values, strict=True))}


def _run(task: tuple[Case, int]) -> dict[str, Any]:
    return measure(*task)


@dataclass
class Row:
    case: str
    bad: str
    grants: str
    qprot: bool
    prague_mbps: float
    prague_min_mbps: float
    l_p99_ms: float | None
    bad_mbps: float | None
    sanctioned_frac: float | None
    first_sanction_ms: float | None
    seeds: int
    l_mean_ms: float | None = None
    estimate: str = "virtual"
    prague_sanctioned_frac: float | None = None


def _mean(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.fmean(xs) if xs else None


def _row(case: Case, runs: list[dict[str, Any]]) -> Row:
    """The mean of each metric over the seeds (the slower Prague flow: their minimum)."""
    values = {m: _mean(r[m] for r in runs) for m in METRICS}
    values["prague_min_mbps"] = min(r["prague_min_mbps"] for r in runs)
    return Row(
        case.name,
        case.bad,
        case.grants,
        case.qprot,
        seeds=len(runs),
        estimate=case.estimate,
        **values,
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
    """Every bad flow, grant service, Queue Protection setting and L delay estimate
    (``quick``: PGS, four bad flows, the modem's estimate, one seed) over ``seeds``:
    ``table.md``, ``table.csv``, ``per_seed.csv`` and (``figures``) ``qprot.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS, quick=quick)
    runs, per_case = run_seeded(
        _run, todo, seeds_for(seeds, quick, DEFAULT_SEEDS), executor, on_case
    )
    rows = [_row(c, r) for c, r in zip(todo, per_case, strict=True)]
    write_per_seed(out, runs)
    write_table(rows, out, TABLE, markdown_table(rows))
    if figures:
        plot(rows, out / "qprot.png")
    return rows


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _label(r: Row) -> str:
    """The bad flow's name, with the estimate where it is not the modem's own."""
    return r.bad if r.estimate == "virtual" else f"{r.bad} ({r.estimate})"


#: RFC 9957's critical L-queue delay (CRITICALqL, MULPI's default MAXTH: 1 ms) that the
#: must-show bound adds to the MAP-induced delay.
CRITICAL_MS = 1.0


def findings(rows: list[Row]) -> list[str]:
    """What RFC 9957 leads one to expect, checked on the rows: with Queue Protection the
    bad flow is sanctioned and the L queue's delay p99 stays near its 1 ms critical level
    plus the MAP-induced delay (the p99 of the Prague flows alone with the same grants and
    estimate); without it the bad flow's queue is every L flow's (its p99 higher)."""
    by = {(r.bad, r.grants, r.qprot, r.estimate): r for r in rows}
    out = []
    for (bad, grants, on, est), r in by.items():
        off = by.get((bad, grants, False, est))
        if bad == "none" or not on or off is None:
            continue
        sanctioned = (r.sanctioned_frac or 0) > 0
        lower = (r.l_p99_ms or 0) < (off.l_p99_ms or 0)
        line = (
            f"{_label(r)}, {grants}: sanctioned ({_num(r.sanctioned_frac, '.1%')} of its "
            f"packets, the first {_num(r.first_sanction_ms, '.0f')} ms after it started): "
            f"{'yes' if sanctioned else 'no'}; L-queue p99 lower with Queue Protection "
            f"({_num(r.l_p99_ms, '.2f')} ms against {_num(off.l_p99_ms, '.2f')} ms): "
            f"{'yes' if lower else 'no'}; Prague {r.prague_mbps:.1f} Mbit/s with, "
            f"{off.prague_mbps:.1f} without"
        )
        base = by.get(("none", grants, True, est))
        if bad.endswith("-link") and base is not None and base.l_p99_ms is not None:
            bound = CRITICAL_MS + base.l_p99_ms
            held = r.l_p99_ms is not None and r.l_p99_ms <= bound
            line += (
                f"; L-queue p99 within 1 ms + the MAP-induced delay ({base.l_p99_ms:.2f} ms "
                f"alone): {bound:.2f} ms: {'yes' if held else 'no'}"
            )
        out.append(line)
    return out


def facts(out_dir: Path) -> dict[str, str]:
    """The numbers the headline and the docs' prose derive from a full run's ``table.csv``:
    the L queue's p99 beside the flows that overload it (3x its share or 1.5x the link
    unresponsive, NQB-marked Reno) with and without Queue Protection, the share of their
    packets sanctioned, how soon the first sanction comes, and per grant service and
    estimate the bound 1 ms + the MAP-induced delay (the Prague flows' L-queue p99 alone,
    Queue Protection on) that the 1.5x-the-link rows are checked against."""
    rows = read_csv(out_dir / "table.csv")
    by_case = {r["case"]: r for r in rows}
    modem = [r for r in rows if r["estimate"] == "virtual"]
    heavy = [r for r in modem if r["bad"] in ("nqb-cbr-3x", "nqb-reno", "nqb-cbr-1.5x-link")]

    def of(key: str, pick: Callable[[dict[str, str]], bool], fmt: str, scale: float = 1) -> str:
        return span((scale * float(r[key]) for r in modem if r[key] and pick(r)), fmt)

    def on(r: dict[str, str]) -> bool:
        return r["qprot"] == "True"

    out = {
        "alone_best_effort_mbps": f"{float(by_case['none-best-effort-qprot']['prague_mbps']):.1f}",
        "heavy_pgs_on_p99_ms": of(
            "l_p99_ms", lambda r: r in heavy and on(r) and r["grants"] == "pgs", ".1f"
        ),
        "heavy_pgs_off_p99_ms": of(
            "l_p99_ms", lambda r: r in heavy and not on(r) and r["grants"] == "pgs", ".1f"
        ),
        "heavy_off_p99_ms": of("l_p99_ms", lambda r: r in heavy and not on(r), ".1f"),
        "sanctioned_3x_pct": of(
            "sanctioned_frac", lambda r: r["bad"] == "nqb-cbr-3x" and on(r), ".1f", 100
        ),
        "sanctioned_reno_pct": of(
            "sanctioned_frac", lambda r: r["bad"] == "nqb-reno" and on(r), ".1f", 100
        ),
        "first_sanction_ms": of("first_sanction_ms", lambda r: True, ".0f"),
        "first_sanction_cbr_ms": of("first_sanction_ms", lambda r: "cbr" in r["bad"], ".0f"),
        "first_sanction_reno_ms": of("first_sanction_ms", lambda r: r["bad"] == "nqb-reno", ".0f"),
        "length_link_pgs_p99_ms": (
            f"{float(by_case['nqb-cbr-1.5x-link-pgs-qprot-length']['l_p99_ms']):.1f}"
        ),
    }
    return out | bounds(by_case)


def bounds(by_case: dict[str, dict[str, str]]) -> dict[str, str]:
    """Per grant service and estimate, the bound 1 ms + the MAP-induced delay (the Prague
    flows' L-queue p99 alone, Queue Protection on) from a run's rows by case name; a
    baseline the run lacks (or left empty) gives none."""
    out = {}
    for grants in GRANTS:
        for est in ESTIMATES:
            base = Case("none", grants, True, est).name
            if base in by_case and by_case[base]["l_p99_ms"]:
                key = f"bound_{grants.replace('-', '_')}" + ("" if est == "virtual" else "_length")
                out[key] = f"{CRITICAL_MS + float(by_case[base]['l_p99_ms']):.2f}"
    return out


def headline(out_dir: Path) -> str:
    """What a full run shows, from its ``table.csv`` (:func:`facts`): the Prague flows alone
    with best-effort grants, and with proactive grants the L queue's p99 with and without
    Queue Protection beside the flows that overload it, and how soon it acts."""
    f = facts(out_dir)
    return (
        f"On a DOCSIS upstream whose modem estimates its L delay from MULPI's virtual queue, "
        f"two Prague flows keep {f['alone_best_effort_mbps']} of 50 Mbit/s with "
        f"best-effort grants; beside a flow that overloads the L queue (3x its share or 1.5x "
        f"the link unresponsive, NQB-marked Reno), with proactive grants, Queue Protection "
        f"holds its p99 at {f['heavy_pgs_on_p99_ms']} ms where it reaches "
        f"{f['heavy_pgs_off_p99_ms']} ms without, sanctioning within {f['first_sanction_ms']} "
        f"ms; with the L queue's length as the estimate it holds "
        f"{f['length_link_pgs_p99_ms']} ms beside the 1.5x-the-link flow."
    )


def markdown_table(rows: list[Row]) -> str:
    seeds = rows[0].seeds
    head = (
        "| bad flow | grants | Queue Protection | Prague, both (Mbit/s) | Prague, slower "
        "(Mbit/s) | L-queue delay p99 (ms) | L-queue delay mean (ms) | bad flow (Mbit/s) "
        "| sanctioned | first sanction (ms) | Prague sanctioned |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {_label(r)} | {r.grants} | {'on' if r.qprot else 'off'} | {r.prague_mbps:.1f} "
        f"| {r.prague_min_mbps:.1f} | {_num(r.l_p99_ms, '.2f')} | {_num(r.l_mean_ms, '.2f')} "
        f"| {_num(r.bad_mbps, '.1f')} | {_num(r.sanctioned_frac, '.1%')} "
        f"| {_num(r.first_sanction_ms, '.0f')} | {_num(r.prague_sanctioned_frac, '.1%')} |"
        for r in rows
    ]
    found = findings(rows)
    tail = "\n".join(f"- {f}" for f in found) if found else "No case with Queue Protection."
    note = (
        f"Means of {seeds} seed(s); the slower Prague flow is the minimum over the seeds. "
        "`-1.5x` / `-3x`: times a fair share of the 50 Mbit/s service flow; `-1.5x-link`: "
        "times its whole rate; `(length)`: the L queue's length as the L delay estimate "
        "instead of the modem's virtual queue. Prague sanctioned: the fraction of the Prague "
        "flows' own packets Queue Protection sanctioned."
    )
    return head + "\n".join(lines) + "\n\n" + note + "\n\n" + tail + "\n"


def plot(rows: list[Row], path: Path) -> None:
    """Per grant service: the Prague flows' rate and the L queue's p99 for each bad flow,
    with and without Queue Protection."""
    from l4sim.plot import pyplot

    plt = pyplot()
    grants = list(dict.fromkeys(r.grants for r in rows))
    fig, axes = plt.subplots(2, len(grants), figsize=(5.5 * len(grants), 6), squeeze=False)
    for col, g in enumerate(grants):
        bads = list(dict.fromkeys(_label(r) for r in rows if r.grants == g))
        for k, on in enumerate((True, False)):
            sel = {_label(r): r for r in rows if r.grants == g and r.qprot == on}
            xs = [i + (k - 0.5) * 0.38 for i in range(len(bads))]
            label = "Queue Protection on" if on else "off"
            rate = [sel[b].prague_mbps if b in sel else 0.0 for b in bads]
            p99 = [(sel[b].l_p99_ms or 0.0) if b in sel else 0.0 for b in bads]
            axes[0, col].bar(xs, rate, width=0.38, label=label)
            axes[1, col].bar(xs, p99, width=0.38, label=label)
        for ax in axes[:, col]:
            ax.set_xticks(range(len(bads)), bads, fontsize=8, rotation=15)
        axes[0, col].set_title(f"{g} grants", fontsize=10)
        axes[0, col].set_ylabel("Prague flows (Mbit/s)")
        axes[1, col].set_ylabel("L-queue delay p99 (ms)")
        axes[0, col].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


scenarios, _cases = seeded_hooks(cases, scenario, DEFAULT_SEEDS)


EXPERIMENT = declare(
    __name__,
    name="docsis-qprot",
    title="Queue Protection on a DOCSIS upstream: an unresponsive or mis-marked flow in the "
    "L queue, with and without it",
    paper='Briscoe & White, RFC 9957 "The DOCSIS Queue Protection Algorithm to Preserve Low '
    'Latency"',
    groups=GROUPS,
    options=(
        quick_option(
            "PGS grants, no bad flow, a 1.5x-its-share NQB / ECT(1) flow or a 1.5x-the-link "
            "NQB flow, one seed"
        ),
        seeds_option("Run each case with seeds 1..N of the hosts' jitter (default 3)."),
    ),
    tables=(TABLE, "table.csv"),
    figures=("qprot.png",),
)
