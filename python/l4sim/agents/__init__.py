"""Learning algorithms (PyTorch, CPU), one file each, CleanRL style; one folder for the one
that does not fit a file (A3C, its reading order in its ``__init__``).

- :mod:`l4sim.agents.dqn`: DQN for Box observations and Discrete actions (RL-TCP).
- :mod:`l4sim.agents.lfq`: LFQ's offline training by A/B forks and online actor-critic
  (Grigorescu et al.).
- :mod:`l4sim.agents.a3c`: A3C-L4S, Hogwild workers setting DualPI2's marking (A3C-L4S);
  :mod:`~l4sim.agents.a3c.ray_runner` runs its workers on Ray and
  :mod:`~l4sim.agents.a3c.logs` replays the authors' Table-1 logs offline.
- :mod:`l4sim.agents.vdn`: VDN / QMIX / independent learners over TCP and AQM agents
  (MA-CC).

The modules import torch; ``import l4sim.agents`` itself does not.
"""
