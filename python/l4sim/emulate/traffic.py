"""The emulator's traffic: the scenario's flows as real sockets inside the hosts' namespaces
(bulk and sized TCP, UDP at a rate with its ECN codepoint), one thread per endpoint,
``TCP_INFO`` sampled every interval, and each flow's summary from what the kernel reported
(see :mod:`l4sim.emulate`).
"""

from __future__ import annotations

import contextlib
import math
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from l4sim.emulate import commands
from l4sim.emulate.netns import (
    _Host,
    _in_netns,
)
from l4sim.errors import EmulationError
from l4sim.scenario import Scenario
from l4sim.scenario.flows import CommandFlow, TcpFlow, UdpFlow

_BASE_PORT = 5000  # receivers listen on 5000 + flow index


_SRC_PORT = 20000  # senders bind 20000 + flow index: the router knows each 5-tuple


_IP_RECVTOS = 13  # linux/in.h


_CA_STATES = ("open", "disorder", "cwr", "recovery", "loss")  # linux/tcp.h tcp_ca_state


# struct tcp_info (linux/tcp.h, through tcpi_bytes_retrans): 8 u8, 24 u32, 4 u64, 6 u32,
# 4 u64, 2 u32, 2 u64.
_TCP_INFO = struct.Struct("=8B24I4Q6I4Q2I2Q")


_INFINITE_SSTHRESH = 0x7FFFFFFF  # TCP_INFINITE_SSTHRESH


_ECN_TOS = {"not_ect": 0, "ect1": 1, "ect0": 2, "ce": 3}  # RFC 3168 §5


# Congestion controls the receiver runs too: DCTCP's SYN is ECT, which a Linux listener
# answers with ECN only when its own CC needs ECN (tcp_ecn_create_request), and its
# receiver echoes each change of CE state (RFC 8257 §3.2) rather than RFC 3168's ECE latch.
# Prague's SYN asks for Accurate ECN, which a Linux 6.18 listener grants only when its own CC
# needs it (tcp_ecn_create_request, tcp_ca_needs_accecn): its sysctl tcp_ecn stops at 2.
_RECEIVER_TOO = ("dctcp", "l4sim_dctcp", "l4sim_prague")


@dataclass
class _Flow:
    index: int
    spec: TcpFlow | UdpFlow | CommandFlow
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

    def __init__(self, flows: list[_Flow], t0: float, end: float, out: Path | None = None) -> None:
        self.flows = flows
        self.t0 = t0
        self.end = end
        self.out = out  # where command flows' logs go
        self.stop = threading.Event()

    def open(self) -> None:
        for f in self.flows:
            if isinstance(f.spec, CommandFlow):
                continue  # its programs open their own sockets
            if isinstance(f.spec, TcpFlow):
                with _in_netns(f.dst.netns):
                    lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    if f.kernel_cca in _RECEIVER_TOO:
                        cc = f.kernel_cca.encode()
                        lst.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc)
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
            if isinstance(f.spec, CommandFlow):
                targets: tuple[Callable[[_Flow], None], ...] = (self._command,)
            elif isinstance(f.spec, TcpFlow):
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

    def _command(self, f: _Flow) -> None:
        assert self.out is not None
        commands.run(f, self.t0, self._active_end(f), self.stop, self.out)
        self.finish(f)

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
        assert s is not None and isinstance(spec, UdpFlow) and spec.rate is not None
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
                # A command flow's programs get their grace period after SIGTERM.
                t.join(timeout=2.0 + commands._TERM_GRACE_S * isinstance(f.spec, CommandFlow))


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
            if t < start or f.end_t is not None or isinstance(f.spec, CommandFlow):
                continue  # a command flow's program measures its own rate
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
        if isinstance(spec, CommandFlow):
            # Its program counts its own bytes (its log); the router adds drops, CE marks
            # and one-way delay of its packets from sport to port.
            out[-1] |= dict.fromkeys(_COMMAND_UNKNOWN)
    return out


_COMMAND_UNKNOWN = (
    "goodput_bps",
    "throughput_bps",
    "send_rate_bps",
    "bytes_acked",
    "bytes_received",
    "ecn_marks_received",
)
