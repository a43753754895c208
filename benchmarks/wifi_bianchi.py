"""Wi-Fi saturation throughput against Bianchi's analytical model, and the AP's airtime
fairness (docs/links.md, Wi-Fi).

    python benchmarks/wifi_bianchi.py [--seconds 20] [--seeds 3] [--out PATH_STEM]

For N = 1, 2, 5, 10, 20 saturated stations (802.11ac 20 MHz MCS 7, 1500-byte packets, basic
access, DCF: DIFS, CW 15..1023, 7 attempts per frame), the simulator's throughput and
collision probability (mean over seeds) beside Bianchi's fixed point with the same
timings, as ``tests/test_wifi.py`` computes it (the model lives there, next to the check).
Then the AP's downlink to a VHT 80 MHz MCS 0 and an MCS 9 station with A-MPDU, airtime
fairness on and off. Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _model() -> Any:
    spec = importlib.util.spec_from_file_location("test_wifi", ROOT / "tests" / "test_wifi.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bianchi_rows(seconds: float, seeds: int) -> list[dict[str, Any]]:
    m = _model()
    rows = []
    for n in (1, 2, 5, 10, 20):
        model = m.bianchi(n)
        runs = [m.simulate(m.dcf_config(n, seconds, seed)) for seed in range(1, seeds + 1)]
        sim_bps = sum(r["throughput_bps"] for r in runs) / seeds
        sim_p = sum(r["p_collision"] for r in runs) / seeds
        rows.append(
            {
                "stations": n,
                "bianchi_mbps": model["throughput_bps"] / 1e6,
                "sim_mbps": sim_bps / 1e6,
                "error_pct": 100 * (sim_bps / model["throughput_bps"] - 1),
                "bianchi_p": model["p"],
                "sim_p": sim_p,
            }
        )
    return rows


def airtime_rows(seconds: float) -> list[dict[str, Any]]:
    m = _model()
    rows = []
    for fair in (True, False):
        config = {
            "wifi": {
                "standard": "ac",
                "width_mhz": 80,
                "airtime_fairness": fair,
                "stations": [{"mcs": 0}, {"mcs": 9}],
            },
            "uplink": False,
            "downlink": True,
            "duration_ns": int(seconds * 1e9),
        }
        r = m.simulate(config)
        total = sum(r["down_airtime_share"])
        rows.append(
            {
                "airtime_fairness": fair,
                "airtime_share_mcs0": r["down_airtime_share"][0] / total,
                "airtime_share_mcs9": r["down_airtime_share"][1] / total,
                "mbps_mcs0": r["down_bps"][0] / 1e6,
                "mbps_mcs9": r["down_bps"][1] / 1e6,
            }
        )
    return rows


def markdown(bianchi: list[dict[str, Any]], airtime: list[dict[str, Any]]) -> str:
    lines = [
        "| stations | Bianchi (Mbit/s) | simulated (Mbit/s) | error | Bianchi p | simulated p |",
        "|---|---|---|---|---|---|",
    ]
    for r in bianchi:
        lines.append(
            f"| {r['stations']} | {r['bianchi_mbps']:.2f} | {r['sim_mbps']:.2f} | "
            f"{r['error_pct']:+.2f} % | {r['bianchi_p']:.4f} | {r['sim_p']:.4f} |"
        )
    lines += [
        "",
        "| airtime fairness | airtime MCS 0 | airtime MCS 9 | Mbit/s MCS 0 | Mbit/s MCS 9 |",
        "|---|---|---|---|---|",
    ]
    for r in airtime:
        lines.append(
            f"| {'on' if r['airtime_fairness'] else 'off'} | {r['airtime_share_mcs0']:.3f} | "
            f"{r['airtime_share_mcs9']:.3f} | {r['mbps_mcs0']:.1f} | {r['mbps_mcs9']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="simulated seconds per run")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per station count")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/data/wifi_bianchi")
    args = ap.parse_args()
    bianchi = bianchi_rows(args.seconds, args.seeds)
    airtime = airtime_rows(args.seconds)
    settings = {"seconds": args.seconds, "seeds": args.seeds}
    data = {"settings": settings, "bianchi": bianchi, "airtime": airtime}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(data, indent=2) + "\n")
    table = markdown(bianchi, airtime)
    args.out.with_suffix(".md").write_text(table)
    print(table, end="")


if __name__ == "__main__":
    main()
