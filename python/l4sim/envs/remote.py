"""``RemoteTcpEnv``: the remote RL-TCP paper's remote brain in one simulation (Fig. 2 / Fig. 5).

The scenario (:func:`unified_scenario`) joins the paper's two dumbbells at the IoT devices:

* **data dumbbell** (right of Fig. 2): ``iot{i} -> dr0 -> dr1 -> c{i}``, the device's TCP
  flow (cca ``external``: the remote brain owns its window) against ``L`` CUBIC flows
  ``cc{k} -> ch{k}``, over a tail-drop FIFO bottleneck ``dr0->dr1``;
* **control dumbbell** (left): the server ``rs{i}`` reaches the device over
  ``rs{i} - cr0 - cr1 - iot{i}``, sharing the bottleneck ``cr0->cr1`` with ``M`` CUBIC
  flows ``bc{j} -> bh{j}`` (same direction as the actions); its queue is FIFO, FqCoDel
  (the paper's L4S stand-in, control packets ECT(1)) or DualPI2 (control packets ECT(1)).

Table 1: bottlenecks 10 Mbit/s / 0.01 ms; access links 100 Mbit/s, 10 ms (link 1, the
devices, servers and the IoT receivers) and 9.5 ms (link 2, the competing hosts); 500 KB
send / receive buffers. Flow order: the ``N`` IoT data flows, the ``L`` data-path CUBIC
flows, the ``M`` control-path CUBIC flows, the ``N`` observation flows (device -> server,
kind ``control``) and the ``N`` action flows (server -> device).

The loop (every ``step_interval``, default 0.1 s, from ``warmup``): each device takes its
state (the 9 sender features of :mod:`l4sim.envs.tcp` over the last interval) and sends it
as a packet to its server (``Simulation.send_message``); the simulation runs until a state
arrives (``run_until_trigger``); the agent acts on the state that arrived, and its action
goes back as a packet (``send_control``) that sets the window when it lands, followed by a
message (``send_message``) whose delivery times the action for the experiment and counts it
as applied at the device (were the action dropped and its message not, it would still be
counted). One
``step()`` is one decision for device 0 (the agent's device): it returns the next state of
device 0 that reaches the server and the reward that state carries (device 0's reward over
its interval). States of other devices (``N > 1``) are answered by ``peer_policy``
(default: keep the window). A state or action packet the control path drops is lost, as
in a real network. ``info`` holds the state's ``age_s`` (delivery minus send time), its
``sent_s``, the number of actions still in flight and the counts of lost messages.

Observations (``obs_mode``):

* ``"plain"`` (the paper's RL-TCP): the 9 sender features (float32, ``[0, 100]``).
* ``"aware"``: those plus the state's age / 100 ms, the actions sent and not yet landed,
  and the window the server last commanded / BDP (so the agent can tell what its actions
  in flight will do).

Actions (``action_set``): ``"delta"`` (RL-TCP: keep, +1, -1 segment, x2, x1/2) or
``"mult"`` (multiplicative, Discrete(5): x1, x1.1, x1/1.1, x1.5, x1/1.5) on the window the
server last commanded. Reward: a sender reward name of :mod:`l4sim.envs.rewards` or a callable of
a :class:`~l4sim.envs.features.SenderStep`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from l4sim.envs import rewards as _rewards
from l4sim.envs.base import L4simEnv, checked_action
from l4sim.envs.features import OBS_HIGH, SENDER_FEATURES, SenderTracker, Topology, sender_vector
from l4sim.errors import EnvConfigError
from l4sim.scenario import Scenario

__all__ = [
    "ACTION_SETS",
    "CONTROL_QUEUES",
    "OBS_MODES",
    "RemoteTcpEnv",
    "UnifiedIndex",
    "unified_index",
    "unified_scenario",
]

#: The control-path bottleneck queue kinds and their scenario tables.
CONTROL_QUEUES: dict[str, dict[str, Any]] = {
    "fifo": {"kind": "fifo", "limit": "100p"},
    "fq_codel": {"kind": "fq_codel"},
    "dualpi2": {"kind": "dualpi2"},
}
OBS_MODES = ("plain", "aware")
ACTION_SETS = ("delta", "mult")
MULT_FACTORS = (1.0, 1.1, 1 / 1.1, 1.5, 1 / 1.5)
BOTTLENECK_DATA = "dr0->dr1"
BOTTLENECK_CONTROL = "cr0->cr1"


@dataclass(frozen=True)
class UnifiedIndex:
    """Flow indices of the unified scenario with ``n`` devices, ``m`` control-path and ``l``
    data-path competitors."""

    n: int
    m: int
    l: int  # noqa: E741

    def iot(self, i: int) -> int:
        return i

    def data_cubic(self, k: int) -> int:
        return self.n + k

    def control_cubic(self, j: int) -> int:
        return self.n + self.l + j

    def obs_flow(self, i: int) -> int:
        return self.n + self.l + self.m + i

    def action_flow(self, i: int) -> int:
        return 2 * self.n + self.l + self.m + i


def unified_index(n: int = 1, m: int = 1, l: int = 1) -> UnifiedIndex:  # noqa: E741
    return UnifiedIndex(n, m, l)


def _count(name: str, v: Any, low: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise EnvConfigError(f"{name} must be an integer of at least {low}, not {v!r}")
    return v


def unified_scenario(
    *,
    n: int = 1,
    m: int = 1,
    l: int = 1,  # noqa: E741
    control_queue: str | dict[str, Any] = "fifo",
    data_queue: dict[str, Any] | None = None,
    duration_s: float = 200.0,
    seed: int = 1,
    rwnd: str = "500KB",
    message_bytes: int = 100,
) -> Scenario:
    """The remote RL-TCP paper's Fig. 2 / Fig. 5: ``n`` IoT devices (and servers), ``m`` CUBIC
    flows on the control path and ``l`` on the data path (module doc). ``control_queue`` is a
    name of :data:`CONTROL_QUEUES` or a qdisc table; ``data_queue`` the data bottleneck's qdisc
    (default: a 100-packet tail-drop FIFO). Competing CUBIC flows start at seeded random
    times in the first second."""
    import random

    n, m, l = _count("n", n, 1), _count("m", m, 0), _count("l", l, 0)  # noqa: E741
    if isinstance(control_queue, str):
        if control_queue not in CONTROL_QUEUES:
            raise EnvConfigError(
                f"control_queue {control_queue!r} is not known; allowed: "
                f"{', '.join(CONTROL_QUEUES)} or a qdisc table"
            )
        cq = dict(CONTROL_QUEUES[control_queue])
    else:
        cq = dict(control_queue)
    l4s = cq.get("kind") in ("fq_codel", "dualpi2", "fq_l4s")
    dq = dict(data_queue or {"kind": "fifo", "limit": "100p"})
    link1 = {"rate": "100Mbps", "delay": "10ms"}
    link2 = {"rate": "100Mbps", "delay": "9.5ms"}
    nodes = ["cr0", "cr1", "dr0", "dr1"]
    links: list[dict[str, Any]] = [
        {"a": "cr0", "b": "cr1", "rate": "10Mbps", "delay": "0.01ms", "qdisc": cq,
         "qdisc_reverse": cq},
        {"a": "dr0", "b": "dr1", "rate": "10Mbps", "delay": "0.01ms", "qdisc": dq},
    ]  # fmt: skip
    for i in range(n):
        nodes += [f"rs{i}", f"iot{i}", f"c{i}"]
        links += [
            {"a": f"rs{i}", "b": "cr0", **link1},
            {"a": "cr1", "b": f"iot{i}", **link1},
            {"a": f"iot{i}", "b": "dr0", **link1},
            {"a": "dr1", "b": f"c{i}", **link1},
        ]
    for j in range(m):
        nodes += [f"bc{j}", f"bh{j}"]
        links += [{"a": f"bc{j}", "b": "cr0", **link2}, {"a": "cr1", "b": f"bh{j}", **link2}]
    for k in range(l):
        nodes += [f"cc{k}", f"ch{k}"]
        links += [{"a": f"cc{k}", "b": "dr0", **link2}, {"a": "dr1", "b": f"ch{k}", **link2}]
    rng = random.Random(seed)
    flows: list[dict[str, Any]] = []
    for i in range(n):
        flows.append(
            {"kind": "tcp", "cca": "external", "src": f"iot{i}", "dst": f"c{i}", "rwnd": rwnd}
        )
    for k in range(l):
        start = f"{rng.uniform(0.0, 1.0):.3f}s"
        flows.append(
            {"kind": "tcp", "cca": "cubic", "src": f"cc{k}", "dst": f"ch{k}", "rwnd": rwnd,
             "start": start}
        )  # fmt: skip
    for j in range(m):
        start = f"{rng.uniform(0.0, 1.0):.3f}s"
        flows.append(
            {"kind": "tcp", "cca": "cubic", "src": f"bc{j}", "dst": f"bh{j}", "rwnd": rwnd,
             "ecn": l4s, "start": start}
        )  # fmt: skip
    ecn = "ect1" if l4s else "not_ect"
    size = f"{int(message_bytes)}B"
    for i in range(n):
        flows.append(
            {"kind": "control", "src": f"iot{i}", "dst": f"rs{i}", "ecn": ecn, "packet_size": size}
        )
    for i in range(n):
        flows.append(
            {"kind": "control", "src": f"rs{i}", "dst": f"iot{i}", "ecn": ecn, "packet_size": size}
        )
    return Scenario.parse(
        {
            "name": f"remote-rl-tcp-000-unified-n{n}m{m}l{l}",
            "seed": seed,
            "duration": f"{duration_s:g}s",
            "topology": {"preset": "custom", "nodes": nodes, "links": links},
            "flows": flows,
        },
        source="remote-rl-tcp-000",
    )


@dataclass
class _Pending:
    device: int
    obs: np.ndarray
    reward: float
    sent_s: float
    record: Any
    landed: int = 0
    """Actions of the server the device had applied when it took this state."""
    age_s: float = 0.0


class RemoteTcpEnv(L4simEnv):
    """The remote RL-TCP paper's whole system as a Gymnasium env (module doc).

    ``n``, ``m``, ``l``, ``control_queue``, ``data_queue``, ``duration_s`` build the scenario
    (:func:`unified_scenario`) unless ``scenario`` is given (then ``n``, ``m``, ``l`` must
    describe it). ``episode_s`` (default: the scenario's duration after the warm-up) ends the
    episode (truncated), and so does ``episode_steps`` decisions if given first.
    ``obs_mode``, ``action_set``, ``reward`` as in the module doc;
    ``peer_policy(obs) -> action`` answers the other devices. ``control_delay_s`` replaces
    the packets by the paper's stage 2: each state reaches the server at once and each
    action lands exactly ``control_delay_s`` later (the control RTT as a fixed delay)."""

    def __init__(
        self,
        scenario: Scenario | None = None,
        *,
        n: int = 1,
        m: int = 1,
        l: int = 1,  # noqa: E741
        control_queue: str | dict[str, Any] = "fifo",
        data_queue: dict[str, Any] | None = None,
        duration_s: float = 200.0,
        episode_s: float | None = None,
        episode_steps: int | None = None,
        obs_mode: str = "plain",
        action_set: str = "delta",
        reward: Any = "tcp",
        reward_kwargs: dict[str, Any] | None = None,
        min_cwnd: int = 1,
        max_cwnd: int | None = None,
        peer_policy: Callable[[np.ndarray], int] | None = None,
        control_delay_s: float | None = None,
        step_interval: float | str = "100ms",
        warmup: float | str = 0,
    ):
        if obs_mode not in OBS_MODES:
            raise EnvConfigError(
                f"obs_mode {obs_mode!r} is not known; allowed: {', '.join(OBS_MODES)}"
            )
        if action_set not in ACTION_SETS:
            raise EnvConfigError(
                f"action_set {action_set!r} is not known; allowed: {', '.join(ACTION_SETS)}"
            )
        if scenario is None:
            scenario = unified_scenario(
                n=n, m=m, l=l, control_queue=control_queue, data_queue=data_queue,
                duration_s=duration_s,
            )  # fmt: skip
        self.index = unified_index(_count("n", n, 1), _count("m", m, 0), _count("l", l, 0))
        if not isinstance(scenario, Scenario):
            raise EnvConfigError(
                f"scenario {scenario!r} must be a Scenario with the unified layout (build it "
                "with unified_scenario), or None for the default"
            )
        flows = scenario.resolved_flows()
        ix = self.index
        if len(flows) != ix.action_flow(n - 1) + 1 or any(
            flows[ix.obs_flow(i)].spec.kind != "control" for i in range(n)
        ):
            raise EnvConfigError(
                f"the scenario does not have the unified layout for n={n}, m={m}, l={l} "
                "(build it with unified_scenario)"
            )
        super().__init__(scenario, step_interval=step_interval, warmup=warmup)
        horizon = scenario.duration - self.warmup_ns
        if episode_s is not None:
            if not 0 < episode_s * 1e9 <= horizon:
                raise EnvConfigError(
                    f"episode_s {episode_s!r} must be positive and fit in the scenario's "
                    f"{horizon / 1e9:g} s after the warm-up"
                )
            horizon = round(episode_s * 1e9)
        self.end_ns = self.warmup_ns + horizon
        if episode_steps is not None and (
            isinstance(episode_steps, bool)
            or not isinstance(episode_steps, int)
            or episode_steps < 1
        ):
            raise EnvConfigError(f"episode_steps {episode_steps!r} must be a positive integer")
        self.max_steps = episode_steps
        if control_delay_s is not None and not 0 <= control_delay_s <= 10:
            raise EnvConfigError(
                f"control_delay_s {control_delay_s!r} must be between 0 and 10 seconds"
            )
        self.control_delay_ns = None if control_delay_s is None else round(control_delay_s * 1e9)
        self.n = n
        self.obs_mode, self.action_set = obs_mode, action_set
        self.peer_policy = peer_policy
        topo = Topology(scenario)
        self.mss = topo.mss(0)
        rate, rtt = topo.flow_refs(0)
        self.rate_ref_bps, self.rtt_ref_s = rate, rtt
        self.bdp_segs = rate * rtt / 8 / self.mss
        self.min_cwnd = max(1, int(min_cwnd))
        self.max_cwnd = int(max_cwnd) if max_cwnd is not None else max(64, int(10 * self.bdp_segs))
        self.reward_fn = _rewards.get(reward, "sender", reward_kwargs)
        self._trackers = [SenderTracker(ix.iot(i), self.mss, rate, rtt) for i in range(n)]
        width = len(SENDER_FEATURES) + (3 if obs_mode == "aware" else 0)
        self.observation_space = spaces.Box(0.0, OBS_HIGH, (width,), np.float32)
        self.action_space = spaces.Discrete(5)
        self._reset_state()

    def _reset_state(self) -> None:
        self._token = 0
        self._pending: dict[int, _Pending] = {}
        self._arrived: deque[tuple[_Pending, float]] = deque()
        self._commanded = [0.0] * self.n  # the server's window per device (bytes)
        self._actions: dict[int, tuple[int, float]] = {}  # token -> (device, state age)
        self._landed = [0] * self.n  # actions applied at each device
        self._sent_to = [0] * self.n  # actions sent to each device
        self._landing: list[list[int]] = [[] for _ in range(self.n)]  # fixed-delay mode
        self.control_rtts_s: list[float] = []
        """Per landed action: its state's age plus the action packet's one-way delay."""
        self.control_rtt_at_s: list[float] = []
        """When each of those actions landed."""
        self._next_tick_ns = 0
        self.sent = self.delivered = 0
        self.actions_sent = 0
        self.last: _Pending | None = None
        self.ages_s: list[float] = []

    # -- the loop -----------------------------------------------------------------------------

    def _tick(self, sim: Any) -> None:
        """Every device takes its state and sends it to its server."""
        raw = sim.observe()
        for i in range(self.n):
            rec = self._trackers[i].step(raw)
            obs = np.array(sender_vector(rec), np.float32)
            if self.control_delay_ns is not None:  # actions scheduled to land by now
                self._landed[i] = sum(1 for t in self._landing[i] if t <= sim.now_ns)
            p = _Pending(
                i, obs, float(self.reward_fn(rec)), raw["time_s"], rec, landed=self._landed[i]
            )
            self.sent += 1
            if self.control_delay_ns is not None:  # stage 2: the state reaches it at once
                self.delivered += 1
                self._arrived.append((p, p.sent_s))
                continue
            self._pending[self._token] = p
            sim.send_message(self.index.obs_flow(i), self._token)
            self._token += 1

    def _wait(self, sim: Any, device: int) -> _Pending | None:
        """Run until a state of ``device`` reaches the server (answering the others), or the
        episode's end (None)."""
        while True:
            while self._arrived:
                p, delivered = self._arrived.popleft()
                p.age_s = delivered - p.sent_s
                if p.device == device:
                    return p
                if self.peer_policy is not None:
                    self._act(sim, p, self.peer_policy(self._vector(p)))
            if sim.now_ns >= self.end_ns:
                return None
            target = min(self._next_tick_ns, self.end_ns)
            woke = sim.run_until_trigger_ns(target)
            if woke:
                for msg in sim.take_messages():
                    self._delivered(msg)
            elif sim.now_ns >= self._next_tick_ns and self._next_tick_ns < self.end_ns:
                self._tick(sim)
                self._next_tick_ns += self.step_ns

    def _delivered(self, msg: dict[str, Any]) -> None:
        token = int(msg["token"])
        if token in self._pending:  # a state reached the server
            p = self._pending.pop(token)
            self.delivered += 1
            self._arrived.append((p, float(msg["delivered_s"])))
        elif token in self._actions:  # an action reached its device
            device, state_age = self._actions.pop(token)
            self._landed[device] += 1
            self.control_rtts_s.append(state_age + msg["delivered_s"] - msg["sent_s"])
            self.control_rtt_at_s.append(float(msg["delivered_s"]))

    def _vector(self, p: _Pending) -> np.ndarray:
        if self.obs_mode == "plain":
            return p.obs
        flying = self._sent_to[p.device] - p.landed
        bdp_bytes = self.bdp_segs * self.mss
        extra = np.array(
            [
                min(p.age_s / 0.1, OBS_HIGH),
                min(float(flying), OBS_HIGH),
                min(self._commanded[p.device] / bdp_bytes, OBS_HIGH),
            ],
            np.float32,
        )
        return np.concatenate([p.obs, extra])

    def _act(self, sim: Any, p: _Pending, action: Any) -> None:
        """The server's answer to state ``p``: a new window for its device, as a packet."""
        i, mss = p.device, self.mss
        w = self._commanded[i]
        a = checked_action(self.action_space, action)
        if self.action_set == "delta":
            w = {0: w, 1: w + mss, 2: w - mss, 3: 2 * w, 4: w / 2}[a]
        else:
            w *= MULT_FACTORS[a]
        w = min(max(w, self.min_cwnd * mss), self.max_cwnd * mss)
        self._commanded[i] = w
        segs = max(int(w // mss), self.min_cwnd)
        act = {"kind": "set_cwnd", "flow": self.index.iot(i), "cwnd": segs}
        self.actions_sent += 1
        self._sent_to[i] += 1
        if self.control_delay_ns is not None:  # stage 2: a fixed delay, no packets
            if self.control_delay_ns > 0:
                sim.schedule_ns(act, self.control_delay_ns)
            else:
                sim.apply(act)
            self._landing[i].append(sim.now_ns + self.control_delay_ns)
            self.control_rtts_s.append(self.control_delay_ns / 1e9)
            self.control_rtt_at_s.append((sim.now_ns + self.control_delay_ns) / 1e9)
            return
        sim.send_control(self.index.action_flow(i), act)
        # A message right behind the action tells us (not the agent) when it landed.
        sim.send_message(self.index.action_flow(i), self._token)
        self._actions[self._token] = (i, p.age_s)
        self._token += 1

    # -- Gymnasium API --------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        self._sim = self._prepare(seed)
        self._reset_state()
        sim = self._sim
        raw = sim.observe()
        for i, tr in enumerate(self._trackers):
            tr.start(raw)
            self._commanded[i] = float(raw["flows"]["cwnd_pkts"][self.index.iot(i)] * self.mss)
        self._next_tick_ns = self.warmup_ns + self.step_ns
        p = self._wait(sim, 0)
        if p is None:
            raise EnvConfigError("no state of device 0 reached the server within the episode")
        self.last = p
        self.ages_s.append(p.age_s)
        return self._vector(p), self._info(p)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        sim = self.sim
        if self.last is None:
            raise EnvConfigError("call reset() before step()")
        self._act(sim, self.last, action)
        p = self._wait(sim, 0)
        if p is None:  # the episode ended before another state arrived
            return self._vector(self.last), 0.0, False, True, self._info(self.last)
        self.last = p
        self.record = p.record
        self.ages_s.append(p.age_s)
        self._steps += 1
        truncated = sim.now_ns >= self.end_ns or (
            self.max_steps is not None and self._steps >= self.max_steps
        )
        return self._vector(p), p.reward, False, truncated, self._info(p)

    def _info(self, p: _Pending) -> dict[str, Any]:
        return {
            "time_s": self.sim.now,
            "sent_s": p.sent_s,
            "age_s": p.age_s,
            "device": p.device,
            "messages_sent": self.sent,
            "messages_undelivered": len(self._pending),
            "actions_sent": self.actions_sent,
        }
