"""A thin wrapper over the Rust core's ``l4sim._core.Simulation``: no simulation logic here.

It converts between the Python-side conventions (a validated :class:`~l4sim.scenario.Scenario`,
seconds or unit strings, polars DataFrames) and the binding's (normalised JSON, integer
nanoseconds, columnar dicts).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from l4sim.errors import ActionError, CoreError, EnvConfigError, L4simError
from l4sim.scenario import Scenario, load
from l4sim.units import UnitError, parse_queue_limit, parse_time

__all__ = [
    "FLOW_SCHEMA",
    "QUEUE_SCHEMA",
    "ActionError",
    "CoreError",
    "Simulation",
    "SimulationBatch",
    "to_ns",
]


FLOW_SCHEMA: dict[str, pl.DataType] = {
    "time_s": pl.Float64(),
    "flow": pl.Int64(),
    "cwnd_pkts": pl.Int64(),
    "ssthresh_pkts": pl.Float64(),
    "srtt_s": pl.Float64(),
    "delivered_bytes": pl.Int64(),
    "goodput_bps": pl.Float64(),
    "throughput_bps": pl.Float64(),
    "retransmits": pl.Int64(),
    "bytes_in_flight": pl.Int64(),
    "ca_state": pl.String(),
}
"""Columns of :meth:`Simulation.flows` (one row per sample time and flow)."""

QUEUE_SCHEMA: dict[str, pl.DataType] = {
    "time_s": pl.Float64(),
    "link": pl.String(),
    "class": pl.String(),
    "backlog_pkts": pl.Int64(),
    "backlog_bytes": pl.Int64(),
    "drops": pl.Int64(),
    "ecn_marks": pl.Int64(),
    "sojourn_s": pl.Float64(),
    "utilization": pl.Float64(),
}
"""Columns of :meth:`Simulation.queues` (one row per sample time and queue)."""


def to_ns(
    t: float | int | str, name: str = "time", error: type[L4simError] = EnvConfigError
) -> int:
    """Seconds (``1.5``) or a time string (``"1500ms"``) → integer nanoseconds. Bad input
    raises ``error`` (an env or API option by default) with one sentence naming ``name``."""
    if isinstance(t, str):
        try:
            return parse_time(t)
        except UnitError as e:
            raise error(f"{name} {e}") from None
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
        raise error(
            f"{name} {t!r} must be seconds (a number, zero or more) or a string such as '20ms'"
        )
    return round(t * 1_000_000_000)


def columns_to_frame(columns: dict[str, list[Any]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """A columnar dict from the core → DataFrame with stable dtypes (also when empty).

    Columns the core adds beyond ``schema`` are kept with inferred types."""
    series = [
        pl.Series(name, values, dtype=schema.get(name), strict=False)
        for name, values in columns.items()
    ]
    for name, dtype in schema.items():
        if name not in columns:
            series.append(pl.Series(name, [], dtype=dtype))
    return pl.DataFrame(series)


def _core_module() -> Any:
    try:
        from l4sim import _core
    except ImportError as e:  # pragma: no cover - depends on the build
        raise CoreError(
            "the l4sim simulator core (l4sim._core) is not built; run `pip install -e .` or "
            f"`maturin develop --release` in the repository ({e})"
        ) from None
    return _core


class Simulation:
    """A running simulation of a scenario; advance it with :meth:`run_until` or :meth:`run`.

    >>> sim = Simulation(l4sim.load("scenarios/demo.toml"))
    >>> sim.run_until("5s"); other = sim.fork(); sim.run()
    """

    def __init__(self, scenario: Scenario | str | Path | dict[str, Any], *, _core_sim: Any = None):
        if isinstance(scenario, str | Path):
            scenario = load(scenario)
        elif isinstance(scenario, dict):
            scenario = Scenario.parse(scenario)
        self.scenario: Scenario = scenario
        if _core_sim is not None:
            self._sim = _core_sim
            return
        core = _core_module()
        try:
            self._sim = core.Simulation(scenario.to_core_json())
        except CoreError as e:
            msg = f"the simulator core rejected scenario {scenario.name!r}: {e}"
            raise CoreError(msg) from None

    # -- time ----------------------------------------------------------------------------------

    @property
    def now(self) -> float:
        """Current simulated time in seconds."""
        return self._sim.now_ns / 1e9

    @property
    def now_ns(self) -> int:
        return self._sim.now_ns

    @property
    def duration(self) -> float:
        """The run's end in seconds."""
        return self._sim.duration_ns / 1e9

    @property
    def duration_ns(self) -> int:
        return self._sim.duration_ns

    @property
    def events(self) -> int:
        """Events processed so far."""
        return self._sim.events

    @property
    def finished(self) -> bool:
        return self._sim.finished

    def run_until(self, t: float | int | str) -> None:
        """Process every event up to time ``t`` (seconds, or a string such as ``"5s"``),
        capped at the scenario's duration."""
        self._sim.run_until(to_ns(t))

    def run_until_ns(self, t_ns: int) -> None:
        """:meth:`run_until` with integer nanoseconds."""
        self._sim.run_until(int(t_ns))

    def run(self) -> None:
        """Run to the scenario's duration."""
        self._sim.run()

    def fork(self) -> Simulation:
        """An independent deep copy that continues exactly as this one would."""
        return Simulation(self.scenario, _core_sim=self._sim.fork())

    # -- control -------------------------------------------------------------------------------

    def set_queue_limit(
        self,
        link: str,
        limit: str | None = None,
        *,
        packets: int | None = None,
        bytes: int | None = None,
    ) -> None:
        """Change the qdisc limit of queue ``link`` (``"r0->r1"``) from now on: ``limit`` as in
        a scenario (``"5p"``, ``"30KB"``) or ``packets=`` / ``bytes=`` integers."""
        if limit is not None:
            if packets is not None or bytes is not None:
                raise ActionError("give either limit or packets/bytes, not both")
            try:
                parsed = parse_queue_limit(limit)
            except UnitError as e:
                raise ActionError(f"queue limit {e}") from None
            packets, bytes = parsed.packets, parsed.bytes
        if packets is None and bytes is None:
            raise ActionError("set_queue_limit needs a limit such as '100p' or packets=/bytes=")
        self._sim.set_queue_limit(link, packets=packets, bytes=bytes)

    # -- agents in the loop -----------------------------------------------------------------
    # Actions are dicts as in crates/l4sim-py/API.md ("set_cwnd", "set_drop_prob",
    # "set_dualpi2", "set_flow_limit", "set_queue_limit", "set_link_rate").

    def apply(self, action: dict[str, Any]) -> None:
        """Apply ``action`` now."""
        self._sim.apply(action)

    def schedule(self, action: dict[str, Any], delay: float | int | str) -> None:
        """Apply ``action`` after a fixed latency ``delay`` (seconds or ``"30ms"``)."""
        self.schedule_ns(action, to_ns(delay, "delay", ActionError))

    def schedule_ns(self, action: dict[str, Any], delay_ns: int) -> None:
        self._sim.schedule(action, int(delay_ns))

    def send_control(self, flow: int, action: dict[str, Any]) -> None:
        """Send ``action`` as one packet on control flow ``flow`` (kind ``"control"``); it
        takes effect when the packet reaches the flow's destination (never, if dropped)."""
        self._sim.send_control(int(flow), action)

    def send_message(self, flow: int, token: int) -> None:
        """Send ``token`` (an int below 2**63, e.g. the index of an observation the agent
        keeps) as one packet on control flow ``flow``; when it arrives,
        :meth:`run_until_trigger` returns and :meth:`take_messages` lists it: a remote agent
        acts on the state it carried, when it gets there (paper 000)."""
        self._sim.send_message(int(flow), int(token))

    def take_messages(self) -> list[dict[str, Any]]:
        """Control messages delivered since the last call (``flow``, ``token``, ``sent_s``,
        ``delivered_s``), in order of arrival."""
        return list(self._sim.take_messages())

    def set_packet_trigger(self, link: str, every: int | None) -> None:
        """Make :meth:`run_until_trigger` stop after every ``every`` packets dequeued at
        ``link`` (``None``: no trigger)."""
        self._sim.set_packet_trigger(link, every)

    def run_until_trigger(self, t: float | int | str) -> bool:
        """Like :meth:`run_until`, but return early (``True``) when a packet trigger fires or
        a control message (:meth:`send_message`) is delivered."""
        return self._sim.run_until_trigger(to_ns(t))

    def run_until_trigger_ns(self, t_ns: int) -> bool:
        return self._sim.run_until_trigger(int(t_ns))

    def observe(self) -> dict[str, Any]:
        """A snapshot for agents: ``{"time_s", "flows": {column: list}, "queues": {...}}``
        (columns in crates/l4sim-py/API.md; counters are cumulative)."""
        return self._sim.observe()

    def observe_flow_queues(self, link: str) -> dict[str, list[Any]]:
        """Per flow: packets in its flow queue at ``link`` (fq, fq_codel, fq_pie) and that
        queue's own limit (fq; NaN otherwise)."""
        return self._sim.observe_flow_queues(link)

    def observe_lfq(self, link: str) -> dict[str, Any]:
        """LFQ's 60 per-flow features at ``link``'s fq with ``lfq_features = true``:
        ``{"names": [...], "features": [[60 floats] per flow]}`` (envs/README.md)."""
        return self._sim.observe_lfq(link)

    # -- results -------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The summary.json contract (without ``wall_time_s``), up to now."""
        return json.loads(self._sim.summary_json())

    def flows(self) -> pl.DataFrame:
        """Per-flow time series (see :data:`FLOW_SCHEMA`)."""
        return columns_to_frame(self._sim.flow_series(), FLOW_SCHEMA)

    def queues(self) -> pl.DataFrame:
        """Per-queue time series (see :data:`QUEUE_SCHEMA`)."""
        return columns_to_frame(self._sim.queue_series(), QUEUE_SCHEMA)

    def conservation(self) -> dict[str, int]:
        """Packet accounting: sent == delivered + dropped_qdisc + dropped_loss + in_flight."""
        return dict(self._sim.conservation())

    def __repr__(self) -> str:
        return (
            f"Simulation({self.scenario.name!r}, now={self.now:.3f}s of "
            f"{self.duration:.3f}s, events={self.events})"
        )


class SimulationBatch:
    """N independent simulations stepped in one call into Rust (``_core.SimBatch``)."""

    def __init__(self, sims: list[Simulation]):
        self.scenarios = [s.scenario for s in sims]
        self._batch = _core_module().SimBatch([s._sim for s in sims])

    def __len__(self) -> int:
        return len(self._batch)

    def _index(self, i: int) -> int:
        if not 0 <= i < len(self.scenarios):
            raise IndexError(f"batch index {i} is outside 0..{len(self.scenarios)}")
        return i

    def get(self, i: int) -> Simulation:
        """A copy of simulation ``i``."""
        return Simulation(self.scenarios[self._index(i)], _core_sim=self._batch.get(i))

    def set(self, i: int, sim: Simulation) -> None:
        self._batch.set(self._index(i), sim._sim)
        self.scenarios[i] = sim.scenario

    def apply(self, i: int, action: dict[str, Any]) -> None:
        self._batch.apply(self._index(i), action)

    def run_until_ns(self, t_ns: list[int]) -> None:
        """Run simulation i to ``t_ns[i]`` (capped at its duration), all in one call."""
        self._batch.run_until(t_ns)

    def start_ns(self, t_ns: list[int]) -> None:
        """Start the step of ``run_until_ns`` and return at once; ``observe(i)`` waits for
        simulation i (so the caller can work on one while others still run), and any other
        call first waits for the whole step."""
        self._batch.start(t_ns)

    def observe(self, i: int) -> dict[str, Any]:
        """Simulation ``i``'s observation, once it has finished the step under way."""
        return self._batch.observe(self._index(i))

    def observe_all(self) -> list[dict[str, Any]]:
        return self._batch.observe_all()
