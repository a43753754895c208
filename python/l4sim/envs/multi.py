"""``MultiCCEnv``: a PettingZoo ``ParallelEnv`` with TCP agents (one per flow, each sets its
flow's cwnd) and AQM agents (one per ``external`` qdisc, each sets its drop probability) acting
together every step — MA-CC's cross-layer set-up.

Each agent sees what its single-agent counterpart sees: a TCP agent the 9 sender features of
:class:`~l4sim.envs.tcp.TcpCwndEnv`, an AQM agent the 7 queue features of
:class:`~l4sim.envs.aqm.AqmDropEnv`; the action sets are theirs too (default MA-CC's:
Discrete(3) for TCP — +1 segment, -1 segment, keep — and Discrete(2) for AQM — p = 0 or 1).
Rewards: r1 (``macc_r1``) for TCP agents and r2 (``macc_r2``) for AQM agents by default;
``shared_reward=True`` gives every agent the sum (the team reward VDN trains on).

Agents are named ``tcp_<flow>`` and ``aqm_<link>`` (``aqm_r0->r1``).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from pettingzoo import ParallelEnv

from l4sim.envs.aqm import AqmDropEnv
from l4sim.envs.base import L4simEnv, ScenarioLike, as_scenario, checked_action
from l4sim.envs.defaults import MULTI_SCENARIO
from l4sim.envs.features import Topology
from l4sim.envs.tcp import TcpCwndEnv, with_external_cca
from l4sim.errors import ActionError, EnvConfigError
from l4sim.scenario import TcpFlow

__all__ = ["MultiCCEnv"]


class _Joint(L4simEnv):
    """The shared clock and simulation; the per-agent heads decode actions and compute
    observations and rewards from the joint snapshot."""

    def __init__(self, scenario: Any, heads: dict[str, L4simEnv], shared: bool, **options: Any):
        super().__init__(scenario, **options)
        self.heads = heads
        self.shared = shared

    def _check(self, actions: Any) -> dict[str, Any]:
        """Each agent's action checked against its space; an unknown agent is an error."""
        agents = ", ".join(self.heads)
        if not isinstance(actions, dict):
            raise ActionError(
                f"actions {actions!r} must be a dict from agent name to action (agents: {agents})"
            )
        for agent in actions:
            if agent not in self.heads:
                raise ActionError(f"there is no agent {agent!r}; agents: {agents}")
        return {
            a: checked_action(self.heads[a].action_space, x, f"agent {a}'s action")
            for a, x in actions.items()
        }

    def _decode(self, actions: dict[str, Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for agent, action in actions.items():
            out.extend(self.heads[agent]._decode(action))
        return out

    def _start(self, raw: dict[str, Any]) -> dict[str, np.ndarray]:  # type: ignore[override]
        return {a: h._start(raw) for a, h in self.heads.items()}

    def _finish(self, raw: dict[str, Any]) -> tuple[dict, dict]:  # type: ignore[override]
        obs, rew = {}, {}
        for a, h in self.heads.items():
            obs[a], rew[a] = h._finish(raw)
        if self.shared:
            total = float(sum(rew.values()))
            rew = dict.fromkeys(rew, total)
        self.record = {a: h.record for a, h in self.heads.items()}
        return obs, rew


class MultiCCEnv(ParallelEnv):
    """TCP and AQM agents in one simulation (PettingZoo parallel API).

    Options: ``tcp_flows`` (flow indices; default every flow whose cca is ``"external"``),
    ``aqm_links`` (default every link with an ``external`` qdisc), ``tcp_action_set`` (default
    ``"macc"``), ``aqm_action_set`` (default ``"macc"``), ``tcp_reward`` / ``aqm_reward``
    (default ``"macc_r1"`` / ``"macc_r2"``) with ``tcp_reward_kwargs`` /
    ``aqm_reward_kwargs``, ``shared_reward`` (default False), and the common options of
    :class:`~l4sim.envs.base.L4simEnv` (``step_interval`` — MA-CC uses 0.2 s —,
    ``episode_steps``, ``warmup``, ``action_delay``, ``control_flow``)."""

    metadata = {"name": "l4sim_macc_v0", "render_modes": []}  # noqa: RUF012

    def __init__(
        self,
        scenario: ScenarioLike | None = None,
        *,
        tcp_flows: list[int] | None = None,
        aqm_links: list[str] | None = None,
        tcp_action_set: str = "macc",
        aqm_action_set: str = "macc",
        tcp_reward: Any = "macc_r1",
        aqm_reward: Any = "macc_r2",
        tcp_reward_kwargs: dict[str, Any] | None = None,
        aqm_reward_kwargs: dict[str, Any] | None = None,
        shared_reward: bool = False,
        **options: Any,
    ):
        scen = as_scenario(
            scenario if scenario is not None else MULTI_SCENARIO, options.pop("trace", None)
        )
        if tcp_flows is None:
            tcp_flows = [
                rf.index
                for rf in scen.resolved_flows()
                if isinstance(rf.spec, TcpFlow) and rf.spec.cca.kind == "external"
            ]
        scen = with_external_cca(scen, list(tcp_flows))
        if aqm_links is None:
            aqm_links = Topology(scen).links_of_kind("external")
        if not tcp_flows and not aqm_links:
            raise EnvConfigError(
                "the scenario has no agent: give tcp_flows (or flows with cca 'external') "
                "or aqm_links (or links with an 'external' qdisc)"
            )
        heads: dict[str, L4simEnv] = {}
        for f in tcp_flows:
            heads[f"tcp_{f}"] = TcpCwndEnv(
                scen,
                flow=f,
                action_set=tcp_action_set,
                reward=tcp_reward,
                reward_kwargs=tcp_reward_kwargs,
                **options,
            )
        for link in aqm_links:
            heads[f"aqm_{link}"] = AqmDropEnv(
                scen,
                link=link,
                action_set=aqm_action_set,
                reward=aqm_reward,
                reward_kwargs=aqm_reward_kwargs,
                **options,
            )
        self._joint = _Joint(scen, heads, shared_reward, **options)
        self.scenario = scen
        self.possible_agents = list(heads)
        self.agents: list[str] = []
        self.render_mode = None
        self._obs_spaces = {a: h.observation_space for a, h in heads.items()}
        self._act_spaces = {a: h.action_space for a, h in heads.items()}

    def observation_space(self, agent: str):
        return self._obs_spaces[agent]

    def action_space(self, agent: str):
        return self._act_spaces[agent]

    @property
    def record(self) -> dict[str, Any] | None:
        """The last step's per-agent records (raw values, see :mod:`l4sim.envs.features`)."""
        return self._joint.record

    @property
    def sim(self):
        return self._joint.sim

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, info = self._joint.reset(seed=seed, options=options)
        if seed is not None:
            for i, a in enumerate(self.possible_agents):
                self._act_spaces[a].seed(seed + i)
        self.agents = list(self.possible_agents)
        return obs, {a: dict(info) for a in self.agents}

    def step(self, actions: dict[str, Any]):
        if not self.agents:
            raise RuntimeError("the episode is over; call reset()")
        obs, rew, term, trunc, info = self._joint.step(actions)
        terminations = dict.fromkeys(self.agents, term)
        truncations = dict.fromkeys(self.agents, trunc)
        infos = {a: dict(info) for a in self.agents}
        if term or trunc:
            self.agents = []
        return obs, rew, terminations, truncations, infos

    def fork(self) -> MultiCCEnv:
        """An independent copy in the same state (simulation, agents, RNGs)."""
        sim = self._joint.sim
        memo = {id(sim): sim.fork(), id(self.scenario): self.scenario}
        return copy.deepcopy(self, memo)

    def close(self) -> None:
        self._joint.close()
