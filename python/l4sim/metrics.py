"""Metrics computed from a run's numbers in Python (the core computes its own in Rust)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable


def jain(xs: Iterable[float], idle: float = 1.0) -> float:
    """Jain's fairness index of ``xs``: (Σx)² / (n Σx²), 1 when all are equal, 1/n when one
    takes everything (Jain, Chiu & Hawe, DEC-TR-301, 1984). ``idle`` is the value when every
    share is zero (or there is none)."""
    values = list(xs)
    s, s2 = sum(values), sum(x * x for x in values)
    return s * s / (len(values) * s2) if values and s2 > 0 else idle


def mean_abs_deviation(xs: list[float]) -> float:
    """Mean absolute deviation from the mean (NaN for no value)."""
    if not xs:
        return math.nan
    m = statistics.fmean(xs)
    return statistics.fmean(abs(x - m) for x in xs)


def nan_mean(xs: list[float]) -> float:
    """The mean of the values that are not NaN (NaN if none is)."""
    xs = [x for x in xs if x == x]
    return statistics.fmean(xs) if xs else math.nan


def running_mean(xs: list[float], k: int = 10) -> list[float]:
    """The mean of the last ``k`` values (fewer at the start) at every position."""
    out, acc = [], 0.0
    for i, x in enumerate(xs):
        acc += x
        if i >= k:
            acc -= xs[i - k]
        out.append(acc / min(i + 1, k))
    return out


def settling_time(
    samples: Iterable[tuple[float, float]], start: float, end: float, level: float
) -> float:
    """How long after ``start`` a sampled signal ``(time, value)`` is at or above ``level``
    for good, up to ``end``: the time after the last sample in ``[start, end)`` below
    ``level`` (0 if none is; ``end - start`` if the last one is)."""
    last_low = None
    times = []
    for t, v in samples:
        if start <= t < end:
            times.append(t)
            if v < level:
                last_low = t
    if last_low is None:
        return 0.0
    later = [t for t in times if t > last_low]
    return (later[0] if later else end) - start
