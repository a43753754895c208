"""Burst intolerance: Prague through DualPI2 against CUBIC through fq_codel behind a bursty link.

The testbed: Heist & Morton, "L4S Tests" (github.com/heistp/l4s-tests, key finding 8,
"Underutilization with Bursty Links", November 2020). DualPI2 marks the L queue from a
shallow 1 ms step, so packets that reach it in bursts (a wireless link's aggregates,
released at line rate) are marked even when the link is not full, and Prague backs off
below the link's rate. Its lab tests (Scenarios 2 and 3) put ``netem delay 200us slot 800us
5ms packets 16`` (``packets 32`` in Scenario 3) on the middlebox's ingress, both ways,
ahead of the HTB with the AQM, and report that Prague through DualPI2 trades "about a 50%
reduction in link utilization" against CUBIC through fq_codel (Figures 20, 21); its
real-world tests over an airMAX wireless link (7 and 160 ms RTT) give goodputs
(``l4s_tests_bursts.csv``).

One flow (Prague, Accurate ECN; CUBIC, ECN) crosses a dumbbell whose bottleneck has the
queue under test behind HTB's 14 bytes of overhead; the slotting sits on the sender's access
link towards the bottleneck (the data) and the receiver's (the ACKs), each ahead of the
bottleneck's routers, as l4s-tests' netem on the middlebox's ingress (docs/links.md). 250 us
of host jitter and a 6 MiB receive buffer as the other l4s-tests reproductions. Groups:

- ``s2``: Scenario 2, 50 Mbit/s cut to 25 at 30 s of 60, 20 and 80 ms, with and without
  its slotting, the four sender / queue pairs l4s-tests ran;
- ``s3``: Scenario 3, 100 Mbit/s stepping through 50, 10, 90 and 5, 20 and 80 ms;
- ``sweep``: 50 Mbit/s, 20 ms, 30 s, bursts of a fixed 0, 1, 2, 4 and 8 ms (a slot that
  gap apart releases everything waiting): the trend;
- ``acks``: the sweep's 4 ms bursts on the data alone or the ACKs alone (ACK aggregation);
- ``czech``, ``portland``: the real-world tests' rates and RTTs with Scenario 2's slotting as
  a stand-in for their wireless link (whose bursts are not published);
- ``step``: Scenario 2's bursts with DualPI2's step raised to 2, 3 and 5 ms;
- ``wifi``: the Wi-Fi link instead of the slotting (docs/links.md "Wi-Fi"): one 802.11ac
  station downloading through the AP, whose queue for it is DualPI2 or mac80211's
  FQ-CoDel, at 40 MHz MCS 5 (A-MPDUs up to aPPDUMaxTime, about 5 ms) and 80 MHz MCS 9
  (about 2 ms), 20 ms of base RTT, 20 s.

Per case, over ``--seeds`` seeds (10) of the hosts' jitter: the bottleneck's utilisation
(its busy fraction) over the group's steady windows (mean, and the range over seeds), the
goodput there, the bottleneck's per-packet sojourn p50 / p99 over the whole run, the flow's
smoothed RTT (mean, p99 of the 100 ms samples) in the windows, marks and drops. The drop
of a slotted case: one less its utilisation over the unslotted run of the same pair.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from l4sim.executors import Executor
from l4sim.experiments._cases import run_seeded, seeded_hooks, seeds_for
from l4sim.experiments._tables import write_per_seed, write_table
from l4sim.experiments.base import declare, quick_option, seeds_option
from l4sim.experiments.l4s_bursts.numbers import facts
from l4sim.experiments.l4s_bursts.report import (
    FINDINGS,
    REFERENCE,
    TABLE,
    findings,
    markdown_table,
    plot,
    plot_wifi,
    rows_of,
)
from l4sim.experiments.l4s_bursts.runs import GROUPS, Case, cases, run_task, scenario

DEFAULT_SEEDS = tuple(range(1, 11))
FIGURE = "utilisation_vs_burst.png"
WIFI_FIGURE = "wifi.png"

__all__ = ["Case", "cases", "reproduce", "scenario"]


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    quick: bool = False,
    seeds: Iterable[int] | None = None,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
) -> list[Any]:
    """Every case (of the groups in ``only``; ``quick``: the published lab case and the
    sweep's 0 and 4 ms, one seed) over ``seeds``: ``table.md``, ``table.csv``,
    ``per_seed.csv``, ``findings.md`` and (``figures``) the utilisation against burst size."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS, quick=quick)
    runs, per_case = run_seeded(
        run_task, todo, seeds_for(seeds, quick, DEFAULT_SEEDS), executor, on_case
    )
    rows = rows_of(todo, per_case)
    write_per_seed(out, runs)
    write_table(rows, out, TABLE, markdown_table(rows))
    (out / FINDINGS).write_text(findings(rows))
    if figures and any(r.group == "sweep" for r in rows):
        plot(rows, out / FIGURE)
    if figures and any(r.group == "wifi" for r in rows):
        plot_wifi(rows, out / WIFI_FIGURE)
    return rows


def headline(out_dir: Path) -> str:
    """What a full run shows, from its ``table.csv`` (:func:`facts`): Scenario 2 at 20 ms,
    Prague through DualPI2 against CUBIC through fq_codel behind the slotting, as the study
    reports it."""
    f = facts(out_dir)
    return (
        f"Behind l4s-tests' netem slotting (Scenario 2, 20 ms) Prague through DualPI2 keeps "
        f"{f['s2_prague_util']} of the link, CUBIC through fq_codel {f['s2_cubic_util']}: "
        f"{f['s2_less']} less (the study: about 50 %); "
        "Prague's utilisation follows DualPI2's step over the burst length."
    )


scenarios, _cases = seeded_hooks(cases, scenario, DEFAULT_SEEDS)


EXPERIMENT = declare(
    __name__,
    name="l4s-bursts",
    title="Prague through DualPI2 against CUBIC through fq_codel behind a bursty link",
    paper="Heist & Morton, L4S tests, key finding 8 (bursty links; Scenarios 2 and 3, "
    "real-world tests), Linux testbed, 2020",
    groups=GROUPS,
    options=(
        quick_option("the published lab case and 0 / 4 ms bursts, the two main pairs, one seed"),
        seeds_option("Run each case with seeds 1..N of the hosts' jitter (default 10)."),
    ),
    tables=(TABLE, "table.csv", FINDINGS),
    figures=(FIGURE, WIFI_FIGURE),
    reference=(REFERENCE,),
)
