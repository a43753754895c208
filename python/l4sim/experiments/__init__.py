"""Paper reproductions, one module each; ``l4sim reproduce NAME`` runs them.

- ``aqm-004``: paper 004's AQM comparison (Table 2 and per-case figures), see
  :mod:`l4sim.experiments.aqm_004`.
- ``a3c-004``: paper 004's A3C-L4S trained online and deployed in DualPI2, beside DualPI2
  and FQ-L4S, see :mod:`l4sim.experiments.a3c_004` (needs PyTorch; ``--quick``).
- ``l4s-rtt-fairness``: two TCP Prague / CUBIC flows through DualPI2 beside a Linux L4S
  testbed's measurements, see :mod:`l4sim.experiments.l4s_rtt_fairness`.
- ``rl-tcp``: ns3-ai's RL-TCP example (paper 000), a DQN per reward beside NewReno, see
  :mod:`l4sim.experiments.rl_tcp` (needs PyTorch).
- ``macc-002``: paper 002's MA-CC (VDN over TCP and AQM agents) beside its baselines, see
  :mod:`l4sim.experiments.macc_002` (needs PyTorch).
- ``lfq-001``: paper 001's LFQ (learned per-flow buffers inside ``fq``) beside fq and
  FqCoDel, with shipped weights (``--train`` retrains), see :mod:`l4sim.experiments.lfq_001`.
- ``remote-rl-tcp-000``: paper 000's stage 1, the control path's RTT through FIFO, the
  paper's FqCoDel stand-in and DualPI2 (Table 2), see
  :mod:`l4sim.experiments.remote_rl_tcp_000`; then stage 2, the unified run (states and
  actions as packets), the control-delay study and a fair-share remote CC, see
  :mod:`l4sim.experiments.remote_brain_000` (needs PyTorch).

Each module has ``GROUPS`` (what ``--only`` selects), ``TABLE`` (the file it writes),
``cases(groups)``, ``reproduce(out_dir, only=, figures=, on_case=)`` and
``markdown_table(rows)``.
"""

EXPERIMENTS = {
    "aqm-004": "l4sim.experiments.aqm_004",
    "a3c-004": "l4sim.experiments.a3c_004",
    "l4s-rtt-fairness": "l4sim.experiments.l4s_rtt_fairness",
    "rl-tcp": "l4sim.experiments.rl_tcp",
    "macc-002": "l4sim.experiments.macc_002",
    "lfq-001": "l4sim.experiments.lfq_001",
    "remote-rl-tcp-000": "l4sim.experiments.remote_rl_tcp_000",
}
