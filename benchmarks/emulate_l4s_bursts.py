"""Scenario 2 of ``l4sim reproduce l4s-bursts`` on the kernel's TCP: l4sim's BPF Prague
(``python/l4sim/data/bpf/l4sim_prague.bpf.c``) through DualPI2 and the kernel's CUBIC (ECN)
through fq_codel behind l4s-tests' netem slotting, through ``l4sim emulate`` (l4sim's own
slot gate and queues in the router), and the same cases in l4sim.

    python benchmarks/emulate_l4s_bursts.py [--only cubic,...] [--runs 2]  # root: the kernel
        [--lock /work/emulate.lock]
    python benchmarks/emulate_l4s_bursts.py --sim [--seeds 1-10]         # l4sim's side
    python benchmarks/emulate_l4s_bursts.py --csv-only                   # rewrite CSV and table
    python benchmarks/emulate_l4s_bursts.py --bursts       # root: captured bursts and marks

The cases are the experiment's own (``l4s_bursts.runs``): 50 Mbit/s cut to 25 at 30 s of
60, 20 ms, ``slot 800us 5ms packets 16`` both ways; Prague through DualPI2 (step 1 ms, and
2 ms), CUBIC through fq_codel, and the two main pairs without the slotting; the Prague
cases again with the kernel pacing single segments (``+tso1``, :data:`TSO1`). Each emulated
run is its own process under ``flock LOCK``; a run whose router fell behind is kept, marked
``noisy`` and run again once (``emulate_prague_s6.emulate_locked``). Kernel runs go to
``--raw`` (JSON lines, resumable), l4sim's to ``--sim-raw``: l4sim's Prague set as the BPF
one (``emulate_prague_s6.PRAGUE``: RTT independence off, alpha from 1, no classic-ECN
fallback) and as the experiment runs it.

Per run, over the experiment's windows ([10, 30] and [40, 60] s): the bottleneck's busy
fraction from the 100 ms samples (what the experiment reads from the cumulative busy time;
each l4sim run also keeps the experiment's own figure, ``util_experiment``), the goodput,
the bottleneck's sojourn (mean in the windows as the experiment weighs it, p99 over the
run), the smoothed RTT, the mean cwnd, and CE marks per round trip. ``--bursts``: one 20 s
Prague / DualPI2 run on each side with pcap captures, the bursts the sender emits and those
DualPI2 serves, and which of their packets it marks (``emulate_l4s_bursts_shape.md``).
"""

from __future__ import annotations

import csv as csvlib
import fcntl
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from emulate_prague_s6 import (  # noqa: E402
    PRAGUE,
    _read,
    emulate_locked,
    parser,
    router_timing,
    write_rows,
)
from l4sim.emulate.netns import PREFIX  # noqa: E402
from l4sim.experiments.classic_queue import window_rates  # noqa: E402
from l4sim.experiments.l4s_bursts import runs  # noqa: E402
from l4sim.scenario import Scenario  # noqa: E402

RAW = ROOT / "benchmarks" / "data" / "emulate_l4s_bursts.jsonl"
SIM_RAW = ROOT / "benchmarks" / "data" / "emulate_l4s_bursts_sim.jsonl"
CSV = ROOT / "benchmarks" / "data" / "emulate_l4s_bursts.csv"
#: The published lab case's two pairs first, then DualPI2's 2 ms step, the unslotted runs, and
#: the Prague cases with single segments.
CASES = (
    "s2-prague-dualpi2-50M-20ms-netem16",
    "s2-cubic-fq_codel-50M-20ms-netem16",
    "step-prague-dualpi2_step2ms-50M-20ms-netem16",
    "s2-prague-dualpi2-50M-20ms-none",
    "s2-cubic-fq_codel-50M-20ms-none",
    "s2-prague-dualpi2-50M-20ms-netem16+tso1",
    "step-prague-dualpi2_step2ms-50M-20ms-netem16+tso1",
    "s2-prague-dualpi2-50M-20ms-none+tso1",
)
#: Each Prague case is compared with CUBIC / fq_codel behind the same bursts.
CUBIC = {"netem16": CASES[1], "none": CASES[4]}
#: A case name's suffix: the kernel's sender with ``net.ipv4.tcp_min_tso_segs = 1`` (Linux's
#: default 2 makes ``tcp_tso_autosize`` put two segments in each skb however slow the pacing;
#: the BPF Prague has no ``min_tso_segs`` of its own), so it paces single segments as
#: l4sim's does. l4sim's side of such a case is its base case's.
TSO1 = "+tso1"
#: l4sim's sides: Prague set as the BPF one, and as the experiment runs it.
BPF, EXPERIMENT = "l4sim_bpf", "l4sim_experiment"


def case_of(name: str) -> runs.Case:
    return next(c for c in runs.all_cases() if c.name == name.removesuffix(TSO1))


def min_tso_segs(segs: int) -> Callable[[Any], None]:
    """An ``emulate`` ``on_ready`` hook: ``net.ipv4.tcp_min_tso_segs`` = ``segs`` in the
    run's namespaces (read by ``tcp_tso_autosize`` at each send, so set before the flows)."""

    def hook(_router: Any) -> None:
        for ns in sorted(Path("/run/netns").glob(f"{PREFIX}{os.getpid()}-*")):
            cmd = ["ip", "netns", "exec", ns.name, "sysctl", "-qw"]
            subprocess.run([*cmd, f"net.ipv4.tcp_min_tso_segs={segs}"], check=True)

    return hook


def scenario(name: str, seed: int = 1, prague: dict[str, Any] | None = PRAGUE) -> Scenario:
    """The experiment's scenario of case ``name``; a Prague flow set as ``prague`` (None:
    the experiment's own Prague)."""
    case = case_of(name)
    sc = runs.scenario(case, seed)  # the experiment's scenario, also for a TSO1 case
    if case.cca != "prague" or prague is None:
        return sc
    d = sc.model_dump(mode="json", exclude_none=True)
    d["flows"][0]["cca"] = dict(prague)
    return Scenario.parse(d)


def figures(
    case: runs.Case, summary: dict[str, Any], flows: pl.DataFrame, queues: pl.DataFrame
) -> dict[str, Any]:
    """One run's figures over the case's windows, from its summary and 100 ms samples (the
    same for a simulated and an emulated run)."""
    link = runs.bottleneck_of(case)
    windows = case.setting.windows
    q = queues.filter((pl.col("link") == link) & (pl.col("class") == "")).sort("time_s")
    t = q["time_s"].to_list()
    half = (t[1] - t[0]) / 2  # a sample covers the interval that ends at its time

    def busy(a: float, b: float) -> float:
        us = [u for x, u in zip(t, q["utilization"], strict=True) if a + half < x <= b + half]
        return statistics.fmean(us) if us else 0.0

    def grew(col: str, a: float, b: float) -> int:  # a cumulative counter's growth
        at = q[col].to_list()
        return int(at[nearest(b)] - at[nearest(a)])

    def nearest(x: float) -> int:
        return min(range(len(t)), key=lambda j: abs(t[j] - x))

    spans = [b - a for a, b in windows]
    utils = [busy(a, b) for a, b in windows]
    rates = [window_rates(flows, 1, a, b)[0] for a, b in windows]
    srtt, sojourn_mean = runs.window_series(case, flows, queues)
    cwnd = [
        c
        for x, c in zip(flows["time_s"], flows["cwnd_pkts"], strict=True)
        if c is not None and runs.in_windows(case, x)
    ]
    marks = sum(grew("ecn_marks", a, b) for a, b in windows)
    bq = next(x for x in summary["queues"] if x["link"] == link)
    srtt_mean = statistics.fmean(srtt) if srtt else float("nan")
    return {
        "util": sum(u * s for u, s in zip(utils, spans, strict=True)) / sum(spans),
        "util_first": utils[0],
        "util_last": utils[-1],
        "goodput_mbps": sum(r * s for r, s in zip(rates, spans, strict=True)) / sum(spans) / 1e6,
        "sojourn_mean_ms": sojourn_mean,
        "sojourn_p50_ms": 1e3 * (bq["sojourn_p50_s"] or 0.0),
        "sojourn_p99_ms": 1e3 * (bq["sojourn_p99_s"] or 0.0),
        "srtt_mean_ms": srtt_mean,
        "cwnd_mean_pkts": statistics.fmean(cwnd) if cwnd else None,
        "marks": marks,
        "drops": sum(grew("drops", a, b) for a, b in windows),
        # CE marks per round trip of the flow's mean smoothed RTT, in the windows.
        "marks_per_rtt": marks * srtt_mean / 1e3 / sum(spans),
    }


def commit() -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return out.stdout.strip() or "unknown"


def emulate_one(name: str, run: int) -> dict[str, Any]:
    from l4sim.emulate import emulate

    case = case_of(name)
    load = os.getloadavg()[0]
    t = time.time()
    res = emulate(scenario(name), on_ready=min_tso_segs(1) if name.endswith(TSO1) else None)
    wall = time.time() - t
    return {
        "case": name,
        "run": run,
        **figures(case, res.summary, res.flows, res.queues),
        **router_timing(res.summary, case.setting.duration_s),
        "load1_start": round(load, 2),
        "load1_end": round(os.getloadavg()[0], 2),
        "commit": commit(),
        "wall_s": round(wall, 1),
    }


def simulate(names: list[str], seeds: list[int], raw: Path) -> None:
    from l4sim.engine.simulation import Simulation

    done = {(r["case"], r["side"], r["seed"]) for r in _read(raw)}
    for name in (n for n in names if not n.endswith(TSO1)):
        case = case_of(name)
        sides = {BPF: PRAGUE, EXPERIMENT: None} if case.cca == "prague" else {EXPERIMENT: None}
        for side, prague in sides.items():
            for seed in seeds:
                if (name, side, seed) in done:
                    continue
                sc = scenario(name, seed, prague)
                sim = Simulation(sc)
                sim.run_until(case.setting.duration_s)
                rec = {
                    "case": name,
                    "side": side,
                    "seed": seed,
                    **figures(case, sim.summary(), sim.flows(), sim.queues()),
                    "util_experiment": runs.measure(case, seed, sc).utilisation,
                    "commit": commit(),
                }
                with open(raw, "a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                print(f"l4sim {name} {side} seed {seed}: {rec['util']:.3f}", flush=True)


#: The burst comparison (``--bursts``): one Prague / DualPI2 run of BURST_S with two link
#: directions captured: what the sender emits (its access link, ahead of the slot gate) and
#: what DualPI2 sends (the bottleneck, CE marks included); measured over [10, BURST_S] s.
BURST_CASE = CASES[0]
BURST_S = 20.0
CAPTURES = {"sent": "s0->r0", "bottleneck": "r0->r1"}
#: A gap that ends a burst: at the sender, 8 packets' time at 1 Gbit/s; at the bottleneck,
#: more than a 1514-byte packet's serialisation at 50 Mbit/s (0.24 ms): a busy period ends.
GAPS_S = {"sent": 100e-6, "bottleneck": 300e-6}
SHAPE = ROOT / "benchmarks" / "data" / "emulate_l4s_bursts_shape.md"
#: Bottleneck packets at this position of a busy period or later have waited over 1 ms (4
#: full-sized packets at 50 Mbit/s ahead of them): DualPI2's step marks them.
STEP_POS = 5


def burst_stats(pcap: Path, which: str, t0: float = 10.0, t1: float = BURST_S) -> dict[str, Any]:
    """The data packets' bursts in ``pcap`` between ``t0`` and ``t1`` s after its first
    packet (packets closer than GAPS_S[which]): mean and p90 packets per burst, the share of
    packets at position STEP_POS or later, and the CE share there and before."""
    import dpkt

    pkts = []
    with open(pcap, "rb") as fh:
        for ts, buf in dpkt.pcap.Reader(fh):
            ip = dpkt.ip.IP(buf)
            pkts.append((float(ts), ip.len, ip.tos & 3 == 3))
    start = pkts[0][0]
    sizes: list[int] = []
    late = [0, 0]  # packets, CE, at position >= STEP_POS
    early = [0, 0]
    last = -1.0
    for t, n, ce in pkts:
        t -= start
        if n < 500 or not t0 <= t <= t1:
            continue
        if sizes and t - last <= GAPS_S[which]:
            sizes[-1] += 1
        else:
            sizes.append(1)
        last = t
        into = late if sizes[-1] >= STEP_POS else early
        into[0] += 1
        into[1] += ce
    total = early[0] + late[0]
    return {
        "bursts": len(sizes),
        "burst_mean": statistics.fmean(sizes),
        "burst_p90": sorted(sizes)[int(0.9 * (len(sizes) - 1))],
        "late_share": late[0] / total,
        "ce_early": early[1] / early[0] if early[0] else 0.0,
        "ce_late": late[1] / late[0] if late[0] else 0.0,
        "ce_share": (early[1] + late[1]) / total,
    }


#: The sides of the burst comparison: the kernel as emulated, the kernel pacing single
#: segments (TSO1), l4sim.
SHAPE_SIDES = {"kernel": "kernel", "kernel" + TSO1: "kernel, tcp_min_tso_segs 1", "l4sim": "l4sim"}


def shape(out: Path) -> dict[str, dict[str, Any]]:
    """BURST_CASE for BURST_S, emulated (as is and TSO1) and in l4sim (seed 1), CAPTURES
    written under ``out``: per side, each capture's :func:`burst_stats` (and the router's
    timing of an emulated one)."""
    from l4sim.emulate import emulate
    from l4sim.engine.simulation import Simulation

    d = scenario(BURST_CASE).model_dump(mode="json", exclude_none=True)
    d["duration"] = f"{BURST_S:g}s"
    d["captures"] = [{"link": v, "file": f"{k}.pcap", "snaplen": 64} for k, v in CAPTURES.items()]
    stats: dict[str, dict[str, Any]] = {}
    for side in ("kernel", "kernel" + TSO1):
        hook = min_tso_segs(1) if side.endswith(TSO1) else None
        res = emulate(Scenario.parse(d), out_dir=out / side, on_ready=hook)
        stats[side] = {"timing": router_timing(res.summary, BURST_S)}
    sim = Simulation(scenario(BURST_CASE))
    (out / "l4sim").mkdir(parents=True, exist_ok=True)
    for k, link in CAPTURES.items():
        sim.capture(link, out / "l4sim" / f"{k}.pcap", snaplen=64)
    sim.run_until(BURST_S)
    sim.close_captures()
    stats["l4sim"] = {}
    for side in SHAPE_SIDES:
        for k in CAPTURES:
            stats[side][k] = burst_stats(out / side / f"{k}.pcap", k)
    return stats


def write_shape(stats: dict[str, dict[str, Any]], md: Path) -> None:
    head = (
        "| where | side | bursts | packets per burst, mean | p90 "
        f"| packets at position {STEP_POS}+ | CE share | CE share, positions 1-{STEP_POS - 1} "
        f"| CE share, position {STEP_POS}+ |\n|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for k in CAPTURES:
        for side, label in SHAPE_SIDES.items():
            b = stats[side][k]
            ce = k == "bottleneck"
            lines.append(
                f"| {k} | {label} | {b['bursts']} | {b['burst_mean']:.2f} | {b['burst_p90']} "
                f"| {100 * b['late_share']:.0f} % "
                + (
                    f"| {100 * b['ce_share']:.1f} % | {100 * b['ce_early']:.1f} % "
                    f"| {100 * b['ce_late']:.1f} % |"
                    if ce
                    else "| - | - | - |"
                )
            )
    t = [stats[s]["timing"] for s in SHAPE_SIDES if "timing" in stats[s]]
    notes = (
        f"{BURST_CASE}, seed 1, {BURST_S:g} s, measured over [10, {BURST_S:g}] s; kernel runs "
        f"{t[0]['date']} on {t[0]['kernel']}, commit {commit()}, router added delay p99 "
        f"{max(x['lateness_p99_us'] for x in t):.0f} µs at most, "
        f"{sum(x['noisy'] for x in t)} noisy. sent: the data packets on the sender's access "
        "link (ahead of the slot gate), a burst ends at a gap over "
        f"{GAPS_S['sent'] * 1e6:.0f} µs; bottleneck: DualPI2's departures, a burst is a busy "
        f"period (gap over {GAPS_S['bottleneck'] * 1e6:.0f} µs). "
        "benchmarks/emulate_l4s_bursts.py --bursts."
    )
    md.write_text(head + "\n".join(lines) + "\n\n" + notes + "\n")


FIELDS = (
    "case",
    "side",
    "n",
    "util_runs",
    "util_mean",
    "util_min",
    "util_max",
    "util_first",
    "util_last",
    "goodput_mbps",
    "sojourn_mean_ms",
    "sojourn_p99_ms",
    "srtt_mean_ms",
    "cwnd_mean_pkts",
    "marks_per_rtt",
    "drops",
    "util_experiment",
    "router_p99_us",
    "router_drift_s",
    "noisy_runs",
    "load1_max",
)
MEANS = FIELDS[FIELDS.index("util_first") : FIELDS.index("drops") + 1]


def _mean(recs: list[dict[str, Any]], key: str) -> float | None:
    xs = [r[key] for r in recs if r.get(key) is not None]
    return statistics.fmean(xs) if xs else None


def rows(raw: Path, sim_raw: Path) -> list[dict[str, Any]]:
    """Per case and side: the kernel's clean runs (its noisy ones only when a case has no
    other) or l4sim's seeds; their utilisations, mean and range, and the other figures'
    means."""
    kern, sims = _read(raw), _read(sim_raw)
    out = []
    for name in CASES:
        allk = [r for r in kern if r["case"] == name]
        sides = {"kernel": [r for r in allk if not r.get("noisy")] or allk}
        for side in (BPF, EXPERIMENT):
            base = name.removesuffix(TSO1)
            sides[side] = [r for r in sims if r["case"] == base and r["side"] == side]
        if case_of(name).cca != "prague":  # one l4sim CUBIC, whichever Prague
            sides[BPF] = sides[EXPERIMENT]
        for side, recs in sides.items():
            if not recs:
                continue
            utils = [r["util"] for r in recs]
            out.append(
                {
                    "case": name,
                    "side": side,
                    "n": len(recs),
                    "util_runs": " ".join(f"{u:.3f}" for u in utils) if side == "kernel" else "",
                    "util_mean": statistics.fmean(utils),
                    "util_min": min(utils),
                    "util_max": max(utils),
                    **{k: _mean(recs, k) for k in MEANS},
                    "util_experiment": _mean(recs, "util_experiment"),
                    "router_p99_us": max((r["lateness_p99_us"] for r in recs), default=None)
                    if side == "kernel"
                    else None,
                    "router_drift_s": max((r["router_drift_s"] for r in recs), default=None)
                    if side == "kernel"
                    else None,
                    "noisy_runs": sum(bool(r.get("noisy")) for r in allk)
                    if side == "kernel"
                    else None,
                    "load1_max": max((r["load1_start"] for r in recs), default=None)
                    if side == "kernel"
                    else None,
                }
            )
    return out


def write_csv(raw: Path, sim_raw: Path, csv_path: Path) -> int:
    kern = _read(raw)
    dates = sorted({r["date"] for r in kern})
    stamp = (
        [
            f"{' to '.join(dict.fromkeys([dates[0], dates[-1]]))} on "
            f"{', '.join(sorted({r['kernel'] for r in kern}))}, commits "
            f"{', '.join(dict.fromkeys(r['commit'] for r in kern))} (the script's)"
        ]
        if kern
        else []
    )
    lines = [
        "# l4s-bursts' Scenario 2 (20 ms) on the kernel's TCP through l4sim emulate (l4sim's",
        "# BPF Prague, kernel CUBIC with ECN) and in l4sim; benchmarks/emulate_l4s_bursts.py.",
        f"# Kernel runs: {'; '.join(stamp) or '(none yet)'}.",
        "# util: the bottleneck's busy fraction over [10, 30] and [40, 60] s; load1_max: the",
        "# largest 1-minute load average at a kept run's start (2 cores).",
        ",".join(FIELDS),
    ]
    rs = rows(raw, sim_raw)
    write_rows(csv_path, lines, rs, FIELDS)
    write_markdown(csv_path, csv_path.with_suffix(".md"), stamp)
    return len(rs)


def _f(x: str | None, fmt: str = ".3f") -> str:
    return "-" if not x else format(float(x), fmt)


def write_markdown(csv_path: Path, md_path: Path, stamp: list[str]) -> None:
    """The docs' table from the CSV: per case, the kernel's runs, their mean and range,
    l4sim's two Pragues' means, kernel over l4sim, and how far each side's Prague falls
    below its CUBIC / fq_codel behind the same bursts; then sojourn, cwnd, marks per RTT."""
    text = [x for x in csv_path.read_text().splitlines() if not x.startswith("#")]
    recs = {(r["case"], r["side"]): r for r in csvlib.DictReader(text)}

    def get(name: str, side: str) -> dict[str, str] | None:
        return recs.get((name, side))

    def less(name: str, side: str) -> str:
        case = case_of(name)
        mine, cubic = get(name, side), get(CUBIC[case.burst], side)
        if case.cca != "prague" or not mine or not cubic:
            return "-"
        return f"{100 * (1 - float(mine['util_mean']) / float(cubic['util_mean'])):.0f} %"

    head = (
        "| case | kernel runs | kernel mean | kernel range | l4sim (Prague as BPF) "
        "| l4sim (experiment's Prague) | kernel ÷ l4sim | less than CUBIC, kernel "
        "| less than CUBIC, l4sim | sojourn mean / p99 ms, kernel | sojourn mean / p99 ms, l4sim "
        "| cwnd pkts, kernel / l4sim | marks per RTT, kernel / l4sim |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    lines = []
    for name in CASES:
        k, b, e = get(name, "kernel"), get(name, BPF), get(name, EXPERIMENT)
        if not k or int(k["n"]) < 2 or not b:
            continue  # a case is shown once the kernel has run it twice
        ratio = float(k["util_mean"]) / float(b["util_mean"])
        lines.append(
            f"| {name} | {k['util_runs'].replace(' ', ' / ')} | {_f(k['util_mean'])} "
            f"| {_f(k['util_min'])}-{_f(k['util_max'])} | {_f(b['util_mean'])} "
            f"| {_f(e and e['util_mean'])} | {ratio:.2f} | {less(name, 'kernel')} "
            f"| {less(name, BPF)} "
            f"| {_f(k['sojourn_mean_ms'], '.2f')} / {_f(k['sojourn_p99_ms'], '.2f')} "
            f"| {_f(b['sojourn_mean_ms'], '.2f')} / {_f(b['sojourn_p99_ms'], '.2f')} "
            f"| {_f(k['cwnd_mean_pkts'], '.1f')} / {_f(b['cwnd_mean_pkts'], '.1f')} "
            f"| {_f(k['marks_per_rtt'], '.2f')} / {_f(b['marks_per_rtt'], '.2f')} |"
        )
    kern = [r for (_, s), r in recs.items() if s == "kernel"]
    sims = [r for (_, s), r in recs.items() if s != "kernel"]
    gap = max(
        (abs(float(r["util_experiment"]) - float(r["util_mean"])) for r in sims if r["n"]),
        default=0.0,
    )
    notes = (
        f"Kernel runs: {'; '.join(stamp) or '(none yet)'}. The 1-minute load average at a "
        f"kept run's start was at most {max((float(r['load1_max']) for r in kern), default=0):.2f}"
        " (2 cores, shared with background jobs at lower priority); the router's added delay "
        "p99 at most "
        f"{max((float(r['router_p99_us']) for r in kern), default=0):.0f} µs, its drift at most "
        f"{1e3 * max((float(r['router_drift_s']) for r in kern), default=0):.0f} ms; "
        f"{sum(int(r['noisy_runs']) for r in kern)} noisy run(s) set aside and run again. "
        f"l4sim: the mean over {max((int(r['n']) for r in sims), default=0)} seeds; its "
        "utilisation from the 100 ms samples is within "
        f"{gap:.4f} of the experiment's own (l4s_bursts.runs.measure). Sojourn: the "
        "bottleneck's (all in DualPI2's L queue for Prague), mean over the windows, p99 over "
        "the run; cwnd and marks per RTT: over the windows."
    )
    md_path.write_text(head + "\n".join(lines) + "\n\n" + notes + "\n")


def main() -> int:
    ap = parser(__doc__, RAW, SIM_RAW, CSV, "1-10")
    ap.add_argument("--bursts", action="store_true", help="the burst comparison (captures)")
    args = ap.parse_args()
    names = list(CASES)
    if args.only:
        names = [n for n in names if any(p in n for p in args.only.split(","))]
    csv = functools.partial(write_csv, args.raw, args.sim_raw, args.csv)
    if args.case:
        rec = emulate_one(args.case, args.run)
        with open(args.raw, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
        print(f"{args.case} run {args.run}: util {rec['util']:.3f}, noisy={rec['noisy']}")
        return 0
    if args.bursts:
        with open(args.lock, "a") as lock, tempfile.TemporaryDirectory() as tmp:
            fcntl.flock(lock, fcntl.LOCK_EX)  # no other emulation at the same time
            write_shape(shape(Path(tmp)), SHAPE)
        print(SHAPE.read_text())
        return 0
    if args.sim:
        a, _, b = args.seeds.partition("-")
        seeds = list(range(int(a), int(b) + 1)) if b else [int(s) for s in a.split(",")]
        simulate(names, seeds, args.sim_raw)
    elif not args.csv_only:
        if os.geteuid() != 0:
            print("emulation needs root (network namespaces, TUN devices)", file=sys.stderr)
            return 2
        emulate_locked(__file__, names, args.runs, args.raw, args.lock, csv)
    print(f"{csv()} rows in {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
