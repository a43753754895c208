"""The cases of ``l4sim reproduce rfc3168-coexistence`` (and one DualPI2 case) on the kernel's
TCP: l4sim's BPF Prague (``python/l4sim/data/bpf/l4sim_prague.bpf.c``) beside kernel CUBIC or
Reno through ``l4sim emulate``, each run kept as data, and the same cases in l4sim.

    sudo python benchmarks/emulate_prague_s6.py [--only pie,cubic,...] [--runs 2]
        [--lock /work/emulate.lock]       # the kernel runs, appended to --raw
    python benchmarks/emulate_prague_s6.py --sim [--seeds 1,2]  # l4sim's side
    python benchmarks/emulate_prague_s6.py --csv-only          # rewrite the CSV

Each emulated run is its own process under ``flock LOCK``, so that no two emulations on the
machine overlap. A run whose router fell behind (added delay p99 over 1 ms, a full packet
pool, or a run that took 1 s longer than its duration) is kept but marked ``noisy`` and run
again (once). Every run's figures go to ``--raw`` (JSON lines; a re-run skips the runs
already there, so it resumes); l4sim's to ``--sim-raw``; the CSV
(``benchmarks/data/emulate_prague_s6.csv``) is rewritten from both: per case and flow, the
kernel's rate in each run, their mean and spread, l4sim's rate (mean over seeds) and the
error; and the docs' table (``emulate_prague_s6.md``) from the CSV.

The figures are each flow's goodput at the receiver over the testbed's window, [18 s, 58 s]
of 60 s (``rfc3168_coexistence.WINDOW_S``). l4sim's Prague runs as the BPF one does:
RTT independence off, alpha starting at 1, no classic-ECN fallback.
"""

from __future__ import annotations

import argparse
import csv as csvlib
import datetime as dt
import functools
import io
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from l4sim.experiments import rfc3168_coexistence as s6  # noqa: E402
from l4sim.experiments.classic_queue import window_rates  # noqa: E402
from l4sim.scenario import Scenario  # noqa: E402

RAW = ROOT / "benchmarks" / "data" / "emulate_prague_s6.jsonl"
SIM_RAW = ROOT / "benchmarks" / "data" / "emulate_prague_s6_sim.jsonl"
CSV = ROOT / "benchmarks" / "data" / "emulate_prague_s6.csv"
#: The docs' table (docs/fidelity.md and docs/reproductions/rfc3168.md include it).
MARKDOWN = ROOT / "benchmarks" / "data" / "emulate_prague_s6.md"
LOCK = "/work/emulate.lock"
DUALPI2 = "dualpi2-cubic-ecn"
#: l4sim's Prague set as the BPF Prague runs.
PRAGUE = {"kind": "prague", "rtt_independence": False, "alpha_mode": 1, "ecn_fallback": 0}
#: The three RFC 3168 AQMs as the testbed's default configurations first, then the rest.
FIRST = ("fq_codel1", "pie", "red-150k")
#: The three RFC 3168 AQMs in their default configurations, and DualPI2 (the must-show set).
MAIN_QDISCS = ("fq_codel(1q)", "pie", "red(150000b)", "dualpi2")
#: A run whose router fell behind: added delay p99 above this (us), ...
NOISY_P99_US = 1000.0
#: ... or a wall time this much (s) beyond the duration.
NOISY_DRIFT_S = 1.0


def case_names() -> list[str]:
    """Every case: the three default AQMs with CUBIC, DualPI2, with Reno, then the rest."""
    all_cases = s6.cases()
    first = [c for c in all_cases if s6.QDISCS[c.qdisc] in FIRST]
    cubic = [c.name for c in first if c.classic == "cubic"]
    reno = [c.name for c in first if c.classic != "cubic"]
    rest = [c.name for c in all_cases if s6.QDISCS[c.qdisc] not in FIRST]
    return [*cubic, DUALPI2, *reno, *rest]


def _case(name: str) -> s6.Case:
    base = "pie-cubic-ecn" if name == DUALPI2 else name
    return next(c for c in s6.cases() if base in (c.name, c.name[3:]))


def scenario(name: str, seed: int = 1) -> Scenario:
    """The experiment's scenario of case ``name`` (DualPI2: its PIE CUBIC-with-ECN case, the
    qdisc swapped for DualPI2 with its defaults), Prague set as the BPF one."""
    d = s6.scenario(_case(name), seed, PRAGUE).model_dump(mode="json", exclude_none=True)
    if name == DUALPI2:
        d["name"] = DUALPI2
        d["topology"]["bottleneck"]["qdisc"] = {"kind": "dualpi2"}
    return Scenario.parse(d)


def measure(summary: dict[str, Any], flows: Any) -> dict[str, Any]:
    q = next(x for x in summary["queues"] if x["link"] == "r0->r1")
    return {
        "mbps": [r / 1e6 for r in window_rates(flows, 2, *s6.WINDOW_S)],
        "retransmits": [f.get("retransmits") or 0 for f in summary["flows"]],
        "sojourn_ms": 1e3 * (q["sojourn_mean_s"] or 0.0),
        "drops": q["drops"],
        "marks": q["ecn_marks"],
    }


def emulate_one(name: str, run: int) -> dict[str, Any]:
    from l4sim.emulate import emulate

    t = time.time()
    res = emulate(scenario(name))
    wall = time.time() - t
    return {
        "case": name,
        "run": run,
        **measure(res.summary, res.flows),
        **router_timing(res.summary, s6.DURATION_S),
        "wall_s": round(wall, 1),
    }


def router_timing(summary: dict[str, Any], duration_s: float) -> dict[str, Any]:
    """The kernel and the router's timing of one emulated run, and whether the router fell
    behind (``noisy``: added delay p99 over NOISY_P99_US, a full packet pool, or a drift over
    NOISY_DRIFT_S)."""
    emu = summary["emulation"]
    late = emu["router_lateness_us"]
    drift = emu["router_elapsed_s"] - duration_s
    counters = emu["router"]
    noisy = (
        (late.get("p99") or 0.0) > NOISY_P99_US
        or counters.get("pool_full", 0) > 0
        or drift > NOISY_DRIFT_S
    )
    return {
        "kernel": emu["kernel"],
        "kernel_ccas": [f.get("kernel_cca") for f in summary["flows"]],
        "lateness_p99_us": late.get("p99"),
        "lateness_max_us": late.get("max"),
        "router_drift_s": round(drift, 3),
        "pool_full": counters.get("pool_full", 0),
        "noisy": noisy,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
    }


def simulate(names: list[str], seeds: list[int], raw: Path) -> None:
    from l4sim.engine.simulation import Simulation

    done = {(r["case"], r["seed"]) for r in _read(raw)}
    for name in names:
        for seed in seeds:
            if (name, seed) in done:
                continue
            sim = Simulation(scenario(name, seed))
            sim.run_until(s6.WINDOW_S[0])
            before = [f["bytes_acked"] for f in sim.summary()["flows"]]
            sim.run_until(s6.WINDOW_S[1])
            after = [f["bytes_acked"] for f in sim.summary()["flows"]]
            span = s6.WINDOW_S[1] - s6.WINDOW_S[0]
            mbps = [(b - a) * 8 / span / 1e6 for a, b in zip(before, after, strict=True)]
            with open(raw, "a") as fh:
                fh.write(json.dumps({"case": name, "seed": seed, "mbps": mbps}) + "\n")
            print(f"l4sim {name} seed {seed}: {mbps}", flush=True)


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


FIELDS = (
    "case",
    "qdisc",
    "flow",
    "cca",
    "ecn",
    "kernel_runs",
    "kernel_mbps_runs",
    "kernel_mbps",
    "kernel_spread",
    "sim_seeds",
    "sim_mbps",
    "testbed_mbps",
    "err",
    "kernel_ratio",
    "sim_ratio",
    "router_p99_us",
    "router_drift_s",
    "noisy_runs",
)


def rows(raw: Path, sim_raw: Path) -> list[dict[str, Any]]:
    """Per case and flow: the kernel's clean runs (noisy ones only when a case has no
    other), their mean and spread (max / min - 1), l4sim's mean over seeds, the error."""
    kern = _read(raw)
    sims = _read(sim_raw)
    out = []
    for name in case_names():
        runs = [r for r in kern if r["case"] == name]
        clean = [r for r in runs if not r.get("noisy")] or runs
        sim = [r for r in sims if r["case"] == name]
        if not clean and not sim:
            continue
        case = _case(name)
        qdisc = "dualpi2" if name == DUALPI2 else case.qdisc
        k_means, s_means = [], []
        for i in range(2):
            ks = [r["mbps"][i] for r in clean]
            ss = [r["mbps"][i] for r in sim]
            k_means.append(statistics.mean(ks) if ks else None)
            s_means.append(statistics.mean(ss) if ss else None)
        for i in range(2):
            ks = [r["mbps"][i] for r in clean]
            km, sm = k_means[i], s_means[i]
            out.append(
                {
                    "case": name,
                    "qdisc": qdisc,
                    "flow": i,
                    "cca": "prague" if i == 0 else case.classic,
                    "ecn": 1 if i == 0 else int(case.ecn),
                    "kernel_runs": len(ks),
                    "kernel_mbps_runs": " ".join(f"{x:.3f}" for x in ks),
                    "kernel_mbps": km,
                    "kernel_spread": max(ks) / min(ks) - 1 if len(ks) > 1 and min(ks) > 0 else None,
                    "sim_seeds": len(sim),
                    "sim_mbps": sm,
                    # The published testbed's figure (the 2020 L4STeam kernel), not DualPI2's.
                    "testbed_mbps": None
                    if name == DUALPI2
                    else (case.testbed_prague_mbps if i == 0 else case.testbed_classic_mbps),
                    "err": sm / km - 1 if km and sm is not None else None,
                    "kernel_ratio": k_means[0] / k_means[1] if k_means[1] else None,
                    "sim_ratio": s_means[0] / s_means[1] if s_means[1] else None,
                    # The router's timing over the runs kept: the largest added-delay p99
                    # and drift; and how many runs were set aside as noisy.
                    "router_p99_us": max((r["lateness_p99_us"] for r in clean), default=None),
                    "router_drift_s": max((r["router_drift_s"] for r in clean), default=None),
                    "noisy_runs": sum(bool(r.get("noisy")) for r in runs),
                }
            )
    return out


def write_csv(raw: Path, sim_raw: Path, csv_path: Path) -> int:
    kern = _read(raw)
    kernels = sorted({r["kernel"] for r in kern}) or ["(none yet)"]
    dates = sorted({r["date"] for r in kern}) or ["(none yet)"]
    lines = [
        "# l4sim's BPF Prague (l4sim_prague.bpf.c) beside the kernel's CUBIC / Reno through",
        "# l4sim emulate, and the same cases in l4sim (Prague: RTT independence off, no",
        "# classic-ECN fallback); benchmarks/emulate_prague_s6.py. Kernel runs "
        f"{' to '.join(dict.fromkeys([dates[0], dates[-1]]))} on {', '.join(kernels)}.",
        "# Rates: goodput (Mbit/s) over [18 s, 58 s] of 60 s; kernel_spread: max / min - 1",
        "# over the kernel's runs; err: l4sim / kernel mean - 1.",
        ",".join(FIELDS),
    ]
    rs = rows(raw, sim_raw)
    write_rows(csv_path, lines, rs, FIELDS)
    write_markdown(csv_path, csv_path.with_suffix(".md"))
    return len(rs)


def write_rows(
    csv_path: Path, head: list[str], rs: list[dict[str, Any]], fields: Sequence[str]
) -> None:
    """``csv_path``: the ``head`` lines, then each row's ``fields`` (floats to 4 places, None
    empty; the csv module quotes a value such as "fq_codel(1q,1ms/20ms)")."""
    buf = io.StringIO()
    out = csvlib.writer(buf, lineterminator="\n")
    for r in rs:
        out.writerow(
            "" if (v := r[k]) is None else f"{v:.4f}" if isinstance(v, float) else str(v)
            for k in fields
        )
    csv_path.write_text("\n".join([*head, buf.getvalue().rstrip("\n")]) + "\n")


def _num(x: str) -> float | None:
    return float(x) if x else None


def _mbps(x: str) -> str:
    return f"{float(x):.2f}" if x else "-"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:+.0f} %"


def write_markdown(csv_path: Path, md_path: Path) -> None:
    """The docs' table from the CSV: per case, each flow's kernel runs, spread, l4sim's rate
    and the error; the ratios; how many flows are within 20 % of the kernel's mean."""
    text = [x for x in csv_path.read_text().splitlines() if not x.startswith("#")]
    recs = list(csvlib.DictReader(text))
    head = (
        "| qdisc | classic flow | flow | kernel runs, Mbit/s | kernel spread | l4sim "
        "| l4sim vs kernel | ratio kernel / l4sim | testbed (2020 kernel) |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    lines, inside, spreads = [], [], []
    for r in recs:
        km, sm = _num(r["kernel_mbps"]), _num(r["sim_mbps"])
        err, spread = _num(r["err"]), _num(r["kernel_spread"])
        if km is None or sm is None or int(r["kernel_runs"]) < 2:
            continue  # a case is shown once the kernel has run it twice
        if r["flow"] == "0":
            classic = next(x for x in recs if x["case"] == r["case"] and x["flow"] == "1")
            what = f"{classic['cca']} {'ECN' if classic['ecn'] == '1' else 'Not-ECT'}"
        if err is not None:
            inside.append((r, abs(err) <= s6.TOLERANCE))
        if spread is not None:
            spreads.append(spread)
        kr, sr = _num(r["kernel_ratio"]), _num(r["sim_ratio"])
        ratio = f"{kr:.1f}:1 / {sr:.1f}:1" if r["flow"] == "0" and kr and sr else ""
        lines.append(
            f"| {r['qdisc'] if r['flow'] == '0' else ''} | {what if r['flow'] == '0' else ''} "
            f"| {'Prague (BPF)' if r['flow'] == '0' else r['cca']} "
            f"| {' / '.join(_mbps(x) for x in r['kernel_mbps_runs'].split())} | {_pct(spread)} "
            f"| {sm:.2f} | {_pct(err)} | {ratio} | {_mbps(r['testbed_mbps'])} |"
        )
    p99 = [v for r in recs if (v := _num(r["router_p99_us"])) is not None]
    drift = [v for r in recs if (v := _num(r["router_drift_s"])) is not None]
    noisy = sum(int(r["noisy_runs"] or 0) for r in recs if r["flow"] == "0")
    ok = sum(x for _, x in inside)
    main = [(r, x) for r, x in inside if r["qdisc"] in MAIN_QDISCS and "cubic" in r["case"]]
    spreads.sort()
    summary = (
        f"{ok} of {len(inside)} flows within 20 % of the kernel's mean (Prague "
        f"{sum(x for r, x in inside if r['flow'] == '0')} of "
        f"{sum(r['flow'] == '0' for r, _ in inside)}, classic "
        f"{sum(x for r, x in inside if r['flow'] == '1')} of "
        f"{sum(r['flow'] == '1' for r, _ in inside)}); beside CUBIC in fq_codel (1 queue), "
        f"PIE, RED (150 000 B) and DualPI2: {sum(x for _, x in main)} of {len(main)}. "
        "The kernel's own spread (max / min - 1 over its runs): median "
        f"{_pct(spreads[len(spreads) // 2]) if spreads else '-'}, largest "
        f"{_pct(spreads[-1]) if spreads else '-'}. The router's added delay p99 stayed at or "
        f"under {max(p99, default=0):.0f} µs in every run kept, its drift at or under "
        f"{max(drift, default=0) * 1e3:.0f} ms; {noisy} noisy run(s) were set aside and re-run."
    )
    md_path.write_text(head + "\n".join(lines) + "\n\n" + summary + "\n")


def parser(doc: str, raw: Path, sim_raw: Path, csv: Path, seeds: str) -> argparse.ArgumentParser:
    """The options of an emulate-against-l4sim benchmark (``doc``: its docstring)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--only", help="comma-separated case names or parts of them")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--raw", type=Path, default=raw)
    ap.add_argument("--sim-raw", type=Path, default=sim_raw)
    ap.add_argument("--csv", type=Path, default=csv)
    ap.add_argument("--lock", default=LOCK)
    ap.add_argument("--case", help="emulate this one case (what each locked process runs)")
    ap.add_argument("--run", type=int, default=1)
    ap.add_argument("--sim", action="store_true", help="run l4sim's side")
    ap.add_argument("--seeds", default=seeds)
    ap.add_argument("--csv-only", action="store_true")
    return ap


def main() -> int:
    args = parser(__doc__, RAW, SIM_RAW, CSV, "1,2").parse_args()
    names = case_names()
    if args.only:
        parts = args.only.split(",")
        names = [n for n in names if any(p in n for p in parts)]
    if args.case:
        rec = emulate_one(args.case, args.run)
        with open(args.raw, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(f"{args.case} run {args.run}: {rec['mbps']} Mbit/s, noisy={rec['noisy']}", flush=True)
        return 0
    if args.csv_only:
        print(f"{write_csv(args.raw, args.sim_raw, args.csv)} rows in {args.csv}")
        return 0
    if args.sim:
        simulate(names, [int(s) for s in args.seeds.split(",")], args.sim_raw)
        print(f"{write_csv(args.raw, args.sim_raw, args.csv)} rows in {args.csv}")
        return 0
    if os.geteuid() != 0:
        print("emulation needs root (network namespaces, TUN devices)", file=sys.stderr)
        return 2
    csv = functools.partial(write_csv, args.raw, args.sim_raw, args.csv)
    emulate_locked(__file__, names, args.runs, args.raw, args.lock, csv)
    print(f"{write_csv(args.raw, args.sim_raw, args.csv)} rows in {args.csv}")
    return 0


def emulate_locked(
    script: str,
    names: list[str],
    runs: int,
    raw: Path,
    lock: str,
    after: Callable[[], object] | None = None,
) -> None:
    """Each case's runs 1..``runs`` not yet in ``raw``, each ``script --case NAME --run N
    --raw RAW`` in its own process under ``flock LOCK``; a noisy run is run again, once;
    ``after`` is called after each case."""
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.touch()
    for name in names:
        for run in range(1, runs + 1):
            for _ in range(2):  # a noisy run is run again, once
                have = [r for r in _read(raw) if r["case"] == name and r["run"] == run]
                if any(not r.get("noisy") for r in have) or len(have) >= 2:
                    break
                cmd = ["flock", lock, sys.executable, script, "--case", name]
                cmd += ["--run", str(run), "--raw", str(raw)]
                rc = subprocess.call(cmd)
                if rc != 0:
                    print(f"{name} run {run} failed (exit {rc})", file=sys.stderr, flush=True)
                    break
        if after is not None:
            after()


if __name__ == "__main__":
    sys.exit(main())
