"""RL-TCP (ns3-ai's example, used by paper 000) on l4sim: a DQN sets one TCP flow's window.

Topology (``scenarios/rl_tcp.toml``, :data:`SCENARIO`): h0 — 10 Mbps / 20 ms — r0 —
2 Mbps / 0.01 ms — r1 — 10 Mbps / 20 ms — h1, 340-byte segments (392 B on the wire, ns3-ai's
400-byte MTU), a 150-packet FIFO at the bottleneck (ns3-ai's 50-packet pfifo_fast plus
ns-3's 100-packet device queue behind it). Base RTT 80 ms, BDP 20 kB = 51 packets.

Agent: ``l4sim/TcpCwnd-v0`` with the ``"delta"`` actions (keep, +1 segment, -1 segment, x2,
x1/2) every 100 ms and its normalised 9-feature observation (log-compressed,
:func:`compress_observation`); :mod:`l4sim.agents.dqn` learns.

Rewards (``--reward``):

* ``default``: l4sim's ``tcp`` reward, goodput / 2 Mbps - (sRTT - minRTT) / minRTT: full pipe,
  empty queue.
* ``ns3ai``: ns3-ai's ``segmentsAcked - bytesInFlight - cWnd``, faithful, units mixed. Its
  maximum is a window of one segment with nothing in flight, so the agent learns to starve
  the flow. (For learning, it is scaled by 1e-4 — a positive constant changes no policy.)

Evaluation: one greedy 20 s episode (seed :data:`EVAL_SEED`, unseen in training) measuring
the bottleneck's utilisation (busy fraction of the whole episode), its mean backlog
(packets and BDPs), the flow's mean sRTT and the episode's return under both rewards.

``l4sim train rl-tcp`` runs one training; ``l4sim reproduce rl-tcp`` (:func:`reproduce`)
trains both rewards (the documented run) and writes ``results.md`` beside NewReno's row.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from l4sim import rewards as _rewards
from l4sim.errors import EnvConfigError, L4simError
from l4sim.executors import Executor
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import write_per_seed, write_table, write_timing
from l4sim.experiments.base import declare
from l4sim.scenario import Scenario
from l4sim.units import format_number as _fmt

if TYPE_CHECKING:
    from l4sim.agents.dqn import DQNConfig

#: The scenario of ``scenarios/rl_tcp.toml`` (a test keeps the two equal).
SCENARIO: dict[str, Any] = {
    "name": "rl_tcp",
    "seed": 1,
    "duration": "20s",
    "topology": {
        "preset": "path",
        "routers": 2,
        "hops": [
            {"rate": "10Mbps", "delay": "20ms"},
            {"rate": "2Mbps", "delay": "0.01ms", "qdisc": {"kind": "fifo", "limit": "150p"}},
            {"rate": "10Mbps", "delay": "20ms"},
        ],
    },
    "flows": [{"kind": "tcp", "cca": "external", "mss": "340B"}],
}

BOTTLENECK = "r0->r1"
RATE_BPS = 2e6
WIRE_PACKET_BYTES = 392
BASE_RTT_S = 0.08002
BDP_PKTS = RATE_BPS * BASE_RTT_S / 8 / WIRE_PACKET_BYTES
"""The path's bandwidth-delay product in wire packets (≈ 51)."""

#: --reward name -> (l4sim.rewards name, reward_scale used for learning)
REWARDS: dict[str, tuple[str, float]] = {"default": ("tcp", 1.0), "ns3ai": ("ns3ai", 1e-4)}
ACTION_SET = "delta"
STEP_INTERVAL = "100ms"
TRAIN_EPISODE_STEPS = 100
"""Training episodes are 10 s: more starts from the initial window per training step."""
EVAL_EPISODE_STEPS = 200
EVAL_SEED = 10_007
DEFAULT_STEPS = 20_000
STUDY_STEPS = 50_000
"""Training steps per reward in the documented run (:func:`reproduce`)."""

#: Subsets ``l4sim reproduce rl-tcp --only`` accepts (rewards), and the table it writes.
GROUPS = tuple(REWARDS)
TABLE = "results.md"


def config(steps: int = DEFAULT_STEPS, seed: int = 1, reward: str = "default") -> DQNConfig:
    """The DQN hyper-parameters used for RL-TCP."""
    from l4sim.agents.dqn import DQNConfig

    _check_reward(reward)
    return DQNConfig(
        total_steps=steps,
        learning_rate=1e-3,
        buffer_size=50_000,
        batch_size=128,
        gamma=0.95,
        target_update=1,
        tau=0.01,
        start_epsilon=1.0,
        end_epsilon=0.02,
        exploration_fraction=0.4,
        learning_starts=min(1_000, max(steps // 10, 1)),
        train_frequency=1,
        hidden=(64, 64),
        seed=seed,
        reward_scale=REWARDS[reward][1],
    )


def _check_reward(reward: str) -> None:
    if reward not in REWARDS:
        raise EnvConfigError(f"reward {reward!r} is not known; allowed: {', '.join(REWARDS)}")


def scenario() -> Scenario:
    return Scenario.parse(SCENARIO, source="rl_tcp")


def make_env(
    reward: str = "default", episode_steps: int = TRAIN_EPISODE_STEPS, sc: Scenario | None = None
) -> gym.Env:
    """``l4sim/TcpCwnd-v0`` on the RL-TCP scenario with the given reward."""
    _check_reward(reward)
    kwargs = {
        "action_set": ACTION_SET,
        "reward": REWARDS[reward][0],
        "step_interval": STEP_INTERVAL,
        "episode_steps": episode_steps,
    }
    import l4sim.envs  # noqa: F401  (registers the l4sim/* ids)

    if "l4sim/TcpCwnd-v0" in gym.registry:
        env = gym.make("l4sim/TcpCwnd-v0", scenario=sc or scenario(), **kwargs)
    else:
        from l4sim.envs.tcp import TcpCwndEnv

        env = TcpCwndEnv(sc or scenario(), **kwargs)
    return compress_observation(env)


def compress_observation(env: gym.Env) -> gym.Env:
    """Feed the network ``log(1 + x)`` of the env's features: the features are ratios in
    ``[0, 100]`` whose interesting range is around 1 (window / BDP, RTT / base RTT), and an
    unset ssthresh is reported as 100 — a constant that large swamps a freshly initialised
    first layer. The log keeps the order, compresses 100 to 4.6 and speeds learning up."""
    box = env.observation_space
    assert isinstance(box, gym.spaces.Box)
    space = gym.spaces.Box(np.log1p(box.low), np.log1p(box.high), box.shape, np.float32)
    return gym.wrappers.TransformObservation(env, lambda o: np.log1p(o).astype(np.float32), space)


# --------------------------------------------------------------------------------------------
# Evaluation.


@dataclass
class Evaluation:
    reward: str
    steps: int
    utilization: float
    """Busy fraction of the bottleneck over the episode."""
    goodput_mbps: float
    queue_mean_pkts: float
    queue_mean_bdp: float
    queue_max_pkts: int
    sojourn_mean_ms: float
    srtt_mean_ms: float
    cwnd_mean_pkts: float
    drops: int
    return_: float
    """The episode's return under the reward the agent was trained with."""
    return_default: float
    return_ns3ai: float
    trace: dict[str, list[float]] = field(default_factory=dict, repr=False)

    def to_dict(self, trace: bool = False) -> dict[str, Any]:
        d = asdict(self)
        d["return"] = d.pop("return_")
        if not trace:
            d.pop("trace")
        return d


def evaluate(
    policy: Callable[[Any], int],
    reward: str = "default",
    *,
    seed: int = EVAL_SEED,
    episode_steps: int = EVAL_EPISODE_STEPS,
    sc: Scenario | None = None,
) -> Evaluation:
    """Run ``policy`` for one episode and measure it (see the module doc)."""
    env = make_env(reward, episode_steps, sc)
    base = env.unwrapped
    obs, _ = env.reset(seed=seed)
    trace: dict[str, list[float]] = {
        k: [] for k in ("time_s", "cwnd_pkts", "goodput_mbps", "srtt_ms", "backlog_pkts", "reward")
    }
    returns = {"default": 0.0, "ns3ai": 0.0}
    total = 0.0
    qi: int | None = None
    for _ in range(episode_steps):
        obs, r, terminated, truncated, info = env.step(policy(obs))
        total += float(r)
        rec = base.record  # type: ignore[attr-defined]
        returns["default"] += _rewards.tcp(rec)
        returns["ns3ai"] += _rewards.ns3ai(rec)
        raw = base.sim.observe()  # type: ignore[attr-defined]
        if qi is None:
            qi = raw["queues"]["link"].index(BOTTLENECK)
        trace["time_s"].append(float(info["time_s"]))
        trace["cwnd_pkts"].append(float(rec.cwnd_pkts))
        trace["goodput_mbps"].append(rec.goodput_bps / 1e6)
        trace["srtt_ms"].append(rec.srtt_s * 1e3 if rec.srtt_s == rec.srtt_s else math.nan)
        trace["backlog_pkts"].append(float(raw["queues"]["backlog_pkts"][qi]))
        trace["reward"].append(float(r))
        if terminated or truncated:
            break
    summary = base.sim.summary()  # type: ignore[attr-defined]
    env.close()
    q = next((q for q in summary["queues"] if q["link"] == BOTTLENECK), None)
    flow = summary["flows"][0]
    sim_t = summary["sim_time_s"] or 1.0
    return Evaluation(
        reward=reward,
        steps=len(trace["time_s"]),
        utilization=q["utilization"] if q else 0.0,
        goodput_mbps=flow["bytes_acked"] * 8 / sim_t / 1e6,
        queue_mean_pkts=q["backlog_mean_pkts"] if q else 0.0,
        queue_mean_bdp=(q["backlog_mean_pkts"] if q else 0.0) / BDP_PKTS,
        queue_max_pkts=int(max(trace["backlog_pkts"], default=0)),
        sojourn_mean_ms=(q["sojourn_mean_s"] or 0.0) * 1e3 if q else 0.0,
        srtt_mean_ms=(flow["srtt_mean_s"] or math.nan) * 1e3,
        cwnd_mean_pkts=float(np.mean(trace["cwnd_pkts"])) if trace["cwnd_pkts"] else 0.0,
        drops=q["drops"] if q else 0,
        return_=total,
        return_default=returns["default"],
        return_ns3ai=returns["ns3ai"],
        trace=trace,
    )


# --------------------------------------------------------------------------------------------
# Training, files and figures.


def train(
    out_dir: str | Path,
    *,
    steps: int = DEFAULT_STEPS,
    reward: str = "default",
    seed: int = 1,
    progress: Callable[[int, int, dict[str, float]], None] | None = None,
    figures: bool = True,
) -> dict[str, Any]:
    """Train a DQN on RL-TCP, evaluate it, and write ``out_dir``: ``dqn.pt``, ``tb/``
    (TensorBoard), ``eval.json``, ``train.json`` and (``figures``) ``eval_episode.png``,
    ``training_return.png``. Returns the contents of ``eval.json``."""
    from l4sim.agents import dqn

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = config(steps, seed, reward)
    q, stats = dqn.train(lambda: make_env(reward), cfg, progress=progress, log_dir=out / "tb")
    extra = {"experiment": "rl-tcp", "reward": reward, "action_set": ACTION_SET}
    dqn.save(out / "dqn.pt", q, cfg, extra)
    ev = evaluate(dqn.greedy_policy(q), reward)
    result = {
        "reward": reward,
        "seed": seed,
        "train": {k: v for k, v in stats.to_dict().items() if not k.startswith("episode_")},
        "eval": ev.to_dict(),
    }
    (out / "eval.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "train.json").write_text(
        json.dumps({"config": cfg.to_dict(), "stats": stats.to_dict()}, indent=2) + "\n",
        encoding="utf-8",
    )
    if figures:
        plot_episode(ev, out / "eval_episode.png")
        plot_training(stats.episode_end_steps, stats.episode_returns, out / "training_return.png")
    return result


def evaluate_checkpoint(
    path: str | Path, reward: str | None = None
) -> tuple[dict[str, Any], Evaluation]:
    """Evaluate weights saved by :func:`train` (reward: the one they were trained with)."""
    from l4sim.agents import dqn

    q, _, extra = dqn.load(path)
    reward = reward or extra.get("reward", "default")
    if q.obs_dim != 9 or q.n_actions != 5:
        raise EnvConfigError(
            f"{str(path)!r} holds a network for {q.obs_dim} features and {q.n_actions} actions; "
            "RL-TCP needs 9 and 5"
        )
    ev = evaluate(dqn.greedy_policy(q), reward)
    return {"reward": reward, "checkpoint": str(path), "eval": ev.to_dict()}, ev


def plot_episode(ev: Evaluation, path: Path) -> Path:
    """cwnd, goodput, sRTT and bottleneck backlog over the evaluation episode."""
    from l4sim.plot import pyplot

    plt = pyplot()

    t = ev.trace["time_s"]
    fig, axes = plt.subplots(4, 1, figsize=(8, 9), sharex=True)
    rows = [
        ("cwnd_pkts", "cwnd (segments)", BDP_PKTS, "BDP"),
        ("goodput_mbps", "goodput (Mbps)", RATE_BPS / 1e6, "link rate"),
        ("srtt_ms", "sRTT (ms)", BASE_RTT_S * 1e3, "base RTT"),
        ("backlog_pkts", "bottleneck queue (pkts)", 2 * BDP_PKTS, "2 BDP"),
    ]
    for ax, (key, label, ref, ref_label) in zip(axes, rows, strict=True):
        ax.plot(t, ev.trace[key], lw=1.2)
        ax.axhline(ref, color="grey", ls="--", lw=0.8, label=ref_label)
        ax.set_ylabel(label)
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(
        f"RL-TCP, DQN with the {ev.reward} reward: utilisation {ev.utilization:.1%}, "
        f"queue {ev.queue_mean_pkts:.1f} pkts, sRTT {ev.srtt_mean_ms:.0f} ms",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_training(end_steps: list[int], returns: list[float], path: Path) -> Path:
    """Episodic return over training steps, with a moving average."""
    from l4sim.plot import pyplot

    plt = pyplot()

    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(end_steps, returns, lw=0.8, alpha=0.5, label="episode")
    if len(returns) >= 5:
        k = max(5, len(returns) // 20)
        avg = np.convolve(returns, np.ones(k) / k, mode="valid")
        ax.plot(end_steps[k - 1 :], avg, lw=1.8, label=f"mean of {k}")
    ax.set_xlabel("training step")
    ax.set_ylabel("episodic return")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------------
# The documented run: both rewards, plus NewReno on the same path for reference.


@dataclass(frozen=True)
class Case:
    """One row of the table: a DQN trained with ``reward``, or ``"newreno"`` (no agent)."""

    reward: str

    @property
    def name(self) -> str:
        return self.reward if self.reward == "newreno" else f"dqn-{self.reward}"


def cases(groups: Iterable[str] = GROUPS) -> list[Case]:
    """A DQN per reward in ``groups``, then NewReno for reference."""
    return [Case(r) for r in groups] + [Case("newreno")]


@dataclass
class Row:
    agent: str
    seed: int | None
    train_steps: int | None
    utilization: float
    queue_mean_pkts: float
    queue_mean_bdp: float
    srtt_mean_ms: float
    cwnd_mean_pkts: float | None
    drops: int
    return_default: float | None
    return_ns3ai: float | None


def newreno_baseline(seed: int = EVAL_SEED) -> dict[str, Any]:
    """NewReno (Linux-like defaults) alone on the RL-TCP path for the evaluation's 20 s."""
    from l4sim.run import run

    data = json.loads(json.dumps(SCENARIO))
    data["flows"][0]["cca"] = "newreno"
    data["seed"] = seed
    data["duration"] = f"{EVAL_EPISODE_STEPS * 0.1:g}s"
    summary = run(Scenario.parse(data, source="rl_tcp_newreno"), progress=False).summary
    q = next(q for q in summary["queues"] if q["link"] == BOTTLENECK)
    flow = summary["flows"][0]
    return {
        "utilization": q["utilization"],
        "queue_mean_pkts": q["backlog_mean_pkts"],
        "queue_mean_bdp": q["backlog_mean_pkts"] / BDP_PKTS,
        "srtt_mean_ms": (flow["srtt_mean_s"] or math.nan) * 1e3,
        "drops": q["drops"],
    }


def _dqn_row(result: dict[str, Any]) -> tuple[Row, dict[str, Any]]:
    """The table's row and the training's wall time (``timing.csv``)."""
    ev, tr = result["eval"], result["train"]
    timing = {"agent": f"DQN, {result['reward']} reward", "train_steps": tr["steps"]}
    timing.update(train_time_s=tr["wall_time_s"], steps_per_s=tr["steps_per_s"])
    return Row(
        agent=timing["agent"],
        seed=result["seed"],
        train_steps=tr["steps"],
        utilization=ev["utilization"],
        queue_mean_pkts=ev["queue_mean_pkts"],
        queue_mean_bdp=ev["queue_mean_bdp"],
        srtt_mean_ms=ev["srtt_mean_ms"],
        cwnd_mean_pkts=ev["cwnd_mean_pkts"],
        drops=ev["drops"],
        return_default=ev["return_default"],
        return_ns3ai=ev["return_ns3ai"],
    ), timing


def _newreno_row(nr: dict[str, Any]) -> Row:
    return Row(
        agent="NewReno (no agent)",
        seed=None,
        train_steps=None,
        utilization=nr["utilization"],
        queue_mean_pkts=nr["queue_mean_pkts"],
        queue_mean_bdp=nr["queue_mean_bdp"],
        srtt_mean_ms=nr["srtt_mean_ms"],
        cwnd_mean_pkts=None,
        drops=nr["drops"],
        return_default=None,
        return_ns3ai=None,
    )


def _run_case(task: tuple[Case, str, int, int, bool]) -> tuple[Row, dict[str, Any] | None]:
    """One case (in a worker): train its DQN into its directory, or run NewReno."""
    case, case_dir, steps, seed, figures = task
    if case.reward == "newreno":
        return _newreno_row(newreno_baseline()), None
    result = train(case_dir, steps=steps, reward=case.reward, seed=seed, figures=figures)
    return _dqn_row(result)


def scenarios(out_dir: str | Path, groups: Iterable[str], **_: Any) -> dict[str, Any]:
    """Case name -> the scenario of its evaluation (NewReno's: the same path, 20 s)."""
    out: dict[str, Any] = {}
    for c in cases(groups):
        if c.reward == "newreno":
            data = json.loads(json.dumps(SCENARIO))
            data["flows"][0]["cca"] = "newreno"
            data.update(seed=EVAL_SEED, duration=f"{EVAL_EPISODE_STEPS * 0.1:g}s")
            out[c.name] = data
        else:
            env = make_env(c.reward, EVAL_EPISODE_STEPS)
            out[c.name] = env.unwrapped.scenario.model_copy(update={"seed": EVAL_SEED})
            env.close()
    return out


def tensorboard_dir(out_dir: str | Path, **_: Any) -> Path | None:
    """Where the trainers write TensorBoard logs: ``REWARD/tb`` under it, one run per reward."""
    return Path(out_dir)


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
    steps: int = STUDY_STEPS,
    seed: int = 1,
) -> list[Row]:
    """Train a DQN per reward (``steps`` each) into ``out_dir/<reward>/`` (see :func:`train`),
    run NewReno on the same path, and write ``results.csv`` and ``results.md``; the cases
    run on ``executor`` (default: serial). Returns the table rows."""
    if importlib.util.find_spec("torch") is None:
        raise L4simError("RL-TCP needs PyTorch: pip install 'l4sim[rl]' (torch, tensorboard)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    todo = cases(only if only is not None else GROUPS)
    tasks = [(c, str(out / c.reward), steps, seed, figures) for c in todo]
    done = run_cases(_run_case, tasks, todo, executor, on_case)
    rows = [r for r, _ in done]
    write_table(rows, out, TABLE, markdown_table(rows))
    write_per_seed(out, rows)  # one training seed per reward
    write_timing(out, [t for _, t in done if t is not None])
    return rows


def markdown_table(rows: list[Row]) -> str:
    """The agents side by side: training cost, then the evaluation episode's utilisation,
    queue, sRTT, window, drops and return under both rewards."""
    head = (
        "| agent | train steps | util % | queue pkts | queue BDP "
        "| sRTT ms | cwnd pkts | drops | return (default) | return (ns3ai) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = [
        f"| {r.agent} | {_fmt(r.train_steps, '{}')} | {r.utilization * 100:.1f} "
        f"| {r.queue_mean_pkts:.1f} | {r.queue_mean_bdp:.2f} "
        f"| {r.srtt_mean_ms:.1f} | {_fmt(r.cwnd_mean_pkts, '{:.1f}')} | {r.drops} "
        f"| {_fmt(r.return_default, '{:.1f}')} "
        f"| {_fmt(r.return_ns3ai, '{:.3g}')} |"
        for r in rows
    ]
    return head + "\n".join(lines) + "\n"


EXPERIMENT = declare(
    __name__,
    name="rl-tcp",
    title="RL-TCP (ns3-ai's example): a DQN per reward sets a TCP window, beside NewReno "
    "(needs PyTorch)",
    paper="ns3-ai's RL-TCP example, as paper 000 (remote RL-TCP) runs it",
    groups=GROUPS,
    tables=(TABLE, "results.csv", "per_seed.csv"),
    figures=("<reward>/eval_episode.png", "<reward>/training_return.png"),
)
