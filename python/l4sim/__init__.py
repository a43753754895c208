"""l4sim: a packet-level network simulator for congestion control and AQM, L4S first-class.

>>> import l4sim
>>> scenario = l4sim.load("scenarios/demo.toml")
>>> result = l4sim.run(scenario)
>>> result.summary["jain_fairness"], result.flows.head()
>>> l4sim.write(result, "out/demo")
"""

import l4sim._startup  # noqa: F401 (first: the l4sim command's early Ctrl-C is one line)
from l4sim._version import __version__
from l4sim.engine.budget import MemoryBudgetError
from l4sim.engine.results import Result, read, write
from l4sim.engine.run import run
from l4sim.engine.simulation import Simulation, SimulationBatch
from l4sim.errors import (
    ActionError,
    CoreError,
    EnvConfigError,
    L4simError,
    ScenarioError,
    ScenarioWarning,
)
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
    loads,
)

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
    "MemoryBudgetError",
    "PathTopology",
    "Qdisc",
    "Result",
    "Scenario",
    "ScenarioError",
    "ScenarioWarning",
    "Simulation",
    "SimulationBatch",
    "TcpFlow",
    "Topology",
    "TwoHost",
    "UdpFlow",
    "__version__",
    "load",
    "loads",
    "read",
    "run",
    "write",
]
