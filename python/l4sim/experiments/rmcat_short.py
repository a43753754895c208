"""RFC 8867 5.7's short TCP flows, built from ordinary sized TCP flows: 10 users, each a
sequence of file downloads (a new connection each, 30-50 KB uniformly) separated by idle
times drawn from an exponential distribution of mean 10 s; 2 users start in the ON state,
the other 8 after a first idle time (RFC 8867 5.7, its traffic model from RFC 8868 6.1;
as cisco/ns3-rmcat's ``SetUpTCPShort``, the next download starts an idle time after the
previous one started). The draws come from the case's seed."""

from __future__ import annotations

import random
from typing import Any

USERS = 10
ON_AT_START = 2
MEAN_IDLE_S = 10.0
FILE_BYTES = (30_000, 50_000)
#: The seed stream the draws use, apart from the video's frame sizes.
_STREAM = 8867


def short_tcp_flows(seed: int, first_pair: int, duration_s: float) -> list[dict[str, Any]]:
    """The short TCP flows of one run: user ``k`` downloads on dumbbell pair
    ``first_pair + k`` (NewReno, as the case's long TCP flow)."""
    rng = random.Random(seed * 100_003 + _STREAM)
    flows: list[dict[str, Any]] = []
    for k in range(USERS):
        t = 0.0 if k < ON_AT_START else rng.expovariate(1.0 / MEAN_IDLE_S)
        while t < duration_s:
            size = rng.randint(*FILE_BYTES)
            pair = first_pair + k
            flows.append(
                {
                    "kind": "tcp",
                    "cca": "newreno",
                    "size": f"{size}B",
                    "start": f"{t:.6f}s",
                    "src": f"s{pair}",
                    "dst": f"d{pair}",
                }
            )
            t += rng.expovariate(1.0 / MEAN_IDLE_S)
    return flows


def collapse(rows: list[dict[str, Any]], media: int, duration_s: float) -> list[dict[str, Any]]:
    """A run's flow rows with its short TCP flows (ids from ``media``) as one: their bytes
    over the whole run, as one TCP row (its id the first's). Each row brings ``bytes``."""
    short = [r for r in rows if r["flow"] >= media]
    if not short:
        return rows
    total = sum(r.pop("bytes") for r in short)
    one = short[0] | {"rate_mbps": total * 8 / duration_s / 1e6}
    return [r for r in rows if r["flow"] < media] + [one]
