"""Paper 004's Table 2 ECN effect with a FreeBSD-13-like sender (issue 35, item 5).

`l4sim reproduce aqm-004` runs l4sim's Linux-like TCP. The paper's testbed ran FreeBSD 13.1
NewReno (hz = 100), which has no RACK-TLP and uses RFC 6298's RTO with a 30 ms floor and
100 ms delayed ACKs. This script re-runs the CoDel, PIE and FQ-CoDel cases (10 and 1 Mbit/s,
ECN off and on) with the flows set that way, to see how much of the paper's ECN effect a
timeout-prone sender explains:

    rack = false, linux_rto = false, min_rto = "30ms", quickack = false,
    delack = { count = 2, timeout = "100ms" }

    python benchmarks/aqm004_freebsd_tcp.py [--aqms codel,pie,fq_codel]

Prints, per AQM and rate, data transferred (MB, retransmissions included: Table 2's metric)
without and with ECN, the change, the paper's change, and the timeouts summed over the flows.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from l4sim.engine.run import run
from l4sim.experiments import aqm_comparison
from l4sim.scenario import Scenario

FREEBSD_TCP = {
    "rack": False,  # RFC 6675 SACK recovery, no RACK-TLP (FreeBSD 13's default stack)
    "linux_rto": False,  # RFC 6298 (tcp_timer.c)
    "min_rto": "30ms",  # net.inet.tcp.rexmit_min
    "quickack": False,  # no Linux quick-ACK mode
    "delack": {"count": 2, "timeout": "100ms"},  # net.inet.tcp.delacktime
}


def volume(case: aqm_comparison.Case, tcp: dict[str, object]) -> tuple[float, int]:
    d = aqm_comparison.scenario_dict(case)
    d["flows"] = [{**f, **tcp} for f in d["flows"]]
    s = run(Scenario.parse(d)).summary
    return sum(f["bytes_sent"] for f in s["flows"]) / 1e6, sum(f["timeouts"] for f in s["flows"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--aqms", default="codel,pie,fq_codel")
    args = ap.parse_args()
    print("| AQM | rate | TCP | MB no ECN | MB ECN | ECN effect | paper | timeouts off / on |")
    print("|---|---|---|---|---|---|---|---|")
    for aqm in args.aqms.split(","):
        for rate in aqm_comparison.RATES:
            p_off, p_on = aqm_comparison.PAPER_TABLE2[(aqm, rate)]
            for label, tcp in (("Linux-like", {}), ("FreeBSD-like", FREEBSD_TCP)):
                (off, t_off), (on, t_on) = (
                    volume(aqm_comparison.Case(aqm, rate, ecn), tcp) for ecn in (False, True)
                )
                print(
                    f"| {aqm} | {rate} | {label} | {off:.2f} | {on:.2f} | {on / off - 1:+.1%} "
                    f"| {p_on / p_off - 1:+.1%} | {t_off} / {t_on} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
