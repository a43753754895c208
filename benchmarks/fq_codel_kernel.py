"""FQ-CoDel with mixed-RTT NewReno flows, and NewReno over 1 % random loss (through FQ-CoDel
and a FIFO): l4sim against the kernel's Reno (``l4sim emulate``) and ns-3 3.44 (issue 35,
item 6). Root is needed for the kernel side; ns-3 runs from its own venv.

Cases (dumbbells, 20 Mbit/s bottleneck, NewReno, no ECN):

- ``mixed_rtt_fq_codel``: 4 flows with base RTTs of 10, 20, 40 and 80 ms (sender access
  delays 3 / 8 / 18 / 38 ms, bottleneck 1.5 ms, receiver access 0.5 ms), FQ-CoDel with
  Linux's defaults (the flows' rates should be equal whatever their RTT).
- ``loss1_fq_codel`` and ``loss1_fifo``: 2 flows of 20 ms base RTT over a bottleneck that
  loses 1 % of the packets (both directions, after serialisation: l4sim's link ``loss``),
  through FQ-CoDel or a 100-packet FIFO; loss, not the queue, limits them (Mathis:
  ~7 Mbit/s per flow).

Compared per case: each flow's goodput, the total, and the bottleneck's mean sojourn (l4sim
and the emulator: enqueue to start of transmission; ns-3: its queue disc plus the 1-packet
device queue under it, "to wire"). l4sim runs its defaults (Linux's TCP rules). ns-3 runs
``TcpLinuxReno`` with SACK, PRR, a 200 ms minimum RTO, 40 ms delayed ACKs and 64 MiB buffers
(it has neither RACK-TLP nor Linux's RTO nor receive-buffer autotuning), the access delays
and the loss added to ``ns3_scenarios.run_ns3`` for this script.

    sudo python benchmarks/fq_codel_kernel.py [--runs 2] [--duration 30s]
        [--ns3-python /tmp/ns3venv/bin/python] [--skip-emu] [--skip-ns3] [--json FILE]

Each emulated run takes ``/tmp/l4sim-emu.lock`` (flock) so that no two emulations overlap;
ns-3 runs under ``nice -n 19``. Results are kept in the JSON file (resumed if present) and
printed as one Markdown table per case.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent / "python"))
sys.path.insert(0, str(BENCH_DIR))

from bench_vs_ns3 import ns3_spec_from_scenario  # noqa: E402
from l4sim import run  # noqa: E402
from l4sim.scenario import loads  # noqa: E402

LOCK = "/tmp/l4sim-emu.lock"
MIXED_DELAYS_MS = (3, 8, 18, 38)  # sender access, one way: base RTTs 10 / 20 / 40 / 80 ms
QDISCS = {"fq_codel": '{ kind = "fq_codel" }', "fifo": '{ kind = "fifo", limit = "100p" }'}
CASES = ("mixed_rtt_fq_codel", "loss1_fq_codel", "loss1_fifo")


def scenario_toml(case: str, duration: str, seed: int, ns3_port: bool = False) -> str:
    """The case as an l4sim scenario. ``ns3_port``: the variant ``ns3_spec_from_scenario``
    accepts (one access delay, no loss, RFC 6675 / RFC 6298 and a fixed 64 MiB window; the
    access delays, the loss and the TCP are then set on the ns-3 spec directly)."""
    mixed = case.startswith("mixed")
    qdisc = QDISCS["fifo" if case.endswith("fifo") else "fq_codel"]
    access = '{ rate = "1Gbps", delay = "0.5ms" }' if mixed else '{ rate = "1Gbps", delay = "1ms" }'
    lines = [
        f'name = "fqk_{case}"',
        f'duration = "{duration}"',
        f"seed = {seed}",
        "[topology]",
        'preset = "dumbbell"',
        f"access = {access}",
    ]
    if mixed and not ns3_port:
        lines.append(f"access_delays = {[f'{d}ms' for d in MIXED_DELAYS_MS]}".replace("'", '"'))
    lines += [
        "[topology.bottleneck]",
        'rate = "20Mbps"',
        f'delay = "{"1.5ms" if mixed else "8ms"}"',
        f"qdisc = {qdisc}",
    ]
    if not mixed and not ns3_port:
        lines.append("loss = 0.01")
    lines += ["[[flows]]", 'kind = "tcp"', 'cca = "newreno"', f"count = {4 if mixed else 2}"]
    if ns3_port:
        lines += ["rack = false", "linux_rto = false", 'rwnd = "64MiB"']
    return "\n".join(lines) + "\n"


def figures(summary: dict[str, Any]) -> dict[str, Any]:
    """Per-flow goodput, total and the bottleneck's mean sojourn of an l4sim summary."""
    q = next(x for x in summary["queues"] if x["link"] == "r0->r1")
    flows = [f["goodput_bps"] for f in summary["flows"]]
    return {
        "flow_goodputs_bps": flows,
        "goodput_bps": sum(flows),
        "sojourn_mean_s": q["sojourn_mean_s"] or 0.0,
        "drops": q["drops"],
        "lost": q.get("lost", 0),
        "retransmits": sum(f["retransmits"] or 0 for f in summary["flows"]),
        # The emulator has no timeout count (TCP_INFO gives none per flow): None there.
        "timeouts": None
        if any(f["timeouts"] is None for f in summary["flows"])
        else sum(f["timeouts"] for f in summary["flows"]),
    }


def run_sim(case: str, duration: str, seed: int) -> dict[str, Any]:
    return figures(run(loads(scenario_toml(case, duration, seed))).summary)


def run_emu(case: str, duration: str, seed: int) -> dict[str, Any]:
    from l4sim.emulate import emulate

    sc = loads(scenario_toml(case, duration, seed))
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one emulation at a time on this machine
        try:
            return figures(emulate(sc).summary)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def run_ns3(case: str, duration: str, seed: int, python: str) -> dict[str, Any]:
    spec = ns3_spec_from_scenario(loads(scenario_toml(case, duration, seed, ns3_port=True)))
    spec["cca"] = "linuxreno"  # grows by the segments acked, as Linux and l4sim
    if case.startswith("mixed"):
        spec["access_delays_s"] = [d / 1e3 for d in MIXED_DELAYS_MS]
    else:
        spec["bottleneck_loss"] = 0.01
    proc = subprocess.run(
        ["nice", "-n", "19", python, str(BENCH_DIR / "ns3_scenarios.py")],
        input=json.dumps(spec),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"ns-3 failed: {proc.stderr.strip()[-2000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    q = res["queues"][0]
    flows = [f["goodput_bps"] for f in res["flows"]]
    return {
        "flow_goodputs_bps": flows,
        "goodput_bps": sum(flows),
        "sojourn_mean_s": q.get("sojourn_to_wire_mean_s", q["sojourn_mean_s"]),
        "sojourn_qdisc_mean_s": q["sojourn_mean_s"],
        "drops": q["drops"],
        "retransmits": sum(f["retransmits"] or 0 for f in res["flows"]),
        "timeouts": sum(f["timeouts"] or 0 for f in res["flows"]),
    }


def mean_of(runs: list[dict[str, Any]], key: str, i: int | None = None) -> float:
    vals = [r[key] if i is None else r[key][i] for r in runs]
    return statistics.fmean(vals)


def spread(runs: list[dict[str, Any]], key: str, i: int | None = None) -> float:
    """Half the min-max range over the runs, relative to their mean."""
    vals = [r[key] if i is None else r[key][i] for r in runs]
    m = statistics.fmean(vals)
    return (max(vals) - min(vals)) / 2 / m if m else 0.0


def closer(kernel: float, sim: float, ns3: float | None) -> str:
    """Which simulator the kernel's value is closer to (relative error), with the errors."""
    e_sim = sim / kernel - 1 if kernel else float("inf")
    if ns3 is None:
        return f"l4sim {e_sim:+.0%}"
    e_ns3 = ns3 / kernel - 1 if kernel else float("inf")
    who = "l4sim" if abs(e_sim) < abs(e_ns3) else "ns-3"
    return f"**{who}** (l4sim {e_sim:+.0%}, ns-3 {e_ns3:+.0%})"


def table(case: str, res: dict[str, list[dict[str, Any]]]) -> str:
    sim, emu, ns3 = res.get("sim", []), res.get("emu", []), res.get("ns3", [])
    rows = [
        f"**{case}** ({len(sim)} / {len(emu)} / {len(ns3)} runs)\n",
        "| metric | l4sim | kernel (emulated) | ns-3 | kernel closer to |",
        "|---|---|---|---|---|",
    ]

    def cell(runs: list[dict[str, Any]], key: str, i: int | None, scale: float) -> str:
        if not runs:
            return "-"
        s = spread(runs, key, i)
        return f"{mean_of(runs, key, i) * scale:.2f}" + (f" ±{s:.0%}" if len(runs) > 1 else "")

    n = len((sim or emu or ns3)[0]["flow_goodputs_bps"])
    keys = [(f"flow {i} goodput Mbit/s", "flow_goodputs_bps", i, 1e-6) for i in range(n)]
    keys += [("total goodput Mbit/s", "goodput_bps", None, 1e-6)]
    keys += [("mean sojourn ms", "sojourn_mean_s", None, 1e3)]
    for label, key, i, scale in keys:
        verdict = "-"
        if sim and emu:
            k, s = mean_of(emu, key, i), mean_of(sim, key, i)
            verdict = closer(k, s, mean_of(ns3, key, i) if ns3 else None)
        rows.append(
            f"| {label} | {cell(sim, key, i, scale)} | {cell(emu, key, i, scale)} "
            f"| {cell(ns3, key, i, scale)} | {verdict} |"
        )
    for label, key in (("retransmits", "retransmits"), ("timeouts", "timeouts")):
        known = [[x for x in r if x[key] is not None] for r in (sim, emu, ns3)]
        vals = [f"{mean_of(r, key):.0f}" if r else "-" for r in known]
        rows.append(f"| {label} | {vals[0]} | {vals[1]} | {vals[2]} | |")
    return "\n".join(rows) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--duration", default="30s")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--ns3-python", default="/tmp/ns3venv/bin/python")
    ap.add_argument("--skip-emu", action="store_true")
    ap.add_argument("--skip-ns3", action="store_true")
    ap.add_argument("--json", type=Path, default=Path("fq_codel_kernel.json"))
    args = ap.parse_args()
    data: dict[str, dict[str, list[dict[str, Any]]]] = {}
    if args.json.is_file():
        data = json.loads(args.json.read_text())  # resume
    sides = ["sim"] + ([] if args.skip_emu else ["emu"]) + ([] if args.skip_ns3 else ["ns3"])
    for case in args.cases.split(","):
        res = data.setdefault(case, {})
        for side in sides:
            runs = res.setdefault(side, [])
            while len(runs) < args.runs:
                seed, t = len(runs) + 1, time.perf_counter()
                if side == "sim":
                    r = run_sim(case, args.duration, seed)
                elif side == "emu":
                    r = run_emu(case, args.duration, seed)
                else:
                    r = run_ns3(case, args.duration, seed, args.ns3_python)
                r["wall_s"] = time.perf_counter() - t
                runs.append(r)
                args.json.write_text(json.dumps(data, indent=1))
                print(f"{case} {side} run {seed}: {r['wall_s']:.1f} s", file=sys.stderr)
        print(table(case, res), flush=True)


if __name__ == "__main__":
    main()
