"""Scenario models: the one place that validates user input.

A scenario is a TOML file (or the same structure built in Python) that names a topology
preset, the flows, and run parameters, with every quantity written as a unit string (see
:mod:`l4sim.units`). :meth:`Scenario.to_core_config` expands presets into the normalised
configuration of ``crates/l4sim-core/src/config.rs`` (node indices, ns, bps, bytes).

Every problem is reported as a :class:`ScenarioError` whose message is one sentence naming
the file, the key path (``flows[2].cca``), the bad value and what is allowed; every number
has an upper bound its core type holds. Valid but doubtful input (flows sharing a
dumbbell's pair, a sample interval longer than the run) is a :class:`ScenarioWarning`.

Modules: :mod:`.fields` (unit field types, the base model and its core key mapping),
:mod:`.qdiscs`, :mod:`.topology` (links, presets, reachability), :mod:`.flows`, :mod:`.ccas`
(a TCP flow's congestion control and its options), :mod:`.capture` (``[[captures]]``),
:mod:`.model` (``Scenario``, ``load``, ``loads``) and :mod:`.messages` (errors as one
sentence).
"""

from l4sim.errors import L4simError, ScenarioError, ScenarioWarning
from l4sim.scenario.capture import Capture
from l4sim.scenario.ccas import (
    CCA_KINDS,
    Bbr,
    Bic,
    Cca,
    Cubic,
    Dctcp,
    External,
    NewReno,
    Prague,
    Vegas,
)
from l4sim.scenario.fields import (
    U32,
    Buckets,
    Count,
    Flag,
    Fraction,
    Gain,
    Limit,
    Many,
    PacketLimit,
    PacketSize,
    PositiveTime,
    Probability,
    Rate,
    Size,
    Size32,
    Time,
    TimeOrPackets,
)
from l4sim.scenario.flows import (
    FLOW_KINDS,
    CommandFlow,
    ControlFlow,
    Delack,
    Flow,
    TcpFlow,
    UdpFlow,
)
from l4sim.scenario.model import ResolvedFlow, Scenario, core_json, load, loads
from l4sim.scenario.qdiscs import (
    QDISC_ALIASES,
    QDISC_KINDS,
    Codel,
    DualPi2,
    EcnMask,
    ExternalQdisc,
    Fifo,
    Fq,
    FqCodel,
    FqL4s,
    FqPie,
    PfifoHeadDrop,
    Pie,
    Qdisc,
    Red,
)
from l4sim.scenario.topology import (
    TOPOLOGY_PRESETS,
    AccessSpec,
    Custom,
    CustomLink,
    Dumbbell,
    LinkSpec,
    PathTopology,
    Topology,
    TwoHost,
)

__all__ = [
    "CCA_KINDS",
    "FLOW_KINDS",
    "QDISC_ALIASES",
    "QDISC_KINDS",
    "TOPOLOGY_PRESETS",
    "U32",
    "AccessSpec",
    "Bbr",
    "Bic",
    "Buckets",
    "Capture",
    "Cca",
    "Codel",
    "CommandFlow",
    "ControlFlow",
    "Count",
    "Cubic",
    "Custom",
    "CustomLink",
    "Dctcp",
    "Delack",
    "DualPi2",
    "Dumbbell",
    "EcnMask",
    "External",
    "ExternalQdisc",
    "Fifo",
    "Flag",
    "Flow",
    "Fq",
    "FqCodel",
    "FqL4s",
    "FqPie",
    "Fraction",
    "Gain",
    "L4simError",
    "Limit",
    "LinkSpec",
    "Many",
    "NewReno",
    "PacketLimit",
    "PacketSize",
    "PathTopology",
    "PfifoHeadDrop",
    "Pie",
    "PositiveTime",
    "Prague",
    "Probability",
    "Qdisc",
    "Rate",
    "Red",
    "ResolvedFlow",
    "Scenario",
    "ScenarioError",
    "ScenarioWarning",
    "Size",
    "Size32",
    "TcpFlow",
    "Time",
    "TimeOrPackets",
    "Topology",
    "TwoHost",
    "UdpFlow",
    "Vegas",
    "core_json",
    "load",
    "loads",
]
