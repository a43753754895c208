"""a3c-004's training runs (:mod:`l4sim.experiments.a3c_l4s`): one per variant (a reward,
and for the utility reward a delay weight) and training seed, each a deterministic A3C run
(lock-step rounds, :func:`l4sim.agents.a3c.train`) that an executor can run beside the
others; the training table (first and last ten episodes, rising or not) and throughput.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The utility reward's delay weight of the main table's ``a3c-utility`` rows: 10 ms of
#: queue cost 3 % of the link. benchmarks/a3c_diagnose.py's landscape puts the optimum of a
#: constant p' near PI's point at this weight only (p' 0.12: 96.6 % at 11.8 ms; at 0.1 the
#: optimum is 94 % at 5.9 ms).
WEIGHT = 0.03
#: The front's delay weights (utility reward): from "1 ms of queue costs a tenth of the
#: link" (optimum p' 0.3: 84 % at 1.6 ms) to WEIGHT; the paper's ``delay`` reward is the
#: front's far end (all delay, optimum p' at its bound).
FRONT_WEIGHTS = (1.0, 0.1, 0.05, 0.03)
QUICK_FRONT_WEIGHTS = (1.0, 0.03)
#: Episodes per worker (100 decisions of 4 tupdates each: 6.4 s) of a full and a quick run.
EPISODES = 250
QUICK_EPISODES = 12
QUICK_STEPS = 50
#: Held-out episodes scoring each policy before and after training (quick: 2).
HELD_OUT = 10


#: The suffix of a variant trained with an incremental action (``utility-w0.05-i``,
#: benchmarks/a3c_incremental.py sets its A3cConfig.delta_prob) and of one whose action sets
#: PI's target (``-t``, A3cConfig.pi_target_ms); their reward is the base's.
INCREMENTAL = "-i"
PI_TARGET = "-t"
#: The range of PI's target a ``-t`` actor sets (A3cConfig.pi_target_ms): around DualPI2's
#: 15 ms, from a near-empty queue to several RTTs of the training traffic.
PI_TARGET_RANGE_MS = (1.0, 40.0)


def variant(weight: float) -> str:
    """The variant name of a utility weight: ``utility`` at :data:`WEIGHT`, else
    ``utility-w<weight>``."""
    return "utility" if weight == WEIGHT else f"utility-w{weight:g}"


def variant_reward(name: str) -> tuple[str, float]:
    """(reward, delay weight) of a variant name (an ``-i`` or ``-t`` one's too)."""
    name = name.removesuffix(INCREMENTAL).removesuffix(PI_TARGET)
    if name == "delay":
        return "delay", 1.0
    if name == "utility":
        return "utility", WEIGHT
    return "utility", float(name.removeprefix("utility-w"))


@dataclass(frozen=True)
class Training:
    """One training run: a variant, a seed, where its files go."""

    variant: str
    seed: int
    out: str
    quick: bool = False
    paper: bool = False
    workers: int = 2
    sync: str = "rounds"

    @property
    def name(self) -> str:
        return f"train-{self.variant}-s{self.seed}"

    @property
    def dir(self) -> Path:
        return Path(self.out) / "train" / f"{self.variant}-s{self.seed}"


@dataclass
class Trained:
    """What a training run leaves besides its files (picklable: no networks)."""

    variant: str
    seed: int
    workers: int
    sync: str
    decisions: int
    env_steps: int
    """16 ms intervals simulated under the agent (decisions x action_repeat)."""
    wall_s: float
    #: (worker, episode, mean reward per tupdate), in completion order.
    curve: list[tuple[int, int, float]] = field(default_factory=list)
    #: Reward per tupdate of the deployed (mean) action of the untrained and the trained
    #: actor on the same held-out episodes (:func:`held_out`).
    held_out: tuple[float, float] | None = None

    @property
    def env_steps_per_s(self) -> float:
        return self.env_steps / max(self.wall_s, 1e-9)

    def by_worker(self) -> dict[int, list[float]]:
        out: dict[int, list[float]] = {}
        for w, _e, r in self.curve:
            out.setdefault(w, []).append(r)
        return out

    def per_episode(self) -> list[float]:
        """Reward per tupdate of episode e, averaged over the workers."""
        ws = list(self.by_worker().values())
        return [statistics.fmean(rs[e] for rs in ws) for e in range(min(map(len, ws)))]

    @property
    def first10(self) -> float:
        return statistics.fmean(r for _w, _e, r in self.curve[:10])

    @property
    def last10(self) -> float:
        return statistics.fmean(r for _w, _e, r in self.curve[-10:])


def config(t: Training) -> Any:
    """The :class:`~l4sim.agents.a3c.A3cConfig` of a training run: the four fixes
    (the defaults) or, with ``paper``, the paper's algorithm and budget (100 x 100)."""
    from l4sim.agents.a3c import A3cConfig

    reward, weight = variant_reward(t.variant)
    episodes, steps = (QUICK_EPISODES, QUICK_STEPS) if t.quick else (EPISODES, 100)
    if t.paper:
        episodes, steps = (3, 20) if t.quick else (100, 100)
    make = A3cConfig.paper if t.paper else A3cConfig
    return make(
        workers=t.workers,
        episodes=episodes,
        steps=steps,
        reward=reward,
        delay_weight=weight,
        seed=t.seed,
        sync=t.sync,
        pi_target_ms=PI_TARGET_RANGE_MS if t.variant.endswith(PI_TARGET) else None,
    )


def run_training(t: Training) -> Trained:
    """Train one policy; write ``policy.safetensors``, ``checkpoint.safetensors``,
    ``episodes.csv`` (each episode's reward), ``timing.csv`` (their wall times) and
    TensorBoard scalars under ``<out>/tb/<variant>-s<seed>``."""
    from l4sim.agents.a3c import train

    cfg = config(t)
    d = t.dir
    res = train(cfg, d, log_dir=Path(t.out) / "tb" / d.name)
    with open(d / "episodes.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(
            [("worker", "episode", "reward_per_step")] + [c[:3] for c in res.curve]
        )
    with open(d / "timing.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(
            [("worker", "episode", "wall_s")] + [(c[0], c[1], c[3]) for c in res.curve]
        )
    return Trained(
        t.variant,
        t.seed,
        cfg.workers,
        cfg.sync,
        res.steps,
        res.steps * cfg.action_repeat,
        res.wall_s,
        [(w, e, r) for w, e, r, _t in res.curve],
    )


def held_out(t: Training) -> tuple[float, float]:
    """(untrained, trained) reward per tupdate of the deployed mean action on the same
    :data:`HELD_OUT` held-out episodes (:func:`l4sim.agents.a3c.evaluate`): whether
    training raised the reward, without the traffic's episode-to-episode spread."""
    import torch

    from l4sim.agents.a3c import Actor, evaluate, load_checkpoint

    cfg = config(t)
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)  # train() draws its initial actor first from the seed
    untrained = Actor()
    trained, _critic = load_checkpoint(t.dir / "checkpoint.safetensors")
    n = 2 if t.quick else HELD_OUT
    return evaluate(untrained, cfg, n), evaluate(trained, cfg, n)


def training_rows(trained: list[Trained]) -> list[dict[str, Any]]:
    """Per trained policy: the first and last 10 episodes' mean reward (completion order)
    and whether it rose."""
    return [
        {
            "variant": t.variant,
            "seed": t.seed,
            "workers": t.workers,
            "sync": t.sync,
            "decisions": t.decisions,
            "env_steps": t.env_steps,
            "first10_reward": t.first10,
            "last10_reward": t.last10,
            "rising": t.last10 > t.first10,
            "held_out_untrained": None if t.held_out is None else t.held_out[0],
            "held_out_trained": None if t.held_out is None else t.held_out[1],
        }
        for t in trained
    ]


def rising_counts(trained: list[Trained]) -> dict[str, tuple[int, int, int]]:
    """Variant -> (seeds whose last-10 mean beats their first-10 mean, seeds whose trained
    actor beats its untrained one on the held-out episodes, seeds)."""
    out: dict[str, tuple[int, int, int]] = {}
    for t in trained:
        k, h, n = out.get(t.variant, (0, 0, 0))
        better = t.held_out is not None and t.held_out[1] > t.held_out[0]
        out[t.variant] = (k + (t.last10 > t.first10), h + better, n + 1)
    return out


def training_table(trained: list[Trained]) -> str:
    lines = [
        "| variant | seed | workers | updates | env steps | first-10 mean reward "
        "| last-10 mean reward | rising | held-out: untrained | held-out: trained |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in training_rows(trained):
        h0, h1 = t["held_out_untrained"], t["held_out_trained"]
        lines.append(
            f"| {t['variant']} | {t['seed']} | {t['workers']} | {t['sync']} | {t['env_steps']} "
            f"| {t['first10_reward']:.3f} | {t['last10_reward']:.3f} "
            f"| {'yes' if t['rising'] else 'no'} "
            f"| {'-' if h0 is None else f'{h0:.3f}'} | {'-' if h1 is None else f'{h1:.3f}'} |"
        )
    lines += [
        "",
        "| variant | rising (last-10 > first-10) | trained > untrained (held-out) |",
        "|---|---|---|",
    ]
    lines += [
        f"| {v} | {k} of {n} | {h} of {n} |" for v, (k, h, n) in rising_counts(trained).items()
    ]
    return "\n".join(lines) + "\n"


def timing_rows(trained: list[Trained]) -> list[dict[str, Any]]:
    return [
        {
            "variant": t.variant,
            "seed": t.seed,
            "workers": t.workers,
            "sync": t.sync,
            "env_steps": t.env_steps,
            "wall_s": t.wall_s,
            "env_steps_per_s": t.env_steps_per_s,
        }
        for t in trained
    ]
