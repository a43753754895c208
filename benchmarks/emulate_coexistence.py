"""The kernel's side of ``l4sim reproduce coexistence`` on a slice of its grid: the pairs
Linux can run (Reno, CUBIC, BBR v1, and DCTCP as ``l4sim emulate``'s BPF struct_ops
DCTCP) through ``l4sim emulate``, the same cases in l4sim, and the comparison.

    python benchmarks/emulate_coexistence.py            # as root: emulate what is missing
    python benchmarks/emulate_coexistence.py --compare  # no root: simulate and compare

The slice: 10 and 100 Mbit/s, 10 and 40 ms, every queue of the grid (all run in the
router, which uses l4sim's own qdiscs). The 240 cells this makes take more than three hours
of real time, so the slice is a balanced subset (:func:`slice_cases`): each of the six
mixed pairs in each queue once, at a rate and RTT that rotate so each pair meets every
rate and RTT; and each algorithm against itself in two queues (44 cases). Each case is the
experiment's own scenario (two 30 s flows, 250 us of host jitter), its goodput over the
same window (10-30 s); kernel run *k* uses seed *k* for the router's jitter, l4sim the
experiment's four seeds.

Each emulated run is its own process under ``flock LOCK`` so no two emulations on the
machine overlap. Each run's two flows are appended to ``--kernel`` (CSV) as soon as the
run ends, and a run already there is skipped, so a stopped run loses only the run it was
in. ``--compare`` simulates the cases the kernel CSV has (kept in ``--sim``, also
resumable) and writes the comparison as Markdown (``--table``).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from l4sim.experiments import coexistence as co  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
KERNEL_CSV = DATA / "emulate_coexistence_kernel.csv"
SIM_CSV = DATA / "emulate_coexistence_sim.csv"
TABLE_MD = DATA / "emulate_coexistence.md"
LOCK = "/work/emulate.lock"
RUNS = 2
#: Runs of a case whose first RUNS disagree with each other by more than TOLERANCE on a
#: flow (max / min - 1): the kernel's mean then rests on more than two noisy samples.
SETTLE_RUNS = 4
TOLERANCE = 0.20
#: The algorithms this kernel runs (``newreno`` is Linux ``reno``; ``dctcp`` the BPF one;
#: ``prague``, in :func:`prague_cases`, the BPF Prague).
KERNEL_CCAS = ("dctcp", "bbr", "cubic", "newreno")
RATES = (10, 100)
RTTS = (10, 40)
POINTS = tuple((r, t) for r in RATES for t in RTTS)
KERNEL_FIELDS = (
    "case",
    "run",
    "seed",
    "flow",
    "cca",
    "kernel_cca",
    "mbps",
    "retransmits",
    "delivered_ce",
    "queue_drops",
    "queue_marks",
    "lateness_p99_us",
    "lateness_max_us",
    "kernel",
    "date",
)
SIM_FIELDS = ("case", "seed", "flow", "cca", "mbps")
#: l4sim's Prague set as the BPF Prague ``l4sim emulate`` loads runs (its control law without
#: RTT independence or the classic-ECN fallback; see benchmarks/emulate_prague_s6.py).
PRAGUE = {"kind": "prague", "rtt_independence": False, "alpha_mode": 1, "ecn_fallback": 0}


def slice_cases() -> list[co.Case]:
    """The subset, interleaved so a partial run covers every queue and pair evenly."""
    mixed = [(a, b) for i, a in enumerate(KERNEL_CCAS) for b in KERNEL_CCAS[i + 1 :]]
    out: list[co.Case] = []
    # In rounds: each round one pair in each queue, a different pair in each, so the
    # first rounds already cover every queue and every pair.
    for r in range(len(mixed)):
        for qi, queue in enumerate(co.QUEUES):
            pi = (qi + r) % len(mixed)
            rate, rtt = POINTS[(pi + qi) % len(POINTS)]
            out.append(co.Case(*mixed[pi], queue, rate, rtt))
    # Each algorithm against itself in two queues, one rate and RTT each.
    for ci, cca in enumerate(KERNEL_CCAS):
        for k in range(2):
            queue = co.QUEUES[(ci + 3 * k) % len(co.QUEUES)]
            rate, rtt = POINTS[(ci + k) % len(POINTS)]
            out.append(co.Case(cca, cca, queue, rate, rtt))
    order = {c.name: i for i, c in enumerate(co.cases())}
    mixed_n = len(co.QUEUES) * len(mixed)
    same = out[mixed_n:]
    # Interleave: one same-algorithm case after every few mixed ones.
    step = max(1, mixed_n // len(same))
    merged: list[co.Case] = []
    for i, c in enumerate(out[:mixed_n]):
        merged.append(c)
        if i % step == step - 1 and same:
            merged.append(same.pop(0))
    merged.extend(same)
    assert all(c.name in order for c in merged)
    return merged + prague_cases()


def prague_cases() -> list[co.Case]:
    """Prague (``l4sim emulate``'s BPF Prague) against each algorithm above in every queue,
    rate and RTT rotating as above, and against itself in two queues: run after the first
    slice, so its cases and data stay as they were."""
    out = [
        co.Case("prague", b, queue, *POINTS[(qi + bi) % len(POINTS)])
        for bi, b in enumerate(KERNEL_CCAS)
        for qi, queue in enumerate(co.QUEUES)
    ]
    for k in range(2):
        queue = co.QUEUES[(1 + 3 * k) % len(co.QUEUES)]
        out.append(co.Case("prague", "prague", queue, *POINTS[(2 + k) % len(POINTS)]))
    order = {c.name for c in co.cases()}
    assert all(c.name in order for c in out)
    return out


def _read(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open() as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def _append(path: Path, fields: tuple[str, ...], rows: list[dict[str, Any]], head: str) -> None:
    new = not path.exists()
    with path.open("a", newline="") as fh:
        if new:
            fh.write(head)
        w = csv.DictWriter(fh, fieldnames=fields)
        if new:
            w.writeheader()
        w.writerows(rows)


KERNEL_HEAD = (
    "# The kernel's TCP (Linux Reno, CUBIC, BBR v1; DCTCP as l4sim emulate's BPF\n"
    "# struct_ops DCTCP) through l4sim's router (l4sim emulate), the scenarios of\n"
    "# `l4sim reproduce coexistence`; command: python benchmarks/emulate_coexistence.py\n"
    "# mbps: each flow's goodput at the receiver over 10-30 s; retransmits, delivered_ce:\n"
    "# TCP_INFO, whole run; queue_drops, queue_marks: the bottleneck, whole run, both flows;\n"
    "# lateness: the router's (us after the link model's departure time).\n"
)


def emulate_one(case: co.Case, run: int, path: Path) -> None:
    from l4sim.emulate import emulate
    from l4sim.experiments.classic_queue import window_rates

    t = time.time()
    res = emulate(co.scenario(case, seed=run))
    mbps = [r / 1e6 for r in window_rates(res.flows, 2, *co.WINDOW)]
    emu = res.summary["emulation"]
    q = next(x for x in res.summary["queues"] if x["link"] == "r0->r1")
    rows = [
        {
            "case": case.name,
            "run": run,
            "seed": run,
            "flow": i,
            "cca": cca,
            "kernel_cca": f.get("kernel_cca"),
            "mbps": f"{mbps[i]:.4f}",
            "retransmits": f.get("retransmits") or 0,
            "delivered_ce": f.get("delivered_ce") or 0,
            "queue_drops": q["drops"],
            "queue_marks": q["ecn_marks"],
            "lateness_p99_us": f"{emu['router_lateness_us']['p99']:.1f}",
            "lateness_max_us": f"{emu['router_lateness_us']['max']:.0f}",
            "kernel": emu["kernel"],
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        }
        for i, (cca, f) in enumerate(zip((case.a, case.b), res.summary["flows"], strict=True))
    ]
    _append(path, KERNEL_FIELDS, rows, KERNEL_HEAD)
    print(
        f"{case.name} run {run}: {[round(m, 2) for m in mbps]} Mbit/s ({time.time() - t:.0f} s)",
        flush=True,
    )


def _sim_task(task: tuple[co.Case, int]) -> tuple[str, int, float, float]:
    run = co._run(task, {"prague": PRAGUE})
    return task[0].name, task[1], run.a_mbps, run.b_mbps


def simulate(todo: list[co.Case], path: Path, jobs: int) -> None:
    """l4sim's runs of ``todo`` with the experiment's seeds, those not yet in ``path``."""
    from concurrent.futures import ProcessPoolExecutor

    done = {(r["case"], int(r["seed"])) for r in _read(path)}
    tasks = [(c, s) for c in todo for s in co.DEFAULT_SEEDS if (c.name, s) not in done]
    by = {c.name: c for c in todo}
    head = "# l4sim, the same cases: each flow's goodput over 10-30 s (Mbit/s), per seed.\n"
    with ProcessPoolExecutor(jobs) as pool:
        for name, seed, a, b in pool.map(_sim_task, tasks):
            case = by[name]
            rows = [
                {"case": name, "seed": seed, "flow": i, "cca": cca, "mbps": f"{m:.4f}"}
                for i, (cca, m) in enumerate(((case.a, a), (case.b, b)))
            ]
            _append(path, SIM_FIELDS, rows, head)


def _by_flow(rows: list[dict[str, str]], run_key: str) -> dict[tuple[str, int], list[float]]:
    """Each flow's goodput over the runs (or seeds), by (case, flow). The two flows of one
    algorithm against itself are interchangeable: each run's are sorted, faster first."""
    runs: dict[tuple[str, str], dict[int, float]] = {}
    for r in rows:
        runs.setdefault((r["case"], r[run_key]), {})[int(r["flow"])] = float(r["mbps"])
    same = {c.name for c in slice_cases() if c.a == c.b}
    out: dict[tuple[str, int], list[float]] = {}
    for (case, _), flows in runs.items():
        mbps = [flows[i] for i in sorted(flows)]
        if case in same:
            mbps.sort(reverse=True)
        for i, m in enumerate(mbps):
            out.setdefault((case, i), []).append(m)
    return out


def _count(flows: list[tuple[str, bool]]) -> str:
    """ "key ok of n" for each key, in first-seen order."""
    keys = dict.fromkeys(k for k, _ in flows)
    return "; ".join(
        f"{k} {sum(w for x, w in flows if x == k)} of {sum(x == k for x, _ in flows)}" for k in keys
    )


def comparison(kernel_csv: Path, sim_csv: Path, min_runs: int = RUNS) -> str:
    """The Markdown table: per flow the kernel's mean and spread, l4sim's, the error (the
    cases the kernel has run at least ``min_runs`` times)."""
    krows = _read(kernel_csv)
    kern = _by_flow(krows, "run")
    sim = _by_flow(_read(sim_csv), "seed")
    cases = [
        c
        for c in slice_cases()
        if len(kern.get((c.name, 0), [])) >= min_runs and (c.name, 0) in sim
    ]
    lines = [
        "| a | b | queue | Mbit/s | RTT ms | flow | kernel Mbit/s (runs) | kernel spread "
        "| l4sim Mbit/s | l4sim / kernel - 1 | within 20 % |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    misses: list[tuple[float, str]] = []
    spreads: list[float] = []
    by_queue: list[tuple[str, bool]] = []
    by_cca: list[tuple[str, bool]] = []
    self_ok = 0
    for c in sorted(cases, key=lambda c: (co.QUEUES.index(c.queue), c.rate_mbps, c.rtt_ms)):
        for i, cca in enumerate((c.a, c.b) if c.a != c.b else (f"{c.a} (faster)", "(slower)")):
            k, s = kern[(c.name, i)], statistics.fmean(sim[(c.name, i)])
            km = statistics.fmean(k)
            spread = (max(k) - min(k)) / km if km > 0 else 0.0
            spreads.append(spread)
            self_ok += min(k) > 0 and max(k) / min(k) - 1 <= TOLERANCE
            err = s / km - 1 if km > 0 else float("inf")
            within = abs(err) <= TOLERANCE
            by_queue.append((c.queue, within))
            by_cca.append(((c.a, c.b)[i], within))
            if not within:
                misses.append(
                    (abs(err), f"{cca} in {c.name}: {km:.2f} -> {s:.2f} Mbit/s ({err:+.0%})")
                )
            lines.append(
                f"| {c.a} | {c.b} | {c.queue} | {c.rate_mbps} | {c.rtt_ms} | {cca} "
                f"| {km:.2f} ({len(k)}) | {spread:.0%} | {s:.2f} | {err:+.0%} "
                f"| {'yes' if within else '**no**'} |"
            )
    n, ok = len(by_queue), sum(w for _, w in by_queue)
    late = [float(r["lateness_p99_us"]) for r in krows]
    worst = [float(r["lateness_max_us"]) for r in krows]
    kernels = sorted({r["kernel"] for r in krows})
    dates = sorted({r["date"] for r in krows})
    misses.sort(reverse=True)
    summary = [
        f"**{ok} of {n} flows ({100 * ok / max(n, 1):.1f} %) within 20 %** of the kernel's "
        f"mean goodput over 10-30 s ({len(cases)} cases; the kernel: the mean of each case's "
        f"runs, {min_runs}, or {SETTLE_RUNS} where its first {min_runs} disagreed by more "
        f"than 20 %; l4sim: the mean of {len(co.DEFAULT_SEEDS)} seeds).",
        "",
        f"- Per queue: {_count(by_queue)}.",
        f"- Per algorithm: {_count(by_cca)}.",
        f"- The kernel's own spread (max - min over its runs, over their mean): median "
        f"{statistics.median(spreads):.0%}, largest {max(spreads):.0%}; the kernel against "
        f"itself (max / min - 1 <= 20 %): {self_ok} of {n} flows.",
        f"- The router's lateness p99 per run: median {statistics.median(late):.0f} us, "
        f"largest {max(late):.0f} us (largest single delay {max(worst) / 1e3:.1f} ms).",
        f"- Measured {' to '.join(dict.fromkeys([dates[0], dates[-1]]))} on {', '.join(kernels)}.",
    ]
    if misses:
        summary += ["- Misses, worst first: " + "; ".join(m for _, m in misses) + "."]
    return "\n".join([*summary, "", *lines]) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", type=Path, default=KERNEL_CSV)
    ap.add_argument("--sim", type=Path, default=SIM_CSV)
    ap.add_argument("--table", type=Path, default=TABLE_MD)
    ap.add_argument("--lock", default=LOCK)
    ap.add_argument("--runs", type=int, default=RUNS, help="kernel runs of each case")
    ap.add_argument(
        "--settle-runs",
        type=int,
        default=SETTLE_RUNS,
        help="kernel runs of a case whose first --runs disagree by more than 20 %%",
    )
    ap.add_argument("--limit", type=int, help="emulate only the first N cases of the slice")
    ap.add_argument("--compare", action="store_true", help="simulate and write the table")
    ap.add_argument("--jobs", type=int, default=2, help="--compare: processes")
    ap.add_argument("--case", help="emulate this one case (what each locked process runs)")
    ap.add_argument("--run", type=int, default=1)
    args = ap.parse_args()
    todo = slice_cases()[: args.limit]
    if args.case:
        emulate_one(next(c for c in todo if c.name == args.case), args.run, args.kernel)
        return 0
    if args.compare:
        have = {r["case"] for r in _read(args.kernel)}
        simulate([c for c in todo if c.name in have], args.sim, args.jobs)
        args.table.write_text(comparison(args.kernel, args.sim))
        print(args.table.read_text().split("\n\n")[0])
        return 0
    if os.geteuid() != 0:
        print("emulation needs root (network namespaces, TUN devices)", file=sys.stderr)
        return 2
    for case in todo:
        for run in range(1, args.runs + 1):
            _emulate_missing(case, run, args)
    # The kernel against itself: where its first runs disagree, more runs settle its mean.
    for case in todo:
        if _self_disagrees(case, args.kernel, args.runs):
            for run in range(args.runs + 1, args.settle_runs + 1):
                _emulate_missing(case, run, args)
    return 0


def _emulate_missing(case: Any, run: int, args: argparse.Namespace) -> None:
    if (case.name, str(run)) in {(r["case"], r["run"]) for r in _read(args.kernel)}:
        return
    cmd = ["flock", args.lock, sys.executable, __file__, "--case", case.name]
    rc = subprocess.call([*cmd, "--run", str(run), "--kernel", str(args.kernel)])
    if rc != 0:
        print(f"{case.name} run {run} failed (exit {rc})", file=sys.stderr, flush=True)


def _self_disagrees(case: Any, kernel_csv: Path, runs: int) -> bool:
    """Whether the kernel's first ``runs`` runs of ``case`` give some flow rates more than
    TOLERANCE apart (max / min - 1)."""
    rates: dict[str, list[float]] = {}
    for r in _read(kernel_csv):
        if r["case"] == case.name and int(r["run"]) <= runs:
            rates.setdefault(r["flow"], []).append(float(r["mbps"]))
    return any(len(v) >= 2 and max(v) > (1 + TOLERANCE) * min(v) for v in rates.values())


if __name__ == "__main__":
    sys.exit(main())
