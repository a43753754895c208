"""Engine speed of l4sim against htsim (Broadcom/csg-htsim) on the same TCP dumbbell.

    python benchmarks/bench_vs_htsim.py --htsim-dir /tmp/htsim [--repeat 5]
                                        [--cases 1flow10M,4flow10M,1flow100M] [--out DIR]

Both sides run the dumbbell of crates/l4sim-core/examples/speed.rs: N bulk TCP flows, access
links 1 Gbit/s / 1 ms, a bottleneck of MBPS / 20 ms with a drop-tail FIFO of 100 packets,
60 simulated seconds. l4sim is the `speed` example binary (NewReno with SACK, fixed 64 MiB
window); htsim is benchmarks/htsim/l4sim_dumbbell.cpp (htsim's TcpSrc/TcpSink, Queue, Pipe)
linked against the checkout's libhtsim.a. htsim itself stays outside this repository:
--htsim-dir is a checkout of csg-htsim (its `sim/` directory is used; libhtsim.a and the
driver are built there when missing or stale). Wall times are the event loop alone, best of
--repeat runs, the two simulators alternated; each run is a fresh process.
See benchmarks/htsim/README.md for what differs between the two models. With --out, the
table and every run's numbers go to DIR/speed_vs_htsim.md and .json, stamped with both
commits, the date and the machine's load (the README and the performance page quote them).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
DRIVER_SRC = BENCH_DIR / "htsim" / "l4sim_dumbbell.cpp"
L4SIM_BIN = REPO / "target" / "release" / "examples" / "speed"
sys.path.insert(0, str(BENCH_DIR))

from bench_cli import chosen_cases  # noqa: E402

#: Case name -> (flows, bottleneck Mbit/s, simulated seconds).
CASES: dict[str, tuple[int, int, int]] = {
    "1flow10M": (1, 10, 60),
    "4flow10M": (4, 10, 60),
    "1flow100M": (1, 100, 60),
}

#: l4sim counts TCP payload (1448 B MSS in a 1500 B packet); htsim counts whole 1500 B packets.
PAYLOAD_SHARE = 1448 / 1500


class BenchError(RuntimeError):
    """A one-sentence reason the benchmark cannot run."""


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise BenchError(f"cannot run {cmd[0]}: {e}") from e
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-5:]
        raise BenchError(f"`{' '.join(cmd)}` failed (exit {p.returncode}): " + " | ".join(tail))
    return p.stdout


def htsim_sim_dir(htsim_dir: Path) -> Path:
    """The directory holding htsim's sources (tcp.h, Makefile): DIR/sim or DIR itself."""
    if not htsim_dir.is_dir():
        raise BenchError(f"htsim directory {htsim_dir} does not exist (see --htsim-dir)")
    for d in (htsim_dir / "sim", htsim_dir):
        if (d / "tcp.h").is_file() and (d / "Makefile").is_file():
            return d
    raise BenchError(f"{htsim_dir} is not a csg-htsim checkout (no sim/tcp.h and sim/Makefile)")


def _stale(target: Path, *deps: Path) -> bool:
    return not target.exists() or any(d.stat().st_mtime > target.stat().st_mtime for d in deps)


def build_htsim(sim: Path, jobs: int) -> Path:
    """Build libhtsim.a (htsim's Makefile, -O3) and the driver; return the driver binary."""
    lib = sim / "libhtsim.a"
    if not lib.exists():
        print(f"building {lib} (make -j{jobs} libhtsim.a) ...", file=sys.stderr)
        try:
            _run(["make", f"-j{jobs}", "libhtsim.a"], cwd=sim)
        except BenchError as e:
            raise BenchError(f"building htsim's libhtsim.a failed: {e}") from e
    exe = sim / "l4sim_dumbbell"
    if _stale(exe, DRIVER_SRC, lib):
        print(f"building {exe} ...", file=sys.stderr)
        cmd = ["g++", "-std=c++11", "-O3", "-Wall", f"-I{sim}", str(DRIVER_SRC), str(lib)]
        try:
            _run([*cmd, "-o", str(exe)])
        except BenchError as e:
            raise BenchError(f"building the htsim driver failed: {e}") from e
    return exe


def build_l4sim() -> Path:
    if not L4SIM_BIN.exists():
        print("building l4sim's speed example (cargo build --release) ...", file=sys.stderr)
        try:
            _run(["cargo", "build", "--release", "-p", "l4sim-core", "--example", "speed"], REPO)
        except BenchError as e:
            raise BenchError(f"building l4sim's speed example failed: {e}") from e
    return L4SIM_BIN


_L4SIM_RE = re.compile(
    r"wall (?P<wall>[0-9.]+) s.*goodput (?P<gp>[0-9.]+) Mbps, bottleneck drops (?P<drops>\d+)"
)
_HTSIM_RE = re.compile(
    r"^RESULT .*wall (?P<wall>[0-9.]+) delivered_bytes \d+ goodput_mbps (?P<gp>[0-9.]+) "
    r"bottleneck_drops (?P<drops>\d+)",
    re.M,
)


def _parse(out: str, pattern: re.Pattern[str], who: str) -> dict[str, float]:
    m = pattern.search(out)
    if m is None:
        raise BenchError(f"could not read {who}'s output: {out.strip()[-200:]!r}")
    return {"wall_s": float(m["wall"]), "goodput_mbps": float(m["gp"]), "drops": int(m["drops"])}


def run_case(l4sim: Path, htsim: Path, case: tuple[int, int, int], repeat: int) -> dict:
    args = [str(v) for v in case]
    res: dict[str, list[dict[str, float]]] = {"l4sim": [], "htsim": []}
    for _ in range(repeat):  # alternated, so both see the same machine load
        res["l4sim"].append(_parse(_run([str(l4sim), *args]), _L4SIM_RE, "l4sim"))
        res["htsim"].append(_parse(_run([str(htsim), *args]), _HTSIM_RE, "htsim"))
    row = {}
    for side, runs in res.items():
        row[side] = {**runs[-1], "wall_s": min(r["wall_s"] for r in runs)}
        row[side]["walls"] = [r["wall_s"] for r in runs]
    row["ratio"] = row["htsim"]["wall_s"] / row["l4sim"]["wall_s"]
    return row


def table(rows: dict[str, dict], repeat: int) -> str:
    lines = [
        "| case | l4sim s | htsim s | ratio htsim/l4sim | l4sim goodput Mbit/s "
        "| htsim goodput Mbit/s (1500 B pkts) | htsim x 1448/1500 | drops l4sim | drops htsim |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        a, b = r["l4sim"], r["htsim"]
        lines.append(
            f"| {name} | {a['wall_s']:.4f} | {b['wall_s']:.4f} | {r['ratio']:.2f} "
            f"| {a['goodput_mbps']:.3f} | {b['goodput_mbps']:.3f} "
            f"| {b['goodput_mbps'] * PAYLOAD_SHARE:.3f} | {a['drops']} | {b['drops']} |"
        )
    lines += ["", f"wall s: event loop only, best of {repeat} (fresh process each, alternated)."]
    return "\n".join(lines) + "\n"


def _git_head(repo: Path) -> str:
    try:
        return _run(["git", "-C", str(repo), "rev-parse", "--short=7", "HEAD"]).strip()
    except BenchError:
        return "unknown"


def write_out(out: Path, rows: dict[str, dict], meta: dict[str, object], repeat: int) -> None:
    """DIR/speed_vs_htsim.json (every run) and .md (the table under a stamp line)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "speed_vs_htsim.json").write_text(
        json.dumps({"meta": meta, "cases": rows}, indent=1) + "\n", encoding="utf-8"
    )
    stamp = (
        f"*Made by `python benchmarks/bench_vs_htsim.py --repeat {repeat} --out "
        f"benchmarks/data` at l4sim commit `{meta['l4sim_commit']}` against htsim "
        f"`{meta['htsim_commit']}` on {meta['date']} ({meta['cpus']} CPUs, load average "
        f"{meta['load_average']:.1f} at the start).*"
    )
    (out / "speed_vs_htsim.md").write_text(stamp + "\n\n" + table(rows, repeat), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--htsim-dir", type=Path, default=Path("/tmp/htsim"))
    ap.add_argument("--repeat", type=int, default=5, help="runs per side; best wall time shown")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma list of {', '.join(CASES)}")
    ap.add_argument("--jobs", type=int, default=2, help="make -j for libhtsim.a")
    ap.add_argument("--out", type=Path, default=None, help="write speed_vs_htsim.md/.json here")
    args = ap.parse_args(argv)
    cases = chosen_cases(ap, args.cases, CASES, args.repeat)
    try:
        htsim = build_htsim(htsim_sim_dir(args.htsim_dir), args.jobs)
        l4sim = build_l4sim()
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        meta = {
            "date": now[:10],
            "l4sim_commit": _git_head(REPO),
            "htsim_commit": _git_head(args.htsim_dir),
            "cpus": os.cpu_count(),
            "load_average": os.getloadavg()[0],
            "machine": platform.machine(),
        }
        print(f"# l4sim vs htsim, {now}, {platform.machine()}, {os.cpu_count()} CPUs")
        print(f"# l4sim: {l4sim}\n# htsim: {htsim}\n")
        rows = {}
        for name in cases:
            flows, mbps, secs = CASES[name]
            print(f"[{name}] {flows} flow(s), {mbps} Mbit/s, {secs} s", file=sys.stderr)
            rows[name] = run_case(l4sim, htsim, CASES[name], args.repeat)
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print()
    print(table(rows, args.repeat), end="")
    if args.out is not None:
        write_out(args.out, rows, meta, args.repeat)
        print(f"wrote {args.out / 'speed_vs_htsim.md'} and .json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
