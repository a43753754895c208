"""Time-varying link rates: a Mahimahi ``trace``, a step ``schedule`` or an ``onoff`` rate on
a link direction (``LinkSpec``'s ``trace``, ``schedule``, ``onoff`` and their ``_reverse``
forms), and their config.rs form (``LinkConfig::schedule_ab`` / ``schedule_ba``, the
core's ``net::rate::RateScheduleConfig``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, PlainSerializer

from l4sim.scenario import traces
from l4sim.scenario.fields import PositiveTime, Rate, Time, _Model, _unit_schema
from l4sim.units import RATE_UNITS, format_rate, parse_rate

RateOrZero = Annotated[
    int,
    BeforeValidator(parse_rate),
    PlainSerializer(format_rate, return_type=str),
    _unit_schema(list(RATE_UNITS), "10Mbps", "A rate in bits per second (0: off)"),
]
"""Bits per second, zero allowed (the link is off)."""

#: Most steps of a schedule (``net::rate::MAX_STEPS``).
MAX_STEPS = 1_000_000


def _check_trace(spec: str) -> str:
    traces.load(spec)  # read and checked now: errors name the key
    return traces.resolve(spec)


TraceFile = Annotated[
    str,
    AfterValidator(_check_trace),
    Field(
        description="A Mahimahi trace: a file (relative to the scenario file) or "
        "builtin:NAME (see docs/traces.md)."
    ),
]
"""A trace's path (absolute once validated) or ``builtin:NAME``."""


class Step(_Model):
    """From ``at`` on, the direction's rate is ``rate`` (until the next step)."""

    at: Time
    rate: RateOrZero


Steps = Annotated[list[Step], Field(min_length=1, max_length=MAX_STEPS)]


class OnOff(_Model):
    """``rate`` for ``on``, then ``off_rate`` (default 0: no capacity) for ``off``, repeated."""

    on: PositiveTime
    off: PositiveTime
    rate: Rate
    off_rate: RateOrZero = "0bps"  # type: ignore[assignment]


def check_steps(steps: list[Step], period: int | None, where: str) -> None:
    """The rules of config.rs ``RateScheduleConfig::validate``, as sentences."""
    if steps[0].at != 0:
        raise ValueError(f"{where}[0].at must be 0s (the schedule starts with the run)")
    for i in range(1, len(steps)):
        if steps[i].at <= steps[i - 1].at:
            raise ValueError(f"{where}[{i}].at must be later than {where}[{i - 1}].at")
    if period is not None:
        if period <= steps[-1].at:
            raise ValueError(f"{where}_period must be longer than the last step's at")
        if all(s.rate == 0 for s in steps):
            raise ValueError(f"{where} needs a step with a positive rate")
    elif steps[-1].rate == 0:
        raise ValueError(
            f"{where}'s last step must have a positive rate (or give {where}_period to repeat)"
        )


def core_schedule(
    trace: str | None, steps: list[Step] | None, period: int | None, onoff: OnOff | None
) -> dict[str, Any] | None:
    """config.rs ``RateScheduleConfig`` of one direction, or None for a constant rate."""
    if trace is not None:
        # The trace's array as it is (8 bytes an opportunity), not a list of ints (36):
        # core_json writes it.
        return {"kind": "mahimahi", "opportunities_ms": traces.load(trace)}
    if onoff is not None:
        rates = [(0, onoff.rate), (onoff.on, onoff.off_rate)]
        return _steps(rates, onoff.on + onoff.off)
    if steps is not None:
        return _steps([(s.at, s.rate) for s in steps], period)
    return None


def constant(rate: int) -> dict[str, Any]:
    """A one-step schedule at ``rate``: exactly the constant rate (``tx_time``)."""
    return _steps([(0, rate)], None)


def _steps(rates: list[tuple[int, int]], period: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "steps",
        "steps": [{"at_ns": at, "rate_bps": r} for at, r in rates],
    }
    if period is not None:
        out["period_ns"] = period
    return out


def nominal_rate(schedule: dict[str, Any]) -> int:
    """The schedule's mean rate over a period (config.rs ``mean_rate_bps``), for the link's
    ``rate_bps`` (route summaries, ``bottleneck_bps``)."""
    if schedule["kind"] == "mahimahi":
        return max(1, int(traces.mean_rate_bps(schedule["opportunities_ms"])))
    steps = schedule["steps"]
    last = steps[-1]["at_ns"]
    period = schedule.get("period_ns")
    if period is None and last == 0:
        return max(1, steps[0]["rate_bps"])
    end = period if period is not None else 2 * last
    total = 0
    for i, s in enumerate(steps):
        to = steps[i + 1]["at_ns"] if i + 1 < len(steps) else end
        total += s["rate_bps"] * (to - s["at_ns"])
    return max(1, total // end)
