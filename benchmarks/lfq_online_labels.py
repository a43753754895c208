"""What the LFQ online actor-critic's labels say, against the A/B truth (issue 11).

For ``--flows`` flows of the training distribution run with a policy's weights, fork at the
training's experiment time and run both b - 1 and b + 1 to the end (``agents.lfq.rollout``,
offline mode), so each flow has both rewards. Then:

- the offline label's drift E[label - b] / 1 packet = sign(r+ - r-), per CC and delay bin;
- the reward's window (fork to the flow's end) in round trips;
- a critic fitted on the first 80 % of the flows to the reward of one b +- 1 drawn at random,
  as the online trainer does (batches of 40, one step each, ``--passes`` over them), by the
  authors' rule (width 256, SGD 0.01) and by ours (width 256, Adam 1e-3), or ``--critic``
  (a trained critic file): on the other 20 %, its error and the online label's drift
  E[label - b] = (sign(r+ - V) - sign(r- - V)) / 2 (the expectation over the coin flip of
  ``rl.cc``'s online label), per CC and delay bin, and its correlation with the delay.

    python benchmarks/lfq_online_labels.py [--weights W] [--flows 10000] [--jobs 2]
"""

from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np
import torch

from l4sim.agents import lfq
from l4sim.executors import make_executor
from l4sim.experiments.lfq import INTERVAL, WIDTH, shipped_weights

BINS = (5.0, 10.0, 15.0, 20.0, 25.0)


def ab_pairs(weights: str, flows: int, jobs: int, seed: int) -> list[dict]:
    cfg = lfq.LfqConfig(alpha=10.0, width=WIDTH, interval=INTERVAL, online=False)
    seeds = np.random.default_rng(seed).integers(1, 2**31 - 1, size=flows)
    with make_executor(jobs=jobs) as ex:
        out = lfq._map(ex, lfq.rollout, [(cfg, weights, int(s)) for s in seeds])
    for r, s in zip(out, seeds, strict=True):
        g = np.random.default_rng(int(s))  # rollout's draws, in its order
        g.uniform(), g.uniform(), g.integers(2)
        duration = 10.0 + g.uniform(-2.5, 2.5)
        r["window_rtts"] = (duration - g.uniform(0.0, 0.5 * duration)) / (r["delay"] / 1e3)
    return out


def fit_critic(cfg: lfq.LfqConfig, x: torch.Tensor, y: torch.Tensor, passes: int) -> lfq.LfqNet:
    torch.manual_seed(0)
    critic, opt = lfq.make_critic(cfg)
    for _ in range(passes):
        for i in range(0, len(x) - 39, 40):
            lfq.critic_step(critic, opt, x[i : i + 40], y[i : i + 40])
    return critic


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default=str(shipped_weights("online")))
    ap.add_argument("--flows", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--passes", type=int, default=20)
    ap.add_argument("--critic", default=None, help="a trained critic (.critic.safetensors)")
    ap.add_argument("--seed", type=int, default=12345)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    res = ab_pairs(a.weights, a.flows, a.jobs, a.seed)
    d = np.array([r["delay"] for r in res])
    cca = np.array([r["cca"] for r in res])
    rp = np.array([r["rewards"][1] for r in res])
    rm = np.array([r["rewards"][0] for r in res])
    b = np.array([r["sizes"][0] + 1 for r in res])
    win = np.array([r["window_rtts"] for r in res])
    offline = np.sign(rp - rm)
    print(f"{len(res)} flows, policy {a.weights}")
    print(
        f"reward window (fork to end): {win.min():.0f} round trips at least, median "
        f"{np.median(win):.0f}; |r+ - r-| mean {np.mean(np.abs(rp - rm)):.4f}, reward spread "
        f"across flows (sd) {np.std((rp + rm) / 2):.3f}"
    )
    x = torch.tensor(np.array([r["x"] for r in res]), dtype=torch.float32)
    chosen = np.random.default_rng(0).integers(2, size=len(res))
    y = torch.tensor(np.where(chosen == 1, rp, rm), dtype=torch.float32)
    ntr = int(0.8 * len(res)) // 40 * 40
    test = np.arange(len(res)) >= ntr
    critics = {}
    if a.critic is not None:
        c = lfq.LfqNet(lfq.LfqConfig().critic_width)
        c.load_state_dict(lfq.load_file(a.critic))
        critics["trained critic"] = c
    else:
        authors = lfq.LfqConfig(critic_optimizer="sgd", critic_learning_rate=0.01)
        critics["authors (SGD 0.01)"] = fit_critic(authors, x[:ntr], y[:ntr], a.passes)
        critics["ours (Adam 1e-3)"] = fit_critic(lfq.LfqConfig(), x[:ntr], y[:ntr], a.passes)
    drifts = {}
    for name, c in critics.items():
        with torch.no_grad():
            v = c(x).squeeze(1).numpy()
        drifts[name] = (np.sign(rp - v) - np.sign(rm - v)) / 2, v - (rp + rm) / 2
        err = drifts[name][1][test]
        print(
            f"critic {name}: error sd {np.std(err):.3f} on held-out flows; labels carrying "
            f"the verdict {np.mean(drifts[name][0][test] != 0):.1%}"
        )
    head = "| CC | delay ms | flows | b | offline drift |"
    head += "".join(f" online drift, {n} | critic error sd |" for n in critics)
    print("\n" + head)
    print("|" + "---|" * (5 + 2 * len(critics)))
    for c in ("newreno", "bic"):
        for lo, hi in itertools.pairwise(BINS):
            m = test & (cca == c) & (d >= lo) & (d < hi)
            row = f"| {c} | {lo:g}-{hi:g} | {m.sum()} | {b[m].mean():.1f} |"
            row += f" {offline[m].mean():+.2f} |"
            for on, err in drifts.values():
                row += f" {on[m].mean():+.3f} | {np.std(err[m]):.3f} |"
            print(row)
    for c in ("newreno", "bic"):
        m = test & (cca == c)
        parts = [f"offline {np.corrcoef(offline[m], d[m])[0, 1]:+.2f}"]
        parts += [f"{n} {np.corrcoef(on[m], d[m])[0, 1]:+.2f}" for n, (on, _) in drifts.items()]
        print(f"{c}: corr(label drift, delay): " + ", ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
