"""A thin wrapper over the Rust core's ``l4sim._core.Simulation``: no simulation logic here.

It converts between the Python-side conventions (a validated :class:`~l4sim.scenario.Scenario`,
seconds or unit strings, polars DataFrames) and the binding's (normalised JSON, integer
nanoseconds, columnar dicts).
"""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from l4sim.engine import budget
from l4sim.engine.guards import OneCallAtATime, capture_path
from l4sim.engine.guards import int_arg as _int_arg
from l4sim.engine.guards import short as _short
from l4sim.engine.guards import str_arg as _str_arg
from l4sim.errors import ActionError, CoreError, EnvConfigError, L4simError, ScenarioError
from l4sim.native import core as _core_module
from l4sim.scenario import Scenario, core_json, load
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


U64_MAX = 2**64 - 1
"""The largest value of the core's 64-bit counters and times (ns)."""
MAX_TIME_NS = 2**62
"""The largest time or delay accepted, in ns (about 146 years; as ``l4sim.units``): the
core adds delays to times in 64 bits."""
MAX_LIMIT = 2**62
"""The largest queue limit accepted, in packets or bytes (as ``l4sim.units``)."""


def to_ns(
    t: float | int | str, name: str = "time", error: type[L4simError] = EnvConfigError
) -> int:
    """Seconds (``1.5``) or a time string (``"1500ms"``) → integer nanoseconds, at most
    :data:`MAX_TIME_NS`. Bad input raises ``error`` (an env or API option by default) with
    one sentence naming ``name``."""
    if isinstance(t, str):
        try:
            ns = parse_time(t)
        except UnitError as e:
            raise error(f"{name} {e}") from None
    elif isinstance(t, bool) or not isinstance(t, int | float | np.number):
        raise error(
            f"{name} {_short(t)} must be seconds (a number, zero or more) or a string such as "
            "'20ms'"
        )
    elif not math.isfinite(t) or t < 0:
        raise error(
            f"{name} {t!r} must be seconds (a finite number, zero or more) or a string such "
            "as '20ms'"
        )
    elif t > MAX_TIME_NS / 1e9:
        ns = MAX_TIME_NS + 1
    else:
        ns = round(t * 1_000_000_000)
    if ns > MAX_TIME_NS:
        raise error(
            f"{name} {_short(t)} is too large; at most {MAX_TIME_NS // 10**9} s (about 146 years)"
        )
    return ns


@functools.cache
def _action_fields() -> dict[str, tuple[dict[str, dict[str, Any]], list[str]]]:
    """Per action kind: its fields' JSON Schemas and the required ones (the core's
    contract, ``schemas.action``)."""
    out: dict[str, tuple[dict[str, dict[str, Any]], list[str]]] = {}
    for alt in _core_module().contract()["schemas"]["action"].get("oneOf", []):
        props = dict(alt.get("properties", {}))
        kind = props.pop("kind", {}).get("const")
        if isinstance(kind, str):
            required = [k for k in alt.get("required", []) if k != "kind"]
            out[kind] = (props, required)
    return out


_INT_RANGES = {"uint": (0, U64_MAX), "uint64": (0, U64_MAX), "uint32": (0, 2**32 - 1)}


def _field_problem(kind: str, key: str, value: object, schema: dict[str, Any]) -> str | None:
    """Why ``value`` does not fit field ``key`` of action ``kind`` (None if it does)."""
    types = schema.get("type", [])
    types = [types] if isinstance(types, str) else list(types)
    if value is None:
        return None if "null" in types else f"action {kind}: {key} is required, not None"
    where = f"action {kind}: {key} {_short(value)}"
    if "integer" in types:
        lo, hi = _INT_RANGES.get(schema.get("format", ""), (0, U64_MAX))
        ok = isinstance(value, int | np.integer) and not isinstance(value, bool)
        if not ok:
            return f"{where} is not a whole number; allowed: {lo} to {hi}"
        if not lo <= int(value) <= hi:
            return f"{where} is out of range; allowed: {lo} to {hi}"
    elif "number" in types:
        if isinstance(value, bool) or not isinstance(value, int | float | np.number):
            return f"{where} is not a number"
        if not math.isfinite(value):
            return f"{where} is not a finite number"
    elif "string" in types and not isinstance(value, str):
        return f"{where} is not a string (a link name such as 'r0->r1')"
    return None


def _action_problem(action: object) -> str | None:
    """One sentence on what is wrong with ``action`` as the core reads it, if the contract
    tells (None otherwise)."""
    kinds = _action_fields()
    if not isinstance(action, dict):
        return (
            f"action {_short(action)} is not a dict; an action is a dict with a 'kind' "
            f"({', '.join(kinds)}) and its fields, e.g. {{'kind': 'set_cwnd', 'flow': 0, "
            "'cwnd': 10}"
        )
    kind = action.get("kind")
    if not isinstance(kind, str) or kind not in kinds:
        return f"action kind {_short(kind)} is not one of {', '.join(kinds)}"
    fields, required = kinds[kind]
    for key, value in action.items():
        if key == "kind":
            continue
        if key not in fields:
            return f"action {kind} has no field {key!r}; its fields: {', '.join(fields)}"
        problem = _field_problem(kind, key, value, fields[key])
        if problem is not None:
            return problem
    missing = [k for k in required if k not in action]
    if missing:
        return f"action {kind} needs {', '.join(missing)} (its fields: {', '.join(fields)})"
    return None


#: What the core raises when it cannot read an action (a ``ValueError`` naming a serde type,
#: an ``OverflowError``); its own refusals are :class:`ActionError` already.
_UNREADABLE = (ValueError, TypeError, OverflowError)


def _bad_action(action: object, e: Exception) -> ActionError:
    """The core could not read ``action``: an :class:`ActionError` naming the field and what
    it allows. The check runs only then: an action the core reads costs nothing more."""
    if isinstance(e, L4simError):
        return e  # type: ignore[return-value]
    problem = _action_problem(action)
    return ActionError(problem or f"invalid action {_short(action)}: {e}")


def _as_scenario(scenario: object) -> Scenario:
    """A :class:`Scenario` from what :class:`Simulation` accepts, or one sentence."""
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, str | os.PathLike):
        return load(scenario)
    if isinstance(scenario, dict):
        return Scenario.parse(scenario)
    raise ScenarioError(
        f"the scenario to simulate must be a Scenario (l4sim.load(path)), a path to a "
        f"scenario file or a dict of scenario keys, not {_short(scenario)}"
    )


def columns_to_frame(columns: dict[str, list[Any]], schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """A columnar dict of Python lists (the core's ``flow_series()`` / ``queue_series()``)
    → DataFrame with stable dtypes (also when empty). Columns the core adds beyond ``schema``
    are kept with inferred types. (:meth:`Simulation.flows` uses :func:`buffers_to_frame`,
    without a Python object per value; this form stays for comparison.)"""
    series = [
        pl.Series(name, values, dtype=schema.get(name), strict=False)
        for name, values in columns.items()
    ]
    for name, dtype in schema.items():
        if name not in columns:
            series.append(pl.Series(name, [], dtype=dtype))
    return pl.DataFrame(series)


#: Up to this many rows a text column is built from a list (a gather costs ~60 us at least).
_SMALL = 1024


def _buffer_column(name: str, column: tuple[Any, ...], dtype: pl.DataType | None) -> pl.Series:
    """One column of the core's buffer form: ``(numpy dtype, buffer)`` or ``("cat", codes,
    categories)`` (``crates/l4sim-py/src/columns.rs``)."""
    kind, data = column[0], column[1]
    if kind == "cat":
        codes, names = np.frombuffer(data, dtype="u4"), column[2]
        if len(codes) <= _SMALL:
            out = pl.Series(name, [names[i] for i in codes.tolist()], dtype=pl.String())
        else:
            out = pl.Series(name, names, dtype=pl.String()).gather(pl.Series(codes))
    else:
        out = pl.Series(name, np.frombuffer(data, dtype=kind))  # no copy: the buffer stays
    return out if dtype is None or out.dtype == dtype else out.cast(dtype)


def buffers_to_frame(
    columns: dict[str, tuple[Any, ...]], schema: dict[str, pl.DataType]
) -> pl.DataFrame:
    """The core's columns as buffers (``flow_columns()`` / ``queue_columns()``) →
    DataFrame with ``schema``'s dtypes, the same values as :func:`columns_to_frame` of the
    list form. Numbers go from the core's buffers to polars through numpy without a copy nor
    a Python object per value; text columns are codes into a few strings."""
    series = [_buffer_column(name, col, schema.get(name)) for name, col in columns.items()]
    for name, dtype in schema.items():
        if name not in columns:
            series.append(pl.Series(name, [], dtype=dtype))
    return pl.DataFrame(series)


class Simulation:
    """A running simulation of a scenario; advance it with :meth:`run_until` or :meth:`run`.

    >>> sim = Simulation(l4sim.load("scenarios/demo.toml"))
    >>> sim.run_until("5s"); other = sim.fork(); sim.run()
    """

    def __init__(
        self,
        scenario: Scenario | str | Path | dict[str, Any],
        *,
        memory_limit: int | str | None = None,
        streaming: bool = False,
        _core_sim: Any = None,
    ):
        """Build the simulation of ``scenario`` (a :class:`~l4sim.scenario.Scenario`, a path
        to a scenario file, or a dict of scenario keys), at time 0.

        Its peak memory is estimated first (:mod:`l4sim.engine.budget`; forks count too): above the
        budget (``memory_limit``: bytes or a size such as ``"4GiB"``, 0 or ``"none"``: no
        check; default ``$L4SIM_MEMORY_LIMIT``, else half the available memory) it raises
        :class:`~l4sim.engine.budget.MemoryBudgetError`. ``streaming=True``: the caller takes the
        series out as the run goes (:meth:`drain_series`, at least every 1 % of the run)."""
        self.scenario: Scenario = _as_scenario(scenario)
        config = self.scenario.to_core_config()
        name, limit = self.scenario.name, memory_limit
        budget.check(config, name=name, memory_limit=limit, streaming=streaming, holder=self)
        if _core_sim is not None:
            self._sim = OneCallAtATime(_core_sim)
            return
        config_json = core_json(config)
        del config  # not held while the core builds (hundreds of MB with 100 000 flows)
        core = _core_module()
        try:
            self._sim = OneCallAtATime(core.Simulation(config_json))
        except CoreError as e:
            msg = f"the simulator core rejected scenario {self.scenario.name!r}: {e}"
            raise CoreError(msg) from None
        if not streaming:  # room for the whole run's series at once: no copies as they grow
            self._sim.reserve_series()

    @classmethod
    def _wrap(cls, scenario: Scenario, core_sim: Any) -> Simulation:
        """Wrap a checked core simulation (a fork, a batch's copy): no second estimate."""
        sim = cls.__new__(cls)
        sim.scenario = scenario
        sim._sim = OneCallAtATime(core_sim)
        return sim

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
        self._sim.run_until(to_ns(t, "run_until time"))

    def run_until_ns(self, t_ns: int) -> None:
        """:meth:`run_until` with integer nanoseconds."""
        self._sim.run_until(_int_arg(t_ns, "run_until_ns t_ns", 0, U64_MAX, "ns", EnvConfigError))

    def run(self) -> None:
        """Run to the scenario's duration."""
        self._sim.run()

    def fork(self) -> Simulation:
        """An independent deep copy that continues exactly as this one would."""
        return budget.forked(self, lambda: Simulation._wrap(self.scenario, self._sim.fork()))

    def capture(
        self, link: str, file: Any, *, snaplen: int = 128, flows: Any = None, ip: int = 4
    ) -> None:
        """Pcap ``file`` of what leaves ``link`` from now on (docs/captures.md); not in a fork."""
        if flows is not None and not all(isinstance(f, int | np.integer) for f in flows):
            raise ActionError(f"capture flows {_short(flows)} must be flow indices (whole numbers)")
        self._sim.add_capture(
            _str_arg(link, "capture link"), capture_path(file), snaplen, flows, ip
        )

    def close_captures(self) -> list[dict[str, Any]]:
        """Finish every capture's file: [{"file", "link", "packets"}]."""
        return self._sim.finish_captures()

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
        if packets is not None:
            packets = _int_arg(packets, "set_queue_limit packets", 1, MAX_LIMIT, "packets")
        if bytes is not None:
            bytes = _int_arg(bytes, "set_queue_limit bytes", 1, MAX_LIMIT, "bytes")
        self._sim.set_queue_limit(_str_arg(link, "set_queue_limit link"), packets, bytes)

    # -- the control API (core: engine/control_api.rs, types control.rs) ------------------
    # Actions are dicts as in crates/l4sim-py/API.md ("set_cwnd", "set_drop_prob",
    # "set_qdisc", "set_queue_limit", "set_link_rate").

    def apply(self, action: dict[str, Any]) -> None:
        """Apply ``action`` now."""
        try:
            self._sim.apply(action)
        except _UNREADABLE as e:
            raise _bad_action(action, e) from None

    def schedule(self, action: dict[str, Any], delay: float | int | str) -> None:
        """Apply ``action`` after a fixed latency ``delay`` (seconds or ``"30ms"``)."""
        self.schedule_ns(action, to_ns(delay, "schedule delay", ActionError))

    def schedule_ns(self, action: dict[str, Any], delay_ns: int) -> None:
        delay_ns = _int_arg(delay_ns, "schedule_ns delay_ns", 0, MAX_TIME_NS, "ns")
        try:
            self._sim.schedule(action, delay_ns)
        except _UNREADABLE as e:
            raise _bad_action(action, e) from None

    def send_control(self, flow: int, action: dict[str, Any]) -> None:
        """Send ``action`` as one packet on control flow ``flow`` (kind ``"control"``); it
        takes effect when the packet reaches the flow's destination (never, if dropped)."""
        flow = _int_arg(flow, "send_control flow", 0, U64_MAX, "")
        try:
            self._sim.send_control(flow, action)
        except _UNREADABLE as e:
            raise _bad_action(action, e) from None

    def send_message(self, flow: int, token: int) -> None:
        """Send ``token`` (an int below 2**63, e.g. the index of an observation the agent
        keeps) as one packet on control flow ``flow``; when it arrives,
        :meth:`run_until_trigger` returns and :meth:`take_messages` lists it: a remote agent
        acts on the state it carried, when it gets there (the remote-brain set-up)."""
        flow = _int_arg(flow, "send_message flow", 0, U64_MAX, "")
        self._sim.send_message(flow, _int_arg(token, "send_message token", 0, 2**63 - 1, ""))

    def take_messages(self) -> list[dict[str, Any]]:
        """Control messages delivered since the last call (``flow``, ``token``, ``sent_s``,
        ``delivered_s``), in order of arrival."""
        return list(self._sim.take_messages())

    def set_packet_trigger(self, link: str, every: int | None) -> None:
        """Make :meth:`run_until_trigger` stop after every ``every`` packets dequeued at
        ``link`` (``None``: no trigger)."""
        if every is not None:
            every = _int_arg(every, "set_packet_trigger every", 1, U64_MAX, "packets")
        self._sim.set_packet_trigger(_str_arg(link, "set_packet_trigger link"), every)

    def run_until_trigger(self, t: float | int | str) -> bool:
        """Like :meth:`run_until`, but return early (``True``) when a packet trigger fires or
        a control message (:meth:`send_message`) is delivered."""
        return self._sim.run_until_trigger(to_ns(t, "run_until_trigger time"))

    def run_until_trigger_ns(self, t_ns: int) -> bool:
        t_ns = _int_arg(t_ns, "run_until_trigger_ns t_ns", 0, U64_MAX, "ns", EnvConfigError)
        return self._sim.run_until_trigger(t_ns)

    def observe(self) -> dict[str, Any]:
        """A snapshot for agents: ``{"time_s", "flows": {column: list}, "queues": {...}}``
        (columns in crates/l4sim-py/API.md; counters are cumulative)."""
        return self._sim.observe()

    def observe_media(self, flow: int, since_ns: int = 0) -> dict[str, Any]:
        """What the sender of video flow ``flow`` knows now: its target (``target_bps``),
        bytes sent and received, its RFC 8888 feedback's totals (``fb_acked``, ``fb_lost``,
        ``fb_ce``), its RTT from feedback (``srtt_s``, ``latest_rtt_s``; NaN until a
        ``set_media_rate`` action starts the sampling), and over ``(since_ns, now]`` its
        completed frames' delays (``frame_delays_s``), ``late_frames`` and ``frames_made``."""
        flow = _int_arg(flow, "observe_media flow", 0, U64_MAX, "")
        since_ns = _int_arg(since_ns, "observe_media since_ns", 0, U64_MAX, "ns")
        return self._sim.observe_media(flow, since_ns)

    def observe_flow_queues(self, link: str) -> dict[str, list[Any]]:
        """Per flow: packets in its flow queue at ``link`` (fq, fq_codel, fq_pie) and that
        queue's own limit (fq; NaN otherwise)."""
        return self._sim.observe_flow_queues(link)

    def observe_policy(self, link: str) -> dict[str, Any]:
        """The features the learned policy at ``link`` keeps, per flow (e.g. LFQ's 60 at an
        fq with ``policy = {kind = "lfq"}``, envs/README.md): ``{"kind", "names": [...],
        "features": [[floats] per flow]}``."""
        return self._sim.observe_policy(link)

    # -- results -------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The summary.json contract (without ``wall_time_s``), up to now."""
        return json.loads(self._sim.summary_json())

    def flows(self) -> pl.DataFrame:
        """Per-flow time series (see :data:`FLOW_SCHEMA`): the rows sampled so far, less
        those :meth:`drain_series` took."""
        return buffers_to_frame(self._sim.flow_columns(), FLOW_SCHEMA)

    def queues(self) -> pl.DataFrame:
        """Per-queue time series (see :data:`QUEUE_SCHEMA`): the rows sampled so far, less
        those :meth:`drain_series` took."""
        return buffers_to_frame(self._sim.queue_columns(), QUEUE_SCHEMA)

    def drain_series(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """Take the time series' rows sampled since the last call (or the start): the flows
        and queues DataFrames of :meth:`flows` and :meth:`queues`, which then start empty
        again. Writing each pair out as it comes (e.g. to Parquet, a row group each) keeps a
        long run's memory bounded; the summary does not depend on the series."""
        flows = buffers_to_frame(self._sim.take_flow_columns(), FLOW_SCHEMA)
        queues = buffers_to_frame(self._sim.take_queue_columns(), QUEUE_SCHEMA)
        return flows, queues

    def series_rows(self) -> tuple[int, int]:
        """Rows the time series hold now (flows, queues), without building them."""
        flows, queues = self._sim.series_rows()
        return int(flows), int(queues)

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
        if not all(isinstance(s, Simulation) for s in sims):
            raise EnvConfigError(f"SimulationBatch takes a list of Simulations, not {_short(sims)}")
        self.scenarios = [s.scenario for s in sims]
        self._batch = _core_module().SimBatch([s._sim._core for s in sims])

    def __len__(self) -> int:
        return len(self._batch)

    def _index(self, i: int) -> int:
        n = len(self.scenarios)
        if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < n:
            raise IndexError(f"batch index {i!r} is outside 0..{n}")
        return int(i)

    def get(self, i: int) -> Simulation:
        """A copy of simulation ``i``."""
        return Simulation._wrap(self.scenarios[self._index(i)], self._batch.get(i))

    def set(self, i: int, sim: Simulation) -> None:
        self._batch.set(self._index(i), sim._sim._core)
        self.scenarios[i] = sim.scenario

    def apply(self, i: int, action: dict[str, Any]) -> None:
        i = self._index(i)
        try:
            self._batch.apply(i, action)
        except _UNREADABLE as e:
            raise _bad_action(action, e) from None

    def _times(self, t_ns: list[int], name: str) -> list[int]:
        """``t_ns`` checked: one time per simulation, each a whole number of ns in range."""
        n = len(self.scenarios)
        if isinstance(t_ns, str | bytes) or not hasattr(t_ns, "__len__"):
            raise EnvConfigError(
                f"{name} t_ns {_short(t_ns)} must be a list of {n} times in ns, one per "
                "simulation of the batch"
            )
        if len(t_ns) != n:
            raise EnvConfigError(
                f"{name} needs {n} times, got {len(t_ns)}; give one time in ns per simulation "
                "of the batch"
            )
        return [
            _int_arg(t, f"{name} t_ns[{k}]", 0, U64_MAX, "ns", EnvConfigError)
            for k, t in enumerate(t_ns)
        ]

    def run_until_ns(self, t_ns: list[int]) -> None:
        """Run simulation i to ``t_ns[i]`` (capped at its duration), all in one call."""
        self._batch.run_until(self._times(t_ns, "run_until_ns"))

    def start_ns(self, t_ns: list[int]) -> None:
        """Start the step of ``run_until_ns`` and return at once; ``observe(i)`` waits for
        simulation i (so the caller can work on one while others still run), and any other
        call first waits for the whole step."""
        self._batch.start(self._times(t_ns, "start_ns"))

    def observe(self, i: int) -> dict[str, Any]:
        """Simulation ``i``'s observation, once it has finished the step under way."""
        return self._batch.observe(self._index(i))

    def observe_all(self) -> list[dict[str, Any]]:
        return self._batch.observe_all()
