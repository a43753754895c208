"""A3C-L4S's worker (the paper's Algorithm 3): the online DualPI2 environment, the n-step
actor-critic losses, the gradient hand-over to the global networks, and :func:`run_worker`,
which the Hogwild processes, the Ray tasks and ``workers=1`` all run. See
:mod:`l4sim.agents.a3c` for the algorithm's sources.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from l4sim.agents.a3c.logs import OfflineEnv
from l4sim.agents.a3c.model import (
    A3cConfig,
    Actor,
    Critic,
    action_value,
    make_reward,
    norm_scale,
    normalise,
    raw_state,
    to_prob,
)
from l4sim.envs.features import QueueStep
from l4sim.errors import EnvConfigError

# -- the online environment: one DualPI2 link, random traffic -------------------------------


def training_scenario(
    cfg: A3cConfig, rng: np.random.Generator
) -> tuple[dict[str, Any], float, float]:
    """A random episode: rate U(rates), delay U(delays), 1-4 flows of random CCA starting
    in the first half of the warm-up; returns (scenario dict, rate in bit/s, RTT in s)."""
    rate = float(rng.uniform(*cfg.rates_mbps)) * 1e6
    delay_ms = float(rng.uniform(*cfg.delays_ms))
    n = int(rng.integers(cfg.flows[0], cfg.flows[1] + 1))
    duration = cfg.warmup_s + cfg.steps * cfg.action_repeat * cfg.tupdate_s + 0.1
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
    """One worker's simulation: each step sets p' (``set_qdisc``), runs one tupdate and
    reads the interval's Table-1 row from the queue counters."""

    def __init__(self, cfg: A3cConfig, seed: int):
        self.cfg = cfg
        self.rng = np.random.default_rng(seed)
        self.scale = norm_scale(cfg)
        self.reward_fn = make_reward(cfg)
        self.sim: Any = None
        #: The p' the state's drop_prob shows (None: the one applied).
        self.shown_prob: float | None = None
        #: The p' in force after the last step.
        self.prob = 0.0

    def _row(self) -> tuple[np.ndarray, float]:
        q = self.sim.observe()["queues"]
        i = self.idx
        deq, drops, marks = q["dequeued_bytes"][i], q["drops"][i], q["ecn_marks"][i]
        d_deq, d_drops, d_marks = deq - self.prev[0], drops - self.prev[1], marks - self.prev[2]
        self.prev = (deq, drops, marks)
        qdelay = float(q["head_sojourn_s"][i])
        prob = float(q["prob"][i] or 0.0)
        self.prob = prob  # the p' in force (cfg.delta_prob moves it)
        if self.shown_prob is not None:  # cfg.mean_prob_in_state: the mean, not the sample
            prob = self.shown_prob
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
        self.last_step = step  # for diagnostics that score one interval several ways
        r = self.reward_fn(step)
        return normalise(raw, self.scale), float(r)

    def reset(self) -> np.ndarray:
        from l4sim import Scenario
        from l4sim.engine.simulation import Simulation

        scen, self.rate, self.rtt = training_scenario(self.cfg, self.rng)
        self.sim = Simulation(Scenario.parse(scen))
        self.sim.run_until_ns(round(self.cfg.warmup_s * 1e9))
        self.now_ns = self.sim.now_ns
        q = self.sim.observe()["queues"]
        self.idx = q["link"].index("h0->h1")
        self.prev = (0, 0, 0)
        self.qdelay_old = 0.0
        self.shown_prob = None
        obs, _ = self._row()
        return obs

    def step(self, p: float | None) -> tuple[np.ndarray, float]:
        """Set p' (with ``cfg.pi_target_ms``: the PI's target delay in s; ``None``: leave
        the PI controller in charge) and run one tupdate."""
        if p is not None:
            target = self.cfg.pi_target_ms is not None
            params = {"target_ns": p * 1e9} if target else {"base_prob": p}
            self.sim.apply({"kind": "set_qdisc", "link": "h0->h1", "params": params})
        self.now_ns += round(self.cfg.tupdate_s * 1e9)
        self.sim.run_until_ns(self.now_ns)
        return self._row()


def act(env: Any, p: float, repeat: int) -> tuple[np.ndarray, float]:
    """Hold p' for ``repeat`` steps of ``env``: the last state and the mean reward per step
    (on the paper's per-step scale whatever ``repeat``)."""
    total = 0.0
    for _ in range(repeat):
        obs, r = env.step(p)
        total += r
    return obs, total / repeat


# -- A3C ------------------------------------------------------------------------------------


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
    mu, std = actor.pre_tanh(s) if cfg.squash else actor(s)
    dist = torch.distributions.Normal(mu, std)
    # Sums over the segment as the authors do: Adam is invariant to the loss's scale and the
    # entropy term is summed alike, so a mean would only rescale the gradient (up to eps).
    actor_loss = -(dist.log_prob(a) * adv).sum() - cfg.entropy * dist.entropy().sum()
    critic_loss = ((ret - v) ** 2).mean()
    return actor_loss, critic_loss


def _apply(local: nn.Module, shared: nn.Module, opt: torch.optim.Optimizer) -> None:
    """Hand the local gradients to the shared network and step its optimiser."""
    opt.zero_grad()
    for lp, sp in zip(local.parameters(), shared.parameters(), strict=True):
        sp._grad = None if lp.grad is None else lp.grad.clone()
    opt.step()


def _push(local: nn.Module, shared: nn.Module, opt: torch.optim.Optimizer) -> None:
    """Hand the local gradients to the shared network, step its optimiser, copy back."""
    _apply(local, shared, opt)
    local.load_state_dict(shared.state_dict())


def check_action(cfg: A3cConfig) -> None:
    """The action modes' constraints, as one sentence each."""
    if cfg.delta_prob > 0 and cfg.mode != "online":
        raise EnvConfigError("delta_prob (an incremental action) needs mode 'online'")
    if cfg.pi_target_ms is None:
        return
    lo, hi = cfg.pi_target_ms
    if not 0 < lo < hi <= 10_000:
        raise EnvConfigError(
            f"pi_target_ms must be (lo, hi) with 0 < lo < hi <= 10000, not {cfg.pi_target_ms}"
        )
    if cfg.mode != "online" or cfg.delta_prob > 0:
        raise EnvConfigError(
            "pi_target_ms (the action sets PI's target) needs mode 'online' and no delta_prob"
        )


def make_env(cfg: A3cConfig, seed: int) -> Any:
    check_action(cfg)
    if cfg.mode == "online":
        return OnlineEnv(cfg, seed)
    if cfg.mode == "offline":
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


@dataclass
class WorkerStart:
    """What a worker carries from one episode to the next: its action noise's generator,
    its environment (whose own generator draws each episode's traffic) and the episode it
    runs next. Between episodes that is all of a worker's state, so a trainer can checkpoint
    it (:meth:`state`) and start the worker again from it."""

    gen: np.random.Generator
    env: Any
    episode: int = 0

    @classmethod
    def fresh(cls, wid: int, cfg: A3cConfig) -> WorkerStart:
        seed = worker_seed(cfg, wid)
        return cls(np.random.default_rng(seed), make_env(cfg, seed))

    def state(self) -> dict[str, Any]:
        return {
            "episode": self.episode,
            "gen": dict(self.gen.bit_generator.state),
            "env": dict(self.env.rng.bit_generator.state),
        }

    def restore(self, state: dict[str, Any]) -> None:
        self.episode = state["episode"]
        self.gen.bit_generator.state = state["gen"]
        self.env.rng.bit_generator.state = state["env"]


def worker_seed(cfg: A3cConfig, wid: int) -> int:
    """Worker ``wid``'s seed (its action noise, its traffic and its torch generator)."""
    return cfg.seed * 1000 + wid


def worker_steps(
    wid: int,
    cfg: A3cConfig,
    init: tuple[dict[str, Any], dict[str, Any]],
    report: Callable[[int, int, float, int], None],
    start: WorkerStart | None = None,
) -> Iterator[tuple[Actor, Critic]]:
    """One A3C worker (Algorithm 3) as a generator: starts from the global weights ``init``
    (actor, critic state dicts) and, every ``update_interval`` steps, yields its local
    networks holding the segment's gradients; the caller hands them to the global networks
    and loads the new weights into them before resuming it. Every worker of a
    configuration yields the same number of times (``episodes`` x ceil(``steps`` /
    ``update_interval``)), which lets :func:`l4sim.agents.a3c.train` run them in rounds.
    ``start``: the worker's generators and next episode (default: a fresh worker); at an
    episode's last yield it already holds what the next episode starts from."""
    torch.set_num_threads(1)
    torch.manual_seed(worker_seed(cfg, wid))
    start = start or WorkerStart.fresh(wid, cfg)
    gen, env = start.gen, start.env
    la, lc = Actor(), Critic()
    la.load_state_dict(init[0])
    lc.load_state_dict(init[1])
    for ep in range(start.episode, cfg.episodes):
        state = env.reset()
        total, seg = 0.0, Segment()
        for t in range(cfg.steps):
            with torch.no_grad():
                x = torch.as_tensor(state).unsqueeze(0)
                mu, std = la.pre_tanh(x) if cfg.squash else la(x)
            sample = float(gen.normal(float(mu), float(std)))
            if cfg.mean_prob_in_state:
                mean = float(np.tanh(float(mu))) if cfg.squash else float(mu)
                env.shown_prob = to_prob(mean, cfg.max_prob)
            applied = float(np.tanh(sample)) if cfg.squash else float(np.clip(sample, -1.0, 1.0))
            current = 0.0
            if cfg.delta_prob > 0:  # online only (make_env)
                # The integrator holds the mean actions only: the exploration noise perturbs
                # this decision's p' but does not pile up in p' (nor in the state).
                if t == 0:
                    env.shown_prob = env.prob
                current = env.shown_prob
                mean = float(np.tanh(float(mu))) if cfg.squash else float(mu)
                env.shown_prob = action_value(mean, current, cfg)
            nxt, r = act(env, action_value(applied, current, cfg), cfg.action_repeat)
            seg.states.append(state)
            # log pi of what was sampled (cfg.log_prob_of_clipped: the authors' clipped value)
            seg.actions.append(applied if cfg.log_prob_of_clipped and not cfg.squash else sample)
            seg.rewards.append(r)
            total += r
            state = nxt
            done = t == cfg.steps - 1
            if len(seg.rewards) == cfg.update_interval or done:
                with torch.no_grad():
                    # The episode's end is a time limit, not a terminal state: bootstrap
                    # (cfg.bootstrap_truncation; the authors' 0 is the paper's setting).
                    terminal = done and not cfg.bootstrap_truncation
                    last_v = 0.0 if terminal else float(lc(torch.as_tensor(state).unsqueeze(0)))
                la.zero_grad()
                lc.zero_grad()
                la_loss, lc_loss = _losses(la, lc, seg, last_v, cfg)
                (la_loss + lc_loss).backward()
                if done:  # reported before the episode's last hand-over
                    report(wid, ep, total / cfg.steps, cfg.steps)
                    start.episode = ep + 1
                yield la, lc
                seg = Segment()


def run_worker(
    wid: int,
    cfg: A3cConfig,
    init: tuple[dict[str, Any], dict[str, Any]],
    sync: Sync,
    report: Callable[[int, int, float, int], None],
) -> None:
    """One A3C worker (Algorithm 3, :func:`worker_steps`) that calls ``sync`` every
    ``update_interval`` steps."""
    for la, lc in worker_steps(wid, cfg, init, report):
        sync(la, lc)


def run_rounds(
    cfg: A3cConfig,
    actor: Actor,
    critic: Critic,
    opt_a: torch.optim.Optimizer,
    opt_c: torch.optim.Optimizer,
    report: Callable[[int, int, float, int], None],
    at_boundary: Callable[[int, list[WorkerStart]], None] | None = None,
    starts: list[WorkerStart] | None = None,
) -> None:
    """Deterministic A3C: the ``cfg.workers`` workers in lock-step rounds, in this process.
    Each round every worker, in worker order, runs its next segment from the weights of the
    round's start and computes its gradients; then the gradients are applied to the global
    networks in worker order (one optimiser step each, as Hogwild's pushes) and every worker
    loads the new weights. Nothing depends on process scheduling, so a seed gives the same
    weights bit for bit; the price is running the workers one after another.

    ``at_boundary(episodes_done, starts)`` is called whenever every worker has finished
    the same number of episodes (the global networks and the workers' ``starts`` are then
    the whole state: a checkpoint); ``starts`` resumes the workers from such a point."""
    init = (actor.state_dict(), critic.state_dict())
    starts = starts or [WorkerStart.fresh(w, cfg) for w in range(cfg.workers)]
    workers = [worker_steps(w, cfg, init, report, starts[w]) for w in range(cfg.workers)]
    per_episode = -(-cfg.steps // cfg.update_interval)  # hand-overs per episode
    rounds = 0
    while True:
        if (
            at_boundary is not None
            and rounds % per_episode == 0
            and starts[0].episode < cfg.episodes
        ):
            at_boundary(starts[0].episode, starts)
        rounds += 1
        pending = [next(w, None) for w in workers]
        if all(p is None for p in pending):
            return
        if any(p is None for p in pending):
            raise RuntimeError("A3C workers fell out of step (a worker stopped early)")
        nets = [p for p in pending if p is not None]
        for la, lc in nets:
            _apply(la, actor, opt_a)
            _apply(lc, critic, opt_c)
        weights = (actor.state_dict(), critic.state_dict())
        for la, lc in nets:
            la.load_state_dict(weights[0])
            lc.load_state_dict(weights[1])
