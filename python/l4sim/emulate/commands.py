"""Command flows in the emulator: an external program pair (``kind = "command"``, e.g. a
reference implementation's sender and receiver) run inside the hosts' namespaces with
``ip netns exec``, the receiver from the start of the run, the sender from the flow's
start to its stop or the run's end (see :mod:`l4sim.emulate`, docs/emulation.md).

Each program's output (stdout and stderr together) goes to ``flow<i>-sender.log`` and
``flow<i>-receiver.log`` in the run's output directory. A program that cannot be found
is an error before the run; one that exits with a non-zero status before its end is an
error after it, naming its log.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from l4sim.errors import EmulationError
from l4sim.processes import pdeathsig_preexec
from l4sim.scenario.flows import CommandFlow


class _Flow(Protocol):
    """What this module reads and sets of ``l4sim.emulate.traffic``'s flow (named here, not
    imported: traffic imports this module)."""

    index: int
    spec: Any
    src: Any  # a host: ``addr``, ``netns``
    dst: Any
    port: int
    sport: int
    error: str | None


# A program gets this long to exit after SIGTERM (its final summary, its logs) before
# SIGKILL.
_TERM_GRACE_S = 5.0


def check_programs(spec: CommandFlow, where: str) -> None:
    """One sentence if the sender's or receiver's program is not an executable on PATH."""
    for role, argv in (("sender", spec.sender), ("receiver", spec.receiver)):
        if argv is not None and shutil.which(argv[0]) is None:
            raise EmulationError(
                f"{where}.{role}: the program {argv[0]!r} is not an executable file "
                "(give its path, or put it on PATH)"
            )


def expand(argv: list[str], f: _Flow, duration_s: float, out: Path) -> list[str]:
    """``argv`` with the flow's fields filled in (``{dst}``, ``{port}``, ...)."""
    fields = {
        "src": f.src.addr,
        "dst": f.dst.addr,
        "port": f.port,
        "sport": f.sport,
        "duration": f"{duration_s:.3f}",
        "out": str(out),
    }
    return [a.format(**fields) for a in argv]


def log_path(out: Path, f: _Flow, role: str) -> Path:
    return out / f"flow{f.index}-{role}.log"


def _spawn(netns: str, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as out:
        return subprocess.Popen(
            ["ip", "netns", "exec", netns, *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            # SIGKILLed if the thread that started it ends (the emulation killed).
            preexec_fn=pdeathsig_preexec(),
        )


def _end(p: subprocess.Popen[bytes] | None) -> None:
    if p is None or p.poll() is not None:
        return
    with contextlib.suppress(OSError):
        p.terminate()
    try:
        p.wait(timeout=_TERM_GRACE_S)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def run(f: _Flow, t0: float, end: float, stop: threading.Event, out: Path) -> None:
    """Run command flow ``f`` from ``t0`` (the run's start, monotonic) until ``end`` or
    ``stop``; sets ``f.error`` when a program fails before its end."""
    spec = f.spec
    assert isinstance(spec, CommandFlow)
    start = t0 + spec.start / 1e9
    receiver = None
    sender = None
    try:
        if spec.receiver is not None:
            argv = expand(spec.receiver, f, end - start, out)
            receiver = _spawn(f.dst.netns, argv, log_path(out, f, "receiver"))
        if stop.wait(max(0.0, start - time.monotonic())):
            return
        sender = _spawn(
            f.src.netns, expand(spec.sender, f, end - start, out), log_path(out, f, "sender")
        )
        while not stop.is_set() and time.monotonic() < end:
            for role, p in (("sender", sender), ("receiver", receiver)):
                code = p.poll() if p is not None else None
                if code:
                    f.error = (
                        f"flow {f.index}: the {role} command exited with status {code} "
                        f"before the end of the run; its output is in "
                        f"{log_path(out, f, role)}"
                    )
                    return
            stop.wait(min(0.05, max(0.0, end - time.monotonic())))
    finally:
        _end(sender)
        _end(receiver)
