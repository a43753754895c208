"""Links and topology presets (``dumbbell``, ``path``, ``two_host``, ``custom``), and the
route check flows are validated with (:func:`_routed`, which asks the core).

Adding a preset is adding one model class with a ``preset`` literal and listing it in the
``Topology`` union and ``TOPOLOGY_PRESETS``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, model_validator

from l4sim.scenario.docsis import Docsis
from l4sim.scenario.fields import (
    MAX_FLOWS,
    CoreKey,
    Many,
    PositiveTime,
    Probability,
    Rate,
    Time,
    _Model,
)
from l4sim.scenario.qdiscs import Fifo, Qdisc
from l4sim.scenario.schedules import (
    OnOff,
    Steps,
    TraceFile,
    check_steps,
    constant,
    core_schedule,
    nominal_rate,
)
from l4sim.scenario.slots import Slot
from l4sim.scenario.wifi import Wifi

#: The keys that give a direction a time-varying rate (and their ``_reverse`` forms).
_SCHEDULE_KEYS = ("trace", "schedule", "onoff")


class LinkSpec(_Model):
    """A bidirectional link: ``qdisc`` on the forward egress, ``qdisc_reverse`` on the other.
    A direction's rate may follow a ``trace``, a step ``schedule`` or an ``onoff`` rate
    (docs/traces.md); ``rate`` is then needed only for a direction without one."""

    rate: Rate | None = None
    delay: Time = Field(
        description="One-way propagation delay, the same in each direction: a flow's base "
        "RTT is twice the sum of the delays on its path (docs/scenarios.md, Presets)."
    )
    loss: Probability = 0.0
    #: Extra delay per packet, uniform in [0, jitter], that never reorders the link's
    #: packets (host timing noise; breaks the phase effects of drop-tail queues).
    jitter: Time = "0ms"  # type: ignore[assignment]
    #: Bytes charged per packet on top of its size when serialised (tc's ``overhead``): a
    #: Linux shaper (HTB, TBF) on an Ethernet device charges the 14-byte MAC header too.
    overhead: Annotated[int, Field(ge=0, le=65_535)] = 0  # config.rs MAX_OVERHEAD_BYTES
    qdisc: Qdisc = Field(
        default_factory=Fifo, description="Queue discipline of the forward direction."
    )
    qdisc_reverse: Qdisc = Field(
        default_factory=Fifo, description="Queue discipline of the reverse direction."
    )
    trace: TraceFile | None = None
    trace_reverse: TraceFile | None = None
    schedule: Steps | None = Field(None, description="Rate steps of the forward direction.")
    schedule_reverse: Steps | None = Field(None, description="Rate steps of the reverse one.")
    schedule_period: PositiveTime | None = Field(None, description="schedule repeats with it.")
    schedule_reverse_period: PositiveTime | None = Field(
        None, description="schedule_reverse repeats with it."
    )
    onoff: OnOff | None = Field(None, description="On/off rate of the forward direction.")
    onoff_reverse: OnOff | None = Field(None, description="On/off rate of the reverse one.")
    slot: Slot | None = Field(
        None,
        description="netem slotting of the forward direction: packets reach the far end in "
        "bursts (docs/links.md).",
    )
    slot_reverse: Slot | None = Field(
        None, description="Slotting of the reverse direction (ACK aggregation on an ACK path)."
    )
    docsis: Docsis | None = Field(
        None,
        description="The forward direction is a DOCSIS upstream: its near end sends only in "
        "granted minislots, its qdisc is the cable modem's queue (docs/links.md).",
    )
    docsis_reverse: Docsis | None = Field(
        None, description="The reverse direction is a DOCSIS upstream."
    )

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "rate": "rate_bps",
        "delay": "delay_ns",
        "jitter": "jitter_ns",
        "overhead": "overhead_bytes",
        "qdisc": lambda q: {"qdisc_ab": q.to_core()},
        "qdisc_reverse": lambda q: {"qdisc_ba": q.to_core()},
        "slot": lambda s: {"slot_ab": s.to_core()},
        "slot_reverse": lambda s: {"slot_ba": s.to_core()},
        "docsis": lambda d: {"docsis_ab": d.to_core()},
        "docsis_reverse": lambda d: {"docsis_ba": d.to_core()},
    }
    _core_skip: ClassVar[frozenset[str]] = frozenset(
        {"a", "b", "preset", *(f"{k}{d}" for k in _SCHEDULE_KEYS for d in ("", "_reverse"))}
        | {"schedule_period", "schedule_reverse_period"}
    )
    _core_derived: ClassVar[frozenset[str]] = frozenset({"schedule_ab", "schedule_ba"})

    @model_validator(mode="after")
    def _schedules(self) -> LinkSpec:
        for d in ("", "_reverse"):
            given = [k + d for k in _SCHEDULE_KEYS if getattr(self, k + d) is not None]
            if len(given) > 1:
                raise ValueError(f"give at most one of {' and '.join(given)} (one direction)")
            steps, period = getattr(self, f"schedule{d}"), getattr(self, f"schedule{d}_period")
            if period is not None and steps is None:
                raise ValueError(f"schedule{d}_period needs schedule{d}")
            if steps is not None:
                check_steps(steps, period, f"schedule{d}")
            if given and getattr(self, f"docsis{d}") is not None:
                raise ValueError(f"docsis{d} needs a constant rate (the channel's), not {given[0]}")
            if self.rate is None and not given:
                raise ValueError(
                    "rate is required for a direction without a trace, schedule or onoff"
                    + (" (the reverse one)" if d else "")
                )
        return self

    def core_schedules(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """config.rs ``schedule_ab`` and ``schedule_ba`` (None: constant ``rate``)."""
        return tuple(  # type: ignore[return-value]
            core_schedule(
                getattr(self, f"trace{d}", None),
                getattr(self, f"schedule{d}", None),
                getattr(self, f"schedule{d}_period", None),
                getattr(self, f"onoff{d}", None),
            )
            for d in ("", "_reverse")
        )

    def to_core(self, a: int, b: int) -> dict[str, Any]:
        """config.rs's ``LinkConfig`` between the nodes of indices ``a`` and ``b``."""
        out = {"a": a, "b": b, **self.core_fields()}
        ab, ba = self.core_schedules()
        if ab is None and ba is None:
            return out
        # One rate_bps serves both directions: with a forward schedule it is that
        # schedule's mean (the link's nominal rate, for route summaries), and a constant
        # reverse direction gets a one-step schedule at ``rate`` (exactly that rate).
        if ab is not None:
            out["rate_bps"] = nominal_rate(ab)
            out["schedule_ab"] = ab
            out["schedule_ba"] = ba if ba is not None else constant(self.rate or 0)
        else:
            out["schedule_ba"] = ba
        return out

    def nominal_rate(self) -> int:
        """The forward direction's rate (a schedule's mean)."""
        ab = self.core_schedules()[0]
        return nominal_rate(ab) if ab is not None else int(self.rate or 0)


class AccessSpec(_Model):
    """Access links of a dumbbell (default FIFO 1000p both ways)."""

    rate: Rate = "1Gbps"  # type: ignore[assignment]
    delay: Time = Field(
        "1ms",  # type: ignore[arg-type]
        description="One-way delay of each access link (s_i—r0 and r1—d_i).",
    )
    #: Order-preserving per-packet jitter on every access link (as ``LinkSpec.jitter``).
    jitter: Time = "0ms"  # type: ignore[assignment]
    slot: Slot | None = Field(
        None,
        description="netem slotting of every sender's access link towards r0 (s_i -> r0): "
        "the data reach the bottleneck in bursts (docs/links.md).",
    )
    slot_reverse: Slot | None = Field(
        None,
        description="Slotting of every receiver's access link towards r1 (d_i -> r1): the "
        "ACKs leave in bursts (ACK aggregation).",
    )


class _Topology(_Model):
    def node_names(self) -> list[str]:
        raise NotImplementedError

    def links(self) -> list[tuple[str, str, LinkSpec]]:
        """Links as (a, b, spec): the spec's ``qdisc`` sits on a's egress (a → b)."""
        raise NotImplementedError

    def default_endpoints(self, i: int) -> tuple[str, str] | None:
        """Source and destination of the i-th flow when the flow names none."""
        return None

    def core_wifi(self) -> list[dict[str, Any]]:
        """config.rs ``SimConfig.wifi``: the Wi-Fi BSSs over this topology's links."""
        return []


class Dumbbell(_Topology):
    """``s_i — r0 — r1 — d_i``; the bottleneck r0—r1 has its qdisc on r0's egress."""

    preset: Literal["dumbbell"]
    pairs: Many | None = Field(
        None, description="Sender/receiver pairs s_i, d_i (default: the number of flows)."
    )
    bottleneck: LinkSpec = Field(description="The r0—r1 link.")
    access: AccessSpec = Field(
        default_factory=AccessSpec, description="Every access link (s_i—r0, r1—d_i)."
    )
    access_delays: list[Time] | None = Field(
        None,
        description="Per-pair one-way delay of the sender's access link s_i—r0 (one per "
        "pair), for RTT mixes; the receiver's side keeps access.delay.",
    )
    wifi: Wifi | None = Field(
        None,
        description="Make the receivers' side a Wi-Fi BSS: r1 the access point, each d_i a "
        "station; the links r1—d_i share one channel (docs/links.md, Wi-Fi).",
    )

    @model_validator(mode="after")
    def _pairs(self) -> Dumbbell:
        if self.access_delays is not None:
            if len(self.access_delays) > MAX_FLOWS:
                raise ValueError(
                    f"access_delays has {len(self.access_delays)} entries, more than the "
                    f"{MAX_FLOWS} sender/receiver pairs allowed (a sane bound for one simulation)"
                )
            if self.pairs is None:
                self.pairs = len(self.access_delays)
            if len(self.access_delays) != self.pairs or not self.access_delays:
                raise ValueError(
                    f"access_delays has {len(self.access_delays)} entries but there are "
                    f"{self.pairs} sender/receiver pairs; give one delay per pair"
                )
        if self.wifi is not None:
            self.wifi.check_stations(self._n())
            if self.access.slot_reverse is not None or self.access.jitter:
                raise ValueError(
                    "access.slot_reverse and access.jitter do not apply to Wi-Fi stations' "
                    "links; the MAC decides when their packets leave"
                )
        return self

    def _n(self) -> int:
        return self.pairs or 1

    def node_names(self) -> list[str]:
        n = self._n()
        return [f"s{i}" for i in range(n)] + ["r0", "r1"] + [f"d{i}" for i in range(n)]

    def _access_link(self, delay: int, sender: bool) -> LinkSpec:
        # A sender's link s_i -> r0 slots its forward direction, a receiver's r1 -> d_i its
        # reverse one: both towards the bottleneck's routers, as netem on their ingress.
        return LinkSpec.model_construct(
            rate=self.access.rate,
            delay=delay,
            loss=0.0,
            jitter=self.access.jitter,
            qdisc=Fifo(),
            qdisc_reverse=Fifo(),
            slot=self.access.slot if sender else None,
            slot_reverse=None if sender else self.access.slot_reverse,
        )

    def links(self) -> list[tuple[str, str, LinkSpec]]:
        out: list[tuple[str, str, LinkSpec]] = [("r0", "r1", self.bottleneck)]
        for i in range(self._n()):
            delay = self.access_delays[i] if self.access_delays else self.access.delay
            out.append((f"s{i}", "r0", self._access_link(delay, sender=True)))
        stations = self.wifi.station_list(self._n()) if self.wifi else []
        for i in range(self._n()):
            link = self._access_link(self.access.delay, sender=False)
            if self.wifi is not None:
                # A station's link: its PHY rate (nominal: the MAC decides the airtime),
                # its queue at the AP and its own, no propagation delay to speak of.
                link = LinkSpec.model_construct(
                    rate=self.wifi.rate_bps(stations[i]),
                    delay=0,
                    loss=0.0,
                    jitter=0,
                    qdisc=self.wifi.qdisc,
                    qdisc_reverse=self.wifi.qdisc,
                )
            out.append(("r1", f"d{i}", link))
        return out

    def core_wifi(self) -> list[dict[str, Any]]:
        if self.wifi is None:
            return []
        n = self._n()
        return [self.wifi.to_core(list(range(1 + n, 1 + 2 * n)))]

    def default_endpoints(self, i: int) -> tuple[str, str]:
        k = i % self._n()
        return f"s{k}", f"d{k}"


class PathTopology(_Topology):
    """``h0 — r0 — … — r{K-1} — h1``: either ``hops`` (K+1 links, from h0 towards h1) or a
    uniform ``link`` with an optional ``bottleneck`` at hop ``bottleneck_index``."""

    preset: Literal["path"]
    routers: Many | None = Field(None, description="Number of routers K between h0 and h1.")
    hops: list[LinkSpec] | None = Field(None, description="The K+1 links from h0 towards h1.")
    link: LinkSpec | None = Field(None, description="One link used for every hop.")
    bottleneck: LinkSpec | None = Field(None, description="The link at hop bottleneck_index.")
    bottleneck_index: Annotated[int, Field(ge=0)] | None = Field(
        None, description="Which hop (0 = h0's link) is the bottleneck."
    )

    @model_validator(mode="after")
    def _shape(self) -> PathTopology:
        if (self.hops is None) == (self.link is None):
            raise ValueError("give either hops (one link per hop) or link (the same for every hop)")
        if self.hops is not None:
            if self.bottleneck is not None or self.bottleneck_index is not None:
                raise ValueError("bottleneck and bottleneck_index go with link, not with hops")
            if self.routers is None:
                self.routers = len(self.hops) - 1
            if self.routers < 1 or len(self.hops) != self.routers + 1:
                raise ValueError(
                    f"hops has {len(self.hops)} entries but a path through {self.routers} "
                    f"router(s) has {self.routers + 1} hops"
                )
        else:
            if self.routers is None:
                raise ValueError("routers (the number of routers) is required with link")
            if self.bottleneck_index is not None and self.bottleneck is None:
                raise ValueError("bottleneck_index needs a bottleneck link spec")
            if self.bottleneck is not None:
                if self.bottleneck_index is None:
                    self.bottleneck_index = (self.routers + 1) // 2
                if self.bottleneck_index > self.routers:
                    raise ValueError(
                        f"bottleneck_index {self.bottleneck_index} is outside the hops "
                        f"0..{self.routers}"
                    )
        return self

    def node_names(self) -> list[str]:
        return ["h0"] + [f"r{i}" for i in range(self.routers or 0)] + ["h1"]

    def hop_specs(self) -> list[LinkSpec]:
        if self.hops is not None:
            return list(self.hops)
        assert self.link is not None and self.routers is not None
        specs = [self.link] * (self.routers + 1)
        if self.bottleneck is not None and self.bottleneck_index is not None:
            specs[self.bottleneck_index] = self.bottleneck
        return specs

    def links(self) -> list[tuple[str, str, LinkSpec]]:
        names = self.node_names()
        return [(names[i], names[i + 1], s) for i, s in enumerate(self.hop_specs())]

    def default_endpoints(self, i: int) -> tuple[str, str]:
        return "h0", "h1"


class TwoHost(LinkSpec, _Topology):
    """``h0 — h1``: one direct link; ``qdisc`` on h0's egress."""

    preset: Literal["two_host"]

    def node_names(self) -> list[str]:
        return ["h0", "h1"]

    def links(self) -> list[tuple[str, str, LinkSpec]]:
        return [("h0", "h1", self)]

    def default_endpoints(self, i: int) -> tuple[str, str]:
        return "h0", "h1"


_NODE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


class CustomLink(LinkSpec):
    """A link of a custom topology between nodes ``a`` and ``b`` (``qdisc`` on a → b)."""

    a: str = Field(description="One end (a node name); qdisc is on a's egress.")
    b: str = Field(description="The other end; qdisc_reverse is on b's egress.")


class Custom(_Topology):
    """Any topology: node names and links between them."""

    preset: Literal["custom"]
    nodes: list[str] = Field(description="Node names.")
    links_: list[CustomLink] = Field(alias="links")

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    @model_validator(mode="after")
    def _names(self) -> Custom:
        if len(self.nodes) < 2:
            raise ValueError("nodes must list at least two node names")
        seen: set[str] = set()
        for i, name in enumerate(self.nodes):
            if not _NODE_NAME.match(name):
                raise ValueError(
                    f"nodes[{i}] {name!r} is not a valid node name (letters, digits, _ . -, "
                    "not starting with a digit)"
                )
            if name in seen:
                raise ValueError(f"nodes[{i}] {name!r} appears twice; node names must be unique")
            seen.add(name)
        joined: dict[frozenset[str], int] = {}
        for i, link in enumerate(self.links_):
            ends = (("a", link.a), ("b", link.b))
            _check_ends(f"links[{i}]", ends, seen, self.nodes, "nodes")
            if link.a == link.b:
                raise ValueError(f"links[{i}] joins node {link.a!r} to itself")
            pair = frozenset((link.a, link.b))
            if pair in joined:
                # routing picks one path between two nodes: a second link would carry nothing
                raise ValueError(
                    f"links[{joined[pair]}] and links[{i}] both join {link.a!r} and {link.b!r}; "
                    "l4sim routes one path between two nodes: join them once (one faster "
                    "link, or a node in between)"
                )
            joined[pair] = i
        return self

    def node_names(self) -> list[str]:
        return list(self.nodes)

    def links(self) -> list[tuple[str, str, LinkSpec]]:
        return [(lk.a, lk.b, lk) for lk in self.links_]


Topology = Annotated[
    Dumbbell | PathTopology | TwoHost | Custom,
    Field(discriminator="preset"),
]
TOPOLOGY_PRESETS: tuple[str, ...] = ("dumbbell", "path", "two_host", "custom")


def _check_ends(
    where: str, ends: tuple[tuple[str, str], ...], known: Any, names: Any, place: str
) -> None:
    """Each ``(end, node)`` names a node in ``known``; else one sentence naming the end, the
    node, ``place`` (where nodes are declared) and the known node ``names``."""
    for end, node in ends:
        if node not in known:
            raise ValueError(
                f"{where}.{end} names node {node!r}, which is not in {place}; "
                f"known nodes: {', '.join(names)}"
            )


def _routed(topology: _Topology, pairs: list[tuple[str, str]]) -> list[bool]:
    """Whether the core finds a route both ways for each ``(src, dst)`` node pair: the core is
    the only router (``_core.flow_paths`` on the topology's nodes and links)."""
    import json

    from l4sim.native import core as _core_module

    names = topology.node_names()
    index = {n: i for i, n in enumerate(names)}
    config = {
        "duration_ns": 1,
        "nodes": [{"name": n} for n in names],
        "links": [
            {"a": index[x], "b": index[y], "rate_bps": spec.rate or 1, "delay_ns": spec.delay}
            for x, y, spec in topology.links()
        ],
        "flows": [{"kind": "udp", "src": index[a], "dst": index[b]} for a, b in pairs],
    }
    return [p is not None for p in _core_module().flow_paths(json.dumps(config))]
