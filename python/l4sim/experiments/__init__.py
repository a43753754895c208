"""Paper and testbed reproductions, filed by topic; ``l4sim reproduce NAME`` runs them.

An experiment is one module (``aqm_comparison.py``) or, when it has helpers, a folder whose
``__init__.py`` is the experiment and whose ``figures.py`` / ``tables.py`` / ``training.py``
hold them (``macc/``); ``_cases.py``, ``_tables.py`` and ``_timeseries.py`` serve them all.
Every experiment ends with ``EXPERIMENT``, a :class:`~l4sim.experiments.base.Declared`
(the :class:`~l4sim.experiments.base.Experiment` protocol): its topic name and the paper
ids kept as aliases, title, paper, ``--only`` groups, options, cases, ``reproduce``, tables,
figures, ``markdown_table``, ``tensorboard_dir`` and the reference data it compares with
(``l4sim/data/reference``). :data:`EXPERIMENTS` registers them; the CLI is generated from
the declarations.

- ``aqm-comparison`` (``aqm-004``): "L4S in FreeBSD with A3C"'s AQM comparison (Table 2), see
  :mod:`l4sim.experiments.aqm_comparison`.
- ``a3c-l4s`` (``a3c-004``): that paper's A3C-L4S trained online and deployed in DualPI2,
  beside DualPI2 and FQ-L4S, see :mod:`l4sim.experiments.a3c_l4s` (needs PyTorch).
- ``l4s-rtt-fairness``: two TCP Prague / CUBIC flows through DualPI2, pfifo and fq_codel
  beside a Linux L4S testbed, see :mod:`l4sim.experiments.l4s_rtt_fairness`.
- ``rl-tcp``: ns3-ai's RL-TCP example, a DQN per reward beside NewReno, see
  :mod:`l4sim.experiments.rl_tcp` (needs PyTorch).
- ``macc`` (``macc-002``): MA-CC beside its baselines, see
  :mod:`l4sim.experiments.macc` (needs PyTorch).
- ``lfq`` (``lfq-001``): LFQ's learned per-flow buffers inside ``fq``, see
  :mod:`l4sim.experiments.lfq`.
- ``remote-brain`` (``remote-rl-tcp-000``): the remote RL-TCP paper's remote brain, stage 1
  (:mod:`l4sim.experiments.remote_brain`) then stage 2, the unified run, the
  control-delay study and a fair-share remote CC (:mod:`l4sim.experiments.remote_brain.stage2`).
- ``classic-queue``: classic TCP beside a dominant flow (BBR, DCTCP) in one classic queue,
  against the kernel measured through ``l4sim emulate``, see
  :mod:`l4sim.experiments.classic_queue`.
- ``rfc3168-coexistence`` (``l4s-tests-s6``): TCP Prague beside CUBIC or Reno in one RFC 3168
  queue against the L4S Tests testbed, see :mod:`l4sim.experiments.rfc3168_coexistence`.
- ``rfc3168-rate-step`` (``l4s-tests-s2``): a rate cut under fq_codel, Prague's RTT spike
  against CUBIC's, see :mod:`l4sim.experiments.rfc3168_rate_step`.
- ``coexistence``: every pair of scalable and classic senders through every queue at three
  rates and three RTTs, see :mod:`l4sim.experiments.coexistence`.
- ``l4s-bursts``: Prague through DualPI2 against CUBIC through fq_codel behind a bursty
  (netem-slotted) link, against the L4S Tests testbed, see :mod:`l4sim.experiments.l4s_bursts`.
- ``bbr3-coexistence``: BBRv3 (and BBR v1) beside CUBIC across buffer sizes, against the
  published measurements, see :mod:`l4sim.experiments.bbr3_coexistence`.
- ``docsis-qprot``: Queue Protection (RFC 9957) on a DOCSIS upstream beside an unresponsive
  or mis-marked flow in the L queue, see :mod:`l4sim.experiments.docsis_qprot`.
- ``rmcat``: the RMCAT wired test cases (RFC 8867) with SCReAM v2, UDP Prague and no
  congestion control, and SCReAM v2 beside TCP Prague, see :mod:`l4sim.experiments.rmcat`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from l4sim.errors import L4simError

if TYPE_CHECKING:
    from l4sim.experiments.base import Experiment

#: Topic name -> the module whose ``EXPERIMENT`` declares it (imported when needed).
EXPERIMENTS: dict[str, str] = {
    "aqm-comparison": "l4sim.experiments.aqm_comparison",
    "a3c-l4s": "l4sim.experiments.a3c_l4s",
    "l4s-rtt-fairness": "l4sim.experiments.l4s_rtt_fairness",
    "rl-tcp": "l4sim.experiments.rl_tcp",
    "macc": "l4sim.experiments.macc",
    "lfq": "l4sim.experiments.lfq",
    "remote-brain": "l4sim.experiments.remote_brain",
    "classic-queue": "l4sim.experiments.classic_queue",
    "rfc3168-coexistence": "l4sim.experiments.rfc3168_coexistence",
    "rfc3168-rate-step": "l4sim.experiments.rfc3168_rate_step",
    "coexistence": "l4sim.experiments.coexistence",
    "l4s-bursts": "l4sim.experiments.l4s_bursts",
    "bbr3-coexistence": "l4sim.experiments.bbr3_coexistence",
    "docsis-qprot": "l4sim.experiments.docsis_qprot",
    "rmcat": "l4sim.experiments.rmcat",
}


def all_experiments() -> list[Experiment]:
    """Every registered experiment's declaration, in :data:`EXPERIMENTS` order."""
    out = []
    for name, module in EXPERIMENTS.items():
        exp = importlib.import_module(module).EXPERIMENT
        if exp.name != name:
            raise L4simError(f"{module} declares {exp.name!r} but is registered as {name!r}")
        out.append(exp)
    return out


def experiment(name: str) -> Experiment:
    """The experiment called ``name`` (its topic name or an alias such as ``aqm-004``)."""
    found = next((e for e in all_experiments() if name == e.name or name in e.aliases), None)
    if found is None:
        known = sorted(n for e in all_experiments() for n in (e.name, *e.aliases))
        raise L4simError(f"unknown experiment {name!r}; known: {', '.join(known)}")
    return found
