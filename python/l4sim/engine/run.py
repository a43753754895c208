"""Run a scenario to completion in chunks of simulated time and collect the results.

Chunking lets the CLI draw a progress bar over simulated time; the core does all the work.
Each chunk is run in calls of about 0.1 s of wall-clock time, so Ctrl-C is seen quickly;
``stop_on_interrupt=True`` then returns the results so far (``summary["partial"]``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl

from l4sim._version import __version__
from l4sim.engine.capture import open_captures
from l4sim.engine.frames import frames_of
from l4sim.engine.results import Result
from l4sim.engine.simulation import Simulation
from l4sim.processes import deferred_interrupt
from l4sim.scenario import Scenario

__all__ = ["run"]


def _progress_bar() -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TextColumn("sim {task.completed:.1f}/{task.total:.1f} s"),
        TimeElapsedColumn(),
        console=Console(stderr=True, emoji=False),
        transient=False,
    )


#: Wall-clock time one call into the core aims at, so that Ctrl-C (seen only between calls,
#: the core runs without the GIL) stops a run within about this long even when a chunk of
#: a slow scenario takes minutes. Splitting a chunk never changes results.
STEP_WALL_S = 0.1


def _advance(sim: Simulation, target_ns: int, step_ns: list[int]) -> None:
    """Run ``sim`` to ``target_ns`` in calls of about :data:`STEP_WALL_S` each;
    ``step_ns[0]`` carries the simulated time per call from one chunk to the next."""
    while sim.now_ns < target_ns:
        before = sim.now_ns
        nxt = min(target_ns, before + step_ns[0])
        t0 = time.perf_counter()
        sim.run_until_ns(nxt)
        took = time.perf_counter() - t0
        if sim.now_ns <= before:  # the core cannot go further (e.g. its end); do not spin
            return
        # Aim the next call at STEP_WALL_S, growing at most 8x at a time (a quiet start
        # says little about the busy part that may follow).
        aim = (nxt - before) * STEP_WALL_S / took if took > 0 else math.inf
        step_ns[0] = int(max(1_000, min(aim, 8 * (nxt - before))))


def run(
    scenario: Scenario | str | Path,
    *,
    progress: bool = False,
    chunks: int = 100,
    on_chunk: Callable[[Simulation], None] | None = None,
    stop_on_interrupt: bool = False,
    memory_limit: int | str | None = None,
    on_series: Callable[[pl.DataFrame, pl.DataFrame], None] | None = None,
    out_dir: str | Path | None = None,
) -> Result:
    """Simulate ``scenario`` to its duration and return a :class:`~l4sim.engine.results.Result`.

    The run advances in ``chunks`` equal steps of simulated time; after each one
    ``on_chunk(sim)`` is called and, with ``progress=True``, a rich progress bar is updated.
    ``summary["wall_time_s"]`` is the wall-clock time spent simulating and
    ``summary["partial"]`` is false.

    With ``stop_on_interrupt=True`` a ``KeyboardInterrupt`` (Ctrl-C) during the run ends it
    early instead of propagating: the result covers the simulated time so far,
    ``summary["partial"]`` is true and ``summary["interrupted_at_s"]`` is the simulated time
    reached (also ``sim_time_s``).

    ``memory_limit`` is the memory budget (:mod:`l4sim.engine.budget`: bytes or a size such as
    ``"4GiB"``; default half the memory available). With ``on_series`` the time series are
    handed over as they are sampled, ``on_series(flows, queues)`` after every chunk (e.g. a
    :class:`~l4sim.engine.results.SeriesStream` writing Parquet), so the run holds only a chunk of
    them and the budget counts only that; the result's ``flows`` and ``queues`` are then
    empty.

    The scenario's ``[[captures]]`` are written into ``out_dir`` as the run goes (a
    scenario with captures needs one; docs/captures.md); ``result.captures`` says what each
    file holds.
    """
    sim = Simulation(scenario, memory_limit=memory_limit, streaming=on_series is not None)
    sim.scenario.require_flows()  # a run without traffic measures nothing
    open_captures(sim, out_dir)
    total = sim.duration_ns
    chunks = max(1, chunks)
    targets = [total * (i + 1) // chunks for i in range(chunks)]
    step_ns = [10_000_000]  # 10 ms of simulated time first, then adapted

    bar = _progress_bar() if progress else None
    interrupted = False
    start = time.perf_counter()
    try:
        if bar is not None:
            from rich.markup import escape

            with bar:
                task = bar.add_task(escape(sim.scenario.name), total=total / 1e9)
                for t in targets:
                    _advance(sim, t, step_ns)
                    bar.update(task, completed=t / 1e9)
                    _after_chunk(sim, on_chunk, on_series)
        else:
            for t in targets:
                _advance(sim, t, step_ns)
                _after_chunk(sim, on_chunk, on_series)
    except KeyboardInterrupt:
        if not stop_on_interrupt:
            raise
        interrupted = True
    # What was simulated is handed over whole; a signal now is delivered after it (or, with
    # stop_on_interrupt, only remembered: processes.stop_signal()).
    with deferred_interrupt(deliver=not stop_on_interrupt):
        return _finish(sim, time.perf_counter() - start, interrupted, on_series)


def _finish(
    sim: Simulation,
    wall: float,
    interrupted: bool,
    on_series: Callable[[pl.DataFrame, pl.DataFrame], None] | None,
) -> Result:
    """The result of a run that ended (at its duration, or ``interrupted``)."""
    captures = sim.close_captures() if sim.scenario.captures else []

    core_summary = sim.summary()
    summary: dict[str, Any] = {"scenario": sim.scenario.name}
    for key, value in core_summary.items():
        summary[key] = value
        if key == "sim_time_s":
            summary["wall_time_s"] = wall
    summary.setdefault("wall_time_s", wall)
    summary["flows"] = [
        _with_ecn(f, rf.spec)
        for f, rf in zip(summary.get("flows", []), sim.scenario.resolved_flows(), strict=False)
    ]
    summary["l4sim_version"] = __version__
    summary["partial"] = interrupted
    if interrupted:
        summary["interrupted_at_s"] = sim.now_ns / 1e9
    flows, queues = sim.drain_series()
    if on_series is not None:
        on_series(flows, queues)
        flows, queues = flows.clear(), queues.clear()
    result = Result(summary=summary, flows=flows, queues=queues, scenario=sim.scenario)
    result.captures = captures
    result.frames = frames_of(sim._sim)
    return result


def _with_ecn(flow: dict[str, Any], spec: Any) -> dict[str, Any]:
    """``flow`` with ``ecn`` after ``cca``: what its packets use (a TCP flow's negotiated
    mode, ``"accecn"`` / ``"ecn"`` / ``"off"``, the congestion control's needs included; a
    UDP or control flow's codepoint)."""
    mode = spec.ecn_mode() if hasattr(spec, "ecn_mode") else getattr(spec, "ecn", None)
    out: dict[str, Any] = {}
    for key, value in flow.items():
        out[key] = value
        if key == "cca":
            out["ecn"] = mode
    out.setdefault("ecn", mode)
    return out


def _after_chunk(
    sim: Simulation,
    on_chunk: Callable[[Simulation], None] | None,
    on_series: Callable[[pl.DataFrame, pl.DataFrame], None] | None,
) -> None:
    if on_series is not None:
        with deferred_interrupt():  # a chunk taken from the core is written whole
            on_series(*sim.drain_series())
    if on_chunk is not None:
        on_chunk(sim)
