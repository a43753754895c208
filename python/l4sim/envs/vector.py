"""``SimBatchVectorEnv``: a Gymnasium ``VectorEnv`` stepping N copies of one l4sim env in a
single call into Rust (``_core.SimBatch.run_until``), with next-step autoreset.

Each copy keeps its own env object for decoding actions and computing observations and
rewards (the hooks of :class:`~l4sim.envs.base.L4simEnv`); the simulations live in the
batch. Actions are applied immediately (``action_delay``, ``control_flow`` and ``trigger``
need per-simulation calls and are not supported here; use the single env). Sub-env i reset
with ``seed`` gets ``seed + i`` and runs exactly as the single env reset with that seed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from l4sim.engine.simulation import SimulationBatch
from l4sim.envs.base import L4simEnv
from l4sim.errors import ActionError, EnvConfigError

__all__ = ["SimBatchVectorEnv"]


def _env_class(env: str | type[L4simEnv] | Callable[..., L4simEnv]) -> Callable[..., L4simEnv]:
    if isinstance(env, str):
        entry = gym.spec(env).entry_point
        if not isinstance(entry, str):
            return entry  # type: ignore[return-value]
        module, _, name = entry.partition(":")
        return getattr(importlib.import_module(module), name)
    return env


class SimBatchVectorEnv(VectorEnv):
    """N copies of ``env`` (an id such as ``"l4sim/TcpCwnd-v0"``, an env class or a factory)
    built with ``**env_kwargs``, stepped together.

    >>> venv = SimBatchVectorEnv("l4sim/TcpCwnd-v0", 8, step_interval="100ms")
    >>> obs, info = venv.reset(seed=0)
    >>> obs, rew, term, trunc, info = venv.step(venv.action_space.sample())
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}  # noqa: RUF012

    def __init__(self, env: Any, num_envs: int, **env_kwargs: Any):
        if num_envs < 1:
            raise EnvConfigError(f"num_envs {num_envs} must be at least 1")
        make = _env_class(env)
        self.envs: list[L4simEnv] = [make(**env_kwargs) for _ in range(num_envs)]
        head = self.envs[0]
        if not isinstance(head, L4simEnv):
            raise EnvConfigError(f"{env!r} is not an l4sim environment")
        if not getattr(head, "batchable", True):
            raise EnvConfigError(
                f"{type(head).__name__} reads more than the batched observation; use the single env"
            )
        if head.action_delay_ns or head.control_flow is not None or head.trigger is not None:
            raise EnvConfigError(
                "the vectorised env applies actions immediately; action_delay, control_flow "
                "and trigger need the single env"
            )
        self.num_envs = num_envs
        self.single_observation_space = head.observation_space
        self.single_action_space = head.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.render_mode = None
        self._batch: SimulationBatch | None = None
        self._autoreset = np.zeros(num_envs, dtype=bool)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is None or isinstance(seed, int):
            seeds = [None if seed is None else seed + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise EnvConfigError(f"reset got {len(seeds)} seeds for {self.num_envs} envs")
        if seed is not None:
            self.action_space.seed(seeds[0])
        sims = [e._prepare(s) for e, s in zip(self.envs, seeds, strict=True)]
        self._batch = SimulationBatch(sims)
        raws = self._batch.observe_all()
        obs = np.stack([e._start(r) for e, r in zip(self.envs, raws, strict=True)])
        self._autoreset[:] = False
        return obs, {}

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        batch = self._batch
        if batch is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        try:
            count = len(actions)
        except TypeError:
            count = None
        if count != self.num_envs:
            raise ActionError(
                f"step got {count if count is not None else repr(actions)} actions for "
                f"{self.num_envs} envs; give one per env ({self.action_space})"
            )
        checked = [e._check(actions[i]) for i, e in enumerate(self.envs)]
        targets: list[int] = []
        for i, e in enumerate(self.envs):
            if self._autoreset[i]:
                batch.set(i, e._prepare(None))
                targets.append(e._next_ns)
            else:
                for a in e._decode(checked[i]):
                    batch.apply(i, a)
                targets.append(e._advance_target())
        # Each env's features are computed while the other simulations may still run.
        batch.start_ns(targets)
        n = self.num_envs
        obs = np.empty((n, *self.single_observation_space.shape), np.float32)
        rewards = np.zeros(n, np.float64)
        terminated = np.zeros(n, bool)
        truncated = np.zeros(n, bool)
        for i, e in enumerate(self.envs):
            raw = batch.observe(i)
            if self._autoreset[i]:
                obs[i] = e._start(raw)
            else:
                obs[i], rewards[i] = e._finish(raw)
                terminated[i], truncated[i] = e._flags()
        self._autoreset = terminated | truncated
        return obs, rewards, terminated, truncated, {}

    def close_extras(self, **kwargs: Any) -> None:
        self._batch = None
