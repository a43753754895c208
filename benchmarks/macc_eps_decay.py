"""MA-CC (paper 002, VDN) with a slower exploration decay than the paper's.

epsilon = 0.9 x 0.9999^|D| (1 % after ~45 000 transitions, i.e. the whole 150-episode
budget) instead of 0.9 x 0.995^|D| (1 % after ~900); everything else as ``l4sim reproduce
macc-002`` (60 s episodes, the same seeds and reward constants). Two worker processes.
Prints per seed: last-10-s throughput kbit/s, RTT ms, MAD cwnd bytes, MAD queue packets,
mean queue packets, sum of cwnd packets, whole-episode throughput kbit/s, training s.

    python benchmarks/macc_eps_decay.py [OUT_DIR]
"""

from __future__ import annotations

import json
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "out/macc-eps-decay")


def one(seed: int) -> dict:
    from l4sim.agents import vdn
    from l4sim.experiments import macc as m

    cfg = vdn.VdnConfig(seed=seed, eps_decay=0.9999)
    res = vdn.train(lambda: m.make_env("ma-cc"), m.EPISODES, cfg, episode_stats=m._episode_stats)
    vdn.save(res, OUT / f"ma-cc-s{seed}.pt")
    _, sim = vdn.evaluate(res.nets, cfg, m.make_env("ma-cc"), seed=10_000 + seed)
    last = statistics.fmean(res.returns[-10:])
    row = m._row(m.Case("ma-cc", seed), m.EPISODES, res.steps, res.wall_s, sim, last)
    d = asdict(row)
    d["curve"] = res.stats
    (OUT / f"ma-cc-s{seed}.json").write_text(json.dumps(d))
    return d


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    keys = [
        "steady_throughput_kbps",
        "steady_rtt_ms",
        "steady_mad_cwnd_bytes",
        "steady_mad_queue_pkts",
        "steady_queue_pkts",
        "steady_cwnd_sum_pkts",
        "throughput_kbps",
        "train_wall_s",
    ]
    with ProcessPoolExecutor(2) as ex:
        for d in ex.map(one, [1, 2, 3]):
            print(d["seed"], *(round(d[k], 1) for k in keys), flush=True)
