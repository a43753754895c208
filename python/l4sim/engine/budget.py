"""The memory budget: refuse, before it is built, a simulation whose results would not fit.

:class:`~l4sim.engine.simulation.Simulation` calls :func:`check` on every scenario it is given (so
``l4sim run``, sweeps, experiments and environments all get it): :func:`estimate` adds up
what the run will hold at its peak, and a run estimated above the budget raises
:class:`MemoryBudgetError`, one sentence naming the estimate, the budget and the knob to
turn (``sample_interval``, ``duration`` or the flows' ``count``), instead of the operating
system killing the process (or the core aborting on a failed allocation) minutes later.

The budget (:func:`resolve_limit`), first found of:

* ``memory_limit=`` of :class:`~l4sim.engine.simulation.Simulation` (bytes, or a size such as
  ``"4GiB"``; ``0`` or ``"none"``: no check);
* the environment variable ``L4SIM_MEMORY_LIMIT`` (the same forms);
* half of the memory available now (``MemAvailable`` in ``/proc/meminfo``), or
  :data:`FALLBACK_LIMIT` where that cannot be read.
"""

from __future__ import annotations

import math
import os
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from l4sim.errors import L4simError
from l4sim.units import UnitError, format_time, parse_size

__all__ = [
    "ENV_VAR",
    "FALLBACK_LIMIT",
    "Estimate",
    "MemoryBudgetError",
    "check",
    "estimate",
    "resolve_limit",
]

T = TypeVar("T")

ENV_VAR = "L4SIM_MEMORY_LIMIT"
FALLBACK_LIMIT = 4 * 2**30
"""The budget where the available memory cannot be read (no ``/proc/meminfo``): 4 GiB."""

# Bytes per unit of what a run holds at its peak (the end of a run, when the time series
# are handed over as DataFrames while the core still holds them). Measured as the growth of
# the process's peak RSS over its RSS after `import l4sim` (release build, Linux, glibc,
# polars 2.1), 2026-11-26:
#
# * flow rows: two_host, 100 TCP flows, 10 s sampled every 1 ms (1 000 000 flow rows):
#   +86 MiB in the core while it runs (88 B a row, columns reserved at once), +122 MiB for
#   the DataFrame (~104 B a row: Int64 and Float64 columns, the TCP state as text): peak
#   +210 MiB, 220 B a row;
# * queue rows: demo.toml sampled every 100 us (580 001 flow and 2 714 198 queue rows):
#   peak +576 MiB, so (604 MB - 580 001 x 220 B) / 2 714 198 = 175 B a queue row (72 B in
#   the core, ~88 B in the DataFrame);
# * flows and links: dumbbell, 20 000 NewReno flows, 1 Gbit/s, 2 s (80 002 link
#   directions): peak +197 MiB, and two_host with 20 000 flows (2 link directions): +61 MiB,
#   so ~3 KB a flow (its configuration in Python and JSON, endpoints, histogram) and
#   ~1.8 KB a link direction (qdisc, histogram, counters) when little is in flight; the
#   1 000-flow, 1 Gbit/s dumbbell below holds ~27 KB a flow more while it runs (senders'
#   windows, packets queued).
#
# With the figures below: the 1 000-flow, 1 Gbit/s, 10 s dumbbell of bench_sampling.py
# (100 000 + 400 200 rows) peaks at +153 MiB, estimated 132 MiB; 50 flows at 100 Mbit/s for
# 600 s (300 000 + 1 212 000 rows) +280 MiB, estimated 282 MiB; demo.toml every 100 us +576
# MiB, estimated 605 MiB; the 20 000-flow dumbbell +197 MiB, estimated 564 MiB. The budget
# is a guard against runs that cannot fit, not a prediction: it errs on the large side.
FLOW_ROW_BYTES = 220
"""Peak bytes per per-flow time-series row (core column + DataFrame)."""
QUEUE_ROW_BYTES = 175
"""Peak bytes per per-queue time-series row."""
FLOW_BYTES = 20 * 1024
"""Per flow: configuration, endpoints (TCP sender and receiver, their buffers), one-way
delay histogram, and an allowance for its packets in flight."""
CHANNEL_BYTES = 2 * 1024
"""Per link direction: qdisc, sojourn histogram, counters, and an allowance for packets in
its queue and on its wire."""
ROUTE_ENTRY_BYTES = 4
"""Per entry of the routing table: nodes x the routers the flows' endpoints are reached
through (``Routes::towards`` in ``net/routing.rs``: an endpoint that is a leaf, one link
only, is reached through its neighbour)."""
TRACE_LINE_BYTES = 48
"""Per delivery opportunity of a link's trace: the parsed trace (8 B), the JSON handed to
the core and the core's copy. Measured: a 45 MB trace of 5 million lines, two_host, 1 s,
peak RSS 443 MiB against 218 MiB without it (45 B a line; 132 B a line before traces were
kept as arrays)."""
BASE_BYTES = 16 * 2**20
"""A run's fixed part (the core, the DataFrames' and the summary's overheads)."""

STREAM_SHARE = 0.01
"""With ``streaming=True`` the time series count for this share of the run: the caller
takes them from the core (:meth:`~l4sim.engine.simulation.Simulation.drain_series`) at least this
often, e.g. after each of ``l4sim.run``'s 100 chunks."""

#: From this many flows a refusal names their count among the knobs.
MANY_FLOWS = 1000

#: Qdisc kinds whose classes get their own queue rows (crates/l4sim-core: `class_names`).
_CLASSES = {"dualpi2": 2, "fq_l4s": 2}


class MemoryBudgetError(L4simError):
    """A run would need more memory than the budget: one sentence with the estimate, the
    budget and what to change (``sample_interval``, ``duration``, ``count``, or the budget
    with ``L4SIM_MEMORY_LIMIT`` / ``memory_limit=``)."""


@dataclass(frozen=True)
class Estimate:
    """What a run will hold at its peak, in bytes, and the counts behind it."""

    flows: int
    channels: int
    samples: int
    flow_rows: int
    queue_rows: int
    series_bytes: int
    state_bytes: int
    trace_opportunities: int = 0

    @property
    def total(self) -> int:
        return self.series_bytes + self.state_bytes + BASE_BYTES


def _rows(config: dict[str, Any]) -> tuple[int, int, int]:
    """(samples, flow rows, queue rows) of a whole run, as the core counts them
    (``Series::rows_of_run``): a flow has a row at each sample at or after its start, every
    link direction (and each class of a two-class qdisc) one at each sample."""
    iv = max(1, int(config["sample_interval_ns"]))
    samples = int(config["duration_ns"]) // iv
    flow_rows = 0
    for f in config["flows"]:
        first = max(1, -(-int(f.get("start_ns", 0)) // iv))  # first sample at or after start
        flow_rows += max(0, samples - first + 1)
    per_sample = 0
    for link in config["links"]:
        for key in ("qdisc_ab", "qdisc_ba"):
            q = link.get(key) or {}
            per_sample += 1 + _CLASSES.get(q.get("kind", "fifo"), 0)
    return samples, flow_rows, samples * per_sample


def _route_targets(config: dict[str, Any]) -> set[int]:
    """The routing table's columns, as the core picks them: each flow endpoint, or for an
    endpoint with one link (a leaf) its neighbour, unless that is a leaf too."""
    links = config["links"]
    degree = [0] * len(config["nodes"])
    neighbour = [-1] * len(config["nodes"])
    for link in links:
        a, b = link["a"], link["b"]
        degree[a] += 1
        degree[b] += 1
        neighbour[a], neighbour[b] = b, a
    targets: set[int] = set()
    for f in config["flows"]:
        for end in (f["src"], f["dst"]):
            t = neighbour[end] if degree[end] == 1 else end
            if degree[t] != 1:
                targets.add(t)
    return targets


def estimate(config: dict[str, Any], *, streaming: bool = False) -> Estimate:
    """The peak memory of a run of ``config`` (the core's configuration,
    :meth:`~l4sim.scenario.Scenario.to_core_config`). With ``streaming`` the time series
    count for :data:`STREAM_SHARE` of the run (at least one sample)."""
    samples, flow_rows, queue_rows = _rows(config)
    if streaming and samples > 0:
        share = max(STREAM_SHARE, 1 / samples)
        flow_rows, queue_rows = math.ceil(flow_rows * share), math.ceil(queue_rows * share)
    nodes = len(config["nodes"])
    flows, channels = len(config["flows"]), 2 * len(config["links"])
    routes = nodes * len(_route_targets(config)) * ROUTE_ENTRY_BYTES
    opportunities = sum(
        len(sched["opportunities_ms"])
        for link in config["links"]
        for sched in (link.get("schedule_ab"), link.get("schedule_ba"))
        if isinstance(sched, dict) and "opportunities_ms" in sched
    )
    state = flows * FLOW_BYTES + channels * CHANNEL_BYTES + routes
    state += opportunities * TRACE_LINE_BYTES
    series = flow_rows * FLOW_ROW_BYTES + queue_rows * QUEUE_ROW_BYTES
    return Estimate(flows, channels, samples, flow_rows, queue_rows, series, state, opportunities)


def _mem_available() -> int | None:
    """``MemAvailable`` of ``/proc/meminfo`` in bytes, or None."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


_OFF = {"0", "none", "off", "no", "unlimited"}


def _parse_limit(value: object, where: str) -> int | None:
    """A budget as given by the user: bytes (an int), a size string, or 0 / "none" (no
    check, None)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise MemoryBudgetError(
            f"{where} {value!r} is not a memory size; give bytes or a size such as '4GiB', "
            "or 'none' to turn the memory check off"
        )
    if isinstance(value, int):
        if value < 0:
            raise MemoryBudgetError(
                f"{where} {value} is negative; give bytes or a size such as '4GiB', or 0 to "
                "turn the memory check off"
            )
        return value or None
    text = value.strip()
    if text.lower() in _OFF:
        return None
    if text.isdigit():
        return int(text) or None
    try:
        return parse_size(text) or None
    except UnitError as e:
        raise MemoryBudgetError(
            f"{where} {e.value!r} is not a size such as '4GiB' (units: B, KB, MB, GB, KiB, "
            "MiB, GiB), nor 'none' to turn the memory check off"
        ) from None


def resolve_limit(memory_limit: int | str | None = None) -> tuple[int | None, str]:
    """The budget in bytes (None: no check) and where it comes from, for messages:
    ``memory_limit`` if given, else ``$L4SIM_MEMORY_LIMIT``, else half of the available
    memory (or :data:`FALLBACK_LIMIT`)."""
    if memory_limit is not None:
        return _parse_limit(memory_limit, "memory_limit"), "memory_limit="
    env = os.environ.get(ENV_VAR)
    if env is not None and env.strip() != "":
        return _parse_limit(env, ENV_VAR), ENV_VAR
    available = _mem_available()
    if available is None:
        return FALLBACK_LIMIT, "the default where the available memory is unknown"
    return available // 2, f"half of the {_size(available)} of memory available"


def _size(n: float) -> str:
    """Bytes for people: ``5.4 GiB``, ``120 MiB``."""
    for unit, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= factor:
            q = n / factor
            return f"{q:.3g} {unit}" if q < 1000 else f"{q:,.0f} {unit}"
    return f"{int(n)} B"


def _count(n: int) -> str:
    return f"{n:,}".replace(",", " ")


@dataclass
class _Family:
    """A simulation and its live forks: each fork is a full copy that grows to the run's
    peak, so each counts the estimate once more against the one budget."""

    name: str
    size: int
    limit: int | None
    source: str
    members: int = 0

    def join(self, sim: object) -> None:
        self.members += 1
        weakref.finalize(sim, self._leave)

    def _leave(self) -> None:
        self.members -= 1


def forked(parent: Any, make: Callable[[], T]) -> T:
    """``make()`` (a copy of simulation ``parent``), refused with :class:`MemoryBudgetError`
    before it is made if ``parent``, its live forks and this one would not fit the budget
    ``parent`` was checked against (3 000 forks once took 800 MB under a 50 MiB budget)."""
    fam: _Family | None = getattr(parent, "_budget", None)
    if (
        fam is not None
        and fam.limit is not None
        and BASE_BYTES + (fam.members + 1) * fam.size > fam.limit
    ):
        raise MemoryBudgetError(
            f"another fork of scenario {fam.name!r} would make {fam.members + 1} copies of "
            f"about {_size(fam.size)} each, more than the budget of {_size(fam.limit)} "
            f"({fam.source}); drop forks no longer needed, or raise the budget with "
            f"--memory-limit, {ENV_VAR} or memory_limit="
        )
    child = make()
    if fam is not None:
        fam.join(child)
        child._budget = fam  # type: ignore[attr-defined]
    return child


def check(
    config: dict[str, Any],
    *,
    name: str = "scenario",
    memory_limit: int | str | None = None,
    streaming: bool = False,
    holder: Any = None,
) -> Estimate:
    """Raise :class:`MemoryBudgetError` if a run of ``config`` (the core's configuration)
    is estimated above the budget (:func:`resolve_limit`); return the estimate. ``holder``
    (the simulation built from it) has its forks counted against the same budget
    (:func:`forked`)."""
    est = estimate(config, streaming=streaming)
    limit, source = resolve_limit(memory_limit)
    if limit is None or est.total <= limit:
        if holder is not None:
            holder._budget = _Family(name, est.total - BASE_BYTES, limit, source)
            holder._budget.join(holder)
        return est
    iv = int(config["sample_interval_ns"])
    duration = int(config["duration_ns"])
    if est.series_bytes >= est.state_bytes:
        what = (
            f"time series of {_count(est.flow_rows + est.queue_rows)} rows, "
            f"{_size(est.series_bytes)}, from {_count(est.flows)} flows and "
            f"{_count(est.channels)} link directions sampled every {format_time(iv)} for "
            f"{format_time(duration)}"
        )
        knob = (
            f"raise sample_interval (now {format_time(iv)!r}) or shorten duration "
            f"(now {format_time(duration)!r})"
        )
        if est.flows >= MANY_FLOWS:
            knob = knob.replace(" or shorten", ", shorten") + ", lower the flows' count"
        if not streaming:
            knob = knob.replace(" or shorten", ", shorten") + (
                ", stream the series to Parquet as the run goes (l4sim run --stream)"
            )
    else:
        traced = est.trace_opportunities * TRACE_LINE_BYTES
        what = (
            f"{_count(est.flows)} flows and {_count(est.channels)} link directions"
            + (f" with traces of {_count(est.trace_opportunities)} lines" if traced else "")
            + f", {_size(est.state_bytes)}"
        )
        if traced >= est.state_bytes // 2:
            knob = "use a shorter trace"
        elif est.flows * FLOW_BYTES >= est.state_bytes // 2:
            knob = "lower the flows' count"
        else:
            knob = "use fewer links or routers (topology.routers, links)"
    raise MemoryBudgetError(
        f"scenario {name!r} would need about {_size(est.total)} of memory ({what}), more "
        f"than the budget of {_size(limit)} ({source}); {knob}, or raise the budget with "
        f"--memory-limit, {ENV_VAR} or memory_limit= (a size such as '16GiB', or 'none' to "
        "turn the check "
        "off)"
    )
