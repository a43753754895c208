"""DQN (Mnih et al. 2015) for Gymnasium environments with a Box observation and a Discrete
action space, with PyTorch (on the CPU unless ``device`` says otherwise).

CleanRL style: the whole algorithm reads top to bottom in :func:`train`, every
hyper-parameter is a field of :class:`DQNConfig`. One environment, a uniform replay buffer,
an epsilon-greedy behaviour policy with a linear schedule, a target network refreshed every
``target_update`` steps (optionally softly, ``tau < 1``), Huber TD loss, optional double
DQN. Nothing here knows about networks: l4sim's environments are just Gymnasium envs.

Determinism: with the same config (``seed``), the same environment and the same number of
torch threads, two runs produce identical weights. The seed feeds ``torch.manual_seed``
(network initialisation), a NumPy ``Generator`` (exploration and replay sampling) and the
first ``env.reset(seed=...)`` (later resets draw from the env's own seeded RNG).

Logs (``log_dir``, TensorBoard event files): ``charts/episodic_return``,
``charts/episodic_length``, ``charts/epsilon``, ``charts/SPS``, ``losses/td_loss``,
``losses/q_values``.

    >>> import gymnasium as gym
    >>> q, stats = train(lambda: gym.make("CartPole-v1"), DQNConfig(total_steps=20_000))
    >>> save("cartpole.pt", q, DQNConfig(total_steps=20_000))
    >>> act = greedy_policy(q)  # obs -> int
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from l4sim.agents.checkpoint import (
    Checkpointing,
    generator_state,
    global_rng_state,
    set_generator_state,
    set_global_rng_state,
)
from l4sim.agents.device import resolve, to_cpu
from l4sim.errors import EnvConfigError
from l4sim.processes import Interrupted

__all__ = [
    "DQNConfig",
    "QNetwork",
    "ReplayBuffer",
    "TrainStats",
    "greedy_policy",
    "linear_schedule",
    "load",
    "save",
    "train",
]


@dataclass
class DQNConfig:
    """Every hyper-parameter of :func:`train` (defaults: small, fast-learning settings)."""

    total_steps: int = 50_000
    """Environment steps (one action each) in the whole run."""
    learning_rate: float = 1e-3
    """Adam step size."""
    buffer_size: int = 50_000
    """Replay buffer capacity (transitions); the oldest are overwritten."""
    batch_size: int = 128
    """Transitions per gradient step."""
    gamma: float = 0.99
    """Discount factor."""
    target_update: int = 500
    """Steps between target-network updates."""
    tau: float = 1.0
    """Target update rate: 1 copies the online network, < 1 is Polyak averaging."""
    start_epsilon: float = 1.0
    """Exploration rate at step 0."""
    end_epsilon: float = 0.05
    """Exploration rate after ``exploration_fraction`` of ``total_steps``."""
    exploration_fraction: float = 0.5
    """Share of the run over which epsilon falls linearly from start to end."""
    learning_starts: int = 1_000
    """Steps of pure collection before the first gradient step."""
    train_frequency: int = 1
    """Environment steps per gradient step."""
    hidden: tuple[int, ...] = (64, 64)
    """Hidden layer widths of the Q-network (ReLU)."""
    seed: int = 1
    """Seeds torch, the NumPy generator and the first env.reset."""
    double_dqn: bool = True
    """Pick the next action with the online network, value it with the target network."""
    max_grad_norm: float = 10.0
    """Gradient clipping (L2 norm over all parameters); 0 disables."""
    reward_scale: float = 1.0
    """Rewards are multiplied by this before learning (a positive constant leaves the optimal
    policy unchanged; it keeps Q-values of raw, large rewards in a trainable range)."""
    log_every: int = 100
    """Steps between TensorBoard scalars for loss, Q-values and SPS."""
    torch_threads: int = 1
    """torch intra-op threads during training (small networks run fastest on one; the
    previous setting is restored afterwards)."""
    device: str = "cpu"
    """Where the networks and each update's batch live: ``cpu``, ``cuda[:N]`` or ``auto``
    (:mod:`l4sim.agents.device`); the returned network is on the CPU."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> DQNConfig:
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        if "hidden" in kw:
            kw["hidden"] = tuple(int(h) for h in kw["hidden"])
        return cls(**kw)


@dataclass
class TrainStats:
    """What a training run measured (episode returns are undiscounted and unscaled)."""

    steps: int = 0
    episodes: int = 0
    wall_time_s: float = 0.0
    steps_per_s: float = 0.0
    episode_returns: list[float] = field(default_factory=list)
    episode_lengths: list[int] = field(default_factory=list)
    episode_end_steps: list[int] = field(default_factory=list)
    last_loss: float = float("nan")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class QNetwork(nn.Module):
    """An MLP from the (flattened) observation to one Q-value per action."""

    def __init__(self, obs_dim: int, n_actions: int, hidden: tuple[int, ...] = (64, 64)):
        super().__init__()
        self.obs_dim, self.n_actions, self.hidden = int(obs_dim), int(n_actions), tuple(hidden)
        layers: list[nn.Module] = []
        width = self.obs_dim
        for h in self.hidden:
            layers += [nn.Linear(width, int(h)), nn.ReLU()]
            width = int(h)
        layers.append(nn.Linear(width, self.n_actions))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class ReplayBuffer:
    """Uniform replay over a ring of NumPy arrays."""

    def __init__(self, capacity: int, obs_dim: int):
        self.capacity = int(capacity)
        self.obs = np.zeros((self.capacity, obs_dim), np.float32)
        self.next_obs = np.zeros((self.capacity, obs_dim), np.float32)
        self.actions = np.zeros(self.capacity, np.int64)
        self.rewards = np.zeros(self.capacity, np.float32)
        self.dones = np.zeros(self.capacity, np.float32)
        self.pos = 0
        self.full = False

    def __len__(self) -> int:
        return self.capacity if self.full else self.pos

    def add(self, obs: Any, next_obs: Any, action: int, reward: float, done: bool) -> None:
        i = self.pos
        self.obs[i] = np.asarray(obs, np.float32).reshape(-1)
        self.next_obs[i] = np.asarray(next_obs, np.float32).reshape(-1)
        self.actions[i], self.rewards[i], self.dones[i] = action, reward, float(done)
        self.pos = (i + 1) % self.capacity
        self.full = self.full or self.pos == 0

    def state(self) -> dict[str, Any]:
        """The stored transitions and the ring's position (for a checkpoint)."""
        n = len(self)
        arrays = {
            k: getattr(self, k)[:n] for k in ("obs", "next_obs", "actions", "rewards", "dones")
        }
        return arrays | {"pos": self.pos, "full": self.full}

    def restore(self, state: dict[str, Any]) -> None:
        """Put back what :meth:`state` took."""
        for k in ("obs", "next_obs", "actions", "rewards", "dones"):
            a = state[k]
            getattr(self, k)[: len(a)] = a
        self.pos, self.full = state["pos"], state["full"]

    def sample(self, rng: np.random.Generator, n: int) -> tuple[torch.Tensor, ...]:
        idx = rng.integers(0, len(self), size=n)
        return (
            torch.from_numpy(self.obs[idx]),
            torch.from_numpy(self.actions[idx]),
            torch.from_numpy(self.rewards[idx]),
            torch.from_numpy(self.next_obs[idx]),
            torch.from_numpy(self.dones[idx]),
        )


def linear_schedule(start: float, end: float, duration: int, t: int) -> float:
    """``start`` at t = 0, falling linearly to ``end`` at t = ``duration``, then flat."""
    if duration <= 0:
        return end
    return start + min(t / duration, 1.0) * (end - start)


def _check_spaces(env: gym.Env) -> tuple[int, int]:
    if not isinstance(env.action_space, gym.spaces.Discrete):
        raise EnvConfigError(f"DQN needs a Discrete action space, not {env.action_space}")
    if not isinstance(env.observation_space, gym.spaces.Box):
        raise EnvConfigError(f"DQN needs a Box observation space, not {env.observation_space}")
    return int(np.prod(env.observation_space.shape)), int(env.action_space.n)


def greedy_policy(q_network: QNetwork) -> Callable[[Any], int]:
    """The greedy policy of ``q_network``: observation -> argmax_a Q(obs, a)."""

    def act(obs: Any) -> int:
        x = torch.as_tensor(np.asarray(obs, np.float32).reshape(1, -1))
        with torch.no_grad():
            return int(q_network(x).argmax(dim=1).item())

    return act


def train(
    env_fn: Callable[[], gym.Env],
    cfg: DQNConfig | None = None,
    *,
    progress: Callable[[int, int, dict[str, float]], None] | None = None,
    log_dir: str | Path | None = None,
    checkpoint: Checkpointing | None = None,
) -> tuple[QNetwork, TrainStats]:
    """Train a DQN on the env ``env_fn()`` for ``cfg.total_steps`` steps.

    ``progress(step, total, info)`` is called every ``cfg.log_every`` steps and at the end
    (``info``: epsilon, last episodic return, loss). ``log_dir`` receives TensorBoard event
    files. Returns the online Q-network (in eval mode) and the run's :class:`TrainStats`.
    ``checkpoint``: write the whole state at episode boundaries (every ``checkpoint.every``
    episodes, and when ``checkpoint.stop`` reports a signal: then raise
    :class:`~l4sim.processes.Interrupted`), or resume from it; the weights are those of
    the run that never stopped.
    """
    cfg = cfg or DQNConfig()
    threads = torch.get_num_threads()
    torch.set_num_threads(max(1, cfg.torch_threads))
    try:
        return _train(env_fn, cfg, progress, log_dir, checkpoint)
    finally:
        torch.set_num_threads(threads)


def _train(
    env_fn: Callable[[], gym.Env],
    cfg: DQNConfig,
    progress: Callable[[int, int, dict[str, float]], None] | None,
    log_dir: str | Path | None,
    ckpt: Checkpointing | None = None,
) -> tuple[QNetwork, TrainStats]:
    # -- seeding --------------------------------------------------------------------------
    dev = resolve(cfg.device)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    env = env_fn()
    obs_dim, n_actions = _check_spaces(env)

    # -- networks, optimiser, buffer ------------------------------------------------------
    # Initialised on the CPU, then moved: the same seed gives the same initial weights on
    # every device.
    q_network = QNetwork(obs_dim, n_actions, cfg.hidden).to(dev)
    target_network = QNetwork(obs_dim, n_actions, cfg.hidden).to(dev)
    target_network.load_state_dict(q_network.state_dict())
    optimizer = torch.optim.Adam(q_network.parameters(), lr=cfg.learning_rate)
    rb = ReplayBuffer(min(cfg.buffer_size, max(cfg.total_steps, 1)), obs_dim)

    writer = None
    if log_dir is not None:
        from torch.utils.tensorboard import SummaryWriter  # tensorboard only when logging

        writer = SummaryWriter(str(log_dir))
        writer.add_text(
            "hyperparameters",
            "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in cfg.to_dict().items()),
        )

    stats = TrainStats()
    explore_steps = int(cfg.exploration_fraction * cfg.total_steps)
    ep_return, ep_len = 0.0, 0
    loss_value, q_value = float("nan"), float("nan")
    start = time.perf_counter()
    nets = {"q": q_network, "target": target_network, "optimizer": optimizer}
    first, last_ckpt, need_reset = 0, 0, True
    saved = ckpt.load() if ckpt is not None else None
    if saved is not None:
        first, last_ckpt = saved["step"], len(saved["stats"]["episode_returns"])
        loss_value, q_value = saved["loss"], saved["q_mean"]
        for k, m in nets.items():
            m.load_state_dict(saved[k])
        rb.restore(saved["buffer"])
        stats = TrainStats(**saved["stats"])
        set_generator_state(rng, saved["rng"])
        set_global_rng_state(saved["global_rng"])
        if saved["env_rng"] is not None:
            set_generator_state(env.unwrapped.np_random, saved["env_rng"])
        start -= saved["elapsed_s"]

    for step in range(first, cfg.total_steps):
        if need_reset:
            # -- an episode boundary: the whole state is plain data here ------------------
            if ckpt is not None:
                signum = ckpt.stop()
                episodes = len(stats.episode_returns)
                if signum is not None or ckpt.due(episodes, last_ckpt) or saved is None:
                    ckpt.save(
                        {k: m.state_dict() for k, m in nets.items()}
                        | {"step": step, "loss": loss_value, "q_mean": q_value}
                        | {"buffer": rb.state(), "stats": stats.to_dict()}
                        | {"rng": generator_state(rng), "global_rng": global_rng_state()}
                        | {"env_rng": generator_state(env.unwrapped.np_random) if step else None}
                        | {"elapsed_s": time.perf_counter() - start}
                    )
                    saved, last_ckpt = saved or {}, episodes
                if signum is not None:
                    raise Interrupted(signum)
            obs, _ = env.reset(seed=cfg.seed) if step == 0 else env.reset()
            need_reset = False
        # -- act: epsilon-greedy ----------------------------------------------------------
        epsilon = linear_schedule(cfg.start_epsilon, cfg.end_epsilon, explore_steps, step)
        if rng.random() < epsilon:
            action = int(rng.integers(n_actions))
        else:
            with torch.no_grad():
                x = torch.as_tensor(np.asarray(obs, np.float32).reshape(1, -1)).to(dev)
                action = int(q_network(x).argmax(dim=1).item())
        next_obs, reward, terminated, truncated, _ = env.step(action)
        ep_return += float(reward)
        ep_len += 1

        # -- store: bootstrap through truncation, not through termination -------------------
        rb.add(obs, next_obs, action, float(reward) * cfg.reward_scale, terminated)
        obs = next_obs
        if terminated or truncated:
            stats.episode_returns.append(ep_return)
            stats.episode_lengths.append(ep_len)
            stats.episode_end_steps.append(step + 1)
            if writer is not None:
                writer.add_scalar("charts/episodic_return", ep_return, step + 1)
                writer.add_scalar("charts/episodic_length", ep_len, step + 1)
            ep_return, ep_len = 0.0, 0
            need_reset = True

        # -- learn ------------------------------------------------------------------------
        if step >= cfg.learning_starts and step % cfg.train_frequency == 0:
            b_obs, b_act, b_rew, b_next, b_done = (
                t.to(dev) for t in rb.sample(rng, cfg.batch_size)
            )
            with torch.no_grad():
                if cfg.double_dqn:
                    next_a = q_network(b_next).argmax(dim=1, keepdim=True)
                    next_q = target_network(b_next).gather(1, next_a).squeeze(1)
                else:
                    next_q = target_network(b_next).max(dim=1).values
                td_target = b_rew + cfg.gamma * next_q * (1.0 - b_done)
            q_pred = q_network(b_obs).gather(1, b_act.unsqueeze(1)).squeeze(1)
            loss = nn.functional.smooth_l1_loss(q_pred, td_target)
            optimizer.zero_grad()
            loss.backward()
            if cfg.max_grad_norm > 0:
                nn.utils.clip_grad_norm_(q_network.parameters(), cfg.max_grad_norm)
            optimizer.step()
            loss_value, q_value = float(loss.item()), float(q_pred.mean().item())

        # -- target network -------------------------------------------------------------
        if step >= cfg.learning_starts and step % cfg.target_update == 0:
            with torch.no_grad():
                for tp, p in zip(target_network.parameters(), q_network.parameters(), strict=True):
                    tp.mul_(1.0 - cfg.tau).add_(cfg.tau * p)

        # -- report -----------------------------------------------------------------------
        if (step + 1) % cfg.log_every == 0 or step + 1 == cfg.total_steps:
            sps = (step + 1) / max(time.perf_counter() - start, 1e-9)
            if writer is not None:
                writer.add_scalar("charts/epsilon", epsilon, step + 1)
                writer.add_scalar("charts/SPS", sps, step + 1)
                if loss_value == loss_value:
                    writer.add_scalar("losses/td_loss", loss_value, step + 1)
                    writer.add_scalar("losses/q_values", q_value, step + 1)
            if progress is not None:
                last = stats.episode_returns[-1] if stats.episode_returns else float("nan")
                progress(
                    step + 1,
                    cfg.total_steps,
                    {"epsilon": epsilon, "return": last, "loss": loss_value, "sps": sps},
                )

    env.close()
    if writer is not None:
        writer.close()
    stats.steps = cfg.total_steps
    stats.episodes = len(stats.episode_returns)
    stats.wall_time_s = time.perf_counter() - start
    stats.steps_per_s = cfg.total_steps / max(stats.wall_time_s, 1e-9)
    stats.last_loss = loss_value
    to_cpu(q_network)
    q_network.eval()
    return q_network, stats


def save(
    path: str | Path, q_network: QNetwork, cfg: DQNConfig, extra: dict[str, Any] | None = None
) -> Path:
    """Write the Q-network's weights, its shape, the config (as a dict) and ``extra``
    (plain data, e.g. the env's settings) with ``torch.save``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "format": "l4sim-dqn-1",
            "state_dict": q_network.state_dict(),
            "obs_dim": q_network.obs_dim,
            "n_actions": q_network.n_actions,
            "config": cfg.to_dict(),
            "extra": dict(extra or {}),
        },
        path,
    )
    return path


def load(path: str | Path) -> tuple[QNetwork, DQNConfig, dict[str, Any]]:
    """Read a file written by :func:`save`: (Q-network in eval mode, config, extra).
    Raises :class:`~l4sim.errors.EnvConfigError` (one sentence, also a ``ValueError``) on a
    file that is not such a checkpoint."""
    try:
        ckpt = torch.load(Path(path), map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise
    except Exception:
        raise EnvConfigError(f"{str(path)!r} is not a DQN checkpoint written by l4sim") from None
    if not isinstance(ckpt, dict) or ckpt.get("format") != "l4sim-dqn-1":
        raise EnvConfigError(f"{str(path)!r} is not a DQN checkpoint written by l4sim")
    cfg = DQNConfig.from_dict(ckpt["config"])
    q_network = QNetwork(ckpt["obs_dim"], ckpt["n_actions"], cfg.hidden)
    q_network.load_state_dict(ckpt["state_dict"])
    q_network.eval()
    return q_network, cfg, ckpt.get("extra", {})
