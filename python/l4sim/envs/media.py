"""``l4sim/MediaRate-v0``: an agent sets a real-time video sender's target bitrate.

The controlled flow is a UDP flow with a ``video`` source, ``cc = "none"`` and RFC 8888
feedback: the agent takes the congestion control's place. Every step it sets the encoder's
target (the core's ``set_media_rate`` action), which the encoder follows with its
configured ``lag``, exactly as it follows a congestion control's target; the pacer paces
at ``pacing`` x the target at once.

Observation: the 8 features of :data:`MEDIA_FEATURES`, float32, clipped to ``[0, 100]``,
all things the sender itself knows (its own counters and its RFC 8888 feedback), over the
last step:

====  ===================  =================================  ================================
idx   feature              raw unit                           normalisation
====  ===================  =================================  ================================
0     delivered_rate       payload bits received / step (b/s) / ref. rate (path's bottleneck)
1     target_rate          the encoder's target now (b/s)     / ref. rate
2     frame_delay_p50      s, frames settled in the step      / the source's frame deadline
3     frame_delay_p95      s, frames settled in the step      / the source's frame deadline
4     late_frames          frames whose deadline passed unmet / frames the source makes a step
5     loss_fraction        lost / reported, in the step       as is (0 with no report)
6     ce_fraction          CE / arrived, in the step          as is (0 with no report)
7     rtt                  smoothed RTT from feedback (s)     / ref. RTT (path's base RTT)
====  ===================  =================================  ================================

A frame settles once: in the step it completes by its deadline (its delay), or in the step
its deadline passes first (late; its delay counted as the deadline, since with a lost packet
it never completes). So delays are at most 1 and a step where no frame settles reads 0.
Frame delay is the summary's: first packet sent to last packet received (frames not yet
sent count from their creation).

Actions (``action_set``):

* ``"continuous"`` (default), Box([-1], [1]): target x ``max_change`` ** a.
* ``"discrete"``, Discrete(5): target x (1, 1.1, 0.9, 1.5, 0.5)[a].

The target is kept in ``[min_rate, max_rate]`` (defaults: 1 % and 200 % of the reference
rate; the upper bound lets an agent overshoot the link and learn what that costs).

Reward (weights ``rate_weight``, ``delay_weight``, ``late_weight``; defaults 1, 2, 10)::

    rate_weight x delivered_rate - delay_weight x frame_delay_p95 - late_weight x late_frames

with the normalised features above. The defaults: a p95 frame delay of half the deadline
costs as much as delivering the whole bottleneck's rate earns, and a tenth of a step's
frames late (lost to the viewer) costs as much again. In the default scenario the best
fixed target under them is 6 Mbit/s, about the video's share of the 10 Mbit/s link beside
CUBIC (a fixed 9 Mbit/s already loses 15 % of its frames); with delay weight 1 and late
weight 2 it would be 8 Mbit/s, squeezing CUBIC and losing 2 % of the frames
(docs/envs/media-rate.md). ``reward`` may instead be a callable of the
step's :class:`MediaStep`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from l4sim.envs.base import L4simEnv, ScenarioLike, as_scenario
from l4sim.envs.defaults import MEDIA_SCENARIO
from l4sim.envs.features import OBS_HIGH, Topology
from l4sim.errors import EnvConfigError
from l4sim.scenario import Scenario, UdpFlow

__all__ = ["ACTION_SETS", "DISCRETE_FACTORS", "MEDIA_FEATURES", "MediaRateEnv", "MediaStep"]

ACTION_SETS = ("continuous", "discrete")
DISCRETE_FACTORS = (1.0, 1.1, 0.9, 1.5, 0.5)
MEDIA_FEATURES = (
    "delivered_rate",
    "target_rate",
    "frame_delay_p50",
    "frame_delay_p95",
    "late_frames",
    "loss_fraction",
    "ce_fraction",
    "rtt",
)


@dataclass(frozen=True)
class MediaStep:
    """One step of the media sender, raw (SI units) and normalised (``obs``)."""

    delivered_bps: float
    target_bps: float
    frame_delay_p50_s: float
    frame_delay_p95_s: float
    frames_completed: int
    late_frames: int
    frames_made: int
    loss_fraction: float
    ce_fraction: float
    srtt_s: float
    obs: tuple[float, ...]


def _media_flow(scenario: Scenario, flow: int) -> tuple[UdpFlow, float, float]:
    """The agent's flow, its frame rate and frame deadline (s), or one sentence why not."""
    flows = scenario.resolved_flows()
    spec = flows[flow].spec if 0 <= flow < len(flows) else None
    src = getattr(spec, "source", None)
    if not isinstance(spec, UdpFlow) or src is None or src.kind != "video":
        raise EnvConfigError(f"flow {flow} must be the index of a UDP flow with a video source")
    if spec.cc is not None and spec.cc.kind != "none":
        raise EnvConfigError(
            f"flow {flow} runs congestion control {spec.cc.kind!r}; the agent takes its "
            'place: give it cc = "none"'
        )
    if spec.feedback is None or spec.feedback.kind != "rfc8888":
        raise EnvConfigError(
            f'flow {flow} needs feedback = {{ kind = "rfc8888" }}: the agent reads its '
            "loss, CE marks and RTT"
        )
    if spec.count > 1:
        raise EnvConfigError(f"flow {flow} comes from an entry with count > 1; give it its own")
    return spec, float(src.fps), float(src.deadline) / 1e9


def _positive(name: str, value: float, zero: bool = False) -> float:
    """``value`` as a float if it is a finite number above 0 (or 0, if ``zero``)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (value == 0 and not zero):
        raise EnvConfigError(f"{name} {value!r} must be {'0 or ' if zero else ''}a positive number")
    return float(value)


class MediaRateEnv(L4simEnv):
    """One agent sets video flow ``flow``'s target bitrate every step (see the module doc
    for the observation table, the actions and the reward; :class:`L4simEnv` for the
    common options; default step 50 ms, or ``frames_per_step`` frame intervals)."""

    batchable = False  # reads the sender's own state, beyond the batched observation

    def __init__(
        self,
        scenario: ScenarioLike | None = None,
        *,
        flow: int = 0,
        action_set: str = "continuous",
        max_change: float = 1.5,
        min_rate: float | None = None,
        max_rate: float | None = None,
        rate_weight: float = 1.0,
        delay_weight: float = 2.0,
        late_weight: float = 10.0,
        reward: Callable[[MediaStep], float] | None = None,
        frames_per_step: int | None = None,
        **options: Any,
    ):
        trace = options.pop("trace", None)
        scen = as_scenario(scenario if scenario is not None else MEDIA_SCENARIO, trace)
        spec, fps, deadline_s = _media_flow(scen, flow)
        if frames_per_step is not None:
            if isinstance(frames_per_step, bool) or not isinstance(frames_per_step, int):
                raise EnvConfigError(f"frames_per_step {frames_per_step!r} must be a whole number")
            if frames_per_step < 1 or "step_interval" in options:
                raise EnvConfigError(
                    f"frames_per_step {frames_per_step} must be at least 1, and given instead "
                    "of step_interval"
                )
            options["step_interval"] = round(frames_per_step * 1e9 / fps) / 1e9
        options.setdefault("step_interval", "50ms")
        super().__init__(scen, **options)
        if action_set not in ACTION_SETS:
            raise EnvConfigError(
                f"action_set {action_set!r} is not known; allowed: {', '.join(ACTION_SETS)}"
            )
        self.flow, self.action_set = flow, action_set
        self.max_change = _positive("max_change", max_change)
        if self.max_change <= 1:
            raise EnvConfigError(f"max_change {max_change} must be above 1 (a factor per step)")
        rate_ref, rtt_ref = Topology(scen).flow_refs(flow)
        self.rate_ref_bps, self.rtt_ref_s = rate_ref, rtt_ref
        self.min_rate = _positive("min_rate", min_rate if min_rate is not None else rate_ref / 100)
        self.max_rate = _positive("max_rate", max_rate if max_rate is not None else 2 * rate_ref)
        if self.min_rate >= self.max_rate:
            raise EnvConfigError(
                f"min_rate {self.min_rate:g} must be below max_rate {self.max_rate:g} (bit/s)"
            )
        self.weights = tuple(
            _positive(n, w, zero=True)
            for n, w in (
                ("rate_weight", rate_weight),
                ("delay_weight", delay_weight),
                ("late_weight", late_weight),
            )
        )
        if reward is not None and not callable(reward):
            raise EnvConfigError(f"reward {reward!r} must be a callable of a MediaStep, or None")
        self.reward_fn = reward
        self.initial_rate = min(max(float(spec.rate or 0), self.min_rate), self.max_rate)
        self.deadline_s = deadline_s
        self.step_s = self.step_ns / 1e9
        self.frames_per_step_ref = max(fps * self.step_s, 1.0)
        n = len(MEDIA_FEATURES)
        self.observation_space = spaces.Box(0.0, OBS_HIGH, (n,), np.float32)
        if action_set == "continuous":
            self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        else:
            self.action_space = spaces.Discrete(len(DISCRETE_FACTORS))
        self._rate = self.initial_rate
        self._last: dict[str, Any] = {}
        self._since_ns = 0

    def _observe(self) -> dict[str, Any]:
        return self.sim.observe_media(self.flow, self._since_ns)

    def _start(self, raw: dict[str, Any]) -> np.ndarray:
        self._rate = self.initial_rate
        self._since_ns = self.sim.now_ns
        self._last = self._observe()
        self.record = None
        obs = np.zeros(len(MEDIA_FEATURES), np.float32)
        obs[1] = min(self._last["target_bps"] / self.rate_ref_bps, OBS_HIGH)
        return obs

    def _finish(self, raw: dict[str, Any]) -> tuple[np.ndarray, float]:
        m, prev = self._observe(), self._last
        self._last, self._since_ns = m, self.sim.now_ns
        step_s = max(m["time_s"] - prev["time_s"], 1e-9)
        delivered = (m["bytes_received"] - prev["bytes_received"]) * 8 / step_s
        acked = m["fb_acked"] - prev["fb_acked"]
        lost = m["fb_lost"] - prev["fb_lost"]
        delays = np.asarray(m["frame_delays_s"], dtype=np.float64)
        p50, p95 = np.percentile(delays, [50, 95]) if delays.size else (0.0, 0.0)
        srtt = m["srtt_s"] if math.isfinite(m["srtt_s"]) else 0.0
        values = (
            delivered / self.rate_ref_bps,
            m["target_bps"] / self.rate_ref_bps,
            p50 / self.deadline_s,
            p95 / self.deadline_s,
            m["late_frames"] / self.frames_per_step_ref,
            lost / (acked + lost) if acked + lost else 0.0,
            (m["fb_ce"] - prev["fb_ce"]) / acked if acked else 0.0,
            srtt / self.rtt_ref_s,
        )
        obs = tuple(min(max(float(v), 0.0), OBS_HIGH) for v in values)
        rec = MediaStep(
            delivered_bps=delivered,
            target_bps=float(m["target_bps"]),
            frame_delay_p50_s=float(p50),
            frame_delay_p95_s=float(p95),
            frames_completed=int(delays.size),
            late_frames=int(m["late_frames"]),
            frames_made=int(m["frames_made"]),
            loss_fraction=obs[5],
            ce_fraction=obs[6],
            srtt_s=srtt,
            obs=obs,
        )
        self.record = rec
        if self.reward_fn is not None:
            reward = float(self.reward_fn(rec))
        else:
            w_rate, w_delay, w_late = self.weights
            reward = w_rate * obs[0] - w_delay * obs[3] - w_late * obs[4]
        return np.array(obs, np.float32), reward

    def _decode(self, action: Any) -> list[dict[str, Any]]:
        if self.action_set == "continuous":
            a = float(np.asarray(action, dtype=np.float64).reshape(-1)[0])
            factor = self.max_change ** min(1.0, max(-1.0, a))
        else:
            factor = DISCRETE_FACTORS[int(action)]
        self._rate = min(max(self._rate * factor, self.min_rate), self.max_rate)
        return [{"kind": "set_media_rate", "flow": self.flow, "rate_bps": int(self._rate)}]
