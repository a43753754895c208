"""A3C-L4S ("L4S in FreeBSD with A3C", section 3.2): an asynchronous advantage actor-critic
sets DualPI2's base probability p' every update interval.

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
deterministic for a seed; so is ``sync="rounds"`` for any number of workers (they run in
this process in lock-step rounds, their gradients applied in worker order:
:func:`l4sim.agents.a3c.worker.run_rounds`), at the cost of running them one after another.
``mode="offline"`` replays logs in the Table-1 format instead
(:mod:`l4sim.agents.a3c.logs`, the paper's workflow). ``ray=...`` runs the same workers as
Ray tasks that synchronise through a parameter-server actor.

Weights: :func:`save_policy` writes the actor as the safetensors file a ``dualpi2`` qdisc's
``policy = { kind = "a3c", weights = ... }`` loads (``crates/l4sim-core/src/policy/a3c.rs``).

Reading order (each file imports only those before it):

1. :mod:`~l4sim.agents.a3c.model`: the configuration, the state (Table 1), the actor and
   critic networks, the reward and the weights files;
2. :mod:`~l4sim.agents.a3c.logs`: the offline environment that replays Table-1 logs;
3. :mod:`~l4sim.agents.a3c.worker`: the online environment and one worker (Algorithm 3):
   rollouts, n-step targets, losses, the push to the global networks;
4. :mod:`~l4sim.agents.a3c.ray_runner`: the same workers as Ray tasks around a
   parameter-server actor;
5. this module: the trainer (Hogwild processes, lock-step rounds or Ray), evaluation and
   checkpoints.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from l4sim.agents.a3c.model import (
    FEATURES,
    REWARDS,
    STATE_DIM,
    A3cConfig,
    Actor,
    Critic,
    action_value,
    deterministic_action,
    load_checkpoint,
    norm_scale,
    raw_state,
    save_checkpoint,
    save_policy,
)
from l4sim.agents.a3c.ray_runner import train_ray
from l4sim.agents.a3c.worker import (
    OnlineEnv,
    WorkerStart,
    act,
    check_action,
    hogwild_sync,
    run_rounds,
    run_worker,
)
from l4sim.agents.checkpoint import Checkpointing
from l4sim.agents.device import resolve
from l4sim.agents.tblog import ScalarLog
from l4sim.errors import EnvConfigError
from l4sim.processes import Interrupted

__all__ = [
    "FEATURES",
    "REWARDS",
    "STATE_DIM",
    "A3cConfig",
    "Actor",
    "Critic",
    "TrainResult",
    "curve_by_worker",
    "deterministic_action",
    "evaluate",
    "global_curve",
    "load_checkpoint",
    "norm_scale",
    "raw_state",
    "save_checkpoint",
    "save_policy",
    "train",
]


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
    from l4sim.processes import die_with_parent

    die_with_parent()
    init = (actor.state_dict(), critic.state_dict())
    sync = hogwild_sync(actor, critic, opt_a, opt_c)
    run_worker(wid, cfg, init, sync, lambda *x: queue.put(x))


def train(
    cfg: A3cConfig,
    out: str | Path | None = None,
    log_dir: str | Path | None = None,
    device: str = "cpu",
    checkpoint: Checkpointing | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> TrainResult:
    """Train from scratch (Hogwild with ``cfg.workers`` processes, 1: in this process;
    ``cfg.sync="rounds"``: deterministic rounds in this process);
    write the policy (and ``checkpoint.safetensors``) under ``out`` if given, TensorBoard
    scalars under ``log_dir`` (``charts/reward_per_step`` per finished episode in completion
    order, ``worker_W/reward_per_step`` per worker episode, ``charts/env_steps_per_s``).

    ``device``: ``cpu`` or ``auto`` (which is the CPU here). A3C (Mnih et al. 2016) is a
    CPU algorithm: its workers apply their gradients to networks shared in CPU memory, one
    transition batch of ``update_interval`` steps at a time, so a GPU has nothing to batch;
    ``cuda`` is refused in one sentence. ``progress(done, total)`` follows the episodes
    finished (of all workers).

    ``checkpoint``: write the whole state whenever every worker has finished the same
    number of episodes (every ``checkpoint.every`` episodes, and when ``checkpoint.stop``
    reports a signal: then raise :class:`~l4sim.processes.Interrupted`), or resume from it.
    Only the deterministic trainings have such points: ``sync="rounds"``, or one worker
    (which then runs as one round of one worker, the same arithmetic)."""
    if device != "auto" and resolve(device).type != "cpu":
        raise EnvConfigError(
            f"A3C trains on the CPU: its asynchronous workers share the networks in CPU "
            f"memory (device {device!r}; use 'cpu' or 'auto')"
        )
    if cfg.workers < 1 or cfg.episodes < 1 or cfg.steps < 1:
        raise EnvConfigError("workers, episodes and steps must each be at least 1")
    if cfg.reward not in REWARDS:
        raise EnvConfigError(f"reward {cfg.reward!r} is not known; allowed: {', '.join(REWARDS)}")
    if cfg.sync not in ("hogwild", "rounds"):
        raise EnvConfigError(f"sync {cfg.sync!r} is not known; allowed: hogwild, rounds")
    if cfg.sync == "rounds" and cfg.ray is not None:
        raise EnvConfigError("Ray workers update asynchronously; give sync='hogwild' with ray")
    check_action(cfg)
    if checkpoint is not None and cfg.sync != "rounds" and (cfg.workers > 1 or cfg.ray):
        raise EnvConfigError(
            "A3C checkpoints need sync='rounds' or one local worker: Hogwild processes and "
            "Ray tasks update the networks in no fixed order, so there is no point to resume from"
        )
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
        if progress is not None:
            progress(len(curve), cfg.workers * cfg.episodes)

    with log:
        if cfg.ray is not None:
            for row in train_ray(cfg, actor, critic, opt_a, opt_c):
                record(*row)
        elif cfg.sync == "rounds" or checkpoint is not None:
            boundary, starts = None, None
            if checkpoint is not None:
                boundary, starts, t0 = _checkpoints(
                    checkpoint, cfg, (actor, critic, opt_a, opt_c), curve, t0
                )
            run_rounds(
                cfg,
                actor,
                critic,
                opt_a,
                opt_c,
                lambda w, e, r, n: record(w, e, r, time.perf_counter() - t0),
                boundary,
                starts,
            )
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


def _checkpoints(
    checkpoint: Checkpointing,
    cfg: A3cConfig,
    modules: tuple[Any, ...],
    curve: list[tuple[int, int, float, float]],
    t0: float,
) -> tuple[Any, list[WorkerStart], float]:
    """Resume from ``checkpoint`` if it says so (the networks, optimisers and ``curve`` in
    place; the workers' starts and the shifted start time returned) and the callback that
    :func:`run_rounds` calls at each episode boundary to write it."""
    names = ("actor", "critic", "actor_optimizer", "critic_optimizer")
    starts = [WorkerStart.fresh(w, cfg) for w in range(cfg.workers)]
    saved = checkpoint.load()
    if saved is not None:
        for name, m in zip(names, modules, strict=True):
            m.load_state_dict(saved[name])
        for st, ws in zip(starts, saved["workers"], strict=True):
            st.restore(ws)
        curve.extend(tuple(row) for row in saved["curve"])  # type: ignore[misc]
        t0 -= saved["elapsed_s"]
    last = [starts[0].episode, saved is not None]

    def boundary(episode: int, live: list[WorkerStart]) -> None:
        signum = checkpoint.stop()
        if signum is not None or checkpoint.due(episode, last[0]) or not last[1]:
            checkpoint.save(
                {n: m.state_dict() for n, m in zip(names, modules, strict=True)}
                | {"workers": [w.state() for w in live], "curve": curve}
                | {"elapsed_s": time.perf_counter() - t0}
            )
            last[:] = [episode, True]
        if signum is not None:
            raise Interrupted(signum)

    return boundary, starts, t0


def curve_by_worker(curve: Sequence[tuple[int, int, float, float]]) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for w, _e, r, _t in curve:
        out.setdefault(w, []).append(r)
    return out


def global_curve(curve: Sequence[tuple[int, int, float, float]], window: int = 4) -> list[float]:
    """Mean reward of the last ``window`` episodes of any worker, in completion order."""
    rs = [r for _w, _e, r, _t in curve]
    return [float(np.mean(rs[max(0, i + 1 - window) : i + 1])) for i in range(len(rs))]


#: Traffic seed of :func:`evaluate`'s held-out episodes (training workers use
#: ``seed * 1000 + worker``, below 10**6 for any seed the CLI takes).
HELD_OUT_SEED = 10**7


def evaluate(actor: Actor, cfg: A3cConfig, episodes: int = 10, seed: int = HELD_OUT_SEED) -> float:
    """Mean reward per tupdate of the deployed (mean) action over ``episodes`` held-out
    training episodes: the same random traffic for every actor given the same ``cfg``
    ranges, so two actors' scores differ by the policy only (not by the traffic, which
    makes a training curve's first and last episodes hard to compare)."""
    env = OnlineEnv(cfg, seed)
    total = 0.0
    for _ in range(episodes):
        state = env.reset()
        for _t in range(cfg.steps):
            if cfg.delta_prob > 0 or cfg.pi_target_ms is not None:
                with torch.no_grad():
                    mean, _ = actor(torch.as_tensor(np.asarray(state, np.float32)).reshape(1, -1))
                p = action_value(float(mean[0, 0]), env.prob, cfg)
            else:
                p = float(deterministic_action(actor, state, cfg.max_prob)[0])
            state, r = act(env, p, cfg.action_repeat)
            total += r
    return total / (episodes * cfg.steps)
