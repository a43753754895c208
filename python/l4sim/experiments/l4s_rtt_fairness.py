"""Two-flow fairness through DualPI2, pfifo and fq_codel, against a Linux L4S testbed.

The testbed: Heist & Morton, "L4S Tests" (github.com/heistp/l4s-tests, scenario 1 "RTT
Fairness", November 2020). Two TCP flows (TCP Prague or CUBIC, each with its own path RTT of
10, 20, 80 or 160 ms) share a 10 or 50 Mbit/s bottleneck (HTB shaping a DualPI2 qdisc) in
network namespaces running the L4STeam kernel of August 2020; both hosts have
``tcp_ecn = 3`` (the ``fl`` harness sets it for the ``l4s`` arch), which in that kernel's
AccECN patches means "request and accept Accurate ECN": CUBIC negotiates ECN with AccECN
feedback (a CE count on every ACK, no ECE latched until CWR), and DualPI2 marks it with
p'^2 instead of dropping.
Both flows start together and run for 3 minutes; each flow's throughput is taken over the
final minute. Their table of DualPI2 results is :data:`TESTBED` below.

We run the same two flows on a dumbbell whose sender access links carry each flow's path
RTT, with the DualPI2 of that kernel (:data:`DUALPI2_L4STEAM_2020`: the step applies only
when the L queue already holds more than one packet, and its PI update divides by 127 where
mainline divides by 64, so alpha and beta are 64/127 of the nominal 0.16 and 3.2 Hz), and again
with mainline Linux's defaults (``min_qlen_step`` 0: every L packet above 1 ms of sojourn is
marked, which at 10 Mbit/s, where one packet takes 1.2 ms to send, starves Prague).

The same scenario ran the same pairs through two other bottleneck qdiscs
(:data:`TESTBED_PFIFO`, :data:`TESTBED_FQ_CODEL`): ``pfifo`` with a limit of 1000 packets at
50 Mbit/s and 200 at 10 Mbit/s, and ``fq_codel`` with no arguments, i.e. Linux's defaults
(limit 10240, flows 1024, quantum 1514, target 5 ms, interval 100 ms, ECN on), both under
the same HTB shaper. We run them with l4sim's drop-tail FIFO and FQ-CoDel, whose defaults
are Linux's (:func:`qdisc_for`).

Sources (repository heistp/l4s-tests, commit e21cd91a8fa7dda4ebb098855c97b0edc8cafba5): the
throughputs are ``s1_table.md`` (the "Scenario 1 Fairness Table" of ``README.md``), the
qdisc setup ``l4s.batch`` (``[Arg::s1_pfifo]``, ``[Arg::s1_fq_codel]``, ``[Arg::s1_10mbit]``,
``[Arg::s1_50mbit]``). The testbed's figure is the mean delivery rate over the 60 s ending
2 s before the end of the test; ours is the goodput over the final 60 s.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from l4sim.engine.simulation import Simulation
from l4sim.executors import Executor
from l4sim.experiments import reference
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import bullet_lines, read_rows, write_per_seed, write_table
from l4sim.experiments.base import declare, seeds_option
from l4sim.metrics import jain
from l4sim.scenario import Scenario
from l4sim.units import format_number

#: The L4STeam DualPI2 of 2020 (``qlen(L) > 1`` step guard, PI gains divided by 127).
DUALPI2_L4STEAM_2020: dict[str, Any] = {
    "kind": "dualpi2",
    "min_qlen_step": 2,
    "alpha": 0.16 * 64 / 127,
    "beta": 3.2 * 64 / 127,
}
#: Mainline Linux (6.17+) defaults.
DUALPI2_MAINLINE: dict[str, Any] = {"kind": "dualpi2"}

#: The 14-byte Ethernet header the testbed's HTB counts in every packet's length.
HTB_OVERHEAD_BYTES = 14

#: The hosts' timing noise of a seeded run (`reproduce(seeds=...)`): order-preserving
#: jitter, uniform in [0, 250 us], on the senders' access links (about one packet time at
#: 50 Mbit/s; it breaks the drop-tail phase effects a deterministic run repeats).
HOST_JITTER_US = 250.0
#: A flow agrees with the testbed when within 20 % of its throughput.
TOLERANCE = 0.2

DURATION_S = 180
MEASURE_FROM_S = 120

#: The testbed's table (``l4sim/data/reference``): its DualPI2, pfifo and fq_codel rows.
REFERENCE = "l4s_tests_s1.csv"

TestbedRow = tuple[int, str, int, float, str, int, float]
"""(rate Mbit/s, CC 1, RTT 1 ms, Mbit/s 1, CC 2, RTT 2 ms, Mbit/s 2)."""


def _testbed(qdisc: str) -> tuple[TestbedRow, ...]:
    """The testbed's rows for ``qdisc``, in its order (each mixed pair appears twice, with
    the flows swapped)."""
    return tuple(
        (
            int(r["rate_mbps"]),
            r["cc1"],
            int(r["rtt1_ms"]),
            float(r["mbps1"]),
            r["cc2"],
            int(r["rtt2_ms"]),
            float(r["mbps2"]),
        )
        for r in reference.rows(REFERENCE)
        if r["qdisc"] == qdisc
    )


#: The testbed's DualPI2 rows.
TESTBED = _testbed("dualpi2")
#: The testbed's pfifo rows. Its third and seventh rows carry the same numbers (39.98 /
#: 7.55) for two different pairs in the source table; both are kept as published.
TESTBED_PFIFO = _testbed("pfifo")
#: The testbed's fq_codel rows.
TESTBED_FQ_CODEL = _testbed("fq_codel")

#: The bottleneck qdiscs of scenario 1 that l4sim runs, each with the testbed's rows.
QDISCS: dict[str, tuple[TestbedRow, ...]] = {
    "dualpi2": TESTBED,
    "pfifo": TESTBED_PFIFO,
    "fq_codel": TESTBED_FQ_CODEL,
}

#: The testbed's pfifo limit in packets per bottleneck rate (l4s.batch ``pfifo_limit``).
PFIFO_LIMIT = {50: 1000, 10: 200}

RATES = ("50Mbps", "10Mbps")
#: Subsets ``l4sim reproduce l4s-rtt-fairness --only`` accepts: bottleneck rates and qdiscs.
#: A case runs if its rate is among the rates named (or none is) and its qdisc among the
#: qdiscs named (or none is): ``--only 10Mbps,pfifo`` is pfifo at 10 Mbit/s.
GROUPS = (*RATES, *QDISCS)
TABLE = "table.md"
#: The agreement lines under the table, alone: what the docs page's verdict quotes.
AGREEMENT = "agreement.md"


@dataclass(frozen=True)
class Case:
    index: int
    rate_mbps: int
    cc1: str
    rtt1_ms: int
    cc2: str
    rtt2_ms: int
    testbed1_mbps: float
    testbed2_mbps: float
    qdisc: str = "dualpi2"

    @property
    def name(self) -> str:
        # DualPI2 cases keep the names they had before the other qdiscs were added.
        q = "" if self.qdisc == "dualpi2" else f"-{self.qdisc}"
        return (
            f"{self.index:02d}-{self.rate_mbps}Mbps{q}-{self.cc1}{self.rtt1_ms}"
            f"-{self.cc2}{self.rtt2_ms}"
        )


def cases(groups: Iterable[str] = GROUPS) -> list[Case]:
    """The testbed's rows (DualPI2, then pfifo, then fq_codel, each in the testbed's order)
    whose rate is among the rates in ``groups`` (``"50Mbps"``, ``"10Mbps"``; none named: all)
    and whose qdisc among its qdiscs (``"dualpi2"``, ``"pfifo"``, ``"fq_codel"``; none: all)."""
    wanted = set(groups)
    rates = wanted & set(RATES) or set(RATES)
    qdiscs = wanted & set(QDISCS) or set(QDISCS)
    everything = [(q, row) for q, rows in QDISCS.items() for row in rows]
    return [
        Case(i, rate, cc1, rtt1, cc2, rtt2, d1, d2, qdisc)
        for i, (qdisc, (rate, cc1, rtt1, d1, cc2, rtt2, d2)) in enumerate(everything)
        if f"{rate}Mbps" in rates and qdisc in qdiscs
    ]


def qdisc_for(case: Case) -> dict[str, Any]:
    """The bottleneck qdisc of a pfifo or fq_codel case, as the testbed configured it."""
    if case.qdisc == "pfifo":
        return {"kind": "fifo", "limit": f"{PFIFO_LIMIT[case.rate_mbps]}p"}
    if case.qdisc == "fq_codel":
        return {"kind": "fq_codel"}  # `tc qdisc ... fq_codel`: Linux's defaults are ours
    raise ValueError(f"{case.qdisc!r} has two variants: DUALPI2_L4STEAM_2020, DUALPI2_MAINLINE")


@dataclass(frozen=True)
class TcpVariant:
    """What to change in l4sim's TCP for a run (default: nothing): extra TCP flow options
    for both flows (e.g. ``{"rack": False}``), CUBIC options for the CUBIC flows (e.g.
    ``{"hystart": False}``), when the second flow starts (ms), and the senders' access
    links' order-preserving jitter (us; the hosts' timing noise, which breaks drop-tail
    phase effects)."""

    flow: tuple[tuple[str, Any], ...] = ()
    cubic: tuple[tuple[str, Any], ...] = ()
    start2_ms: float = 0.0
    access_jitter_us: float = 0.0

    @staticmethod
    def of(
        flow: dict[str, Any] | None = None,
        cubic: dict[str, Any] | None = None,
        start2_ms: float = 0.0,
        access_jitter_us: float = 0.0,
    ) -> TcpVariant:
        return TcpVariant(
            tuple(sorted((flow or {}).items())),
            tuple(sorted((cubic or {}).items())),
            start2_ms,
            access_jitter_us,
        )


def scenario(
    case: Case, qdisc: dict[str, Any], seed: int = 1, variant: TcpVariant = TcpVariant()
) -> Scenario:
    """Two flows on a dumbbell; flow i's whole path RTT sits on its sender's access link."""

    def flow(cca: str) -> dict[str, Any]:
        # The testbed's hosts run tcp_ecn = 3, AccECN in the L4STeam kernel (its
        # ip-sysctl.txt: "Enable AccECN when requested by incoming connections and also
        # request AccECN on outgoing connection attempts"): CUBIC negotiates it too.
        f: dict[str, Any] = {
            "kind": "tcp",
            "cca": cca,
            "ecn": True,
            "accecn": True,
            **dict(variant.flow),
        }
        if "rwnd" not in f:
            # The testbed's 2020 kernel (5.x) autotunes up to tcp_rmem[2] = 6 MiB, where
            # Linux 6.16+ (l4sim's default) goes to 32 MiB.
            f.setdefault("rmem_max", "6MiB")
        if cca == "cubic" and variant.cubic:
            f["cca"] = {"kind": "cubic", **dict(variant.cubic)}
        return f

    flows = [flow(case.cc1), flow(case.cc2)]
    if variant.start2_ms:
        flows[1]["start"] = f"{variant.start2_ms:g}ms"

    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{DURATION_S}s",
            "topology": {
                "preset": "dumbbell",
                "access": {
                    "rate": "1Gbps",
                    "delay": "0ms",
                    "jitter": f"{variant.access_jitter_us:g}us",
                },
                "access_delays": [f"{case.rtt1_ms / 2:g}ms", f"{case.rtt2_ms / 2:g}ms"],
                "bottleneck": {
                    "rate": f"{case.rate_mbps}Mbps",
                    "delay": "0ms",
                    "qdisc": qdisc,
                    # The testbed's HTB shaper charges skb->len: 1514 bytes for a
                    # 1500-byte IP packet on its (veth, Ethernet) device.
                    "overhead": HTB_OVERHEAD_BYTES,
                },
            },
            "flows": flows,
        }
    )


def final_minute_mbps(
    case: Case, qdisc: dict[str, Any], seed: int = 1, variant: TcpVariant = TcpVariant()
) -> tuple[float, float]:
    """Each flow's goodput over the final minute (the testbed's steady-state figure)."""
    sim = Simulation(scenario(case, qdisc, seed, variant))
    sim.run_until(MEASURE_FROM_S)
    before = [f["bytes_acked"] for f in sim.summary()["flows"]]
    sim.run()
    after = [f["bytes_acked"] for f in sim.summary()["flows"]]
    window = DURATION_S - MEASURE_FROM_S
    d1, d2 = ((b - a) * 8 / window / 1e6 for a, b in zip(before, after, strict=True))
    return d1, d2


@dataclass
class Row:
    case: str
    rate_mbps: int
    flow1: str
    flow2: str
    testbed1_mbps: float
    testbed2_mbps: float
    l4sim1_mbps: float
    l4sim2_mbps: float
    #: Mainline DualPI2's throughputs (DualPI2 rows only).
    mainline1_mbps: float | None
    mainline2_mbps: float | None
    qdisc: str = "dualpi2"
    #: Runs averaged into this row (several: seeds of the hosts' jitter, see `reproduce`).
    seeds: int = 1
    #: Fraction of those runs in which each flow was within 20 % of the testbed.
    within1: float | None = None
    within2: float | None = None

    @property
    def testbed_ratio(self) -> float:
        return self.testbed1_mbps / self.testbed2_mbps

    @property
    def l4sim_ratio(self) -> float:
        return self.l4sim1_mbps / self.l4sim2_mbps

    @property
    def mainline_ratio(self) -> float | None:
        if self.mainline1_mbps is None or self.mainline2_mbps is None:
            return None
        return self.mainline1_mbps / self.mainline2_mbps


def run_case(case: Case, seed: int = 1, variant: TcpVariant = TcpVariant()) -> Row:
    mainline: tuple[float | None, float | None] = (None, None)
    if case.qdisc == "dualpi2":
        ours = final_minute_mbps(case, DUALPI2_L4STEAM_2020, seed, variant)
        mainline = final_minute_mbps(case, DUALPI2_MAINLINE, seed, variant)
    else:
        ours = final_minute_mbps(case, qdisc_for(case), seed, variant)
    return Row(
        case=case.name,
        rate_mbps=case.rate_mbps,
        flow1=f"{case.cc1}({case.rtt1_ms}ms)",
        flow2=f"{case.cc2}({case.rtt2_ms}ms)",
        testbed1_mbps=case.testbed1_mbps,
        testbed2_mbps=case.testbed2_mbps,
        l4sim1_mbps=ours[0],
        l4sim2_mbps=ours[1],
        mainline1_mbps=mainline[0],
        mainline2_mbps=mainline[1],
        qdisc=case.qdisc,
    )


def _run_case(task: tuple[Case, int, TcpVariant]) -> Row:
    return run_case(*task)


def averaged(runs: list[Row]) -> Row:
    """One row from runs of the same case: mean throughputs, and how often each flow was
    within the 20 % bound of the testbed."""

    def mean(xs: list[float | None]) -> float | None:
        return None if any(x is None for x in xs) else statistics.mean(xs)  # type: ignore[arg-type]

    def within(flow: int) -> float:
        return sum(abs(flow_errors([r])[flow]) <= TOLERANCE for r in runs) / len(runs)

    return replace(
        runs[0],
        l4sim1_mbps=statistics.mean(r.l4sim1_mbps for r in runs),
        l4sim2_mbps=statistics.mean(r.l4sim2_mbps for r in runs),
        mainline1_mbps=mean([r.mainline1_mbps for r in runs]),
        mainline2_mbps=mean([r.mainline2_mbps for r in runs]),
        seeds=len(runs),
        within1=within(0),
        within2=within(1),
    )


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    seed: int = 1,
    seeds: Iterable[int] | None = None,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
    variant: TcpVariant = TcpVariant(),
) -> list[Row]:
    """Run every row of the testbed's table (or the rates and qdiscs in ``only``) on ``executor``
    (default: serial), write ``table.csv``, ``table.md``, ``agreement.md`` (the counts under
    the table, alone) and (with ``figures``) ``throughput.png``. Returns the rows.
    ``on_case(case, done, total)`` is called as each run finishes. ``variant`` changes
    l4sim's TCP (Linux options, a later second flow).

    Without ``seeds``: one jitter-free run per case (``seed``). With ``seeds``: one run per
    case and seed with the hosts' timing noise (:data:`HOST_JITTER_US` of order-preserving
    jitter on the senders' links, unless ``variant`` sets its own), each row the mean of its
    runs, with the fraction of runs in which each flow agreed with the testbed: the
    testbed is one noisy sample, and this is the expected agreement with it."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS)
    if seeds is None:
        tasks = [(case, seed, variant) for case in todo]
        rows = run_cases(_run_case, tasks, todo, executor, on_case)
        write_per_seed(out, rows)
    else:
        seed_list = list(seeds)
        if not seed_list:
            raise ValueError("seeds names no seed; give at least one")
        noisy = variant
        if not noisy.access_jitter_us:
            noisy = replace(variant, access_jitter_us=HOST_JITTER_US)
        tasks = [(case, s, noisy) for s in seed_list for case in todo]
        runs = run_cases(_run_case, tasks, [t[0] for t in tasks], executor, on_case)
        n = len(todo)
        rows = [averaged(runs[i::n]) for i in range(n)]
        write_per_seed(out, [{"seed": t[1], **asdict(r)} for t, r in zip(tasks, runs, strict=True)])
    write_table(rows, out, TABLE, markdown_table(rows))
    (out / AGREEMENT).write_text("".join(f"- {line}\n" for line in agreement(rows).splitlines()))
    if figures:
        plot(rows, out / "throughput.png")
    return rows


def _flows(r: Row) -> tuple[tuple[str, str, float, float], tuple[str, str, float, float]]:
    """Each flow of ``r``: its label, the other flow's, l4sim's and the testbed's rate."""
    return (
        (r.flow1, r.flow2, r.l4sim1_mbps, r.testbed1_mbps),
        (r.flow2, r.flow1, r.l4sim2_mbps, r.testbed2_mbps),
    )


def flow_errors(rows: list[Row]) -> list[float]:
    """Every flow's relative throughput error against the testbed (l4sim / testbed - 1)."""
    return [ours / tb - 1.0 for r in rows for _, _, ours, tb in _flows(r)]


def _within(rows: list[Row]) -> str:
    """How many flows land within 20 % of the testbed ("N of M"; over seeds: the mean)."""
    n = 2 * len(rows)
    if rows[0].within1 is not None:
        return f"{sum((r.within1 or 0.0) + (r.within2 or 0.0) for r in rows):.1f} of {n}"
    return f"{sum(abs(e) <= TOLERANCE for e in flow_errors(rows))} of {n}"


def _agreement(rows: list[Row]) -> str:
    median = 100 * statistics.median(abs(e) for e in flow_errors(rows))
    seeded = rows[0].within1 is not None
    over = f" on average over {rows[0].seeds} seeds of host jitter" if seeded else ""
    error = "median error of the mean throughputs" if seeded else "median error"
    within = f"{_within(rows)} flows within 20 % of the testbed's throughput{over}"
    return f"{within}; {error} {median:.1f} %."


def agreement(rows: list[Row]) -> str:
    """How many flows land within 20 % of the testbed, and the median error: per qdisc (in
    the order of :data:`QDISCS`) and over all flows when there is more than one qdisc."""
    present = [q for q in QDISCS if any(r.qdisc == q for r in rows)]
    if len(present) <= 1:
        return _agreement(rows)
    lines = [f"{q}: {_agreement([r for r in rows if r.qdisc == q])}" for q in present]
    return "\n".join([*lines, f"all: {_agreement(rows)}"])


def headline(out_dir: Path) -> str:
    """What a run shows, from its ``agreement.md``: the flows within 20 % of the testbed,
    per qdisc and over all."""
    lines = [line.removesuffix(".") for line in bullet_lines(out_dir / AGREEMENT)]
    if len(lines) == 1:
        return lines[0] + "."
    return "; ".join(lines[:-1]) + f". Over all: {lines[-1].removeprefix('all: ')}."


def _cc(flow: str) -> str:
    return flow.split("(")[0]  # the congestion control of a label such as prague(10ms)


def _prague_cubic(rows: list[Row], side: int) -> str:
    """The range of Prague's rate over CUBIC's through DualPI2 where the two share one RTT
    (``side``: 2 l4sim's rates, 3 the testbed's)."""
    ratios = [
        p[side] / c[side]
        for r in rows
        if r.qdisc == "dualpi2" and r.flow1.split("(")[1] == r.flow2.split("(")[1]
        for p, c in (_flows(r), _flows(r)[::-1])
        if (_cc(p[0]), _cc(c[0])) == ("prague", "cubic")
    ]
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def _testbed_swap_spread(rows: list[Row], qdisc: str) -> str:
    """The largest spread (max / min - 1) of the testbed's Prague flow over the two runs of a
    mixed pair it ran both ways round (flows swapped)."""
    runs: dict[tuple[int, frozenset[str]], list[float]] = {}
    for r in (r for r in rows if r.qdisc == qdisc):
        for flow, other, _, tb in _flows(r):
            if (_cc(flow), _cc(other)) == ("prague", "cubic"):
                runs.setdefault((r.rate_mbps, frozenset((flow, other))), []).append(tb)
    return f"{100 * max(max(v) / min(v) - 1 for v in runs.values() if len(v) > 1):.0f} %"


def facts(out_dir: Path) -> dict[str, str]:
    """The numbers the docs' prose quotes, from a run's ``table.csv``."""
    rows = read_rows(out_dir / "table.csv", Row)
    # pfifo flows more than 20 % off, and those that are a Prague flow beside CUBIC, too low
    # (the drop-tail phase effect)
    pfifo = [f for r in rows if r.qdisc == "pfifo" for f in _flows(r)]
    misses = [(f, o, ours, tb) for f, o, ours, tb in pfifo if abs(ours / tb - 1) > TOLERANCE]
    low = sum(ours < tb and (_cc(f), _cc(o)) == ("prague", "cubic") for f, o, ours, tb in misses)
    return {
        "dualpi2_prague_cubic_testbed": _prague_cubic(rows, 3),
        "dualpi2_prague_cubic": _prague_cubic(rows, 2),
        **{f"testbed_swap_spread_{q}": _testbed_swap_spread(rows, q) for q in QDISCS},
        "within": _within(rows),
        "pfifo_misses": str(len(misses)),
        "pfifo_prague_low": str(low),
    }


def markdown_table(rows: list[Row]) -> str:
    """Per row: the testbed's and our final-minute throughputs and their ratio, and Jain's
    index; then the mainline-DualPI2 ratio (DualPI2 rows); then how well the two agree."""
    ours = "l4sim Mbit/s" if rows[0].seeds == 1 else f"l4sim Mbit/s, mean of {rows[0].seeds} seeds"
    head = (
        f"| rate | qdisc | flow 1 | flow 2 | testbed Mbit/s | {ours} | testbed ratio "
        "| l4sim ratio | testbed Jain | l4sim Jain | mainline ratio |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n"
    )

    lines = [
        f"| {r.rate_mbps} | {r.qdisc} | {r.flow1} | {r.flow2} "
        f"| {r.testbed1_mbps:.2f} / {r.testbed2_mbps:.2f} "
        f"| {r.l4sim1_mbps:.2f} / {r.l4sim2_mbps:.2f} "
        f"| {r.testbed_ratio:.2f} | {r.l4sim_ratio:.2f} "
        f"| {jain((r.testbed1_mbps, r.testbed2_mbps)):.3f} "
        f"| {jain((r.l4sim1_mbps, r.l4sim2_mbps)):.3f} | {format_number(r.mainline_ratio)} |"
        for r in rows
    ]
    return head + "\n".join(lines) + "\n\n" + agreement(rows) + "\n"


def plot(rows: list[Row], path: Path) -> None:
    """Every flow's final-minute throughput, l4sim against the testbed, one panel per qdisc
    (rows) and rate (columns)."""
    from l4sim.plot import pyplot

    plt = pyplot()

    rates = sorted({r.rate_mbps for r in rows}, reverse=True)
    qdiscs = [q for q in QDISCS if any(r.qdisc == q for r in rows)]
    fig, axes = plt.subplots(
        len(qdiscs), len(rates), figsize=(5.5 * len(rates), 5 * len(qdiscs)), squeeze=False
    )
    style = {"prague": ("tab:green", "o"), "cubic": ("tab:red", "s")}
    panels = [(q, rate) for q in qdiscs for rate in rates]
    for ax, (qdisc, rate) in zip(axes.flat, panels, strict=True):
        mine = [r for r in rows if r.rate_mbps == rate and r.qdisc == qdisc]
        for r in mine:
            for flow, _, ours, tb in _flows(r):
                color, marker = style[_cc(flow)]
                ax.scatter(tb, ours, c=color, marker=marker, s=28, alpha=0.8)
        top = rate * 1.0
        ax.plot([0, top], [0, top], "k-", lw=0.8)
        ax.fill_between([0, top], [0, 0.8 * top], [0, 1.2 * top], color="0.85", zorder=0)
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_xlabel("Linux testbed throughput (Mbit/s)")
        seeds = rows[0].seeds
        ax.set_ylabel(
            "l4sim throughput (Mbit/s)" if seeds == 1 else f"l4sim, mean of {seeds} seeds (Mbit/s)"
        )
        name = {"dualpi2": "DualPI2", "pfifo": "pfifo", "fq_codel": "fq_codel"}[qdisc]
        ax.set_title(f"{name}, {rate} Mbit/s: two flows, final minute")
        for cc, (color, marker) in style.items():
            ax.scatter([], [], c=color, marker=marker, label=cc)
        ax.legend(title="shaded: within 20 %", loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def scenarios(
    out_dir: str | Path, groups: Iterable[str], *, seeds: Iterable[int] | None = None, **_: Any
) -> dict[str, Any]:
    """Case name (``-s<seed>`` with ``seeds``) -> the scenario it ran (DualPI2: the L4STeam
    2020 build's; the mainline run beside it differs only in the qdisc)."""

    def qdisc(c: Case) -> dict[str, Any]:
        return DUALPI2_L4STEAM_2020 if c.qdisc == "dualpi2" else qdisc_for(c)

    if seeds is None:
        return {c.name: scenario(c, qdisc(c)) for c in cases(groups)}
    noisy = TcpVariant(access_jitter_us=HOST_JITTER_US)
    return {f"{c.name}-s{s}": scenario(c, qdisc(c), s, noisy) for s in seeds for c in cases(groups)}


def _cases(groups: Iterable[str], *, seeds: Iterable[int] = (1,), **_: object) -> list[Case]:
    return cases(groups) * len(list(seeds))


EXPERIMENT = declare(
    __name__,
    name="l4s-rtt-fairness",
    title="Two TCP Prague / CUBIC flows through DualPI2, pfifo and fq_codel beside a Linux "
    "L4S testbed",
    paper='Heist & Morton, "L4S Tests", scenario 1 "RTT Fairness" (heistp/l4s-tests)',
    groups=GROUPS,
    options=(
        seeds_option(
            "Run each case N times (seeds 1..N) with the hosts' timing noise and report the "
            "mean and how often each flow agrees with the testbed.",
        ),
    ),
    tables=(TABLE, "table.csv", AGREEMENT),
    figures=("throughput.png",),
    reference=(REFERENCE,),
)
