"""LFQ offline training by A/B forks (paper 001 section III; the authors' ``rl.cc``
``experiment`` with ``ACTOR_CRITIC = false``), CleanRL style: every hyper-parameter is a
field of :class:`LfqConfig`, the algorithm reads top to bottom in :func:`train`.

One rollout (:func:`rollout`, a module-level function so that a process pool can run it):
draw a flow (bandwidth U(5, 25) Mbit/s, delay U(5, 25) ms, NewReno or BIC, duration
10 s + U(-2.5, 2.5) s as ``rl.cc``), run it through an ``fq`` qdisc in LFQ mode with the
current weights up to a random time in its first half, ``fork()``, pin the flow's buffer at
b - 1 in one copy and b + 1 in the other (``set_flow_limit``: the policy stops deciding for
it, as the authors' queue keeps b +- 1 after the decision), run both to the end and score each
by the reward after the fork, (throughput - alpha * queue * MTU) / 1e6 (bytes/s, ``rl.cc``
``reward_double``). The label is the better of the two sizes; the loss is the mean absolute
error between the network's output on the features at the fork and the labels of a batch of
20 rollouts (``nproc = 40 / 2``), SGD with step 0.01 (``rl.cc`` ``LR``).

Differences from the authors: the features are those at the fork time (the authors take
them at the first packet after it), and the decision interval defaults to 10 packets, as
the authors trained (``every_nth = 10``).

Weights are written as safetensors (``fc1.weight`` ... ``fc4.bias``, float32): the file an
``fq`` qdisc's ``lfq_policy`` loads (format in ``crates/l4sim-core/src/qdisc/lfq_policy.rs``).

Parallel rollouts: ``jobs > 1`` runs each batch's rollouts on a process pool kept for the
whole training (``l4sim.executors``); the results do not depend on ``jobs``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import save_file
from torch import nn

import l4sim
from l4sim.errors import L4simError
from l4sim.executors import Executor, make_executor
from l4sim.simulation import Simulation

__all__ = ["LfqConfig", "LfqNet", "rollout", "save_weights", "train"]

LINK = "h0->h1"
FEATURES = 60
MTU = 1500
"""Bytes per packet of l4sim's TCP flows (the authors' ``mtu`` is 1446)."""


@dataclass
class LfqConfig:
    """Every hyper-parameter of :func:`train` (defaults: the authors' where they have one)."""

    flows: int = 200
    """Rollouts (A/B pairs) in the whole run."""
    batch: int = 20
    """Rollouts per SGD step (``rl.cc``: ``nproc = 40 / 2``)."""
    learning_rate: float = 0.01
    """SGD step (``rl.cc`` ``LR``)."""
    alpha: float = 10.0
    """Weight of the queue in the reward (``rl.cc`` ``alpha``; the paper's large alpha)."""
    width: int = 256
    """Hidden width (``rl-net.cc`` ``WIDTH``)."""
    interval: int = 10
    """Decision every n-th packet of a flow (``rl.cc`` ``every_nth``)."""
    duration_s: float = 10.0
    """Mean flow duration; each flow adds U(-duration/4, duration/4) (``rl.cc``)."""
    fork_fraction: float = 0.5
    """Fork at U(0, fraction * duration) (the paper: the first half; ``rl.cc``: 3/4)."""
    bandwidth_mbps: tuple[float, float] = (5.0, 25.0)
    delay_ms: tuple[float, float] = (5.0, 25.0)
    ccas: tuple[str, ...] = ("newreno", "bic")
    seed: int = 1
    jobs: int = 1
    """Worker processes for the rollouts (1: in this process)."""


class LfqNet(nn.Module):
    """The authors' ``RlNet``: 60 -> width -> width -> width -> 1, leaky ReLU."""

    def __init__(self, width: int = 256):
        super().__init__()
        self.fc1 = nn.Linear(FEATURES, width)
        self.fc2 = nn.Linear(width, width)
        self.fc3 = nn.Linear(width, width)
        self.fc4 = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.leaky_relu(self.fc1(x))
        x = nn.functional.leaky_relu(self.fc2(x))
        x = nn.functional.leaky_relu(self.fc3(x))
        return self.fc4(x)


def save_weights(path: str | Path, net: LfqNet) -> None:
    """Write ``net`` as the safetensors file an ``fq`` qdisc's ``lfq_policy`` loads."""
    tensors = {k: v.detach().to(torch.float32).contiguous() for k, v in net.state_dict().items()}
    save_file(tensors, str(path))


def scenario(
    bw_mbps: float,
    delay_ms: float,
    cca: str,
    duration_s: float,
    qdisc: dict[str, Any],
    seed: int = 1,
) -> l4sim.Scenario:
    """The paper's setup: two hosts, one TCP flow, ``qdisc`` in front of the bottleneck."""
    return l4sim.Scenario.parse(
        {
            "seed": seed,
            "duration": f"{round(duration_s * 1e6)}us",
            "topology": {
                "preset": "two_host",
                "rate": f"{round(bw_mbps * 1e3)}kbps",
                "delay": f"{round(delay_ms * 1e3)}us",
                "qdisc": qdisc,
            },
            "flows": [{"kind": "tcp", "cca": cca}],
        }
    )


def _after(sim: Simulation, t0: float, q0: float, sent0: int) -> tuple[float, float]:
    """Throughput (bytes/s) and mean queue (packets) at ``LINK`` from ``t0`` to now."""
    t = sim.now
    q = sim.summary()["queues"][0]["backlog_mean_pkts"]
    sent = sim.observe()["queues"]["dequeued_bytes"][0]
    span = max(t - t0, 1e-9)
    return (sent - sent0) / span, (q * t - q0 * t0) / span


def rollout(task: tuple[LfqConfig, str, int]) -> dict[str, Any]:
    """One A/B pair: the features at the fork, the buffer there and both rewards."""
    cfg, weights, seed = task
    rng = np.random.default_rng(seed)
    bw = float(rng.uniform(*cfg.bandwidth_mbps))
    delay = float(rng.uniform(*cfg.delay_ms))
    cca = cfg.ccas[int(rng.integers(len(cfg.ccas)))]
    duration = cfg.duration_s + float(rng.uniform(-cfg.duration_s / 4, cfg.duration_s / 4))
    t_fork = float(rng.uniform(0.0, cfg.fork_fraction * duration))
    qdisc = {"kind": "fq", "lfq_policy": weights, "lfq_interval": cfg.interval}
    sim = Simulation(scenario(bw, delay, cca, duration, qdisc, seed=seed))
    sim.run_until(t_fork)
    x = sim.observe_lfq(LINK)["features"][0]
    b = int(sim.observe_flow_queues(LINK)["limit_pkts"][0])
    # rl-internal-queue-disc.cc do_logic: b -+ 1, shifted to stay in [1, 1000].
    lower = min(max(b - 1, 1), 998)
    q0 = sim.summary()["queues"][0]["backlog_mean_pkts"]
    sent0 = sim.observe()["queues"]["dequeued_bytes"][0]
    rewards = []
    for size in (lower, lower + 2):
        branch = sim.fork()
        branch.apply({"kind": "set_flow_limit", "link": LINK, "flow": 0, "limit": size})
        branch.run()
        thr, queue = _after(branch, t_fork, q0, sent0)
        rewards.append((thr - cfg.alpha * queue * MTU) / 1e6)
    return {
        "x": x,
        "sizes": (lower, lower + 2),
        "rewards": rewards,
        "bw": bw,
        "delay": delay,
        "cca": cca,
    }


def _map(ex: Executor, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``fn`` over ``items`` on the executor, results in input order; a failed rollout stops
    training with its error."""
    out: list[Any] = [None] * len(items)
    for i, outcome in ex.map(fn, items):
        if not outcome.ok:
            raise L4simError(f"an LFQ rollout failed: {outcome.error}")
        out[i] = outcome.value
    return out


def train(cfg: LfqConfig, out: str | Path | None = None) -> tuple[LfqNet, dict[str, Any]]:
    """Train from scratch; write the weights to ``out`` (safetensors) if given."""
    torch.manual_seed(cfg.seed)
    net = LfqNet(cfg.width)
    opt = torch.optim.SGD(net.parameters(), lr=cfg.learning_rate)
    seeds = np.random.default_rng(cfg.seed).integers(1, 2**31 - 1, size=cfg.flows)
    losses: list[float] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, make_executor(jobs=cfg.jobs) as ex:
        weights = str(Path(tmp) / "policy.safetensors")
        for i in range(0, cfg.flows, cfg.batch):
            save_weights(weights, net)
            tasks = [(cfg, weights, int(s)) for s in seeds[i : i + cfg.batch]]
            results = _map(ex, rollout, tasks)
            x = torch.tensor([r["x"] for r in results], dtype=torch.float32)
            labels = torch.tensor(
                [r["sizes"][int(np.argmax(r["rewards"]))] for r in results],
                dtype=torch.float32,
            )
            loss = nn.functional.l1_loss(net(x).squeeze(1), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
    wall = time.perf_counter() - start
    if out is not None:
        save_weights(out, net)
    return net, {"losses": losses, "wall_s": wall, "flows_per_s": cfg.flows / wall}
