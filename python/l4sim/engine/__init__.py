"""The engine: one scenario through the compiled core to its results.

- :mod:`~l4sim.engine.budget`: the memory a run will hold, checked before it is built;
- :mod:`~l4sim.engine.simulation`: :class:`Simulation` / :class:`SimulationBatch`, thin
  wrappers over the core's simulation (step, observe, act);
- :mod:`~l4sim.engine.capture`: packet captures (pcap) of a run;
- :mod:`~l4sim.engine.run`: :func:`run`, a scenario simulated to its duration;
- :mod:`~l4sim.engine.results`: :class:`Result`, ``summary.json`` and the Parquet series.

The package's face (``import l4sim``) hands these on; nothing here imports the wings above
(sweep, emulate, envs, agents, experiments, cli).
"""
