"""LFQ's named training recipes (``l4sim train lfq --recipe NAME``): which models, how wide,
how many flows, in which order. Torch-free, so that the reproduction and the CLI can list
them without PyTorch; :func:`l4sim.agents.lfq.train_recipe` runs one.

A recipe trains the three models of the LFQ paper one after the other, each from a seed derived
from the recipe's seed (``seed + 100 * index``): ``offline-small`` (A/B forks, the paper's
alpha = 0.01, section V-A), ``offline-large`` (alpha = 10, section V-B) and ``online``
(actor-critic, alpha = 10, section VI) started from the ``offline-large`` weights of the
same run — the paper's own remedy for online learning's slow convergence (section IX: "pre-
train a model using offline learning and then refine this pretrained model with online
learning") — with a fresh critic that learns alone for ``warmup`` flows first.

Every count is in flows, never in wall time, so the same recipe and seed give the same
weights byte for byte (the trainer pins PyTorch to one thread and writes the safetensors
header in a fixed order).
"""

from __future__ import annotations

from dataclasses import dataclass

from l4sim.agents.lfq_converge import Convergence

__all__ = ["MODELS", "RECIPES", "Recipe"]

#: Model -> (alpha, online) (LFQ sections V-A, V-B, VI-A; ``rl.cc`` ``alpha``).
MODELS: dict[str, tuple[float, bool]] = {
    "offline-small": (0.01, False),
    "offline-large": (10.0, False),
    "online": (10.0, True),
}

#: Which model's weights a model starts from (the rest start from PyTorch's initialisation).
INIT_FROM: dict[str, str] = {"online": "offline-large"}


@dataclass(frozen=True)
class Recipe:
    """How one recipe trains each model (every other hyper-parameter: ``LfqConfig``'s
    defaults, the authors')."""

    name: str
    width: int
    """Hidden width of the actor (``rl-net.cc`` ``WIDTH`` = 256)."""
    offline_flows: int
    """A/B rollouts of each offline model."""
    online_flows: int
    """Flows of the online model, its critic warm-up included."""
    warmup: int
    """Online: the first flows train only the critic (``LfqConfig.critic_warmup_flows``)."""
    snapshot_every: int
    """Keep the weights every this many flows (``snapshots/``; the learning curves)."""
    duration_s: float = 10.0
    offline_batch: int = 20
    online_batch: int = 40
    critic_width: int = 256
    converge: Convergence | None = None
    """Online: stop once the learning curve has converged by this rule
    (:mod:`l4sim.agents.lfq_converge`); ``online_flows`` is then the hard cap."""
    checkpoint_every: int = 200
    """``l4sim train lfq``'s default ``--checkpoint-every`` (flows) for this recipe."""
    help: str = ""

    def flows(self, model: str) -> int:
        return self.online_flows if MODELS[model][1] else self.offline_flows


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "paper",
            width=256,
            offline_flows=16_000,
            online_flows=12_000,
            warmup=4_000,
            snapshot_every=2_000,
            help="the paper's 3 x 256 network; 16 000 flows per offline model (the paper: "
            "~250 000), 12 000 online; the shipped default weights",
        ),
        Recipe(
            "paper-full",
            width=256,
            offline_flows=250_000,
            online_flows=1_000_000,
            warmup=10_000,
            snapshot_every=25_000,
            converge=Convergence(window=25_000, tolerance=0.03, corr_tolerance=0.05, patience=3),
            checkpoint_every=2_000,
            help="the paper's budget: 3 x 256, 250 000 flows per offline model (LFQ section "
            "V-A: stable after ~250 000), online until its curve converges (25 000-flow "
            "windows, 3 in a row within 3 % / 0.05; cap 1 000 000 flows); CPU-hours",
        ),
        Recipe(
            "fast",
            width=64,
            offline_flows=8_000,
            online_flows=8_000,
            warmup=2_000,
            snapshot_every=2_000,
            help="3 x 64 network (cheaper per decision), 8 000 flows per model; the "
            "shipped fast weights (l4sim/data/lfq/fast)",
        ),
        Recipe(
            "tiny",
            width=16,
            offline_flows=8,
            online_flows=8,
            warmup=4,
            snapshot_every=4,
            duration_s=2.0,
            offline_batch=4,
            online_batch=4,
            critic_width=16,
            help="8 flows per model, 2 s flows, width 16: a few seconds, for tests",
        ),
    )
}
