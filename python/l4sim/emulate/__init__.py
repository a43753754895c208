"""``l4sim emulate``: a scenario's links and qdiscs on real Linux TCP between network
namespaces.

Each host of the scenario (a flow endpoint) gets a network namespace ``l4e<pid>-<node>``
holding one TUN device with address ``10.77.0.<node + 1>``; nothing else, no default route,
so traffic cannot leave the run's namespaces. The Rust router ``l4sim-router``
(``crates/l4sim-emu``, carried by the extension: ``python -m l4sim.emulate.router``) holds the TUN
devices and forwards every packet through the scenario's links as the simulator models them
(the core's ``Channel``: the qdisc of each link direction, serialisation at its rate,
propagation delay, i.i.d. loss), writing CE marks into the IP headers. The endpoints are the
kernel's TCP: the congestion control is set per socket (``TCP_CONGESTION``), ECN per
namespace (``net.ipv4.tcp_ecn``); ``cca = "dctcp"`` (``"prague"``) on a kernel without
``tcp_dctcp`` (``tcp_prague``) is a BPF DCTCP (Prague) loaded for the run
(:mod:`l4sim.emulate.bpf`). A traffic generator in this process (sockets opened inside the
namespaces with ``setns(2)``, one thread per endpoint) runs the scenario's flows and samples
``TCP_INFO``.

The results have the shape of ``l4sim run``'s: ``summary.json`` (per-flow goodput from
the receiver; RTT, cwnd, retransmits and delivery rate from ``TCP_INFO``; per-queue
sojourn, backlog, drops, marks and utilisation from the router), ``flows.parquet``,
``queues.parquet`` and ``scenario.toml``.

The hosts (namespaces, TUN devices, cleanup) are in :mod:`l4sim.emulate.netns`, the traffic
generator and ``TCP_INFO`` sampling in :mod:`l4sim.emulate.traffic`; this module checks the
host, starts the router and puts the results together.

Needs root (namespaces, TUN devices). Namespaces, devices and processes are removed on
exit, on Ctrl-C or SIGTERM and when the router dies; the router dies with the process that
started it, even a SIGKILLed one (``PR_SET_PDEATHSIG``); namespaces left by a run that was
killed (``l4e<pid>-`` of a process that no longer exists) are removed by the next run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from l4sim._version import __version__
from l4sim.emulate import bpf as emulate_bpf
from l4sim.emulate import commands
from l4sim.emulate.netns import (
    _NETNS_DIR,
    _TUN,
    PREFIX,
    _addr,
    _Host,
    _ip,
    _make_host,
    _wait_links_up,
    cleanup_leftovers,
)
from l4sim.emulate.traffic import (
    _BASE_PORT,
    _SRC_PORT,
    _Flow,
    _flow_summaries,
    _sample,
    _Traffic,
)
from l4sim.engine.capture import capture_files
from l4sim.engine.results import Result
from l4sim.engine.simulation import FLOW_SCHEMA, QUEUE_SCHEMA
from l4sim.errors import EmulationError
from l4sim.metrics import jain
from l4sim.native import core
from l4sim.processes import pdeathsig_preexec
from l4sim.scenario import Scenario, core_json, load
from l4sim.scenario.flows import CommandFlow, ControlFlow, TcpFlow

__all__ = ["PREFIX", "cleanup_leftovers", "emulate", "find_router", "kernel_ccas"]


# The scenario's cca kinds by the kernel's names (tcp_<name>.c).
_KERNEL_CCA = {"newreno": "reno"}


_euid: Callable[[], int] = os.geteuid


"""The effective user id (a seam for the no-root test)."""


def find_router() -> list[str]:
    """The command that starts the emulator's router: ``$L4SIM_ROUTER`` (a stand-alone
    ``l4sim-router`` binary, e.g. ``target/release/l4sim-router`` from
    ``cargo build --release -p l4sim-emu``) when set, else the router the extension carries
    (``python -m l4sim.emulate.router``), so an installed wheel emulates without Rust."""
    env = os.environ.get("L4SIM_ROUTER")
    if env:
        if not os.access(env, os.X_OK):
            raise EmulationError(f"L4SIM_ROUTER {env!r} is not an executable file")
        return [env]
    if not hasattr(core(), "router_main"):
        raise EmulationError(
            "this build of l4sim's extension carries no emulator router; reinstall l4sim "
            "(pip install .) or set L4SIM_ROUTER to an l4sim-router binary"
        )
    return [sys.executable, "-m", "l4sim.emulate.router"]


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


_BPF_PRAGUE = emulate_bpf.BPF_CCAS["prague"]


def _kernel_cca(kind: str, available: list[str]) -> str:
    """The kernel's name for cca ``kind``: its own module when it has one, else the BPF
    stand-in (:mod:`l4sim.emulate.bpf`, loaded for the run) when this host can load it."""
    name = _KERNEL_CCA.get(kind, kind)
    bpf = emulate_bpf.BPF_CCAS.get(kind)
    if name in available or bpf is None:
        return name
    emulate_bpf.check_tools(kind)
    return bpf


def _hosts_and_flows(scenario: Scenario, pid: int) -> tuple[list[_Host], list[_Flow]]:
    names = scenario.node_names()
    index = {n: i for i, n in enumerate(names)}
    hosts: dict[str, _Host] = {}
    flows: list[_Flow] = []
    available = kernel_ccas()
    ecn_modes: dict[str, int] = {}
    if scenario.topology.core_wifi():
        raise EmulationError(
            "topology.wifi (a Wi-Fi BSS) runs only in the simulator; the emulator's router "
            "does not run the 802.11 MAC"
        )
    for rf in scenario.resolved_flows():
        where = f"flows[{rf.source_index}]"
        spec = rf.spec
        if isinstance(spec, ControlFlow):
            raise EmulationError(
                f"{where} is a control flow, which only agents in the simulator use; "
                "l4sim emulate runs tcp and udp flows"
            )
        if any(getattr(spec, k, None) is not None for k in ("source", "feedback", "cc")):
            raise EmulationError(
                f"{where} is a media flow (source, feedback or cc), which only the simulator "
                "runs; l4sim emulate runs constant-bit-rate udp flows"
            )
        if isinstance(spec, CommandFlow):
            commands.check_programs(spec, where)
        for end in (rf.src, rf.dst):
            if end not in hosts:
                node = index[end]
                if node >= 250 * 250:
                    raise EmulationError("l4sim emulate supports at most 62 500 nodes")
                hosts[end] = _Host(node, end, f"{PREFIX}{pid}-{end}", _addr(node))
        port, sport = _BASE_PORT + rf.index, _SRC_PORT + rf.index
        if isinstance(spec, CommandFlow):
            port = spec.port or port
            sport = spec.sport or port
        f = _Flow(rf.index, spec, hosts[rf.src], hosts[rf.dst], port, sport)
        if isinstance(spec, TcpFlow):
            kind = spec.cca.kind
            f.kernel_cca = _kernel_cca(kind, available)
            if f.kernel_cca not in available and f.kernel_cca not in emulate_bpf.BPF_CCAS.values():
                raise EmulationError(
                    f"{where}.cca {kind!r} needs the kernel's {f.kernel_cca!r} congestion "
                    f"control, which this kernel does not offer (available: "
                    f"{' '.join(available) or 'none'})"
                )
            # tcp_ecn 1: ask for ECN; 2 (Linux default): only answer it. DCTCP needs ECN;
            # Prague's socket asks for it whatever the sysctl (TCP_CONG_NEEDS_ECN).
            forced = "ecn" in type(spec.cca).ecn_needs and kind != "dctcp"
            want = 1 if (spec.ecn and not forced) or kind == "dctcp" else 2
            asked = ecn_modes.setdefault(f.src.name, want)
            if asked != want:
                raise EmulationError(
                    f"{where}: host {f.src.name!r} sends flows with and without ECN, but the "
                    "kernel sets ECN per namespace (net.ipv4.tcp_ecn); give them "
                    "different hosts"
                )
            f.src.ecn = want
        flows.append(f)
    for h in hosts.values():
        sent = {f.kernel_cca == _BPF_PRAGUE for f in flows if f.src is h}
        if len(sent) > 1:
            raise EmulationError(
                f"host {h.name!r} sends BPF Prague and other flows, but the ECT(1) marker "
                "of the BPF Prague works per host; give them different hosts"
            )
        h.ect1 = sent == {True}
    return list(hosts.values()), flows


def _teardown(
    hosts: list[_Host], router: subprocess.Popen[str] | None, bpf: Sequence[str] = ()
) -> None:
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
    for kind in bpf:
        emulate_bpf.unload(kind)


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
    router; returns a :class:`~l4sim.engine.results.Result` as :func:`l4sim.run` does.

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
    emulate_bpf.cleanup_leftovers()
    hosts, flows = _hosts_and_flows(sc, os.getpid())
    if any(isinstance(f.spec, CommandFlow) for f in flows):
        if out_dir is None:
            raise EmulationError(
                f"scenario {sc.name!r} has command flows, whose programs' logs need an "
                "output directory; pass out_dir= to emulate, or run it from the command line"
            )
        Path(out_dir).mkdir(parents=True, exist_ok=True)
    bpf_kinds = sorted(
        {k for k, name in emulate_bpf.BPF_CCAS.items() if any(f.kernel_cca == name for f in flows)}
    )
    loaded: list[str] = []
    router: subprocess.Popen[str] | None = None
    traffic: _Traffic | None = None
    old_term = signal.getsignal(signal.SIGTERM)
    main_thread = threading.current_thread() is threading.main_thread()
    if main_thread:
        signal.signal(signal.SIGTERM, _raise_terminated)
    tmp = Path(tempfile.mkdtemp(prefix="l4sim-emulate-"))
    try:
        for kind in bpf_kinds:
            if emulate_bpf.load(kind):
                loaded.append(kind)
        for h in hosts:
            _make_host(h)
            if h.ect1:
                emulate_bpf.attach_ect1(h.netns, _TUN)
        config = {
            "sim": sc.to_core_config(without_commands=True),
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
        (tmp / "router-config.json").write_text(core_json(config))
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
        out = Path(out_dir).resolve() if out_dir is not None else None
        traffic = _Traffic(flows, t0, t0 + duration, out)
        traffic.open()
        traffic.start()
        rows = _sample(sc, traffic, router)
        summary_flows = _flow_summaries(sc, traffic)
        router_stats = _stop_router(router, tmp / "router.json")
        wall = time.perf_counter() - wall0
    finally:
        if traffic is not None:
            traffic.close()
        _teardown(hosts, router, loaded)
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
    bpf_names = set(emulate_bpf.BPF_CCAS.values())
    summary: dict[str, Any] = {
        "scenario": sc.name,
        "sim_time_s": sc.duration / 1e9,
        "wall_time_s": wall,
        "events": router["counters"]["received"],
        "seed": sc.seed,
        # null when nothing was delivered, as the core's summary: Jain's index is 0/0 there
        # (a command flow's rate is its program's to measure: not counted)
        "jain_fairness": jain(goodputs)
        if any(goodputs := [f["goodput_bps"] for f in flows if f["kind"] != "command"])
        else None,
        "flows": flows,
        "queues": router["queues"],
        "l4sim_version": __version__,
        "partial": False,
        "emulation": {
            "kernel": f"{uname.sysname} {uname.release}",
            "router_elapsed_s": router["elapsed_s"],
            "router": router["counters"],
            "router_lateness_us": router["lateness_us"],
            "scalable_tcp": [c for c in ("prague", "dctcp") if c in kernel_ccas()]
            + sorted({f["kernel_cca"] for f in flows if f.get("kernel_cca") in bpf_names}),
        },
    }
    return Result(summary=summary, flows=flow_frame, queues=queues, scenario=sc)
