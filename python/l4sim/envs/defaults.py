"""Default scenarios of the environments (10 Mbps dumbbells), as plain scenario dicts."""

from __future__ import annotations

from typing import Any

__all__ = [
    "AQM_SCENARIO",
    "DUALPI2_SCENARIO",
    "MULTI_SCENARIO",
    "TCP_HEAVY_SCENARIO",
    "TCP_SCENARIO",
]

TCP_SCENARIO: dict[str, Any] = {
    "name": "env_tcp_cwnd",
    "duration": "20s",
    "topology": {
        "preset": "dumbbell",
        "bottleneck": {
            "rate": "10Mbps",
            "delay": "20ms",
            "qdisc": {"kind": "fifo", "limit": "100p"},
        },
    },
    "flows": [{"kind": "tcp", "cca": "external"}],
}
"""One agent-controlled TCP flow over a 10 Mbps / 20 ms bottleneck (RTT 44 ms), FIFO 100p."""

TCP_HEAVY_SCENARIO: dict[str, Any] = {
    "name": "env_tcp_cwnd_heavy",
    "duration": "20s",
    "topology": {
        "preset": "dumbbell",
        "bottleneck": {
            "rate": "100Mbps",
            "delay": "20ms",
            "qdisc": {"kind": "fifo", "limit": "500p"},
        },
    },
    "flows": [{"kind": "tcp", "cca": "external"}, {"kind": "tcp", "cca": "cubic", "count": 3}],
}
"""The agent's TCP flow beside three CUBIC flows at 100 Mbps (FIFO 500p): a
simulation-bound env (~250 us of simulation per 100 ms step, Python ~15 us), where
``SimBatchVectorEnv`` runs its simulations on every core."""

AQM_SCENARIO: dict[str, Any] = {
    "name": "env_aqm_drop",
    "duration": "20s",
    "topology": {
        "preset": "dumbbell",
        "bottleneck": {
            "rate": "10Mbps",
            "delay": "20ms",
            "qdisc": {"kind": "external", "limit": "1000p"},
        },
    },
    "flows": [{"kind": "tcp", "cca": "cubic", "count": 2}],
}
"""Two CUBIC flows through an agent-controlled drop queue (10 Mbps / 20 ms)."""

DUALPI2_SCENARIO: dict[str, Any] = {
    "name": "env_dualpi2",
    "duration": "20s",
    "topology": {
        "preset": "dumbbell",
        "bottleneck": {"rate": "10Mbps", "delay": "10ms", "qdisc": {"kind": "dualpi2"}},
    },
    "flows": [
        {"kind": "tcp", "cca": "prague"},
        {"kind": "tcp", "cca": "cubic"},
    ],
}
"""A Prague and a CUBIC flow through DualPI2 (10 Mbps / 10 ms), the agent sets p'."""

MULTI_SCENARIO: dict[str, Any] = {
    "name": "env_macc",
    "duration": "20s",
    "topology": {
        "preset": "dumbbell",
        "bottleneck": {
            "rate": "10Mbps",
            "delay": "20ms",
            "qdisc": {"kind": "external", "limit": "385p"},
        },
    },
    "flows": [{"kind": "tcp", "cca": "external"}, {"kind": "tcp", "cca": "external"}],
}
"""MA-CC style: two agent-controlled TCP flows and an agent-controlled AQM (an ``external``
qdisc of 385p, paper 002)."""
