"""The remote-brain rules beside the trained agents (:mod:`l4sim.experiments.remote_brain.stage2`):
:func:`rate_rule`, a hand-written remote CC, and the unified system with N devices, M
control-path and L data-path competitors driven by it (:func:`nml_run`, :func:`nml_table`).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np

from l4sim.metrics import jain

#: The evaluation episodes' seed (unseen in training).
EVAL_SEED = 10_007


def rate_rule(obs: Any, share: float = 0.5) -> int:
    """A hand-written remote CC on the ``aware`` observation (log1p-compressed): aim the
    window at the fair share's rate times the RTT the state carries, ``share`` x BDP x
    sRTT / base RTT, and take the multiplicative step nearest to it from the window last
    commanded. A rate target does not overshoot when the action lands late (a window
    target, unlike a window step, says where to go, not how far), so the delay hurts little."""
    from l4sim.envs.remote import MULT_FACTORS

    o = np.expm1(np.asarray(obs, np.float64))
    srtt, commanded = o[4], o[11]
    if srtt <= 0 or commanded <= 0:
        return 1  # no RTT sample yet: grow
    ratio = math.log(share * srtt / commanded)
    return int(np.argmin([abs(ratio - math.log(f)) for f in MULT_FACTORS]))


def nml_run(
    n: int = 2,
    m: int = 2,
    l: int = 2,  # noqa: E741
    control_queue: str = "dualpi2",
    eval_s: float = 200.0,
) -> dict[str, Any]:
    """The unified system with N devices, M control-path and L data-path CUBIC flows, every
    device driven by :func:`rate_rule` aiming at 1 / (N + L) of the data bottleneck:
    per-flow goodputs, Jain over the N + L data flows and the mean control RTT."""
    from l4sim.envs.remote import RemoteTcpEnv

    share = 1.0 / (n + l)
    env = RemoteTcpEnv(
        n=n,
        m=m,
        l=l,
        control_queue=control_queue,
        duration_s=eval_s,
        obs_mode="aware",
        action_set="mult",
        reward="share",
        reward_kwargs={"n_flows": n + l},
        peer_policy=lambda o: rate_rule(np.log1p(o), share),
    )
    obs, _ = env.reset(seed=EVAL_SEED)
    truncated = False
    while not truncated:
        obs, _, _, truncated, _ = env.step(rate_rule(np.log1p(obs), share))
    flows = env.sim.summary()["flows"]
    ix = env.index
    iot = [flows[ix.iot(i)]["goodput_bps"] / 1e6 for i in range(n)]
    cubic = [flows[ix.data_cubic(k)]["goodput_bps"] / 1e6 for k in range(l)]
    return {
        "n": n,
        "m": m,
        "l": l,
        "control_queue": control_queue,
        "iot_mbps": iot,
        "cubic_mbps": cubic,
        "jain": jain(iot + cubic, idle=0.0),
        "control_rtt_ms": 1e3 * statistics.fmean(env.control_rtts_s),
    }


def nml_table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| N | M | L | control path | control RTT ms | IoT Mbit/s (each) | CUBIC Mbit/s (each) "
        "| Jain (N + L flows) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['n']} | {r['m']} | {r['l']} | {r['control_queue']} | {r['control_rtt_ms']:.0f} "
            f"| {' / '.join(f'{x:.2f}' for x in r['iot_mbps'])} "
            f"| {' / '.join(f'{x:.2f}' for x in r['cubic_mbps'])} | {r['jain']:.3f} |"
        )
    return "\n".join(lines) + "\n"
