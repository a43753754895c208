"""Linux TCP mechanisms against the Linux L4S testbed, one option at a time.

Runs `l4sim reproduce l4s-rtt-fairness`'s 144 cases (288 flows through DualPI2, pfifo and
fq_codel beside heistp/l4s-tests' scenario 1) with each of l4sim's Linux-behaviour TCP
options off where it is on by default (CUBIC's three, quick ACKs, RACK-TLP, Linux's RTO)
and on where it is off (PRR after an ECN echo), and the pfifo rows also with
the second flow starting 0, 7, 19, 43 and 101 ms late (one start moves them by several
flows). Prints the README's table: flows within 20 % of Linux per qdisc, the pfifo mean
over the starts, all flows, and the median error.

    python benchmarks/linux_tcp_options.py [--jobs 2] [--only default,no_rack]

About 1 minute per row on 2 idle cores, 13 min for the 11 rows (the pfifo starts add
4 x 48 cases).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from typing import Any

from l4sim.executors import PoolExecutor
from l4sim.experiments import l4s_rtt_fairness as exp
from l4sim.experiments.l4s_rtt_fairness import TcpVariant

STARTS_MS = (0.0, 7.0, 19.0, 43.0, 101.0)
#: CUBIC as RFC 9438 writes it: Linux's three behaviours (l4sim's defaults) off.
CUBIC_RFC = {"hystart": False, "linux_alpha": False, "initial_cap": False}

ROWS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "default": ({}, {}),
    "no_quickack": ({"quickack": False}, {}),
    "no_hystart": ({}, {"hystart": False}),
    "no_linux_alpha": ({}, {"linux_alpha": False}),
    "no_initial_cap": ({}, {"initial_cap": False}),
    "cubic_rfc": ({}, CUBIC_RFC),
    "no_rack": ({"rack": False}, {}),
    "no_linux_rto": ({"linux_rto": False}, {}),
    "rfc_loss": ({"rack": False, "linux_rto": False}, {}),
    "prr_in_cwr": ({"prr_in_cwr": True}, {}),
    # A fixed window, no receive-buffer autotuning (the default until issue 17's last change).
    "fixed_rwnd": ({"rwnd": "64MiB"}, {}),
    "rfc_all": ({"rack": False, "linux_rto": False, "quickack": False}, CUBIC_RFC),
}


def within(rows: list[exp.Row]) -> int:
    return sum(abs(e) <= 0.2 for e in exp.flow_errors(rows))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default=",".join(ROWS), help="rows, comma-separated")
    args = ap.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        print(f"unknown rows {unknown}; choose from {list(ROWS)}", file=sys.stderr)
        return 2
    print(
        "| TCP | DualPI2 /96 | fq_codel /96 | pfifo /96 | pfifo, mean of 5 starts "
        "| all /288 | median error |"
    )
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp, PoolExecutor(args.jobs) as ex:
        for name in names:
            flow, cubic = ROWS[name]
            rows = exp.reproduce(
                tmp, figures=False, executor=ex, variant=TcpVariant.of(flow, cubic)
            )
            by = {q: [r for r in rows if r.qdisc == q] for q in ("dualpi2", "fq_codel", "pfifo")}
            pfifo = [within(by["pfifo"])]
            for start in STARTS_MS[1:]:
                shifted = exp.reproduce(
                    tmp,
                    only=["pfifo"],
                    figures=False,
                    executor=ex,
                    variant=TcpVariant.of(flow, cubic, start),
                )
                pfifo.append(within(shifted))
            median = 100 * statistics.median(abs(e) for e in exp.flow_errors(rows))
            print(
                f"| {name} | {within(by['dualpi2'])} | {within(by['fq_codel'])} "
                f"| {pfifo[0]} | {statistics.mean(pfifo):.1f} | {within(rows)} "
                f"| {median:.1f} % |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
