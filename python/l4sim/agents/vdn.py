"""Value decomposition networks (Sunehag et al. 2018) for MA-CC (its Algorithm 1).

One file, top to bottom: hyper-parameters, the Q networks (one per agent type, shared by the
agents of that type: TCP agents and AQM agents), the replay buffer, the VDN loss, training
on a PettingZoo ``ParallelEnv`` (:class:`~l4sim.envs.MultiCCEnv`), greedy evaluation and
checkpoints.

VDN: the team's Q is the sum of the agents' Qs, trained centrally on the shared reward and
executed by each agent alone (paper eq. 4-6):

    L = E_B[(sum_i Q_i(o_i, a_i) - (r_tot + gamma (1 - done) sum_i max_a Qbar_i(o'_i, a)))^2]

``mixer="none"`` trains the same agents independently instead (each its own Q on its own
reward: MA-CC's "RL-AQM + RL-TCP trained independently"). ``mixer="qmix"`` (Rashid et
al. 2018; beyond the paper) replaces the sum by a small monotonic mixing network whose
weights a hypernetwork computes from the global state (all agents' observations side by
side): Q_tot = w2(s) . elu(W1(s) q + b1(s)) + b2(s) with |W1|, |w2| >= 0, so each agent's
greedy action is still the team's. Target networks follow the
soft update ``Qbar <- tau Q + (1 - tau) Qbar`` after each gradient step (Algorithm 1 line 12).
Exploration: epsilon = eps_start * eps_decay ** |D| (paper: "epsilon = 0.995^|D|", initial
0.9), with |D| the transitions stored so far.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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
from l4sim.agents.tblog import ScalarLog
from l4sim.errors import EnvConfigError
from l4sim.processes import Interrupted

__all__ = [
    "QmixMixer",
    "VdnConfig",
    "agent_type",
    "evaluate",
    "load_policy",
    "qmix_loss",
    "save",
    "train",
    "vdn_loss",
]

MIXERS = ("vdn", "qmix", "none")


@dataclass
class VdnConfig:
    """Hyper-parameters: MA-CC's Table 1 where it gives them."""

    gamma: float = 0.9  # Table 1
    lr: float = 0.01  # Table 1
    tau: float = 0.05  # Table 1, target replace rate
    eps_start: float = 0.9  # Table 1, initial exploration rate
    eps_decay: float = 0.995  # section 4: epsilon = 0.995^|D|
    hidden: int = 64  # "two fully connected layers with two ReLU" (width not given)
    buffer_size: int = 20_000
    batch_size: int = 32
    learning_starts: int = 64
    #: "vdn" (sum of the agents' Qs), "qmix" (monotonic hypernetwork mixer) or "none"
    #: (independent learners).
    mixer: str = "vdn"
    mix_embed: int = 16  # QMIX: width of the mixing layer
    hyper_hidden: int = 32  # QMIX: width of the hypernetworks' hidden layer
    #: Observation columns each agent type sees (None: all). MA-CC's: TCP
    #: (segmentsAcked, bytesInFlight, RTT) = sender features 0, 1, 4; AQM (queueLength,
    #: dequeueRate, currQueueDelay) = queue features 0, 2, 3 (envs/README.md).
    obs_columns: dict[str, list[int] | None] = field(
        default_factory=lambda: {"tcp": [0, 1, 4], "aqm": [0, 2, 3]}
    )
    seed: int = 1
    #: Every ``select_every`` episodes, one greedy episode (no exploration, no learning) on
    #: validation seed ``select_seed + seed``; training returns the nets of the best such
    #: episode by mean reward (its own objective, not a measured metric), and keeps every
    #: validation (episode, return, stats) as a greedy learning curve. 0: the last nets.
    select_every: int = 0
    select_seed: int = 20_000
    #: Where the nets, mixers and each update's batch live: ``cpu``, ``cuda[:N]`` or
    #: ``auto`` (:mod:`l4sim.agents.device`); training returns them on the CPU.
    device: str = "cpu"

    def check(self) -> None:
        if self.mixer not in MIXERS:
            raise EnvConfigError(
                f"mixer {self.mixer!r} is not known; allowed: 'vdn', 'qmix' or 'none'"
            )
        if not (0 <= self.gamma <= 1 and 0 < self.tau <= 1 and self.lr > 0):
            raise EnvConfigError("gamma must be in [0, 1], tau in (0, 1] and lr positive")
        if self.batch_size < 1 or self.buffer_size < self.batch_size:
            raise EnvConfigError("batch_size must be at least 1 and no more than buffer_size")
        if self.select_every < 0:
            raise EnvConfigError("select_every must be 0 (off) or a number of episodes")


def agent_type(agent: str) -> str:
    """``"tcp"`` or ``"aqm"`` from a MultiCCEnv agent name (``tcp_0``, ``aqm_r0->r1``)."""
    return agent.split("_", 1)[0]


class QNet(nn.Module):
    """Two ReLU layers and a linear head: Q(o, .) for every action."""

    def __init__(self, n_obs: int, n_actions: int, hidden: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_obs, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, n_actions),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def vdn_loss(
    q: list[torch.Tensor],
    q_next_target: list[torch.Tensor],
    actions: list[torch.Tensor],
    rewards: list[torch.Tensor],
    done: torch.Tensor,
    gamma: float,
    mixer: str = "vdn",
) -> torch.Tensor:
    """The TD loss over a batch. ``q[i]`` is agent i's Q(o_i, .) (batch x actions),
    ``q_next_target[i]`` its target net's Q(o'_i, .), ``actions[i]`` its actions,
    ``rewards[i]`` its rewards (the team reward for every agent under VDN), ``done`` 1 at
    the end of an episode. VDN: one error per transition on the summed Qs; ``"none"``: one
    per agent, each on its own reward."""
    chosen = [
        qi.gather(1, ai.long().unsqueeze(1)).squeeze(1) for qi, ai in zip(q, actions, strict=True)
    ]
    best_next = [qn.max(dim=1).values for qn in q_next_target]
    if mixer == "vdn":
        target = rewards[0] + gamma * (1.0 - done) * torch.stack(best_next).sum(0)
        return ((torch.stack(chosen).sum(0) - target.detach()) ** 2).mean()
    losses = [
        ((c - (r + gamma * (1.0 - done) * b).detach()) ** 2).mean()
        for c, r, b in zip(chosen, rewards, best_next, strict=True)
    ]
    return torch.stack(losses).sum()


class QmixMixer(nn.Module):
    """QMIX's mixing network (Rashid et al. 2018): hypernetworks turn the global state into
    non-negative weights, so Q_tot is monotonic in every agent's Q."""

    def __init__(self, n_agents: int, state_dim: int, embed: int = 16, hidden: int = 32):
        super().__init__()
        self.n_agents, self.embed = n_agents, embed
        self.hyper_w1 = nn.Sequential(
            nn.Linear(state_dim, hidden), nn.ReLU(), nn.Linear(hidden, n_agents * embed)
        )
        self.hyper_b1 = nn.Linear(state_dim, embed)
        self.hyper_w2 = nn.Sequential(
            nn.Linear(state_dim, hidden), nn.ReLU(), nn.Linear(hidden, embed)
        )
        self.hyper_b2 = nn.Sequential(nn.Linear(state_dim, embed), nn.ReLU(), nn.Linear(embed, 1))

    def forward(self, qs: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        """``qs`` (batch x agents) and ``state`` (batch x state_dim) -> Q_tot (batch)."""
        b = qs.shape[0]
        w1 = self.hyper_w1(state).abs().view(b, self.n_agents, self.embed)
        b1 = self.hyper_b1(state).view(b, 1, self.embed)
        h = torch.nn.functional.elu(torch.bmm(qs.view(b, 1, self.n_agents), w1) + b1)
        w2 = self.hyper_w2(state).abs().view(b, self.embed, 1)
        b2 = self.hyper_b2(state).view(b, 1, 1)
        return (torch.bmm(h, w2) + b2).view(b)


def qmix_loss(
    q: list[torch.Tensor],
    q_next_target: list[torch.Tensor],
    actions: list[torch.Tensor],
    reward: torch.Tensor,
    done: torch.Tensor,
    gamma: float,
    mixer: QmixMixer,
    target_mixer: QmixMixer,
    state: torch.Tensor,
    next_state: torch.Tensor,
) -> torch.Tensor:
    """QMIX's TD loss: ``(mix(Q_i(o_i, a_i); s) - (r + gamma (1 - done)
    mixbar(max_a Qbar_i(o'_i, a); s')))^2`` averaged over the batch (the target networks'
    greedy actions, as in the VDN loss)."""
    chosen = torch.stack(
        [
            qi.gather(1, ai.long().unsqueeze(1)).squeeze(1)
            for qi, ai in zip(q, actions, strict=True)
        ],
        dim=1,
    )
    best_next = torch.stack([qn.max(dim=1).values for qn in q_next_target], dim=1)
    with torch.no_grad():
        target = reward + gamma * (1.0 - done) * target_mixer(best_next, next_state)
    return ((mixer(chosen, state) - target) ** 2).mean()


class Replay:
    """Joint transitions (per agent: o, a, r, o'), sampled uniformly."""

    def __init__(self, agents: list[str], dims: dict[str, int], size: int):
        self.agents, self.size, self.n, self.pos = agents, size, 0, 0
        self.obs = {a: np.zeros((size, dims[a]), np.float32) for a in agents}
        self.next = {a: np.zeros((size, dims[a]), np.float32) for a in agents}
        self.act = {a: np.zeros(size, np.int64) for a in agents}
        self.rew = {a: np.zeros(size, np.float32) for a in agents}
        self.done = np.zeros(size, np.float32)

    def add(self, o: dict, a: dict, r: dict, o2: dict, done: bool) -> None:
        i = self.pos
        for ag in self.agents:
            self.obs[ag][i], self.act[ag][i], self.rew[ag][i] = o[ag], a[ag], r[ag]
            self.next[ag][i] = o2[ag]
        self.done[i] = float(done)
        self.pos = (i + 1) % self.size
        self.n = min(self.n + 1, self.size)

    def state(self) -> dict[str, Any]:
        """The stored transitions and the ring's position (for a checkpoint)."""
        cols = {k: getattr(self, k) for k in ("obs", "next", "act", "rew")}
        return {k: {a: v[a][: self.n] for a in self.agents} for k, v in cols.items()} | {
            "done": self.done[: self.n],
            "n": self.n,
            "pos": self.pos,
        }

    def restore(self, state: dict[str, Any]) -> None:
        for k in ("obs", "next", "act", "rew"):
            for a in self.agents:
                getattr(self, k)[a][: state["n"]] = state[k][a]
        self.done[: state["n"]] = state["done"]
        self.n, self.pos = state["n"], state["pos"]

    def sample(self, k: int, rng: np.random.Generator) -> np.ndarray:
        return rng.integers(0, self.n, size=k)


def _select(obs: np.ndarray, cols: list[int] | None) -> np.ndarray:
    return np.asarray(obs if cols is None else obs[cols], np.float32)


def _nets(env: Any, cfg: VdnConfig) -> dict[str, QNet]:
    nets: dict[str, QNet] = {}
    for a in env.possible_agents:
        t = agent_type(a)
        if t in nets:
            continue
        cols = cfg.obs_columns.get(t)
        n_obs = len(cols) if cols is not None else env.observation_space(a).shape[0]
        nets[t] = QNet(n_obs, int(env.action_space(a).n), cfg.hidden)
    return nets


def _observe(cfg: VdnConfig, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each agent's observation restricted to its type's columns."""
    return {a: _select(o, cfg.obs_columns.get(agent_type(a))) for a, o in obs.items()}


def _by_type(agents: list[str]) -> dict[str, list[str]]:
    """Agents grouped by type, in ``agents`` order (one batched forward per type)."""
    groups: dict[str, list[str]] = {}
    for a in agents:
        groups.setdefault(agent_type(a), []).append(a)
    return groups


def _device_of(net: nn.Module) -> torch.device:
    return next(net.parameters()).device


def _greedy(nets: dict[str, QNet], obs: dict[str, np.ndarray]) -> dict[str, int]:
    """Each agent's best action for its (restricted) observation (one forward per type)."""
    out = {}
    with torch.no_grad():
        for t, ags in _by_type(list(obs)).items():
            x = torch.from_numpy(np.stack([obs[a] for a in ags])).to(_device_of(nets[t]))
            best = nets[t](x).argmax(dim=1).tolist()
            out.update(zip(ags, best, strict=True))
    return out


@dataclass
class TrainResult:
    """What :func:`train` returns: the nets, its config, per-episode returns and (with
    ``episode_stats``) per-episode statistics; the QMIX mixer if any."""

    nets: dict[str, QNet]
    config: VdnConfig
    returns: list[float]
    steps: int
    wall_s: float
    stats: list[Any] = field(default_factory=list)
    mixer: QmixMixer | None = None
    #: With ``select_every``: (episode, mean reward, episode_stats or None) of every greedy
    #: validation episode, and the episode whose nets were kept (None: the last nets).
    validation: list[tuple[int, float, Any]] = field(default_factory=list)
    selected: int | None = None


def train(
    make_env: Callable[[], Any],
    episodes: int,
    cfg: VdnConfig | None = None,
    on_episode: Callable[[int, float], None] | None = None,
    episode_stats: Callable[[Any], Any] | None = None,
    log_dir: str | Path | None = None,
    checkpoint: Checkpointing | None = None,
) -> TrainResult:
    """Train on fresh episodes of ``make_env()`` (a MultiCCEnv; with ``mixer="vdn"`` or
    ``"qmix"`` give it ``shared_reward=True``); episode e resets with seed ``cfg.seed + e``.
    ``episode_stats(env)``, if given, is called at the end of every episode and its results
    kept in ``TrainResult.stats`` (e.g. the training curves' throughput and RTT).
    ``log_dir``: TensorBoard scalars per episode (``charts/episodic_return``,
    ``charts/epsilon``, ``charts/env_steps_per_s``). ``checkpoint``: write the whole state
    between episodes (every ``checkpoint.every`` episodes, and when ``checkpoint.stop``
    reports a signal: then raise :class:`~l4sim.processes.Interrupted`), or resume from it;
    the result is that of the run that never stopped."""
    import time

    cfg = cfg or VdnConfig()
    cfg.check()
    # Tiny networks: one thread. Torch's default (a thread per core) spins against the
    # simulation and other workers and was 15x slower here on 2 cores (measured).
    torch.set_num_threads(1)
    dev = resolve(cfg.device)
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    env = make_env()
    agents = list(env.possible_agents)
    # Initialised on the CPU, then moved: the same seed gives the same initial weights on
    # every device.
    nets = _nets(env, cfg)
    targets = {
        t: QNet(n.net[0].in_features, n.net[-1].out_features, cfg.hidden) for t, n in nets.items()
    }
    for t in nets:
        targets[t].load_state_dict(nets[t].state_dict())
    dims = {a: nets[agent_type(a)].net[0].in_features for a in agents}
    mixers = None
    if cfg.mixer == "qmix":
        state_dim = sum(dims.values())
        mixers = tuple(
            QmixMixer(len(agents), state_dim, cfg.mix_embed, cfg.hyper_hidden) for _ in range(2)
        )
        mixers[1].load_state_dict(mixers[0].state_dict())
    for m in (*nets.values(), *targets.values(), *(mixers or ())):
        m.to(dev)
    params = [p for n in nets.values() for p in n.parameters()]
    if mixers is not None:
        params += list(mixers[0].parameters())
    opt = torch.optim.Adam(params, lr=cfg.lr)
    buf = Replay(agents, dims, cfg.buffer_size)
    stored, returns, steps, stats = 0, [], 0, []
    validation: list[tuple[int, float, Any]] = []
    best: tuple[float, int, list[dict[str, torch.Tensor]]] | None = None
    start = time.perf_counter()
    modules = {f"net.{t}": n for t, n in nets.items()} | {
        f"target.{t}": n for t, n in targets.items()
    }
    modules |= {f"mixer.{i}": m for i, m in enumerate(mixers or ())} | {"optimizer": opt}
    first, last_ckpt = 0, 0
    saved = checkpoint.load() if checkpoint is not None else None
    if saved is not None:
        for k, m in modules.items():
            m.load_state_dict(saved[k])
        buf.restore(saved["buffer"])
        set_generator_state(rng, saved["rng"])
        set_global_rng_state(saved["global_rng"])
        first = last_ckpt = saved["episode"]
        stored, steps, returns = saved["stored"], saved["steps"], saved["returns"]
        stats = [_tuples(x) for x in saved["stats"]]
        validation = [(e, v, _tuples(x)) for e, v, x in saved["validation"]]
        if saved["best"] is not None:
            val, at, states = saved["best"]
            best = (val, at, states)
        start -= saved["elapsed_s"]
    log = ScalarLog(log_dir)
    for ep in range(first, episodes):
        if checkpoint is not None:
            signum = checkpoint.stop()
            if signum is not None or checkpoint.due(ep, last_ckpt) or saved is None:
                checkpoint.save(
                    {k: m.state_dict() for k, m in modules.items()}
                    | {"buffer": buf.state(), "episode": ep, "stored": stored, "steps": steps}
                    | {"returns": returns, "stats": stats, "validation": validation}
                    | {"best": best, "elapsed_s": time.perf_counter() - start}
                    | {"rng": generator_state(rng), "global_rng": global_rng_state()}
                )
                saved, last_ckpt = saved or {}, ep
            if signum is not None:
                log.close()
                raise Interrupted(signum)
        obs = _observe(cfg, env.reset(seed=cfg.seed + ep)[0])
        total = 0.0
        while env.agents:
            eps = cfg.eps_start * cfg.eps_decay**stored
            greedy = _greedy(nets, obs)
            acts = {
                a: int(rng.integers(env.action_space(a).n)) if rng.random() < eps else greedy[a]
                for a in agents
            }
            nxt, rew, term, _, _ = env.step(acts)
            nxt = _observe(cfg, nxt)
            done = any(term.values())
            buf.add(obs, acts, rew, nxt, done)
            stored += 1
            steps += 1
            total += float(np.mean(list(rew.values())))
            obs = nxt
            if buf.n >= cfg.learning_starts:
                _update(nets, targets, opt, buf, cfg, rng, agents, mixers)
        returns.append(total)
        log.add(
            ep,
            {
                "charts/episodic_return": total,
                "charts/epsilon": cfg.eps_start * cfg.eps_decay**stored,
                "charts/env_steps_per_s": steps / max(time.perf_counter() - start, 1e-9),
            },
        )
        if episode_stats is not None:
            stats.append(episode_stats(env))
        if on_episode is not None:
            on_episode(ep, total)
        if cfg.select_every and (ep + 1) % cfg.select_every == 0:
            val, _ = evaluate(nets, cfg, env, seed=cfg.select_seed + cfg.seed)
            validation.append((ep, val, episode_stats(env) if episode_stats else None))
            log.add(ep, {"charts/validation_return": val})
            if best is None or val > best[0]:
                best = (val, ep, _snapshot(nets, mixers))
    env.close()
    log.close()
    if best is not None:
        _restore(nets, mixers, best[2])
    to_cpu(*nets.values(), *(mixers or ()))
    return TrainResult(
        nets,
        cfg,
        returns,
        steps,
        time.perf_counter() - start,
        stats,
        mixers[0] if mixers else None,
        validation,
        None if best is None else best[1],
    )


def _tuples(x: Any) -> Any:
    """A checkpoint's lists back as the tuples an ``episode_stats`` returned."""
    return tuple(x) if isinstance(x, list) else x


def _snapshot(nets: dict[str, QNet], mixers: Any) -> list[dict[str, torch.Tensor]]:
    mods = [*nets.values(), *(mixers or ())]
    return [{k: v.clone() for k, v in m.state_dict().items()} for m in mods]


def _restore(nets: dict[str, QNet], mixers: Any, states: list[dict[str, torch.Tensor]]) -> None:
    """Load a :func:`_snapshot` back (the online nets and mixer, and their targets' mixer)."""
    for m, st in zip([*nets.values(), *(mixers or ())], states, strict=True):
        m.load_state_dict(st)


def _update(
    nets, targets, opt, buf: Replay, cfg: VdnConfig, rng, agents: list[str], mixers=None
) -> None:
    idx = buf.sample(cfg.batch_size, rng)
    k = len(idx)
    dev = _device_of(next(iter(nets.values())))

    def batch(a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(a).to(dev)

    q, qn, acts, rews = {}, {}, [], []
    for t, ags in _by_type(agents).items():
        # One forward per agent type over the agents' stacked batches.
        x = batch(np.concatenate([buf.obs[a][idx] for a in ags]))
        x2 = batch(np.concatenate([buf.next[a][idx] for a in ags]))
        qt = nets[t](x)
        with torch.no_grad():
            qnt = targets[t](x2)
        for j, a in enumerate(ags):
            q[a], qn[a] = qt[j * k : (j + 1) * k], qnt[j * k : (j + 1) * k]
    for a in agents:
        acts.append(batch(buf.act[a][idx]))
        rews.append(batch(buf.rew[a][idx]))
    ql, qnl = [q[a] for a in agents], [qn[a] for a in agents]
    done = batch(buf.done[idx])
    if mixers is not None:
        state = batch(np.concatenate([buf.obs[a][idx] for a in agents], axis=1))
        nstate = batch(np.concatenate([buf.next[a][idx] for a in agents], axis=1))
        loss = qmix_loss(ql, qnl, acts, rews[0], done, cfg.gamma, *mixers, state, nstate)
    else:
        loss = vdn_loss(ql, qnl, acts, rews, done, cfg.gamma, cfg.mixer)
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        pairs = [(nets[t], targets[t]) for t in nets]
        if mixers is not None:
            pairs.append(mixers)
        for net, tgt in pairs:
            tp, sp = list(tgt.parameters()), list(net.parameters())
            torch._foreach_mul_(tp, 1.0 - cfg.tau)
            torch._foreach_add_(tp, sp, alpha=cfg.tau)


def save(result: TrainResult, path: str | Path) -> None:
    """A checkpoint: each agent type's weights and the config (one ``.pt`` file)."""
    torch.save(
        {
            "format": "l4sim-vdn-1",
            "config": asdict(result.config),
            "nets": {t: n.state_dict() for t, n in result.nets.items()},
            "shapes": {
                t: [n.net[0].in_features, n.net[-1].out_features] for t, n in result.nets.items()
            },
            "returns": result.returns,
            "mixer": None if result.mixer is None else result.mixer.state_dict(),
        },
        path,
    )


def load_policy(path: str | Path) -> tuple[dict[str, QNet], VdnConfig]:
    """The nets and config of a checkpoint written by :func:`save`."""
    try:
        ck = torch.load(path, weights_only=False)
    except FileNotFoundError:
        raise EnvConfigError(f"{str(path)!r} does not exist") from None
    except Exception:
        raise EnvConfigError(f"{str(path)!r} is not a VDN checkpoint written by l4sim") from None
    if not isinstance(ck, dict) or ck.get("format") != "l4sim-vdn-1":
        raise EnvConfigError(f"{str(path)!r} is not a VDN checkpoint written by l4sim")
    cfg = VdnConfig(**ck["config"])
    nets = {}
    for t, (n_obs, n_act) in ck["shapes"].items():
        nets[t] = QNet(n_obs, n_act, cfg.hidden)
        nets[t].load_state_dict(ck["nets"][t])
        nets[t].eval()
    return nets, cfg


def evaluate(nets: dict[str, QNet], cfg: VdnConfig, env: Any, seed: int) -> tuple[float, Any]:
    """One greedy episode with seed ``seed``: (mean per-step reward, the env's simulation)."""
    obs = _observe(cfg, env.reset(seed=seed)[0])
    total, n = 0.0, 0
    while env.agents:
        nxt, rew, _, _, _ = env.step(_greedy(nets, obs))
        obs = _observe(cfg, nxt)
        total += float(np.mean(list(rew.values())))
        n += 1
    return total / max(n, 1), env.sim
