"""Learning algorithms (PyTorch, CPU), one file each, CleanRL style.

- :mod:`l4sim.agents.dqn`: DQN for Box observations and Discrete actions (RL-TCP).
- :mod:`l4sim.agents.lfq`: LFQ's offline training by A/B forks and online actor-critic
  (paper 001).

The modules import torch; ``import l4sim.agents`` itself does not.
"""
