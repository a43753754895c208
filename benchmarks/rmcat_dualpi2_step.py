"""DualPI2's L-queue step at a few Mbit/s: RFC 8867 cases 5.4 (three media flows, 3.5
Mbit/s) and 5.6 (one media flow beside a long NewReno flow, 2 Mbit/s) through DualPI2 with
Linux's defaults (``step_thresh`` 1 ms of sojourn, ``min_qlen_step`` 0) and with the step
applied only to packets that found the L queue holding at least 1 or 2 packets, or a step
of 2 packets instead of 1 ms (Linux ``sch_dualpi2``: ``min_qlen_step``, ``step_thresh``
in packets). At these rates one packet's serialisation (4.8 ms for 1200 bytes at 2 Mbit/s)
is longer than the 1 ms step, so an L packet that waits behind any other packet, an L one
or the classic flow's, is marked.

Writes ``benchmarks/data/rmcat_dualpi2_step.md``: ``python benchmarks/rmcat_dualpi2_step.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from l4sim.engine.simulation import Simulation
from l4sim.experiments import rmcat

OUT = Path(__file__).parent / "data" / "rmcat_dualpi2_step.md"
VARIANTS: dict[str, Any] = {
    "Linux defaults (1 ms, min_qlen_step 0)": "dualpi2",
    "min_qlen_step 1": {"kind": "dualpi2", "min_qlen_step": 1},
    "min_qlen_step 2": {"kind": "dualpi2", "min_qlen_step": 2},
    "step 2 packets": {"kind": "dualpi2", "step_thresh": "2p"},
}


def run(test: str, sender: str, qdisc: Any) -> str:
    def _qdisc(queue: str, mbps: float) -> Any:
        return qdisc

    original = rmcat._qdisc
    rmcat._qdisc = _qdisc
    try:
        sim = Simulation(rmcat.scenario(rmcat.Case(test, sender, "dualpi2"), 1))
    finally:
        rmcat._qdisc = original
    sim.run()
    s = sim.summary()
    media = [f for f in s["flows"] if "frames" in f]
    tcp = [f["goodput_bps"] / 1e6 for f in s["flows"] if "frames" not in f]
    rates = ", ".join(f"{f['goodput_bps'] / 1e6:.2f}" for f in media)
    p99 = max(f["frames"]["delay_p99_s"] for f in media) * 1e3
    q = next(q for q in s["queues"] if q["link"] == "r0->r1")
    lq = q["classes"][0]["sojourn_p99_s"] * 1e3
    tcp_s = f"{tcp[0]:.2f}" if tcp else "-"
    return f"| {rates} | {tcp_s} | {p99:.0f} | {lq:.1f} |"


def main() -> None:
    lines = [
        "| case | sender | DualPI2 | media (Mbit/s, each flow) | TCP (Mbit/s) | frame delay "
        "p99, worst flow (ms) | L queue p99 (ms) |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for test in ("5.4", "5.6"):
        for sender in ("scream-l4s", "udp-prague"):
            for name, qdisc in VARIANTS.items():
                lines.append(f"| {test} | {sender} | {name} " + run(test, sender, qdisc))
    note = "Seed 1, the cases' full durations; rates are goodput over each flow's life."
    OUT.write_text("\n".join(lines) + "\n\n" + note + "\n")
    print(OUT.read_text())


if __name__ == "__main__":
    main()
