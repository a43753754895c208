"""LFQ offline training by A/B forks (Grigorescu et al., LFQ, section III; the authors' ``rl.cc``
``experiment`` with ``ACTOR_CRITIC = false``), CleanRL style: every hyper-parameter is a
field of :class:`LfqConfig`, the algorithm reads top to bottom in :func:`train`.

One rollout (:func:`rollout`, a module-level function so that a process pool can run it):
draw a flow (bandwidth U(5, 25) Mbit/s, delay U(5, 25) ms, NewReno or BIC, duration
10 s + U(-2.5, 2.5) s as ``rl.cc``), run it through an ``fq`` qdisc in LFQ mode with the
current weights up to a random time in its first half, ``fork()``, pin the flow's buffer at
b - 1 in one copy and b + 1 in the other (``set_qdisc``'s ``per_flow_limit``: the policy
stops deciding for it, as the authors' queue keeps b +- 1 after the decision), run both to
the end and score each by the reward after the fork, (throughput - alpha * queue * MTU) /
1e6 (bytes/s, ``rl.cc`` ``reward_double``). The label is the better of the two sizes; the
loss is the mean absolute error between the network's output on the features at the fork
and the labels of a batch of 20 rollouts (``nproc = 40 / 2``), SGD with step 0.01 (``rl.cc``
``LR``).

Differences from the authors: the features are those at the fork time (the authors take
them at the first packet after it), and the decision interval defaults to 10 packets, as
the authors trained (``every_nth = 10``). Online, the critic (``RlNetReward``, the authors'
width 256) learns with Adam instead of their SGD at 0.01 (``critic_optimizer = "sgd"`` is
the authors'; why, with the measurements: docs/reproductions/lfq-001.md, "Why the critic
learns with Adam").

Weights are written as safetensors (``fc1.weight`` ... ``fc4.bias``, float32): the file an
``fq`` qdisc's ``policy = { kind = "lfq", weights = ... }`` loads (format in
``crates/l4sim-core/src/policy/lfq.rs``).

Parallel rollouts: ``jobs > 1`` runs each batch's rollouts on a process pool kept for the
whole training (``l4sim.executors``); the results do not depend on ``jobs``.
"""

from __future__ import annotations

import json
import struct
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file
from torch import nn

import l4sim
from l4sim.agents.checkpoint import Checkpointing, global_rng_state, set_global_rng_state
from l4sim.agents.device import resolve, to_cpu
from l4sim.agents.lfq_converge import Convergence, CurveWatch
from l4sim.agents.lfq_recipes import INIT_FROM, MODELS, RECIPES
from l4sim.agents.lfq_transport import weights_here
from l4sim.agents.tblog import ScalarLog
from l4sim.engine.simulation import Simulation
from l4sim.errors import L4simError
from l4sim.executors import Executor, make_executor
from l4sim.processes import Interrupted

__all__ = [
    "LfqConfig",
    "LfqNet",
    "critic_path",
    "critic_step",
    "make_critic",
    "rollout",
    "save_weights",
    "train",
    "train_recipe",
]

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
    ray: str | None = None
    """Run the rollouts on Ray instead (``"local"`` or a cluster's address; ``jobs`` is
    then ignored); the weights do not depend on where the rollouts ran."""
    online: bool = False
    """Online actor-critic (``rl.cc`` ``ACTOR_CRITIC = true``): one run per flow, a random
    b - 1 or b + 1 at the experiment, judged against a critic; batches of 40."""
    time_budget_s: float | None = None
    """Stop after the batch that passes this wall time (None: train all ``flows``)."""
    checkpoint_every: int = 0
    """Write the weights to ``out`` every this many flows (0: only at the end)."""
    init_weights: str | None = None
    """Start from this weights file (continue a run, or refine offline weights online, the
    paper's section VIII) instead of PyTorch's initialisation."""
    critic_width: int = 256
    """Hidden width of the online critic (``rl-net.cc`` ``RlNetReward``: ``WIDTH`` = 256; it
    only runs in training, so it need not be as small as the actor the core evaluates)."""
    critic_optimizer: str = "adam"
    """``"adam"`` (default) or ``"sgd"`` (``rl.cc``: SGD at ``LR`` for both networks). Fitted
    to the same 8 000 flows (4 000 batches), SGD at 0.01 errs by 0.21 and Adam by 0.13, and
    their labels carry the b +- 1 verdict for 8.7 % and 24.6 % of held-out flows
    (``benchmarks/lfq_online_labels.py``, README LFQ section)."""
    critic_learning_rate: float = 1e-3
    """Step of the critic's optimiser (``critic_optimizer = "sgd"``: use 0.01, ``rl.cc``)."""
    init_critic: str | None = None
    """Start the critic from this file (``train`` writes ``<out>.critic.safetensors`` as
    ``rl.cc`` saves ``net_reward`` beside ``net``)."""
    critic_warmup_flows: int = 0
    """Online: the first this many flows train only the critic (the actor keeps its
    weights): a critic that has not learnt the reward yet gives coin-flip labels, so an
    actor started from trained weights would only random-walk away from them."""
    snapshot_every: int = 0
    """Keep the actor's weights every this many flows as ``snapshots/<name>.<flows>
    .safetensors`` beside ``out`` (learning curves; 0: none). Changes nothing else."""
    converge: Convergence | None = None
    """Stop once the learning curve has converged by this rule, counted from the end of
    the critic's warm-up (:mod:`l4sim.agents.lfq_converge`); ``flows`` is the hard cap."""
    device: str = "cpu"
    """Where the actor and critic train: ``cpu``, ``cuda[:N]`` or ``auto``
    (:mod:`l4sim.agents.device`); the rollouts run on the CPU whatever it is."""


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


def critic_path(out: str | Path) -> Path:
    """Where :func:`train` writes the online critic beside the actor's weights ``out``."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".safetensors") + ".critic.safetensors")


def make_critic(cfg: LfqConfig) -> tuple[LfqNet, torch.optim.Optimizer]:
    """The online critic (``rl.cc`` ``net_reward``: the actor's architecture at the authors'
    width) and its optimiser, loaded from ``cfg.init_critic`` if given."""
    critic = LfqNet(cfg.critic_width)
    if cfg.init_critic is not None:
        critic.load_state_dict(load_file(cfg.init_critic))
    critic.to(resolve(cfg.device))
    if cfg.critic_optimizer == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(
            critic.parameters(), lr=cfg.critic_learning_rate
        )
    elif cfg.critic_optimizer == "sgd":
        opt = torch.optim.SGD(critic.parameters(), lr=cfg.critic_learning_rate)
    else:
        raise L4simError(f"critic_optimizer must be 'adam' or 'sgd', not {cfg.critic_optimizer!r}")
    return critic, opt


def critic_step(
    critic: LfqNet, opt: torch.optim.Optimizer, x: torch.Tensor, rewards: torch.Tensor
) -> float:
    """One step of the critic towards the rewards achieved (MSE, ``rl.cc``); its loss."""
    loss = nn.functional.mse_loss(critic(x).squeeze(1), rewards)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss.detach())


def save_weights(path: str | Path, net: LfqNet) -> None:
    """Write ``net`` as the safetensors file an ``fq`` qdisc's LFQ ``policy`` loads: the
    format's 8-byte header length, its JSON header (keys sorted, padded with spaces to 8
    bytes as the safetensors library pads) and the float32 little-endian data in key order.
    Written here rather than by ``safetensors.save_file`` so that equal weights give equal
    bytes (that library's header order is not fixed)."""
    header: dict[str, Any] = {}
    blobs = []
    offset = 0
    for name, v in sorted(net.state_dict().items()):
        data = v.detach().to("cpu", torch.float32).contiguous().numpy().astype("<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(v.shape),
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    Path(path).write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def scenario(
    bw_mbps: float,
    delay_ms: float,
    cca: str,
    duration_s: float,
    qdisc: dict[str, Any],
    seed: int = 1,
) -> l4sim.Scenario:
    """The paper's setup: two hosts, one TCP flow, ``qdisc`` in front of the bottleneck.
    ``delay_ms`` is the round-trip propagation delay: the authors' ``rl.cc`` gives their one
    point-to-point link ``delay / 2`` (``actual_delay``)."""
    return l4sim.Scenario.parse(
        {
            "seed": seed,
            "duration": f"{round(duration_s * 1e6)}us",
            "topology": {
                "preset": "two_host",
                "rate": f"{round(bw_mbps * 1e3)}kbps",
                "delay": f"{round(delay_ms * 1e3 / 2)}us",
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


def rollout(task: tuple[LfqConfig, str | bytes, int]) -> dict[str, Any]:
    """One A/B pair: the features at the fork, the buffer there and both rewards; online
    (``cfg.online``) a single run with one of b - 1, b + 1 drawn at random (``rewards`` then
    holds that one's reward and ``chosen`` its index). The weights: a file's path, or its
    bytes (the rollouts on Ray)."""
    cfg, weights, seed = task
    if isinstance(weights, bytes):
        weights = weights_here(weights)
    rng = np.random.default_rng(seed)
    bw = float(rng.uniform(*cfg.bandwidth_mbps))
    delay = float(rng.uniform(*cfg.delay_ms))
    cca = cfg.ccas[int(rng.integers(len(cfg.ccas)))]
    duration = cfg.duration_s + float(rng.uniform(-cfg.duration_s / 4, cfg.duration_s / 4))
    t_fork = float(rng.uniform(0.0, cfg.fork_fraction * duration))
    qdisc = {"kind": "fq", "policy": {"kind": "lfq", "weights": weights, "every": cfg.interval}}
    sim = Simulation(scenario(bw, delay, cca, duration, qdisc, seed=seed))
    sim.run_until(t_fork)
    x = sim.observe_policy(LINK)["features"][0]
    b = int(sim.observe_flow_queues(LINK)["limit_pkts"][0])
    # rl-internal-queue-disc.cc do_logic: b -+ 1, shifted to stay in [1, 1000].
    lower = min(max(b - 1, 1), 998)
    q0 = sim.summary()["queues"][0]["backlog_mean_pkts"]
    sent0 = sim.observe()["queues"]["dequeued_bytes"][0]
    # Online: one branch, drawn at random (rl.cc: m_action_to_perform); offline: both.
    chosen = int(rng.integers(2)) if cfg.online else -1
    rewards = []
    for k, size in enumerate((lower, lower + 2)):
        if chosen not in (-1, k):
            continue
        branch = sim if cfg.online else sim.fork()
        branch.apply(
            {"kind": "set_qdisc", "link": LINK, "flow": 0, "params": {"per_flow_limit": size}}
        )
        branch.run()
        thr, queue = _after(branch, t_fork, q0, sent0)
        rewards.append((thr - cfg.alpha * queue * MTU) / 1e6)
    return {
        "x": x,
        "sizes": (lower, lower + 2),
        "chosen": chosen,
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


def _labels(cfg: LfqConfig, results: list[dict[str, Any]], critic: LfqNet | None, x: torch.Tensor):
    """The better buffer size of each rollout (offline: the A/B winner; online: the chosen
    size if its reward beat the critic's prediction, else the other one, ``rl.cc``)."""
    if critic is None:
        return [r["sizes"][int(np.argmax(r["rewards"]))] for r in results]
    with torch.no_grad():
        expected = critic(x).squeeze(1).tolist()
    return [
        r["sizes"][r["chosen"] if r["rewards"][0] > e else 1 - r["chosen"]]
        for r, e in zip(results, expected, strict=True)
    ]


def _save(out: str | Path, net: LfqNet, critic: LfqNet | None) -> None:
    save_weights(out, net)
    if critic is not None:
        save_weights(critic_path(out), critic)


def train(
    cfg: LfqConfig,
    out: str | Path | None = None,
    progress: Callable[[dict[str, float]], None] | None = None,
    log_dir: str | Path | None = None,
    checkpoint: Checkpointing | None = None,
) -> tuple[LfqNet, dict[str, Any]]:
    """Train from scratch (``checkpoint``: checkpoint between batches, or resume); write
    the weights to ``out`` (safetensors) if given; ``progress`` gets flows, wall time, loss
    and mean output after every batch, and ``log_dir`` the same as TensorBoard scalars
    (``train/loss``, ``train/mean_output``, ``train/critic_loss``, ``charts/flows_per_s``)
    against flows done.

    Offline (``rl.cc`` ``ACTOR_CRITIC = false``): L1 between the network's output at the
    fork and the A/B winner. Online (``ACTOR_CRITIC = true``): the actor's L1 towards the
    size the critic's verdict implies, and the critic (the same architecture, ``RlNetReward``)
    fitted by MSE to the reward achieved after the experiment (the actor SGD at ``LR``, the
    critic ``cfg.critic_optimizer``); the critic is written to ``critic_path(out)``.

    PyTorch runs on one thread here (restored after): the same config gives the same
    weights bit for bit (a multi-threaded reduction may sum in another order), and the
    rollouts, 97 % of the time, are what ``jobs`` spreads."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train(cfg, out, progress, log_dir, checkpoint)
    finally:
        torch.set_num_threads(threads)


def _snapshot(out: str | Path, net: LfqNet, flows: int) -> None:
    out = Path(out)
    d = out.parent / "snapshots"
    d.mkdir(parents=True, exist_ok=True)
    save_weights(d / f"{out.name.removesuffix('.safetensors')}.{flows:07d}.safetensors", net)


def _train(
    cfg: LfqConfig,
    out: str | Path | None,
    progress: Callable[[dict[str, float]], None] | None,
    log_dir: str | Path | None,
    ckpt: Checkpointing | None = None,
) -> tuple[LfqNet, dict[str, Any]]:
    dev = resolve(cfg.device)
    torch.manual_seed(cfg.seed)
    net = LfqNet(cfg.width)
    if cfg.init_weights is not None:
        net.load_state_dict(load_file(cfg.init_weights))
    net.to(dev)
    critic, opt_critic = make_critic(cfg) if cfg.online else (None, None)
    opt = torch.optim.SGD(net.parameters(), lr=cfg.learning_rate)
    seeds = np.random.default_rng(cfg.seed).integers(1, 2**31 - 1, size=cfg.flows)
    losses: list[float] = []
    critic_losses: list[float] = []
    outputs: list[float] = []
    start = time.perf_counter()
    done = 0
    sim_s = 0.0
    watch = None
    if cfg.converge is not None:
        if cfg.converge.window % cfg.batch or cfg.critic_warmup_flows % cfg.batch:
            raise L4simError("the convergence window and the warm-up must be whole batches")
        watch = CurveWatch(cfg.converge, cfg.ccas, cfg.critic_warmup_flows)
    modules: dict[str, Any] = {"net": net, "optimizer": opt}
    if critic is not None and opt_critic is not None:
        modules |= {"critic": critic, "critic_optimizer": opt_critic}
    saved = ckpt.load() if ckpt is not None else None
    if saved is not None:
        for k, m in modules.items():
            m.load_state_dict(saved[k])
        losses, critic_losses, outputs = saved["losses"], saved["critic_losses"], saved["outputs"]
        done, sim_s = saved["flows"], saved["rollout_s"]
        set_global_rng_state(saved["global_rng"])
        start -= saved["elapsed_s"]
        if watch is not None:
            watch.load(saved["curve"])
    elif out is not None and cfg.snapshot_every:
        _snapshot(out, net, 0)
    last_ckpt = done
    with (
        tempfile.TemporaryDirectory() as tmp,
        make_executor(jobs=cfg.jobs, ray=cfg.ray) as ex,
        ScalarLog(log_dir) as log,
    ):
        weights = str(Path(tmp) / "policy.safetensors")
        for i in range(done, cfg.flows, cfg.batch):
            if ckpt is not None:
                # A batch boundary: the whole state is plain data here.
                signum = ckpt.stop()
                if signum is not None or ckpt.due(done, last_ckpt) or saved is None:
                    ckpt.save(
                        {k: m.state_dict() for k, m in modules.items()}
                        | {"losses": losses, "critic_losses": critic_losses, "outputs": outputs}
                        | {"flows": done, "rollout_s": sim_s, "global_rng": global_rng_state()}
                        | {"elapsed_s": time.perf_counter() - start}
                        | ({} if watch is None else {"curve": watch.state()})
                    )
                    saved, last_ckpt = saved or {}, done
                if signum is not None:
                    raise Interrupted(signum)
            save_weights(weights, net)
            sent = weights if cfg.ray is None else Path(weights).read_bytes()
            tasks = [(cfg, sent, int(s)) for s in seeds[i : i + cfg.batch]]
            t0 = time.perf_counter()
            results = _map(ex, rollout, tasks)
            sim_s += time.perf_counter() - t0
            x = torch.tensor(np.array([r["x"] for r in results]), dtype=torch.float32, device=dev)
            labels = torch.tensor(_labels(cfg, results, critic, x), dtype=torch.float32, device=dev)
            y = net(x).squeeze(1)
            loss = nn.functional.l1_loss(y, labels)
            if done >= cfg.critic_warmup_flows:
                opt.zero_grad()
                loss.backward()
                opt.step()
            losses.append(float(loss.detach()))
            outputs.append(float(y.detach().mean()))
            if critic is not None and opt_critic is not None:
                rewards = torch.tensor(
                    [r["rewards"][0] for r in results], dtype=torch.float32, device=dev
                )
                critic_losses.append(critic_step(critic, opt_critic, x, rewards))
            done += len(tasks)
            if watch is not None:
                watch.add(done, y.detach().tolist(), results)
            wall = time.perf_counter() - start
            info = {"flows": done, "wall_s": wall, "loss": losses[-1], "output": outputs[-1]}
            if critic_losses:
                info["critic_loss"] = critic_losses[-1]
            log.add(
                done,
                {"train/loss": losses[-1], "train/mean_output": outputs[-1]}
                | ({"train/critic_loss": critic_losses[-1]} if critic_losses else {})
                | {"charts/flows_per_s": done / max(wall, 1e-9)},
            )
            if progress is not None:
                progress(info)
            if out is not None and cfg.checkpoint_every and done % cfg.checkpoint_every < cfg.batch:
                _save(out, net, critic)
            if out is not None and cfg.snapshot_every and done % cfg.snapshot_every < cfg.batch:
                _snapshot(out, net, done)
            if cfg.time_budget_s is not None and time.perf_counter() - start > cfg.time_budget_s:
                break
            if watch is not None and watch.converged:
                break
    wall = time.perf_counter() - start
    to_cpu(net, critic)
    if out is not None:
        _save(out, net, critic)
    if ckpt is not None and ckpt.part:  # one model of a recipe: its statistics say it is done
        ckpt.remove()
    return net, {
        "losses": losses,
        "critic_losses": critic_losses,
        "mean_outputs": outputs,
        "flows": done,
        "wall_s": wall,
        "rollout_s": sim_s,
        "flows_per_s": done / wall,
    } | ({} if watch is None else {"converged_at": watch.converged_at, "curve": watch.windows})


def recipe_configs(
    name: str, seed: int = 1, jobs: int = 1, device: str = "cpu", ray: str | None = None
) -> dict[str, LfqConfig]:
    """Model -> the :class:`LfqConfig` recipe ``name`` trains it with (``init_weights``:
    the file name of the model it starts from, in the same output directory)."""
    if name not in RECIPES:
        raise L4simError(f"no LFQ recipe {name!r}; known: {', '.join(RECIPES)}")
    r = RECIPES[name]
    out = {}
    for i, (model, (alpha, online)) in enumerate(MODELS.items()):
        init = INIT_FROM.get(model)
        out[model] = LfqConfig(
            flows=r.flows(model),
            batch=r.online_batch if online else r.offline_batch,
            alpha=alpha,
            width=r.width,
            duration_s=r.duration_s,
            seed=seed + 100 * i,
            jobs=jobs,
            online=online,
            init_weights=None if init is None else f"{init}.safetensors",
            critic_width=r.critic_width,
            critic_warmup_flows=r.warmup if online else 0,
            snapshot_every=r.snapshot_every,
            converge=r.converge if online else None,
            device=device,
            ray=ray,
        )
    return out


def train_recipe(
    name: str,
    out_dir: str | Path,
    seed: int = 1,
    jobs: int = 1,
    models: Sequence[str] | None = None,
    progress: Callable[[str, dict[str, float]], None] | None = None,
    device: str = "cpu",
    checkpoint: Checkpointing | None = None,
    ray: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Train recipe ``name`` (:data:`l4sim.agents.lfq_recipes.RECIPES`) into ``out_dir``:
    ``<model>.safetensors`` (the online critic beside it), ``snapshots/`` and TensorBoard
    logs under ``tb/<model>``; ``models`` picks some (a model another starts from is
    trained too); ``device``: where the networks train; ``checkpoint``: checkpoint each
    model's training (a state file per model, and the finished models' statistics), or
    resume: finished models are kept, the one that was stopped goes on; ``ray``: the
    rollouts on Ray (``"local"`` or an address). Returns per model the flows, wall and CPU
    seconds and flows/s (a model with a convergence rule: the flow it converged at, None if
    it reached the cap, and its curve's windows)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    want = list(MODELS) if models is None else list(models)
    want += [INIT_FROM[m] for m in want if m in INIT_FROM and INIT_FROM[m] not in want]
    stats: dict[str, dict[str, Any]] = {}
    if checkpoint is not None:
        stats = (checkpoint.load() or {}).get("finished", {})
        checkpoint.save({"finished": stats})
    for model, cfg in recipe_configs(name, seed, jobs, device, ray).items():
        if model not in want or model in stats:
            continue
        if cfg.init_weights is not None:
            cfg.init_weights = str(out_dir / cfg.init_weights)
        cpu0 = time.process_time()
        _, info = train(
            cfg,
            out_dir / f"{model}.safetensors",
            progress=None if progress is None else (lambda d, m=model: progress(m, d)),
            log_dir=out_dir / "tb" / model,
            checkpoint=None if checkpoint is None else checkpoint.for_part(model),
        )
        stats[model] = {
            "flows": info["flows"],
            "wall_s": info["wall_s"],
            "main_cpu_s": time.process_time() - cpu0,
            "flows_per_s": info["flows_per_s"],
        } | {k: info[k] for k in ("converged_at", "curve") if k in info}
        if checkpoint is not None:
            checkpoint.save({"finished": stats})
    return {m: stats[m] for m in MODELS if m in stats}
