"""Processes that die with the one that started them, and what a killed run left behind.

Used by the executors' workers (:mod:`l4sim.executors`), the A3C Hogwild workers, and the
emulator's router (:mod:`l4sim.emulate`): a child asks Linux for ``SIGKILL`` when its parent
exits (``PR_SET_PDEATHSIG``, :func:`die_with_parent`, :func:`pdeathsig_preexec`), and a pool
worker, whose parent is the forkserver rather than the executor's owner, also watches the
owner from a thread every :data:`WATCH_S` seconds. :func:`descendants` lists a process's
children and theirs (from ``/proc``); a small reaper started beside a local Ray runtime
kills the agents Ray would leave for a minute.

The signal rule (:func:`stop_on_signals`, which the CLI sets first): SIGTERM (what a job
scheduler, ``timeout``, systemd and Kubernetes send) and SIGHUP (a closed terminal) stop
l4sim as Ctrl-C does, raising :class:`Interrupted` (a ``KeyboardInterrupt``) where Ctrl-C
raises; the exit code is 128 + the signal's number (:func:`exit_code`).
:func:`deferred_interrupt` holds any of them back while bookkeeping or a write must run
whole.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "STOP_SIGNALS",
    "WATCH_S",
    "Interrupted",
    "deferred_interrupt",
    "descendants",
    "die_with_parent",
    "exit_code",
    "pdeathsig_preexec",
    "pool_worker_init",
    "quiet_while_importing",
    "restore_signals",
    "start_reaper",
    "start_time",
    "stop_at_boundary",
    "stop_on_signals",
    "stop_signal",
]

# --------------------------------------------------------------------------------------------
# Dying with the parent.

#: How often a pool worker checks that the process that made its pool is still alive.
WATCH_S = 0.5

_PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` (Linux), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


def die_with_parent(sig: int = signal.SIGKILL) -> bool:
    """Have Linux send ``sig`` to this process when its parent exits (``PR_SET_PDEATHSIG``;
    strictly: when the parent's thread that forked this process exits). False (and nothing
    done) elsewhere than on Linux."""
    prctl = _prctl()
    return prctl is not None and prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0) == 0


def pdeathsig_preexec(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` for :class:`subprocess.Popen` that makes the child get ``sig`` when
    the thread that starts it exits (None where unsupported: pass it as is). libc is looked
    up here, before the fork, so the child only makes the system call."""
    prctl = _prctl()
    if prctl is None:
        return None

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)

    return preexec


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, ...; see
    proc(5)), None if it cannot be read (the process is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat[stat.rindex(b")") + 2 :].split()


def start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, from /proc), None if it is gone
    or a zombie; -1 without /proc (not Linux), where only whether ``pid`` exists counts."""
    if not os.path.isdir("/proc/self"):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except OSError:
            pass  # exists, but not ours to signal
        return -1
    fields = _stat_fields(pid)
    if fields is None:
        return None
    if fields[0] in (b"Z", b"X"):  # killed, not yet reaped: dead all the same
        return None
    return int(fields[19])


def _watch_owner(owner: int, started: int | None) -> None:
    while True:
        time.sleep(WATCH_S)
        now = start_time(owner)
        if now is None or (started is not None and started >= 0 and now != started):
            os.kill(os.getpid(), signal.SIGKILL)  # the owner is gone (or its pid reused)


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc (Linux; empty elsewhere)."""
    kids: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return kids
    for d in entries:
        if not d.isdigit():
            continue
        fields = _stat_fields(d)
        if fields is None:
            continue
        ppid = int(fields[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (children, theirs, ...), from /proc (Linux; [] elsewhere)."""
    kids, out, stack = _children(), [], [pid]
    while stack:
        for c in kids.get(stack.pop(), []):
            out.append(c)
            stack.append(c)
    return out


# Run by a small process next to a local Ray runtime: it remembers Ray's processes (the
# ones given and their descendants) and SIGKILLs those still running when its parent, the
# driver, is gone. Plain Python (no l4sim import), so it starts at once and costs ~10 MB.
_REAPER = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
owner = int(sys.argv[1])
def stat(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            s = fh.read()
    except OSError:
        return None
    f = s[s.rindex(b")") + 2 :].split()
    return int(f[1]), int(f[19]), f[0]
seen = {}
for p in sys.argv[2:]:
    st = stat(int(p))
    if st:
        seen[int(p)] = st[1]
while os.getppid() == owner:
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = stat(int(d))
            if st:
                kids.setdefault(st[0], []).append((int(d), st[1]))
    stack = list(seen)
    while stack:
        for c, start in kids.get(stack.pop(), []):
            if c not in seen:
                seen[c] = start
                stack.append(c)
    for pid, start in list(seen.items()):
        st = stat(pid)
        if st is None or st[1] != start or st[2] in (b"Z", b"X"):
            del seen[pid]
    time.sleep(0.5)
for pid, start in seen.items():
    st = stat(pid)
    if st is not None and st[1] == start:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""


def start_reaper(pids: list[int]) -> subprocess.Popen[bytes] | None:
    """A process that kills ``pids`` and their descendants if this process dies (Linux)."""
    if not pids or not os.path.isdir("/proc"):
        return None
    try:
        return subprocess.Popen(
            [sys.executable, "-c", _REAPER, str(os.getpid()), *map(str, pids)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None


def pool_worker_init(owner: int | None = None, started: int | None = None) -> None:
    # Ctrl-C and a closed terminal's SIGHUP go to the whole process group: the parent decides
    # what stops, not the workers, which die with it. SIGTERM keeps its default: it is how
    # the parent stops a running worker (Process.terminate).
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    parent = os.getppid()
    die_with_parent()
    if os.getppid() != parent:  # the parent died before the request was made
        os.kill(os.getpid(), signal.SIGKILL)
    if owner is not None and owner != parent:
        # With forkserver (or spawn) the parent is not the owner of the pool, so a killed owner
        # would leave its workers running: watch it.
        threading.Thread(
            target=_watch_owner, args=(owner, started), name="l4sim-owner-watch", daemon=True
        ).start()


# --------------------------------------------------------------------------------------------
# Signals that stop a run.

#: The signals that stop l4sim as Ctrl-C does.
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

#: The stop signals received since :func:`stop_on_signals` (held ones too), first first.
_received: list[int] = []


class Interrupted(KeyboardInterrupt):
    """A stop signal (SIGINT, SIGTERM or SIGHUP), raised where Ctrl-C raises
    ``KeyboardInterrupt`` so that one path handles them all; ``signum`` says which."""

    def __init__(self, signum: int, hint: str = "") -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        #: What the one-line message adds (e.g. how to resume what was stopped).
        self.hint = hint


def _interrupt(signum: int, frame: Any) -> None:
    if frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        # Raised in an import lock's weakref callback, the exception would be printed and
        # ignored (the signal lost): deliver the signal again a moment later.
        threading.Timer(0.01, os.kill, (os.getpid(), signum)).start()
        return
    _received.append(signum)
    raise Interrupted(signum)


def _python_defaults_in_child() -> None:
    """A forked child (a Hogwild worker) does not inherit the CLI's stop handlers: it gets
    Python's defaults back, so its parent's Process.terminate() ends it as before."""
    with contextlib.suppress(ValueError):
        for sig in STOP_SIGNALS:
            handler = signal.getsignal(sig)
            if handler is _interrupt or getattr(handler, "l4sim_stop", False):
                default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
                signal.signal(sig, default)


os.register_at_fork(after_in_child=_python_defaults_in_child)


def stop_on_signals() -> dict[int, Any]:
    """Make SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` in the main thread (the
    CLI calls this first; a library keeps Python's defaults unless it asks); returns the
    handlers they had, for :func:`restore_signals`."""
    _received.clear()
    return {sig: signal.signal(sig, _interrupt) for sig in STOP_SIGNALS}


def restore_signals(previous: dict[int, Any]) -> None:
    """Put back the handlers :func:`stop_on_signals` replaced."""
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def _leave_quietly(signum: int, frame: object) -> None:
    name = signal.Signals(signum).name
    os.write(2, f"error: interrupted ({name}) while starting\n".encode())
    os._exit(128 + signum)


def quiet_while_importing() -> None:
    """For the ``l4sim`` command (``python -m l4sim`` or the console script) only: a stop
    signal while the package imports (the first second or so) exits 128 + n with one line
    instead of a traceback of the import; the CLI's :func:`stop_on_signals` takes over."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 != "-m" and os.path.basename(argv0) != "l4sim":
        return
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) in (signal.default_int_handler, signal.SIG_DFL):
            signal.signal(sig, _leave_quietly)


def stop_signal() -> int | None:
    """The first stop signal received since :func:`stop_on_signals` (None: none)."""
    return _received[0] if _received else None


def exit_code(exc: BaseException | None = None) -> int:
    """128 + the number of the signal that stopped l4sim: ``exc``'s (an
    :class:`Interrupted`), else the first received, else SIGINT's (130)."""
    signum = getattr(exc, "signum", None) or stop_signal() or signal.SIGINT
    return 128 + int(signum)


def signal_name(code: int) -> str:
    """``"SIGTERM"`` for exit code 143."""
    try:
        return signal.Signals(code - 128).name
    except ValueError:
        return "a signal"


@contextlib.contextmanager
def deferred_interrupt(deliver: bool = True) -> Iterator[None]:
    """Hold the stop signals (:data:`STOP_SIGNALS`) back until the block is done, then
    deliver the first as it would have been (``deliver=False``: only remember it, for
    :func:`stop_signal`): bookkeeping that must not stop halfway (a point's file and its
    rows in the table, a run's files) runs whole. Outside the main thread (where no handler
    can be set) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: object) -> None:
        held.append(signum)
        _received.append(signum)

    previous = {sig: signal.signal(sig, hold) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if held and deliver:
            signal.raise_signal(held[0])


@contextlib.contextmanager
def stop_at_boundary() -> Iterator[Callable[[], int | None]]:
    """While the block runs, the first stop signal only asks to stop: the block polls the
    function it is given (the signal's number, or None) at each safe boundary of its work (a
    trainer's episode), saves what it must and raises :class:`Interrupted` itself. A second
    stop signal raises at once, as outside the block. Outside the main thread, or where the
    process keeps Python's default handlers (a library caller that did not ask for
    :func:`stop_on_signals`), nothing changes and the function always says None."""
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGTERM) is not _interrupt
    ):
        yield lambda: None
        return
    asked: list[int] = []

    def ask(signum: int, frame: Any) -> None:
        if asked:
            _interrupt(signum, frame)
        asked.append(signum)
        _received.append(signum)

    ask.l4sim_stop = True  # type: ignore[attr-defined]  # a forked child gets the default
    previous = {sig: signal.signal(sig, ask) for sig in STOP_SIGNALS}
    try:
        yield lambda: asked[0] if asked else None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
