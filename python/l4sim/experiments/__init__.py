"""Paper reproductions, one module each; ``l4sim reproduce NAME`` runs them.

- ``aqm-004``: paper 004's AQM comparison (Table 2 and per-case figures), see
  :mod:`l4sim.experiments.aqm_004`.
"""

EXPERIMENTS = {"aqm-004": "l4sim.experiments.aqm_004"}
