"""The seed spread of a3c-004's ``--quick`` training (issue 36, item 7): the band that
``tests/test_a3c.py::test_quick_training_follows_its_reward`` asserts comes from here.

For each training seed, the quick training of the paper's ``delay`` reward and of the
utility reward at delay weight 0.03 (``l4sim.experiments.a3c_l4s.training``: 2 workers in
deterministic rounds, 12 episodes x 50 decisions of 4 tupdates), then the deployed actor's
mean p' over the grid of ``policy.png`` (queue delay 0-100 ms, a full 10 Mbit/s link) and
its change from the untrained actor of the same seed. Prints one row per seed and the
min / max / mean over seeds.

Usage: ``PYTHONPATH=python python benchmarks/a3c_quick_spread.py [--seeds 10]``
(about 1.5 s of CPU per seed and reward on an idle core).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

import numpy as np
import torch


def grid_states() -> np.ndarray:
    """The states of ``policy.png``: queue delay 0-100 ms, a full 10 Mbit/s link."""
    delays = np.linspace(0.0, 1.0, 51)
    s = np.zeros((len(delays), 12), np.float32)
    s[:, 2] = s[:, 3] = delays
    s[:, 6] = s[:, 7] = 1.0
    return s


def mean_p(actor: torch.nn.Module, max_prob: float = 0.5) -> float:
    from l4sim.agents.a3c import deterministic_action

    return float(np.mean(deterministic_action(actor, grid_states(), max_prob)))


def quick_shift(variant: str, seed: int, out: str) -> tuple[float, float]:
    """(mean p' of the untrained actor, of the trained one) for one quick training."""
    from l4sim.agents.a3c import Actor, train
    from l4sim.experiments.a3c_l4s.training import Training, config

    cfg = config(Training(variant, seed, out, quick=True))
    torch.manual_seed(cfg.seed)  # train() draws the initial actor first from this seed
    before = mean_p(Actor(), cfg.max_prob)
    res = train(cfg)
    return before, mean_p(res.actor, cfg.max_prob)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=10)
    args = ap.parse_args()
    rows: dict[str, list[float]] = {"delay": [], "utility": []}
    print("| seed | delay: p' before -> after | utility: p' before -> after |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, args.seeds + 1):
            cells = []
            for v in rows:
                b, a = quick_shift(v, seed, tmp)
                rows[v].append(a - b)
                cells.append(f"{b:.4f} -> {a:.4f} ({a - b:+.4f})")
            print(f"| {seed} | {cells[0]} | {cells[1]} |", flush=True)
    for v, d in rows.items():
        print(
            f"{v}: shift of mean p' min {min(d):+.4f} max {max(d):+.4f} "
            f"mean {statistics.fmean(d):+.4f} over {len(d)} seeds"
        )


if __name__ == "__main__":
    main()
