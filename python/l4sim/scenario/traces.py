"""Mahimahi link traces: reading, checking and locating them (``trace = "..."`` on a link).

A trace is a text file with one line per delivery opportunity: a whole number of
milliseconds from the start, not decreasing; each opportunity carries 1504 bytes and the
trace repeats with the period of its last line (mahimahi ``src/frontend/link_queue.cc``;
the core's ``net/rate.rs`` models it). A file ending in ``.gz`` is read through gzip.

A trace is named by a path, relative to the scenario file that names it (or to the current
directory for a scenario not read from a file), or as ``builtin:NAME`` for one of the
traces shipped in ``l4sim/data/traces`` (:func:`builtin_traces`). Every problem is one
sentence (:class:`TraceError`); a trace is read once per process (and again if its file
changes).
"""

from __future__ import annotations

import gzip
import os
from array import array
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from l4sim import files
from l4sim.files import relative_to

__all__ = ["TraceError", "builtin_traces", "load", "mean_rate_bps", "relative_to", "resolve"]

#: Bytes of one delivery opportunity: mahimahi's ``LinkQueue::PACKET_SIZE``
#: (``src/frontend/link_queue.hh``), as the core's ``net::rate::OPPORTUNITY_BYTES``.
OPPORTUNITY_BYTES = 1504
#: Most opportunities in a trace (``net::rate::MAX_OPPORTUNITIES``).
MAX_OPPORTUNITIES = 50_000_000
#: Longest trace, in ms (``net::rate::MAX_TRACE_MS``).
MAX_TRACE_MS = 1 << 31
#: Largest trace file read (uncompressed): 50 million lines of up to 10 digits.
MAX_TRACE_BYTES = 600 * 1024 * 1024

BUILTIN = "builtin:"
_DATA = Path(__file__).parent.parent / "data" / "traces"


class TraceError(ValueError):
    """A trace that cannot be used, in one sentence."""


def builtin_traces() -> list[str]:
    """Names of the shipped traces (``builtin:NAME``), e.g. ``verizon-lte.down``."""
    return sorted(p.name.removesuffix(".gz") for p in _DATA.glob("*.gz"))


def resolve(spec: str) -> str:
    """The canonical name of a trace: ``builtin:NAME`` as given (if it exists), or the file's
    absolute path (relative ones against the scenario's directory). Does not read it."""
    if spec.startswith(BUILTIN):
        name = spec[len(BUILTIN) :]
        if name not in builtin_traces():
            raise TraceError(
                f"there is no built-in trace {name!r}; built-in traces: "
                + ", ".join(builtin_traces())
            )
        return spec
    if not spec.strip():
        raise TraceError("the trace path is empty; give a file or builtin:NAME")
    return files.resolve(spec)


def _file_of(name: str) -> Path:
    if name.startswith(BUILTIN):
        return _DATA / f"{name[len(BUILTIN) :]}.gz"
    return Path(name)


def load(spec: str) -> array[int]:
    """The opportunities (ms) of the trace ``spec`` (a path or ``builtin:NAME``), checked as
    mahimahi checks them: at least one, whole non-negative numbers, not decreasing, the
    last one positive; a :class:`TraceError` otherwise."""
    name = resolve(spec)
    path = _file_of(name)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise TraceError(f"trace file {name!r} does not exist") from None
    except OSError as e:
        raise TraceError(f"trace file {name!r} cannot be read ({e.strerror})") from None
    return _load(str(path), name, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=32)
def _load(path: str, name: str, _mtime: int, _size: int) -> array[int]:
    """The trace read line by line into 8 bytes per opportunity (a 45 MB trace of 5 million
    lines once peaked at 630 MiB as text, a list of lines and a tuple of ints)."""
    out = array("q")
    read = 0
    last = 0
    try:
        with files.open_input(path, "trace file", MAX_TRACE_BYTES, TraceError) as raw:
            f = gzip.open(raw, "rb") if path.endswith(".gz") else raw  # noqa: SIM115 (raw closes it)
            for i, line in enumerate(f, start=1):
                read += len(line)
                if read > MAX_TRACE_BYTES:
                    raise TraceError(
                        f"trace {name!r} is larger than {MAX_TRACE_BYTES // 2**20} MiB; cut "
                        "it shorter"
                    )
                if i > MAX_OPPORTUNITIES:
                    raise TraceError(
                        f"trace {name!r} has more than the {MAX_OPPORTUNITIES} lines (delivery "
                        "opportunities) allowed"
                    )
                ms = _timestamp(name, i, line)
                if ms < last:
                    raise TraceError(
                        f"trace {name!r} line {i}: {ms} ms comes after {last} ms; timestamps "
                        "must not decrease"
                    )
                out.append(ms)
                last = ms
    except (OSError, EOFError) as e:  # a broken gzip stream
        why = getattr(e, "strerror", None) or str(e)
        raise TraceError(f"trace file {name!r} cannot be read ({why})") from None
    if not out:
        raise TraceError(f"trace {name!r} is empty; it needs one timestamp (ms) per line")
    if last == 0:
        raise TraceError(f"trace {name!r} lasts no time (its last timestamp is 0 ms)")
    return out


def _timestamp(name: str, i: int, line: bytes) -> int:
    """Line ``i``'s whole, non-negative number of milliseconds (at most MAX_TRACE_MS)."""
    s = line.strip()
    if not s.isdigit():  # mahimahi refuses an empty line too; isdigit is ASCII-only here
        shown = line.rstrip(b"\r\n")[:20].decode("ascii", "replace")
        raise TraceError(
            f"trace {name!r} line {i} ({shown!r}) is not a whole, non-negative number of "
            "milliseconds"
        )
    ms = int(s)
    if ms > MAX_TRACE_MS:
        raise TraceError(
            f"trace {name!r} line {i}: {ms} ms is more than the {MAX_TRACE_MS} ms "
            "(about 24.8 days) a trace may last"
        )
    return ms


def mean_rate_bps(opportunities: Sequence[int]) -> float:
    """The trace's capacity in bit/s: its opportunities' bytes over its period."""
    return len(opportunities) * OPPORTUNITY_BYTES * 8 / (opportunities[-1] / 1000)


def capacity_series(
    opportunities: Sequence[int], duration_s: float, bin_s: float = 1.0
) -> tuple[list[float], list[float]]:
    """The trace's capacity in bit/s per ``bin_s`` bin over ``duration_s`` (looped): bin
    centres (s) and rates, for plots."""
    period = opportunities[-1]
    nbins = max(1, round(duration_s / bin_s))
    counts = [0] * nbins
    rounds = int(duration_s * 1000 // period) + 1
    for r in range(rounds):
        for ms in opportunities:
            k = int((r * period + ms) / 1000 / bin_s)
            if k >= nbins:
                break
            counts[k] += 1
    t = [(k + 0.5) * bin_s for k in range(nbins)]
    return t, [c * OPPORTUNITY_BYTES * 8 / bin_s for c in counts]
