"""SCReAM v2 in l4sim against its reference's records: the capacity step, a Prague flow
beside it, classic mode through a classic queue.

    python benchmarks/scream_step.py [--out benchmarks/data/scream_step]

Runs ``scenarios/media_scream_dualpi2.toml`` (one SCReAM v2 flow, L4S mode, alone through
DualPI2 at 25 ms RTT; capacity 100 -> 20 -> 100 Mbit/s at 10 s and 20 s) and two variants of
it at a constant 100 Mbit/s: one TCP Prague flow beside it from 5 s (the share after 15 s),
and SCReAM in classic mode (ECT(0)) through fq_codel and through PIE. Rates are the flows'
100 ms goodput samples (``flows.parquet``); queue delays the summary's per-packet sojourn
percentiles.

Per phase of the step: the settled rate (mean of the phase's last 3 s), its share of the
capacity, and the settling time (after the step, until the rate stays at or above 90 % of
the settled rate, 100 ms samples). The reference: ``python/l4sim/data/reference/
scream_rampup.csv`` (the reference's own 50 Mbit/s, 25 ms DualPI2 logs: 90 % of the steady
target 2.1 s after the start) and ``scream_test_record.csv`` (test-record.md, 2024-10-31,
Test 2: 78 Mbit/s alone and 60 Mbit/s beside one Prague flow, 100 Mbit/s, 25 ms).

Written: ``OUT.json`` (every number) and ``OUT.md`` (the tables docs/media.md shows).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tomllib
from pathlib import Path
from typing import Any

import polars as pl

import l4sim
from l4sim.metrics import settling_time

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "media_scream_dualpi2.toml"
REF = ROOT / "python" / "l4sim" / "data" / "reference"
#: (start, end, capacity Mbit/s) of the step scenario's phases.
PHASES = ((0.0, 10.0, 100.0), (10.0, 20.0, 20.0), (20.0, 30.0, 100.0))
SETTLED_S = 3.0
LEVEL = 0.9


def base() -> dict[str, Any]:
    with SCENARIO.open("rb") as fh:
        return tomllib.load(fh)


def constant(**change: Any) -> dict[str, Any]:
    """The step scenario at a constant 100 Mbit/s, 20 s, with ``change`` on the bottleneck."""
    d = base()
    del d["topology"]["bottleneck"]["schedule"]
    d["topology"]["bottleneck"].update(change)
    d["duration"] = "20s"
    return d


def rates(r: Any, flow: int) -> list[tuple[float, float]]:
    f = r.flows.filter(pl.col("flow") == flow).sort("time_s")
    return list(zip(f["time_s"].to_list(), (f["goodput_bps"] / 1e6).to_list(), strict=True))


def targets(r: Any, fps: float = 50.0) -> list[tuple[float, float]]:
    """The encoder's target (Mbit/s) at each frame: a frame of the noiseless video model is
    exactly its target's share of one frame interval."""
    f = r.frames.filter(pl.col("flow") == 0).sort("created_s")
    return list(zip(f["created_s"].to_list(), (f["bytes"] * 8 * fps / 1e6).to_list(), strict=True))


def first_reach(samples: list[tuple[float, float]], start: float, level: float) -> float:
    return next(t for t, v in samples if t > start and v >= level) - start


def mean_rate(samples: list[tuple[float, float]], start: float, end: float) -> float:
    return statistics.fmean(v for t, v in samples if start < t <= end)


def l_queue(r: Any) -> dict[str, Any]:
    return next(c for c in r.summary["queues"][0]["classes"] if c["qdisc"] == "L4S")


def step() -> dict[str, Any]:
    r = l4sim.run(SCENARIO)
    s = rates(r, 0)
    tg = targets(r)
    phases = []
    for start, end, cap in PHASES:
        settled = mean_rate(s, end - SETTLED_S, end)
        target = mean_rate(tg, end - SETTLED_S, end)
        phases.append(
            {
                "start_s": start,
                "capacity_mbps": cap,
                "settled_mbps": round(settled, 2),
                "share": round(settled / cap, 3),
                "settling_s": round(settling_time(s, start, end, LEVEL * settled), 2),
                "first_reach_s": round(first_reach(s, start, LEVEL * settled), 2),
                "settled_target_mbps": round(target, 2),
                "target_first_reach_s": round(first_reach(tg, start, LEVEL * target), 3),
                "peak_1s_mbps": round(
                    max(mean_rate(s, t, t + 1.0) for t in range(int(start), int(end))), 2
                ),
            }
        )
    lq = l_queue(r)
    fr = r.summary["flows"][0]["frames"]
    return {
        "phases": phases,
        "l_queue_p99_ms": round(1e3 * lq["sojourn_p99_s"], 3),
        "l_queue_drops": lq["drops"],
        "frame_delay_p99_ms": round(1e3 * fr["delay_p99_s"], 2),
        "frames_late": fr["late"],
        "frames_produced": fr["produced"],
    }


def coexistence() -> dict[str, Any]:
    d = constant()
    d["flows"].append({"kind": "tcp", "cca": "prague", "start": "5s"})
    r = l4sim.run(l4sim.Scenario.parse(d))
    scream, prague = (mean_rate(rates(r, i), 15.0, 20.0) for i in (0, 1))
    return {
        "scream_mbps": round(scream, 2),
        "prague_mbps": round(prague, 2),
        "scream_share": round(scream / (scream + prague), 3),
        "l_queue_p99_ms": round(1e3 * l_queue(r)["sojourn_p99_s"], 3),
        "frame_delay_p99_ms": round(1e3 * r.summary["flows"][0]["frames"]["delay_p99_s"], 2),
    }


def classic(qdisc: str) -> dict[str, Any]:
    d = constant(qdisc=qdisc)
    d["flows"][0]["cc"]["mode"] = "classic"
    d["flows"][0]["ecn"] = "ect0"
    r = l4sim.run(l4sim.Scenario.parse(d))
    q = r.summary["queues"][0]
    link = q["link"]
    steady = r.queues.filter(
        (pl.col("link") == link) & (pl.col("class") == "") & (pl.col("time_s") > 5.0)
    )["sojourn_s"]
    return {
        "qdisc": qdisc,
        "rate_mbps": round(mean_rate(rates(r, 0), 10.0, 20.0), 2),
        "sojourn_p50_ms": round(1e3 * q["sojourn_p50_s"], 3),
        "sojourn_p99_ms": round(1e3 * q["sojourn_p99_s"], 3),
        "steady_sojourn_mean_ms": round(1e3 * steady.mean(), 3),
        "steady_sojourn_max_ms": round(1e3 * steady.max(), 3),
        "drops": q["drops"],
        "qdelay_target_ms": 60.0,
    }


def log_case(mode: str) -> dict[str, Any]:
    """The reference's example logs' set-up: 50 Mbit/s, 25 ms, DualPI2, from the start rate;
    L4S mode (ECT(1), the L queue) or classic (Not-ECT, the classic queue). Rates are the
    encoder's target, as the logs give."""
    d = constant(rate="50Mbps")
    if mode == "classic":
        d["flows"][0]["cc"]["mode"] = "classic"
        d["flows"][0]["ecn"] = "not_ect"
    r = l4sim.run(l4sim.Scenario.parse(d))
    s = targets(r)
    steady = mean_rate(s, 5.0, 20.0)
    cls = "L4S" if mode == "l4s" else "Classic"
    q = next(c for c in r.summary["queues"][0]["classes"] if c["qdisc"] == cls)
    return {
        "mode": mode,
        "steady_mbps": round(steady, 2),
        "share": round(steady / 50.0, 3),
        "sojourn_mean_ms": round(1e3 * q["sojourn_mean_s"], 3),
        "rampup_90_s": round(first_reach(s, 0.0, LEVEL * steady), 3),
    }


def reference() -> dict[str, Any]:
    def rows(name: str) -> list[dict[str, str]]:
        lines = [x for x in (REF / name).read_text().splitlines() if not x.startswith("#")]
        head = lines[0].split(",")
        return [dict(zip(head, x.split(","), strict=True)) for x in lines[1:]]

    logs = {r["mode"]: r for r in rows("scream_rampup.csv")}
    ramp = logs["l4s"]
    rec = {r["rtt_ms"]: r for r in rows("scream_test_record.csv") if r["test"] == "2"}["25"]
    return {
        "rampup_90_s": float(ramp["rampup_90_s"]),
        "rampup_share": round(float(ramp["steady_target_mbps"]) / float(ramp["capacity_mbps"]), 3),
        "alone_mbps": float(rec["tcp0"]),
        "beside_one_prague_mbps": float(rec["tcp1"]),
        "logs": {m: {k: float(v) for k, v in r.items() if k != "mode"} for m, r in logs.items()},
    }


def markdown(out: dict[str, Any]) -> str:
    ref = out["reference"]
    lines = [
        "| phase | capacity (Mbit/s) | settled (Mbit/s) | share | first at 90 % (s) | "
        "settling time (s) | target first at 90 % (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p in out["step"]["phases"]:
        lines.append(
            f"| from {p['start_s']:g} s | {p['capacity_mbps']:g} | {p['settled_mbps']} | "
            f"{p['share']} | {p['first_reach_s']} | {p['settling_s']} | "
            f"{p['target_first_reach_s']} |"
        )
    st, co = out["step"], out["coexistence"]
    lines += [
        "",
        f"L-queue sojourn p99 over the whole run: {st['l_queue_p99_ms']} ms "
        f"({st['l_queue_drops']} drops, at the cut); frame delay p99 "
        f"{st['frame_delay_p99_ms']} ms; {st['frames_late']} of {st['frames_produced']} "
        "frames late (150 ms).",
        "",
        f"Reference (its own 50 Mbit/s, 25 ms DualPI2 log): 90 % of the steady target "
        f"{ref['rampup_90_s']} s after the start; steady share {ref['rampup_share']}. "
        f"Test record 2024-10-31 (100 Mbit/s, 25 ms): {ref['alone_mbps']:g} Mbit/s alone, "
        f"{ref['beside_one_prague_mbps']:g} Mbit/s beside one Prague flow.",
        "",
        f"Beside one TCP Prague flow (100 Mbit/s, mean of 15-20 s): SCReAM {co['scream_mbps']} "
        f"Mbit/s, Prague {co['prague_mbps']} Mbit/s (SCReAM's share {co['scream_share']}); "
        f"L-queue p99 {co['l_queue_p99_ms']} ms, frame delay p99 {co['frame_delay_p99_ms']} ms.",
    ]
    lines += [
        "",
        "The reference's example logs' set-up (50 Mbit/s, 25 ms, DualPI2, from the start "
        "rate), the reference's figures beside ours:",
        "",
        "| mode | steady (Mbit/s) ref / ours | share ref / ours | queue delay (ms) ref / ours "
        "| 90 % after (s) ref / ours |",
        "|---|---:|---:|---:|---:|",
    ]
    for c in out["logs"]:
        g = ref["logs"][c["mode"]]
        lines.append(
            f"| {c['mode']} | {g['steady_target_mbps']} / {c['steady_mbps']} | "
            f"{round(g['steady_target_mbps'] / g['capacity_mbps'], 3)} / {c['share']} | "
            f"{g['steady_qdelay_ms']} / {c['sojourn_mean_ms']} | {g['rampup_90_s']} / "
            f"{c['rampup_90_s']} |"
        )
    lines += [
        "",
        "Classic mode (ECT(0)), 100 Mbit/s, 25 ms, queue-delay target 60 ms; sojourn "
        "percentiles over all packets, steady mean / max over the 100 ms queue samples after "
        "5 s:",
        "",
        "| through | rate (Mbit/s) | sojourn p50 (ms) | p99 (ms) | steady mean (ms) | "
        "steady max (ms) | drops |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in out["classic"]:
        lines.append(
            f"| {c['qdisc']} | {c['rate_mbps']} | {c['sojourn_p50_ms']} | "
            f"{c['sojourn_p99_ms']} | {c['steady_sojourn_mean_ms']} | "
            f"{c['steady_sojourn_max_ms']} | {c['drops']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "data" / "scream_step")
    args = ap.parse_args()
    out = {
        "step": step(),
        "coexistence": coexistence(),
        "classic": [classic(q) for q in ("fq_codel", "pie", "fifo")],
        "logs": [log_case(m) for m in ("l4s", "classic")],
        "reference": reference(),
    }
    args.out.with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n")
    md = markdown(out)
    args.out.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
