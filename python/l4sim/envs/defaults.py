"""Default scenarios of the environments (10 Mbps dumbbells), as plain scenario dicts."""

from __future__ import annotations

from typing import Any

__all__ = [
    "AQM_SCENARIO",
    "DUALPI2_SCENARIO",
    "MEDIA_SCENARIO",
    "MULTI_SCENARIO",
    "TCP_HEAVY_SCENARIO",
    "TCP_SCENARIO",
]


def _dumbbell(
    name: str, rate: str, delay: str, qdisc: dict[str, Any], flows: list[dict[str, Any]]
) -> dict[str, Any]:
    """A 20 s dumbbell scenario: one bottleneck of ``rate`` / ``delay`` with ``qdisc``."""
    return {
        "name": name,
        "duration": "20s",
        "topology": {
            "preset": "dumbbell",
            "bottleneck": {"rate": rate, "delay": delay, "qdisc": qdisc},
        },
        "flows": flows,
    }


_AGENT_TCP = {"kind": "tcp", "cca": "external"}

TCP_SCENARIO: dict[str, Any] = _dumbbell(
    "env_tcp_cwnd", "10Mbps", "20ms", {"kind": "fifo", "limit": "100p"}, [dict(_AGENT_TCP)]
)
"""One agent-controlled TCP flow over a 10 Mbps / 20 ms bottleneck (RTT 44 ms), FIFO 100p."""

TCP_HEAVY_SCENARIO: dict[str, Any] = _dumbbell(
    "env_tcp_cwnd_heavy",
    "100Mbps",
    "20ms",
    {"kind": "fifo", "limit": "500p"},
    [dict(_AGENT_TCP), {"kind": "tcp", "cca": "cubic", "count": 3}],
)
"""The agent's TCP flow beside three CUBIC flows at 100 Mbps (FIFO 500p): a
simulation-bound env (~250 us of simulation per 100 ms step, Python ~15 us), where
``SimBatchVectorEnv`` runs its simulations on every core."""

AQM_SCENARIO: dict[str, Any] = _dumbbell(
    "env_aqm_drop",
    "10Mbps",
    "20ms",
    {"kind": "external", "limit": "1000p"},
    [{"kind": "tcp", "cca": "cubic", "count": 2}],
)
"""Two CUBIC flows through an agent-controlled drop queue (10 Mbps / 20 ms)."""

DUALPI2_SCENARIO: dict[str, Any] = _dumbbell(
    "env_dualpi2",
    "10Mbps",
    "10ms",
    {"kind": "dualpi2"},
    [{"kind": "tcp", "cca": "prague"}, {"kind": "tcp", "cca": "cubic"}],
)
"""A Prague and a CUBIC flow through DualPI2 (10 Mbps / 10 ms), the agent sets p'."""

MULTI_SCENARIO: dict[str, Any] = _dumbbell(
    "env_macc",
    "10Mbps",
    "20ms",
    {"kind": "external", "limit": "385p"},
    [dict(_AGENT_TCP), dict(_AGENT_TCP)],
)
"""MA-CC style: two agent-controlled TCP flows and an agent-controlled AQM (an ``external``
qdisc of 385p, as MA-CC's)."""

MEDIA_SCENARIO: dict[str, Any] = _dumbbell(
    "env_media_rate",
    "10Mbps",
    "20ms",
    {"kind": "dualpi2"},
    [
        {
            "kind": "udp",
            "rate": "2Mbps",
            "packet_size": "1200B",
            "ecn": "ect1",
            "source": {"kind": "video", "fps": 30, "lag": "100ms", "deadline": "100ms"},
            "feedback": {"kind": "rfc8888", "interval": "20ms"},
        },
        {"kind": "tcp", "cca": "cubic", "start": "2s"},
    ],
)
"""The agent's ECT(1) video (30 frames/s, starting at 2 Mbps, encoder lag 100 ms, deadline
100 ms, RFC 8888 feedback every 20 ms, no congestion control) through DualPI2's L queue at
10 Mbps / 20 ms (RTT 44 ms), beside a bulk CUBIC flow from 2 s in the Classic queue: the
coupled AQM marks the video's packets as the Classic load rises, and an agent that sends
more than its share sees its frames queue."""
