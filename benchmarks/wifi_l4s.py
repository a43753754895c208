"""L4S over the Wi-Fi link: ``scenarios/wifi_airtime.toml`` (two downloads, stations at MCS 1
and MCS 9 of an 802.11ac BSS) with each station's queue at the AP as mac80211 has it
(FQ-CoDel) and CUBIC, then with DualPI2 per station and Prague (docs/links.md, Wi-Fi).

    python benchmarks/wifi_l4s.py [--seconds 10] [--out PATH_STEM]

Per case and station: goodput, the AP queue's sojourn p99, ECN marks and drops, and the
station's share of the airtime. Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import json
import tomllib
from pathlib import Path
from typing import Any

import l4sim
from l4sim.scenario import Scenario

ROOT = Path(__file__).resolve().parent.parent
CASES = {
    "CUBIC, FQ-CoDel (mac80211)": ("cubic", None),
    "Prague, DualPI2 per station": ("prague", {"kind": "dualpi2"}),
}


def run_case(cca: str, qdisc: dict[str, Any] | None, seconds: float) -> list[dict[str, Any]]:
    data = tomllib.loads((ROOT / "scenarios" / "wifi_airtime.toml").read_text())
    data["duration"] = f"{seconds}s"
    data["flows"][0]["cca"] = cca
    if qdisc is not None:
        data["topology"]["wifi"]["qdisc"] = qdisc
    summary = l4sim.run(Scenario.parse(data)).summary
    queues = {q["link"]: q for q in summary["queues"]}
    rows = []
    for flow, station in zip(summary["flows"], summary["wifi"][0]["stations"], strict=True):
        q = queues[f"r1->{station['station']}"]
        rows.append(
            {
                "station": station["station"],
                "mcs": station["mcs"],
                "goodput_mbps": flow["goodput_bps"] / 1e6,
                "sojourn_p99_ms": (q["sojourn_p99_s"] or 0.0) * 1e3,
                "ecn_marks": q["ecn_marks"],
                "drops": q["drops"],
                "airtime_share": station["down_airtime_share"],
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="simulated seconds per run")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/data/wifi_l4s")
    args = ap.parse_args()
    cases = {name: run_case(cca, q, args.seconds) for name, (cca, q) in CASES.items()}
    lines = [
        "| case | station (MCS) | goodput (Mbit/s) | AP queue sojourn p99 (ms) "
        "| ECN marks | drops | airtime share |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, rows in cases.items():
        for r in rows:
            lines.append(
                f"| {name} | {r['station']} ({r['mcs']}) | {r['goodput_mbps']:.1f} | "
                f"{r['sojourn_p99_ms']:.1f} | {r['ecn_marks']} | {r['drops']} | "
                f"{r['airtime_share']:.3f} |"
            )
    table = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    data = {"settings": {"seconds": args.seconds}, "cases": cases}
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(table)
    print(table, end="")


if __name__ == "__main__":
    main()
