"""Rewards: small pure functions of one step record.

Sender rewards take a :class:`~l4sim.envs.features.SenderStep`, queue rewards a
:class:`~l4sim.envs.features.QueueStep`; both records carry raw values in SI units plus the
reference scales (rate, RTT) of the environment. Every function here is deterministic, has
no state and is unit-tested (``tests/test_envs.py``). Environments pick one by name
(:data:`REWARDS`) with keyword arguments (``reward="tcp", reward_kwargs={"delta": 2}``) or
take any callable of the right record.

===============  ======  ===========================================================  =========
name             record  formula                                                      source
===============  ======  ===========================================================  =========
``ns3ai``        sender  segmentsAcked - bytesInFlight - cWnd (mixed units, raw)      ns3-ai
``tcp``          sender  goodput / rate - δ · max(0, sRTT - minRTT) / minRTT          ours
``macc_r1``      sender  a·segmentsAcked - b·bytesInFlight - c·RTT                    MA-CC
``macc_r2``      queue   d·dequeueRate - e·queueDelay - f·queueLength - g·lossRate    MA-CC
``a3c_l4s``      queue   - queue delay                                                A3C-L4S
``a3c_utility``  queue   utilisation - w_d · delay / 10 ms - w_l · loss rate          A3C-L4S
``lfq``          queue   throughput - alpha · queue                                   LFQ
``share``        sender  1 - |goodput / (rate / n) - 1| - δ · queueing delay / minRTT  ours
===============  ======  ===========================================================  =========
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from l4sim.errors import EnvConfigError

if TYPE_CHECKING:
    from l4sim.envs.features import QueueStep, SenderStep

__all__ = [
    "QUEUE_REWARDS",
    "REWARDS",
    "SENDER_REWARDS",
    "a3c_l4s",
    "a3c_utility",
    "get",
    "lfq",
    "macc_r1",
    "macc_r2",
    "ns3ai",
    "share",
    "tcp",
]


def _nan0(x: float) -> float:
    return 0.0 if x != x else x


def ns3ai(s: SenderStep) -> float:
    """RL-TCP's reward in ns3-ai: ``segmentsAcked - bytesInFlight - cWnd``.

    Faithful to the original, units and all: segments acked in the step (a count of
    segments) minus bytes in flight (bytes) minus the congestion window (bytes, as ns-3
    keeps it). The terms mix units, the byte terms dominate by a factor of about the MSS,
    and the maximum is reached with the smallest window and nothing in flight — so it
    rewards starving the flow. Kept for reproduction; prefer :func:`tcp` for learning."""
    return float(s.segments_acked - s.bytes_in_flight - s.cwnd_bytes)


def tcp(s: SenderStep, delta: float = 1.0) -> float:
    """The default TCP reward, normalised: utilisation minus a queueing-delay penalty,
    ``goodput / rate_ref - δ · max(0, sRTT - minRTT) / minRTT``.

    Goodput is acknowledged payload over the step; ``rate_ref`` the slowest link on the
    flow's path. The penalty is the relative queueing delay (0 while there is no RTT
    sample). With δ = 1 a window that doubles the RTT costs as much as full utilisation
    earns; the optimum is a full pipe with an empty queue (≈ +1 per step)."""
    util = s.goodput_bps / s.rate_ref_bps
    srtt, min_rtt = s.srtt_s, s.min_rtt_s
    if srtt != srtt or min_rtt != min_rtt or min_rtt <= 0:
        return util
    return util - delta * max(0.0, srtt - min_rtt) / min_rtt


def macc_r1(
    s: SenderStep,
    a: float = 1.0,
    b: float = 1.0,
    c: float = 1.0,
    *,
    normalise: bool = True,
    excess_rtt: bool = False,
) -> float:
    """MA-CC's TCP-agent reward (eq. 3): ``a·segmentsAcked - b·bytesInFlight -
    c·RTT`` with constants a, b, c > 0 (the paper does not publish them).

    ``normalise=True`` (default) puts the three terms on one scale before weighting:
    segments acked per step / the link's capacity in segments per step, bytes in flight /
    BDP, RTT / reference RTT. ``normalise=False`` uses raw units (segments, bytes,
    seconds), as the paper writes it. RTT is the smoothed RTT (0 before a sample).

    ``excess_rtt=True`` (normalised only) charges the RTT above the reference RTT,
    ``max(0, RTT - ref) / ref``: the paper's term less a constant, so the optimum is the
    same, but a team can no longer earn by starving its flows before their first RTT sample
    (with the plain term, 0 before a sample, MA-CC's AQM agents learned to drop
    everything from t = 0: measured)."""
    rtt = _nan0(s.srtt_s)
    if normalise and excess_rtt:
        return (
            a * s.segments_acked / s.step_capacity_segments
            - b * s.bytes_in_flight / max(s.bdp_bytes, 1.0)
            - c * max(0.0, rtt - s.rtt_ref_s) / s.rtt_ref_s
        )
    if normalise:
        return (
            a * s.segments_acked / s.step_capacity_segments
            - b * s.bytes_in_flight / max(s.bdp_bytes, 1.0)
            - c * rtt / s.rtt_ref_s
        )
    return a * s.segments_acked - b * s.bytes_in_flight - c * rtt


def macc_r2(
    q: QueueStep,
    d: float = 1.0,
    e: float = 1.0,
    f: float = 1.0,
    g: float = 1.0,
    *,
    normalise: bool = True,
) -> float:
    """MA-CC's AQM-agent reward (eq. 3): ``d·dequeueRate - e·currQueueDelay -
    f·queueLength - g·lossRate`` with constants d…g > 0 (not published).

    ``normalise=True`` (default): dequeue rate / link rate, queue delay / reference RTT,
    queue length (packets) / BDP in 1500-byte packets, loss rate as a fraction.
    ``normalise=False``: raw units (bits per second, seconds, packets, fraction)."""
    delay = q.sojourn_s
    if normalise:
        bdp_pkts = max(q.bdp_bytes / 1500.0, 1e-9)
        return (
            d * q.dequeue_rate_bps / q.rate_ref_bps
            - e * delay / q.rtt_ref_s
            - f * q.backlog_pkts / bdp_pkts
            - g * q.loss_rate
        )
    return d * q.dequeue_rate_bps - e * delay - f * q.backlog_pkts - g * q.loss_rate


def a3c_l4s(q: QueueStep, unit_s: float = 1e-3) -> float:
    """A3C-L4S's reward ("L4S in FreeBSD with A3C", §3.2.1): minus the queuing delay, here
    the current sojourn time of the head packet in units of ``unit_s`` (default milliseconds)."""
    return -q.sojourn_s / unit_s


def a3c_utility(q: QueueStep, delay_weight: float = 1.0, loss_weight: float = 10.0) -> float:
    """A3C-L4S's future work (section 3.2.1: a utility that "includes other
    metrics like throughput and loss"):
    ``utilisation - delay_weight · sojourn / 10 ms - loss_weight · loss rate``, utilisation =
    dequeue rate / link rate (at most 1). With the defaults 10 ms of queue costs as much as
    the whole link, and 10 % loss as much again; the optimum is a full link with no queue."""
    util = min(q.dequeue_rate_bps / q.rate_ref_bps, 1.0)
    return util - delay_weight * q.sojourn_s / 0.01 - loss_weight * q.loss_rate


def lfq(q: QueueStep, alpha: float = 0.1) -> float:
    """LFQ's reward (Grigorescu et al., eq. 1): ``throughput - alpha · queue``, throughput in Mbit/s
    (dequeue rate over the step) and queue in packets (backlog at the step's end). alpha sets the
    trade-off; as alpha → 0 the optimum is the smallest queue that keeps full throughput. (Our
    copy of the paper lost the equation's symbols; units and alpha's default are ours.)"""
    return q.dequeue_rate_bps / 1e6 - alpha * q.backlog_pkts


def share(s: SenderStep, n_flows: int = 2, delta: float = 0.1) -> float:
    """A fair-share reward (the remote RL-TCP paper's future work, ours): ``1 - |goodput /
    (rate_ref / n_flows) - 1| - δ · max(0, sRTT - minRTT) / minRTT``. It peaks (at 1) when the flow
    gets exactly its share of the bottleneck among ``n_flows`` flows, and falls as fast for
    taking more as for taking less; the small delay term prefers the smaller window that
    gets the same share. (It needs the number of flows, which the sender does not see.)"""
    fair = s.rate_ref_bps / max(int(n_flows), 1)
    r = 1.0 - abs(s.goodput_bps / fair - 1.0)
    srtt, min_rtt = s.srtt_s, s.min_rtt_s
    if srtt != srtt or min_rtt != min_rtt or min_rtt <= 0:
        return r
    return r - delta * max(0.0, srtt - min_rtt) / min_rtt


SENDER_REWARDS: dict[str, Callable[..., float]] = {
    "ns3ai": ns3ai,
    "tcp": tcp,
    "macc_r1": macc_r1,
    "share": share,
}
QUEUE_REWARDS: dict[str, Callable[..., float]] = {
    "macc_r2": macc_r2,
    "a3c_l4s": a3c_l4s,
    "a3c_utility": a3c_utility,
    "lfq": lfq,
}
REWARDS: dict[str, Callable[..., float]] = {**SENDER_REWARDS, **QUEUE_REWARDS}
"""Every reward by name."""


def get(
    reward: str | Callable[..., float], kind: str, kwargs: dict[str, Any] | None = None
) -> Callable[[Any], float]:
    """Resolve ``reward`` (a name or a callable of one record) for a ``kind`` ("sender" or
    "queue") record, binding ``kwargs``; a clear error on an unknown or mismatched name."""
    table = SENDER_REWARDS if kind == "sender" else QUEUE_REWARDS
    if isinstance(reward, str):
        if reward not in table:
            raise EnvConfigError(
                f"reward {reward!r} is not a {kind} reward; allowed: {', '.join(table)}"
            )
        fn = table[reward]
    else:
        fn = reward
    if kwargs:
        kw = dict(kwargs)
        _check_kwargs(fn, kw, reward if isinstance(reward, str) else None)
        return lambda rec: fn(rec, **kw)
    return fn


def _check_kwargs(fn: Callable[..., float], kw: dict[str, Any], name: str | None) -> None:
    """``reward_kwargs`` checked when the env is made, not at its first step: each must be a
    parameter of the reward (after its record), and for l4sim's own rewards of its default's
    kind (a switch a bool, a weight a finite number)."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
    known = {p.name: p.default for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD}
    what = f"reward {name!r}" if name else "the reward"
    for key, value in kw.items():
        if key not in known and not takes_any:
            listed = ", ".join(known) or "none"
            raise EnvConfigError(f"{what} has no parameter {key!r}; its parameters: {listed}")
        if name is None:
            continue
        if isinstance(known[key], bool):
            if not isinstance(value, bool):
                raise EnvConfigError(f"{what} parameter {key} = {value!r} must be true or false")
        elif (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise EnvConfigError(f"{what} parameter {key} = {value!r} must be a finite number")
