"""The emulator's router on this machine (root needed; prints the figures of README
"Emulation"):

1. achieved rate at 10, 50 and 100 Mbit/s: a UDP flow at 120 % of the link rate through a
   two-host link (FIFO 1000 packets), the rate the receiver counts (IP bytes) against the
   configured one (goal: within 1 %);
2. added delay with an empty queue: 100-byte UDP probes every 2 ms over a 10 ms link,
   one-way delay (sender and receiver share CLOCK_MONOTONIC) minus the configured delay
   and the probe's serialisation time, p50 / p99 / max (goal: p99 within 100 us); the
   router's own lateness (when it hands a packet to the TUN device vs when the link model
   delivers it) beside it;
3. maximum forwarding rate: two sender processes blast 72-byte UDP packets through a
   10 Gbit/s link with no delay; packets forwarded per second. The senders share the CPU
   with the router, so this is a lower bound; the router's own cost per packet without
   I/O (``l4sim-router --bench``) gives the upper one.

    sudo python benchmarks/bench_emulate.py [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from l4sim import emulate as emu
from l4sim.scenario import loads


def two_host(rate: str, delay: str, seconds: float, flow: str, limit: str = "1000p") -> Any:
    return loads(
        f"""
name = "bench_emulate"
duration = "{seconds}s"
[topology]
preset = "two_host"
rate = "{rate}"
delay = "{delay}"
qdisc = {{ kind = "fifo", limit = "{limit}" }}
[[flows]]
{flow}
"""
    )


def rate_accuracy(mbps: int, seconds: float) -> dict[str, float]:
    sc = two_host(f"{mbps}Mbps", "1ms", seconds, f'kind = "udp"\nrate = "{1.2 * mbps:g}Mbps"')
    s = emu.emulate(sc).summary
    got = s["flows"][0]["goodput_bps"]
    # The first packet arrives one serialisation + 1 ms after the start: counted out.
    got *= seconds / (seconds - 1e-3 - 1500 * 8 / (mbps * 1e6))
    return {"configured_bps": mbps * 1e6, "achieved_bps": got, "err": got / (mbps * 1e6) - 1}


def _quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


PROBE_TX = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dst, gap, pad = (sys.argv[1], 7000), float(sys.argv[2]), bytes(int(sys.argv[3]) - 8)
t = time.monotonic() + 0.3
end = t + float(sys.argv[4])
while t < end:
    time.sleep(max(0.0, t - time.monotonic()))
    s.sendto(time.time_ns().to_bytes(8, "big") + pad, dst)
    t += gap
"""

PROBE_RX = """
import json, socket, struct, sys
TS = 35  # SO_TIMESTAMPNS (asm-generic/socket.h, 64-bit time: SO_TIMESTAMPNS_OLD)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, TS, 1)
s.bind((sys.argv[1], 7000))
s.settimeout(float(sys.argv[2]))
out = []
try:
    while True:
        data, anc, _, _ = s.recvmsg(2048, 64)
        for level, kind, v in anc:
            if level == socket.SOL_SOCKET and kind == TS:
                sec, ns = struct.unpack("qq", v[:16])
                out.append(sec * 10**9 + ns - int.from_bytes(data[:8], "big"))
except TimeoutError:
    pass
print(json.dumps(out))
"""


def delay_accuracy(mbps: int, seconds: float, spin_us: float) -> dict[str, float]:
    """One-way delay of probes sent by one process in h0 and received by another in h1
    (no threads beside them: no GIL in the measurement), from the sender's clock just
    before sendto to the receiving kernel's timestamp (SO_TIMESTAMPNS, when the router's
    write hands the packet to h1's stack)."""
    delay_s, payload, gap = 10e-3, 100, 2e-3
    sc = two_host(f"{mbps}Mbps", "10ms", seconds, 'kind = "udp"\nrate = "8kbps"')
    procs: list[subprocess.Popen[str]] = []

    def probe(router: Any) -> None:
        ns = f"{emu.PREFIX}{os.getpid()}-"
        run = ["ip", "netns", "exec"]
        procs.append(
            subprocess.Popen(
                [*run, ns + "h1", sys.executable, "-c", PROBE_RX, emu._addr(1), "1.0"],
                stdout=subprocess.PIPE,
                text=True,
            )
        )
        time.sleep(0.1)
        args = [emu._addr(1), str(gap), str(payload), str(seconds - 1.0)]
        procs.append(subprocess.Popen([*run, ns + "h0", sys.executable, "-c", PROBE_TX, *args]))

    s = emu.emulate(sc, on_ready=probe, spin_us=spin_us).summary
    procs[1].wait()
    samples = [x / 1e9 for x in json.loads(procs[0].communicate()[0] or "[]")]
    # IPv4 + UDP headers: 28 bytes on the wire beside the payload.
    expected = delay_s + (payload + 28) * 8 / (mbps * 1e6)
    err = [x - expected for x in samples]
    late = s["emulation"]["router_lateness_us"]
    return {
        "probes": len(err),
        "p50_us": 1e6 * _quantile(err, 0.5),
        "p99_us": 1e6 * _quantile(err, 0.99),
        "max_us": 1e6 * max(err),
        "min_us": 1e6 * min(err),
        "router_late_p99_us": late["p99"],
        "router_late_max_us": late["max"],
    }


BLASTER = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dst, end, n = (sys.argv[1], 5000), time.monotonic() + float(sys.argv[2]), 0
buf = bytes(44)
while time.monotonic() < end:
    for _ in range(1000):
        try:
            s.sendto(buf, dst)
        except OSError:
            pass
    n += 1000
print(n)
"""


def forwarding_rate(seconds: float, senders: int = 2) -> dict[str, float]:
    sc = two_host("10Gbps", "0ms", seconds + 1.5, 'kind = "udp"\nrate = "8kbps"', "10000p")
    procs: list[subprocess.Popen[str]] = []

    def blast(router: Any) -> None:
        ns = f"{emu.PREFIX}{os.getpid()}-h0"
        cmd = ["ip", "netns", "exec", ns, sys.executable, "-c", BLASTER]
        for _ in range(senders):
            procs.append(
                subprocess.Popen(
                    [*cmd, emu._addr(1), str(seconds)],
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )

    s = emu.emulate(sc, on_ready=blast).summary
    sent = sum(int(p.communicate()[0] or 0) for p in procs)
    c = s["emulation"]["router"]
    return {
        "offered_pps": sent / seconds,
        "forwarded_pps": c["delivered"] / seconds,
        "dropped": c["dropped"] + c["pool_full"],
    }


def router_cpu() -> dict[str, float]:
    out = subprocess.run(
        [*emu.find_router(), "--bench", "2000000"], capture_output=True, text=True, check=True
    ).stdout
    return {k: float(v) for k, v in (x.split("=") for x in out.split())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument(
        "--spin-us", type=float, nargs="*", default=[0.0, 200.0], help="router busy-wait values"
    )
    args = ap.parse_args()
    print("rate accuracy (UDP at 120 % of the link, receiver's count of IP bytes):")
    for mbps in (10, 50, 100):
        r = rate_accuracy(mbps, args.seconds)
        print(
            f"  {mbps:>3} Mbit/s: achieved {r['achieved_bps'] / 1e6:.3f} Mbit/s "
            f"({100 * r['err']:+.2f} %)",
            flush=True,
        )
    print("added delay with an empty queue (one-way, minus 10 ms and serialisation):")
    for spin in args.spin_us:
        for mbps in (10, 50, 100):
            d = delay_accuracy(mbps, args.seconds, spin)
            print(
                f"  spin {spin:g} us, {mbps:>3} Mbit/s: {d['probes']} probes, "
                f"p50 {d['p50_us']:.0f} us, p99 {d['p99_us']:.0f} us, max {d['max_us']:.0f} us "
                f"(min {d['min_us']:.0f} us); router lateness p99 "
                f"{d['router_late_p99_us']:.0f} us, max {d['router_late_max_us']:.0f} us",
                flush=True,
            )
    f = forwarding_rate(args.seconds)
    print(
        f"forwarding: {f['forwarded_pps']:,.0f} packets/s forwarded of {f['offered_pps']:,.0f} "
        f"offered by 2 Python senders ({f['dropped']:,.0f} dropped)"
    )
    c = router_cpu()
    print(
        f"router without I/O: {c['ns_per_pkt']:.0f} ns per packet "
        f"({1e9 / c['ns_per_pkt']:,.0f} packets/s on one core)"
    )


if __name__ == "__main__":
    main()
