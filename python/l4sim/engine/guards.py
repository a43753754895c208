"""Guards at the compiled core's door: what a ``Simulation`` checks or serialises before a
call reaches Rust (a capture's path, calls from several threads)."""

from __future__ import annotations

import math
import os
import threading
from typing import Any

import numpy as np

from l4sim.errors import ActionError, L4simError


def short(x: object) -> str:
    """``repr(x)``, cut to a readable length, with its type when that helps."""
    r = repr(x)
    r = r if len(r) <= 60 else r[:57] + "..."
    return r if isinstance(x, int | float | str | type(None)) else f"{r} ({type(x).__name__})"


def int_arg(
    value: object, name: str, lo: int, hi: int, unit: str, error: type[L4simError] = ActionError
) -> int:
    """``value`` as an int in ``lo..hi``, or ``error`` with one sentence naming ``name`` and
    the range. Integral floats and numpy integers are accepted, as ``int()`` was."""
    whole = isinstance(value, int | np.integer) or (
        isinstance(value, float | np.floating) and math.isfinite(value) and value == int(value)
    )
    n = int(value) if whole and not isinstance(value, bool) else None  # type: ignore[arg-type]
    unit = f" {unit}" if unit else ""
    if n is None:
        raise error(f"{name} {short(value)} is not a whole number; allowed: {lo} to {hi}{unit}")
    if not lo <= n <= hi:
        raise error(f"{name} {n} is out of range; allowed: {lo} to {hi}{unit}")
    return n


def str_arg(value: object, name: str) -> str:
    """``value`` if it is a string, else ActionError naming ``name``."""
    if not isinstance(value, str):
        raise ActionError(f"{name} {short(value)} is not a link name such as 'r0->r1'")
    return value


def capture_path(file: Any) -> str:
    """A capture's file name as the core takes it (UTF-8 text, no NUL), else ActionError."""
    if not isinstance(file, str | bytes | os.PathLike):
        raise ActionError(f"capture file {short(file)} must be a path")
    path = os.fsdecode(os.fspath(file))
    if "\0" in path:
        raise ActionError(f"capture file {path!r} contains a NUL byte")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        raise ActionError(f"capture file '{shown}' is not valid UTF-8") from None
    return path


def _borrowed(e: RuntimeError) -> bool:
    """pyo3's error for a call on an object another thread is inside."""
    return "borrow" in str(e)


class OneCallAtATime:
    """A core simulation that takes one call at a time. The core lets other threads run while
    it simulates (``run``, ``run_until``, ``run_until_trigger``), and a call on the same
    simulation from another thread meanwhile would fail with pyo3's ``Already borrowed``;
    here it waits for the first to finish, as the caller of a shared object expects. Those
    three calls take the lock; any other call or read that finds the core borrowed (the
    core refuses it before doing anything) waits for the lock and is made again, so the
    usual, uncontended call costs no lock."""

    __slots__ = ("_calls", "_core", "_lock")

    def __init__(self, core_sim: Any):
        self._core = core_sim
        self._lock = threading.Lock()
        self._calls: dict[str, Any] = {}

    def run(self) -> None:
        with self._lock:
            self._core.run()

    def run_until(self, t_ns: int) -> None:
        with self._lock:
            self._core.run_until(t_ns)

    def run_until_trigger(self, t_ns: int) -> bool:
        with self._lock:
            return bool(self._core.run_until_trigger(t_ns))

    def __getattr__(self, name: str) -> Any:
        call = self._calls.get(name)
        if call is not None:
            return call
        try:
            value = getattr(self._core, name)
        except RuntimeError as e:
            if not _borrowed(e):
                raise
            with self._lock:
                value = getattr(self._core, name)
        if not callable(value):
            return value
        lock = self._lock

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return value(*args, **kwargs)
            except RuntimeError as e:
                if not _borrowed(e):
                    raise
            with lock:
                return value(*args, **kwargs)

        self._calls[name] = call
        return call
