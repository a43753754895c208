"""Gymnasium and PettingZoo environments over the l4sim simulator (agents in the loop).

Importing this package registers the Gymnasium ids:

* ``l4sim/TcpCwnd-v0`` — :class:`TcpCwndEnv`: an agent sets a TCP sender's cwnd.
* ``l4sim/AqmDrop-v0`` — :class:`AqmDropEnv`: an agent sets a queue's drop/mark probability.
* ``l4sim/DualPi2-v0`` — :class:`DualPi2Env`: an agent sets DualPI2's p' (and k).
* ``l4sim/MediaRate-v0`` — :class:`MediaRateEnv`: an agent sets a video sender's target bitrate.
* ``l4sim/RemoteTcp-v0`` — :class:`RemoteTcpEnv`: the remote RL-TCP paper's remote brain, states and
  actions as packets between an IoT device and its server in one simulation.

plus :class:`MultiCCEnv` (PettingZoo ``ParallelEnv``, TCP and AQM agents, MA-CC style) and
:class:`SimBatchVectorEnv` (a Gymnasium ``VectorEnv`` stepping N simulations in one call).
Features, units, normalisations and rewards: ``python/l4sim/envs/README.md``.

>>> import gymnasium as gym, l4sim.envs
>>> env = gym.make("l4sim/TcpCwnd-v0", scenario="scenarios/demo.toml", reward="tcp")
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from l4sim.envs.aqm import AqmDropEnv, DualPi2Env
from l4sim.envs.base import L4simEnv, as_scenario
from l4sim.envs.features import (
    QUEUE_FEATURES,
    SENDER_FEATURES,
    QueueStep,
    SenderStep,
    queue_vector,
    sender_vector,
)
from l4sim.envs.media import MediaRateEnv, MediaStep
from l4sim.envs.multi import MultiCCEnv
from l4sim.envs.remote import RemoteTcpEnv
from l4sim.envs.tcp import TcpCwndEnv
from l4sim.envs.vector import SimBatchVectorEnv

__all__ = [
    "ENV_IDS",
    "QUEUE_FEATURES",
    "SENDER_FEATURES",
    "AqmDropEnv",
    "DualPi2Env",
    "L4simEnv",
    "MediaRateEnv",
    "MediaStep",
    "MultiCCEnv",
    "QueueStep",
    "RemoteTcpEnv",
    "SenderStep",
    "SimBatchVectorEnv",
    "TcpCwndEnv",
    "as_scenario",
    "queue_vector",
    "sender_vector",
]

ENV_IDS = {
    "l4sim/TcpCwnd-v0": "l4sim.envs.tcp:TcpCwndEnv",
    "l4sim/AqmDrop-v0": "l4sim.envs.aqm:AqmDropEnv",
    "l4sim/DualPi2-v0": "l4sim.envs.aqm:DualPi2Env",
    "l4sim/RemoteTcp-v0": "l4sim.envs.remote:RemoteTcpEnv",
    "l4sim/MediaRate-v0": "l4sim.envs.media:MediaRateEnv",
}

for _id, _entry in ENV_IDS.items():
    if _id not in registry:
        register(id=_id, entry_point=_entry)
