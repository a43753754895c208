"""SCReAM v2's reference code (EricssonResearch/scream, its BW test tool
``scream_bw_test_tx`` / ``_rx``, built from source) run in ``l4sim emulate`` through the
router's DualPI2 at 100 Mbit/s, 25 ms RTT, as a command flow; l4sim's own SCReAM v2 in the
same scenarios beside it.

Cases (30 s each, the reference's test-record settings: 1400-byte packets, 50 frame/s of
fixed size, microbursts every 0.5 ms, ECT(1)):

- ``step``: SCReAM alone, capacity 100 -> 20 -> 100 Mbit/s at 10 s and 20 s;
- ``prague1``, ``prague2``: SCReAM from 0 s, 1 or 2 kernel TCP Prague flows (the BPF
  stand-in ``l4sim emulate`` loads) from 10 s; SCReAM's and each Prague flow's rate over
  20-30 s.

Each reference commit runs as the l4sim ``rules`` that follow it (``--ref
DIR=COMMIT:RULES``); the table's were built with the repository's own cmake files
(``cmake .. && make scream_bw_test_tx scream_bw_test_rx``) at
c8f84c3dc920cb65f0c99126cec3fb7778b57777 (its current code) and
76a298add1ebd3714f86ae6f4a31194ca04a168f (its test record's). Rates are bytes on the wire
leaving the bottleneck (a pcap of r0->r1, 64-byte snaps) per window; the L queue's sojourn
p99 is the router's (or the simulator's) over the whole run. Resumable: the rows already in
the CSV are kept and not run again (``--keep DIR``: each run's output kept there, and read
again rather than re-run). Needs root; every emulated run holds ``--lock`` (flock) while it runs.

    python benchmarks/emulate_scream.py --ref ../scream-c8f84c3/bin=c8f84c3:latest \\
        --ref ../scream-76a298ad/bin=76a298ad:2024-10-31 --lock emulate.lock

writes ``benchmarks/data/scream_emulate.{csv,md}``.
"""

from __future__ import annotations

import argparse
import csv
import fcntl
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from l4sim import Simulation  # noqa: E402
from l4sim.scenario import Scenario  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
CSV = DATA / "scream_emulate.csv"
MD = DATA / "scream_emulate.md"
PORT = 30110
DURATION_S = 30
CASES = {"step": 0, "prague1": 1, "prague2": 2}
# Per case, the windows (s) whose rates are kept: the step's three capacities settled,
# the Prague cases' last 10 s.
WINDOWS = {"step": ((5, 10), (15, 20), (25, 30)), "prague1": ((20, 30),), "prague2": ((20, 30),)}
# The reference's test-record options (test-record.md 2024-10-31, test 2).
TX_OPTS = ["-ect", "1", "-mtu", "1360", "-rand", "0", "-microburstinterval", "0.5"]
# Its per-ACK log (queue delay, window, CE) into the run's output directory.
TX_LOG = ["-log", "{out}/scream-tx.csv", "-itemlist"]
FIELDS = (
    "how",
    "commit",
    "rules",
    "case",
    "run",
    "window",
    "scream_mbps",
    "prague_mbps",
    "l_p99_ms",
    "scream_owd_p99_ms",
    "scream_ce_frac",
)


def _base(case: str) -> dict[str, Any]:
    bottleneck: dict[str, Any] = {"rate": "100Mbps", "delay": "10500us", "qdisc": "dualpi2"}
    if case == "step":
        bottleneck["schedule"] = [
            {"at": "0s", "rate": "100Mbps"},
            {"at": "10s", "rate": "20Mbps"},
            {"at": "20s", "rate": "100Mbps"},
        ]
    prague = [
        {"kind": "tcp", "cca": {"kind": "prague", "rtt_independence": True}, "start": "10s"}
    ] * CASES[case]
    return {
        "name": f"scream_emulate_{case}",
        "duration": f"{DURATION_S}s",
        "topology": {
            "preset": "dumbbell",
            "access": {"rate": "1Gbps", "delay": "1ms"},
            "bottleneck": bottleneck,
        },
        "flows": prague,
    }


def emulated(case: str, bindir: Path) -> Scenario:
    """The reference's sender and receiver as flow 0, the Prague flows after it."""
    d = _base(case)
    scream = {
        "kind": "command",
        "port": PORT,
        "sender": [str(bindir / "scream_bw_test_tx"), *TX_OPTS, *TX_LOG, "{dst}", "{port}"],
        "receiver": [str(bindir / "scream_bw_test_rx"), "{src}", "{port}"],
    }
    d["flows"] = [scream, *d["flows"]]
    d["captures"] = [{"link": "r0->r1", "file": "bottleneck.pcap", "snaplen": 64}]
    return Scenario.parse(d)


def simulated(case: str, rules: str) -> Scenario:
    """l4sim's SCReAM v2 in the same place (scenarios/media_scream_dualpi2.toml's flow)."""
    d = _base(case)
    scream = {
        "kind": "udp",
        "rate": "1Mbps",
        "packet_size": "1400B",
        "source": {"kind": "video", "fps": 50, "noise": 0, "key_ratio": 1},
        "feedback": {"kind": "rfc8888", "interval": "20ms"},
        "cc": {"kind": "scream", "mode": "l4s", "rules": rules},
    }
    d["flows"] = [scream, *d["flows"]]
    return Scenario.parse(d)


def pcap_packets(path: Path) -> Iterator[tuple[float, int, int, int, bool]]:
    """(time s, IP total length, protocol, destination port, CE) of each IPv4 packet of a
    LINKTYPE_RAW pcap."""
    data = path.read_bytes()
    # Microsecond or nanosecond timestamps (the emulator's captures: nanoseconds).
    frac = {0xA1B2C3D4: 1e-6, 0xA1B23C4D: 1e-9}[struct.unpack_from("<I", data)[0]]
    off = 24
    while off + 16 <= len(data):
        sec, sub, incl, orig = struct.unpack_from("<IIII", data, off)
        ip = data[off + 16 : off + 16 + incl]
        off += 16 + incl
        if len(ip) < 24 or ip[0] >> 4 != 4:
            continue
        ihl = (ip[0] & 15) * 4
        dport = struct.unpack_from(">H", ip, ihl + 2)[0] if len(ip) >= ihl + 4 else 0
        yield sec + sub * frac, orig, ip[9], dport, ip[1] & 3 == 3


def window_rates(
    pcap: Path, keys: list[tuple[int, int]], windows: Any
) -> tuple[list[list[float]], float]:
    """Mbit/s per window per flow key (protocol, destination port), time from the first
    packet (flow 0, which starts the run); the fraction of the first key's packets that
    left CE-marked."""
    out = [[0.0] * len(keys) for _ in windows]
    t0 = None
    packets = marked = 0
    for t, n, proto, dport, ce in pcap_packets(pcap):
        t0 = t if t0 is None else t0
        k = (proto, dport)
        if k not in keys:
            continue
        if k == keys[0]:
            packets += 1
            marked += ce
        rel = t - t0
        for w, (a, b) in enumerate(windows):
            if a <= rel < b:
                out[w][keys.index(k)] += n * 8 / (b - a) / 1e6
    return out, marked / packets if packets else 0.0


def _l4s(summary: dict[str, Any]) -> dict[str, Any]:
    q = next(q for q in summary["queues"] if q["link"] == "r0->r1")
    return q["classes"][0]


def run_emulated(
    case: str, bindir: Path, lock: Path | None, keep: Path | None
) -> list[dict[str, Any]]:
    import json

    with tempfile.TemporaryDirectory(prefix="scream-emu-") as tmp:
        scen = Path(tmp) / "s.toml"
        scen.write_text(emulated(case, bindir).to_toml())
        out = keep if keep is not None else Path(tmp) / "out"
        cmd = [sys.executable, "-m", "l4sim", "emulate", str(scen), "-o", str(out), "-q"]
        # A kept run that finished is read again, not repeated.
        with open(lock or "/dev/null") as fh:
            if not (out / "summary.json").exists():
                if lock is not None:
                    fcntl.flock(fh, fcntl.LOCK_EX)
                env = {"PYTHONPATH": str(ROOT / "python")} | _env()
                subprocess.run(cmd, check=True, env=env)
        s = json.loads((out / "summary.json").read_text())
        keys = [(17, PORT)] + [(6, 5000 + i) for i in range(1, CASES[case] + 1)]
        rates, ce = window_rates(out / "bottleneck.pcap", keys, WINDOWS[case])
        common = {
            "l_p99_ms": _ms(_l4s(s)["sojourn_p99_s"]),
            "scream_owd_p99_ms": _ms(s["flows"][0]["owd_p99_s"]),
            "scream_ce_frac": round(ce, 4),
        }
        return [_row(r, common) for r in rates]


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1e3, 3)


def _row(rates: list[float], common: dict[str, Any]) -> dict[str, Any]:
    return {
        "scream_mbps": round(rates[0], 2),
        "prague_mbps": " ".join(f"{r:.2f}" for r in rates[1:]),
    } | common


def run_simulated(case: str, rules: str) -> list[dict[str, Any]]:
    sim = Simulation(simulated(case, rules))
    tmp = tempfile.TemporaryDirectory(prefix="scream-sim-")
    pcap = Path(tmp.name) / "scream.pcap"
    sim.capture("r0->r1", pcap, snaplen=64, flows=[0])
    rates = []
    last = 0
    for a, b in WINDOWS[case]:
        sim.run_until_ns(a * 10**9)
        before = [f["bytes_acked"] for f in sim.summary()["flows"]]
        sim.run_until_ns(b * 10**9)
        after = [f["bytes_acked"] for f in sim.summary()["flows"]]
        rates.append([(y - x) * 8 / (b - a) / 1e6 for x, y in zip(before, after, strict=True)])
        last = b
    sim.run_until_ns(max(last, DURATION_S) * 10**9)
    s = sim.summary()
    sim.close_captures()
    with tmp:
        _, ce = window_rates(pcap, [(17, _sim_port(pcap))], ())
    common = {
        "l_p99_ms": _ms(_l4s(s)["sojourn_p99_s"]),
        "scream_owd_p99_ms": _ms(s["flows"][0]["owd_p99_s"]),
        "scream_ce_frac": round(ce, 4),
    }
    return [_row(r, common) for r in rates]


def _sim_port(pcap: Path) -> int:
    """The destination port the simulator's capture gives flow 0 (its only flow there)."""
    return next(dport for _, _, _, dport, _ in pcap_packets(pcap))


def read_rows() -> list[dict[str, str]]:
    if not CSV.exists():
        return []
    with open(CSV) as fh:
        return list(csv.DictReader(fh))


def write_rows(rows: list[dict[str, Any]]) -> None:
    with open(CSV, "w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def table(rows: list[dict[str, str]]) -> str:
    """Per case and window: the reference's mean over its runs beside l4sim's (same rules)."""
    head = (
        "| case | window (s) | capacity (Mbit/s) | rules (commit) | SCReAM ref / l4sim (Mbit/s) "
        "| each Prague flow ref / l4sim (Mbit/s) | L-queue p99 ref / l4sim (ms) "
        "| SCReAM CE fraction ref / l4sim |\n|---|---|---:|---|---:|---|---:|---:|\n"
    )
    lines = []
    combos = sorted({(r["case"], r["rules"], r["commit"]) for r in rows}, key=str)
    for case, rules, commit in sorted(combos, key=lambda c: (list(CASES).index(c[0]), c[1])):
        for w, (a, b) in enumerate(WINDOWS[case]):
            got = {}
            for how in ("reference", "l4sim"):
                sel = [
                    r
                    for r in rows
                    if (r["how"], r["case"], r["rules"]) == (how, case, rules)
                    and r["window"] == str(w)
                ]
                got[how] = sel
            ref, ours = got["reference"], got["l4sim"]
            if not ref or not ours:
                continue

            def m(sel: list[dict[str, str]], k: str, fmt: str = ".2f") -> str:
                xs = [float(r[k]) for r in sel if r[k] not in ("", "None")]
                return format(_mean(xs), fmt) if xs else "-"

            def prague(sel: list[dict[str, str]]) -> str:
                per = [[float(x) for x in r["prague_mbps"].split()] for r in sel]
                if not per or not per[0]:
                    return "-"
                return ", ".join(f"{_mean([p[i] for p in per]):.1f}" for i in range(len(per[0])))

            cap = (100, 20, 100)[w] if case == "step" else 100
            lines.append(
                f"| {case} | {a}-{b} | {cap} | {rules} ({commit}) "
                f"| {m(ref, 'scream_mbps')} / {m(ours, 'scream_mbps')} "
                f"| {prague(ref)} / {prague(ours)} | {m(ref, 'l_p99_ms')} / {m(ours, 'l_p99_ms')} "
                f"| {m(ref, 'scream_ce_frac', '.3f')} / {m(ours, 'scream_ce_frac', '.3f')} |"
            )
    runs = len({(r["commit"], r["case"], r["run"]) for r in rows if r["how"] == "reference"})
    note = (
        f"\nReference: {runs} emulated runs in all, the mean of each case's runs; l4sim: one "
        "simulation (deterministic). Rates: bytes on the wire leaving the bottleneck per "
        "window. The L-queue p99 is over the whole run.\n"
    )
    return head + "\n".join(lines) + "\n" + note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--ref",
        action="append",
        default=[],
        help="BINDIR=COMMIT:RULES, a built reference (its bin/) and the l4sim rules it follows",
    )
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--lock", type=Path, default=None, help="flock this file around each run")
    ap.add_argument("--cases", nargs="*", default=list(CASES))
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--keep", type=Path, help="keep each emulated run's output under this")
    args = ap.parse_args()
    rows: list[dict[str, Any]] = read_rows()
    done = {(r["how"], r["commit"], r["case"], r["run"]) for r in rows}
    for spec in [] if args.table_only else args.ref:
        bindir, _, rest = spec.partition("=")
        commit, _, rules = rest.partition(":")
        if not rules:
            raise SystemExit(f"--ref {spec!r}: give BINDIR=COMMIT:RULES")
        for case in args.cases:
            todo = [("l4sim", "0")] + [("reference", str(i)) for i in range(args.runs)]
            for how, run in todo:
                if (how, commit, case, run) in done:
                    continue
                print(f"{how} {commit} {case} run {run}", flush=True)
                got = (
                    run_simulated(case, rules)
                    if how == "l4sim"
                    else run_emulated(
                        case,
                        Path(bindir),
                        args.lock,
                        args.keep / f"{commit}-{case}-{run}" if args.keep else None,
                    )
                )
                for w, r in enumerate(got):
                    rows.append(
                        {"how": how, "commit": commit, "rules": rules, "case": case, "run": run}
                        | {"window": w}
                        | r
                    )
                write_rows(rows)
                done.add((how, commit, case, run))
    MD.write_text(table(read_rows()))
    print(MD.read_text())


if __name__ == "__main__":
    main()
