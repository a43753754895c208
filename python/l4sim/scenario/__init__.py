"""Scenario models: the one place that validates user input.

A scenario is a TOML file (or the same structure built in Python) that names a topology
preset, the flows, and run parameters, with every quantity written as a unit string (see
:mod:`l4sim.units`). :meth:`Scenario.to_core_config` expands presets into the normalised
configuration of ``crates/l4sim-core/src/config.rs`` (node indices, ns, bps, bytes).

Every problem is reported as a :class:`ScenarioError` whose message is one sentence naming
the file, the key path (``flows[2].cca``), the bad value and what is allowed.

Modules: :mod:`.fields` (unit field types, the base model and its core key mapping),
:mod:`.qdiscs`, :mod:`.topology` (links, presets, reachability), :mod:`.flows`, :mod:`.ccas`
(a TCP flow's congestion control and its options), :mod:`.model` (``Scenario``, ``load``,
``loads``) and :mod:`.messages` (errors as one sentence).
"""

from l4sim.errors import L4simError, ScenarioError
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
    Count,
    Flag,
    Fraction,
    Gain,
    Limit,
    PacketLimit,
    PositiveTime,
    Probability,
    Rate,
    Size,
    Time,
)
from l4sim.scenario.flows import FLOW_KINDS, ControlFlow, Delack, Flow, TcpFlow, UdpFlow
from l4sim.scenario.model import ResolvedFlow, Scenario, load, loads
from l4sim.scenario.qdiscs import (
    QDISC_KINDS,
    AgentQdisc,
    Codel,
    DualPi2,
    EcnMask,
    Fifo,
    Fq,
    FqCodel,
    FqL4s,
    FqPie,
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
    "QDISC_KINDS",
    "TOPOLOGY_PRESETS",
    "AccessSpec",
    "AgentQdisc",
    "Bbr",
    "Bic",
    "Cca",
    "Codel",
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
    "NewReno",
    "PacketLimit",
    "PathTopology",
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
    "Size",
    "TcpFlow",
    "Time",
    "Topology",
    "TwoHost",
    "UdpFlow",
    "Vegas",
    "load",
    "loads",
]
