"""``l4sim/TcpCwnd-v0``: an agent sets one TCP sender's congestion window.

The controlled flow's cca is ``"external"`` (the env switches it if the scenario names
another cca): the core never changes its cwnd by itself (loss recovery still retransmits),
so the agent owns the window, as in ns3-ai's RL-TCP and MA-CC's TCP agent.

Observation: the 9 sender features of :data:`~l4sim.envs.features.SENDER_FEATURES`, float32,
each normalised by the flow's reference scales (the slowest link on its path and twice its
propagation delay) and clipped to ``[0, 100]``:

====  ===============  ==========================  ========================================
idx   feature          raw unit                    normalisation
====  ===============  ==========================  ========================================
0     segments_acked   segments acked in the step  / segments the ref. rate carries per step
1     bytes_in_flight  bytes                       / BDP bytes (ref. rate x ref. RTT / 8)
2     cwnd             segments                    / BDP in segments
3     ssthresh         segments                    / BDP in segments (unset: 100)
4     rtt              smoothed RTT, seconds       / ref. RTT (no sample yet: 0)
5     min_rtt          seconds                     / ref. RTT (no sample yet: 0)
6     delivery_rate    bits per second             / ref. rate (no sample yet: 0)
7     losses           segments lost in the step   / segments per step at the ref. rate
8     ecn_marks        CE echoes in the step       / segments per step at the ref. rate
====  ===============  ==========================  ========================================

Actions (``action_set``):

* ``"delta"`` (default), Discrete(5): 0 keep, 1 cwnd += 1 segment, 2 cwnd -= 1 segment,
  3 cwnd x 2, 4 cwnd x 1/2.
* ``"macc"``, Discrete(3), MA-CC's eq. (1): 0 cwnd += 1 segment, 1 cwnd = max(cwnd - 1, 1),
  2 keep.
* ``"ns3ai"``, Discrete(4), ns3-ai's RL-TCP agent (bytes): odd actions cwnd += MSS, even
  ones cwnd += max(1, MSS^2 / cwnd); actions 0-2 set ssthresh = 2 MSS, 3 sets
  ssthresh = bytesInFlight / 2. (It never decreases the window.)
* ``"continuous"``, Box([-1], [1]): cwnd x 2^a.

The window is kept in bytes on the agent's side (so ns3-ai's sub-segment increments add up)
and sent as whole segments, clamped to ``[min_cwnd, max_cwnd]`` segments; an action that
does not change the segment count sends nothing. Reward: ``reward`` names a sender reward
of :mod:`l4sim.envs.rewards` (default ``"tcp"``) or is a callable of a
:class:`~l4sim.envs.features.SenderStep`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces

from l4sim.envs import rewards as _rewards
from l4sim.envs.base import L4simEnv, ScenarioLike, as_scenario
from l4sim.envs.defaults import TCP_SCENARIO
from l4sim.envs.features import (
    OBS_HIGH,
    SENDER_FEATURES,
    SenderTracker,
    Topology,
    sender_vector,
)
from l4sim.errors import EnvConfigError
from l4sim.scenario import Scenario, TcpFlow

__all__ = ["ACTION_SETS", "TcpCwndEnv", "with_external_cca"]

ACTION_SETS = ("delta", "macc", "ns3ai", "continuous")


def with_external_cca(scenario: Scenario, flows: list[int]) -> Scenario:
    """The scenario with flows ``flows`` (resolved indices) switched to cca "external"."""
    resolved = scenario.resolved_flows()
    data = scenario.to_dict()
    changed = False
    for i in flows:
        if not 0 <= i < len(resolved) or resolved[i].spec.kind != "tcp":
            raise EnvConfigError(f"flow {i} must be the index of a TCP flow of the scenario")
        rf = resolved[i]
        if isinstance(rf.spec, TcpFlow) and rf.spec.cca.kind == "external":
            continue
        if rf.spec.count > 1:
            raise EnvConfigError(
                f"flow {i} comes from flows[{rf.source_index}] with count {rf.spec.count}; "
                "give the agent's flow its own [[flows]] entry with cca = 'external'"
            )
        data["flows"][rf.source_index]["cca"] = "external"
        changed = True
    return Scenario.parse(data, source="env") if changed else scenario


class TcpCwndEnv(L4simEnv):
    """One agent sets flow ``flow``'s congestion window every step (see the module doc for
    the observation table, the action sets and the rewards; :class:`L4simEnv` for the
    common options)."""

    def __init__(
        self,
        scenario: ScenarioLike | None = None,
        *,
        flow: int = 0,
        action_set: str = "delta",
        reward: Any = "tcp",
        reward_kwargs: dict[str, Any] | None = None,
        min_cwnd: int = 1,
        max_cwnd: int | None = None,
        **options: Any,
    ):
        trace = options.pop("trace", None)
        base = as_scenario(scenario if scenario is not None else TCP_SCENARIO, trace)
        scen = with_external_cca(base, [flow])
        super().__init__(scen, **options)
        if action_set not in ACTION_SETS:
            raise EnvConfigError(
                f"action_set {action_set!r} is not known; allowed: {', '.join(ACTION_SETS)}"
            )
        self.flow = flow
        self.action_set = action_set
        topo = Topology(scen)
        self.mss = topo.mss(flow)
        rate, rtt = topo.flow_refs(flow)
        self.rate_ref_bps, self.rtt_ref_s = rate, rtt
        bdp_segs = rate * rtt / 8 / self.mss
        self.min_cwnd = max(1, int(min_cwnd))
        self.max_cwnd = int(max_cwnd) if max_cwnd is not None else max(64, int(10 * bdp_segs))
        self.reward_fn = _rewards.get(reward, "sender", reward_kwargs)
        self.tracker = SenderTracker(flow, self.mss, rate, rtt)
        n = len(SENDER_FEATURES)
        self.observation_space = spaces.Box(0.0, OBS_HIGH, (n,), np.float32)
        if action_set == "continuous":
            self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        else:
            self.action_space = spaces.Discrete({"delta": 5, "macc": 3, "ns3ai": 4}[action_set])
        self._cwnd_bytes = 0.0  # the agent's window (bytes)
        self._cwnd_sent = 0  # the last window sent (segments)
        self._bytes_in_flight = 0

    def _start(self, raw: dict[str, Any]) -> np.ndarray:
        self.tracker.start(raw)
        f = raw["flows"]
        self._cwnd_sent = int(f["cwnd_pkts"][self.flow])
        self._cwnd_bytes = float(self._cwnd_sent * self.mss)
        self._bytes_in_flight = int(f["bytes_in_flight"][self.flow])
        self.record = None
        obs = np.zeros(len(SENDER_FEATURES), np.float32)
        bdp_bytes = self.rate_ref_bps * self.rtt_ref_s / 8
        obs[2] = min(self._cwnd_sent * self.mss / bdp_bytes, OBS_HIGH)
        return obs

    def _finish(self, raw: dict[str, Any]) -> tuple[np.ndarray, float]:
        rec = self.tracker.step(raw)
        self.record = rec
        self._bytes_in_flight = rec.bytes_in_flight
        return np.array(sender_vector(rec), np.float32), float(self.reward_fn(rec))

    def _decode(self, action: Any) -> list[dict[str, Any]]:
        mss = self.mss
        w = self._cwnd_bytes
        ssthresh = None
        kind = self.action_set
        if kind == "continuous":
            a = float(np.asarray(action, dtype=np.float64).reshape(-1)[0])
            w *= 2.0 ** min(1.0, max(-1.0, a))
        else:
            a = int(action)
            if kind == "delta":
                if a == 1:
                    w += mss
                elif a == 2:
                    w -= mss
                elif a == 3:
                    w *= 2.0
                elif a == 4:
                    w *= 0.5
            elif kind == "macc":
                if a == 0:
                    w += mss
                elif a == 1:
                    w = max(w - mss, mss)
            else:  # ns3ai
                if a & 1:
                    w += mss
                elif w > 0:
                    w += max(1.0, math.floor(mss * mss / w))
                ssthresh = 2 if a < 3 else max(2, self._bytes_in_flight // 2 // mss)
        w = min(max(w, self.min_cwnd * mss), self.max_cwnd * mss)
        self._cwnd_bytes = w
        segs = int(w // mss)
        if segs == self._cwnd_sent and ssthresh is None:
            return []
        self._cwnd_sent = segs
        act: dict[str, Any] = {"kind": "set_cwnd", "flow": self.flow, "cwnd": segs}
        if ssthresh is not None:
            act["ssthresh"] = int(ssthresh)
        return [act]
