"""What the trained MA-CC teams of a ``l4sim reproduce macc-002`` run do: one greedy episode
per team (the evaluation's, seed 10 000 + s), recording every agent's action and tcp_0's
Q values.

Prints per seed: the share of each TCP action (0: +1 segment, 1: -1 segment, 2: keep), the
AQM agents' action counts (0: p = 0, 1: p = 1), the sum of the three windows (segments) at
decisions 100, 200, 232, 250 and 300, and every 60 decisions tcp_0's Q(+1) - Q(keep) /
Q(keep) beside the window sum (docs/reproductions/macc-002.md, "Why the seeds differed").

    python benchmarks/macc_diagnose.py OUT_DIR [SEEDS]     # SEEDS: 1,2,3,4,5
"""

from __future__ import annotations

import sys
from collections import Counter

import torch

from l4sim.agents import vdn
from l4sim.experiments import macc as m


def diagnose(out: str, seed: int) -> None:
    nets, cfg = vdn.load_policy(f"{out}/ma-cc-s{seed}/policy.pt")
    env = m.make_env("ma-cc")
    obs = vdn._observe(cfg, env.reset(seed=10_000 + seed)[0])
    tcp: Counter[int] = Counter()
    aqm: Counter[int] = Counter()
    windows, gaps, k = {}, [], 0
    while env.agents:
        with torch.no_grad():
            q = nets["tcp"](torch.from_numpy(obs["tcp_0"][None]))[0].tolist()
        acts = vdn._greedy(nets, obs)
        for agent, a in acts.items():
            (tcp if agent.startswith("tcp") else aqm)[a] += 1
        obs = vdn._observe(cfg, env.step(acts)[0])
        k += 1
        w = sum(r.cwnd_pkts for agent, r in env.record.items() if agent.startswith("tcp"))
        if k in (100, 200, 232, 250, 300):
            windows[k] = w
        if k % 60 == 0:
            gaps.append(f"{w}:{q[0] - q[2]:+.3f}/{q[2]:.2f}")
    n = sum(tcp.values())
    share = {a: round(c / n, 2) for a, c in sorted(tcp.items())}
    print(seed, "tcp", share, "aqm", dict(sorted(aqm.items())), "windows", windows)
    print("   Q gap:", " ".join(gaps), flush=True)


if __name__ == "__main__":
    seeds = sys.argv[2] if len(sys.argv) > 2 else "1,2,3,4,5"
    for s in seeds.split(","):
        diagnose(sys.argv[1], int(s))
