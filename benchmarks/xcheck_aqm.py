"""AQM cross-check: l4sim against ns-3 3.44 on FIFO, RED, CoDel, PIE and FQ-CoDel.

    python benchmarks/xcheck_aqm.py [--cases fifo-newreno,pie-cubic,...] [--duration 60]
                                    [--seeds 1] [--jobs 1] [--json out.json]
                                    [--ns3-reno linux|newreno]
                                    [--goodput-tol 5] [--sojourn-tol 20] [--no-check]

Every case is `scenarios/xcheck_<qdisc>.toml` (4 bulk flows, 10 Mbps / 20 ms bottleneck,
1 Gbps / 1 ms access, 60 s) with its flows' CCA set to NewReno or CUBIC. The ns-3 side is
derived from the scenario's normalised configuration by bench_vs_ns3.ns3_spec_from_scenario:
the same topology and TCP parameters, and ns-3's queue disc of the same kind configured to
l4sim's parameters (ns3_scenarios._aqm_attributes) over a 1-packet device queue. l4sim's
NewReno (Linux semantics: the window grows by the segments an ACK covers) is compared with
ns-3's TcpLinuxReno, not TcpNewReno (grows per ACK; --ns3-reno newreno). Both CUBICs run
HyStart (the default of l4sim, ns-3 and Linux; a scenario that turns it off turns ns-3's off).

Printed per case: total goodput, mean sojourn at the bottleneck and drops on both sides,
with the differences. l4sim's sojourn is enqueue to start of transmission of each packet
sent; ns-3's is the queue disc's SojournTime trace for the packets sent (what the AQM
controls), and "to wire" adds the wait in the 1-packet device queue under the queue disc.

Exit status: 0 if every case is within the goal (goodput within --goodput-tol % and mean
sojourn within --sojourn-tol % of ns-3's queue-disc sojourn), 1 otherwise (--no-check: 0).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

from bench_vs_ns3 import _import_l4sim, _jain, ns3_spec_from_scenario  # noqa: E402
from ns3_scenarios import run_ns3, run_ns3_subprocess  # noqa: E402

QDISCS = ["fifo", "red", "codel", "pie", "fq_codel"]
CCAS = ["newreno", "cubic"]
CASES = [f"{q}-{c}" for q in QDISCS for c in CCAS]


def load_case(l4sim, case: str, duration_s: float | None, seed: int):
    """The l4sim scenario of `case` ("<qdisc>-<cca>")."""
    qdisc, cca = case.rsplit("-", 1)
    sc = l4sim.load(REPO / "scenarios" / f"xcheck_{qdisc}.toml")
    d = sc.to_dict()
    for f in d["flows"]:
        f["cca"] = cca
    d["name"] = f"xcheck_{qdisc}_{cca}"
    d["seed"] = seed
    if duration_s is not None:
        d["duration"] = f"{duration_s:g}s"
    return l4sim.Scenario.parse(d, source=case)


def _bottleneck(queues: list[dict[str, Any]]) -> dict[str, Any]:
    return next((q for q in queues if q.get("link") == "r0->r1"), {})


def run_l4sim(l4sim, sc) -> dict[str, Any]:
    s = l4sim.run(sc).summary
    q = _bottleneck(s["queues"])
    flows = s["flows"]
    return {
        "goodput_bps": sum(f["goodput_bps"] for f in flows),
        "goodput_bps_per_flow": [f["goodput_bps"] for f in flows],
        "sojourn_mean_s": q["sojourn_mean_s"],
        "drops": q["drops"],
        "backlog_mean_pkts": q["backlog_mean_pkts"],
        "retransmits": sum(f["retransmits"] for f in flows),
        "timeouts": sum(f.get("timeouts") or 0 for f in flows),
        "wall_s": s["wall_time_s"],
    }


def run_ns3_side(spec: dict[str, Any], inprocess: bool) -> dict[str, Any]:
    r = run_ns3(spec) if inprocess else run_ns3_subprocess(spec)
    q = r["queues"][0]
    flows = r["flows"]
    return {
        "goodput_bps": sum(f["goodput_bps"] for f in flows),
        "goodput_bps_per_flow": [f["goodput_bps"] for f in flows],
        "sojourn_mean_s": q["sojourn_mean_s"],
        "sojourn_all_dequeued_mean_s": q.get("sojourn_all_dequeued_mean_s"),
        "sojourn_to_wire_mean_s": q.get("sojourn_to_wire_mean_s"),
        "drops": q["drops"],
        "backlog_mean_pkts": q["backlog_mean_pkts"],
        "retransmits": sum(f["retransmits"] or 0 for f in flows),
        "timeouts": sum(f["timeouts"] or 0 for f in flows),
        "wall_s": r["wall_time_s"],
        "ns3_attributes": q.get("ns3_attributes"),
        "ns3_flow_codel_attributes": q.get("ns3_flow_codel_attributes"),
    }


def _avg(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean over seeds of the numeric fields (per-flow lists element-wise)."""
    out: dict[str, Any] = {"runs": runs}
    for k, v in runs[0].items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            vals = [r[k] for r in runs if r.get(k) is not None]
            out[k] = sum(vals) / len(vals) if vals else None
        elif isinstance(v, list):
            out[k] = [sum(x) / len(x) for x in zip(*(r[k] for r in runs), strict=True)]
        else:
            out[k] = v
    return out


def _pct(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0 or math.isnan(a) or math.isnan(b):
        return None
    return 100.0 * (a / b - 1.0)


def _f(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return format(v, spec)


def print_table(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'case':16} {'l4 Mbps':>8} {'ns3 Mbps':>8} {'diff %':>7} {'l4 soj ms':>9}"
        f" {'ns3 soj ms':>10} {'diff %':>7} {'ns3 wire ms':>11} {'drops l4/ns3':>13}"
        f" {'Jain l4/ns3':>11}  goal"
    )
    print(head)
    for r in rows:
        a, b = r["l4sim"], r["ns3"]
        drops = f"{_f(a.get('drops'), '.0f')}/{_f(b.get('drops'), '.0f')}"
        jain = (
            f"{_f(_jain(a.get('goodput_bps_per_flow', [])), '.2f')}/"
            f"{_f(_jain(b.get('goodput_bps_per_flow', [])), '.2f')}"
        )
        print(
            f"{r['case']:16} {_f(a.get('goodput_bps', 0) / 1e6, '.3f'):>8}"
            f" {_f(b.get('goodput_bps', 0) / 1e6, '.3f'):>8}"
            f" {_f(r['goodput_diff_pct'], '+.1f'):>7}"
            f" {_f(a.get('sojourn_mean_s', math.nan) * 1e3, '.2f'):>9}"
            f" {_f(b.get('sojourn_mean_s', math.nan) * 1e3, '.2f'):>10}"
            f" {_f(r['sojourn_diff_pct'], '+.1f'):>7}"
            f" {_f((b.get('sojourn_to_wire_mean_s') or math.nan) * 1e3, '.2f'):>11}"
            f" {drops:>13} {jain:>11}  {'ok' if r['ok'] else 'MISS'}"
        )
    print()
    print("retransmitted segments / RTO timeouts, l4sim vs ns-3:")
    for r in rows:
        a, b = r["l4sim"], r["ns3"]
        print(
            f"  {r['case']:16} {_f(a.get('retransmits'), '.0f')}/{_f(a.get('timeouts'), '.0f')}"
            f"  vs  {_f(b.get('retransmits'), '.0f')}/{_f(b.get('timeouts'), '.0f')}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma list of {', '.join(CASES)}")
    ap.add_argument("--duration", type=float, default=None, help="simulated s (default 60)")
    ap.add_argument("--seeds", type=int, default=1, help="average over seeds 1..N (both sides)")
    ap.add_argument("--jobs", type=int, default=1, help="ns-3 runs in parallel (subprocesses)")
    ap.add_argument("--json", type=Path, default=None, help="write all results here")
    ap.add_argument(
        "--ns3-reno",
        choices=["newreno", "linux"],
        default="linux",
        help="ns-3 class for l4sim's NewReno: TcpLinuxReno (default: grows by segments acked,"
        " as Linux and l4sim) or TcpNewReno (one segment per ACK in slow start, MSS^2/cwnd"
        " per ACK in congestion avoidance)",
    )
    ap.add_argument("--ns3-inprocess", action="store_true", help="run ns-3 in this process")
    ap.add_argument("--goodput-tol", type=float, default=5.0, help="goal: |goodput diff| %%")
    ap.add_argument("--sojourn-tol", type=float, default=20.0, help="goal: |sojourn diff| %%")
    ap.add_argument("--no-check", action="store_true", help="exit 0 even if a case misses")
    args = ap.parse_args(argv)

    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    if args.seeds < 1 or args.jobs < 1:
        ap.error("--seeds and --jobs must be at least 1")
    if args.ns3_inprocess and args.jobs > 1:
        ap.error("--ns3-inprocess runs one case at a time (use --jobs 1)")

    l4sim = _import_l4sim()
    seeds = list(range(1, args.seeds + 1))
    rows: list[dict[str, Any]] = []
    jobs: list[tuple[dict[str, Any], int, dict[str, Any]]] = []
    for case in cases:
        row: dict[str, Any] = {"case": case, "l4sim_runs": [], "ns3_runs": [None] * len(seeds)}
        for k, seed in enumerate(seeds):
            sc = load_case(l4sim, case, args.duration, seed)
            spec = ns3_spec_from_scenario(sc)
            if spec["cca"] == "newreno" and args.ns3_reno == "linux":
                spec["cca"] = "linuxreno"
            row["ns3_spec"] = spec
            row["l4sim_runs"].append(run_l4sim(l4sim, sc))
            jobs.append((row, k, spec))
        rows.append(row)

    def work(job):
        row, k, spec = job
        try:
            row["ns3_runs"][k] = run_ns3_side(spec, args.ns3_inprocess)
        except Exception as e:  # report and go on
            row["ns3_runs"][k] = {"error": f"{type(e).__name__}: {e}"}
        print(f"  done {row['case']} seed {k + 1}", file=sys.stderr)

    print(f"running {len(jobs)} ns-3 simulations ...", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(work, jobs))

    all_ok = True
    for row in rows:
        row["l4sim"] = _avg(row.pop("l4sim_runs"))
        ns3_runs = row.pop("ns3_runs")
        errors = [r["error"] for r in ns3_runs if "error" in r]
        row["ns3"] = {"error": errors[0]} if errors else _avg(ns3_runs)
        if errors:
            print(f"  {row['case']}: ns-3 failed: {errors[0]}", file=sys.stderr)
        a, b = row["l4sim"], row["ns3"]
        row["goodput_diff_pct"] = _pct(a.get("goodput_bps"), b.get("goodput_bps"))
        row["sojourn_diff_pct"] = _pct(a.get("sojourn_mean_s"), b.get("sojourn_mean_s"))
        g, s = row["goodput_diff_pct"], row["sojourn_diff_pct"]
        row["ok"] = (
            g is not None
            and s is not None
            and abs(g) <= args.goodput_tol
            and abs(s) <= args.sojourn_tol
        )
        all_ok &= row["ok"]

    print()
    print(
        f"4 bulk flows, 10 Mbps / 20 ms, {rows[0]['ns3_spec']['duration_s']:g} s,"
        f" seeds {seeds[0]}..{seeds[-1]}; ns-3 NewReno = "
        f"{'TcpLinuxReno' if args.ns3_reno == 'linux' else 'TcpNewReno'},"
        f" CUBIC HyStart {'on' if rows[0]['ns3_spec']['cubic_hystart'] else 'off'} in both"
    )
    print_table(rows)
    n_miss = sum(not r["ok"] for r in rows)
    print(
        f"\ngoal: goodput within {args.goodput_tol:g} %, sojourn within {args.sojourn_tol:g} %"
        f" of ns-3: {len(rows) - n_miss}/{len(rows)} cases ok"
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"args": vars(args), "cases": rows}, indent=1, default=str))
        print(f"wrote {args.json}")
    return 0 if all_ok or args.no_check else 1


if __name__ == "__main__":
    raise SystemExit(main())
