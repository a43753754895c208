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

Every quantity has an upper bound the core can hold: rates and sizes at most ``2**64 - 1``
(the core's ``u64``), times at most :data:`MAX_TIME_NS` (``2**62`` ns, about 146 years, so
that a time plus the delays the core adds to it cannot overflow its 64-bit nanosecond
clock), queue limits at most :data:`MAX_LIMIT` (``2**62`` packets or bytes, so that RED's
sums of thresholds cannot overflow). A field whose core type is narrower passes its own
``maximum`` (a packet size: 65535 B, IPv4's largest packet).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction

__all__ = [
    "CORE_U32",
    "MAX_LIMIT",
    "MAX_PACKET_BYTES",
    "MAX_TIME_NS",
    "RATE_UNITS",
    "SIZE_UNITS",
    "TIME_UNITS",
    "U32_MAX",
    "U64_MAX",
    "QueueLimit",
    "UnitError",
    "bound_text",
    "format_rate",
    "format_size",
    "format_time",
    "parse_queue_limit",
    "parse_rate",
    "parse_size",
    "parse_time",
    "si_quantity",
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


U64_MAX = 2**64 - 1
"""The largest value of the core's ``u64`` (rates in bps, sizes in bytes)."""
U32_MAX = 2**32 - 1
"""The largest value of the core's ``u32`` (segment counts, ``mtu``, ``quantum``, ...)."""
MAX_TIME_NS = 2**62
"""The largest time accepted, in ns (about 146 years): the core adds delays, jitter and
timeouts to times in a ``u64`` of nanoseconds, and at most 2**62 each none of those sums
can overflow."""
MAX_LIMIT = 2**62
"""The largest queue limit or threshold accepted, in packets or bytes: the core sums
thresholds (RED's ``2 min_th + max_th``) in a ``u64``."""
MAX_PACKET_BYTES = 65_535
"""The largest packet (and MSS, header) size accepted: IPv4's largest packet."""

#: Display units for the "about ..." of a bound, largest first.
_ABOUT_UNITS: dict[str, list[tuple[str, int]]] = {
    "bps": [("Tbps", 10**12), ("Gbps", 10**9), ("Mbps", 10**6), ("kbps", 10**3)],
    "B": [("GB", 10**9), ("MB", 10**6), ("KB", 10**3)],
    "ns": [("s", 10**9), ("ms", 10**6), ("us", 10**3)],
    "p": [],
}


def _about(amount: int, base: str) -> str:
    """``2**64 - 1`` bps → ``"about 18.4 million Tbps"``: a bound in words, for errors."""
    if base == "ns" and amount >= 365 * 86_400 * 10**9:
        return f"about {amount / (365.25 * 86_400 * 10**9):.0f} years"
    name, factor = next(((n, f) for n, f in _ABOUT_UNITS[base] if amount >= f), (base, 1))
    name = " packets" if name == "p" else name
    q = amount / factor
    for word, scale in (("billion billion", 1e18), ("billion", 1e9), ("million", 1e6)):
        if q >= scale:
            return f"about {q / scale:.3g} {word} {name.strip()}"
    return f"about {q:.3g}{name}"


def bound_text(maximum: int, base: str, why: str = "") -> str:
    """How an upper bound reads in an error: ``"65535B, IPv4's largest packet"``,
    ``"18446744073709551615bps (about 18.4 million Tbps), the most ..."``."""
    about = f" ({_about(maximum, base)})" if maximum >= 10**6 else ""
    return f"{maximum}{base}{about}" + (f", {why}" if why else "")


def _parse(
    value: object,
    units: dict[str, int],
    what: str,
    help_: str,
    maximum: int,
    base: str,
    why: str,
) -> int:
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
        decimal = Decimal(number)
    except InvalidOperation:  # pragma: no cover - the regex only admits valid decimals
        raise UnitError(value, f"is not {help_}") from None
    if decimal.is_zero():
        return 0
    if decimal < 0:
        raise UnitError(value, "is negative; only zero or more is allowed")
    # Exact arithmetic, bounded first so that "1e999999999s" costs nothing: every bound is
    # below 1e20 and every unit factor below 1e13.
    if decimal.adjusted() > 40:
        raise UnitError(value, f"is too large; at most {bound_text(maximum, base, why)}")
    if decimal.adjusted() < -40:
        raise UnitError(value, f"is not a whole number of {what}; write {help_}")
    amount = Fraction(decimal) * units[unit]
    if amount.denominator != 1:
        raise UnitError(value, f"is not a whole number of {what}; write {help_}")
    if amount > maximum:
        raise UnitError(value, f"is too large; at most {bound_text(maximum, base, why)}")
    return int(amount)


_CORE_U64 = "the most the core's 64-bit field holds"
CORE_U32 = "the most the core's 32-bit field holds"
"""Why a bound is ``U32_MAX``, for :func:`bound_text`."""
_TIME_WHY = "so that the delays the core adds to a time cannot overflow its 64-bit clock"
_LIMIT_WHY = "so that the core's 64-bit sums of limits cannot overflow"


def parse_rate(value: object, *, maximum: int = U64_MAX, why: str = _CORE_U64) -> int:
    """``"10Mbps"`` → ``10_000_000`` (bits per second); at most ``maximum``."""
    return _parse(value, RATE_UNITS, "bits per second", _RATE_HELP, maximum, "bps", why)


def parse_time(value: object, *, maximum: int = MAX_TIME_NS, why: str = _TIME_WHY) -> int:
    """``"20ms"`` → ``20_000_000`` (nanoseconds); at most ``maximum`` (default 2**62 ns)."""
    return _parse(value, TIME_UNITS, "nanoseconds", _TIME_HELP, maximum, "ns", why)


def parse_size(value: object, *, maximum: int = U64_MAX, why: str = _CORE_U64) -> int:
    """``"1.5KiB"`` → ``1536`` (bytes); at most ``maximum``."""
    return _parse(value, SIZE_UNITS, "bytes", _SIZE_HELP, maximum, "B", why)


@dataclass(frozen=True)
class QueueLimit:
    """A queue limit: exactly one of ``packets`` or ``bytes`` is set."""

    packets: int | None = None
    bytes: int | None = None

    def __str__(self) -> str:
        if self.packets is not None:
            return f"{self.packets}p"
        return format_size(self.bytes or 0)


def parse_queue_limit(
    value: object, *, max_packets: int = MAX_LIMIT, max_bytes: int = MAX_LIMIT
) -> QueueLimit:
    """``"100p"`` → ``QueueLimit(packets=100)``; ``"150KB"`` → ``QueueLimit(bytes=150_000)``;
    at most ``max_packets`` packets or ``max_bytes`` bytes (default 2**62 each)."""
    if isinstance(value, QueueLimit):
        return value
    if isinstance(value, str):
        m = _QUANTITY.match(value)
        if m is not None and m.group(2) == "p":
            why = _LIMIT_WHY if max_packets == MAX_LIMIT else CORE_U32
            packets = _parse(value, {"p": 1}, "packets", _LIMIT_HELP, max_packets, "p", why)
            return QueueLimit(packets=packets)
    nbytes = _parse(value, SIZE_UNITS, "bytes", _LIMIT_HELP, max_bytes, "B", _LIMIT_WHY)
    return QueueLimit(bytes=nbytes)


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


_AXIS_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z%/]*)\s*$")


def split_quantity(text: str) -> tuple[float, str]:
    """``"10Mbps"`` -> ``(10.0, "Mbps")``, ``"2.5"`` -> ``(2.5, "")``: the number and the unit
    as written (not converted; sweep axes and report axes order by it). ``ValueError`` when
    ``text`` is not a number followed by letters."""
    m = _AXIS_QUANTITY.match(text)
    if m is None:
        raise ValueError(text)
    return float(m.group(1)), m.group(2)


#: The SI unit each kind of quantity converts to in :func:`si_quantity`: (units, SI unit
#: name, the units' base per SI unit).
_SI: tuple[tuple[dict[str, int], str, int], ...] = (
    (TIME_UNITS, "s", 10**9),
    (RATE_UNITS, "bit/s", 1),
    (SIZE_UNITS, "B", 1),
    ({"p": 1}, "packets", 1),
)


def si_quantity(value: object) -> tuple[float, str] | None:
    """``"15ms"`` -> ``(0.015, "s")``, ``"10Mbps"`` -> ``(1e7, "bit/s")``, ``"1.5KiB"`` ->
    ``(1536.0, "B")``, ``"100p"`` -> ``(100.0, "packets")``: a quantity in SI units (seconds,
    bits per second, bytes, packets) and the unit's name; None for anything else (a plain
    number, a word). Sweeps store their swept quantities this way, so they sort as numbers."""
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value)
    if m is None:
        return None
    number, unit = m.groups()
    for units, name, per in _SI:
        if unit in units:
            return float(Decimal(number) * units[unit] / per), name
    return None


def format_number(x: float | None, spec: str = "{:.2f}", scale: float = 1.0) -> str:
    """``x`` (times ``scale``) formatted with ``spec``; ``-`` for a missing value (None or
    NaN): how l4sim's tables print a number."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return spec.format(x if scale == 1.0 else x * scale)
