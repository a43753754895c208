"""A3C-L4S's model and its files (see :mod:`l4sim.agents.a3c` for the algorithm and its
sources): the Table-1 state (:data:`FEATURES`, :func:`raw_state`, :func:`norm_scale`), the
configuration, the actor and critic networks, the reward, the action mapping, and the
safetensors files a ``dualpi2`` qdisc's a3c ``policy`` loads. Imported by the worker
(:mod:`l4sim.agents.a3c.worker`), the log replay (:mod:`l4sim.agents.a3c.logs`), the Ray
runner and the trainer; it imports none of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from l4sim.envs import rewards as _rewards
from l4sim.envs.features import QueueStep

FEATURES = (
    "burst_allowance",
    "drop_prob",
    "current_qdelay",
    "qdelay_old",
    "accu_prob",
    "measurement_start",
    "tot_pkts",
    "tot_bytes",
    "length",
    "len_bytes",
    "drops",
    "ecn",
)
STATE_DIM = len(FEATURES)
#: Packet size for packet counts derived from bytes (l4sim's TCP segments on the wire).
PKT_BYTES = 1500.0
#: The authors' ``std_bound`` (notebook, ``Agent.__init__``).
STD_BOUND = (1e-2, 1.0)


@dataclass
class A3cConfig:
    """Every hyper-parameter of :func:`train`: the paper's where it gives one, except the
    four fixes benchmarks/a3c_diagnose.py found (``bootstrap_truncation``, ``log_prob_of_clipped``,
    ``action_repeat`` = 4, ``prob_in_state`` = False); :meth:`paper` undoes them."""

    workers: int = 4
    """Asynchronous workers (paper: 4)."""
    episodes: int = 100
    """Episodes per worker (paper: 100)."""
    steps: int = 100
    """Actions per episode (paper: 100)."""
    gamma: float = 0.99
    update_interval: int = 5
    """Steps between global updates (``t_max``, paper: 5)."""
    actor_lr: float = 5e-4
    critic_lr: float = 1e-3
    entropy: float = 0.01
    max_prob: float = 0.5
    """Upper bound of p' (L4S_MAX_PROB): with k = 2, p_CL = k p' reaches 1 at 0.5."""
    tupdate_s: float = 0.016
    """Decision interval = DualPI2's tupdate (Linux default 16 ms)."""
    reward: str = "delay"
    """``"delay"`` (the paper: minus the queue delay in ms) or ``"utility"`` (its future
    work: utilisation minus delay and loss penalties, :func:`utility_reward`)."""
    delay_weight: float = 1.0
    """Utility reward: weight of queue delay / 10 ms."""
    loss_weight: float = 10.0
    """Utility reward: weight of the fraction of packets dropped."""
    rate_max_bps: float = 10e6
    """Normalisation bound of rates (the paper's fastest link)."""
    qdelay_max_s: float = 0.1
    """Normalisation bound of queue delays and backlogs (in time at rate_max)."""
    rates_mbps: tuple[float, float] = (1.0, 10.0)
    """Training traffic: bottleneck rate U(lo, hi) per episode."""
    delays_ms: tuple[float, float] = (10.0, 30.0)
    flows: tuple[int, int] = (1, 4)
    ccas: tuple[str, ...] = ("prague", "newreno")
    warmup_s: float = 1.0
    """Simulated time under the PI controller before the agent takes over."""
    seed: int = 1
    mode: str = "online"
    """``"online"`` (the agent in the simulation's loop) or ``"offline"`` (replay logs)."""
    logs: tuple[str, ...] = ()
    """Offline mode: Table-1 log files (CSV or Parquet)."""
    ray: str | None = None
    """Run the workers as Ray tasks (``"local"`` or an address) instead of processes."""
    sync: str = "hogwild"
    """How the workers update the global networks: ``"hogwild"`` (asynchronously, from
    processes sharing the weights: fast, not reproducible for ``workers`` > 1) or
    ``"rounds"`` (deterministic: in lock-step rounds, every worker's gradients applied in
    worker order; the same seed gives bit-identical weights)."""
    # -- fixes found by benchmarks/a3c_diagnose.py; A3cConfig.paper() undoes them
    bootstrap_truncation: bool = True
    """Bootstrap the n-step target from V(s_T) at an episode's end (paper/authors: False,
    the end is terminal). The end is a time limit of a continuing task whose state has no
    clock, so treating it as terminal biases V and the advantage (Pardo et al. 2018, "Time
    limits in reinforcement learning")."""
    log_prob_of_clipped: bool = False
    """Score log pi of the clipped action (authors: True). The clipped value is not the
    sample, and at the bound its density is wrong (a point mass in truth): the gradient
    pushes mu past the bound without limit. False: log pi of the unclipped sample, only the
    applied p' is clipped (the score-function estimator stays unbiased)."""
    action_repeat: int = 4
    """tupdates per decision in training (paper: 1). A mark costs a NewReno flow seconds
    later; one 16 ms action moves the mean marking by 1/100 of an episode, so its credit
    drowns in the noise of the others. Holding an action for a few RTTs makes each decision
    matter and stretches the horizon (gamma per decision). Deployment still acts every
    tupdate with the mean action."""
    prob_in_state: bool = False
    """Keep Table 1's ``drop_prob`` (p') and ``accu_prob`` (k p') in the state (paper:
    True). In training they carry the previous *sampled* action, so the critic's bootstrap
    V(s_t+n) and the actor see the exploration noise itself; measured on the fixed
    scenario (benchmarks/a3c_diagnose.py): with them 4 of 5 seeds drift to p' = 0.5, without
    them 4 of 5 rise. False zeroes their scale (in the weights file too: the core agrees)."""
    mean_prob_in_state: bool = False
    """Put back Table 1's ``drop_prob`` / ``accu_prob``, but in training fill them with the
    previous decision's *mean* p' (what the deployed actor set, and what the core reads)
    instead of the sampled one: an integrator's input without the exploration noise
    (a memoryless actor is a proportional controller). Online mode only."""
    delta_prob: float = 0.0
    """> 0: the action is a *change* of p' (an integral controller: a memoryless
    actor mapping the queue to p' is a proportional controller, where DualPI2's PI
    integrates): each decision moves the current p' by up to ``delta_prob`` x
    ``action_repeat`` (deployed: ``delta_prob`` per tupdate), clamped to [0, max_prob], and
    p' is in the state. In training the integrator (and the state) holds the mean actions;
    each decision's exploration noise perturbs that decision's p' only. 0 (paper): the
    action sets p'. Online mode only. Measured (benchmarks/a3c_incremental.py): no policy
    reaches PI's point; they drift to a bound."""
    pi_target_ms: tuple[float, float] | None = None
    """(lo, hi) ms: the action sets DualPI2's PI *target delay* in [lo, hi] (linear in the
    unit action) and the PI law sets p' (the actor tunes the integral controller
    instead of replacing it; a learned-AQM-tuning design). The weights file carries
    ``pi_target`` (s), so the core does the same every tupdate. None (paper): the action
    sets p'. Online mode only; not with ``delta_prob``."""
    squash: bool = False
    """Sample z ~ N(u, std) before the tanh and apply tanh(z) (a squashed Gaussian as in
    SAC, Haarnoja et al. 2018) instead of N(tanh(u), std) clipped (paper: False). The
    deployed action tanh(u) and the weights file are the same; the score of z has no
    tanh' factor, so a mean at the bound is not absorbing. (The tanh's log-det term does
    not depend on the weights for a given z and drops out of the policy gradient.)"""

    @classmethod
    def paper(cls, **kw: object) -> A3cConfig:
        """The paper's (and the authors' notebook's) algorithm, without the four fixes above."""
        base: dict[str, object] = {
            "bootstrap_truncation": False,
            "log_prob_of_clipped": True,
            "action_repeat": 1,
            "prob_in_state": True,
            "squash": False,
        }
        return cls(**(base | kw))  # type: ignore[arg-type]


class Actor(nn.Module):
    """Paper Algorithm 1 / the authors' ``Actor.nn_model``: 12 -> 32 -> 32 -> (mu, std)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(STATE_DIM, 32)
        self.fc2 = nn.Linear(32, 32)
        self.mu = nn.Linear(32, 1)
        self.sigma = nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        u, std = self.pre_tanh(x)
        return torch.tanh(u), std

    def pre_tanh(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The Gaussian before the tanh (``A3cConfig.squash``): its mean and std."""
        h = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        std = nn.functional.softplus(self.sigma(h)).clamp(*STD_BOUND)
        return self.mu(h), std


class Critic(nn.Module):
    """Paper Algorithm 2: 12 -> 32 -> 32 -> 16 -> 1."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(STATE_DIM, 32),
            nn.ReLU(),
            nn.Linear(32, 32),
            nn.ReLU(),
            nn.Linear(32, 16),
            nn.ReLU(),
            nn.Linear(16, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


# -- state and reward ----------------------------------------------------------------------


def norm_scale(cfg: A3cConfig) -> np.ndarray:
    """Per-feature factor taking the raw value of :func:`raw_state` to [0, 1] (then
    clipped): fixed bounds in place of the authors' per-log min-max."""
    cap_bytes = cfg.rate_max_bps * cfg.tupdate_s / 8.0  # bytes the fastest link sends per step
    buf_bytes = cfg.rate_max_bps * cfg.qdelay_max_s / 8.0
    p_scale = 1.0 if cfg.prob_in_state or cfg.mean_prob_in_state or cfg.delta_prob > 0 else 0.0
    return np.array(
        [
            0.0,  # burst_allowance: none in DualPI2
            p_scale / cfg.max_prob,  # drop_prob = p'
            1.0 / cfg.qdelay_max_s,  # current_qdelay, s
            1.0 / cfg.qdelay_max_s,  # qdelay_old, s
            p_scale,  # accu_prob = min(k p', 1)
            0.0,  # measurement_start: a time stamp, meaningless online
            PKT_BYTES / cap_bytes,  # tot_pkts
            1.0 / cap_bytes,  # tot_bytes
            PKT_BYTES / buf_bytes,  # length, packets
            1.0 / buf_bytes,  # len_bytes
            PKT_BYTES / cap_bytes,  # drops
            PKT_BYTES / cap_bytes,  # ecn (CE marks)
        ],
        np.float64,
    )


def raw_state(
    prob: float,
    qdelay_s: float,
    qdelay_old_s: float,
    coupling: float,
    dequeued_bytes: float,
    backlog_pkts: float,
    backlog_bytes: float,
    drops: float,
    marks: float,
) -> np.ndarray:
    """Table 1's columns for one interval of DualPI2 (raw units; Rust computes the same in
    ``policy/a3c.rs``): p', head delay now and one interval ago, p_CL, packets (in
    1500-byte units) and bytes dequeued, backlog in packets and bytes, drops, CE marks."""
    return np.array(
        [
            0.0,
            prob,
            qdelay_s,
            qdelay_old_s,
            min(coupling * prob, 1.0),
            0.0,
            dequeued_bytes / PKT_BYTES,
            dequeued_bytes,
            backlog_pkts,
            backlog_bytes,
            drops,
            marks,
        ],
        np.float64,
    )


def normalise(raw: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return np.clip(raw * scale, 0.0, 1.0).astype(np.float32)


#: Rewards by the trainer's name: the paper's (minus the queue delay in ms) and its future
#: work's utility of delay, throughput and loss (:mod:`l4sim.envs.rewards`).
REWARDS: dict[str, str] = {"delay": "a3c_l4s", "utility": "a3c_utility"}


def make_reward(cfg: A3cConfig) -> Callable[[QueueStep], float]:
    """The configured reward as a function of one interval's :class:`QueueStep`."""
    kw = {"delay_weight": cfg.delay_weight, "loss_weight": cfg.loss_weight}
    return _rewards.get(REWARDS[cfg.reward], "queue", kw if cfg.reward == "utility" else None)


def to_prob(a: float, max_prob: float) -> float:
    """Unit action in [-1, 1] -> p' in [0, max_prob]."""
    return max_prob * (min(max(a, -1.0), 1.0) + 1.0) / 2.0


def action_value(a: float, current: float, cfg: A3cConfig) -> float:
    """What a unit action ``a`` in [-1, 1] sets: p' (:func:`to_prob`), or with
    ``cfg.delta_prob`` the current p' moved by a x delta_prob per tupdate of the decision,
    or with ``cfg.pi_target_ms`` the PI's target delay in seconds."""
    a = min(max(a, -1.0), 1.0)
    if cfg.pi_target_ms is not None:
        lo, hi = cfg.pi_target_ms
        return (lo + (hi - lo) * (a + 1.0) / 2.0) / 1e3
    if cfg.delta_prob > 0:
        step = cfg.delta_prob * cfg.action_repeat
        return min(max(current + step * a, 0.0), cfg.max_prob)
    return to_prob(a, cfg.max_prob)


def deterministic_action(actor: Actor, state: np.ndarray, max_prob: float) -> np.ndarray:
    """The deployed policy: p' = max_prob (mu + 1) / 2, mu = tanh(...) the Gaussian's mean."""
    with torch.no_grad():
        mu, _ = actor(torch.as_tensor(np.asarray(state, np.float32)).reshape(-1, STATE_DIM))
    return (max_prob * (mu[:, 0] + 1.0) / 2.0).numpy()


# -- files ----------------------------------------------------------------------------------


def save_policy(path: str | Path, actor: Actor, cfg: A3cConfig) -> None:
    """The deployable actor: ``fc1``, ``fc2``, ``mu`` (weights and biases, float32), the
    feature scale ``norm_scale`` [12] and ``max_prob`` [1] (format in
    ``crates/l4sim-core/src/policy/a3c.rs``)."""
    sd = actor.state_dict()
    tensors = {
        k: sd[k].detach().to(torch.float32).contiguous()
        for k in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "mu.weight", "mu.bias")
    }
    tensors["norm_scale"] = torch.as_tensor(norm_scale(cfg), dtype=torch.float32)
    tensors["max_prob"] = torch.tensor([cfg.max_prob], dtype=torch.float32)
    if cfg.delta_prob > 0:
        tensors["delta_prob"] = torch.tensor([cfg.delta_prob], dtype=torch.float32)
    if cfg.pi_target_ms is not None:
        lo, hi = cfg.pi_target_ms
        tensors["pi_target"] = torch.tensor([lo / 1e3, hi / 1e3], dtype=torch.float32)
    save_file(tensors, str(path))


def save_checkpoint(path: str | Path, actor: Actor, critic: Critic, cfg: A3cConfig) -> None:
    """Actor and critic (``actor.*``, ``critic.*``) with the config as metadata (one
    ``config`` entry, a JSON object with sorted keys: the library writes a metadata map in
    no fixed order, so one entry keeps equal weights equal bytes)."""
    tensors = {f"actor.{k}": v.contiguous() for k, v in actor.state_dict().items()}
    tensors |= {f"critic.{k}": v.contiguous() for k, v in critic.state_dict().items()}
    meta = {k: repr(v) for k, v in asdict(cfg).items()}
    save_file(tensors, str(path), metadata={"config": json.dumps(meta, sort_keys=True)})


def load_checkpoint(path: str | Path) -> tuple[Actor, Critic]:
    t = load_file(str(path))
    actor, critic = Actor(), Critic()
    actor.load_state_dict({k[6:]: v for k, v in t.items() if k.startswith("actor.")})
    critic.load_state_dict({k[7:]: v for k, v in t.items() if k.startswith("critic.")})
    return actor, critic
