"""The scenario: topology, flows and run parameters; cross-checks between them; reading
TOML or JSON (:func:`load`, :func:`loads`); writing TOML back; and the expansion into
config.rs's ``SimConfig`` (:meth:`Scenario.to_core_config`).

Quantities are integers on a scenario's attributes (ns, bps, bytes,
:class:`~l4sim.units.QueueLimit`) and unit strings in ``model_dump()`` in both modes
(``"20s"``, ``"100p"``), so ``Scenario.model_validate(s.model_dump()) == s``;
:meth:`Scenario.to_dict` is the same without unset options. A scenario file needs at least
one flow (:meth:`Scenario.require_flows`; a scenario built in Python may leave them out to
inspect its topology). Valid but doubtful input (flows sharing a dumbbell's sender/receiver
pair, a sample interval longer than the run) is a :class:`~l4sim.errors.ScenarioWarning`.
"""

from __future__ import annotations

import json
import sys
import tomllib
import warnings
from array import array
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

import pydantic
import tomli_w
from pydantic import BaseModel, Field, ValidationError, model_validator

from l4sim.errors import ScenarioError, ScenarioWarning
from l4sim.scenario.capture import Capture
from l4sim.scenario.fields import MAX_FLOWS, PositiveTime, _Model
from l4sim.scenario.flows import CommandFlow, ControlFlow, Flow, TcpFlow, UdpFlow
from l4sim.scenario.messages import _describe, _prefix
from l4sim.scenario.topology import Dumbbell, Topology, _check_ends, _routed
from l4sim.units import format_time


class ResolvedFlow(BaseModel):
    """One flow after ``count`` expansion and endpoint defaults (index = core flow id)."""

    index: int
    source_index: int
    spec: TcpFlow | UdpFlow | ControlFlow | CommandFlow
    src: str
    dst: str


class Scenario(_Model):
    """A complete simulation: topology, flows and run parameters."""

    name: str = Field(
        "scenario",
        description="The run's name; `l4sim run` writes to out/NAME unless --out is given.",
    )
    description: str = Field("", description="Free text, kept in the results.")
    seed: Annotated[int, Field(ge=0, lt=2**64)] = Field(
        1,
        description="Seeds every random stream of the run: same seed, same result, byte for byte.",
    )
    duration: PositiveTime = Field(description="Simulated time the run lasts.")
    sample_interval: PositiveTime = Field(
        "100ms",  # type: ignore[arg-type]
        description="Period of the per-flow and per-queue time series (flows.parquet, "
        "queues.parquet).",
    )
    topology: Topology = Field(description="The network: one preset and its links.")
    flows: list[Flow] = Field(
        default_factory=list,
        description="The traffic: TCP, UDP and control flows (and command flows, which only "
        "`l4sim emulate` runs).",
    )
    captures: list[Capture] = Field(
        default_factory=list,
        description="Packet captures: pcap files of link directions, written into the "
        "run's output directory (docs/captures.md).",
    )

    @model_validator(mode="after")
    def _cross_checks(self) -> Scenario:
        topo = self.topology
        total = sum(f.count for f in self.flows)
        if total > MAX_FLOWS:
            raise ValueError(
                f"the flows add up to {total} flows (with count), more than the {MAX_FLOWS} "
                "allowed (a sane bound for one simulation)"
            )
        explicit_pairs = isinstance(topo, Dumbbell) and topo.pairs is not None
        if isinstance(topo, Dumbbell) and topo.pairs is None:
            topo.pairs = max(1, total)
        names = topo.node_names()
        known = set(names)
        flows = self.resolved_flows()
        pairs = [(f.src, f.dst) for f in flows if f.src in known and f.dst in known]
        pairs = [(a, b) for a, b in pairs if a != b]
        routed = dict(zip(pairs, _routed(topo, pairs), strict=True)) if pairs else {}
        for rf in flows:
            where = f"flows[{rf.source_index}]"
            spec = rf.spec
            _check_ends(where, (("src", rf.src), ("dst", rf.dst)), known, names, "the topology")
            if rf.src == rf.dst:
                raise ValueError(f"{where} has the same src and dst {rf.src!r}")
            if not routed[(rf.src, rf.dst)]:
                raise ValueError(f"{where}: there is no path from {rf.src!r} to {rf.dst!r}")
            if spec.start >= self.duration:
                raise ValueError(
                    f"{where}.start {format_time(spec.start)!r} is not before the end of the "
                    f"run (duration {format_time(self.duration)!r})"
                )
            if spec.stop is not None and spec.stop <= spec.start:
                raise ValueError(
                    f"{where}.stop {format_time(spec.stop)!r} must be after its start "
                    f"{format_time(spec.start)!r}"
                )
        self._check_captures(len(flows))
        if explicit_pairs and isinstance(topo, Dumbbell):
            _warn_shared_pairs(topo, flows)
        if self.sample_interval > self.duration:
            _warn(
                f"sample_interval {format_time(self.sample_interval)!r} is longer than "
                f"duration {format_time(self.duration)!r}, so the time series "
                "(flows.parquet, queues.parquet) have at most one row; set sample_interval "
                "to a fraction of the duration"
            )
        return self

    def _check_captures(self, n_flows: int) -> None:
        """Each capture names a link direction and flows of this scenario, and its own file."""
        links = [f"{a}->{b}" for a, b, _ in self.topology.links()]
        links += [f"{b}->{a}" for a, b, _ in self.topology.links()]
        files: set[str] = set()
        for i, c in enumerate(self.captures):
            where = f"captures[{i}]"
            if c.link not in links:
                shown = ", ".join(links[:8]) + (", ..." if len(links) > 8 else "")
                raise ValueError(
                    f"{where}.link {c.link!r} is not a link direction of the topology; "
                    f"known: {shown}"
                )
            for f in c.flows or []:
                if f >= n_flows:
                    raise ValueError(
                        f"{where}.flows names flow {f}, but the scenario has flows 0 to "
                        f"{n_flows - 1}"
                    )
            key = str(PurePosixPath(c.file.replace("\\", "/")))
            if key in files:
                raise ValueError(f"{where}.file {c.file!r} is already the file of another capture")
            files.add(key)

    def require_flows(self, source: str | None = None) -> Scenario:
        """This scenario, or a :class:`ScenarioError` if it has no flows (a run without
        traffic measures nothing; :func:`load` and :func:`loads` check it, and so should
        whatever runs a scenario built in Python)."""
        if not self.flows:
            raise ScenarioError(_prefix(source) + NO_FLOWS)
        return self

    # -- derived views -----------------------------------------------------------------------

    def node_names(self) -> list[str]:
        return self.topology.node_names()

    def resolved_flows(self) -> list[ResolvedFlow]:
        """Flows after ``count`` replication, with default endpoints filled in."""
        out: list[ResolvedFlow] = []
        for j, spec in enumerate(self.flows):
            for _ in range(spec.count):
                i = len(out)
                default = self.topology.default_endpoints(i)
                src = spec.src if spec.src is not None else (default[0] if default else None)
                dst = spec.dst if spec.dst is not None else (default[1] if default else None)
                if src is None or dst is None:
                    missing = "src" if src is None else "dst"
                    raise ValueError(
                        f"flows[{j}].{missing} is required with a custom topology; "
                        f"known nodes: {', '.join(self.node_names())}"
                    )
                out.append(ResolvedFlow(index=i, source_index=j, spec=spec, src=src, dst=dst))
        return out

    def to_core_config(self, *, without_commands: bool = False) -> dict[str, Any]:
        """The normalised configuration of ``config.rs`` (``SimConfig``) as a JSON-able dict.
        A command flow is an error (the simulator cannot run a program), or left out with
        ``without_commands`` (the emulator's router, where the program itself runs)."""
        names = self.node_names()
        index = {n: i for i, n in enumerate(names)}
        links = [spec.to_core(index[a], index[b]) for a, b, spec in self.topology.links()]
        resolved = self.resolved_flows()
        for rf in resolved:
            if isinstance(rf.spec, CommandFlow) and not without_commands:
                raise ScenarioError(
                    f"flows[{rf.source_index}] is a command flow (an external program), which "
                    "only `l4sim emulate` runs; the simulator cannot run it"
                )
        flows = [
            rf.spec.to_core(index[rf.src], index[rf.dst])
            for rf in resolved
            if not isinstance(rf.spec, CommandFlow)
        ]
        out = {
            "seed": self.seed,
            "duration_ns": self.duration,
            "sample_interval_ns": self.sample_interval,
            "nodes": [{"name": n} for n in names],
            "links": links,
            "flows": flows,
        }
        wifi = self.topology.core_wifi()
        if wifi:
            out["wifi"] = wifi
        return out

    def to_core_json(self) -> str:
        return core_json(self.to_core_config())

    # -- construction and round trips --------------------------------------------------------

    @classmethod
    def parse(cls, data: Any, *, source: str | None = None) -> Scenario:
        """Validate ``data`` (a dict as read from TOML); errors become :class:`ScenarioError`."""
        if not isinstance(data, dict):
            raise ScenarioError(_prefix(source) + "a scenario must be a table of keys")
        try:
            try:
                return cls.model_validate(data)
            except ValidationError as e:
                message = _describe(e, cls)
        except RecursionError:
            raise ScenarioError(_prefix(source) + _TOO_DEEP) from None
        raise ScenarioError(_prefix(source) + message)

    def __setattr__(self, name: str, value: Any) -> None:
        """Assigning a key validates the whole scenario again (``sc.duration = "banana"`` is
        a :class:`ScenarioError`, not a scenario that fails later in the core)."""
        if name not in type(self).model_fields:
            super().__setattr__(name, value)
            return
        data = self.model_dump(exclude_none=True, by_alias=True)
        field = type(self).model_fields[name]
        data[field.alias or name] = value
        checked = Scenario.parse(data, source=self.name)
        self.__dict__.update(checked.__dict__)

    def with_overrides(self, **changes: Any) -> Scenario:
        """A validated copy with top-level keys replaced, e.g. ``seed=3, duration="5s"``."""
        data = self.to_dict()
        data.update({k: v for k, v in changes.items() if v is not None})
        return Scenario.parse(data, source="override")

    def to_dict(self) -> dict[str, Any]:
        """Plain data with unit strings; ``Scenario.parse(s.to_dict())`` gives ``s`` back."""
        data = self.model_dump(mode="json", exclude_none=True, by_alias=True)
        if not data.get("captures"):
            data.pop("captures", None)  # scenarios without captures read as before
        return _tags_first(data)

    def to_toml(self) -> str:
        """The scenario as TOML text that :func:`load` reads back to an equal scenario."""
        return tomli_w.dumps(self.to_dict())


NO_FLOWS = (
    'the scenario has no flows; add at least one [[flows]] table (e.g. kind = "tcp"), '
    "since a run without traffic measures nothing"
)
"""The sentence of :meth:`Scenario.require_flows`."""

_TOO_DEEP = (
    "the scenario is nested too deeply (tables or arrays inside each other hundreds of levels "
    "down); a scenario needs only a few levels, see docs/reference/scenario.md"
)


_INTERNAL = (str(Path(pydantic.__file__).parent), str(Path(__file__).parent))


def _warn(message: str) -> None:
    """A :class:`ScenarioWarning` attributed to the first caller outside pydantic and this
    package (the user's ``load`` or ``Scenario(...)`` line), not to a validator."""
    frame = sys._getframe(1)
    level = 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_INTERNAL):
        frame = frame.f_back
        level += 1
    warnings.warn(message, ScenarioWarning, stacklevel=level)


def _warn_shared_pairs(topo: Dumbbell, flows: list[ResolvedFlow]) -> None:
    """A :class:`ScenarioWarning` when flows without ``src``/``dst`` share a dumbbell's
    sender/receiver pair because ``pairs`` (or ``access_delays``) gives fewer pairs than
    there are such flows (flow i takes pair i mod pairs)."""
    defaults = [f for f in flows if f.spec.src is None and f.spec.dst is None]
    n = topo.pairs or 1
    if len(defaults) <= n:
        return
    groups: dict[tuple[str, str], list[int]] = {}
    for f in defaults:
        groups.setdefault((f.src, f.dst), []).append(f.index)
    shared = [(pair, ids) for pair, ids in groups.items() if len(ids) > 1]
    if not shared:
        return
    shown = [f"flows {_join(ids)} share {a} → {b}" for (a, b), ids in shared[:3]]
    more = f" (and {len(shared) - 3} more pairs)" if len(shared) > 3 else ""
    given = (
        f"topology.access_delays gives {n} pair{'s' if n > 1 else ''}"
        if topo.access_delays is not None
        else f"topology.pairs = {n}"
    )
    _warn(
        f"{given}, fewer than the {len(defaults)} flows without src and dst, so "
        f"{'; '.join(shown)}{more}: raise pairs to {len(defaults)} or give those flows "
        "their own src and dst"
    )


def _join(ids: list[int]) -> str:
    """``[0, 1, 2]`` → ``"0, 1 and 2"``; long lists cut short."""
    words = [str(i) for i in ids[:6]] + (["…"] if len(ids) > 6 else [])
    return ", ".join(words[:-1]) + " and " + words[-1]


def _tags_first(data: Any) -> Any:
    """Put ``preset`` / ``kind`` first in every table, for readable copies."""
    if isinstance(data, list):
        return [_tags_first(x) for x in data]
    if isinstance(data, dict):
        head = {k: data[k] for k in ("preset", "kind") if k in data}
        return head | {k: _tags_first(v) for k, v in data.items() if k not in head}
    return data


def core_json(config: dict[str, Any]) -> str:
    """:meth:`Scenario.to_core_config`'s dict as JSON. A trace's opportunities (an
    ``array``) are written in pieces, never as a list of Python ints (36 bytes each: a trace
    of 50 million lines would take 1.8 GB that way)."""
    arrays: list[array[int]] = []

    def mark(obj: Any) -> str:
        if not isinstance(obj, array):
            raise TypeError(f"{type(obj).__name__} is not JSON serializable")
        arrays.append(obj)
        return f"\x00{len(arrays) - 1}"

    text = json.dumps(config, default=mark)
    for i, values in enumerate(arrays):
        step = 1 << 16
        pieces = (",".join(map(str, values[k : k + step])) for k in range(0, len(values), step))
        text = text.replace(f'"\\u0000{i}"', "[" + ",".join(pieces) + "]", 1)
    return text


def load(path: str | Path) -> Scenario:
    """Read a scenario from a TOML (or JSON) file; every problem is a :class:`ScenarioError`
    (a file without flows too). A UTF-8 byte order mark is skipped."""
    from l4sim import files

    path = Path(path)
    name = path.name
    data = files.read_input(path, "scenario file", files.MAX_SCENARIO_BYTES, ScenarioError)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(f"{name}: the file is not UTF-8 text") from None
    with files.relative_to(path.parent):  # traces and weights are named beside the scenario
        return loads(text, source=name, json_format=path.suffix == ".json", default_name=path.stem)


def loads(
    text: str,
    *,
    source: str | None = None,
    json_format: bool = False,
    default_name: str | None = None,
) -> Scenario:
    """Parse scenario text (TOML, or JSON with ``json_format``); errors name ``source``.
    A leading UTF-8 byte order mark is skipped; text without flows, or nested too deeply
    to parse, is a :class:`ScenarioError`."""
    name = source or "scenario"
    if text.startswith("\ufeff"):  # a UTF-8 byte order mark, as some Windows editors write
        text = text[1:]
    if not text.strip():
        raise ScenarioError(
            f"{name}: the file is empty; a scenario needs at least duration, topology and flows"
        )
    try:
        if json_format:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                raise ScenarioError(
                    f"{name}: not valid JSON ({e.msg} at line {e.lineno})"
                ) from None
        else:
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise ScenarioError(f"{name}: not valid TOML ({e})") from None
    except RecursionError:
        raise ScenarioError(f"{name}: {_TOO_DEEP}") from None
    if isinstance(data, dict) and default_name:
        data.setdefault("name", default_name)
    return Scenario.parse(data, source=source).require_flows(source)
