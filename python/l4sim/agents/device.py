"""Where a trainer's networks live: ``"cpu"``, ``"cuda"`` (``"cuda:N"``) or ``"auto"``.

Every PyTorch trainer of l4sim takes a ``device`` field in its config (and ``--device`` on
the CLI). The environment always runs in the Rust core on the CPU; only the networks, their
optimiser state and each update's batch move. ``"auto"`` picks CUDA when PyTorch sees a GPU,
else the CPU. The default is ``"cpu"``: the networks here are small (two to four layers of
64-256 units), the simulation dominates each step, and CPU results are bit for bit
reproducible, while CUDA's are equal only within float tolerance (its reductions sum in
another order) — see the performance page for where the time goes on each device.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from l4sim.errors import EnvConfigError

__all__ = ["DEVICES", "resolve", "to_cpu"]

#: The names a ``device`` setting accepts (``"cuda:N"`` picks the N-th GPU).
DEVICES = ("auto", "cpu", "cuda", "cuda:N")


def resolve(name: str = "cpu") -> torch.device:
    """The ``torch.device`` that ``name`` means here; one sentence
    (:class:`~l4sim.errors.EnvConfigError`) for an unknown name or a GPU that is not
    there."""
    if not isinstance(name, str):
        raise EnvConfigError(f"device must be a string ({', '.join(DEVICES)}), not {name!r}")
    if name == "cpu":
        return torch.device("cpu")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    m = re.fullmatch(r"cuda(?::(\d+))?", name)
    if m is None:
        raise EnvConfigError(f"device {name!r} is not one of {', '.join(DEVICES)}")
    if not torch.cuda.is_available():
        raise EnvConfigError(
            f"device {name!r} asks for a GPU, but PyTorch sees none here (a CPU-only build of "
            "torch, or no CUDA device); use 'cpu' or 'auto'"
        )
    index = int(m.group(1) or 0)
    if index >= torch.cuda.device_count():
        raise EnvConfigError(
            f"device {name!r}: PyTorch sees {torch.cuda.device_count()} GPU(s), numbered from 0"
        )
    return torch.device("cuda", index)


def to_cpu(*modules: Any) -> None:
    """Move trained networks back to the CPU (where weights are saved and policies act)."""
    for m in modules:
        if m is not None:
            m.to("cpu")
