"""The errors l4sim raises for bad input; each message is one sentence.

``L4simError`` is the base the CLI catches (one red sentence, exit code 2; ``CoreError``
exit code 1):

* :class:`ScenarioError`: invalid scenario input (file, key path, value, what is allowed).
* :class:`EnvConfigError`: bad environment, agent or trainer options (step interval,
  action delay, seed counts, rewards, checkpoint shapes), not the scenario itself.
* :class:`ActionError`: an agent's action outside its space, or refused by the core.
* :class:`CoreError`: the core refused a configuration it was handed, or is not built.
* :class:`EmulationError`: ``l4sim emulate`` cannot run here (no root, no network
  namespaces, no router binary, a congestion control the kernel lacks) or its router failed.

:class:`ScenarioWarning` (a ``UserWarning``, not an error) flags a scenario that is valid
but probably not what was meant (flows sharing a sender/receiver pair, a sample interval
longer than the run).
"""

from __future__ import annotations

__all__ = [
    "ActionError",
    "CoreError",
    "EmulationError",
    "EnvConfigError",
    "L4simError",
    "ScenarioError",
    "ScenarioWarning",
]


class L4simError(Exception):
    """A user-facing error whose message is one sentence (the CLI prints it, exit code 2)."""


class ScenarioError(L4simError):
    """Invalid scenario input: names the file, the key path, the value and what is allowed."""


class ScenarioWarning(UserWarning):
    """A valid scenario that is probably not what was meant; the message is one sentence
    naming the keys and what to change (issued with :func:`warnings.warn`)."""


class EnvConfigError(L4simError, ValueError):
    """A bad environment, agent or trainer option (not the scenario itself); also a
    ``ValueError``, which the agents' checks raised before."""


class ActionError(L4simError, ValueError):
    """An agent's action that cannot be taken: outside the environment's ``action_space``
    (a float for a discrete action, a value out of range, NaN, None, the wrong count), or
    refused by the core (unknown flow or link, wrong qdisc or cca); one sentence."""


class CoreError(L4simError):
    """The simulator core failed or refused a configuration l4sim handed it (a bug in l4sim,
    not in the user's input)."""


class EmulationError(L4simError):
    """``l4sim emulate`` cannot run on this system or with this scenario, or its router
    failed; the message says which and what to do."""
