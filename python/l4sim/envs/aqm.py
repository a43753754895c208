"""AQM environments: ``l4sim/AqmDrop-v0`` (an agent sets a queue's drop or mark probability)
and ``l4sim/DualPi2-v0`` (an agent sets DualPI2's base probability p', optionally k).

Observation: the 7 queue features of :data:`~l4sim.envs.features.QUEUE_FEATURES`, float32,
normalised by the link's rate and a reference RTT (the largest base RTT of the flows that
cross the link, else 100 ms) and clipped to ``[0, 100]``:

====  =============  ========================================  ================================
idx   feature        raw unit                                  normalisation
====  =============  ========================================  ================================
0     backlog_pkts   packets                                   / BDP in 1500-byte packets
1     backlog_bytes  bytes                                     / BDP bytes
2     dequeue_rate   bits per second over the step             / link rate
3     sojourn        seconds the head packet has waited (now)  / ref. RTT
4     drops          packets dropped in the step               / link capacity, packets per step
5     marks          CE marks in the step                      / link capacity, packets per step
6     prob           the AQM's probability now                 as is (none: 0)
====  =============  ========================================  ================================
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from l4sim.envs import rewards as _rewards
from l4sim.envs.base import L4simEnv, ScenarioLike, as_scenario
from l4sim.envs.defaults import AQM_SCENARIO, DUALPI2_SCENARIO
from l4sim.envs.features import OBS_HIGH, QUEUE_FEATURES, QueueTracker, Topology, queue_vector
from l4sim.errors import EnvConfigError

__all__ = ["AqmDropEnv", "DualPi2Env", "pick_link"]


def pick_link(topo: Topology, link: str | None, kind: str) -> str:
    """``link`` if it has qdisc ``kind``, else the first such link; a clear error if none."""
    links = topo.links_of_kind(kind)
    if link is None:
        if not links:
            raise EnvConfigError(f"the scenario has no link with a qdisc of kind {kind!r}")
        return links[0]
    if link not in links:
        raise EnvConfigError(
            f"link {link!r} has no qdisc of kind {kind!r}; such links: {', '.join(links) or 'none'}"
        )
    return link


class _QueueEnv(L4simEnv):
    kind = ""

    def __init__(
        self,
        scenario: ScenarioLike | None,
        default: dict[str, Any],
        *,
        link: str | None,
        reward: Any,
        reward_kwargs: dict[str, Any] | None,
        rtt_ref: float | str | None,
        **options: Any,
    ):
        trace = options.pop("trace", None)
        scen = as_scenario(scenario if scenario is not None else default, trace)
        super().__init__(scen, **options)
        topo = Topology(scen)
        self.link = pick_link(topo, link, self.kind)
        rate = topo.link_rate(self.link)
        rtt = topo.link_rtt(self.link) if rtt_ref is None else _seconds(rtt_ref)
        self.rate_ref_bps, self.rtt_ref_s = rate, rtt
        self.tracker = QueueTracker(self.link, rate, rtt)
        self.reward_fn = _rewards.get(reward, "queue", reward_kwargs)
        self.observation_space = spaces.Box(0.0, OBS_HIGH, (len(QUEUE_FEATURES),), np.float32)

    def _start(self, raw: dict[str, Any]) -> np.ndarray:
        self.tracker.start(raw)
        self.record = None
        return np.zeros(len(QUEUE_FEATURES), np.float32)

    def _finish(self, raw: dict[str, Any]) -> tuple[np.ndarray, float]:
        rec = self.tracker.step(raw)
        self.record = rec
        return np.array(queue_vector(rec), np.float32), float(self.reward_fn(rec))


def _seconds(t: float | str) -> float:
    from l4sim.engine.simulation import to_ns

    return to_ns(t, "rtt_ref") / 1e9


class AqmDropEnv(_QueueEnv):
    """An agent sets the drop (with the qdisc's ``ecn``: mark) probability of an
    ``external`` qdisc for the next interval.

    Options: ``link`` (default: the first link whose qdisc kind is ``"external"``),
    ``action_set`` ``"continuous"`` (default, Box([0], [max_prob])) or ``"macc"``
    (Discrete(2): p = 0 or 1, MA-CC's eq. 2), ``reward`` (default ``"macc_r2"``; any queue
    reward of :mod:`l4sim.envs.rewards`), ``rtt_ref``; plus :class:`L4simEnv`'s options.
    An unchanged probability sends nothing."""

    kind = "external"

    def __init__(
        self,
        scenario: ScenarioLike | None = None,
        *,
        link: str | None = None,
        action_set: str = "continuous",
        max_prob: float = 1.0,
        reward: Any = "macc_r2",
        reward_kwargs: dict[str, Any] | None = None,
        rtt_ref: float | str | None = None,
        **options: Any,
    ):
        super().__init__(
            scenario,
            AQM_SCENARIO,
            link=link,
            reward=reward,
            reward_kwargs=reward_kwargs,
            rtt_ref=rtt_ref,
            **options,
        )
        if action_set not in ("continuous", "macc"):
            raise EnvConfigError(
                f"action_set {action_set!r} is not known; allowed: continuous, macc"
            )
        if not 0.0 < max_prob <= 1.0:
            raise EnvConfigError(f"max_prob {max_prob} must be in (0, 1]")
        self.action_set = action_set
        self.max_prob = float(max_prob)
        if action_set == "continuous":
            self.action_space = spaces.Box(0.0, self.max_prob, (1,), np.float32)
        else:
            self.action_space = spaces.Discrete(2)
        self._prob = 0.0

    def _start(self, raw: dict[str, Any]) -> np.ndarray:
        self._prob = 0.0
        return super()._start(raw)

    def _decode(self, action: Any) -> list[dict[str, Any]]:
        if self.action_set == "continuous":
            p = float(np.asarray(action, dtype=np.float64).reshape(-1)[0])
            p = min(max(p, 0.0), self.max_prob)
        else:
            p = 1.0 if int(action) == 1 else 0.0
        if p == self._prob:
            return []
        self._prob = p
        return [{"kind": "set_drop_prob", "link": self.link, "prob": p}]


class DualPi2Env(_QueueEnv):
    """An agent sets DualPI2's base probability p' (Classic p_C = p'^2, L p_CL = k p') for
    the next interval, replacing the PI2 controller's output, and optionally the coupling
    factor k — A3C-L4S's control ("L4S in FreeBSD with A3C") on RFC 9332's DualQ.

    Options: ``link`` (default: the first ``dualpi2`` link), ``max_prob`` (upper bound of
    p', default 1), ``coupling`` (``None``: p' only, Box([0], [max_prob]); a ``(k_min,
    k_max)`` pair: Box([0, 0], [1, 1]), the second entry mapped linearly onto
    [k_min, k_max] and p' = max_prob x the first), ``reward`` (default ``"a3c_l4s"``,
    minus the queue delay in ms), ``rtt_ref``; plus :class:`L4simEnv`'s options."""

    kind = "dualpi2"

    def __init__(
        self,
        scenario: ScenarioLike | None = None,
        *,
        link: str | None = None,
        max_prob: float = 1.0,
        coupling: tuple[float, float] | None = None,
        reward: Any = "a3c_l4s",
        reward_kwargs: dict[str, Any] | None = None,
        rtt_ref: float | str | None = None,
        **options: Any,
    ):
        super().__init__(
            scenario,
            DUALPI2_SCENARIO,
            link=link,
            reward=reward,
            reward_kwargs=reward_kwargs,
            rtt_ref=rtt_ref,
            **options,
        )
        if not 0.0 < max_prob <= 1.0:
            raise EnvConfigError(f"max_prob {max_prob} must be in (0, 1]")
        self.max_prob = float(max_prob)
        self.coupling = coupling
        if coupling is None:
            self.action_space = spaces.Box(0.0, self.max_prob, (1,), np.float32)
        else:
            lo, hi = float(coupling[0]), float(coupling[1])
            if not 0.0 < lo < hi <= 100.0:
                raise EnvConfigError(
                    f"coupling {coupling!r} must be a pair (k_min, k_max), 0 < k_min < k_max"
                )
            self.action_space = spaces.Box(0.0, 1.0, (2,), np.float32)
        self._last: tuple[float, float | None] | None = None

    def _start(self, raw: dict[str, Any]) -> np.ndarray:
        self._last = None
        return super()._start(raw)

    def _decode(self, action: Any) -> list[dict[str, Any]]:
        a = np.asarray(action, dtype=np.float64).reshape(-1)
        if self.coupling is None:
            p = min(max(float(a[0]), 0.0), self.max_prob)
        else:
            p = self.max_prob * min(max(float(a[0]), 0.0), 1.0)
        k = None
        if self.coupling is not None:
            lo, hi = self.coupling
            k = lo + (hi - lo) * min(max(float(a[1]), 0.0), 1.0)
        if (p, k) == self._last:
            return []
        self._last = (p, k)
        params = {"base_prob": p} if k is None else {"base_prob": p, "coupling": k}
        return [{"kind": "set_qdisc", "link": self.link, "params": params}]
