"""MA-CC trained exactly as ``l4sim reproduce macc-002`` trains it, except that every action
lands 1 ns later (``action_delay="1ns"``): a perturbation that re-draws the training
(rewards differ in the 9th digit) without changing the network. The kept team is then
evaluated as the reproduction does (no delay, seed 10 000 + s). Two worker processes.

Prints per seed: last-10-s throughput kbit/s, MAD queue packets, training wall s and CPU s
(docs/reproductions/macc-002.md, "Same-nanosecond event order").

    python benchmarks/macc_nudge.py [OUT_DIR] [SEEDS]      # SEEDS: 1,2,3,4
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "out/macc-nudge")


def nudged_env() -> object:
    from l4sim.envs import MultiCCEnv
    from l4sim.experiments import macc as m

    return MultiCCEnv(
        m.scenario("ma-cc", m.EPISODE),
        tcp_flows=[0, 1, 2],
        aqm_links=["r0->r1", "r1->r0"],
        shared_reward=True,
        step_interval=m.STEP,
        tcp_reward_kwargs=m.R1,
        aqm_reward_kwargs=m.R2,
        action_delay="1ns",
    )


def one(seed: int) -> tuple[int, float, float, float, float]:
    from l4sim.agents import vdn
    from l4sim.experiments import macc as m

    t0 = time.process_time()
    cfg = vdn.VdnConfig(mixer="vdn", seed=seed, select_every=m.SELECT_EVERY)
    out = OUT / f"ma-cc-s{seed}"
    res = vdn.train(nudged_env, m.EPISODES, cfg, episode_stats=m._episode_stats)
    out.mkdir(parents=True, exist_ok=True)
    vdn.save(res, out / "policy.pt")
    curve = {"returns": res.returns, "validation": res.validation, "selected": res.selected}
    (out / "curve.json").write_text(json.dumps(curve))
    _, sim = vdn.evaluate(res.nets, cfg, m.make_env("ma-cc"), seed=10_000 + seed)
    last = statistics.fmean(res.returns[-10:])
    row, wall = m._row(m.Case("ma-cc", seed), m.EPISODES, res.steps, res.wall_s, sim, last)
    cpu = time.process_time() - t0
    return seed, row.steady_throughput_kbps, row.steady_mad_queue_pkts, wall, cpu


if __name__ == "__main__":
    seeds = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "1,2,3,4").split(",")]
    with ProcessPoolExecutor(2, mp_context=get_context("forkserver")) as ex:
        for seed, thr, madq, wall, cpu in ex.map(one, seeds):
            times = f"wall {wall:.0f} s, cpu {cpu:.0f} s"
            print(seed, round(thr), round(madq, 2), times, flush=True)
