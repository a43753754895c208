"""Scenario models: the one place that validates user input.

A scenario is a TOML file (or the same structure built in Python) that names a topology
preset, the flows, and run parameters, with every quantity written as a unit string (see
:mod:`l4sim.units`). :meth:`Scenario.to_core_config` expands presets into the normalised
configuration of ``crates/l4sim-core/src/config.rs`` (node indices, ns, bps, bytes).

Every problem is reported as a :class:`ScenarioError` whose message is one sentence naming
the file, the key path (``flows[2].cca``), the bad value and what is allowed.

Adding a queue discipline (or a flow kind, or a topology preset) is adding one model class
with a ``kind`` (``preset``) literal and a ``to_core`` method, and listing it in the
``Qdisc`` (``Flow``, ``Topology``) union below.
"""

from __future__ import annotations

import json
import re
import tomllib
import types
import typing
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from l4sim.errors import L4simError, ScenarioError
from l4sim.units import (
    QueueLimit,
    UnitError,
    format_rate,
    format_size,
    format_time,
    parse_queue_limit,
    parse_rate,
    parse_size,
    parse_time,
)

__all__ = [
    "AccessSpec",
    "Codel",
    "Custom",
    "CustomLink",
    "Delack",
    "DualPi2",
    "Dumbbell",
    "Fifo",
    "Flow",
    "Fq",
    "FqCodel",
    "FqL4s",
    "FqPie",
    "L4simError",
    "LinkSpec",
    "PathTopology",
    "Pie",
    "Qdisc",
    "Red",
    "Scenario",
    "ScenarioError",
    "TcpFlow",
    "Topology",
    "TwoHost",
    "UdpFlow",
    "load",
    "loads",
]


# --------------------------------------------------------------------------------------------
# Unit-carrying field types: parsed to integers on input, written back as exact unit strings.


def _positive(what: str):
    def check(v: int) -> int:
        if v <= 0:
            raise PydanticCustomError("not_positive", "must be a positive {what}", {"what": what})
        return v

    return AfterValidator(check)


Rate = Annotated[
    int,
    BeforeValidator(parse_rate),
    _positive("rate"),
    PlainSerializer(format_rate, return_type=str, when_used="json"),
]
"""Bits per second, written ``"10Mbps"``; must be positive."""

Time = Annotated[
    int,
    BeforeValidator(parse_time),
    PlainSerializer(format_time, return_type=str, when_used="json"),
]
"""Nanoseconds, written ``"20ms"``; zero allowed."""

PositiveTime = Annotated[Time, _positive("time")]

Size = Annotated[
    int,
    BeforeValidator(parse_size),
    _positive("size"),
    PlainSerializer(format_size, return_type=str, when_used="json"),
]
"""Bytes, written ``"1500B"`` / ``"150KB"`` / ``"1.5MiB"``; must be positive."""


def _positive_limit(v: QueueLimit) -> QueueLimit:
    if (v.packets if v.packets is not None else v.bytes) == 0:
        raise PydanticCustomError("not_positive", "must be a positive queue limit")
    return v


Limit = Annotated[
    QueueLimit,
    BeforeValidator(parse_queue_limit),
    AfterValidator(_positive_limit),
    PlainSerializer(str, return_type=str, when_used="json"),
]
"""Queue limit, written ``"100p"`` (packets) or a size (bytes)."""

Count = Annotated[int, Field(gt=0)]
Probability = Annotated[float, Field(ge=0.0, lt=1.0)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


# --------------------------------------------------------------------------------------------
# Queue disciplines: one model per kind; `to_core` gives the config.rs `QdiscConfig` form.


class Fifo(_Model):
    """Drop-tail FIFO (``kind = "fifo"``), limited in packets (``"100p"``) or bytes."""

    kind: Literal["fifo"] = "fifo"
    limit: Limit = "1000p"  # type: ignore[assignment]

    def to_core(self) -> dict[str, Any]:
        if self.limit.packets is not None:
            return {"kind": "fifo", "limit_pkts": self.limit.packets}
        return {"kind": "fifo", "limit_bytes": self.limit.bytes}


def _in_packets(v: QueueLimit) -> QueueLimit:
    if v.packets is None:
        raise PydanticCustomError(
            "not_packets", "must be a number of packets such as '100p', not a size"
        )
    return v


PacketLimit = Annotated[Limit, AfterValidator(_in_packets)]
"""A queue limit in packets only (``"1000p"``)."""

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Gain = Annotated[float, Field(ge=0.0, le=100.0)]
Flag = Annotated[bool, Field(strict=True)]


class _AqmBase(_Model):
    """An AQM model: every parameter is optional and an unset one takes the core's default
    (the ``Default`` impls in ``crates/l4sim-core/src/qdisc/``; listed in docs/qdiscs.md).
    Every field goes to config.rs under its own name unless ``_core_keys`` renames it;
    fields in ``_own_keys`` are written by the subclass's ``to_core``."""

    kind: str
    _core_keys: ClassVar[dict[str, str]] = {"limit": "limit_pkts"}
    _own_keys: ClassVar[frozenset[str]] = frozenset()

    def to_core(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for name in type(self).model_fields:
            if name == "kind" or name in self._own_keys:
                continue
            key = self._core_keys.get(name, name)
            value = getattr(self, name)
            if isinstance(value, QueueLimit):
                value = value.packets if value.packets is not None else value.bytes
            if value is not None:
                out[key] = value
        return out


class Red(_AqmBase):
    """RED (``kind = "red"``): thresholds and limit all in packets (``"5p"``) or all in bytes
    (byte mode, then all three are required); ``max_p``, ``w_q``, ``gentle``, ``ecn``,
    ``harddrop``, ``avpkt`` and the link ``bandwidth`` for the idle-time decay."""

    kind: Literal["red"] = "red"
    limit: Limit | None = None
    min_th: Limit | None = None
    max_th: Limit | None = None
    max_p: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    w_q: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    gentle: Flag | None = None
    ecn: Flag | None = None
    harddrop: Flag | None = None
    avpkt: Size | None = None
    bandwidth: Rate | None = None

    _core_keys: ClassVar[dict[str, str]] = {"bandwidth": "bandwidth_bps"}

    def byte_mode(self) -> bool:
        return any(v is not None and v.bytes is not None for v in self._sizes().values())

    def _sizes(self) -> dict[str, QueueLimit | None]:
        return {"limit": self.limit, "min_th": self.min_th, "max_th": self.max_th}

    @model_validator(mode="after")
    def _units(self) -> Red:
        sizes = self._sizes()
        if self.byte_mode():
            for name, v in sizes.items():
                if v is None or v.bytes is None:
                    raise ValueError(
                        "limit, min_th and max_th must all be sizes in byte mode "
                        f"(one of them is a size); {name} is "
                        + ("missing" if v is None else f"{v} packets")
                    )
        if self.min_th is not None and self.max_th is not None:
            lo = self.min_th.packets or self.min_th.bytes or 0
            hi = self.max_th.packets or self.max_th.bytes or 0
            if lo >= hi:
                raise ValueError(
                    f"min_th {str(self.min_th)!r} must be below max_th {str(self.max_th)!r}"
                )
        return self

    def to_core(self) -> dict[str, Any]:
        out = super().to_core()
        if self.byte_mode():
            out["bytes"] = True
        return out


class Codel(_AqmBase):
    """CoDel, RFC 8289 (``kind = "codel"``): ``target``, ``interval``, ``limit`` (packets),
    ``mtu`` (no drop at or below one MTU of backlog) and ``ecn``."""

    kind: Literal["codel"] = "codel"
    limit: PacketLimit | None = None
    target: PositiveTime | None = None
    interval: PositiveTime | None = None
    mtu: Size | None = None
    ecn: Flag | None = None

    _core_keys: ClassVar[dict[str, str]] = {
        "limit": "limit_pkts",
        "target": "target_ns",
        "interval": "interval_ns",
    }


class Pie(_AqmBase):
    """PIE, RFC 8033 (``kind = "pie"``): ``target``, ``tupdate``, gains ``alpha`` and
    ``beta`` (per second), ``max_burst``, ``ecn`` with ``max_ecnth``, ``bytemode``,
    ``limit`` (packets)."""

    kind: Literal["pie"] = "pie"
    limit: PacketLimit | None = None
    target: PositiveTime | None = None
    tupdate: PositiveTime | None = None
    alpha: Gain | None = None
    beta: Gain | None = None
    max_burst: Time | None = None
    max_ecnth: Fraction | None = None
    ecn: Flag | None = None
    bytemode: Flag | None = None
    mtu: Size | None = None

    _core_keys: ClassVar[dict[str, str]] = {
        "limit": "limit_pkts",
        "target": "target_ns",
        "tupdate": "tupdate_ns",
        "max_burst": "max_burst_ns",
    }


class FqCodel(Codel):
    """FQ-CoDel, RFC 8290 (``kind = "fq_codel"``): CoDel per flow queue plus ``flows``
    (hash buckets), ``quantum`` (DRR bytes), ``drop_batch``; ``limit`` is the total."""

    kind: Literal["fq_codel"] = "fq_codel"  # type: ignore[assignment]
    flows: Count | None = None
    quantum: Size | None = None
    drop_batch: Count | None = None


class FqPie(Pie):
    """FQ-PIE (``kind = "fq_pie"``): PIE per flow queue plus ``flows`` and ``quantum``;
    ``limit`` is the total."""

    kind: Literal["fq_pie"] = "fq_pie"  # type: ignore[assignment]
    flows: Count | None = None
    quantum: Size | None = None


class Fq(_AqmBase):
    """Flow queues with a fixed drop-tail buffer per flow (``kind = "fq"``, the LFQ paper's
    "fq 100"): ``per_flow_limit`` (packets), ``limit`` (total), ``flows``, ``quantum``,
    ``drop_batch``, ``lfq_features`` (keep LFQ's per-flow features for agents)."""

    kind: Literal["fq"] = "fq"
    limit: PacketLimit | None = None
    per_flow_limit: PacketLimit | None = None
    flows: Count | None = None
    quantum: Size | None = None
    drop_batch: Count | None = None
    lfq_features: Flag | None = None


EcnMask = Literal["l4s_ect", "any_ect"]
"""Which ECN codepoints go to the L queue: ECT(1) and CE, or any ECT."""


class DualPi2(_AqmBase):
    """DualPI2, RFC 9332 with Linux ``sch_dualpi2`` semantics (``kind = "dualpi2"``):
    ``variant`` (``"linux"`` or ``"rfc9332"`` for the Appendix A pseudocode), ``limit``
    (packets, both queues), PI2 ``target``, ``tupdate``, ``alpha`` and ``beta`` (Hz, per
    update), ``coupling`` (k), L-queue ``step_thresh`` (a time, or packets ``"5p"``),
    ``min_qlen_step``, ``c_protection`` (Classic WRR share, percent), ``ecn_mask``,
    ``drop_overload``, ``drop_early``, ``mtu``; for the RFC variant the ramp ``l_min_thresh``,
    ``l_range``, ``l_th_len`` and the scheduler's ``tshift``."""

    kind: Literal["dualpi2"] = "dualpi2"
    variant: Literal["linux", "rfc9332"] | None = None
    limit: PacketLimit | None = None
    target: Time | None = None
    tupdate: PositiveTime | None = None
    alpha: Gain | None = None
    beta: Gain | None = None
    coupling: Annotated[float, Field(gt=0.0, le=100.0)] | None = None
    step_thresh: Time | Limit | None = None
    min_qlen_step: Annotated[int, Field(ge=0)] | None = None
    c_protection: Annotated[int, Field(ge=0, le=100)] | None = None
    ecn_mask: EcnMask | None = None
    drop_overload: Flag | None = None
    drop_early: Flag | None = None
    mtu: Size | None = None
    l_min_thresh: Time | None = None
    l_range: PositiveTime | None = None
    l_th_len: Annotated[int, Field(ge=0)] | None = None
    tshift: Time | None = None

    _core_keys: ClassVar[dict[str, str]] = {
        "limit": "limit_pkts",
        "target": "target_ns",
        "tupdate": "tupdate_ns",
        "l_min_thresh": "l_min_thresh_ns",
        "l_range": "l_range_ns",
        "tshift": "tshift_ns",
    }
    _own_keys: ClassVar[frozenset[str]] = frozenset({"step_thresh"})

    @model_validator(mode="after")
    def _step_unit(self) -> DualPi2:
        st = self.step_thresh
        if isinstance(st, QueueLimit) and st.packets is None:
            raise ValueError("step_thresh must be a time such as '1ms' or packets such as '5p'")
        return self

    def to_core(self) -> dict[str, Any]:
        out = super().to_core()
        st = self.step_thresh
        if isinstance(st, QueueLimit):
            out["step_thresh_pkts"] = st.packets
        elif st is not None:
            out["step_thresh_ns"] = st
        return out


class FqL4s(Pie):
    """FQ-L4S, the FreeBSD ``dn_sched_l4s`` scheduler of the A3C-L4S paper
    (``kind = "fq_l4s"``): ``pairs`` hash buckets of a Classic and an L queue, PIE on each
    (``target``, ``tupdate``, ``alpha``, ``beta``, ``max_burst``, ``max_ecnth``, ``ecn``,
    ``bytemode``, ``mtu``); a Classic queue applies p squared, an L queue the larger of its
    own p and ``coupling`` times its paired Classic p; DRR with ``quantum``; ``limit`` is
    the total; ``ecn_mask`` picks the L codepoints."""

    kind: Literal["fq_l4s"] = "fq_l4s"  # type: ignore[assignment]
    pairs: Count | None = None
    quantum: Size | None = None
    coupling: Annotated[float, Field(gt=0.0, le=100.0)] | None = None
    ecn_mask: EcnMask | None = None


def _qdisc_shorthand(v: Any) -> Any:
    """``qdisc = "fifo"`` means ``qdisc = { kind = "fifo" }`` with default parameters."""
    return {"kind": v} if isinstance(v, str) else v


class AgentQdisc(_AqmBase):
    """A FIFO whose drop (with ``ecn``: mark) probability an agent sets each step
    (``kind = "agent"``; see ``l4sim.envs``): ``limit`` (packets), ``ecn``."""

    kind: Literal["agent"] = "agent"
    limit: PacketLimit | None = None
    ecn: Flag | None = None


Qdisc = Annotated[
    Fifo | Red | Codel | Pie | FqCodel | FqPie | Fq | DualPi2 | FqL4s | AgentQdisc,
    Field(discriminator="kind"),
    BeforeValidator(_qdisc_shorthand),
]
"""Any queue discipline; add new kinds here."""

QDISC_KINDS: tuple[str, ...] = (
    "fifo",
    "red",
    "codel",
    "pie",
    "fq_codel",
    "fq_pie",
    "fq",
    "dualpi2",
    "fq_l4s",
    "agent",
)

# --------------------------------------------------------------------------------------------
# Links and topology presets.


class LinkSpec(_Model):
    """A bidirectional link: ``qdisc`` on the forward egress, ``qdisc_reverse`` on the other."""

    rate: Rate
    delay: Time
    loss: Probability = 0.0
    qdisc: Qdisc = Field(default_factory=Fifo)
    qdisc_reverse: Qdisc = Field(default_factory=Fifo)

    def to_core(self, a: int, b: int) -> dict[str, Any]:
        return {
            "a": a,
            "b": b,
            "rate_bps": self.rate,
            "delay_ns": self.delay,
            "loss": self.loss,
            "qdisc_ab": self.qdisc.to_core(),
            "qdisc_ba": self.qdisc_reverse.to_core(),
        }


class AccessSpec(_Model):
    """Access links of a dumbbell (default FIFO 1000p both ways)."""

    rate: Rate = "1Gbps"  # type: ignore[assignment]
    delay: Time = "1ms"  # type: ignore[assignment]


class _Topology(_Model):
    def node_names(self) -> list[str]:
        raise NotImplementedError

    def links(self) -> list[tuple[str, str, LinkSpec]]:
        """Links as (a, b, spec): the spec's ``qdisc`` sits on a's egress (a → b)."""
        raise NotImplementedError

    def default_endpoints(self, i: int) -> tuple[str, str] | None:
        """Source and destination of the i-th flow when the flow names none."""
        return None


class Dumbbell(_Topology):
    """``s_i — r0 — r1 — d_i``; the bottleneck r0—r1 has its qdisc on r0's egress."""

    preset: Literal["dumbbell"]
    pairs: Count | None = None
    bottleneck: LinkSpec
    access: AccessSpec = Field(default_factory=AccessSpec)
    access_delays: list[Time] | None = None

    @model_validator(mode="after")
    def _pairs(self) -> Dumbbell:
        if self.access_delays is not None:
            if self.pairs is None:
                self.pairs = len(self.access_delays)
            if len(self.access_delays) != self.pairs or not self.access_delays:
                raise ValueError(
                    f"access_delays has {len(self.access_delays)} entries but there are "
                    f"{self.pairs} sender/receiver pairs; give one delay per pair"
                )
        return self

    def _n(self) -> int:
        return self.pairs or 1

    def node_names(self) -> list[str]:
        n = self._n()
        return [f"s{i}" for i in range(n)] + ["r0", "r1"] + [f"d{i}" for i in range(n)]

    def _access_link(self, delay: int) -> LinkSpec:
        return LinkSpec.model_construct(
            rate=self.access.rate, delay=delay, loss=0.0, qdisc=Fifo(), qdisc_reverse=Fifo()
        )

    def links(self) -> list[tuple[str, str, LinkSpec]]:
        out: list[tuple[str, str, LinkSpec]] = [("r0", "r1", self.bottleneck)]
        for i in range(self._n()):
            delay = self.access_delays[i] if self.access_delays else self.access.delay
            out.append((f"s{i}", "r0", self._access_link(delay)))
        for i in range(self._n()):
            out.append(("r1", f"d{i}", self._access_link(self.access.delay)))
        return out

    def default_endpoints(self, i: int) -> tuple[str, str]:
        k = i % self._n()
        return f"s{k}", f"d{k}"


class PathTopology(_Topology):
    """``h0 — r0 — … — r{K-1} — h1``: either ``hops`` (K+1 links, from h0 towards h1) or a
    uniform ``link`` with an optional ``bottleneck`` at hop ``bottleneck_index``."""

    preset: Literal["path"]
    routers: Count | None = None
    hops: list[LinkSpec] | None = None
    link: LinkSpec | None = None
    bottleneck: LinkSpec | None = None
    bottleneck_index: Annotated[int, Field(ge=0)] | None = None

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

    a: str
    b: str


class Custom(_Topology):
    """Any topology: node names and links between them."""

    preset: Literal["custom"]
    nodes: list[str]
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
        for i, link in enumerate(self.links_):
            for end in ("a", "b"):
                node = getattr(link, end)
                if node not in seen:
                    raise ValueError(
                        f"links[{i}].{end} names node {node!r}, which is not in nodes; "
                        f"known nodes: {', '.join(self.nodes)}"
                    )
            if link.a == link.b:
                raise ValueError(f"links[{i}] joins node {link.a!r} to itself")
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

# --------------------------------------------------------------------------------------------
# Flows.


def _delack_shorthand(v: Any) -> Any:
    """``delack = false`` disables delayed ACKs (ACK every segment); ``true`` keeps defaults."""
    if v is False:
        return {"count": 1}
    if v is True:
        return {}
    return v


class Delack(_Model):
    """Delayed ACKs: ACK every ``count``-th full segment or after ``timeout``."""

    count: Count | None = None
    timeout: PositiveTime | None = None


class _FlowBase(_Model):
    src: str | None = None
    dst: str | None = None
    start: Time = "0s"  # type: ignore[assignment]
    stop: Time | None = None
    size: Size | None = None
    count: Count = 1

    def core_params(self) -> dict[str, Any]:
        raise NotImplementedError


class TcpFlow(_FlowBase):
    """A TCP flow: bulk unless ``size`` is given. Unset options take the core's Linux
    defaults (mss 1448 B, initial window 10 segments, no initial ssthresh, min RTO 200 ms,
    delayed ACK every 2 segments / 40 ms, SACK and timestamps on, no pacing, …).
    ``init_cwnd`` / ``init_ssthresh`` are in segments."""

    kind: Literal["tcp"]
    cca: Literal["newreno", "cubic", "bic", "bbr", "vegas", "dctcp", "prague", "external"] = (
        "newreno"
    )
    ecn: Annotated[bool, Field(strict=True)] = False
    mss: Size | None = None
    header_size: Size | None = None
    init_cwnd: Count | None = None
    init_ssthresh: Annotated[int, Field(ge=2)] | None = None
    min_rto: PositiveTime | None = None
    max_rto: PositiveTime | None = None
    init_rto: PositiveTime | None = None
    delack: Annotated[Delack, BeforeValidator(_delack_shorthand)] | None = None
    dupack_threshold: Count | None = None
    rwnd: Size | None = None
    ect1: Annotated[bool, Field(strict=True)] | None = None
    prague_rtt_independence: Annotated[bool, Field(strict=True)] | None = None
    prague_alpha_mode: Literal[0, 1] | None = None
    accecn: Annotated[bool, Field(strict=True)] | None = None
    sack: Annotated[bool, Field(strict=True)] | None = None
    timestamps: Annotated[bool, Field(strict=True)] | None = None
    pacing: Annotated[bool, Field(strict=True)] | None = None

    def core_params(self) -> dict[str, Any]:
        tcp: dict[str, Any] = {"cca": self.cca, "ecn": self.ecn}
        for key in (
            "ect1",
            "accecn",
            "prague_rtt_independence",
            "prague_alpha_mode",
            "sack",
            "timestamps",
            "pacing",
        ):
            if getattr(self, key) is not None:
                tcp[key] = getattr(self, key)
        if self.timestamps is False:
            # Without the 12-byte timestamp option Linux's MSS on a 1500-byte MTU is 1460.
            tcp["mss"], tcp["header_bytes"] = 1460, 40
        for key, core_key in (
            ("mss", "mss"),
            ("header_size", "header_bytes"),
            ("init_cwnd", "init_cwnd"),
            ("init_ssthresh", "init_ssthresh"),
            ("min_rto", "min_rto_ns"),
            ("max_rto", "max_rto_ns"),
            ("init_rto", "init_rto_ns"),
            ("dupack_threshold", "dupack_threshold"),
            ("rwnd", "rwnd_bytes"),
        ):
            value = getattr(self, key)
            if value is not None:
                tcp[core_key] = value
        if self.delack is not None:
            if self.delack.count is not None:
                tcp["delack_count"] = self.delack.count
            if self.delack.timeout is not None:
                tcp["delack_timeout_ns"] = self.delack.timeout
        return {"tcp": tcp}


class UdpFlow(_FlowBase):
    """A UDP constant-bit-rate flow of ``packet_size``-byte packets (headers included)."""

    kind: Literal["udp"]
    rate: Rate
    packet_size: Size = "1500B"  # type: ignore[assignment]
    ecn: Literal["not_ect", "ect0", "ect1", "ce"] = "not_ect"

    def core_params(self) -> dict[str, Any]:
        return {"udp": {"rate_bps": self.rate, "packet_bytes": self.packet_size, "ecn": self.ecn}}


def _flow_default_kind(v: Any) -> Any:
    """A flow without ``kind`` is TCP."""
    if isinstance(v, dict) and "kind" not in v:
        return {"kind": "tcp", **v}
    return v


class ControlFlow(_FlowBase):
    """Carries agent actions as packets to its ``dst`` (``kind = "control"``): each action an
    environment sends is one ``packet_size``-byte packet with the given ECN codepoint, so
    queueing and L4S priority on the path decide when it lands (paper 000)."""

    kind: Literal["control"]
    packet_size: Size = "100B"  # type: ignore[assignment]
    ecn: Literal["not_ect", "ect0", "ect1", "ce"] = "not_ect"

    def core_params(self) -> dict[str, Any]:
        return {"udp": {"packet_bytes": self.packet_size, "ecn": self.ecn}}


Flow = Annotated[
    TcpFlow | UdpFlow | ControlFlow,
    Field(discriminator="kind"),
    BeforeValidator(_flow_default_kind),
]
FLOW_KINDS: tuple[str, ...] = ("tcp", "udp", "control")

# --------------------------------------------------------------------------------------------
# The scenario.


class ResolvedFlow(BaseModel):
    """One flow after ``count`` expansion and endpoint defaults (index = core flow id)."""

    index: int
    source_index: int
    spec: TcpFlow | UdpFlow | ControlFlow
    src: str
    dst: str


class Scenario(_Model):
    """A complete simulation: topology, flows and run parameters."""

    name: str = "scenario"
    description: str = ""
    seed: Annotated[int, Field(ge=0, lt=2**64)] = 1
    duration: PositiveTime
    sample_interval: PositiveTime = "100ms"  # type: ignore[assignment]
    topology: Topology
    flows: list[Flow] = Field(default_factory=list)

    @model_validator(mode="after")
    def _cross_checks(self) -> Scenario:
        topo = self.topology
        if isinstance(topo, Dumbbell) and topo.pairs is None:
            topo.pairs = max(1, sum(f.count for f in self.flows))
        names = topo.node_names()
        known = set(names)
        adjacency: dict[str, set[str]] = {n: set() for n in names}
        for a, b, _ in topo.links():
            adjacency[a].add(b)
            adjacency[b].add(a)
        for rf in self.resolved_flows():
            where = f"flows[{rf.source_index}]"
            spec = rf.spec
            for end, node in (("src", rf.src), ("dst", rf.dst)):
                if node not in known:
                    raise ValueError(
                        f"{where}.{end} names node {node!r}, which is not in the topology; "
                        f"known nodes: {', '.join(names)}"
                    )
            if rf.src == rf.dst:
                raise ValueError(f"{where} has the same src and dst {rf.src!r}")
            if not _connected(adjacency, rf.src, rf.dst):
                raise ValueError(f"{where}: there is no path from {rf.src!r} to {rf.dst!r}")
            if spec.start >= self.duration:
                raise ValueError(
                    f"{where}.start {format_time(spec.start)!r} is not before the end of the "
                    f"run (duration {format_time(self.duration)!r})"
                )
            if spec.stop is not None and spec.stop <= spec.start:
                raise ValueError(
                    f"{where}.stop {format_time(spec.stop)!r} must be after its start "
                    f"{format_time(spec.start)!r}"
                )
        return self

    # -- derived views -----------------------------------------------------------------------

    def node_names(self) -> list[str]:
        return self.topology.node_names()

    def resolved_flows(self) -> list[ResolvedFlow]:
        """Flows after ``count`` replication, with default endpoints filled in."""
        out: list[ResolvedFlow] = []
        for j, spec in enumerate(self.flows):
            for _ in range(spec.count):
                i = len(out)
                default = self.topology.default_endpoints(i)
                src = spec.src if spec.src is not None else (default[0] if default else None)
                dst = spec.dst if spec.dst is not None else (default[1] if default else None)
                if src is None or dst is None:
                    missing = "src" if src is None else "dst"
                    raise ValueError(
                        f"flows[{j}].{missing} is required with a custom topology; "
                        f"known nodes: {', '.join(self.node_names())}"
                    )
                out.append(ResolvedFlow(index=i, source_index=j, spec=spec, src=src, dst=dst))
        return out

    def to_core_config(self) -> dict[str, Any]:
        """The normalised configuration of ``config.rs`` (``SimConfig``) as a JSON-able dict."""
        names = self.node_names()
        index = {n: i for i, n in enumerate(names)}
        links = [spec.to_core(index[a], index[b]) for a, b, spec in self.topology.links()]
        flows = []
        for rf in self.resolved_flows():
            spec = rf.spec
            flow: dict[str, Any] = {
                "kind": spec.kind,
                "src": index[rf.src],
                "dst": index[rf.dst],
                "start_ns": spec.start,
            }
            if spec.stop is not None:
                flow["stop_ns"] = spec.stop
            if spec.size is not None:
                flow["size_bytes"] = spec.size
            flow.update(spec.core_params())
            flows.append(flow)
        return {
            "seed": self.seed,
            "duration_ns": self.duration,
            "sample_interval_ns": self.sample_interval,
            "nodes": [{"name": n} for n in names],
            "links": links,
            "flows": flows,
        }

    def to_core_json(self) -> str:
        return json.dumps(self.to_core_config())

    # -- construction and round trips --------------------------------------------------------

    @classmethod
    def parse(cls, data: Any, *, source: str | None = None) -> Scenario:
        """Validate ``data`` (a dict as read from TOML); errors become :class:`ScenarioError`."""
        if not isinstance(data, dict):
            raise ScenarioError(_prefix(source) + "a scenario must be a table of keys")
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ScenarioError(_prefix(source) + _describe(e)) from None

    def with_overrides(self, **changes: Any) -> Scenario:
        """A validated copy with top-level keys replaced, e.g. ``seed=3, duration="5s"``."""
        data = self.to_dict()
        data.update({k: v for k, v in changes.items() if v is not None})
        return Scenario.parse(data, source="override")

    def to_dict(self) -> dict[str, Any]:
        """Plain data with unit strings; ``Scenario.parse(s.to_dict())`` gives ``s`` back."""
        return _tags_first(self.model_dump(mode="json", exclude_none=True, by_alias=True))

    def to_toml(self) -> str:
        """The scenario as TOML text that :func:`load` reads back to an equal scenario."""
        return _toml_dumps(self.to_dict())


def _tags_first(data: Any) -> Any:
    """Put ``preset`` / ``kind`` first in every table, for readable copies."""
    if isinstance(data, list):
        return [_tags_first(x) for x in data]
    if isinstance(data, dict):
        head = {k: data[k] for k in ("preset", "kind") if k in data}
        return head | {k: _tags_first(v) for k, v in data.items() if k not in head}
    return data


def _connected(adjacency: dict[str, set[str]], a: str, b: str) -> bool:
    seen, todo = {a}, deque([a])
    while todo:
        n = todo.popleft()
        if n == b:
            return True
        for m in adjacency[n] - seen:
            seen.add(m)
            todo.append(m)
    return False


def load(path: str | Path) -> Scenario:
    """Read a scenario from a TOML (or JSON) file; every problem is a :class:`ScenarioError`."""
    path = Path(path)
    name = path.name
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"scenario file {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise ScenarioError(f"{str(path)!r} is a directory, not a scenario file") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{name}: the file is not UTF-8 text") from None
    except OSError as e:
        raise ScenarioError(f"scenario file {str(path)!r} cannot be read ({e.strerror})") from None
    return loads(text, source=name, json_format=path.suffix == ".json", default_name=path.stem)


def loads(
    text: str,
    *,
    source: str | None = None,
    json_format: bool = False,
    default_name: str | None = None,
) -> Scenario:
    """Parse scenario text (TOML, or JSON with ``json_format``); errors name ``source``."""
    name = source or "scenario"
    if not text.strip():
        raise ScenarioError(
            f"{name}: the file is empty; a scenario needs at least duration, topology and flows"
        )
    if json_format:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ScenarioError(f"{name}: not valid JSON ({e.msg} at line {e.lineno})") from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ScenarioError(f"{name}: not valid TOML ({e})") from None
    if isinstance(data, dict) and default_name:
        data.setdefault("name", default_name)
    return Scenario.parse(data, source=source)


# --------------------------------------------------------------------------------------------
# ValidationError → one sentence.


def _prefix(source: str | None) -> str:
    return f"{source}: " if source else ""


def _unwrap(tp: Any) -> Any:
    """Strip Annotated and Optional wrappers."""
    while True:
        origin = typing.get_origin(tp)
        if origin is Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) == 1:
                tp = args[0]
                continue
        return tp


def _union_members(tp: Any) -> list[type[BaseModel]]:
    """Members of a tagged union; a tagged model on its own counts as a union of one."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [_unwrap(a) for a in typing.get_args(tp)]
    else:
        members = [tp]
    return [
        m
        for m in members
        if isinstance(m, type) and issubclass(m, BaseModel) and _tag_of(m) is not None
    ]


def _field_by_key(model: type[BaseModel], key: str) -> Any:
    for fname, info in model.model_fields.items():
        if key in (fname, info.alias):
            return info.annotation
    return None


def _walk(loc: Iterable[int | str]) -> tuple[str, Any]:
    """Display path (``flows[2].cca``) for a pydantic ``loc``, skipping union tags, and the
    type found at its end (a model class when the loc ends on a model)."""
    tp: Any = Scenario
    parts: list[str] = []
    for item in loc:
        tp = _unwrap(tp)
        tagged = [m for m in _union_members(tp) if _tag_of(m) == item]
        if tagged:  # a discriminated-union tag: not part of the user's key path
            tp = tagged[0]
            continue
        if isinstance(item, int):
            parts.append(f"[{item}]")
            tp = typing.get_args(tp)[0] if typing.get_origin(tp) is list else None
            continue
        parts.append(("." if parts else "") + str(item))
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            tp = _field_by_key(tp, str(item))
        else:
            tp = None
    tp = _unwrap(tp)
    return "".join(parts), tp


def _tag_of(model: type[BaseModel]) -> str | None:
    for key in ("kind", "preset"):
        info = model.model_fields.get(key)
        if info is not None and typing.get_origin(info.annotation) is Literal:
            return typing.get_args(info.annotation)[0]
    return None


def _allowed_tags(tp: Any) -> list[str]:
    return [t for m in _union_members(tp) if (t := _tag_of(m)) is not None]


def _join_or(items: list[str]) -> str:
    quoted = [f"'{x}'" for x in items]
    if len(quoted) <= 1:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _describe(exc: ValidationError) -> str:
    """One sentence for the first error: key path, bad value, what is allowed."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    if first["type"] == "missing":
        # A misspelt key shows up as "missing" + "extra": name the misspelling, it's the cause.
        for other in errors[1:]:
            if other["type"] == "extra_forbidden" and other["loc"][:-1] == first["loc"][:-1]:
                missing = _walk(first["loc"])[0]
                return f"{_describe_one(other)} ({missing} is required)"
    return _describe_one(first)


def _describe_one(err: Any) -> str:
    loc = err["loc"]
    path, tp = _walk(loc)
    kind = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    shown = repr(value) if not isinstance(value, dict | list) else None
    what = f"{path} {shown}" if shown is not None and path else (path or "the scenario")

    if kind == "value_error":
        cause = ctx.get("error")
        if isinstance(cause, UnitError):
            return f"{path} {cause}" if path else str(cause)
        return f"{path}: {cause}" if path else str(cause)
    if kind == "missing":
        return f"{path} is required"
    if kind == "extra_forbidden":
        parent_path, parent = _walk(loc[:-1])
        where = f" in {parent_path}" if parent_path else ""
        allowed = ""
        if isinstance(parent, type) and issubclass(parent, BaseModel):
            keys = [info.alias or f for f, info in parent.model_fields.items()]
            allowed = f"; allowed keys{where}: {', '.join(keys)}"
        return f"{path} is not a known key{allowed}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        key = ctx.get("discriminator", "'kind'").strip("'")
        allowed = _allowed_tags(tp)
        if kind == "union_tag_not_found":
            return f"{path} needs a {key} key; allowed {key}s: {_join_or(allowed)}"
        return f"{path}.{key} {ctx.get('tag')!r} is not known; allowed {key}s: {_join_or(allowed)}"
    if kind == "literal_error":
        return f"{what} is not allowed; allowed values: {ctx.get('expected')}"
    if kind == "not_positive":
        return f"{what} {err['msg']}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        words = {
            "greater_than": "greater than",
            "greater_than_equal": "at least",
            "less_than": "less than",
            "less_than_equal": "at most",
        }
        bound = next(iter(ctx.values()))
        return f"{what} must be {words[kind]} {bound}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"{what} is not a whole number"
    if kind in ("float_type", "float_parsing"):
        return f"{what} is not a number"
    if kind in ("bool_type", "bool_parsing"):
        return f"{what} must be true or false"
    if kind == "string_type":
        return f"{what} must be a string"
    if kind == "list_type":
        return f"{what} must be a list"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{what} must be a table of keys"
    msg = err["msg"]
    return f"{what}: {msg[:1].lower()}{msg[1:]}"


# --------------------------------------------------------------------------------------------
# A small TOML writer for scenario copies (tables, arrays of tables, inline scalars).

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(k: str) -> str:
    return k if _BARE_KEY.match(k) else json.dumps(k)


def _toml_scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_scalar(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_scalar(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _is_flat(v: Any) -> bool:
    return not isinstance(v, dict | list) or (
        isinstance(v, list) and all(not isinstance(x, dict) for x in v)
    )


def _toml_table(prefix: str, table: dict[str, Any]) -> Iterator[str]:
    sub: list[tuple[str, Any]] = []
    for k, v in table.items():
        small_dict = isinstance(v, dict) and all(_is_flat(x) for x in v.values())
        if _is_flat(v) or small_dict:
            yield f"{_toml_key(k)} = {_toml_scalar(v)}"
        else:
            sub.append((k, v))
    for k, v in sub:
        name = f"{prefix}.{_toml_key(k)}" if prefix else _toml_key(k)
        if isinstance(v, dict):
            yield ""
            yield f"[{name}]"
            yield from _toml_table(name, v)
        else:
            for item in v:
                yield ""
                yield f"[[{name}]]"
                yield from _toml_table(name, item)


def _toml_dumps(data: dict[str, Any]) -> str:
    return "\n".join(_toml_table("", data)) + "\n"
