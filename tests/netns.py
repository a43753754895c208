"""Whether the emulator's tests can make network namespaces here (root, `ip netns`, TUN)."""

from __future__ import annotations

import os
import shutil
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


def bpf_reason(kind: str, tools: tuple[str, ...] = ("clang", "bpftool")) -> str | None:
    """Why a BPF congestion control standing in for ``kind`` cannot run here, or None."""
    reason = netns_reason()
    if reason is not None:
        return reason
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        return f"needs {' and '.join(missing)} (apt-get install clang bpftool libbpf-dev)"
    try:
        available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text()
    except OSError:
        available = ""
    if kind in available.split():
        return f"the kernel has its own {kind}, which l4sim emulate uses instead"
    return None


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
