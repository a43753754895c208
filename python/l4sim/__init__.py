"""l4sim: a packet-level network simulator for congestion control and AQM, L4S first-class.

>>> import l4sim
>>> scenario = l4sim.load("scenarios/demo.toml")
>>> result = l4sim.run(scenario)
>>> result.summary["jain_fairness"], result.flows.head()
>>> l4sim.write(result, "out/demo")
"""

from l4sim._version import __version__
from l4sim.errors import ActionError, CoreError, EnvConfigError, L4simError, ScenarioError
from l4sim.results import Result, read, write
from l4sim.run import run
from l4sim.scenario import (
    AccessSpec,
    Custom,
    CustomLink,
    Delack,
    Dumbbell,
    Fifo,
    Flow,
    LinkSpec,
    PathTopology,
    Qdisc,
    Scenario,
    TcpFlow,
    Topology,
    TwoHost,
    UdpFlow,
    load,
)
from l4sim.simulation import Simulation

__all__ = [
    "AccessSpec",
    "ActionError",
    "CoreError",
    "Custom",
    "CustomLink",
    "Delack",
    "Dumbbell",
    "EnvConfigError",
    "Fifo",
    "Flow",
    "L4simError",
    "LinkSpec",
    "PathTopology",
    "Qdisc",
    "Result",
    "Scenario",
    "ScenarioError",
    "Simulation",
    "TcpFlow",
    "Topology",
    "TwoHost",
    "UdpFlow",
    "__version__",
    "load",
    "read",
    "run",
    "write",
]
