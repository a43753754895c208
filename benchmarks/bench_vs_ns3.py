"""Speed and fidelity of l4sim against ns-3 3.44 on the same dumbbell scenarios.

    python benchmarks/bench_vs_ns3.py [--duration 60] [--cases 1flow10M,4flow10M,1flow100M]
                                      [--json out.json] [--repeat 1]
                                      [--ns3-buffer device|qdisc] [--skip-ns3] [--skip-l4sim]

Each case is an l4sim scenario (scenarios/bench_*.toml). The ns-3 side is derived from that
scenario's normalised configuration (`Scenario.to_core_config()`, exactly what the l4sim
core runs), so both simulators see the same topology, rates, delays, buffers, flows and
TCP parameters; see benchmarks/ns3_scenarios.py for how ns-3 is configured to match.
Each ns-3 run happens in a fresh Python process. Wall times are the simulation loop alone
(l4sim: `summary["wall_time_s"]`; ns-3: `Simulator::Run()`), not start-up or build.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

from bench_cli import chosen_cases  # noqa: E402
from ns3_scenarios import make_spec, run_ns3, run_ns3_subprocess  # noqa: E402

#: Case name -> scenario file. The dict beside it rebuilds the same scenario when the file
#: is missing (it mirrors scenarios/bench_*.toml).
CASES: dict[str, tuple[str, dict[str, Any]]] = {}


def _dumbbell(n: int, rate: str) -> dict[str, Any]:
    return {
        "name": f"bench_{n}flow_{rate.removesuffix('bps')}",
        "seed": 1,
        "duration": "60s",
        "topology": {
            "preset": "dumbbell",
            "access": {"rate": "1Gbps", "delay": "1ms"},
            "bottleneck": {
                "rate": rate,
                "delay": "20ms",
                "qdisc": {"kind": "fifo", "limit": "100p"},
            },
        },
        # As the shipped bench_*.toml: RFC 6675, RFC 6298 and a fixed window, as ns-3 has.
        "flows": [
            {
                "kind": "tcp",
                "cca": "newreno",
                "count": n,
                "rack": False,
                "linux_rto": False,
                "rwnd": "64MiB",
            }
        ],
    }


CASES["1flow10M"] = ("scenarios/bench_1flow_10M.toml", _dumbbell(1, "10Mbps"))
CASES["4flow10M"] = ("scenarios/bench_4flow_10M.toml", _dumbbell(4, "10Mbps"))
CASES["1flow100M"] = ("scenarios/bench_1flow_100M.toml", _dumbbell(1, "100Mbps"))

#: The TcpConfig keys the ns-3 port reads or refuses to vary between flows; their defaults
#: come from the core itself (`_core.contract()["tcp"]`), where a scenario's normalised
#: configuration leaves them out. `cca` is the algorithm's table (kind and options; CUBIC's
#: `hystart` is copied to ns-3).
L4SIM_TCP_KEYS = (
    "cca",
    "ecn",
    "mss",
    "header_bytes",
    "init_cwnd",
    "min_rto_ns",
    "init_rto_ns",
    "delack_count",
    "delack_timeout_ns",
    "dupack_threshold",
    "rwnd_bytes",
    "sack",
    "timestamps",
    "pacing",
    "rack",
    "linux_rto",
)


def _tcp_defaults() -> dict[str, Any]:
    """The core's TcpConfig defaults for `L4SIM_TCP_KEYS`."""
    core = _import_l4sim()._core.contract()["tcp"]
    return {k: core[k] for k in L4SIM_TCP_KEYS}


def _cubic_hystart(cca: dict[str, Any]) -> bool:
    """CUBIC's `hystart` in a flow's cca table, or the core's default (CubicConfig)."""
    default = _import_l4sim()._core.contract()["ccas"]["cubic"]["hystart"]
    return bool(cca.get("hystart", default))


#: l4sim's qdisc defaults (each qdisc's `Default` impl in crates/l4sim-core/src/qdisc/, listed
#: in docs/qdiscs.md), in core keys and units, for the AQMs ported to ns-3. A scenario's
#: normalised configuration carries only the keys it sets.
L4SIM_QDISC_DEFAULTS: dict[str, dict[str, Any]] = {
    "red": {
        "bytes": False,
        "limit": 25,
        "min_th": 5,
        "max_th": 15,
        "max_p": 0.02,
        "w_q": 0.002,
        "gentle": True,
        "ecn": False,
        "harddrop": True,
        "avpkt": 1000,
        "bandwidth_bps": None,
    },
    "codel": {
        "limit_pkts": 1000,
        "target_ns": 5_000_000,
        "interval_ns": 100_000_000,
        "mtu": 1514,
        "ecn": False,
    },
    "pie": {
        "limit_pkts": 1000,
        "target_ns": 15_000_000,
        "tupdate_ns": 15_000_000,
        "alpha": 0.125,
        "beta": 1.25,
        "max_burst_ns": 150_000_000,
        "max_ecnth": 0.1,
        "ecn": False,
        "bytemode": False,
        "mtu": 1514,
    },
    "fq_codel": {
        "limit_pkts": 10240,
        "flows": 1024,
        "quantum": 1514,
        "target_ns": 5_000_000,
        "interval_ns": 100_000_000,
        "mtu": 1514,
        "ecn": True,
        "drop_batch": 64,
    },
}


class Unsupported(ValueError):
    """The scenario uses something the ns-3 port of the dumbbell does not model."""


def _import_l4sim():
    """`import l4sim`, from the installed package or else from the repository's python/."""
    try:
        import l4sim
    except ImportError:
        sys.path.insert(0, str(REPO / "python"))
        import l4sim
    return l4sim


def _dist_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def load_case(l4sim, name: str, duration_s: float | None):
    path, fallback = CASES[name]
    file = REPO / path
    sc = l4sim.load(file) if file.exists() else l4sim.Scenario.parse(fallback, source=name)
    if duration_s is not None:
        sc = sc.with_overrides(duration=f"{duration_s:g}s")
    return sc


def _fifo_pkts(qdisc: dict[str, Any], where: str) -> int:
    if qdisc.get("kind") != "fifo" or qdisc.get("limit_pkts") is None or qdisc.get("limit_bytes"):
        raise Unsupported(f"{where}: only FIFOs limited in packets are ported to ns-3, got {qdisc}")
    return int(qdisc["limit_pkts"])


def _bottleneck_qdisc(qdisc: dict[str, Any]) -> dict[str, Any] | None:
    """The bottleneck AQM with every parameter (l4sim's defaults filled in); None: a FIFO."""
    kind = qdisc.get("kind")
    if kind == "fifo":
        return None
    if kind not in L4SIM_QDISC_DEFAULTS:
        raise Unsupported(f"bottleneck qdisc {kind!r} is not ported to ns-3")
    return {"kind": kind, **L4SIM_QDISC_DEFAULTS[kind], **qdisc}


def ns3_spec_from_scenario(sc, **extra: Any) -> dict[str, Any]:
    """The ns-3 spec (ns3_scenarios.DEFAULT_SPEC keys) of an l4sim dumbbell scenario.

    A bottleneck AQM (RED, CoDel, PIE, FQ-CoDel) becomes ns-3's queue disc of the same
    kind and parameters over a 1-packet device queue, so it forces ``buffer = "qdisc"``.
    """
    cfg = sc.to_core_config()
    names = [n["name"] for n in cfg["nodes"]]
    idx = {name: i for i, name in enumerate(names)}
    if "r0" not in idx or "r1" not in idx:
        raise Unsupported(f"{sc.name}: not a dumbbell (no r0/r1 routers)")
    bottleneck = [lk for lk in cfg["links"] if (lk["a"], lk["b"]) == (idx["r0"], idx["r1"])]
    if len(bottleneck) != 1:
        raise Unsupported(f"{sc.name}: expected one r0 -> r1 link")
    bl = bottleneck[0]
    access = [lk for lk in cfg["links"] if lk is not bl]
    for field in ("rate_bps", "delay_ns", "qdisc_ab", "qdisc_ba"):
        if len({json.dumps(lk[field]) for lk in access}) != 1:
            raise Unsupported(f"{sc.name}: access links differ in {field}; ns-3 port needs one")
    if any(lk["loss"] for lk in cfg["links"]):
        raise Unsupported(f"{sc.name}: random loss is not ported to ns-3")
    acc = access[0]
    acc_limit = _fifo_pkts(acc["qdisc_ab"], "access link")
    if _fifo_pkts(acc["qdisc_ba"], "access link") != acc_limit:
        raise Unsupported(f"{sc.name}: access links need the same FIFO both ways")

    flows = cfg["flows"]
    defaults = _tcp_defaults()
    tcps = []
    for i, f in enumerate(flows):
        if f["kind"] != "tcp" or f.get("size_bytes") is not None or f.get("stop_ns") is not None:
            raise Unsupported(f"{sc.name}: flow {i} is not a bulk TCP flow")
        if (names[f["src"]], names[f["dst"]]) != (f"s{i}", f"d{i}"):
            raise Unsupported(f"{sc.name}: flow {i} must run s{i} -> d{i}")
        tcps.append({**defaults, **f.get("tcp", {})})
    tcp = tcps[0]
    for key in L4SIM_TCP_KEYS:
        if any(t[key] != tcp[key] for t in tcps):
            raise Unsupported(f"{sc.name}: flows differ in tcp.{key}; ns-3 sets it globally")
    if tcp["ecn"]:
        raise Unsupported(f"{sc.name}: ECN is not ported to ns-3 yet")
    if tcp["pacing"]:
        raise Unsupported(f"{sc.name}: pacing is not ported to ns-3")
    if tcp["rack"] or tcp["linux_rto"]:
        raise Unsupported(
            f"{sc.name}: ns-3 has neither RACK-TLP nor Linux's RTO; set rack = false and "
            "linux_rto = false in the flows to compare RFC 6675 and RFC 6298 on both sides"
        )
    if tcp["rwnd_bytes"] is None:
        raise Unsupported(
            f"{sc.name}: ns-3's receive buffer is fixed (no autotuning); set rwnd in the flows "
            '(e.g. rwnd = "64MiB") to compare the same fixed window on both sides'
        )
    if tcp["header_bytes"] != 52:
        raise Unsupported(
            f"{sc.name}: header_bytes {tcp['header_bytes']} != 52 (IP + TCP + timestamps), "
            "which is what ns-3 puts on the wire"
        )
    aqm = _bottleneck_qdisc(bl["qdisc_ab"])
    if aqm is None:
        limit = _fifo_pkts(bl["qdisc_ab"], "bottleneck")
    else:
        limit = int(aqm.get("limit_pkts", aqm.get("limit", 0)))
        extra = {**extra, "buffer": "qdisc"}
    spec = {
        "name": sc.name,
        "n_flows": len(flows),
        "cca": tcp["cca"]["kind"],
        "duration_s": cfg["duration_ns"] / 1e9,
        "start_s": [f.get("start_ns", 0) / 1e9 for f in flows],
        "bottleneck_rate_bps": bl["rate_bps"],
        "bottleneck_delay_s": bl["delay_ns"] / 1e9,
        "bottleneck_limit_pkts": limit,
        "bottleneck_qdisc": aqm,
        "bottleneck_reverse_limit_pkts": _fifo_pkts(bl["qdisc_ba"], "bottleneck (reverse)"),
        "access_rate_bps": acc["rate_bps"],
        "access_delay_s": acc["delay_ns"] / 1e9,
        "access_limit_pkts": acc_limit,
        "mss": tcp["mss"],
        "init_cwnd": tcp["init_cwnd"],
        "min_rto_s": tcp["min_rto_ns"] / 1e9,
        "init_rto_s": tcp["init_rto_ns"] / 1e9,
        "dupack_threshold": tcp["dupack_threshold"],
        "delack_count": tcp["delack_count"],
        "delack_timeout_s": tcp["delack_timeout_ns"] / 1e9,
        "buf_bytes": max(tcp["rwnd_bytes"], 4 << 20),
        "sack": tcp["sack"],
        "timestamps": tcp["timestamps"],
        "cubic_hystart": _cubic_hystart(tcp["cca"]),
        "seed": cfg["seed"],
        **extra,
    }
    return make_spec(**spec)


def _bottleneck(queues: list[dict[str, Any]]) -> dict[str, Any]:
    for q in queues:
        if q.get("link") == "r0->r1":
            return q
    return {}


def _side(sim_s: float, wall_s: list[float], summary: dict[str, Any]) -> dict[str, Any]:
    """Common view of one simulator's results (best wall time of the repeats)."""
    wall = min(wall_s)
    q = _bottleneck(summary.get("queues", []))
    fl = summary.get("flows", [])
    flows = [float(f["goodput_bps"]) for f in fl]
    events = summary.get("events")
    return {
        "wall_s": wall,
        "wall_s_all": wall_s,
        "speed": sim_s / wall if wall > 0 else math.inf,
        "events": events,
        "events_per_s": events / wall if events and wall > 0 else None,
        "goodput_bps": sum(flows),
        "goodput_bps_per_flow": flows,
        "jain_fairness": _jain(flows),
        "retransmits": _total(f.get("retransmits") for f in fl),
        "timeouts": _total(f.get("timeouts") for f in fl),
        "srtt_mean_s": _mean(f.get("srtt_mean_s") for f in fl),
        "drops": q.get("drops"),
        "sojourn_mean_s": q.get("sojourn_mean_s"),
        "backlog_mean_pkts": q.get("backlog_mean_pkts"),
    }


def _total(values) -> int | None:
    v = [x for x in values if x is not None]
    return int(sum(v)) if v else None


def _mean(values) -> float | None:
    v = [x for x in values if x is not None and not math.isnan(x)]
    return sum(v) / len(v) if v else None


def _jain(x: list[float]) -> float | None:
    """Jain's fairness index of the per-flow goodputs (1 = equal shares)."""
    sq = sum(v * v for v in x)
    return sum(x) ** 2 / (len(x) * sq) if x and sq > 0 else None


def run_l4sim_case(l4sim, sc, repeat: int, series: bool) -> dict[str, Any]:
    walls, res = [], None
    for _ in range(repeat):
        res = l4sim.run(sc)
        walls.append(float(res.summary["wall_time_s"]))
    out = _side(float(res.summary["sim_time_s"]), walls, res.summary)
    out["summary"] = res.summary
    if series:
        out["series"] = {
            "flows": res.flows.to_dict(as_series=False),
            "queues": res.queues.to_dict(as_series=False),
        }
    return out


def run_ns3_case(spec: dict[str, Any], repeat: int, inprocess: bool) -> dict[str, Any]:
    walls, res = [], {}
    for _ in range(repeat):
        res = run_ns3(spec) if inprocess else run_ns3_subprocess(spec)
        walls.append(float(res["wall_time_s"]))
    out = _side(float(res["sim_time_s"]), walls, res)
    out["result"] = res
    if res.get("series"):
        out["series"] = res.pop("series")
    return out


# --------------------------------------------------------------------------------------------
# Output.


def _fmt(v: Any, spec: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return format(v, spec)


COLUMNS = [
    # header, width, row -> value
    ("case", 10, lambda r: r["case"]),
    ("sim s", 6, lambda r: _fmt(r["sim_s"], ".0f")),
    ("l4sim wall s", 12, lambda r: _fmt(r["l4sim"].get("wall_s"), ".3f")),
    ("l4sim x", 9, lambda r: _fmt(r["l4sim"].get("speed"), ".0f")),
    ("ns-3 wall s", 11, lambda r: _fmt(r["ns3"].get("wall_s"), ".3f")),
    ("ns-3 x", 7, lambda r: _fmt(r["ns3"].get("speed"), ".0f")),
    ("ratio", 6, lambda r: _fmt(r.get("speed_ratio"), ".1f")),
    ("l4sim Mbps", 10, lambda r: _fmt(_mbps(r["l4sim"].get("goodput_bps")), ".3f")),
    ("ns-3 Mbps", 9, lambda r: _fmt(_mbps(r["ns3"].get("goodput_bps")), ".3f")),
    ("diff %", 7, lambda r: _fmt(r.get("goodput_diff_pct"), "+.2f")),
    ("drops l4sim", 11, lambda r: _fmt(r["l4sim"].get("drops"), "d")),
    ("drops ns-3", 10, lambda r: _fmt(r["ns3"].get("drops"), "d")),
    ("sojourn ms l4/ns3", 17, lambda r: _sojourns(r)),
]


def _mbps(bps: float | None) -> float | None:
    return None if bps is None else bps / 1e6


def _sojourns(r: dict[str, Any]) -> str:
    a, b = r["l4sim"].get("sojourn_mean_s"), r["ns3"].get("sojourn_mean_s")
    return f"{_fmt(a and a * 1e3, '.1f')}/{_fmt(b and b * 1e3, '.1f')}"


def print_table(rows: list[dict[str, Any]]) -> None:
    print("  ".join(h.rjust(w) for h, w, _ in COLUMNS))
    for r in rows:
        print("  ".join(str(get(r)).rjust(w) for _, w, get in COLUMNS))
    print()
    print("per case: events (per wall second); per-flow goodput Mbps (Jain's fairness index);")
    print("          retransmitted segments, RTO timeouts, mean smoothed RTT (all flows)")
    for r in rows:
        print(f"  {r['case']}:")
        for side in ("l4sim", "ns3"):
            d = r[side]
            if not d or "error" in d:
                print(f"    {side:5}  {d.get('error', 'skipped')}")
                continue
            ev, eps = d.get("events"), d.get("events_per_s")
            flows = " ".join(_fmt(g / 1e6, ".3f") for g in d.get("goodput_bps_per_flow", []))
            srtt = d.get("srtt_mean_s")
            print(
                f"    {side:5}  {_fmt(ev, ',d')} events ({_fmt(eps and eps / 1e6, '.2f')} M/s);"
                f" goodput [{flows}] (Jain {_fmt(d.get('jain_fairness'), '.3f')});"
                f" retransmits {_fmt(d.get('retransmits'), 'd')},"
                f" timeouts {_fmt(d.get('timeouts'), 'd')},"
                f" mean srtt {_fmt(srtt and srtt * 1e3, '.1f')} ms"
            )


def _git_head() -> str:
    """This checkout's commit (short), or "unknown" outside git."""
    p = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True
    )
    return p.stdout.strip() if p.returncode == 0 else "unknown"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=None, help="simulated seconds (default: 60)")
    ap.add_argument("--cases", default=",".join(CASES), help=f"comma list of {', '.join(CASES)}")
    ap.add_argument("--json", type=Path, default=None, help="write all results to this file")
    ap.add_argument("--repeat", type=int, default=1, help="runs per side; best wall time is shown")
    ap.add_argument(
        "--ns3-buffer",
        choices=["device", "qdisc"],
        default="device",
        help="where ns-3 keeps the bottleneck buffer (see ns3_scenarios._install_buffers)",
    )
    ap.add_argument(
        "--ns3-recovery", choices=["prr", "classic"], default="prr", help="ns-3 fast recovery"
    )
    ap.add_argument("--ns3-inprocess", action="store_true", help="run ns-3 in this process")
    ap.add_argument(
        "--series",
        action="store_true",
        help="keep time series of both sides in --json (ns-3 sampled at the scenario's interval)",
    )
    ap.add_argument("--skip-ns3", action="store_true")
    ap.add_argument("--skip-l4sim", action="store_true")
    args = ap.parse_args(argv)

    cases = chosen_cases(ap, args.cases, CASES, args.repeat)

    l4sim = _import_l4sim()
    rows = []
    for name in cases:
        sc = load_case(l4sim, name, args.duration)
        spec = ns3_spec_from_scenario(sc, buffer=args.ns3_buffer, recovery=args.ns3_recovery)
        if args.series:
            spec["sample_interval_s"] = sc.sample_interval / 1e9
        row: dict[str, Any] = {"case": name, "sim_s": spec["duration_s"], "ns3_spec": spec}
        print(f"[{name}] {sc.name}: {spec['n_flows']} x {spec['cca']}, ", end="", file=sys.stderr)
        print(
            f"{spec['bottleneck_rate_bps'] / 1e6:g} Mbps, {spec['duration_s']:g} s", file=sys.stderr
        )
        row["l4sim"], row["ns3"] = {}, {}
        if not args.skip_l4sim:
            try:
                row["l4sim"] = run_l4sim_case(l4sim, sc, args.repeat, args.series)
            except Exception as e:  # report and go on with ns-3
                row["l4sim"] = {"error": f"{type(e).__name__}: {e}"}
                print(f"  l4sim failed: {row['l4sim']['error']}", file=sys.stderr)
        if not args.skip_ns3:
            try:
                row["ns3"] = run_ns3_case(spec, args.repeat, args.ns3_inprocess)
            except Exception as e:  # report and go on with the next case
                row["ns3"] = {"error": f"{type(e).__name__}: {e}"}
                print(f"  ns-3 failed: {row['ns3']['error']}", file=sys.stderr)
        a, b = row["l4sim"], row["ns3"]
        if a.get("speed") and b.get("speed"):
            row["speed_ratio"] = a["speed"] / b["speed"]
        if a.get("goodput_bps") is not None and b.get("goodput_bps"):
            row["goodput_diff_pct"] = 100.0 * (a["goodput_bps"] / b["goodput_bps"] - 1.0)
        rows.append(row)

    print()
    print_table(rows)
    if args.json is not None:
        meta = {
            "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
            "l4sim_commit": _git_head(),
            "load_average": os.getloadavg()[0],
            "python": sys.version.split()[0],
            "machine": platform.machine(),
            "processor": platform.processor(),
            "cpus": os.cpu_count(),
            "l4sim_version": getattr(l4sim, "__version__", None),
            "ns3_version": _dist_version("ns3"),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"meta": meta, "cases": rows}, indent=1, default=str))
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
