"""Whether the emulator's tests can make network namespaces here (root, `ip netns`, TUN)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def netns_reason() -> str | None:
    """Why network namespaces cannot be used here, or None."""
    if not sys.platform.startswith("linux"):
        return "Linux only"
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    name = f"l4e-probe-{os.getpid()}"
    p = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if p.returncode != 0:
        return f"cannot create a network namespace here ({p.stderr.strip()})"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None if Path("/dev/net/tun").exists() else "no /dev/net/tun"


# Two hosts through DualPI2 at 10 Mbps, one 12 Mbps ECT(1) UDP flow: the emulator tests' run.
ECT1 = """
name = "emu_ect1"
duration = "2s"
[topology]
preset = "two_host"
rate = "10Mbps"
delay = "5ms"
qdisc = { kind = "dualpi2" }
[[flows]]
kind = "udp"
rate = "12Mbps"
ecn = "ect1"
"""
