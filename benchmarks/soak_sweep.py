"""Soak test of ``l4sim sweep``: memory over a long sweep, and sweeps killed at random.

1. Memory: a sweep of ``--points`` short points (default 10 000) run by the CLI, the RSS of
   the parent and of every helper process (forkserver, workers, resource tracker; Ray's
   processes with ``--ray``) read from /proc every ``--every`` s. After warm-up (the first
   ``--warmup`` of the points) and until the last point, memory is "flat" when neither the
   parent's nor the biggest worker's RSS rises more than 10 % from the first quarter of the
   samples to the last (medians: the parent's RSS swings as sweep.parquet is rewritten);
   the peak against the first sample is printed too.
2. Kills (``--kills N``): a sweep of ``--kill-points`` points is SIGKILLed (the parent only,
   as an OOM killer or ``kill -9`` would) at a random moment N times, each time resumed by
   the same command; then it runs to the end. After every kill: no helper process may
   outlive the parent by more than 5 s, and every point finished before the kill must still
   be there, byte for byte (neither lost nor run again); at the end every point is in
   sweep.parquet exactly once.

    python benchmarks/soak_sweep.py [--points 10000] [--kills 5] [--jobs 2] [--ray]
    python benchmarks/soak_sweep.py --points 0 --kills 3 --ray   # kills only, on local Ray

Linux only (/proc). Everything is written to a fresh temporary directory.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

from l4sim.executors import descendants

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "scenarios" / "bench_1flow_10M.toml"
PAGE = os.sysconf("SC_PAGE_SIZE")


# --------------------------------------------------------------------------------------------
# Processes from /proc.


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()


def alive(pid: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def rss_mb(pid: int) -> float:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE / 1e6
    except (OSError, IndexError, ValueError):
        return 0.0


def cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


def role(pid: int, parent: int) -> str:
    cmd = cmdline(pid)
    if "resource_tracker" in cmd:
        return "tracker"
    if "forkserver" in cmd:
        st = _stat(pid)
        return "forkserver" if st is not None and int(st[1]) == parent else "worker"
    if (cmd.startswith("ray::") and "Agent" not in cmd) or "default_worker" in cmd:
        return "worker"
    return "other"


# --------------------------------------------------------------------------------------------
# Running the CLI.


def write_spec(path: Path, points: int, duration: str) -> Path:
    path.write_text(f'base = "{BASE}"\nseeds = {points}\n[grid]\n"duration" = ["{duration}"]\n')
    return path


def start(spec: Path, out: Path, args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "l4sim", "sweep", str(spec), "--out", str(out), "-q", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def count_points(out: Path) -> int:
    try:
        return sum(1 for n in os.listdir(out / "points") if n.endswith(".json"))
    except OSError:
        return 0


def memory_soak(args: argparse.Namespace, tmp: Path, exec_args: list[str]) -> bool:
    spec = write_spec(tmp / "memory.toml", args.points, args.duration)
    out = tmp / "memory"
    print(f"\n== memory: {args.points} points of {args.duration} simulated, {' '.join(exec_args)}")
    t0 = time.monotonic()
    proc = start(spec, out, exec_args)
    samples: list[tuple[float, int, float, float, float, int]] = []
    try:
        while proc.poll() is None:
            family = descendants(proc.pid)
            roles = {p: role(p, proc.pid) for p in family}
            workers = [rss_mb(p) for p, r in roles.items() if r == "worker"]
            total = rss_mb(proc.pid) + sum(rss_mb(p) for p in family)
            samples.append(
                (
                    time.monotonic() - t0,
                    count_points(out),
                    rss_mb(proc.pid),
                    max(workers, default=0.0),
                    total,
                    len(workers),
                )
            )
            time.sleep(args.every)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    wall = time.monotonic() - t0
    done = count_points(out)
    print(f"exit {proc.returncode}, {done} points in {wall:.1f} s ({done / wall:.1f} points/s)")
    if proc.returncode != 0:
        print(err.decode()[-2000:])
    step = max(1, len(samples) // 12)
    print(
        f"{'t s':>7} {'points':>7} {'parent MB':>10} {'worker MB':>10} {'all MB':>8} {'workers':>8}"
    )
    for s in samples[::step] + samples[-1:]:
        print(f"{s[0]:7.1f} {s[1]:7d} {s[2]:10.1f} {s[3]:10.1f} {s[4]:8.1f} {s[5]:8d}")
    # After warm-up and before the last point: the end (sweep.parquet sorted and written
    # once more, the workers stopped) is not the sweep's steady state.
    warm = [s for s in samples if args.warmup * args.points <= s[1] < args.points and s[3] > 0]
    if len(warm) < 2:
        print("too few samples after warm-up to tell")
        return False
    # sweep.parquet is rewritten every few seconds, so the parent's RSS swings by a few tens
    # of MB: compare the median of the first and of the last quarter of the samples after
    # warm-up (the trend), and show the peak against the first of them too.
    flat = True
    q = max(1, len(warm) // 4)
    for name, col in (("parent", 2), ("biggest worker", 3), ("all processes", 4)):
        first, last = median(s[col] for s in warm[:q]), median(s[col] for s in warm[-q:])
        ref, peak = warm[0][col], max(s[col] for s in warm)
        trend = (last - first) / first if first else 0.0
        ok = trend <= 0.10
        flat &= ok if name != "all processes" else True
        print(
            f"{name:>15}: median {first:7.1f} MB early, {last:7.1f} MB late "
            f"({100 * trend:+.1f} %: {'flat' if ok else 'GROWS'}); "
            f"first {ref:.1f}, peak {peak:.1f} ({100 * (peak - ref) / (ref or 1):+.1f} %)"
        )
    print(f"memory flat within 10 % after warm-up ({args.warmup:.0%} of points): {flat}")
    return flat and proc.returncode == 0 and done == args.points


def snapshot(out: Path) -> dict[str, bytes]:
    d = out / "points"
    return {p.name: p.read_bytes() for p in d.glob("*.json")} if d.is_dir() else {}


def kill_soak(args: argparse.Namespace, tmp: Path, exec_args: list[str]) -> bool:
    rng = random.Random(args.seed)
    n = args.kill_points
    spec = write_spec(tmp / "kills.toml", n, args.kill_duration)
    out = tmp / "kills"
    print(
        f"\n== kills: {n} points of {args.kill_duration}, {args.kills} SIGKILLs, "
        f"{' '.join(exec_args)}"
    )
    print(
        f"{'kill':>4} {'done before':>11} {'lost':>5} {'re-run':>7} {'orphans':>8} "
        f"{'gone after s':>12}"
    )
    ok = True
    before: dict[str, bytes] = {}
    for k in range(1, args.kills + 1):
        # Somewhere in the next share of what is left, so that every kill lands mid-sweep.
        step = max(1, (n - len(before)) // (args.kills - k + 2))
        target = len(before) + rng.randint(1, step)
        proc = start(spec, out, exec_args)
        try:
            while count_points(out) < target and proc.poll() is None:
                time.sleep(0.01)
            time.sleep(rng.uniform(0, 0.2))  # sometimes in the middle of writing a point
            if proc.poll() is not None:
                print(f"{k:4d}: the sweep ended before the kill (exit {proc.returncode})")
                break
            family = descendants(proc.pid)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            t = time.monotonic()
            while any(alive(p) for p in family) and time.monotonic() - t < 5:
                time.sleep(0.05)
            gone = time.monotonic() - t
            orphans = [p for p in family if alive(p)]
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        now = snapshot(out)
        lost = [name for name in before if name not in now]
        rerun = [name for name in before if name in now and now[name] != before[name]]
        print(
            f"{k:4d} {len(now):11d} {len(lost):5d} {len(rerun):7d} {len(orphans):8d} {gone:12.2f}"
        )
        for p in orphans:
            print(f"     orphan {p}: {cmdline(p)[:100]}")
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        ok &= not lost and not rerun and not orphans
        before = now
    proc = start(spec, out, exec_args)
    _, err = proc.communicate()
    final = snapshot(out)
    lost = [name for name in before if name not in final]
    rerun = [name for name in before if final.get(name) not in (None, before[name])]
    import polars as pl

    df = pl.read_parquet(out / "sweep.parquet").filter(pl.col("record") == "flow")
    seeds = sorted(df["seed"].to_list())
    complete = proc.returncode == 0 and seeds == list(range(1, n + 1))
    print(
        f"final run: exit {proc.returncode}, {len(final)} of {n} points, {len(lost)} lost, "
        f"{len(rerun)} re-run; sweep.parquet has every point once: {complete}"
    )
    if proc.returncode != 0:
        print(err.decode()[-2000:])
    ok &= complete and not lost and not rerun
    print(f"no finished point lost or re-run, no orphan, over {args.kills} kills: {ok}")
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=10_000, help="memory soak points (0: skip)")
    ap.add_argument("--duration", default="2s", help="simulated time of a memory soak point")
    ap.add_argument("--every", type=float, default=1.0, help="memory sampling period, s")
    ap.add_argument("--warmup", type=float, default=0.2, help="warm-up: this share of points")
    ap.add_argument("--kills", type=int, default=5, help="random SIGKILLs (0: skip)")
    ap.add_argument("--kill-points", type=int, default=200, help="points of the killed sweep")
    ap.add_argument("--kill-duration", default="600s", help="simulated time of a kill point")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--ray", action="store_true", help="a local Ray runtime, not the pool")
    ap.add_argument("--seed", type=int, default=1, help="when the kills land")
    args = ap.parse_args()
    exec_args = ["--jobs", str(args.jobs)] + (["--ray", "local"] if args.ray else [])
    ok = True
    with tempfile.TemporaryDirectory(prefix="l4sim-soak-") as tmp:
        if args.points > 0:
            ok &= memory_soak(args, Path(tmp), exec_args)
        if args.kills > 0:
            ok &= kill_soak(args, Path(tmp), exec_args)
    print(f"\nsoak: {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
