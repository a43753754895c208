"""The emulator's hosts: one network namespace and TUN device per scenario node
(``l4e<pid>-<node>``), the ``ip`` calls that make and remove them, ``setns(2)`` into them,
and the removal of what a killed run left (see :mod:`l4sim.emulate`).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from l4sim.errors import EmulationError

PREFIX = "l4e"


"""Namespaces of a run are ``l4e<pid>-<node>``; ``<pid>`` is the emulating process."""


_NETNS_DIR = Path("/run/netns")


_TUN = "l4t"


_SUBNET = "10.77.0.0/16"


_CLONE_NEWNET = 0x40000000  # linux/sched.h


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        raise EmulationError(f"`ip {' '.join(args)}` did not finish in 20 s") from None
    if check and p.returncode != 0:
        raise EmulationError(f"`ip {' '.join(args)}` failed: {p.stderr.strip()}")
    return p


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _run_namespaces() -> list[str]:
    p = _ip("netns", "list", check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def cleanup_leftovers() -> list[str]:
    """Delete the namespaces of earlier runs whose process is gone; returns their names."""
    removed = []
    for name in _run_namespaces():
        m = re.match(rf"^{PREFIX}(\d+)-", name)
        if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
            _ip("netns", "del", name, check=False)
            removed.append(name)
    return removed


_libc = ctypes.CDLL(None, use_errno=True)


@contextlib.contextmanager
def _in_netns(name: str) -> Iterator[None]:
    """Run the block (this thread) inside namespace ``name``: sockets opened there stay
    there."""
    with open("/proc/thread-self/ns/net") as home, open(_NETNS_DIR / name) as target:
        if _libc.setns(target.fileno(), _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise EmulationError(f"cannot enter namespace {name} ({os.strerror(err)})")
        try:
            yield
        finally:
            _libc.setns(home.fileno(), _CLONE_NEWNET)


def _addr(node: int) -> str:
    return f"10.77.{node // 250}.{node % 250 + 1}"


@dataclass
class _Host:
    node: int
    name: str
    netns: str
    addr: str
    ecn: int = 2  # net.ipv4.tcp_ecn: Linux default, answer ECN but do not ask for it
    ect1: bool = False  # its packets' ECT(0) rewritten to ECT(1) (a BPF Prague's host)


def _make_host(h: _Host) -> None:
    _ip("netns", "add", h.netns)
    n = ("-n", h.netns)
    _ip(*n, "link", "set", "lo", "up")
    _ip(*n, "tuntap", "add", "dev", _TUN, "mode", "tun")
    _ip(*n, "link", "set", _TUN, "mtu", "1500", "up")
    _ip(*n, "addr", "add", f"{h.addr}/32", "dev", _TUN)
    _ip(*n, "route", "add", _SUBNET, "dev", _TUN)
    with _in_netns(h.netns):
        # Per-namespace sysctls (proc resolves net/ for the opening thread's namespace).
        Path("/proc/sys/net/ipv4/tcp_ecn").write_text(f"{h.ecn}\n")
        Path("/proc/sys/net/ipv4/tcp_no_metrics_save").write_text("1\n")
        with contextlib.suppress(OSError):
            Path(f"/proc/sys/net/ipv6/conf/{_TUN}/disable_ipv6").write_text("1\n")


def _wait_links_up(hosts: list[_Host], timeout: float = 5.0) -> None:
    """Wait until every TUN device carries traffic. The router's attach turns the carrier
    on, but the kernel activates the device's qdisc later (linkwatch, up to a second):
    until then it is `noop`, which drops what is sent, e.g. a first SYN (and Linux then
    gives up ECN for the connection, tcp_ecn_clear_syn)."""
    end = time.monotonic() + timeout
    waiting = list(hosts)
    while waiting:
        p = _ip("-n", waiting[0].netns, "-j", "link", "show", "dev", _TUN, check=False)
        try:
            link = json.loads(p.stdout)[0]
        except (ValueError, IndexError, KeyError):
            link = {}
        if link.get("qdisc", "noop") != "noop" and "LOWER_UP" in link.get("flags", []):
            waiting.pop(0)
        elif time.monotonic() > end:
            raise EmulationError(
                f"the TUN device of {waiting[0].name} did not come up within {timeout:g} s"
            )
        else:
            time.sleep(0.01)
