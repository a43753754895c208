"""``l4sim emulate``: a scenario's links and qdiscs on real Linux TCP between network
namespaces.

Each host of the scenario (a flow endpoint) gets a network namespace ``l4e<pid>-<node>``
holding one TUN device with address ``10.77.0.<node + 1>``; nothing else, no default route,
so traffic cannot leave the run's namespaces. The Rust router ``l4sim-router``
(``crates/l4sim-emu``, carried by the extension: ``python -m l4sim._router``) holds the TUN
devices and forwards every packet through the scenario's links as the simulator models them
(the core's ``Channel``: the qdisc of each link direction, serialisation at its rate,
propagation delay, i.i.d. loss), writing CE marks into the IP headers. The endpoints are the
kernel's TCP: the congestion control is set per socket (``TCP_CONGESTION``), ECN per
namespace (``net.ipv4.tcp_ecn``). A traffic generator in this process (sockets opened inside
the namespaces with ``setns(2)``, one thread per endpoint) runs the scenario's flows and
samples ``TCP_INFO``.

The results have the shape of ``l4sim run``'s: ``summary.json`` (per-flow goodput from
the receiver; RTT, cwnd, retransmits and delivery rate from ``TCP_INFO``; per-queue
sojourn, backlog, drops, marks and utilisation from the router), ``flows.parquet``,
``queues.parquet`` and ``scenario.toml``.

Needs root (namespaces, TUN devices). Namespaces, devices and processes are removed on
exit, on Ctrl-C or SIGTERM and when the router dies; the router dies with the process that
started it, even a SIGKILLed one (``PR_SET_PDEATHSIG``); namespaces left by a run that was
killed (``l4e<pid>-`` of a process that no longer exists) are removed by the next run.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from l4sim._version import __version__
from l4sim.capture import capture_files
from l4sim.errors import EmulationError
from l4sim.processes import pdeathsig_preexec
from l4sim.results import Result
from l4sim.scenario import Scenario, load
from l4sim.scenario.flows import ControlFlow, TcpFlow, UdpFlow
from l4sim.simulation import FLOW_SCHEMA, QUEUE_SCHEMA

__all__ = ["PREFIX", "cleanup_leftovers", "emulate", "find_router", "kernel_ccas"]

PREFIX = "l4e"
"""Namespaces of a run are ``l4e<pid>-<node>``; ``<pid>`` is the emulating process."""

_NETNS_DIR = Path("/run/netns")
_TUN = "l4t"
_SUBNET = "10.77.0.0/16"
_BASE_PORT = 5000  # receivers listen on 5000 + flow index
_SRC_PORT = 20000  # senders bind 20000 + flow index: the router knows each 5-tuple
_CLONE_NEWNET = 0x40000000  # linux/sched.h
_IP_RECVTOS = 13  # linux/in.h
_CA_STATES = ("open", "disorder", "cwr", "recovery", "loss")  # linux/tcp.h tcp_ca_state
# struct tcp_info (linux/tcp.h, through tcpi_bytes_retrans): 8 u8, 24 u32, 4 u64, 6 u32,
# 4 u64, 2 u32, 2 u64.
_TCP_INFO = struct.Struct("=8B24I4Q6I4Q2I2Q")
_INFINITE_SSTHRESH = 0x7FFFFFFF  # TCP_INFINITE_SSTHRESH
# The scenario's cca kinds by the kernel's names (tcp_<name>.c).
_KERNEL_CCA = {"newreno": "reno"}
_ECN_TOS = {"not_ect": 0, "ect1": 1, "ect0": 2, "ce": 3}  # RFC 3168 §5

_euid: Callable[[], int] = os.geteuid
"""The effective user id (a seam for the no-root test)."""


# --------------------------------------------------------------------------------------------
# Environment checks.


def find_router() -> list[str]:
    """The command that starts the emulator's router: ``$L4SIM_ROUTER`` (a stand-alone
    ``l4sim-router`` binary, e.g. ``target/release/l4sim-router`` from
    ``cargo build --release -p l4sim-emu``) when set, else the router the extension carries
    (``python -m l4sim._router``), so an installed wheel emulates without Rust."""
    env = os.environ.get("L4SIM_ROUTER")
    if env:
        if not os.access(env, os.X_OK):
            raise EmulationError(f"L4SIM_ROUTER {env!r} is not an executable file")
        return [env]
    from l4sim import _core

    if not hasattr(_core, "router_main"):
        raise EmulationError(
            "this build of l4sim's extension carries no emulator router; reinstall l4sim "
            "(pip install .) or set L4SIM_ROUTER to an l4sim-router binary"
        )
    return [sys.executable, "-m", "l4sim._router"]


def _check_host() -> None:
    if _euid() != 0:
        raise EmulationError(
            "l4sim emulate needs root to create network namespaces and TUN devices; "
            "run it as root (e.g. with sudo)"
        )
    if shutil.which("ip") is None:
        raise EmulationError("l4sim emulate needs the `ip` command (iproute2), not found")
    if not Path("/dev/net/tun").exists() or not Path("/proc/self/ns/net").exists():
        raise EmulationError(
            "this system has no network namespace or TUN support (/proc/self/ns/net, "
            "/dev/net/tun), which l4sim emulate needs"
        )


def kernel_ccas() -> list[str]:
    """Congestion controls this kernel offers (``tcp_available_congestion_control``)."""
    try:
        return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    except OSError:
        return []


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


# --------------------------------------------------------------------------------------------
# Namespaces.

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


# --------------------------------------------------------------------------------------------
# Traffic.


@dataclass
class _Flow:
    index: int
    spec: TcpFlow | UdpFlow
    src: _Host
    dst: _Host
    port: int
    sport: int
    kernel_cca: str | None = None
    listener: socket.socket | None = None
    sender: socket.socket | None = None
    received: int = 0
    ce_packets: int = 0
    end_t: float | None = None  # receiver bytes counted up to here (stop or run end)
    received_at_end: int | None = None
    fct: float | None = None
    info: tuple[int, ...] | None = None
    rtt_samples: list[float] = field(default_factory=list)
    rate_samples: list[float] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    error: str | None = None


class _Traffic:
    """The scenario's flows as kernel sockets inside the hosts' namespaces."""

    def __init__(self, flows: list[_Flow], t0: float, end: float) -> None:
        self.flows = flows
        self.t0 = t0
        self.end = end
        self.stop = threading.Event()

    def open(self) -> None:
        for f in self.flows:
            if isinstance(f.spec, TcpFlow):
                with _in_netns(f.dst.netns):
                    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    lst.bind((f.dst.addr, f.port))
                    lst.listen(1)
                with _in_netns(f.src.netns):
                    snd = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    cca = (f.kernel_cca or "reno").encode()
                    snd.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cca)
                    snd.bind((f.src.addr, f.sport))
            else:
                with _in_netns(f.dst.netns):
                    lst = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    lst.setsockopt(socket.IPPROTO_IP, _IP_RECVTOS, 1)
                    lst.bind((f.dst.addr, f.port))
                with _in_netns(f.src.netns):
                    snd = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    snd.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, _ECN_TOS[f.spec.ecn])
                    snd.bind((f.src.addr, f.sport))
            f.listener, f.sender = lst, snd

    def start(self) -> None:
        for f in self.flows:
            if isinstance(f.spec, TcpFlow):
                targets = (self._tcp_receiver, self._tcp_sender)
            else:
                targets = (self._udp_receiver, self._udp_sender)
            for target in targets:
                t = threading.Thread(target=self._guard, args=(target, f), daemon=True)
                f.threads.append(t)
                t.start()

    def _guard(self, target: Callable[[_Flow], None], f: _Flow) -> None:
        try:
            target(f)
        except OSError as e:
            if not self.stop.is_set() and f.end_t is None:
                f.error = f"flow {f.index}: {e.strerror or e}"

    def _wait_until(self, t: float) -> bool:
        """Sleep until ``t`` (monotonic); False if the run is stopping."""
        return not self.stop.wait(max(0.0, t - time.monotonic()))

    def _active_end(self, f: _Flow) -> float:
        stop = f.spec.stop
        return self.end if stop is None else min(self.end, self.t0 + stop / 1e9)

    def _tcp_receiver(self, f: _Flow) -> None:
        assert f.listener is not None
        f.listener.settimeout(0.2)
        conn = None
        while conn is None:
            if self.stop.is_set():
                return
            with contextlib.suppress(TimeoutError):
                conn, _ = f.listener.accept()
        buf = bytearray(1 << 18)
        conn.settimeout(0.2)
        with conn:
            while not self.stop.is_set():
                try:
                    n = conn.recv_into(buf)
                except TimeoutError:
                    continue
                if n == 0:
                    break
                f.received += n

    def _tcp_sender(self, f: _Flow) -> None:
        s, spec = f.sender, f.spec
        assert s is not None and isinstance(spec, TcpFlow)
        if not self._wait_until(self.t0 + spec.start / 1e9):
            return
        s.settimeout(5.0)
        s.connect((f.dst.addr, f.port))
        s.settimeout(0.1)
        end = self._active_end(f)
        chunk = memoryview(bytearray(1 << 18))
        left = spec.size if spec.size is not None else None
        while time.monotonic() < end and not self.stop.is_set():
            n = len(chunk) if left is None else min(len(chunk), left)
            if n == 0:
                break
            try:
                sent = s.send(chunk[:n])
            except TimeoutError:
                continue
            if left is not None:
                left -= sent
        if left == 0:
            # A sized flow is complete when every byte is acknowledged (as the simulator's
            # fct: the sender's view): nothing unsent, nothing unacknowledged.
            while time.monotonic() < end and not self.stop.is_set():
                info = _tcp_info(s)
                if info is not None and info[_UNACKED] == 0 and info[_NOTSENT] == 0:
                    f.fct = time.monotonic() - (self.t0 + spec.start / 1e9)
                    break
                time.sleep(0.001)
        elif end < self.end and not self.stop.is_set():
            self.finish(f)
            # The flow stops sending at its stop time, as in the simulator: abort the
            # connection (RST, SO_LINGER 0) instead of draining the send buffer.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()

    def finish(self, f: _Flow) -> None:
        """The flow's end (its stop time or the run's): count what the receiver has and
        keep the sender's last TCP_INFO."""
        if f.end_t is not None:
            return
        if isinstance(f.spec, TcpFlow) and f.sender is not None:
            info = _tcp_info(f.sender)
            if info is not None and info[0] != 0:
                f.info = info
        f.end_t, f.received_at_end = time.monotonic(), f.received

    def _udp_sender(self, f: _Flow) -> None:
        s, spec = f.sender, f.spec
        assert s is not None and isinstance(spec, UdpFlow)
        if not self._wait_until(self.t0 + spec.start / 1e9):
            return
        payload = bytes(max(0, spec.packet_size - 28))  # IPv4 + UDP headers
        gap = spec.packet_size * 8 / spec.rate
        end = self._active_end(f)
        t = time.monotonic()
        sent = 0
        limit = spec.size
        while t < end and not self.stop.is_set() and (limit is None or sent < limit):
            s.sendto(payload, (f.dst.addr, f.port))
            sent += spec.packet_size
            t += gap
            delay = t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        if end < self.end and not self.stop.is_set():
            self.stop.wait(0.5)  # what is on its way still arrives
            self.finish(f)

    def _udp_receiver(self, f: _Flow) -> None:
        s = f.listener
        assert s is not None
        s.settimeout(0.2)
        space = socket.CMSG_SPACE(4)
        while not self.stop.is_set():
            try:
                data, anc, _, _ = s.recvmsg(65536, space)
            except TimeoutError:
                continue
            f.received += len(data) + 28
            for level, kind, value in anc:
                if level == socket.IPPROTO_IP and kind == socket.IP_TOS and value[0] & 3 == 3:
                    f.ce_packets += 1

    def close(self) -> None:
        self.stop.set()
        for f in self.flows:
            for s in (f.sender, f.listener):
                if s is not None:
                    with contextlib.suppress(OSError):
                        # Abort (RST): a stopped flow sends nothing more (SO_LINGER 0).
                        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.close()
        for f in self.flows:
            for t in f.threads:
                t.join(timeout=2.0)


# Indices into the unpacked struct tcp_info (field offsets in linux/tcp.h).
_MSS, _UNACKED, _RTT, _SSTHRESH, _CWND = 10, 12, 23, 25, 26
_TOTAL_RETRANS, _BYTES_ACKED, _NOTSENT, _DELIVERY_RATE = 31, 34, 38, 42
_RWND_LIMITED = 44  # tcpi_rwnd_limited, microseconds
_DELIVERED_CE, _BYTES_SENT = 47, 48
_CA_STATE = 1


def _tcp_info(s: socket.socket) -> tuple[int, ...] | None:
    try:
        raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO.size)
    except OSError:
        return None
    if len(raw) < _TCP_INFO.size:
        return None
    return _TCP_INFO.unpack(raw)


# --------------------------------------------------------------------------------------------
# The run.


def _hosts_and_flows(scenario: Scenario, pid: int) -> tuple[list[_Host], list[_Flow]]:
    names = scenario.node_names()
    index = {n: i for i, n in enumerate(names)}
    hosts: dict[str, _Host] = {}
    flows: list[_Flow] = []
    available = kernel_ccas()
    ecn_modes: dict[str, int] = {}
    for rf in scenario.resolved_flows():
        where = f"flows[{rf.source_index}]"
        spec = rf.spec
        if isinstance(spec, ControlFlow):
            raise EmulationError(
                f"{where} is a control flow, which only agents in the simulator use; "
                "l4sim emulate runs tcp and udp flows"
            )
        for end in (rf.src, rf.dst):
            if end not in hosts:
                node = index[end]
                if node >= 250 * 250:
                    raise EmulationError("l4sim emulate supports at most 62 500 nodes")
                hosts[end] = _Host(node, end, f"{PREFIX}{pid}-{end}", _addr(node))
        f = _Flow(
            rf.index,
            spec,
            hosts[rf.src],
            hosts[rf.dst],
            _BASE_PORT + rf.index,
            _SRC_PORT + rf.index,
        )
        if isinstance(spec, TcpFlow):
            kind = spec.cca.kind
            f.kernel_cca = _KERNEL_CCA.get(kind, kind)
            if f.kernel_cca not in available:
                raise EmulationError(
                    f"{where}.cca {kind!r} needs the kernel's {f.kernel_cca!r} congestion "
                    f"control, which this kernel does not offer (available: "
                    f"{' '.join(available) or 'none'})"
                )
            # tcp_ecn 1: ask for ECN; 2 (Linux default): only answer it.
            want = 1 if spec.ecn else 2
            asked = ecn_modes.setdefault(f.src.name, want)
            if asked != want:
                raise EmulationError(
                    f"{where}: host {f.src.name!r} sends flows with and without ECN, but the "
                    "kernel sets ECN per namespace (net.ipv4.tcp_ecn); give them "
                    "different hosts"
                )
            f.src.ecn = want
        flows.append(f)
    return list(hosts.values()), flows


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


def _teardown(hosts: list[_Host], router: subprocess.Popen[str] | None) -> None:
    if router is not None and router.poll() is None:
        with contextlib.suppress(OSError):
            router.terminate()
        try:
            router.wait(timeout=3)
        except subprocess.TimeoutExpired:
            router.kill()
            router.wait()
    for h in hosts:
        _ip("netns", "del", h.netns, check=False)


class _Terminated(KeyboardInterrupt):
    """SIGTERM during a run: unwind and clean up like Ctrl-C."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise _Terminated()


def emulate(
    scenario: Scenario | str | Path,
    *,
    spin_us: float = 0.0,
    realtime: bool = True,
    on_ready: Callable[[subprocess.Popen[str]], None] | None = None,
    out_dir: str | Path | None = None,
) -> Result:
    """Run ``scenario`` for its duration in real time on the kernel's TCP through the
    router; returns a :class:`~l4sim.results.Result` as :func:`l4sim.run` does.

    ``spin_us``: the router busy-waits this long before each event instead of sleeping
    (more accurate timing, one core busy). ``realtime``: run the router with SCHED_FIFO.
    The scenario's ``[[captures]]`` go into ``out_dir``: the real bytes the router sends
    on each link direction (docs/captures.md).
    """
    sc = scenario if isinstance(scenario, Scenario) else load(scenario)
    _check_host()
    router_cmd = find_router()
    captures = capture_files(sc, out_dir, "emulate")
    cleanup_leftovers()
    hosts, flows = _hosts_and_flows(sc, os.getpid())
    router: subprocess.Popen[str] | None = None
    traffic: _Traffic | None = None
    old_term = signal.getsignal(signal.SIGTERM)
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        signal.signal(signal.SIGTERM, _raise_terminated)
    tmp = Path(tempfile.mkdtemp(prefix="l4sim-emulate-"))
    try:
        for h in hosts:
            _make_host(h)
        config = {
            "sim": sc.to_core_config(),
            "hosts": [
                {"node": h.node, "netns": str(_NETNS_DIR / h.netns), "tun": _TUN, "addr": h.addr}
                for h in hosts
            ],
            "flows": [
                {"src": f.src.addr, "dst": f.dst.addr, "sport": f.sport, "dport": f.port}
                | {
                    "proto": socket.IPPROTO_TCP
                    if isinstance(f.spec, TcpFlow)
                    else socket.IPPROTO_UDP
                }
                for f in flows
            ],
            "stats_path": str(tmp / "router.json"),
            "spin_ns": round(spin_us * 1000),
            "realtime": realtime,
            "captures": [
                {"link": c.link, "path": str(path), "snaplen": c.snaplen} for c, path in captures
            ],
        }
        (tmp / "router-config.json").write_text(json.dumps(config))
        router = subprocess.Popen(
            [*router_cmd, str(tmp / "router-config.json")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # SIGKILLed when this thread ends (l4sim emulate killed), not left forwarding.
            preexec_fn=pdeathsig_preexec(),
        )
        assert router.stdout is not None
        line = router.stdout.readline().strip()
        if line != "ready":
            router.wait(timeout=5)
            err = (router.stderr.read() if router.stderr else "").strip()
            raise EmulationError(f"the router did not start: {err or 'no message'}")
        _wait_links_up(hosts)
        if on_ready is not None:
            on_ready(router)
        wall0 = time.perf_counter()
        t0 = time.monotonic()
        duration = sc.duration / 1e9
        traffic = _Traffic(flows, t0, t0 + duration)
        traffic.open()
        traffic.start()
        rows = _sample(sc, traffic, router)
        summary_flows = _flow_summaries(sc, traffic)
        router_stats = _stop_router(router, tmp / "router.json")
        wall = time.perf_counter() - wall0
    finally:
        if traffic is not None:
            traffic.close()
        _teardown(hosts, router)
        if main_thread:
            signal.signal(signal.SIGTERM, old_term)
        shutil.rmtree(tmp, ignore_errors=True)
    for f in flows:
        if f.error is not None:
            raise EmulationError(f.error)
    result = _result(sc, summary_flows, router_stats, rows, wall)
    for c in router_stats.get("captures", []):
        error = c.pop("error", None)
        if error is not None:
            raise EmulationError(f"the router {error}")
    result.captures = router_stats.get("captures", [])
    return result


def _sample(sc: Scenario, traffic: _Traffic, router: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """Sample every active flow each ``sample_interval`` until the run ends; watch the
    router. Returns the flow series rows."""
    iv = sc.sample_interval / 1e9
    rows: list[dict[str, Any]] = []
    prev: dict[int, tuple[int, int]] = {}
    k = 1
    while True:
        t = traffic.t0 + k * iv
        if t > traffic.end + 1e-9:
            break
        time.sleep(max(0.0, t - time.monotonic()))
        if router.poll() is not None:
            err = (router.stderr.read() if router.stderr else "").strip()
            raise EmulationError(
                f"the router stopped unexpectedly (exit status {router.returncode})"
                + (f": {err}" if err else "")
            )
        for f in traffic.flows:
            if f.error is not None:
                raise EmulationError(f.error)
            start = traffic.t0 + f.spec.start / 1e9
            if t < start or f.end_t is not None:
                continue
            info = _tcp_info(f.sender) if isinstance(f.spec, TcpFlow) and f.sender else None
            if info is not None and info[0] != 0:
                f.info = info
                if info[_RTT] > 0:
                    f.rtt_samples.append(info[_RTT] / 1e6)
                f.rate_samples.append(info[_DELIVERY_RATE] * 8.0)
            sent = info[_BYTES_SENT] if info is not None else f.received
            last_recv, last_sent = prev.get(f.index, (0, 0))
            d_recv, d_sent = f.received - last_recv, sent - last_sent
            prev[f.index] = (f.received, sent)
            ssthresh = info[_SSTHRESH] if info is not None else 0
            rows.append(
                {
                    "time_s": k * iv,
                    "flow": f.index,
                    "cwnd_pkts": info[_CWND] if info is not None else 0,
                    "ssthresh_pkts": math.nan
                    if info is None or ssthresh >= _INFINITE_SSTHRESH
                    else float(ssthresh),
                    "srtt_s": info[_RTT] / 1e6 if info is not None and info[_RTT] else math.nan,
                    "delivered_bytes": f.received,
                    "goodput_bps": d_recv * 8 / iv,
                    "throughput_bps": d_sent * 8 / iv,
                    "retransmits": info[_TOTAL_RETRANS] if info is not None else 0,
                    "bytes_in_flight": info[_UNACKED] * info[_MSS] if info is not None else 0,
                    "ca_state": _CA_STATES[info[_CA_STATE]]
                    if info is not None and info[_CA_STATE] < len(_CA_STATES)
                    else "",
                }
            )
        k += 1
    time.sleep(max(0.0, traffic.end - time.monotonic()))
    for f in traffic.flows:
        traffic.finish(f)
    return rows


def _flow_summaries(sc: Scenario, traffic: _Traffic) -> list[dict[str, Any]]:
    out = []
    for f in traffic.flows:
        spec = f.spec
        start = traffic.t0 + spec.start / 1e9
        received = f.received_at_end if f.received_at_end is not None else f.received
        if isinstance(spec, TcpFlow) and spec.size is not None:
            received = min(received, spec.size)
        active = f.fct if f.fct is not None else (f.end_t or traffic.end) - start
        per_s = 8 / active if active > 0 else 0.0
        info = f.info
        tcp = isinstance(spec, TcpFlow)
        out.append(
            {
                "id": f.index,
                "kind": spec.kind,
                "cca": spec.cca.kind if isinstance(spec, TcpFlow) else None,
                "kernel_cca": f.kernel_cca,
                "src": f.src.name,
                "dst": f.dst.name,
                "start_s": spec.start / 1e9,
                "goodput_bps": received * per_s,
                # The kernel counts no header bytes per flow: what arrived is its payload
                # (a lower bound of the simulator's throughput_bps, which adds headers).
                "throughput_bps": received * per_s,
                "send_rate_bps": (info[_BYTES_SENT] if info is not None else received) * per_s,
                "delivery_rate_bps": None,
                "delivery_rate_time_mean_bps": sum(f.rate_samples) / len(f.rate_samples)
                if f.rate_samples
                else None,
                "delivery_rate_last_bps": f.rate_samples[-1] if f.rate_samples else None,
                "bytes_acked": info[_BYTES_ACKED] if info is not None else received,
                "bytes_received": received,
                "bytes_sent": info[_BYTES_SENT] if info is not None else None,
                "retransmits": info[_TOTAL_RETRANS] if info is not None else 0,
                "timeouts": None,
                "rwnd_limited_s": info[_RWND_LIMITED] / 1e6 if tcp and info is not None else None,
                "srtt_mean_s": sum(f.rtt_samples) / len(f.rtt_samples) if f.rtt_samples else None,
                "fct_s": f.fct,
                # From the router (drops, CE-marked arrivals, one-way delay): `_result`.
                "drops": None,
                "ecn_marks": None,
                # UDP: CE-marked packets the receiver read; TCP: tcpi_delivered_ce (with
                # classic ECN, the packets acknowledged while ECE was set, tcp_ecn_rcv_ecn_echo).
                "ecn_marks_received": f.ce_packets if not tcp else None,
                "delivered_ce": info[_DELIVERED_CE] if tcp and info is not None else None,
                "owd_mean_s": None,
                "owd_p50_s": None,
                "owd_p99_s": None,
            }
        )
    return out


def _stop_router(router: subprocess.Popen[str], stats_path: Path) -> dict[str, Any]:
    assert router.stdin is not None
    try:
        router.stdin.write("stop\n")
        router.stdin.flush()
    except (BrokenPipeError, OSError):
        pass
    try:
        code = router.wait(timeout=10)
    except subprocess.TimeoutExpired:
        raise EmulationError("the router did not stop within 10 s of the end of the run") from None
    if code != 0 or not stats_path.is_file():
        err = (router.stderr.read() if router.stderr else "").strip()
        raise EmulationError(
            f"the router failed at the end of the run (exit status {code})"
            + (f": {err}" if err else "")
        )
    return json.loads(stats_path.read_text())


def _jain(xs: list[float]) -> float:
    s, s2 = sum(xs), sum(x * x for x in xs)
    return s * s / (len(xs) * s2) if xs and s2 > 0 else 1.0


def _result(
    sc: Scenario,
    flows: list[dict[str, Any]],
    router: dict[str, Any],
    rows: list[dict[str, Any]],
    wall: float,
) -> Result:
    for f, seen in zip(flows, router.get("flows", []), strict=False):
        f.update({k: v for k, v in seen.items() if k != "owd_n"})
    names = router["channels"]
    series = dict(router["series"])
    series["link"] = [names[i] for i in series["link"]]
    queues = (
        pl.DataFrame(series, schema=QUEUE_SCHEMA)
        if series["time_s"]
        else pl.DataFrame(schema=QUEUE_SCHEMA)
    )
    flow_frame = (
        pl.DataFrame(rows, schema=FLOW_SCHEMA) if rows else pl.DataFrame(schema=FLOW_SCHEMA)
    )
    uname = os.uname()
    summary: dict[str, Any] = {
        "scenario": sc.name,
        "sim_time_s": sc.duration / 1e9,
        "wall_time_s": wall,
        "events": router["counters"]["received"],
        "seed": sc.seed,
        "jain_fairness": _jain([f["goodput_bps"] for f in flows]),
        "flows": flows,
        "queues": router["queues"],
        "l4sim_version": __version__,
        "partial": False,
        "emulation": {
            "kernel": f"{uname.sysname} {uname.release}",
            "router_elapsed_s": router["elapsed_s"],
            "router": router["counters"],
            "router_lateness_us": router["lateness_us"],
            "scalable_tcp": [c for c in ("prague", "dctcp") if c in kernel_ccas()],
        },
    }
    return Result(summary=summary, flows=flow_frame, queues=queues, scenario=sc)
