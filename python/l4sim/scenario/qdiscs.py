"""Queue disciplines: one model per ``kind``; ``to_core`` gives config.rs's ``QdiscConfig``.

Adding a queue discipline is adding one model class with a ``kind`` literal and listing it
in :data:`QDISC_MODELS`; a former name of a kind goes in :data:`QDISC_ALIASES`.
"""

from __future__ import annotations

import functools
import operator
import warnings
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from l4sim.scenario.fields import (
    U32,
    Buckets,
    CoreKey,
    Count,
    Flag,
    Fraction,
    Gain,
    Limit,
    PacketLimit,
    PacketLimit32,
    PositiveTime,
    Rate,
    Size32,
    Time,
    TimeOrPackets,
    _at_most,
    _Model,
    writes,
)
from l4sim.units import QueueLimit


class _QdiscBase(_Model):
    """A queue discipline: its ``kind`` and its fields under their config.rs names."""

    kind: str

    def to_core(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.core_fields()}


@writes("limit_pkts", "limit_bytes")
def _fifo_limit(limit: QueueLimit) -> dict[str, Any]:
    if limit.packets is not None:
        return {"limit_pkts": limit.packets}
    return {"limit_bytes": limit.bytes}


class Fifo(_QdiscBase):
    """Drop-tail FIFO (``kind = "fifo"``), limited in packets (``"100p"``) or bytes."""

    kind: Literal["fifo"] = "fifo"
    limit: Limit = "1000p"  # type: ignore[assignment]

    _core_keys: ClassVar[dict[str, CoreKey]] = {"limit": _fifo_limit}


class _AqmBase(_QdiscBase):
    """An AQM model: every parameter is optional and an unset one takes the core's default
    (the ``Default`` impls in ``crates/l4sim-core/src/qdisc/``; listed in docs/qdiscs.md)."""

    _core_keys: ClassVar[dict[str, CoreKey]] = {"limit": "limit_pkts"}


class Red(_AqmBase):
    """RED (``kind = "red"``): ``variant = "ns3"`` (default, ns-3's ``RedQueueDisc``) with
    thresholds and limit all in packets (``"5p"``) or all in bytes (byte mode, then all three
    are required), or ``variant = "linux"`` (``tc red``: sizes in bytes, ``limit`` required,
    ``min_th`` / ``max_th`` / ``burst`` derived as tc does, no gentle mode); ``max_p``,
    ``w_q`` (ns-3), ``burst`` (Linux, packets), ``gentle``, ``ecn``, ``harddrop``, ``avpkt``,
    the link ``bandwidth`` for the idle-time decay, and ``adaptive`` (Adaptive RED: ``max_p``
    adapted every 500 ms, ``tc red adaptive``)."""

    kind: Literal["red"] = "red"
    variant: Literal["ns3", "linux"] | None = None
    burst: Count | None = None
    limit: Limit | None = None
    min_th: Limit | None = None
    max_th: Limit | None = None
    max_p: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)] | None = None
    w_q: Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)] | None = None
    gentle: Flag | None = None
    ecn: Flag | None = None
    harddrop: Flag | None = None
    avpkt: Size32 | None = None
    bandwidth: Rate | None = None
    adaptive: Flag | None = None

    _core_keys: ClassVar[dict[str, CoreKey]] = {"bandwidth": "bandwidth_bps"}
    _core_derived: ClassVar[frozenset[str]] = frozenset({"bytes"})

    def byte_mode(self) -> bool:
        return self.variant == "linux" or any(
            v is not None and v.bytes is not None for v in self._sizes().values()
        )

    def _sizes(self) -> dict[str, QueueLimit | None]:
        return {"limit": self.limit, "min_th": self.min_th, "max_th": self.max_th}

    @model_validator(mode="after")
    def _units(self) -> Red:
        sizes = self._sizes()
        if self.variant == "linux":
            if self.limit is None or self.limit.bytes is None:
                raise ValueError("the linux RED variant needs limit as a size in bytes, as tc red")
            for name, v in sizes.items():
                if v is not None and v.bytes is None:
                    raise ValueError(f"the linux RED variant takes sizes in bytes; {name} is {v}")
        elif self.byte_mode():
            for name, v in sizes.items():
                if v is None or v.bytes is None:
                    raise ValueError(
                        "limit, min_th and max_th must all be sizes in byte mode "
                        f"(one of them is a size); {name} is "
                        + ("missing" if v is None else f"{v} packets")
                    )
        if self.variant != "linux" and self.burst is not None:
            raise ValueError(
                "RED burst is a parameter of the linux variant (tc red); ns-3's RED (the "
                'default variant) takes w_q, or set variant = "linux"'
            )
        if self.min_th is not None and self.max_th is not None:
            lo = self.min_th.packets or self.min_th.bytes or 0
            hi = self.max_th.packets or self.max_th.bytes or 0
            if lo >= hi:
                raise ValueError(
                    f"min_th {str(self.min_th)!r} must be below max_th {str(self.max_th)!r}"
                )
        if self.variant == "linux" and self.limit is not None and self.limit.bytes:
            # tc red's derivation (iproute2 red_parse_opt, as qdisc/red.rs): max_th = 3 min_th
            # or limit / 4, min_th = max_th / 3.
            mn = self.min_th.bytes if self.min_th is not None else None
            mx = self.max_th.bytes if self.max_th is not None else None
            mx = mx if mx is not None else 3 * mn if mn else self.limit.bytes // 4
            mn = mn if mn is not None else mx // 3
            if not 0 < mn < mx:
                raise ValueError(
                    f"tc red's thresholds from limit {str(self.limit)!r} come out as min_th "
                    f"{mn} B and max_th {mx} B, and need 0 < min_th < max_th; give a larger "
                    "limit, or min_th and max_th"
                )
            # tc_red_eval_ewma: a burst must fill min_th (burst = (2 min + max) / 3 avpkt).
            avpkt = self.avpkt or 1000
            burst = self.burst if self.burst is not None else (2 * mn + mx) // (3 * avpkt)
            if burst * avpkt < mn:
                raise ValueError(
                    f"RED burst {burst} is too small for min_th {mn} B (tc red: try burst "
                    f"{1 + mn // avpkt}); give a larger burst, or a larger limit"
                )
        return self

    def to_core(self) -> dict[str, Any]:
        out = super().to_core()
        if self.byte_mode():
            out["bytes"] = True
        return out


def _selector(v: Any) -> str:
    """``"0x01/0x01"``: Linux ``tc``'s ``ce_threshold_selector VALUE/MASK``, two bytes."""
    try:
        value, mask = (int(x, 0) for x in str(v).split("/"))
    except ValueError:
        value = mask = -1
    if not (0 <= value <= 255 and 0 <= mask <= 255):
        raise PydanticCustomError(
            "selector", "must be VALUE/MASK, two bytes such as '0x01/0x01' (ECT(1))"
        )
    if value & ~mask:
        raise PydanticCustomError("selector", "has bits outside its mask, so no packet would match")
    return f"{value:#04x}/{mask:#04x}"


CeSelector = Annotated[str, BeforeValidator(_selector)]


@writes("ce_threshold_selector", "ce_threshold_mask")
def _ce_selector(v: str) -> dict[str, Any]:
    value, mask = (int(x, 0) for x in v.split("/"))
    return {"ce_threshold_selector": value, "ce_threshold_mask": mask}


class Codel(_AqmBase):
    """CoDel, RFC 8289 (``kind = "codel"``): ``target``, ``interval``, ``limit`` (packets),
    ``mtu`` (no drop at or below one MTU of backlog), ``ecn``, and Linux's
    ``ce_threshold`` (CE-mark every ECT packet whose sojourn exceeds it)."""

    kind: Literal["codel"] = "codel"
    limit: PacketLimit | None = None
    target: PositiveTime | None = None
    interval: PositiveTime | None = None
    mtu: Size32 | None = None
    ecn: Flag | None = None
    ce_threshold: PositiveTime | None = None

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "limit": "limit_pkts",
        "target": "target_ns",
        "interval": "interval_ns",
        "ce_threshold": "ce_threshold_ns",
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
    mtu: Size32 | None = None

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "limit": "limit_pkts",
        "target": "target_ns",
        "tupdate": "tupdate_ns",
        "max_burst": "max_burst_ns",
    }


class FqCodel(Codel):
    """FQ-CoDel, RFC 8290 (``kind = "fq_codel"``): CoDel per flow queue plus ``flows``
    (hash buckets), ``quantum`` (DRR bytes), ``drop_batch``; ``limit`` is the total;
    ``ce_threshold_selector = "0x01/0x01"`` limits ``ce_threshold``'s marks to ECT(1)
    packets (Linux 5.15+; the L4S mode ns-3's FqCoDel has)."""

    kind: Literal["fq_codel"] = "fq_codel"  # type: ignore[assignment]
    flows: Buckets | None = None
    quantum: Size32 | None = None
    drop_batch: Count | None = None
    ce_threshold_selector: CeSelector | None = None

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        **Codel._core_keys,
        "ce_threshold_selector": _ce_selector,
    }


class FqPie(Pie):
    """FQ-PIE (``kind = "fq_pie"``): PIE per flow queue plus ``flows`` and ``quantum``;
    ``limit`` is the total."""

    kind: Literal["fq_pie"] = "fq_pie"  # type: ignore[assignment]
    flows: Buckets | None = None
    quantum: Size32 | None = None


def _load_policy(kind: str, path: str) -> str:
    """Check that the core loads policy ``kind`` from ``path`` (it reads the file again when
    the simulation is built, and refuses a file that is not regular or is larger than
    ``files.MAX_WEIGHTS_BYTES``); return the file's absolute path, a relative one taken
    beside the scenario file as traces are (``l4sim.files.resolve``)."""
    from l4sim import files
    from l4sim.native import core

    resolved = files.resolve(path) if path.strip() else path
    try:
        core().policy_infer(kind, resolved, [])
    except ValueError as e:
        raise PydanticCustomError("weights", "{why}", {"why": str(e)}) from None
    return resolved


class PolicyRef(_Model):
    """A learned policy (``crates/l4sim-core/src/policy/``) on a qdisc offering the decision
    it makes: ``kind`` (``"lfq"``, ``"a3c"``, ``"constant"``, ...), its ``weights`` file
    (safetensors; none: the policy only keeps its features for agents, e.g.
    ``{ kind = "lfq" }``) and ``every`` (decide at a queue's 1st, n+1-th, ... decision
    point; default 10 for per-flow limits, 1, the only value, for an AQM's updates)."""

    kind: str
    weights: str | None = None
    every: Count | None = None

    @model_validator(mode="after")
    def _loads(self) -> PolicyRef:
        if self.weights is not None:
            self.weights = _load_policy(self.kind, self.weights)
        return self


def _deprecated(key: str, new: str) -> None:
    warnings.warn(
        f"qdisc key {key} is deprecated and will be removed: use {new}",
        DeprecationWarning,
        stacklevel=2,
    )


def _policy_dict(v: Any) -> dict[str, Any] | None:
    return v.model_dump(exclude_none=True) if isinstance(v, BaseModel) else v


def _weights_key(data: Any, key: str, kind: str) -> Any:
    """The former ``<kind>_policy = path`` as ``policy = { kind, weights = path }``."""
    if not isinstance(data, dict) or key not in data:
        return data
    _deprecated(key, f'policy = {{ kind = "{kind}", weights = ... }}')
    data = dict(data)
    path = data.pop(key)
    if path is not None:
        if data.get("policy") is not None:
            raise ValueError(f"give either policy or {key}, not both")
        data["policy"] = {"kind": kind, "weights": path}
    return data


def _lfq_keys(data: Any) -> Any:
    """``fq``'s former keys: ``lfq_policy`` (weights), ``lfq_interval`` (``every``) and
    ``lfq_features = true`` (``policy = { kind = "lfq" }``, no weights: observe only)."""
    data = _weights_key(data, "lfq_policy", "lfq")
    if not isinstance(data, dict) or not {"lfq_interval", "lfq_features"} & data.keys():
        return data
    data = dict(data)
    policy = _policy_dict(data.get("policy"))
    if data.pop("lfq_features", None):
        _deprecated("lfq_features", 'policy = { kind = "lfq" } (no weights: observe only)')
        if policy is None:
            policy = {"kind": "lfq"}
        elif isinstance(policy, dict) and policy.get("kind") != "lfq":
            raise ValueError("lfq_features keeps LFQ's features, not a second policy")
    if "lfq_interval" in data:
        _deprecated("lfq_interval", "policy = { ..., every = n }")
        every = data.pop("lfq_interval")
        if isinstance(policy, dict) and every is not None:
            policy = {**policy, "every": policy.get("every", every)}
    if policy is not None:
        data["policy"] = policy
    return data


class Fq(_AqmBase):
    """Flow queues with a fixed drop-tail buffer per flow (``kind = "fq"``, LFQ's "fq 100"
    baseline): ``per_flow_limit`` (packets), ``limit`` (total), ``flows``, ``quantum``,
    ``drop_batch``; ``policy`` (a learned policy setting each flow's limit on its arriving
    packets, every ``every``-th of a flow's, default 10; without weights, LFQ's per-flow
    features kept for agents). The former ``lfq_policy``, ``lfq_interval`` and
    ``lfq_features`` are read as ``policy`` with a ``DeprecationWarning``."""

    kind: Literal["fq"] = "fq"
    limit: PacketLimit | None = None
    per_flow_limit: PacketLimit32 | None = None
    flows: Buckets | None = None
    quantum: Size32 | None = None
    drop_batch: Count | None = None
    policy: PolicyRef | None = None

    @model_validator(mode="before")
    @classmethod
    def _former_keys(cls, data: Any) -> Any:
        return _lfq_keys(data)


PI_TARGET_MAX_NS = 10 * 10**9
"""Largest DualPI2 PI target (10 s): the core's ``MAX_TARGET_NS``, the bound the scenario,
the contract (``target_ns``'s maximum) and ``set_qdisc`` share; 0 is refused everywhere."""

PiTarget = Annotated[PositiveTime, _at_most(1, PI_TARGET_MAX_NS, "10 s, the PI target's bound")]
"""DualPI2's PI target delay: 1 ns to 10 s."""

EcnMask = Literal["l4s_ect", "any_ect"]
"""Which ECN codepoints go to the L queue: ECT(1) and CE, or any ECT."""


@writes("step_thresh_pkts", "step_thresh_ns")
def _step_thresh(st: int | QueueLimit) -> dict[str, Any]:
    """A time goes to ``step_thresh_ns``, packets to ``step_thresh_pkts``."""
    if isinstance(st, QueueLimit):
        return {"step_thresh_pkts": st.packets}
    return {"step_thresh_ns": st}


class DualPi2(_AqmBase):
    """DualPI2, RFC 9332 with Linux ``sch_dualpi2`` semantics (``kind = "dualpi2"``):
    ``variant`` (``"linux"`` or ``"rfc9332"`` for the Appendix A pseudocode), ``limit``
    (packets, both queues), PI2 ``target``, ``tupdate``, ``alpha`` and ``beta`` (Hz, per
    update), ``coupling`` (k), L-queue ``step_thresh`` (a time, or packets ``"5p"``),
    ``min_qlen_step``, ``c_protection`` (Classic WRR share, percent), ``ecn_mask``,
    ``drop_overload``, ``drop_early``, ``mtu``; for the RFC variant the ramp ``l_min_thresh``,
    ``l_range``, ``l_th_len`` and the scheduler's ``tshift``; ``policy`` (a learned policy
    setting p', or the PI's target, every ``tupdate``; the former ``a3c_policy = path`` is
    read as ``policy = { kind = "a3c", weights = path }`` with a ``DeprecationWarning``)."""

    kind: Literal["dualpi2"] = "dualpi2"
    variant: Literal["linux", "rfc9332"] | None = None
    limit: PacketLimit | None = None
    target: PiTarget | None = None
    tupdate: PositiveTime | None = None
    alpha: Gain | None = None
    beta: Gain | None = None
    coupling: Annotated[float, Field(gt=0.0, le=100.0, allow_inf_nan=False)] | None = None
    step_thresh: TimeOrPackets | None = None
    min_qlen_step: U32 | None = None
    c_protection: Annotated[int, Field(ge=0, le=100)] | None = None
    ecn_mask: EcnMask | None = None
    drop_overload: Flag | None = None
    drop_early: Flag | None = None
    mtu: Size32 | None = None
    l_min_thresh: Time | None = None
    l_range: PositiveTime | None = None
    l_th_len: U32 | None = None
    tshift: Time | None = None
    policy: PolicyRef | None = None

    @model_validator(mode="before")
    @classmethod
    def _former_keys(cls, data: Any) -> Any:
        return _weights_key(data, "a3c_policy", "a3c")

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "limit": "limit_pkts",
        "target": "target_ns",
        "tupdate": "tupdate_ns",
        "l_min_thresh": "l_min_thresh_ns",
        "l_range": "l_range_ns",
        "tshift": "tshift_ns",
        "step_thresh": _step_thresh,
    }

    @model_validator(mode="after")
    def _step_unit(self) -> DualPi2:
        st = self.step_thresh
        if isinstance(st, QueueLimit) and st.packets is None:
            raise ValueError("step_thresh must be a time such as '1ms' or packets such as '5p'")
        return self


class FqL4s(Pie):
    """FQ-L4S, the FreeBSD ``dn_sched_l4s`` scheduler of the A3C-L4S paper
    (``kind = "fq_l4s"``): ``pairs`` hash buckets of a Classic and an L queue, PIE on each
    (``target``, ``tupdate``, ``alpha``, ``beta``, ``max_burst``, ``max_ecnth``, ``ecn``,
    ``bytemode``, ``mtu``); a Classic queue applies p squared, an L queue the larger of its
    own p and ``coupling`` times its paired Classic p; DRR with ``quantum``; ``limit`` is
    the total; ``ecn_mask`` picks the L codepoints; ``policy`` (a learned policy setting every
    queue's own p at each of its ``tupdate`` updates; ``a3c_policy`` as in ``dualpi2``)."""

    kind: Literal["fq_l4s"] = "fq_l4s"  # type: ignore[assignment]
    pairs: Buckets | None = None
    quantum: Size32 | None = None
    coupling: Annotated[float, Field(gt=0.0, le=100.0, allow_inf_nan=False)] | None = None
    ecn_mask: EcnMask | None = None
    policy: PolicyRef | None = None

    @model_validator(mode="before")
    @classmethod
    def _former_keys(cls, data: Any) -> Any:
        return _weights_key(data, "a3c_policy", "a3c")


class DocsisDualq(_AqmBase):
    """The DOCSIS 3.1 low-latency dual queue with Queue Protection (``kind =
    "docsis_dualq"``; MULPI's coupled AQM, RFC 9957): ``rate`` (MAX_RATE for the delay
    estimates, default the link's), the L queue's immediate AQM ramp (``maxth``,
    ``lg_range``, ``max_frame_size``, ``iaqm``), ``coupling`` (k), the scheduler's
    ``sched_weight`` (L share out of 256) and ``quantum``, the Classic DOCSIS-PIE
    (``target``, ``tupdate``, ``alpha``, ``beta``, ``max_burst``, ``mean_pkt_size``,
    ``classic_buffer``, ``l_buffer`` as times at the rate), ``ecn_mask``; Queue Protection
    ``qprot`` (on by default), ``critical_ql`` (default MAXTH), ``critical_qlscore``,
    ``lg_aging``, ``bi_size``, ``attempts``, ``max_qlscore`` and ``sanction``
    (``"redirect"`` to the Classic queue, or ``"drop"``); ``limit`` (packets, both);
    ``l_delay``, the L queue's delay estimate (``"auto"``: MULPI Annex N.3's, the virtual
    queue ``qdelayCoupledV`` on a DOCSIS upstream and the queue's length elsewhere;
    ``"queue"``; ``"virtual"``), with the virtual queue's ``vq_interval`` (default half the
    MAP interval) and ``lg_vq_ewma`` (default 7)."""

    kind: Literal["docsis_dualq"] = "docsis_dualq"
    limit: PacketLimit | None = None
    rate: Rate | None = None
    maxth: PositiveTime | None = None
    lg_range: Annotated[int, Field(ge=0, le=25)] | None = None
    max_frame_size: Size32 | None = None
    coupling: Annotated[float, Field(gt=0.0, le=100.0, allow_inf_nan=False)] | None = None
    iaqm: Flag | None = None
    sched_weight: Annotated[int, Field(ge=1, le=255)] | None = None
    quantum: Size32 | None = None
    target: PositiveTime | None = None
    tupdate: PositiveTime | None = None
    alpha: Gain | None = None
    beta: Gain | None = None
    max_burst: Time | None = None
    mean_pkt_size: Size32 | None = None
    classic_buffer: PositiveTime | None = None
    l_buffer: PositiveTime | None = None
    ecn_mask: EcnMask | None = None
    qprot: Flag | None = None
    critical_ql: PositiveTime | None = None
    critical_qlscore: PositiveTime | None = None
    lg_aging: Annotated[int, Field(ge=1, le=30)] | None = None
    bi_size: Annotated[int, Field(ge=0, le=14)] | None = None
    attempts: Annotated[int, Field(ge=1, le=32)] | None = None
    max_qlscore: PositiveTime | None = None
    sanction: Literal["redirect", "drop"] | None = None
    l_delay: Literal["auto", "queue", "virtual"] | None = None
    vq_interval: PositiveTime | None = None
    lg_vq_ewma: Annotated[int, Field(ge=0, le=20)] | None = None

    _core_keys: ClassVar[dict[str, CoreKey]] = {
        "limit": "limit_pkts",
        "rate": "rate_bps",
        "maxth": "maxth_ns",
        "target": "target_ns",
        "tupdate": "tupdate_ns",
        "max_burst": "max_burst_ns",
        "classic_buffer": "classic_buffer_ns",
        "l_buffer": "l_buffer_ns",
        "critical_ql": "critical_ql_ns",
        "critical_qlscore": "critical_qlscore_ns",
        "max_qlscore": "max_qlscore_ns",
        "vq_interval": "vq_interval_ns",
    }

    @model_validator(mode="after")
    def _hash_bits(self) -> DocsisDualq:
        bits = (5 if self.bi_size is None else self.bi_size) * (self.attempts or 2)
        if bits > 32:
            raise ValueError(f"bi_size x attempts is {bits}: at most 32 bits of the flow hash")
        return self


QDISC_ALIASES: dict[str, str] = {"agent": "external"}
"""Former kind names still accepted in scenarios: alias -> kind (the core accepts them too)."""


def _qdisc_shorthand(v: Any) -> Any:
    """``qdisc = "fifo"`` means ``qdisc = { kind = "fifo" }`` with default parameters; a
    kind in :data:`QDISC_ALIASES` is read as the kind it names."""
    if isinstance(v, str):
        v = {"kind": v}
    if isinstance(v, dict) and isinstance(v.get("kind"), str) and v["kind"] in QDISC_ALIASES:
        v = {**v, "kind": QDISC_ALIASES[v["kind"]]}
    return v


class ExternalQdisc(_AqmBase):
    """A FIFO whose drop (with ``ecn``: mark) probability is set from outside through the
    control API's ``set_drop_prob`` (``kind = "external"``, formerly ``"agent"``, still
    accepted; the AQM an RL agent drives, see ``l4sim.envs``): ``limit`` (packets),
    ``ecn``."""

    kind: Literal["external"] = "external"
    limit: PacketLimit | None = None
    ecn: Flag | None = None


class PfifoHeadDrop(_QdiscBase):
    """Linux ``pfifo_head_drop`` (``kind = "pfifo_head_drop"``): a FIFO of ``limit``
    packets that, when full, drops its oldest packet to take the arrival."""

    kind: Literal["pfifo_head_drop"] = "pfifo_head_drop"
    limit: PacketLimit | None = None

    _core_keys: ClassVar[dict[str, CoreKey]] = {"limit": "limit_pkts"}


QDISC_MODELS: tuple[type[_QdiscBase], ...] = (
    Fifo,
    Red,
    Codel,
    Pie,
    FqCodel,
    FqPie,
    Fq,
    DualPi2,
    FqL4s,
    ExternalQdisc,
    PfifoHeadDrop,
    DocsisDualq,
)
"""One model per queue discipline; add new ones here: the kinds and the union follow."""

QDISC_KINDS: tuple[str, ...] = tuple(m.model_fields["kind"].default for m in QDISC_MODELS)

Qdisc = Annotated[
    functools.reduce(operator.or_, QDISC_MODELS),
    Field(discriminator="kind"),
    BeforeValidator(_qdisc_shorthand),
]
"""Any queue discipline (the union of :data:`QDISC_MODELS`)."""
