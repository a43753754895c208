"""Shared field types (unit strings parsed to integers, written back exactly), and the
strict base model with the one way fields go to the core's names (``core_fields``)."""

from __future__ import annotations

from collections.abc import Callable
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
    RATE_UNITS,
    SIZE_UNITS,
    TIME_UNITS,
    QueueLimit,
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
    PlainSerializer(format_rate, return_type=str, when_used="json"),
    _unit_schema(list(RATE_UNITS), "10Mbps", "A rate in bits per second"),
]
"""Bits per second, written ``"10Mbps"``; must be positive."""

Time = Annotated[
    int,
    BeforeValidator(parse_time),
    PlainSerializer(format_time, return_type=str, when_used="json"),
    _unit_schema(list(TIME_UNITS), "20ms", "A time"),
]
"""Nanoseconds, written ``"20ms"``; zero allowed."""

PositiveTime = Annotated[Time, _positive("time")]

Size = Annotated[
    int,
    BeforeValidator(parse_size),
    _positive("size"),
    PlainSerializer(format_size, return_type=str, when_used="json"),
    _unit_schema(list(SIZE_UNITS), "1500B", "A size in bytes"),
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
    _unit_schema(["p", *SIZE_UNITS], "100p", "A queue limit in packets ('p') or bytes"),
]
"""Queue limit, written ``"100p"`` (packets) or a size (bytes)."""


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

Count = Annotated[int, Field(gt=0)]
Probability = Annotated[float, Field(ge=0.0, lt=1.0)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
Gain = Annotated[float, Field(ge=0.0, le=100.0)]
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
            out[key] = value
        return out
