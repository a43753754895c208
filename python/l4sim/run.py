"""Run a scenario to completion in chunks of simulated time and collect the results.

Chunking lets the CLI draw a progress bar over simulated time; the core does all the work.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from l4sim._version import __version__
from l4sim.results import Result
from l4sim.scenario import Scenario
from l4sim.simulation import Simulation

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
        console=Console(stderr=True),
        transient=False,
    )


def run(
    scenario: Scenario | str | Path,
    *,
    progress: bool = False,
    chunks: int = 100,
    on_chunk: Callable[[Simulation], None] | None = None,
) -> Result:
    """Simulate ``scenario`` to its duration and return a :class:`~l4sim.results.Result`.

    The run advances in ``chunks`` equal steps of simulated time; after each one
    ``on_chunk(sim)`` is called and, with ``progress=True``, a rich progress bar is updated.
    ``summary["wall_time_s"]`` is the wall-clock time spent simulating.
    """
    sim = Simulation(scenario)
    total = sim.duration_ns
    chunks = max(1, chunks)
    targets = [total * (i + 1) // chunks for i in range(chunks)]

    bar = _progress_bar() if progress else None
    start = time.perf_counter()
    if bar is not None:
        with bar:
            task = bar.add_task(sim.scenario.name, total=total / 1e9)
            for t in targets:
                sim.run_until_ns(t)
                bar.update(task, completed=t / 1e9)
                if on_chunk is not None:
                    on_chunk(sim)
    else:
        for t in targets:
            sim.run_until_ns(t)
            if on_chunk is not None:
                on_chunk(sim)
    wall = time.perf_counter() - start

    core_summary = sim.summary()
    summary: dict[str, Any] = {"scenario": sim.scenario.name}
    for key, value in core_summary.items():
        summary[key] = value
        if key == "sim_time_s":
            summary["wall_time_s"] = wall
    summary.setdefault("wall_time_s", wall)
    summary["l4sim_version"] = __version__
    return Result(summary=summary, flows=sim.flows(), queues=sim.queues(), scenario=sim.scenario)
