"""Unit strings, parsed once.

Every quantity in a scenario is written as a number followed by a unit, e.g. ``"10Mbps"``,
``"20ms"``, ``"1500B"``, ``"100p"``. This module turns them into the integers the core uses
(bits per second, nanoseconds, bytes) and back into short strings for display.

Accepted units (case-sensitive, optional space between number and unit):

========  ==============================================================
rates     ``bps``, ``kbps`` (= ``Kbps``), ``Mbps``, ``Gbps``, ``Tbps`` (SI: 1 kbps = 1000 bps)
times     ``ns``, ``us`` (= ``µs``), ``ms``, ``s``
sizes     ``B``, ``KB`` (= ``kB``), ``MB``, ``GB`` (SI, 1000); ``KiB``, ``MiB``, ``GiB`` (1024)
limits    ``<n>p`` (packets) or any size
========  ==============================================================

Numbers may be fractional (``"1.5s"``, ``"1.5MiB"``) as long as the result is a whole number of
the base unit. Bare numbers, negative values and unknown units are rejected with a
:class:`UnitError` whose message is one sentence naming what is allowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

__all__ = [
    "RATE_UNITS",
    "SIZE_UNITS",
    "TIME_UNITS",
    "QueueLimit",
    "UnitError",
    "format_rate",
    "format_size",
    "format_time",
    "parse_queue_limit",
    "parse_rate",
    "parse_size",
    "parse_time",
]


class UnitError(ValueError):
    """A unit string could not be parsed; the message is one sentence for the user.

    ``value`` is the offending input and ``reason`` the rest of the sentence, so callers that
    know the key (the scenario layer) can say ``"flows[0].rate '10' has no unit; ..."``.
    """

    def __init__(self, value: object, reason: str) -> None:
        super().__init__(f"{value!r} {reason}")
        self.value = value
        self.reason = reason


RATE_UNITS: dict[str, int] = {
    "bps": 1,
    "kbps": 10**3,
    "Kbps": 10**3,
    "Mbps": 10**6,
    "Gbps": 10**9,
    "Tbps": 10**12,
}
TIME_UNITS: dict[str, int] = {"ns": 1, "us": 10**3, "µs": 10**3, "ms": 10**6, "s": 10**9}
SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "KB": 10**3,
    "kB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
}

_QUANTITY = re.compile(r"^\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-zµ]*)\s*$")

_RATE_HELP = "a rate such as '10Mbps' (units: bps, kbps, Mbps, Gbps, Tbps)"
_TIME_HELP = "a time such as '20ms' (units: ns, us, ms, s)"
_SIZE_HELP = "a size such as '1500B' (units: B, KB, MB, GB, KiB, MiB, GiB)"
_LIMIT_HELP = "a queue limit such as '100p' (packets) or a size such as '150KB'"


def _parse(value: object, units: dict[str, int], what: str, help_: str) -> int:
    if not isinstance(value, str):
        if isinstance(value, int | float) and not isinstance(value, bool):
            raise UnitError(value, f"has no unit; write {help_}")
        raise UnitError(value, f"is not {help_}")
    m = _QUANTITY.match(value)
    if m is None:
        raise UnitError(value, f"is not {help_}")
    number, unit = m.groups()
    if unit == "":
        raise UnitError(value, f"has no unit; write {help_}")
    if unit not in units:
        raise UnitError(value, f"has an unknown unit {unit!r}; write {help_}")
    try:
        amount = Decimal(number) * units[unit]
    except InvalidOperation:  # pragma: no cover - the regex only admits valid decimals
        raise UnitError(value, f"is not {help_}") from None
    if amount < 0:
        raise UnitError(value, "is negative; only zero or more is allowed")
    if amount != amount.to_integral_value():
        raise UnitError(value, f"is not a whole number of {what}; write {help_}")
    return int(amount)


def parse_rate(value: object) -> int:
    """``"10Mbps"`` → ``10_000_000`` (bits per second)."""
    return _parse(value, RATE_UNITS, "bits per second", _RATE_HELP)


def parse_time(value: object) -> int:
    """``"20ms"`` → ``20_000_000`` (nanoseconds)."""
    return _parse(value, TIME_UNITS, "nanoseconds", _TIME_HELP)


def parse_size(value: object) -> int:
    """``"1.5KiB"`` → ``1536`` (bytes)."""
    return _parse(value, SIZE_UNITS, "bytes", _SIZE_HELP)


@dataclass(frozen=True)
class QueueLimit:
    """A queue limit: exactly one of ``packets`` or ``bytes`` is set."""

    packets: int | None = None
    bytes: int | None = None

    def __str__(self) -> str:
        if self.packets is not None:
            return f"{self.packets}p"
        return format_size(self.bytes or 0)


def parse_queue_limit(value: object) -> QueueLimit:
    """``"100p"`` → ``QueueLimit(packets=100)``; ``"150KB"`` → ``QueueLimit(bytes=150_000)``."""
    if isinstance(value, QueueLimit):
        return value
    if isinstance(value, str):
        m = _QUANTITY.match(value)
        if m is not None and m.group(2) == "p":
            return QueueLimit(packets=_parse(value, {"p": 1}, "packets", _LIMIT_HELP))
    return QueueLimit(bytes=_parse(value, SIZE_UNITS, "bytes", _LIMIT_HELP))


def _format(amount: int, units: list[tuple[str, int]], zero: str) -> str:
    """The largest unit that divides ``amount`` exactly, so the string parses back exactly."""
    if amount == 0:
        return f"0{zero}"
    for name, factor in units:
        if amount % factor == 0:
            return f"{amount // factor}{name}"
    return f"{amount}{units[-1][0]}"


def format_rate(bps: int) -> str:
    """``10_000_000`` → ``"10Mbps"`` (exact: parses back to the same integer)."""
    return _format(
        bps,
        [("Tbps", 10**12), ("Gbps", 10**9), ("Mbps", 10**6), ("kbps", 10**3), ("bps", 1)],
        "bps",
    )


def format_time(ns: int) -> str:
    """``20_000_000`` → ``"20ms"`` (exact: parses back to the same integer)."""
    return _format(ns, [("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 1)], "s")


def format_size(nbytes: int) -> str:
    """``150_000`` → ``"150KB"``, ``1536`` → ``"1536B"`` (exact: parses back)."""
    return _format(
        nbytes,
        [
            ("GiB", 2**30),
            ("GB", 10**9),
            ("MiB", 2**20),
            ("MB", 10**6),
            ("KiB", 2**10),
            ("KB", 10**3),
            ("B", 1),
        ],
        "B",
    )
