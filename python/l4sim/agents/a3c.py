"""A3C-L4S (paper 004, section 3.2): an asynchronous advantage actor-critic sets DualPI2's
base probability p' every update interval.

Sources: the paper's Algorithm 1-3 and the authors' notebook
``A3C-L4S/.ipynb_checkpoints/5_a3c_continuous_L4S-checkpoint.ipynb`` (github
MPTCP-FreeBSD/FreeBSD-DRL-L4S): actor 12 -> 32 -> 32 (ReLU) -> mean ``tanh`` x bound and
std ``softplus`` clipped to [1e-2, 1]; critic 12 -> 32 -> 32 -> 16 (ReLU) -> 1; gamma 0.99,
a global update every 5 steps, Adam with lr 5e-4 (actor) and 1e-3 (critic), entropy weight
0.01, 4 workers, 100 episodes of 100 actions; n-step TD targets bootstrapped from the
critic. The unit action a in [-1, 1] (the authors clip the Gaussian sample to the bound) is
mapped to p' = max_prob (a + 1) / 2, so the deployed (mean) action is
``max_prob (tanh(z) + 1) / 2``.

State: the 12 columns of the paper's Table 1 as the authors' notebook keeps them
(:data:`FEATURES`), raw values from the AQM per interval (:func:`raw_state`) scaled by
fixed bounds to [0, 1] (:func:`norm_scale`; the authors min-max scaled each column of their
logs, which an online agent cannot do: we fix the bounds instead, the largest at 10 Mbit/s
and 100 ms). ``burst_allowance`` and ``measurement_start`` have no DualPI2 counterpart (PIE's
burst allowance; the log's time stamp) and are 0.

Training (:func:`train`) is Hogwild on ``torch.multiprocessing``: the global actor and
critic live in shared memory with a shared Adam; each worker process runs its own l4sim
DualPI2 simulation under its own random traffic, and every 5 steps pushes its gradients
into the global networks and copies them back. ``workers=1`` runs in this process and is
deterministic for a seed. ``mode="offline"`` replays logs in the Table-1 format instead
(:mod:`l4sim.agents.a3c_logs`, the paper's workflow). ``ray=...`` runs the same workers as
Ray tasks that synchronise through a parameter-server actor.

Weights: :func:`save_policy` writes the actor as the safetensors file a ``dualpi2`` qdisc's
``a3c_policy`` loads (``crates/l4sim-core/src/policy/a3c.rs``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from l4sim import rewards as _rewards
from l4sim.agents.tblog import ScalarLog
from l4sim.envs.features import QueueStep
from l4sim.errors import EnvConfigError

__all__ = [
    "FEATURES",
    "A3cConfig",
    "Actor",
    "Critic",
    "TrainResult",
    "deterministic_action",
    "load_checkpoint",
    "norm_scale",
    "raw_state",
    "save_checkpoint",
    "save_policy",
    "train",
]

#: Table 1 of the paper, as the authors' environment lists its observations.
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
    """Every hyper-parameter of :func:`train` (defaults: the paper's where it gives one)."""

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


class Actor(nn.Module):
    """Paper Algorithm 1 / the authors' ``Actor.nn_model``: 12 -> 32 -> 32 -> (mu, std)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(STATE_DIM, 32)
        self.fc2 = nn.Linear(32, 32)
        self.mu = nn.Linear(32, 1)
        self.sigma = nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.fc2(torch.relu(self.fc1(x))))
        mu = torch.tanh(self.mu(h))
        std = nn.functional.softplus(self.sigma(h)).clamp(*STD_BOUND)
        return mu, std


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
    return np.array(
        [
            0.0,  # burst_allowance: none in DualPI2
            1.0 / cfg.max_prob,  # drop_prob = p'
            1.0 / cfg.qdelay_max_s,  # current_qdelay, s
            1.0 / cfg.qdelay_max_s,  # qdelay_old, s
            1.0,  # accu_prob = min(k p', 1)
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
#: work's utility of delay, throughput and loss (:mod:`l4sim.rewards`).
REWARDS: dict[str, str] = {"delay": "a3c_l4s", "utility": "a3c_utility"}


def make_reward(cfg: A3cConfig) -> Callable[[QueueStep], float]:
    """The configured reward as a function of one interval's :class:`QueueStep`."""
    kw = {"delay_weight": cfg.delay_weight, "loss_weight": cfg.loss_weight}
    return _rewards.get(REWARDS[cfg.reward], "queue", kw if cfg.reward == "utility" else None)


# -- the online environment: one DualPI2 link, random traffic -------------------------------


def training_scenario(
    cfg: A3cConfig, rng: np.random.Generator
) -> tuple[dict[str, Any], float, float]:
    """A random episode: rate U(rates), delay U(delays), 1-4 flows of random CCA starting
    in the first half of the warm-up; returns (scenario dict, rate in bit/s, RTT in s)."""
    rate = float(rng.uniform(*cfg.rates_mbps)) * 1e6
    delay_ms = float(rng.uniform(*cfg.delays_ms))
    n = int(rng.integers(cfg.flows[0], cfg.flows[1] + 1))
    duration = cfg.warmup_s + cfg.steps * cfg.tupdate_s + 0.1
    flows = [
        {
            "kind": "tcp",
            "cca": str(rng.choice(list(cfg.ccas))),
            "ecn": True,
            "start": f"{round(float(rng.uniform(0, cfg.warmup_s / 2)) * 1e6)}us",
        }
        for _ in range(n)
    ]
    scen = {
        "name": "a3c-train",
        "seed": int(rng.integers(1, 2**31)),
        "duration": f"{round(duration * 1e6)}us",
        "topology": {
            "preset": "two_host",
            "rate": f"{round(rate / 1e3)}kbps",
            "delay": f"{round(delay_ms * 1e3)}us",
            "qdisc": {"kind": "dualpi2", "tupdate": f"{round(cfg.tupdate_s * 1e6)}us"},
        },
        "flows": flows,
    }
    return scen, rate, 2 * delay_ms / 1e3


class OnlineEnv:
    """One worker's simulation: each step sets p' (``set_dualpi2``), runs one tupdate and
    reads the interval's Table-1 row from the queue counters."""

    def __init__(self, cfg: A3cConfig, seed: int):
        self.cfg = cfg
        self.rng = np.random.default_rng(seed)
        self.scale = norm_scale(cfg)
        self.reward_fn = make_reward(cfg)
        self.sim: Any = None

    def _row(self) -> tuple[np.ndarray, float]:
        q = self.sim.observe()["queues"]
        i = self.idx
        deq, drops, marks = q["dequeued_bytes"][i], q["drops"][i], q["ecn_marks"][i]
        d_deq, d_drops, d_marks = deq - self.prev[0], drops - self.prev[1], marks - self.prev[2]
        self.prev = (deq, drops, marks)
        qdelay = float(q["head_sojourn_s"][i])
        prob = float(q["prob"][i] or 0.0)
        raw = raw_state(
            prob,
            qdelay,
            self.qdelay_old,
            2.0,
            d_deq,
            q["backlog_pkts"][i],
            q["backlog_bytes"][i],
            d_drops,
            d_marks,
        )
        self.qdelay_old = qdelay
        step = QueueStep(
            interval_s=self.cfg.tupdate_s,
            rate_ref_bps=self.rate,
            rtt_ref_s=self.rtt,
            backlog_pkts=q["backlog_pkts"][i],
            backlog_bytes=q["backlog_bytes"][i],
            dequeued_bytes=d_deq,
            sojourn_s=qdelay,
            drops=d_drops,
            marks=d_marks,
            prob=prob,
        )
        r = self.reward_fn(step)
        return normalise(raw, self.scale), float(r)

    def reset(self) -> np.ndarray:
        from l4sim import Scenario
        from l4sim.simulation import Simulation

        scen, self.rate, self.rtt = training_scenario(self.cfg, self.rng)
        self.sim = Simulation(Scenario.parse(scen))
        self.sim.run_until_ns(round(self.cfg.warmup_s * 1e9))
        self.now_ns = self.sim.now_ns
        q = self.sim.observe()["queues"]
        self.idx = q["link"].index("h0->h1")
        self.prev = (0, 0, 0)
        self.qdelay_old = 0.0
        obs, _ = self._row()
        return obs

    def step(self, p: float) -> tuple[np.ndarray, float]:
        self.sim.apply({"kind": "set_dualpi2", "link": "h0->h1", "base_prob": p})
        self.now_ns += round(self.cfg.tupdate_s * 1e9)
        self.sim.run_until_ns(self.now_ns)
        return self._row()


# -- A3C ------------------------------------------------------------------------------------


class SharedAdam(torch.optim.Adam):
    """Adam whose moment estimates live in shared memory (Hogwild: every worker steps it)."""

    def __init__(self, params: Any, lr: float):
        super().__init__(params, lr=lr)
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state[p]
                st["step"] = torch.zeros(())
                st["exp_avg"] = torch.zeros_like(p.data)
                st["exp_avg_sq"] = torch.zeros_like(p.data)
                st["step"].share_memory_()
                st["exp_avg"].share_memory_()
                st["exp_avg_sq"].share_memory_()


def to_prob(a: float, max_prob: float) -> float:
    """Unit action in [-1, 1] -> p' in [0, max_prob]."""
    return max_prob * (min(max(a, -1.0), 1.0) + 1.0) / 2.0


def deterministic_action(actor: Actor, state: np.ndarray, max_prob: float) -> np.ndarray:
    """The deployed policy: p' = max_prob (mu + 1) / 2, mu = tanh(...) the Gaussian's mean."""
    with torch.no_grad():
        mu, _ = actor(torch.as_tensor(np.asarray(state, np.float32)).reshape(-1, STATE_DIM))
    return (max_prob * (mu[:, 0] + 1.0) / 2.0).numpy()


@dataclass
class Segment:
    states: list[np.ndarray] = field(default_factory=list)
    actions: list[float] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)


def _losses(
    actor: Actor, critic: Critic, seg: Segment, last_v: float, cfg: A3cConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    """Algorithm 3 lines 19-22: n-step returns R, advantage R - V(s); the actor's loss
    -log pi(a|s) (R - V) - beta H(pi), the critic's (R - V)^2 (the authors' MSE)."""
    returns = []
    r_acc = last_v
    for r in reversed(seg.rewards):
        r_acc = r + cfg.gamma * r_acc
        returns.append(r_acc)
    returns.reverse()
    s = torch.as_tensor(np.stack(seg.states))
    a = torch.as_tensor(seg.actions, dtype=torch.float32).unsqueeze(1)
    ret = torch.as_tensor(returns, dtype=torch.float32).unsqueeze(1)
    v = critic(s)
    adv = (ret - v).detach()
    mu, std = actor(s)
    dist = torch.distributions.Normal(mu, std)
    actor_loss = -(dist.log_prob(a) * adv).sum() - cfg.entropy * dist.entropy().sum()
    critic_loss = ((ret - v) ** 2).mean()
    return actor_loss, critic_loss


def _push(local: nn.Module, shared: nn.Module, opt: torch.optim.Optimizer) -> None:
    """Hand the local gradients to the shared network, step its optimiser, copy back."""
    opt.zero_grad()
    for lp, sp in zip(local.parameters(), shared.parameters(), strict=True):
        sp._grad = None if lp.grad is None else lp.grad.clone()
    opt.step()
    local.load_state_dict(shared.state_dict())


def make_env(cfg: A3cConfig, seed: int) -> Any:
    if cfg.mode == "online":
        return OnlineEnv(cfg, seed)
    if cfg.mode == "offline":
        from l4sim.agents.a3c_logs import OfflineEnv

        return OfflineEnv(cfg, seed)
    raise EnvConfigError(f"mode {cfg.mode!r} is not known; allowed: online, offline")


Sync = Callable[[Actor, Critic], None]
"""Hand a worker's gradients to the global networks and load their new weights."""


def hogwild_sync(
    actor: Actor, critic: Critic, opt_a: torch.optim.Optimizer, opt_c: torch.optim.Optimizer
) -> Sync:
    """Sync through shared-memory networks and optimisers (Algorithm 3, line 24)."""

    def sync(la: Actor, lc: Critic) -> None:
        _push(la, actor, opt_a)
        _push(lc, critic, opt_c)

    return sync


def run_worker(
    wid: int,
    cfg: A3cConfig,
    init: tuple[dict[str, Any], dict[str, Any]],
    sync: Sync,
    report: Callable[[int, int, float, int], None],
) -> None:
    """One A3C worker (Algorithm 3): starts from the global weights ``init`` (actor,
    critic state dicts) and calls ``sync`` every ``update_interval`` steps."""
    torch.set_num_threads(1)
    seed = cfg.seed * 1000 + wid
    torch.manual_seed(seed)
    gen = np.random.default_rng(seed)
    env = make_env(cfg, seed)
    la, lc = Actor(), Critic()
    la.load_state_dict(init[0])
    lc.load_state_dict(init[1])
    for ep in range(cfg.episodes):
        state = env.reset()
        total, seg = 0.0, Segment()
        for t in range(cfg.steps):
            with torch.no_grad():
                mu, std = la(torch.as_tensor(state).unsqueeze(0))
            a = float(np.clip(gen.normal(float(mu), float(std)), -1.0, 1.0))
            nxt, r = env.step(to_prob(a, cfg.max_prob))
            seg.states.append(state)
            seg.actions.append(a)
            seg.rewards.append(r)
            total += r
            state = nxt
            done = t == cfg.steps - 1
            if len(seg.rewards) == cfg.update_interval or done:
                with torch.no_grad():
                    last_v = 0.0 if done else float(lc(torch.as_tensor(state).unsqueeze(0)))
                la.zero_grad()
                lc.zero_grad()
                la_loss, lc_loss = _losses(la, lc, seg, last_v, cfg)
                (la_loss + lc_loss).backward()
                sync(la, lc)
                seg = Segment()
        report(wid, ep, total / cfg.steps, cfg.steps)


@dataclass
class TrainResult:
    actor: Actor
    critic: Critic
    cfg: A3cConfig
    #: (worker, episode, mean reward per step, wall seconds since start), completion order.
    curve: list[tuple[int, int, float, float]]
    wall_s: float
    steps: int

    @property
    def steps_per_s_per_worker(self) -> float:
        return self.steps / self.wall_s / max(self.cfg.workers, 1)


def _worker_entry(
    wid: int,
    cfg: A3cConfig,
    actor: Actor,
    critic: Critic,
    opt_a: torch.optim.Optimizer,
    opt_c: torch.optim.Optimizer,
    queue: Any,
) -> None:
    """A Hogwild worker process: report each episode on ``queue``; it dies with the
    trainer (no orphan left holding the shared weights)."""
    from l4sim.executors import die_with_parent

    die_with_parent()
    init = (actor.state_dict(), critic.state_dict())
    sync = hogwild_sync(actor, critic, opt_a, opt_c)
    run_worker(wid, cfg, init, sync, lambda *x: queue.put(x))


def train(
    cfg: A3cConfig, out: str | Path | None = None, log_dir: str | Path | None = None
) -> TrainResult:
    """Train from scratch (Hogwild with ``cfg.workers`` processes; 1: in this process);
    write the policy (and ``checkpoint.safetensors``) under ``out`` if given, TensorBoard
    scalars under ``log_dir`` (``charts/reward_per_step`` per finished episode in completion
    order, ``worker_W/reward_per_step`` per worker episode, ``charts/env_steps_per_s``)."""
    if cfg.workers < 1 or cfg.episodes < 1 or cfg.steps < 1:
        raise EnvConfigError("workers, episodes and steps must each be at least 1")
    if cfg.reward not in REWARDS:
        raise EnvConfigError(f"reward {cfg.reward!r} is not known; allowed: {', '.join(REWARDS)}")
    torch.set_num_threads(1)
    torch.manual_seed(cfg.seed)
    actor, critic = Actor(), Critic()
    actor.share_memory()
    critic.share_memory()
    opt_a = SharedAdam(actor.parameters(), cfg.actor_lr)
    opt_c = SharedAdam(critic.parameters(), cfg.critic_lr)
    curve: list[tuple[int, int, float, float]] = []
    log = ScalarLog(log_dir)
    t0 = time.perf_counter()

    def record(w: int, e: int, r: float, t: float) -> None:
        curve.append((w, e, r, t))
        log.add(len(curve), {"charts/reward_per_step": r})
        log.add(e, {f"worker_{w}/reward_per_step": r})

    with log:
        if cfg.ray is not None:
            from l4sim.agents.a3c_ray import train_ray

            for row in train_ray(cfg, actor, critic, opt_a, opt_c):
                record(*row)
        elif cfg.workers == 1:
            run_worker(
                0,
                cfg,
                (actor.state_dict(), critic.state_dict()),
                hogwild_sync(actor, critic, opt_a, opt_c),
                lambda w, e, r, n: record(w, e, r, time.perf_counter() - t0),
            )
        else:
            import torch.multiprocessing as mp

            # Fork where available (as PyTorch's Hogwild example): a spawned worker re-imports
            # torch and l4sim, ~15 s on this project's 2-core VM; every worker and the trainer
            # run torch on one thread, so no OpenMP pool is live across the fork.
            method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
            ctx = mp.get_context(method)
            queue = ctx.Queue()
            procs = [
                ctx.Process(target=_worker_entry, args=(w, cfg, actor, critic, opt_a, opt_c, queue))
                for w in range(cfg.workers)
            ]
            for p in procs:
                p.start()
            for _ in range(cfg.workers * cfg.episodes):
                w, e, r, _n = queue.get()
                record(w, e, r, time.perf_counter() - t0)
            for p in procs:
                p.join()
                if p.exitcode != 0:
                    raise RuntimeError(f"A3C worker exited with code {p.exitcode}")
        wall = time.perf_counter() - t0
        steps = cfg.workers * cfg.episodes * cfg.steps
        log.add(steps, {"charts/env_steps_per_s": steps / max(wall, 1e-9)})
    res = TrainResult(actor, critic, cfg, curve, wall, steps)
    if out is not None:
        d = Path(out)
        d.mkdir(parents=True, exist_ok=True)
        save_policy(d / "policy.safetensors", actor, cfg)
        save_checkpoint(d / "checkpoint.safetensors", actor, critic, cfg)
    return res


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
    save_file(tensors, str(path))


def save_checkpoint(path: str | Path, actor: Actor, critic: Critic, cfg: A3cConfig) -> None:
    """Actor and critic (``actor.*``, ``critic.*``) with the config as metadata."""
    tensors = {f"actor.{k}": v.contiguous() for k, v in actor.state_dict().items()}
    tensors |= {f"critic.{k}": v.contiguous() for k, v in critic.state_dict().items()}
    meta = {k: repr(v) for k, v in asdict(cfg).items()}
    save_file(tensors, str(path), metadata=meta)


def load_checkpoint(path: str | Path) -> tuple[Actor, Critic]:
    t = load_file(str(path))
    actor, critic = Actor(), Critic()
    actor.load_state_dict({k[6:]: v for k, v in t.items() if k.startswith("actor.")})
    critic.load_state_dict({k[7:]: v for k, v in t.items() if k.startswith("critic.")})
    return actor, critic


def curve_by_worker(curve: Sequence[tuple[int, int, float, float]]) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for w, _e, r, _t in curve:
        out.setdefault(w, []).append(r)
    return out


def global_curve(curve: Sequence[tuple[int, int, float, float]], window: int = 4) -> list[float]:
    """Mean reward of the last ``window`` episodes of any worker, in completion order."""
    rs = [r for _w, _e, r, _t in curve]
    return [float(np.mean(rs[max(0, i + 1 - window) : i + 1])) for i in range(len(rs))]
