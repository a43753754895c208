"""SCReAM v2's ramp-up and steady rate in the reference's own example logs.

    python benchmarks/scream_reference.py TRACE_DIR [--out FILE.csv]

TRACE_DIR holds ``trace-dualpi-50Mbps-25ms-l4s.txt`` and ``trace-dualpi-50Mbps-25ms-nol4s.txt``
from EricssonResearch/scream's ``examples/`` (commit c8f84c3dc920cb65f0c99126cec3fb7778b57777):
the BW test tool's detailed logs of one SCReAM v2 flow over a 50 Mbit/s, 25 ms DualPI2
bottleneck, with and without L4S. Each line is ``ScreamV2Tx``'s per-ACK log
(``getDetailedLogItemList``): time [s], queue delay [s], sRTT [s], CWND, bytes in flight, ...,
the target bitrate [bps] in the 18th column and the acked bitrate [bps] in the 14th.

Written (by default to ``python/l4sim/data/reference/scream_rampup.csv``): per log, the
start target, the steady target (its mean from 5 s to the end), the steady queue delay
(mean), and the time from the start until the target first reaches 90 % of the steady
target: the ramp-up time the simulator's step response is held to.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

LOGS = {"l4s": "trace-dualpi-50Mbps-25ms-l4s.txt", "classic": "trace-dualpi-50Mbps-25ms-nol4s.txt"}
HEADER = """\
# SCReAM v2's own logs (EricssonResearch/scream, commit c8f84c3dc920cb65f0c99126cec3fb7778b57777,
# examples/trace-dualpi-50Mbps-25ms-{l4s,nol4s}.txt): the BW test tool, one flow over a
# 50 Mbit/s, 25 ms RTT DualPI2 bottleneck, started at its initial rate. Derived with
# benchmarks/scream_reference.py: start and steady (mean from 5 s) target bitrate, mean queue
# delay from 5 s, and the time from the start until the target first reaches 90 % of steady.
"""


def summarise(path: Path) -> dict[str, float]:
    rows = [line.split(",") for line in path.read_text().splitlines() if line.strip()]
    t = [float(r[0]) for r in rows]
    qdelay = [float(r[1]) for r in rows]
    target = [float(r[17]) for r in rows]
    steady = statistics.fmean(x for x, s in zip(target, t, strict=True) if s >= 5.0)
    reach = next(s for x, s in zip(target, t, strict=True) if x >= 0.9 * steady)
    return {
        "capacity_mbps": 50.0,
        "rtt_ms": 25.0,
        "start_target_mbps": round(target[0] / 1e6, 3),
        "steady_target_mbps": round(steady / 1e6, 3),
        "steady_qdelay_ms": round(
            1e3 * statistics.fmean(q for q, s in zip(qdelay, t, strict=True) if s >= 5.0), 3
        ),
        "rampup_90_s": round(reach - t[0], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace_dir", type=Path)
    ap.add_argument(
        "--out", type=Path, default=Path("python/l4sim/data/reference/scream_rampup.csv")
    )
    args = ap.parse_args()
    lines = [HEADER.rstrip("\n")]
    for mode, name in LOGS.items():
        s = summarise(args.trace_dir / name)
        if len(lines) == 1:
            lines.append("mode," + ",".join(s))
        lines.append(mode + "," + ",".join(str(v) for v in s.values()))
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines[1:]))


if __name__ == "__main__":
    main()
