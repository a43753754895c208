"""TCP Prague beside a classic flow in one RFC 3168 queue, against a Linux testbed.

The testbed: Heist & Morton, "L4S Tests" (github.com/heistp/l4s-tests, scenario 6 "RFC3168
AQMs", November 2020). TCP Prague (the L4STeam kernel of August 2020) and CUBIC or Reno
share one queue of fq_codel with a single flow queue (``flows 1``, also with ``target 1ms
interval 20ms``), PIE (``ecn``, also ``limit 100 target 5ms tupdate 32ms``) or adaptive RED
(``limit`` 150 000 or 400 000 bytes, ``avpkt 1000``) under a 50 Mbit/s HTB, both flows at
20 ms RTT (netem 10 ms each way) for 60 s. The classic flow negotiates ECN (Accurate ECN, as
``tcp_ecn = 3`` does on those hosts) or has its ECN field bleached at the middlebox (Not-ECT
at the AQM). Each flow's figure is its mean delivery rate over the 40 s ending 2 s before the
end (``steady_state.go``); ours is its goodput over the same window.

We run the same two flows as ``l4s-rtt-fairness`` models that testbed (a dumbbell whose
access links carry the RTT, HTB's 14-byte overhead, 250 us of host jitter, a 6 MiB receive
buffer), mean of ``--seeds`` seeds (4), twice: with l4sim's Prague as it is, and with its
classic-ECN fallback on (``ecn_fallback = 1``, from the later L4STeam code: the testbed's
Prague had none). What l4sim gets wrong here, and what is known of why, is on the docs page.

Sources (heistp/l4s-tests, commit e21cd91a8fa7dda4ebb098855c97b0edc8cafba5): the rates are
``s6_steady_state.md``, the set-up ``l4s.batch`` (``[Batch::s6-rfc3168]``, ``[Arg::s6_*]``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.engine.simulation import Simulation
from l4sim.executors import Executor
from l4sim.experiments import reference
from l4sim.experiments._cases import Seeded, run_seeded
from l4sim.experiments._tables import read_rows, write_per_seed, write_table
from l4sim.experiments.base import declare, seeds_option
from l4sim.scenario import Scenario

REFERENCE = "l4s_tests_s6.csv"
RATE_MBPS = 50
DURATION_S = 60
#: The testbed's steady-state window: the 40 s ending 2 s before the end (steady_state.go).
WINDOW_S = (18.0, 58.0)
#: The hosts' timing noise (as in l4s-rtt-fairness): order-preserving jitter on the senders'
#: access links, uniform in [0, 250 us].
HOST_JITTER_US = 250.0
#: HTB charges each packet's Ethernet header (14 bytes).
HTB_OVERHEAD_BYTES = 14
#: A flow agrees with the testbed within 20 % of its rate.
TOLERANCE = 0.2
TABLE = "table.md"
#: The seeds of a run without ``--seeds``.
DEFAULT_SEEDS = (1, 2, 3, 4)

#: The testbed's qdisc names -> our group names (``--only``), in the table's order.
QDISCS: dict[str, str] = {
    "fq_codel(1q)": "fq_codel1",
    "fq_codel(1q,1ms/20ms)": "fq_codel1-1ms",
    "pie": "pie",
    "pie(100p/5ms)": "pie-100p",
    "red(150000b)": "red-150k",
    "red(400000b)": "red-400k",
}
#: Subsets ``--only`` accepts: the qdiscs, the classic flow's algorithm and its ECN.
GROUPS = (*QDISCS.values(), "cubic", "reno", "ecn", "noecn")


@dataclass(frozen=True)
class Case:
    index: int
    qdisc: str
    classic: str
    ecn: bool
    testbed_prague_mbps: float
    testbed_classic_mbps: float

    @property
    def name(self) -> str:
        return f"{self.index:02d}-{QDISCS[self.qdisc]}-{self.classic}-{self.ecn_name}"

    @property
    def ecn_name(self) -> str:
        return "ecn" if self.ecn else "noecn"


def cases(groups: Iterable[str] = GROUPS) -> list[Case]:
    """The testbed's 24 runs, in its table's order, restricted to the qdiscs, classic
    algorithms and ECN settings named in ``groups`` (a kind not named: all of it)."""
    wanted = set(groups)
    qdiscs = wanted & set(QDISCS.values()) or set(QDISCS.values())
    classics = wanted & {"cubic", "reno"} or {"cubic", "reno"}
    ecns = wanted & {"ecn", "noecn"} or {"ecn", "noecn"}
    out = []
    for i, r in enumerate(reference.rows(REFERENCE)):
        case = Case(i, r["qdisc"], r["cc2"], r["ecn2"] == "1", float(r["mbps1"]), float(r["mbps2"]))
        if QDISCS[case.qdisc] in qdiscs and case.classic in classics and case.ecn_name in ecns:
            out.append(case)
    return out


def qdisc_for(name: str) -> dict[str, Any]:
    """The bottleneck qdisc as ``l4s.batch``'s ``[Arg::s6_*]`` configures it."""
    if name == "fq_codel(1q)":  # fq_codel flows 1 (Linux's ECN default: on)
        return {"kind": "fq_codel", "flows": 1}
    if name == "fq_codel(1q,1ms/20ms)":
        return {"kind": "fq_codel", "flows": 1, "target": "1ms", "interval": "20ms"}
    if name == "pie":  # pie ecn
        return {"kind": "pie", "ecn": True}
    if name == "pie(100p/5ms)":  # pie limit 100 target 5ms tupdate 32ms alpha 2 beta 20 ecn
        return {"kind": "pie", "ecn": True, "limit": "100p", "target": "5ms", "tupdate": "32ms"}
    if name.startswith("red(") and name.endswith("b)"):
        # red limit N avpkt 1000 adaptive bandwidth 50Mbit ecn (tc derives max = N / 4 and
        # min = max / 3).
        return {
            "kind": "red",
            "variant": "linux",
            "limit": f"{int(name[4:-2])}B",
            "avpkt": "1000B",
            "adaptive": True,
            "bandwidth": f"{RATE_MBPS}Mbps",
            "ecn": True,
        }
    raise ValueError(f"no scenario 6 qdisc {name!r}")


def scenario(case: Case, seed: int = 1, prague: Any = "prague") -> Scenario:
    """The two flows of ``case`` (``prague``: the scalable flow's ``cca``)."""

    def flow(cca: Any, ecn: bool) -> dict[str, Any]:
        # tcp_ecn = 3 on the testbed's hosts: Accurate ECN for every ECN-capable flow. The
        # 2020 kernel autotunes the receive buffer up to tcp_rmem[2] = 6 MiB.
        return {"kind": "tcp", "cca": cca, "ecn": ecn, "accecn": ecn, "rmem_max": "6MiB"}

    classic = "cubic" if case.classic == "cubic" else "newreno"
    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{DURATION_S}s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "0ms", "jitter": f"{HOST_JITTER_US:g}us"},
                "access_delays": ["10ms", "10ms"],
                "bottleneck": {
                    "rate": f"{RATE_MBPS}Mbps",
                    "delay": "0ms",
                    "qdisc": qdisc_for(case.qdisc),
                    "overhead": HTB_OVERHEAD_BYTES,
                },
            },
            "flows": [flow(prague, True), flow(classic, case.ecn)],
        }
    )


def window_rates(case: Case, seed: int, prague: Any = "prague") -> tuple[float, float]:
    """Each flow's goodput (Mbit/s) over the testbed's window."""
    sim = Simulation(scenario(case, seed, prague))
    sim.run_until(WINDOW_S[0])
    before = [f["bytes_acked"] for f in sim.summary()["flows"]]
    sim.run_until(WINDOW_S[1])
    after = [f["bytes_acked"] for f in sim.summary()["flows"]]
    span = WINDOW_S[1] - WINDOW_S[0]
    p, c = ((b - a) * 8 / span / 1e6 for a, b in zip(before, after, strict=True))
    return p, c


@dataclass
class Run:
    case: str
    seed: int
    prague_mbps: float
    classic_mbps: float
    fallback_prague_mbps: float
    fallback_classic_mbps: float


def _run(task: tuple[Case, int]) -> Run:
    case, seed = task
    plain = window_rates(case, seed)
    fallback = window_rates(case, seed, {"kind": "prague", "ecn_fallback": 1})
    return Run(case.name, seed, *plain, *fallback)


@dataclass
class Row:
    case: str
    qdisc: str
    classic: str
    ecn: bool
    testbed_prague_mbps: float
    testbed_classic_mbps: float
    prague_mbps: float
    classic_mbps: float
    fallback_prague_mbps: float
    fallback_classic_mbps: float
    seeds: int

    @property
    def testbed_ratio(self) -> float:
        return self.testbed_prague_mbps / self.testbed_classic_mbps

    @property
    def ratio(self) -> float:
        return self.prague_mbps / self.classic_mbps

    @property
    def fallback_ratio(self) -> float:
        return self.fallback_prague_mbps / self.fallback_classic_mbps


def _row(case: Case, runs: list[Run]) -> Row:
    def mean(field: str) -> float:
        return statistics.mean(getattr(r, field) for r in runs)

    return Row(
        case.name,
        case.qdisc,
        case.classic,
        case.ecn,
        case.testbed_prague_mbps,
        case.testbed_classic_mbps,
        mean("prague_mbps"),
        mean("classic_mbps"),
        mean("fallback_prague_mbps"),
        mean("fallback_classic_mbps"),
        len(runs),
    )


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    seeds: Iterable[int] | None = None,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
) -> list[Row]:
    """Every run of the testbed's table (or the subsets in ``only``) over ``seeds`` (default
    1-4): ``table.md``, ``table.csv``, ``per_seed.csv`` and (``figures``) ``rates.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS)
    seed_list = list(seeds if seeds is not None else DEFAULT_SEEDS)
    runs, per_case = run_seeded(_run, todo, seed_list, executor, on_case)
    rows = [_row(c, r) for c, r in zip(todo, per_case, strict=True)]
    write_per_seed(out, runs)
    write_table(rows, out, TABLE, markdown_table(rows))
    if figures:
        plot(rows, out / "rates.png")
    return rows


def _agreement(rows: list[Row]) -> dict[str, str]:
    """The agreement's numbers, as the prose writes them."""
    errs = [
        (
            abs(r.prague_mbps / r.testbed_prague_mbps - 1),
            abs(r.classic_mbps / r.testbed_classic_mbps - 1),
        )
        for r in rows
    ]
    prague = sum(p <= TOLERANCE for p, _ in errs)
    classic = sum(c <= TOLERANCE for _, c in errs)
    big = sum(r.testbed_ratio >= 20 for r in rows)
    median = statistics.median(r.classic_mbps / r.testbed_classic_mbps - 1 for r in rows)
    return {
        "flows_within": f"{prague + classic} of {2 * len(rows)}",
        "prague_within": f"{prague} of {len(rows)}",
        "classic_within": f"{classic} of {len(rows)}",
        "classic_median_error": f"{100 * median:+.0f} %",
        "ordered": f"{sum(r.ratio >= 15 for r in rows if r.testbed_ratio >= 20)} of the {big}",
    }


def agreement(rows: list[Row]) -> str:
    """How many flows land within 20 % of the testbed, and whether each run's
    Prague:classic ratio keeps the testbed's order (at least 15:1 where it is 20:1 or more)."""
    a = _agreement(rows)
    return (
        f"{a['flows_within']} flows within 20 % of the testbed "
        f"(Prague {a['prague_within']}, classic {a['classic_within']}; the classic "
        f"flow's median error {a['classic_median_error']}); Prague:classic at least 15:1 in "
        f"{a['ordered']} runs where the testbed's is 20:1 or more."
    )


def _reno_to_cubic(rows: list[Row], rate: Callable[[Row], float], red: bool = False) -> str:
    """The range of Reno's rate over CUBIC's beside the same Prague, through the same queue
    with the same ECN: PIE and fq_codel, or (``red``) RED, whose marks follow the average
    queue."""
    cubic = {(r.qdisc, r.ecn): rate(r) for r in rows if r.classic == "cubic"}
    ratios = [
        rate(r) / cubic[r.qdisc, r.ecn]
        for r in rows
        if r.classic == "reno" and r.qdisc.startswith("red") == red
    ]
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def _ratio_range(xs: list[float]) -> str:
    return f"{min(xs):.0f}:1 to {max(xs):.0f}:1"


def facts(out_dir: Path) -> dict[str, str]:
    """The numbers the docs' prose quotes, from a full run's ``table.csv``."""
    rows = read_rows(out_dir / "table.csv", Row)
    testbed, ours = (lambda r: r.testbed_classic_mbps), (lambda r: r.classic_mbps)
    prague_error = max(abs(r.prague_mbps / r.testbed_prague_mbps - 1) for r in rows)
    return {
        **_agreement(rows),
        "testbed_reno_to_cubic": _reno_to_cubic(rows, testbed),
        "reno_to_cubic": _reno_to_cubic(rows, ours),
        "testbed_reno_to_cubic_red": _reno_to_cubic(rows, testbed, red=True),
        "reno_to_cubic_red": _reno_to_cubic(rows, ours, red=True),
        "prague_max_error": f"{100 * prague_error:.0f} %",
        "ratio_range": _ratio_range([r.ratio for r in rows]),
        "testbed_ratio_range": _ratio_range([r.testbed_ratio for r in rows]),
    }


def headline(out_dir: Path) -> str:
    """What a full run shows: the agreement line of its ``table.md``."""
    lines = (out_dir / TABLE).read_text(encoding="utf-8").splitlines()
    return next(line for line in lines if "flows within 20 % of the testbed" in line)


def markdown_table(rows: list[Row]) -> str:
    seeds = rows[0].seeds
    head = (
        f"| qdisc | classic flow | testbed Mbit/s (Prague / classic) | l4sim, mean of {seeds} "
        "seeds | testbed ratio | l4sim ratio | with Prague's classic-ECN fallback | ratio |\n"
        "|---|---|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r.qdisc} | {r.classic} {'ECN' if r.ecn else 'Not-ECT'} "
        f"| {r.testbed_prague_mbps:.2f} / {r.testbed_classic_mbps:.2f} "
        f"| {r.prague_mbps:.2f} / {r.classic_mbps:.2f} "
        f"| {r.testbed_ratio:.0f}:1 | {r.ratio:.0f}:1 "
        f"| {r.fallback_prague_mbps:.2f} / {r.fallback_classic_mbps:.2f} "
        f"| {r.fallback_ratio:.1f}:1 |"
        for r in rows
    ]
    return head + "\n".join(lines) + "\n\n" + agreement(rows) + "\n"


def plot(rows: list[Row], path: Path) -> None:
    """The classic flow's rate in each run: the testbed's, l4sim's, and l4sim's beside a
    Prague that falls back."""
    import numpy as np

    from l4sim.plot import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    x = np.arange(len(rows))
    ax.bar(x - 0.27, [r.testbed_classic_mbps for r in rows], 0.27, label="Linux testbed")
    ax.bar(x, [r.classic_mbps for r in rows], 0.27, label="l4sim")
    ax.bar(x + 0.27, [r.fallback_classic_mbps for r in rows], 0.27, label="l4sim, fallback on")
    ax.set_yscale("log")
    ax.set_xticks(
        x,
        [f"{QDISCS[r.qdisc]}\n{r.classic}{'' if r.ecn else ' non-ECN'}" for r in rows],
        rotation=90,
        fontsize=7,
    )
    ax.set_ylabel("classic flow, Mbit/s (log)")
    ax.set_title("The classic flow beside Prague in one RFC 3168 queue, 50 Mbit/s, 20 ms")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def scenarios(
    out_dir: str | Path, groups: Iterable[str], *, seeds: Iterable[int] | None = None, **_: Any
) -> dict[str, Any]:
    """Case name and seed -> the scenario it ran with plain Prague (the fallback run differs
    only in Prague's ``ecn_fallback``)."""
    return {f"{c.name}-s{s}": scenario(c, s) for s in seeds or DEFAULT_SEEDS for c in cases(groups)}


def _cases(
    groups: Iterable[str], *, seeds: Iterable[int] | None = None, **_: object
) -> list[Seeded]:
    return [Seeded(c, s) for s in seeds or DEFAULT_SEEDS for c in cases(groups)]


EXPERIMENT = declare(
    __name__,
    name="rfc3168-coexistence",
    aliases=("l4s-tests-s6",),
    title="TCP Prague beside CUBIC or Reno in one RFC 3168 queue, against a Linux testbed",
    paper='Heist & Morton, "L4S Tests", scenario 6 "RFC3168 AQMs" (heistp/l4s-tests)',
    groups=GROUPS,
    options=(seeds_option("Run each case with seeds 1..N of the hosts' jitter (default 4)."),),
    tables=(TABLE, "table.csv"),
    figures=("rates.png",),
    reference=(REFERENCE,),
)
