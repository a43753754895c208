"""The figure of examples/trace_lte.toml: Prague, CUBIC and BBR over a recorded LTE downlink,
through DualPI2 and through FQ-CoDel. Top: each flow's goodput and the trace's capacity
(1 s bins); bottom: the bottleneck's queue delay (mean sojourn per 100 ms sample).

    python examples/trace_figure.py                     # docs/figures/trace_verizon-lte.png
    python examples/trace_figure.py --out fig.png --duration 20s
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import polars as pl

import l4sim
from l4sim.scenario import Scenario, traces

HERE = Path(__file__).resolve().parent
SCENARIO = HERE / "trace_lte.toml"
OUT = HERE.parent / "docs" / "figures" / "trace_verizon-lte.png"
BIN_S = 1.0


def run(qdisc: str, duration: str | None) -> tuple[l4sim.Result, Scenario]:
    data = copy.deepcopy(l4sim.load(SCENARIO).to_dict())
    data["topology"]["bottleneck"]["qdisc"] = {"kind": qdisc}
    if duration:
        data["duration"] = duration
    scenario = Scenario.parse(data, source=SCENARIO.name)
    return l4sim.run(scenario), scenario


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--duration", help="override the scenario's 60s (e.g. 20s)")
    args = ap.parse_args()
    qdiscs = ("dualpi2", "fq_codel")
    fig, axes = plt.subplots(2, 2, figsize=(12, 6.5), sharex=True, sharey="row")
    for col, qdisc in enumerate(qdiscs):
        result, scenario = run(qdisc, args.duration)
        trace = scenario.topology.bottleneck.trace  # type: ignore[union-attr]
        duration_s = scenario.duration / 1e9
        t, cap = traces.capacity_series(traces.load(trace), duration_s, BIN_S)
        top, bottom = axes[0][col], axes[1][col]
        top.step(t, [c / 1e6 for c in cap], where="mid", color="0.6", label="trace capacity")
        for i, f in enumerate(result.summary["flows"]):
            s = result.flows.filter(pl.col("flow") == i).with_columns(
                (pl.col("time_s") / BIN_S - 1e-9).floor().alias("bin")
            )
            g = s.group_by("bin").agg(pl.col("goodput_bps").mean()).sort("bin")
            top.plot(
                (g["bin"] + 0.5) * BIN_S,
                g["goodput_bps"] / 1e6,
                label=f"{f['cca']} ({f['goodput_bps'] / 1e6:.2f} Mbit/s)",
            )
        top.set_title(f"{qdisc}: Verizon LTE downlink ({trace.removeprefix('builtin:')})")
        top.set_ylabel("goodput (Mbit/s)")
        top.legend(fontsize=8, loc="upper right")
        q = result.queues.filter(pl.col("link") == "r0->r1")
        for cls in sorted(q["class"].unique().to_list()):
            c = q.filter(pl.col("class") == cls)
            bottom.plot(c["time_s"], c["sojourn_s"] * 1e3, lw=0.8, label=cls or "all")
        bottom.set_ylabel("queue delay (ms)")
        bottom.set_xlabel("time (s)")
        bottom.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(args.out)


if __name__ == "__main__":
    main()
