"""A rate cut under fq_codel: TCP Prague's RTT spike against CUBIC's, against a Linux testbed.

The testbed: Heist & Morton, "L4S Tests" (github.com/heistp/l4s-tests, scenario 2 "Codel Rate
Step", November 2020). One TCP flow (Prague of the L4STeam kernel of August 2020, or CUBIC)
runs through ``fq_codel`` (Linux's defaults) under a 50 Mbit/s HTB with 80 ms of RTT; 30 s
into the 60 s test a second HTB cuts the rate to 25, 10, 5 or 1 Mbit/s. CoDel's marks are
RFC 3168 signals, which Prague answers with a DCTCP-like, alpha-sized reduction instead of
halving, so its queue and RTT take much longer to come down than CUBIC's. The study gives
three numbers in its text (``l4s_tests_s2.csv``): Prague's spike lasts about 5 s at
25 Mbit/s where CUBIC's is brief, and at 1 Mbit/s Prague's RTT peaks at 4 346 ms and stays
up for over 30 s.

We run the same flow on a dumbbell with the testbed's set-up as ``l4s-rtt-fairness`` models it
(Accurate ECN, HTB's 14 bytes of overhead, 250 us of host jitter, a 6 MiB receive buffer),
the rate cut as a step schedule on the bottleneck, and read the flow's smoothed RTT every
100 ms. The spike: from the cut until the smoothed RTT is last above 1.25 times the RTT the new
rate allows (the base RTT, CoDel's 5 ms target and two packets' serialisation at the new
rate); a spike still on at the end of the test is "at least" the 30 s left. Each case is the
mean of ``--seeds`` seeds (2); with Prague's classic-ECN fallback (``ecn_fallback = 1``,
later L4STeam code) alongside.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from l4sim.engine.run import run
from l4sim.executors import Executor
from l4sim.experiments import reference
from l4sim.experiments._cases import Seeded, run_seeded
from l4sim.experiments._tables import bullet_lines, write_per_seed, write_table
from l4sim.experiments.base import declare, seeds_option
from l4sim.scenario import Scenario

REFERENCE = "l4s_tests_s2.csv"
RATE_MBPS = 50
RTT_MS = 80
DURATION_S = 60
STEP_S = 30.0
#: fq_codel's default target (Linux `fq_codel` without arguments).
CODEL_TARGET_S = 0.005
#: A spike is the RTT above this factor of the RTT the new rate allows.
SPIKE_FACTOR = 1.25
#: Published figures agree within 30 % (the study reads them off one run).
TOLERANCE = 0.3
HOST_JITTER_US = 250.0
HTB_OVERHEAD_BYTES = 14
TABLE = "table.md"
#: The seeds of a run without ``--seeds``.
DEFAULT_SEEDS = (1, 2)

RATES = (25, 10, 5, 1)
CCAS = ("prague", "cubic", "prague-fallback")
#: Subsets ``--only`` accepts: the rates after the cut and the senders.
GROUPS = (*(f"{r}Mbps" for r in RATES), *CCAS)


@dataclass(frozen=True)
class Case:
    cca: str
    rate2_mbps: int

    @property
    def name(self) -> str:
        return f"{self.cca}-{self.rate2_mbps}Mbps"

    def cca_config(self) -> Any:
        if self.cca == "prague-fallback":
            return {"kind": "prague", "ecn_fallback": 1}
        return self.cca


def cases(groups: Iterable[str] = GROUPS) -> list[Case]:
    wanted = set(groups)
    rates = {r for r in RATES if f"{r}Mbps" in wanted} or set(RATES)
    ccas = wanted & set(CCAS) or set(CCAS)
    return [Case(c, r) for r in RATES for c in CCAS if r in rates and c in ccas]


def scenario(case: Case, seed: int = 1) -> Scenario:
    return Scenario.parse(
        {
            "name": case.name,
            "seed": seed,
            "duration": f"{DURATION_S}s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "1Gbps", "delay": "0ms", "jitter": f"{HOST_JITTER_US:g}us"},
                "access_delays": [f"{RTT_MS / 2:g}ms"],
                "bottleneck": {
                    "rate": f"{RATE_MBPS}Mbps",
                    "delay": "0ms",
                    "qdisc": {"kind": "fq_codel"},
                    "overhead": HTB_OVERHEAD_BYTES,
                    "schedule": [
                        {"at": "0s", "rate": f"{RATE_MBPS}Mbps"},
                        {"at": f"{STEP_S:g}s", "rate": f"{case.rate2_mbps}Mbps"},
                    ],
                },
            },
            "flows": [
                {
                    "kind": "tcp",
                    "cca": case.cca_config(),
                    "ecn": True,
                    "accecn": True,
                    "rmem_max": "6MiB",
                }
            ],
        }
    )


def settled_rtt_s(rate2_mbps: int) -> float:
    """The RTT the new rate allows: base RTT, CoDel's target and two packets' serialisation."""
    return RTT_MS / 1e3 + CODEL_TARGET_S + 2 * (1500 + HTB_OVERHEAD_BYTES) * 8 / (rate2_mbps * 1e6)


@dataclass
class Run:
    case: str
    seed: int
    max_rtt_ms: float
    spike_s: float
    #: The spike was still on when the test ended (its length is a lower bound).
    open_ended: bool


def measure(case: Case, seed: int) -> Run:
    flows = run(scenario(case, seed)).flows
    after = flows.filter((pl.col("flow") == 0) & (pl.col("time_s") >= STEP_S)).sort("time_s")
    high = after.filter(pl.col("srtt_s") > SPIKE_FACTOR * settled_rtt_s(case.rate2_mbps))
    last = float(high["time_s"].max()) if high.height else STEP_S
    end = float(after["time_s"].max())
    return Run(
        case.name,
        seed,
        float(after["srtt_s"].max()) * 1e3,
        last - STEP_S,
        bool(high.height) and last >= end - 0.5,
    )


def _run(task: tuple[Case, int]) -> Run:
    return measure(*task)


@dataclass
class Row:
    case: str
    cca: str
    rate2_mbps: int
    max_rtt_ms: float
    spike_s: float
    open_ended: bool
    seeds: int
    published_max_rtt_ms: float | None
    published_spike_s: float | None
    published_spike_at_least: bool
    published_brief: bool


def _published() -> dict[tuple[str, int], dict[str, str]]:
    return {(r["cc"], int(r["rate2_mbps"])): r for r in reference.rows(REFERENCE)}


def _row(case: Case, runs: list[Run]) -> Row:
    pub = _published().get((case.cca, case.rate2_mbps), {})

    def num(key: str) -> float | None:
        return float(pub[key]) if pub.get(key) else None

    return Row(
        case.name,
        case.cca,
        case.rate2_mbps,
        statistics.mean(r.max_rtt_ms for r in runs),
        statistics.mean(r.spike_s for r in runs),
        all(r.open_ended for r in runs),
        len(runs),
        num("max_rtt_ms"),
        num("spike_s"),
        pub.get("spike_at_least") == "1",
        pub.get("brief") == "1",
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
    """Every rate cut for each sender over ``seeds`` (default 1-2): ``table.md``,
    ``table.csv``, ``per_seed.csv`` and (``figures``) ``rtt.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS)
    seed_list = list(seeds if seeds is not None else DEFAULT_SEEDS)
    runs, per_case = run_seeded(_run, todo, seed_list, executor, on_case)
    rows = [_row(c, r) for c, r in zip(todo, per_case, strict=True)]
    write_per_seed(out, runs)
    write_table(rows, out, TABLE, markdown_table(rows))
    if figures:
        plot(todo, out / "rtt.png", seed_list[0])
    return rows


def _spike(row: Row) -> str:
    return f"≥ {row.spike_s:.0f} s" if row.open_ended else f"{row.spike_s:.1f} s"


def _published_cell(row: Row) -> str:
    if row.published_brief:
        return "brief"
    parts = []
    if row.published_spike_s is not None:
        over = "over " if row.published_spike_at_least else "about "
        parts.append(f"{over}{row.published_spike_s:g} s")
    if row.published_max_rtt_ms is not None:
        parts.append(f"peak {row.published_max_rtt_ms:g} ms")
    return ", ".join(parts) or "-"


def headline(out_dir: Path) -> str:
    """What a full run shows: how many of the study's figures its ``table.md`` meets, and
    which."""
    found = bullet_lines(out_dir / TABLE)
    met = [line.removesuffix(": yes") for line in found if line.endswith(": yes")]
    missed = [line.removesuffix(": no") for line in found if line.endswith(": no")]
    text = f"{len(met)} of {len(found)} of the study's figures met ({'; '.join(met)})"
    return text + (f"; missed: {'; '.join(missed)}." if missed else ".")


def checks(rows: list[Row]) -> list[str]:
    """The published figures against ours: Prague's spike and peak within 30 %, a spike the
    study calls "over" N s at least N s, CUBIC's spike at least 5 times shorter than Prague's
    where the study calls it brief."""
    by = {(r.cca, r.rate2_mbps): r for r in rows}
    out = []
    for r in rows:
        if r.published_spike_s is not None:
            if r.published_spike_at_least:
                ok = r.spike_s >= (1 - TOLERANCE) * r.published_spike_s
                what = f"over {r.published_spike_s:g} s"
            else:
                ok = abs(r.spike_s / r.published_spike_s - 1) <= TOLERANCE
                what = f"about {r.published_spike_s:g} s"
            out.append(f"{r.case}: spike {_spike(r)} against {what}: {'yes' if ok else 'no'}")
        if r.published_max_rtt_ms is not None:
            ok = abs(r.max_rtt_ms / r.published_max_rtt_ms - 1) <= TOLERANCE
            out.append(
                f"{r.case}: peak RTT {r.max_rtt_ms:.0f} ms against {r.published_max_rtt_ms:g} ms: "
                f"{'yes' if ok else 'no'}"
            )
        prague = by.get(("prague", r.rate2_mbps))
        if r.published_brief and prague is not None:
            ok = r.spike_s * 5 <= prague.spike_s
            out.append(
                f"{r.case}: spike {_spike(r)}, at least 5 times shorter than Prague's "
                f"{_spike(prague)}: {'yes' if ok else 'no'}"
            )
    return out


def markdown_table(rows: list[Row]) -> str:
    seeds = rows[0].seeds
    head = (
        f"| sender | rate after the cut | peak RTT (ms), mean of {seeds} seeds | RTT spike "
        "| the study |\n|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r.cca} | {r.rate2_mbps} Mbit/s | {r.max_rtt_ms:.0f} | {_spike(r)} "
        f"| {_published_cell(r)} |"
        for r in rows
    ]
    found = checks(rows)
    tail = "\n".join(f"- {c}" for c in found) if found else "No published figure in this subset."
    return head + "\n".join(lines) + "\n\n" + tail + "\n"


def plot(todo: list[Case], path: Path, seed: int) -> None:
    """Each sender's smoothed RTT around the cut, one panel per rate after it."""
    from l4sim.plot import pyplot

    plt = pyplot()
    rates = sorted({c.rate2_mbps for c in todo}, reverse=True)
    fig, axes = plt.subplots(len(rates), 1, figsize=(8, 2.6 * len(rates)), squeeze=False)
    for ax, rate in zip(axes[:, 0], rates, strict=True):
        for c in (c for c in todo if c.rate2_mbps == rate):
            f = run(scenario(c, seed)).flows.filter(pl.col("time_s") >= STEP_S - 5)
            ax.plot(f["time_s"], f["srtt_s"] * 1e3, label=c.cca, lw=1.2)
        ax.axvline(STEP_S, color="0.5", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_ylabel("smoothed RTT (ms)")
        ax.set_title(f"fq_codel, 50 → {rate} Mbit/s at {STEP_S:g} s, 80 ms base RTT", fontsize=10)
        ax.legend(fontsize=8, loc="upper right")
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def scenarios(
    out_dir: str | Path, groups: Iterable[str], *, seeds: Iterable[int] | None = None, **_: Any
) -> dict[str, Any]:
    return {f"{c.name}-s{s}": scenario(c, s) for s in seeds or DEFAULT_SEEDS for c in cases(groups)}


def _cases(
    groups: Iterable[str], *, seeds: Iterable[int] | None = None, **_: object
) -> list[Seeded]:
    return [Seeded(c, s) for s in seeds or DEFAULT_SEEDS for c in cases(groups)]


EXPERIMENT = declare(
    __name__,
    name="rfc3168-rate-step",
    aliases=("l4s-tests-s2",),
    title="A rate cut under fq_codel: TCP Prague's RTT spike against CUBIC's",
    paper='Heist & Morton, "L4S Tests", scenario 2 "Codel Rate Step" (heistp/l4s-tests)',
    groups=GROUPS,
    options=(seeds_option("Run each case with seeds 1..N of the hosts' jitter (default 2)."),),
    tables=(TABLE, "table.csv"),
    figures=("rtt.png",),
    reference=(REFERENCE,),
)
