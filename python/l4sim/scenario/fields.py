"""Shared field types (unit strings parsed to integers, written back exactly), and the
strict base model with the one way fields go to the core's names (``core_fields``).

Every field has an upper bound its config.rs type can hold (see :mod:`l4sim.units` for
the unit types; integers through :func:`_at_most`), so that a number too large for the
core is a :class:`~l4sim.errors.ScenarioError` naming the key, never a core error. Float
fields refuse nan and inf.

Unit fields hold integers (ns, bps, bytes) or a :class:`~l4sim.units.QueueLimit`, and are
written back as unit strings by ``model_dump()`` in both modes (``"20ms"``, ``"100p"``),
so ``Scenario.model_validate(s.model_dump()) == s``; a bare number in a file stays an error
("has no unit")."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from l4sim.units import (
    CORE_U32,
    MAX_PACKET_BYTES,
    RATE_UNITS,
    SIZE_UNITS,
    TIME_UNITS,
    U32_MAX,
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

_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


def _unit_schema(units: list[str], example: str, what: str) -> WithJsonSchema:
    """The JSON Schema of a unit string (``l4sim schema``; editors validate TOML with it):
    a number and one of ``units``, as :mod:`l4sim.units` parses it."""
    alternatives = "|".join(units)
    return WithJsonSchema(
        {
            "type": "string",
            "pattern": rf"^\s*{_NUMBER}\s*({alternatives})\s*$",
            "description": f"{what}, written with a unit such as {example!r} "
            f"(units: {', '.join(units)})",
            "examples": [example],
        }
    )


def _positive(what: str) -> AfterValidator:
    def check(v: int) -> int:
        if v <= 0:
            raise PydanticCustomError("not_positive", "must be a positive {what}", {"what": what})
        return v

    return AfterValidator(check)


Rate = Annotated[
    int,
    BeforeValidator(parse_rate),
    _positive("rate"),
    PlainSerializer(format_rate, return_type=str),
    _unit_schema(list(RATE_UNITS), "10Mbps", "A rate in bits per second"),
]
"""Bits per second, written ``"10Mbps"``; must be positive, at most 2**64 - 1."""

Time = Annotated[
    int,
    BeforeValidator(parse_time),
    PlainSerializer(format_time, return_type=str),
    _unit_schema(list(TIME_UNITS), "20ms", "A time"),
]
"""Nanoseconds, written ``"20ms"``; zero allowed; at most 2**62 ns (about 146 years)."""

PositiveTime = Annotated[Time, _positive("time")]


_SIZE_SCHEMA = _unit_schema(list(SIZE_UNITS), "1500B", "A size in bytes")

Size = Annotated[
    int,
    BeforeValidator(parse_size),
    _positive("size"),
    PlainSerializer(format_size, return_type=str),
    _SIZE_SCHEMA,
]
"""Bytes, written ``"1500B"`` / ``"150KB"`` / ``"1.5MiB"``; must be positive, at most
2**64 - 1."""

Size32 = Annotated[
    int,
    BeforeValidator(partial(parse_size, maximum=U32_MAX, why=CORE_U32)),
    _positive("size"),
    PlainSerializer(format_size, return_type=str),
    _SIZE_SCHEMA,
]
"""A size the core holds in 32 bits (``mtu``, ``quantum``, ``avpkt``)."""

PacketSize = Annotated[
    int,
    BeforeValidator(partial(parse_size, maximum=MAX_PACKET_BYTES, why="IPv4's largest packet")),
    _positive("size"),
    PlainSerializer(format_size, return_type=str),
    _SIZE_SCHEMA,
]
"""A packet's size, an MSS or a header size: at most 65535 B (IPv4's largest packet)."""


def _positive_limit(v: QueueLimit) -> QueueLimit:
    if (v.packets if v.packets is not None else v.bytes) == 0:
        raise PydanticCustomError("not_positive", "must be a positive queue limit")
    return v


_LIMIT_SCHEMA = _unit_schema(["p", *SIZE_UNITS], "100p", "A queue limit in packets ('p') or bytes")

Limit = Annotated[
    QueueLimit,
    BeforeValidator(parse_queue_limit),
    AfterValidator(_positive_limit),
    PlainSerializer(str, return_type=str),
    _LIMIT_SCHEMA,
]
"""Queue limit, written ``"100p"`` (packets) or a size (bytes); at most 2**62 of either."""

Limit32 = Annotated[
    QueueLimit,
    BeforeValidator(partial(parse_queue_limit, max_packets=U32_MAX)),
    AfterValidator(_positive_limit),
    PlainSerializer(str, return_type=str),
    _LIMIT_SCHEMA,
]
"""A queue limit whose packet count the core holds in 32 bits."""


def _time_or_packets(value: object) -> int | QueueLimit:
    """``"1ms"`` → ns, ``"5p"`` → ``QueueLimit(packets=5)`` (no time unit ends in p); a
    size is a ``QueueLimit(bytes=...)`` for the model to refuse by name."""
    if isinstance(value, QueueLimit):
        return value
    if isinstance(value, str) and value.strip().endswith("p"):
        return _positive_limit(parse_queue_limit(value, max_packets=U32_MAX))
    try:
        return parse_time(value)
    except UnitError as e:
        if any(w in e.reason for w in ("too large", "negative", "whole number")):
            raise
    try:  # a size: the model says it wants a time or packets
        return parse_queue_limit(value)
    except UnitError:
        raise UnitError(
            value, "is not a time such as '1ms' or a number of packets such as '5p'"
        ) from None


def _format_time_or_packets(value: int | QueueLimit) -> str:
    return str(value) if isinstance(value, QueueLimit) else format_time(value)


TimeOrPackets = Annotated[
    int | QueueLimit,
    BeforeValidator(_time_or_packets),
    PlainSerializer(_format_time_or_packets, return_type=str),
    WithJsonSchema(
        {
            "anyOf": [
                _unit_schema(list(TIME_UNITS), "20ms", "A time").json_schema,
                _LIMIT_SCHEMA.json_schema,
            ]
        }
    ),
]
"""A time (ns) or a number of packets (at most 2**32 - 1, as ``"5p"``)."""


def _in_packets(v: QueueLimit) -> QueueLimit:
    if v.packets is None:
        raise PydanticCustomError(
            "not_packets", "must be a number of packets such as '100p', not a size"
        )
    return v


PacketLimit = Annotated[
    Limit, AfterValidator(_in_packets), _unit_schema(["p"], "1000p", "A queue limit in packets")
]
"""A queue limit in packets only (``"1000p"``)."""

PacketLimit32 = Annotated[
    Limit32,
    AfterValidator(_in_packets),
    _unit_schema(["p"], "1000p", "A queue limit in packets"),
]
"""A queue limit in packets the core holds in 32 bits (``per_flow_limit``)."""


def _at_most(low: int, high: int, why: str) -> AfterValidator:
    """An integer's upper bound, checked after its lower bound: "is too large; allowed:
    1 to 4294967295, ..." (the JSON schema is left as it was)."""

    def check(v: int) -> int:
        if v > high:
            raise PydanticCustomError(
                "too_large",
                "is too large; allowed: {low} to {high}, {why}",
                {"low": low, "high": high, "why": why},
            )
        return v

    return AfterValidator(check)


Count = Annotated[int, Field(gt=0), _at_most(1, U32_MAX, CORE_U32)]
"""A positive count the core holds in 32 bits (``init_cwnd``, ``drop_batch``, ...)."""

U32 = Annotated[int, Field(ge=0), _at_most(0, U32_MAX, CORE_U32)]
"""Zero or more, held by the core in 32 bits."""

MAX_BUCKETS = 65_536
"""Most hash buckets of a flow-queue qdisc: Linux's fq_codel and fq_pie refuse more."""

Buckets = Annotated[
    int, Field(gt=0), _at_most(1, MAX_BUCKETS, "Linux's limit on a flow-queue qdisc's buckets")
]
"""Hash buckets of a flow-queue qdisc (``flows``, ``pairs``): 1 to 65536, as Linux."""

MAX_FLOWS = 100_000
"""Most flows (after ``count``), sender/receiver pairs or routers of a scenario: a sane
bound (validating 100000 flows and their routes takes about 10 s; more would only hang)."""

Many = Annotated[int, Field(gt=0), _at_most(1, MAX_FLOWS, "a sane bound for one simulation")]
"""A flow's ``count``, a dumbbell's ``pairs``, a path's ``routers``: 1 to 100000."""

Probability = Annotated[float, Field(ge=0.0, lt=1.0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Gain = Annotated[float, Field(ge=0.0, le=100.0, allow_inf_nan=False)]
"""Floats refuse nan and inf ("is not a number")."""
Flag = Annotated[bool, Field(strict=True)]

CoreKey = str | Callable[[Any], dict[str, Any]]
"""Where a field goes in config.rs: a key name, or a function of the value giving the core
keys and values (one field that becomes another key depending on its unit, say). Such a
function declares the keys it may write with :func:`writes`."""


def writes(*keys: str) -> Callable[[Callable[[Any], dict[str, Any]]], Any]:
    """Declare the config.rs keys a ``_core_keys`` function may write, so that
    :meth:`_Model.core_names` (and the contract test) can list them without calling it."""

    def mark(fn: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
        fn.core_keys = keys  # type: ignore[attr-defined]
        return fn

    return mark


class _Model(BaseModel):
    """Strict (unknown keys are errors). ``core_fields`` writes every set field under its
    own name unless ``_core_keys`` maps it; fields in ``_core_skip`` are not written."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    _core_keys: ClassVar[dict[str, CoreKey]] = {}
    _core_skip: ClassVar[frozenset[str]] = frozenset({"kind"})
    #: Keys the model writes itself (in ``to_core``), derived from several fields.
    _core_derived: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def core_names(cls) -> set[str]:
        """Every config.rs key this model can write (what ``tests/test_contract.py``
        compares with the core's own list)."""
        out: set[str] = set(cls._core_derived)
        for name in cls.model_fields:
            if name in cls._core_skip:
                continue
            key = cls._core_keys.get(name, name)
            out.update(key.core_keys if callable(key) else (key,))  # type: ignore[union-attr]
        return out

    def core_fields(self) -> dict[str, Any]:
        """The set fields under their config.rs names; a queue limit is its number."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name in self._core_skip or value is None:
                continue
            key = self._core_keys.get(name, name)
            if callable(key):
                out.update(key(value))
                continue
            if isinstance(value, QueueLimit):
                value = value.packets if value.packets is not None else value.bytes
            if isinstance(value, BaseModel):
                value = value.model_dump()
            out[key] = value
        return out
