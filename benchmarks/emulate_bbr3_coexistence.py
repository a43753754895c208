"""The kernel's BBR v1 beside the kernel's CUBIC in the set-up of ``l4sim reproduce
bbr3-coexistence`` (100 Mbit/s, 40 ms, a FIFO of 0.5, 2 and 16 BDP, 250 us of host
jitter), through ``l4sim emulate``, and l4sim's BBR v1 in the same cases.

    python benchmarks/emulate_bbr3_coexistence.py            # as root: emulate what is missing
    python benchmarks/emulate_bbr3_coexistence.py --compare  # no root: simulate and compare
    python benchmarks/emulate_bbr3_coexistence.py --duration 300 --buffers 16 \
        --kernel K.csv --sim S.csv --table T.md             # the experiment's own length

The experiment runs 300 s; real time makes that 25 minutes per pair of kernel runs, so both
sides here run ``DURATION_S`` (120 s) by default and measure the second half (60-120 s), as
the experiment measures its own. With Linux's default send buffer limit (4 MB) a CUBIC
sender here never fills a 16 BDP FIFO (no drop in 300 s), while l4sim models no send
buffer: ``--sndbuf-mb 64`` raises it in the hosts' namespaces (the files of the
committed runs say which they used). Kernel run *k* uses seed *k* for the router's jitter, l4sim
the experiment's eight seeds. Each emulated run is its own process under
``flock LOCK`` so no two emulations on the machine overlap; each run's two flows are
appended to ``--kernel`` (CSV) when it ends, and a run already there is skipped.
``--compare`` simulates the same cases (kept in ``--sim``, resumable) and writes the
Markdown comparison (``--table``).
"""

from __future__ import annotations

import argparse
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

from emulate_coexistence import _append, _read  # noqa: E402  (benchmarks/, beside this)
from l4sim.experiments import bbr3_coexistence as b3  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
KERNEL_CSV = DATA / "emulate_bbr3_coexistence_kernel.csv"
SIM_CSV = DATA / "emulate_bbr3_coexistence_sim.csv"
TABLE_MD = DATA / "emulate_bbr3_coexistence.md"
LOCK = "/work/emulate.lock"
RUNS = 2
DURATION_S = 120.0
BUFFERS_BDP = (0.5, 2.0, 16.0)
KERNEL_FIELDS = (
    "case",
    "run",
    "flow",
    "cca",
    "kernel_cca",
    "mbps",
    "retransmits",
    "queue_drops",
    "lateness_p99_us",
    "kernel",
    "date",
)
SIM_FIELDS = ("case", "seed", "flow", "cca", "mbps")


def cases(
    duration_s: float = DURATION_S, buffers: tuple[float, ...] = BUFFERS_BDP
) -> list[b3.Case]:
    return [b3.Case("bbr", b, duration_s=duration_s) for b in buffers]


def kernel_head(case: b3.Case, sndbuf_mb: int | None) -> str:
    start, end = case.window
    raised = f"# the send buffer's limit (net.ipv4.tcp_wmem) raised to {sndbuf_mb} MB\n"
    return (
        "# The kernel's BBR v1 (flow 0) and CUBIC (flow 1) through l4sim's router (l4sim\n"
        f"# emulate), the set-up of `l4sim reproduce bbr3-coexistence` run for {end:g} s;\n"
        "# command: python benchmarks/emulate_bbr3_coexistence.py\n"
        f"# mbps: each flow's goodput at the receiver over {start:g}-{end:g} s; retransmits:\n"
        "# TCP_INFO, whole run; queue_drops: the bottleneck, whole run, both flows; lateness:\n"
        "# the router's (us after the link model's departure time).\n"
    ) + (raised if sndbuf_mb else "")


def raise_send_buffer(mbytes: int) -> None:
    """Let the kernel's TCP hold up to ``mbytes`` MB per socket (the maximum of
    net.ipv4.tcp_wmem in each host's namespace): with Linux's default, 4 MB, a sender's
    unsent and in-flight data stay short of filling a 16 BDP FIFO here, while l4sim models
    no send buffer."""
    import l4sim.emulate as em
    from l4sim.emulate import netns

    make = em._make_host

    def make_host(h: Any) -> None:
        make(h)
        with netns._in_netns(h.netns):
            Path("/proc/sys/net/ipv4/tcp_wmem").write_text(f"4096 16384 {mbytes << 20}\n")

    em._make_host = make_host


def emulate_one(case: b3.Case, run: int, path: Path, sndbuf_mb: int | None) -> None:
    from l4sim.emulate import emulate
    from l4sim.experiments.classic_queue import window_rates

    t = time.time()
    res = emulate(b3.scenario(case, seed=run))
    mbps = [r / 1e6 for r in window_rates(res.flows, 2, *case.window)]
    emu = res.summary["emulation"]
    q = next(x for x in res.summary["queues"] if x["link"] == "r0->r1")
    rows = [
        {
            "case": case.name,
            "run": run,
            "flow": i,
            "cca": cca,
            "kernel_cca": f.get("kernel_cca"),
            "mbps": f"{mbps[i]:.4f}",
            "retransmits": f.get("retransmits") or 0,
            "queue_drops": q["drops"],
            "lateness_p99_us": f"{emu['router_lateness_us']['p99']:.1f}",
            "kernel": emu["kernel"],
            "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d"),
        }
        for i, (cca, f) in enumerate(zip(("bbr", "cubic"), res.summary["flows"], strict=True))
    ]
    _append(path, KERNEL_FIELDS, rows, kernel_head(case, sndbuf_mb))
    print(
        f"{case.name} run {run}: {[round(m, 2) for m in mbps]} Mbit/s ({time.time() - t:.0f} s)",
        flush=True,
    )


def _sim_task(task: tuple[b3.Case, int]) -> tuple[str, int, float, float]:
    run = b3._run(task)
    return task[0].name, task[1], run.bbr_mbps, run.cubic_mbps


def simulate(todo: list[b3.Case], path: Path, jobs: int) -> None:
    """l4sim's runs of ``todo`` with the experiment's seeds, those not yet in ``path``."""
    from concurrent.futures import ProcessPoolExecutor

    done = {(r["case"], int(r["seed"])) for r in _read(path)}
    tasks = [(c, s) for c in todo for s in b3.DEFAULT_SEEDS if (c.name, s) not in done]
    start, end = todo[0].window
    head = f"# l4sim, the same cases: each flow's goodput over {start:g}-{end:g} s (Mbit/s)\n"
    with ProcessPoolExecutor(jobs) as pool:
        for name, seed, a, b in pool.map(_sim_task, tasks):
            rows = [
                {"case": name, "seed": seed, "flow": i, "cca": cca, "mbps": f"{m:.4f}"}
                for i, (cca, m) in enumerate((("bbr", a), ("cubic", b)))
            ]
            _append(path, SIM_FIELDS, rows, head)


def _shares(rows: list[dict[str, str]], key: str) -> dict[str, list[float]]:
    """BBR's share of the pair's goodput in each run (or seed), by case."""
    runs: dict[tuple[str, str], dict[int, float]] = {}
    for r in rows:
        runs.setdefault((r["case"], r[key]), {})[int(r["flow"])] = float(r["mbps"])
    out: dict[str, list[float]] = {}
    for (case, _), f in runs.items():
        if len(f) == 2 and f[0] + f[1] > 0:
            out.setdefault(case, []).append(f[0] / (f[0] + f[1]))
    return out


def ware_share(case: b3.Case) -> float:
    """BBR v1's fraction of the link beside one loss-based flow in Ware et al.'s model
    ("Modeling BBR's Interactions with Loss-Based Congestion Control", IMC 2019, eqs. 9-11):
    the loss-based flows' share p = 1/2 - 1/(2X) - 4N/q (at least 0) for a buffer of X BDPs
    (q packets) and N BBR flows, less the time BBR spends in ProbeRTT, (q/c + 0.2 s + RTT)
    every 10 s, when the queue drains through it."""
    c = case.rate_mbps * 1e6 / 8 / b3.MSS_WIRE_BYTES  # packets per second
    rtt = case.rtt_ms / 1e3
    q = case.buffer_bdp * c * rtt
    p = max(0.0, 0.5 - 1 / (2 * case.buffer_bdp) - 4 / q)
    return (1 - p) * (1 - (q / c + 0.2 + rtt) / 10)


def comparison(
    kernel_csv: Path, sim_csv: Path, todo: list[b3.Case], sndbuf_mb: int | None = None
) -> str:
    """The Markdown table: per buffer, BBR v1's share in the kernel (each run) and in
    l4sim (mean ± sd over the seeds), the difference, and Ware et al.'s model."""
    krows = _read(kernel_csv)
    kern, sim = _shares(krows, "run"), _shares(_read(sim_csv), "seed")
    drops: dict[str, int] = {}
    for r in krows:
        if r["flow"] == "0":  # the bottleneck's drops, counted once per run
            drops[r["case"]] = drops.get(r["case"], 0) + int(r["queue_drops"])
    lines = [
        "| buffer (BDP) | kernel runs | kernel mean | l4sim mean | l4sim sd | l4sim seeds "
        "| l4sim / kernel - 1 | within 20 % | kernel drops per run | Ware et al.'s model |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    ok = n = 0
    for c in todo:
        k, s = kern.get(c.name, []), sim.get(c.name, [])
        if not k or not s:
            continue
        km, sm = statistics.fmean(k), statistics.fmean(s)
        sd = statistics.stdev(s) if len(s) > 1 else 0.0
        within = abs(sm / km - 1) <= b3.TOLERANCE
        ok, n = ok + within, n + 1
        lines.append(
            f"| {c.buffer_bdp:g} | {', '.join(f'{x:.2f}' for x in k)} | {km:.2f} | {sm:.2f} "
            f"| {sd:.2f} | {len(s)} | {sm / km - 1:+.0%} | {'yes' if within else 'no'} "
            f"| {drops.get(c.name, 0) / len(k):.0f} | {ware_share(c):.2f} |"
        )
    kernels = sorted({r["kernel"] for r in krows})
    dates = sorted({r["date"] for r in krows})
    late = [float(r["lateness_p99_us"]) for r in krows]
    head = (
        f"BBR v1 beside CUBIC, {b3.RATE_MBPS} Mbit/s, {b3.RTT_MS} ms, FIFO, "
        f"{todo[0].duration_s:g} s runs, BBR's share of the pair's goodput over the second "
        f"half: **{ok} of {n} buffers within 20 %** of the kernel's mean. Kernel "
        f"{', '.join(kernels)}, measured "
        f"{' to '.join(dict.fromkeys(dates))}; the router's lateness p99 per run up to "
        f"{max(late, default=0):.0f} us."
    )
    if sndbuf_mb:
        head += f" The kernel's send buffer limit (net.ipv4.tcp_wmem) raised to {sndbuf_mb} MB."
    return "\n".join([head, "", *lines]) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", type=Path, default=KERNEL_CSV)
    ap.add_argument("--sim", type=Path, default=SIM_CSV)
    ap.add_argument("--table", type=Path, default=TABLE_MD)
    ap.add_argument("--lock", default=LOCK)
    ap.add_argument("--runs", type=int, default=RUNS, help="kernel runs of each case")
    ap.add_argument("--compare", action="store_true", help="simulate and write the table")
    ap.add_argument("--jobs", type=int, default=2, help="--compare: processes")
    ap.add_argument("--case", help="emulate this one case (what each locked process runs)")
    ap.add_argument("--run", type=int, default=1)
    ap.add_argument("--duration", type=float, default=DURATION_S, help="seconds per run")
    ap.add_argument(
        "--buffers", default=",".join(f"{b:g}" for b in BUFFERS_BDP), help="in BDPs, e.g. 16"
    )
    ap.add_argument("--sndbuf-mb", type=int, help="raise the kernel's send buffer limit")
    args = ap.parse_args()
    todo = cases(args.duration, tuple(float(b) for b in args.buffers.split(",")))
    if args.case:
        if args.sndbuf_mb:
            raise_send_buffer(args.sndbuf_mb)
        case = next(c for c in todo if c.name == args.case)
        emulate_one(case, args.run, args.kernel, args.sndbuf_mb)
        return 0
    if args.compare:
        simulate(todo, args.sim, args.jobs)
        args.table.write_text(comparison(args.kernel, args.sim, todo, args.sndbuf_mb))
        print(args.table.read_text())
        return 0
    if os.geteuid() != 0:
        print("emulation needs root (network namespaces, TUN devices)", file=sys.stderr)
        return 2
    for run in range(1, args.runs + 1):
        for case in todo:
            if (case.name, str(run)) in {(r["case"], r["run"]) for r in _read(args.kernel)}:
                continue
            cmd = ["flock", args.lock, sys.executable, __file__, "--case", case.name]
            cmd += ["--run", str(run), "--kernel", str(args.kernel)]
            cmd += ["--duration", str(args.duration), "--buffers", args.buffers]
            cmd += ["--sndbuf-mb", str(args.sndbuf_mb)] if args.sndbuf_mb else []
            rc = subprocess.call(cmd)
            if rc != 0:
                print(f"{case.name} run {run} failed (exit {rc})", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
