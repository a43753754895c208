"""The shared machinery of the single-agent environments: scenario handling, seeding, the
step clock, action delivery (now, after a fixed latency, or over a control flow) and fork.

A subclass supplies four hooks: ``_decode(action) -> list[core action dict]``,
``_start(raw) -> obs``, ``_finish(raw) -> (obs, reward)`` and its spaces. The same hooks
drive the vectorised env (:mod:`l4sim.envs.vector`), which keeps the simulations in one
``_core.SimBatch`` instead.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from l4sim.engine.simulation import Simulation, to_ns
from l4sim.errors import ActionError, EnvConfigError, ScenarioError
from l4sim.native import core as _core_module
from l4sim.scenario import Scenario, core_json, load

ScenarioLike = Scenario | dict[str, Any] | str | Path

__all__ = ["L4simEnv", "ScenarioLike", "as_scenario", "checked_action"]


def checked_action(space: gym.Space[Any], action: Any, who: str = "action") -> Any:
    """``action`` as ``space`` holds it, or :class:`~l4sim.errors.ActionError` with one
    sentence: for ``Discrete`` an integer in range (not a float, which would be truncated,
    a bool or None), as an ``int``; for ``Box`` numbers of its shape, all finite, as a
    float64 array (values outside the bounds are then clipped by the env, as its page in
    ``docs/envs/`` says)."""
    if isinstance(space, gym.spaces.Discrete):
        lo, hi = int(space.start), int(space.start + space.n - 1)
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action[()]
        if isinstance(action, bool | np.bool_) or not isinstance(action, int | np.integer):
            raise ActionError(f"{who} {action!r} is not a whole number; {space} takes {lo} to {hi}")
        if not lo <= int(action) <= hi:
            raise ActionError(f"{who} {int(action)} is outside {space}: give {lo} to {hi}")
        return int(action)
    if isinstance(space, gym.spaces.Box):
        try:
            a = np.asarray(action, dtype=np.float64)
        except (TypeError, ValueError):
            a = None
        if action is None or a is None:
            raise ActionError(f"{who} {action!r} is not numbers; {space} takes {space.shape}")
        if a.size != int(np.prod(space.shape)):
            raise ActionError(
                f"{who} has {a.size} values; {space} takes {int(np.prod(space.shape))}"
            )
        if not np.isfinite(a).all():
            raise ActionError(f"{who} {a.tolist()} is not finite; {space} takes numbers")
        return a.reshape(space.shape)
    return action


def as_scenario(scenario: ScenarioLike, trace: str | tuple[str, str] | None = None) -> Scenario:
    """A :class:`Scenario` from a scenario, a dict (as read from TOML) or a TOML path.

    ``trace`` (the envs' ``trace=`` option): the bottleneck's forward direction (a
    dumbbell's ``bottleneck``, a ``two_host`` link) follows this Mahimahi trace, a file or
    ``builtin:NAME`` (docs/traces.md), in place of its rate or schedule; a pair
    ``(forward, reverse)`` gives the reverse direction one too. Agents then train on a
    recorded network; the reference rate of the observations is the trace's mean."""
    if isinstance(scenario, Scenario):
        out = scenario
    elif isinstance(scenario, dict):
        out = Scenario.parse(scenario)
    elif isinstance(scenario, str | Path):
        out = load(scenario)
    else:
        raise ScenarioError(
            f"scenario must be an l4sim.Scenario, a dict or a TOML path, not "
            f"{type(scenario).__name__}"
        )
    return out if trace is None else _with_trace(out, trace)


def _with_trace(scenario: Scenario, trace: str | tuple[str, str]) -> Scenario:
    data = scenario.to_dict()
    topo = data["topology"]
    spec = topo.get("bottleneck") if topo["preset"] == "dumbbell" else topo
    if topo["preset"] not in ("dumbbell", "two_host"):
        raise EnvConfigError(
            f"trace needs a dumbbell or two_host topology (its bottleneck), not {topo['preset']}"
        )
    fwd, rev = (trace, None) if isinstance(trace, str) else trace
    for d, t in (("", fwd), ("_reverse", rev)):
        if t is None:
            continue
        for key in (f"trace{d}", f"schedule{d}", f"schedule{d}_period", f"onoff{d}"):
            spec.pop(key, None)
        spec[f"trace{d}"] = t
    return Scenario.parse(data, source="trace")


class L4simEnv(gym.Env):
    """Base of the l4sim Gymnasium environments (see the subclasses for spaces and rewards).

    Common options:

    * ``step_interval`` (default ``"100ms"``): simulated time between decisions (seconds or
      a time string). With ``trigger`` it is the longest interval.
    * ``episode_steps``: decisions per episode (default: as many as fit in the scenario's
      duration after ``warmup``); the episode is truncated after it.
    * ``warmup`` (default 0): simulated time run before the first observation.
    * ``trigger``: ``("r0->r1", n)`` makes a step end after every n packets dequeued at the
      link (event-driven decisions, ``run_until_trigger``) or at ``step_interval``.
    * ``action_delay``: apply each action after this fixed latency (``schedule``), e.g. a
      remote agent's measured RTT (the remote RL-TCP paper's 65 ms / 105 ms).
    * ``control_flow``: send each action as a packet on this flow (kind ``"control"``,
      ``send_control``): it lands when the packet arrives, delayed by the network itself.
    * ``trace`` (the environments' constructors): a Mahimahi trace (a file or
      ``builtin:NAME``, or a (forward, reverse) pair) for the bottleneck, see
      :func:`as_scenario`.
    * ``virtual_queues`` (default True): ``False`` runs every link the ordinary way (the
      engine's ``without_virtual_queues``): the same dynamics with another order of events
      that fall on the same nanosecond, to check that a result does not hinge on it.

    ``reset(seed=s)`` sets the scenario's seed to ``s`` (so equal seeds give identical
    episodes); ``reset()`` without a seed draws one from the env's RNG. ``fork()`` returns
    an independent copy of the env in the same state, Python RNGs included.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        scenario: Scenario,
        *,
        step_interval: float | str = "100ms",
        episode_steps: int | None = None,
        warmup: float | str = 0,
        trigger: tuple[str, int] | None = None,
        action_delay: float | str | None = None,
        control_flow: int | None = None,
        virtual_queues: bool = True,
    ):
        super().__init__()
        self.virtual_queues = virtual_queues
        self.scenario = scenario
        self.step_ns = to_ns(step_interval, "step_interval")
        if self.step_ns <= 0:
            raise EnvConfigError(f"step_interval {step_interval!r} must be positive")
        self.warmup_ns = to_ns(warmup, "warmup")
        available = scenario.duration - self.warmup_ns
        fit = available // self.step_ns
        if episode_steps is None:
            if fit < 1:
                raise EnvConfigError(
                    f"scenario {scenario.name!r} (duration {scenario.duration / 1e9:g}s) has "
                    f"no room for one step of {self.step_ns / 1e9:g}s after the warm-up"
                )
            episode_steps = int(fit)
        elif episode_steps < 1 or (trigger is None and episode_steps > fit):
            raise EnvConfigError(
                f"episode_steps {episode_steps} must be at least 1 and fit in the scenario's "
                f"duration ({fit} steps of {self.step_ns / 1e9:g}s after the warm-up)"
            )
        self.episode_steps = int(episode_steps)
        if action_delay is not None and control_flow is not None:
            raise EnvConfigError("give either action_delay or control_flow, not both")
        self.action_delay_ns = None if action_delay is None else to_ns(action_delay, "action_delay")
        self.control_flow = control_flow
        if control_flow is not None:
            flows = scenario.resolved_flows()
            if not 0 <= control_flow < len(flows) or flows[control_flow].spec.kind != "control":
                raise EnvConfigError(
                    f"control_flow {control_flow} must be the index of a flow of kind "
                    "'control' in the scenario"
                )
        self.trigger = trigger
        self._core_cfg = scenario.to_core_config()
        self._sim: Simulation | None = None
        self._steps = 0
        self._next_ns = 0
        self.record: Any = None
        """The last step's record(s) (:class:`~l4sim.envs.features.SenderStep` /
        :class:`~l4sim.envs.features.QueueStep`), raw values for analysis."""

    # -- hooks for subclasses ----------------------------------------------------------------

    def _decode(self, action: Any) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _start(self, raw: dict[str, Any]) -> np.ndarray:
        raise NotImplementedError

    def _finish(self, raw: dict[str, Any]) -> tuple[np.ndarray, float]:
        raise NotImplementedError

    # -- simulation --------------------------------------------------------------------------

    @property
    def sim(self) -> Simulation:
        """The running simulation (after :meth:`reset`)."""
        if self._sim is None:
            raise gym.error.ResetNeeded("call reset() before using the simulation")
        return self._sim

    def _make_sim(self, seed: int) -> Simulation:
        cfg = dict(self._core_cfg)
        cfg["seed"] = seed
        core = _core_module().Simulation(core_json(cfg))
        if not self.virtual_queues:
            core.without_virtual_queues()
        scenario = self.scenario.model_copy(update={"seed": seed})
        sim = Simulation(scenario, _core_sim=core)
        if self.trigger is not None:
            sim.set_packet_trigger(self.trigger[0], int(self.trigger[1]))
        # Always run to the warm-up (also 0): events at t = 0 happen before the first action.
        sim.run_until_ns(self.warmup_ns)
        return sim

    def _prepare(self, seed: int | None) -> Simulation:
        """Seed the env, build a fresh simulation at the end of the warm-up, reset counters."""
        whole = isinstance(seed, int | np.integer) and not isinstance(seed, bool)
        if seed is not None and not (whole and 0 <= seed < 2**64):
            raise EnvConfigError(f"seed {seed!r} must be a whole number from 0 to 2^64 - 1")
        super().reset(seed=seed)
        sim_seed = seed if seed is not None else int(self.np_random.integers(0, 2**63 - 1))
        self._steps = 0
        self._next_ns = self.warmup_ns
        return self._make_sim(sim_seed)

    def _advance_target(self) -> int:
        self._next_ns += self.step_ns
        return self._next_ns

    def _flags(self) -> tuple[bool, bool]:
        self._steps += 1
        return False, self._steps >= self.episode_steps

    def _deliver(self, sim: Simulation, actions: list[dict[str, Any]]) -> None:
        for a in actions:
            if self.control_flow is not None:
                sim.send_control(self.control_flow, a)
            elif self.action_delay_ns:
                sim.schedule_ns(a, self.action_delay_ns)
            else:
                sim.apply(a)

    # -- Gymnasium API -----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self._sim = self._prepare(seed)
        raw = self._sim.observe()
        return self._start(raw), {"time_s": raw["time_s"]}

    def _check(self, action: Any) -> Any:
        """``action`` as :meth:`_decode` takes it, checked against the action space."""
        return checked_action(self.action_space, action)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        sim = self.sim
        self._deliver(sim, self._decode(self._check(action)))
        target = self._advance_target()
        if self.trigger is None:
            sim.run_until_ns(target)
        else:
            sim.run_until_trigger_ns(target)
            self._next_ns = sim.now_ns
        raw = sim.observe()
        obs, reward = self._finish(raw)
        terminated, truncated = self._flags()
        truncated = truncated or sim.finished
        return obs, reward, terminated, truncated, {"time_s": raw["time_s"]}

    def fork(self) -> L4simEnv:
        """An independent env in the same state: the simulation is deep-copied (it continues
        exactly as this one would) and so are the env's RNG, spaces and trackers."""
        sim = self.sim
        memo = {id(sim): sim.fork(), id(self.scenario): self.scenario}
        return copy.deepcopy(self, memo)

    def close(self) -> None:
        self._sim = None
