"""Observation features: per-step records computed from the core's ``observe()`` snapshots.

The core reports instantaneous state (cwnd, bytes in flight, RTTs, backlog, probability) and
cumulative counters (segments/bytes acked, losses, CE echoes, dequeued bytes, drops, marks).
Per-step quantities are differences of the counters between two snapshots, computed here in
Python once per agent step (never per packet).

Two records: :class:`SenderStep` (one TCP sender) and :class:`QueueStep` (one link queue).
Each carries its raw values in SI units (seconds, bits per second, bytes, segments, packets)
and the reference scales used to normalise them into the observation vectors
(:func:`sender_vector`, :func:`queue_vector`). Rewards (:mod:`l4sim.envs.rewards`) are pure
functions of these records. The feature tables (name, unit, normalisation) are in
``python/l4sim/envs/README.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from l4sim.errors import EnvConfigError
from l4sim.scenario import QDISC_ALIASES, Scenario

__all__ = [
    "OBS_HIGH",
    "QUEUE_FEATURES",
    "REF_PACKET_BYTES",
    "SENDER_FEATURES",
    "QueueStep",
    "SenderStep",
    "Topology",
    "queue_vector",
    "sender_vector",
]

OBS_HIGH = 100.0
"""Every normalised feature is clipped to ``[0, OBS_HIGH]`` (the observation Box bound)."""

REF_PACKET_BYTES = 1500
"""Packet size (bytes on the wire) used to express queue quantities in packets."""

SENDER_FEATURES: tuple[tuple[str, str, str], ...] = (
    ("segments_acked", "segments per step", "/ link capacity in segments per step"),
    ("bytes_in_flight", "bytes", "/ BDP bytes (ref. rate x ref. RTT / 8)"),
    ("cwnd", "segments", "/ BDP in segments"),
    ("ssthresh", "segments", "/ BDP in segments; unset (infinite) -> OBS_HIGH"),
    ("rtt", "seconds (smoothed RTT)", "/ ref. RTT; no sample yet -> 0"),
    ("min_rtt", "seconds", "/ ref. RTT; no sample yet -> 0"),
    ("delivery_rate", "bits per second", "/ ref. rate; no sample yet -> 0"),
    ("losses", "segments per step", "/ link capacity in segments per step"),
    ("ecn_marks", "CE-marked segments per step", "/ link capacity in segments per step"),
)
"""Sender observation: (name, raw unit, normalisation), in vector order."""

QUEUE_FEATURES: tuple[tuple[str, str, str], ...] = (
    ("backlog_pkts", "packets", "/ BDP in 1500-byte packets"),
    ("backlog_bytes", "bytes", "/ BDP bytes"),
    ("dequeue_rate", "bits per second over the step", "/ link rate"),
    ("sojourn", "seconds (head packet's waiting time now)", "/ ref. RTT"),
    ("drops", "packets per step", "/ link capacity in 1500-byte packets per step"),
    ("marks", "CE marks per step", "/ link capacity in 1500-byte packets per step"),
    ("prob", "probability (PIE p, DualPI2 p', external qdisc's)", "as is; none -> 0"),
)
"""Queue observation: (name, raw unit, normalisation), in vector order."""


def _nan0(x: float) -> float:
    return 0.0 if x != x else x


def _clip(x: float) -> float:
    if x != x or x < 0.0:
        return 0.0
    return OBS_HIGH if x > OBS_HIGH else x


@dataclass(frozen=True, slots=True)
class SenderStep:
    """One TCP sender over one agent step: raw values plus the reference scales.

    Counters (``segments_acked``, ``bytes_acked``, ``losses``, ``ecn_marks``,
    ``retransmits``) are deltas over the step; the rest are instantaneous at its end.
    ``nan`` marks an RTT / rate / ssthresh that has no value yet."""

    interval_s: float
    mss: int
    rate_ref_bps: float
    rtt_ref_s: float
    segments_acked: int
    bytes_acked: int
    bytes_in_flight: int
    cwnd_pkts: int
    ssthresh_pkts: float
    srtt_s: float
    min_rtt_s: float
    latest_rtt_s: float
    delivery_rate_bps: float
    losses: int
    ecn_marks: int
    retransmits: int

    @property
    def cwnd_bytes(self) -> int:
        return self.cwnd_pkts * self.mss

    @property
    def goodput_bps(self) -> float:
        """Acknowledged payload over the step, bits per second."""
        return self.bytes_acked * 8.0 / self.interval_s if self.interval_s > 0 else 0.0

    @property
    def bdp_bytes(self) -> float:
        return self.rate_ref_bps * self.rtt_ref_s / 8.0

    @property
    def step_capacity_segments(self) -> float:
        """Segments the reference rate carries in this step."""
        return max(self.rate_ref_bps * self.interval_s / 8.0 / self.mss, 1e-9)


@dataclass(frozen=True, slots=True)
class QueueStep:
    """One link queue over one agent step: raw values plus the reference scales.

    ``dequeued_bytes``, ``drops`` and ``marks`` are deltas over the step; backlog, sojourn
    and probability are instantaneous at its end."""

    interval_s: float
    rate_ref_bps: float
    rtt_ref_s: float
    backlog_pkts: int
    backlog_bytes: int
    dequeued_bytes: int
    sojourn_s: float
    drops: int
    marks: int
    prob: float

    @property
    def dequeue_rate_bps(self) -> float:
        return self.dequeued_bytes * 8.0 / self.interval_s if self.interval_s > 0 else 0.0

    @property
    def loss_rate(self) -> float:
        """Drops / (drops + dequeued packets), dequeued packets counted in 1500-byte units
        (the core counts dequeued bytes); 0 when nothing arrived."""
        dequeued = self.dequeued_bytes / REF_PACKET_BYTES
        total = self.drops + dequeued
        return self.drops / total if total > 0 else 0.0

    @property
    def bdp_bytes(self) -> float:
        return self.rate_ref_bps * self.rtt_ref_s / 8.0

    @property
    def step_capacity_pkts(self) -> float:
        return max(self.rate_ref_bps * self.interval_s / 8.0 / REF_PACKET_BYTES, 1e-9)


def sender_vector(s: SenderStep) -> list[float]:
    """The normalised sender features (:data:`SENDER_FEATURES` order), clipped."""
    cap = s.step_capacity_segments
    bdp = max(s.bdp_bytes, 1.0)
    bdp_segs = bdp / s.mss
    ssthresh = s.ssthresh_pkts
    return [
        _clip(s.segments_acked / cap),
        _clip(s.bytes_in_flight / bdp),
        _clip(s.cwnd_pkts / bdp_segs),
        OBS_HIGH if ssthresh != ssthresh or math.isinf(ssthresh) else _clip(ssthresh / bdp_segs),
        _clip(s.srtt_s / s.rtt_ref_s),
        _clip(s.min_rtt_s / s.rtt_ref_s),
        _clip(s.delivery_rate_bps / s.rate_ref_bps),
        _clip(s.losses / cap),
        _clip(s.ecn_marks / cap),
    ]


def queue_vector(q: QueueStep) -> list[float]:
    """The normalised queue features (:data:`QUEUE_FEATURES` order), clipped."""
    bdp = max(q.bdp_bytes, 1.0)
    cap = q.step_capacity_pkts
    return [
        _clip(q.backlog_pkts * REF_PACKET_BYTES / bdp),
        _clip(q.backlog_bytes / bdp),
        _clip(q.dequeue_rate_bps / q.rate_ref_bps),
        _clip(q.sojourn_s / q.rtt_ref_s),
        _clip(q.drops / cap),
        _clip(q.marks / cap),
        min(_clip(q.prob), 1.0),
    ]


class SenderTracker:
    """Turns successive ``observe()`` snapshots into :class:`SenderStep` records for flow
    ``flow`` (keeps the previous cumulative counters)."""

    __slots__ = ("flow", "mss", "prev", "rate_ref", "rtt_ref")

    def __init__(self, flow: int, mss: int, rate_ref_bps: float, rtt_ref_s: float):
        self.flow = flow
        self.mss = mss
        self.rate_ref = rate_ref_bps
        self.rtt_ref = rtt_ref_s
        self.prev: tuple[float, int, int, int, int, int] = (0.0, 0, 0, 0, 0, 0)

    def start(self, raw: dict[str, Any]) -> None:
        f, i = raw["flows"], self.flow
        self.prev = (
            raw["time_s"],
            f["segments_acked"][i],
            f["bytes_acked"][i],
            f["losses"][i],
            f["ecn_ce"][i],
            f["retransmits"][i],
        )

    def step(self, raw: dict[str, Any]) -> SenderStep:
        f, i = raw["flows"], self.flow
        t = raw["time_s"]
        segs, acked, losses, ce, rtx = (
            f["segments_acked"][i],
            f["bytes_acked"][i],
            f["losses"][i],
            f["ecn_ce"][i],
            f["retransmits"][i],
        )
        t0, segs0, acked0, losses0, ce0, rtx0 = self.prev
        self.prev = (t, segs, acked, losses, ce, rtx)
        return SenderStep(
            interval_s=t - t0,
            mss=self.mss,
            rate_ref_bps=self.rate_ref,
            rtt_ref_s=self.rtt_ref,
            segments_acked=segs - segs0,
            bytes_acked=acked - acked0,
            bytes_in_flight=f["bytes_in_flight"][i],
            cwnd_pkts=f["cwnd_pkts"][i],
            ssthresh_pkts=f["ssthresh_pkts"][i],
            srtt_s=f["srtt_s"][i],
            min_rtt_s=f["min_rtt_s"][i],
            latest_rtt_s=f["latest_rtt_s"][i],
            delivery_rate_bps=f["delivery_rate_bps"][i],
            losses=losses - losses0,
            ecn_marks=ce - ce0,
            retransmits=rtx - rtx0,
        )


class QueueTracker:
    """Turns successive ``observe()`` snapshots into :class:`QueueStep` records for one
    link queue (found by name in the snapshot's ``queues.link`` column)."""

    __slots__ = ("index", "link", "prev", "rate_ref", "rtt_ref")

    def __init__(self, link: str, rate_ref_bps: float, rtt_ref_s: float):
        self.link = link
        self.index = -1
        self.rate_ref = rate_ref_bps
        self.rtt_ref = rtt_ref_s
        self.prev: tuple[float, int, int, int] = (0.0, 0, 0, 0)

    def start(self, raw: dict[str, Any]) -> None:
        q = raw["queues"]
        try:
            self.index = q["link"].index(self.link)
        except ValueError:
            raise EnvConfigError(
                f"link {self.link!r} is not a queue of the simulation; queues: "
                + ", ".join(q["link"])
            ) from None
        i = self.index
        self.prev = (raw["time_s"], q["dequeued_bytes"][i], q["drops"][i], q["ecn_marks"][i])

    def step(self, raw: dict[str, Any]) -> QueueStep:
        q, i = raw["queues"], self.index
        t = raw["time_s"]
        deq, drops, marks = q["dequeued_bytes"][i], q["drops"][i], q["ecn_marks"][i]
        t0, deq0, drops0, marks0 = self.prev
        self.prev = (t, deq, drops, marks)
        return QueueStep(
            interval_s=t - t0,
            rate_ref_bps=self.rate_ref,
            rtt_ref_s=self.rtt_ref,
            backlog_pkts=q["backlog_pkts"][i],
            backlog_bytes=q["backlog_bytes"][i],
            dequeued_bytes=deq - deq0,
            sojourn_s=q["head_sojourn_s"][i],
            drops=drops - drops0,
            marks=marks - marks0,
            prob=q["prob"][i],
        )


class Topology:
    """Link rates of a scenario and the path of each flow as the core routes it, for the
    reference scales: a flow's reference rate is the slowest link on its path, its reference
    RTT the path's propagation delay there and back (``_core.flow_paths``: the core is the
    only router)."""

    def __init__(self, scenario: Scenario):
        from l4sim.native import core as _core_module

        self.scenario = scenario
        self.rates: dict[str, int] = {}  # "a->b" -> rate
        self.qdisc_kind: dict[str, str] = {}  # "a->b" -> kind
        for a, b, spec in scenario.topology.links():
            self.rates[f"{a}->{b}"] = self.rates[f"{b}->{a}"] = spec.nominal_rate()
            self.qdisc_kind[f"{a}->{b}"] = spec.qdisc.kind
            self.qdisc_kind[f"{b}->{a}"] = spec.qdisc_reverse.kind
        self.flows = scenario.resolved_flows()
        self.paths: list[dict[str, Any]] = _core_module().flow_paths(scenario.to_core_json())

    def flow_path(self, flow: int) -> list[str]:
        """The links (``"a->b"``) flow ``flow``'s packets cross, in order."""
        return list(self.paths[flow]["links"])

    def flow_refs(self, flow: int) -> tuple[float, float]:
        """(reference rate bps, reference RTT s) of flow ``flow``."""
        p = self.paths[flow]
        return float(p["bottleneck_bps"]), max(float(p["base_rtt_s"]), 1e-3)

    def link_rate(self, link: str) -> float:
        if link not in self.rates:
            known = ", ".join(sorted(self.qdisc_kind))
            raise EnvConfigError(f"link {link!r} is not in the topology; links: {known}")
        return float(self.rates[link])

    def link_rtt(self, link: str, default_s: float = 0.1) -> float:
        """The largest reference RTT of the flows crossing ``link`` (else ``default_s``)."""
        rtts = [self.flow_refs(i)[1] for i in range(len(self.flows)) if link in self.flow_path(i)]
        return max(rtts) if rtts else default_s

    def links_of_kind(self, kind: str) -> list[str]:
        kind = QDISC_ALIASES.get(kind, kind)
        return [link for link, k in self.qdisc_kind.items() if k == kind]

    def mss(self, flow: int) -> int:
        spec = self.flows[flow].spec
        params = spec.core_params().get("tcp")
        if params is None:
            raise EnvConfigError(f"flow {flow} is not a TCP flow")
        return int(params.get("mss", 1448))
