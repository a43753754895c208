"""A tcptrace-style (Stevens) time-sequence graph of one TCP flow from pcap files.

    python scripts/plot_stevens.py DATA.pcap [ACKS.pcap] [-o FIG.png] [--flow 0]
        [--start 1.0 --end 1.3]

DATA.pcap holds the flow's data segments (e.g. a capture of the bottleneck's forward
direction), ACKS.pcap its ACKs (the reverse direction); both as `l4sim run` writes them
for a scenario's ``[[captures]]`` (docs/captures.md), or any raw-IP / Ethernet pcap. Drawn:
each data segment as a vertical bar from its first to its last byte (CE-marked ones in
red, retransmissions in orange), the cumulative ACK as a step line, the receive window's
right edge, and each SACK block as a green bar at the ACK's time. Sequence numbers are
relative to the SYN (or to the first segment seen). Needs dpkt and matplotlib.
"""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import dpkt
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

RECEIVER_PORT = 5001  # l4sim's receivers listen here; a sender's port is 10000 + flow


def packets(path: Path) -> list[tuple[float, dpkt.ip.IP]]:
    """(time s, IP packet) of every TCP packet in ``path``."""
    out = []
    with path.open("rb") as fh:
        reader = dpkt.pcap.Reader(fh)
        raw = reader.datalink() in (101, 228)
        for ts, buf in reader:
            ip = dpkt.ip.IP(buf) if raw else dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
                out.append((float(ts), ip))
    return out


def sack_blocks(tcp: dpkt.tcp.TCP) -> list[tuple[int, int]]:
    for kind, value in dpkt.tcp.parse_opts(tcp.opts):
        if kind == dpkt.tcp.TCP_OPT_SACK:
            edges = [int.from_bytes(value[i : i + 4], "big") for i in range(0, len(value), 4)]
            return list(zip(edges[::2], edges[1::2], strict=False))
    return []


def plot(
    data: Path,
    acks: Path | None,
    out: Path,
    flow: int = 0,
    start: float | None = None,
    end: float | None = None,
) -> Path:
    sport = 10_000 + flow
    segs = [(t, ip) for t, ip in packets(data) if ip.data.sport == sport]
    if not segs:
        raise SystemExit(f"{data}: no packet of flow {flow} (source port {sport})")
    syn = [ip.data.seq for _, ip in segs if ip.data.flags & dpkt.tcp.TH_SYN]
    base = syn[0] + 1 if syn else segs[0][1].data.seq

    def rel(x: int) -> float:
        return ((x - base) % 2**32) / 1e6  # MB

    def shown(t: float) -> bool:
        return (start is None or t >= start) and (end is None or t <= end)

    fig, ax = plt.subplots(figsize=(9, 5.5))
    high = 0.0
    kinds: dict[str, list[tuple[float, float, float]]] = {"data": [], "rtx": [], "ce": []}
    for t, ip in segs:
        n = ip.len - 20 - 4 * ip.data.off
        if n <= 0:
            continue
        s = rel(ip.data.seq)
        kind = "ce" if ip.tos & 3 == 3 else "rtx" if s < high else "data"
        high = max(high, s + n / 1e6)
        if shown(t):
            kinds[kind].append((t, s, s + n / 1e6))
    style = {
        "data": ("black", "data segment"),
        "rtx": ("tab:orange", "retransmission"),
        "ce": ("tab:red", "CE-marked segment"),
    }
    for kind, rows in kinds.items():
        if rows:
            colour, label = style[kind]
            ax.vlines(
                [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                colors=colour, linewidth=1.2, label=label,
            )  # fmt: skip
            if kind == "rtx":  # one segment among hundreds: mark it
                ax.scatter([r[0] for r in rows], [r[2] for r in rows], s=40, marker="o",
                           facecolors="none", edgecolors=colour, zorder=3)  # fmt: skip
    if acks is not None:
        ack_rows = [
            (t, ip.data)
            for t, ip in packets(acks)
            if ip.data.dport == sport and not ip.data.flags & dpkt.tcp.TH_SYN and shown(t)
        ]
        if ack_rows:
            times = [t for t, _ in ack_rows]
            ax.step(times, [rel(a.ack) for _, a in ack_rows], where="post",
                    color="tab:blue", linewidth=1, label="cumulative ACK")  # fmt: skip
            sacks = [(t, rel(s), rel(e)) for t, a in ack_rows for s, e in sack_blocks(a)]
            if sacks:
                ax.vlines([x[0] for x in sacks], [x[1] for x in sacks], [x[2] for x in sacks],
                          colors="tab:green", linewidth=2.5, alpha=0.7,
                          label="SACK block")  # fmt: skip
    ax.set_xlabel("time (s)")
    ax.set_ylabel("relative sequence number (MB)")
    src = socket.inet_ntoa(segs[0][1].src)
    dst = socket.inet_ntoa(segs[0][1].dst)
    ax.set_title(f"Time-sequence graph, {src}:{sport} → {dst}:{RECEIVER_PORT}")
    ax.legend(loc="upper left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("data", type=Path, help="pcap with the flow's data segments")
    p.add_argument("acks", type=Path, nargs="?", help="pcap with its ACKs")
    p.add_argument("-o", "--out", type=Path, default=Path("stevens.png"))
    p.add_argument("--flow", type=int, default=0, help="flow index (source port 10000 + flow)")
    p.add_argument("--start", type=float, help="first time shown (s)")
    p.add_argument("--end", type=float, help="last time shown (s)")
    a = p.parse_args()
    print(plot(a.data, a.acks, a.out, a.flow, a.start, a.end))


if __name__ == "__main__":
    main()
