"""The compiled core, ``l4sim._core`` (Rust, built by maturin), loaded on first use.

Everything that calls the core goes through :func:`core`, which turns a missing build into
one clear :class:`~l4sim.errors.CoreError`. This module imports nothing else from l4sim but
the errors, so the scenario layer (which asks the core to route a topology) and the
simulation layer can both use it without importing each other.
"""

from __future__ import annotations

from typing import Any

from l4sim.errors import CoreError

__all__ = ["core"]


def core() -> Any:
    """The ``l4sim._core`` extension module."""
    try:
        import l4sim._core as _core
    except ImportError as e:  # pragma: no cover - depends on the build
        raise CoreError(
            "the l4sim simulator core (l4sim._core) is not built; run `pip install -e .` or "
            f"`maturin develop --release` in the repository ({e})"
        ) from None
    return _core
