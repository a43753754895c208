"""The seed spread of ``l4sim reproduce macc-002 --quick``'s learned outcome (MA-CC, VDN):
the band tests/test_macc.py asserts comes from this measurement.

Trains the quick MA-CC (8 episodes of 4 s, a greedy validation every 2 episodes) on seeds
1..N (default 12) one after the other and prints per seed the greedy evaluation's
last-2-s throughput (kbit/s), its sum of windows (packets) and the selected episode, then
their mean, sample std, min and max.

    python benchmarks/macc_quick_spread.py [N]
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

from l4sim.experiments import macc as m


def main(n: int) -> None:
    thr = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, n + 1):
            case = m.Case("ma-cc", seed, quick=True)
            row, wall = m._run_case((case, str(Path(tmp) / case.name), m.QUICK_EPISODES))
            sel = json.loads((Path(tmp) / case.name / "curve.json").read_text())
            thr.append(row.steady_throughput_kbps)
            print(
                seed,
                round(row.steady_throughput_kbps),
                round(row.steady_cwnd_sum_pkts, 1),
                sel["selected_episode"],
                f"{wall:.2f}s",
                flush=True,
            )
    print(
        f"mean {statistics.fmean(thr):.0f} sd {statistics.stdev(thr):.0f} "
        f"min {min(thr):.0f} max {max(thr):.0f}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 12)
