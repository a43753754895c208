"""Learning algorithms (PyTorch, CPU), one file each, CleanRL style.

- :mod:`l4sim.agents.dqn`: DQN for Box observations and Discrete actions (RL-TCP).

The modules import torch; ``import l4sim.agents`` itself does not.
"""
