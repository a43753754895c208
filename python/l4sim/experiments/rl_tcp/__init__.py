"""RL-TCP (ns3-ai's example, used by the remote RL-TCP paper) on l4sim: a DQN sets one TCP
flow's window.

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

from l4sim.envs import rewards as _rewards
from l4sim.errors import EnvConfigError, L4simError
from l4sim.executors import Executor
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import (
    mean_ci,
    read_csv,
    write_ci,
    write_per_seed,
    write_table,
    write_timing,
)
from l4sim.experiments.base import declare, quick_option, seeds_option
from l4sim.experiments.rl_tcp.figures import Curve, plot_curves, plot_episode, plot_training
from l4sim.scenario import Scenario
from l4sim.units import format_number as _fmt

if TYPE_CHECKING:
    from l4sim.agents.checkpoint import Checkpointing
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

#: --reward name -> (l4sim.envs.rewards name, reward_scale used for learning)
REWARDS: dict[str, tuple[str, float]] = {"default": ("tcp", 1.0), "ns3ai": ("ns3ai", 1e-4)}
ACTION_SET = "delta"
STEP_INTERVAL = "100ms"
TRAIN_EPISODE_STEPS = 100
"""Training episodes are 10 s: more starts from the initial window per training step."""
EVAL_EPISODE_STEPS = 200
EVAL_SEED = 10_007
DEFAULT_STEPS = 20_000
STUDY_STEPS = DEFAULT_STEPS
"""Training steps per reward in the documented run (:func:`reproduce`)."""

#: Subsets ``l4sim reproduce rl-tcp --only`` accepts (rewards), and the table it writes.
GROUPS = tuple(REWARDS)
TABLE = "results.md"


def config(
    steps: int = DEFAULT_STEPS, seed: int = 1, reward: str = "default", device: str = "cpu"
) -> DQNConfig:
    """The DQN hyper-parameters used for RL-TCP (``device``: where the networks train)."""
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
        device=device,
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
    device: str = "cpu",
    checkpoint: Checkpointing | None = None,
) -> dict[str, Any]:
    """Train a DQN on RL-TCP, evaluate it, and write ``out_dir``: ``dqn.pt``, ``tb/``
    (TensorBoard), ``eval.json``, ``train.json`` and (``figures``) ``eval_episode.png``,
    ``training_return.png``. Returns the contents of ``eval.json``. ``device``: where the
    networks train (:mod:`l4sim.agents.device`); ``checkpoint``: checkpoint or resume the
    training (:mod:`l4sim.agents.checkpoint`)."""
    from l4sim.agents import dqn

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = config(steps, seed, reward, device)
    q, stats = dqn.train(
        lambda: make_env(reward), cfg, progress=progress, log_dir=out / "tb", checkpoint=checkpoint
    )
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
        plot_episode(ev, out / "eval_episode.png", BDP_PKTS, RATE_BPS, BASE_RTT_S)
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


# --------------------------------------------------------------------------------------------
# The documented run: both rewards on several training seeds, plus NewReno for reference.

SEEDS: tuple[int, ...] = (1, 2, 3, 4, 5)
"""Training seeds of the full run (each evaluated on :data:`EVAL_SEED`, unseen in training)."""
QUICK_SEEDS: tuple[int, ...] = (1, 2)
QUICK_STEPS = 2_500
"""Training steps per seed with ``--quick`` (the full run: :data:`STUDY_STEPS`)."""
METRICS = ("utilization", "queue_mean_pkts", "queue_mean_bdp", "srtt_mean_ms", "cwnd_mean_pkts")
METRICS += ("drops", "return_default", "return_ns3ai")


@dataclass(frozen=True)
class Case:
    """A DQN trained with ``reward`` on training seed ``seed``, or ``"newreno"`` (no agent,
    seed 0: one run on the evaluation seed)."""

    reward: str
    seed: int = 0

    @property
    def name(self) -> str:
        return "newreno" if self.reward == "newreno" else f"dqn-{self.reward}-s{self.seed}"


def _seeds(quick: bool = False, seeds: Iterable[int] | None = None) -> tuple[int, ...]:
    return tuple(seeds) if seeds is not None else (QUICK_SEEDS if quick else SEEDS)


def _cases(
    groups: Iterable[str] = GROUPS,
    *,
    quick: bool = False,
    seeds: Iterable[int] | None = None,
    **_: Any,
) -> list[Case]:
    """A DQN per reward in ``groups`` and training seed, then NewReno for reference."""
    return [Case(r, s) for r in groups for s in _seeds(quick, seeds)] + [Case("newreno")]


def cases(groups: Iterable[str] = GROUPS) -> list[Case]:
    """The full run's cases (:func:`_cases`)."""
    return _cases(groups)


def agent_label(reward: str) -> str:
    return "NewReno (no agent)" if reward == "newreno" else f"DQN, {reward} reward"


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
    from l4sim.engine.run import run

    summary = run(Scenario.parse(_newreno_scenario(seed), source="rl_tcp_newreno"), progress=False)
    q = next(q for q in summary.summary["queues"] if q["link"] == BOTTLENECK)
    flow = summary.summary["flows"][0]
    return {
        "utilization": q["utilization"],
        "queue_mean_pkts": q["backlog_mean_pkts"],
        "queue_mean_bdp": q["backlog_mean_pkts"] / BDP_PKTS,
        "srtt_mean_ms": (flow["srtt_mean_s"] or math.nan) * 1e3,
        "drops": q["drops"],
    }


def _newreno_scenario(seed: int = EVAL_SEED) -> dict[str, Any]:
    data = json.loads(json.dumps(SCENARIO))
    data["flows"][0]["cca"] = "newreno"
    data.update(seed=seed, duration=f"{EVAL_EPISODE_STEPS * 0.1:g}s")
    return data


def _dqn_row(result: dict[str, Any]) -> tuple[Row, dict[str, Any]]:
    """The table's row and the training's wall time (``timing.csv``)."""
    ev, tr = result["eval"], result["train"]
    agent = agent_label(result["reward"])
    timing = {"agent": agent, "seed": result["seed"], "train_steps": tr["steps"]}
    timing.update(train_time_s=tr["wall_time_s"], steps_per_s=tr["steps_per_s"])
    keys = ("utilization", "queue_mean_pkts", "queue_mean_bdp", "srtt_mean_ms")
    keys += ("cwnd_mean_pkts", "drops", "return_default", "return_ns3ai")
    row = Row(agent=agent, seed=result["seed"], train_steps=tr["steps"], **{k: ev[k] for k in keys})
    return row, timing


def _newreno_row(nr: dict[str, Any]) -> Row:
    return Row(
        agent=agent_label("newreno"),
        seed=None,
        train_steps=None,
        cwnd_mean_pkts=None,
        return_default=None,
        return_ns3ai=None,
        **nr,
    )


def _run_case(
    task: tuple[Case, str, int, bool],
) -> tuple[Row, dict[str, Any] | None, Curve | None]:
    """One case (in a worker): train its DQN into its directory, or run NewReno; the row,
    the training's wall time and its learning curve (episode end steps, returns)."""
    case, case_dir, steps, figures = task
    if case.reward == "newreno":
        return _newreno_row(newreno_baseline()), None, None
    result = train(case_dir, steps=steps, reward=case.reward, seed=case.seed, figures=figures)
    stats = json.loads((Path(case_dir) / "train.json").read_text(encoding="utf-8"))["stats"]
    row, timing = _dqn_row(result)
    return row, timing, (stats["episode_end_steps"], stats["episode_returns"])


def scenarios(out_dir: str | Path, groups: Iterable[str], **options: Any) -> dict[str, Any]:
    """Case name -> the scenario of its evaluation (NewReno's: the same path, 20 s)."""
    out: dict[str, Any] = {}
    for c in _cases(groups, **options):
        if c.reward == "newreno":
            out[c.name] = _newreno_scenario()
        else:
            env = make_env(c.reward, EVAL_EPISODE_STEPS)
            out[c.name] = env.unwrapped.scenario.model_copy(update={"seed": EVAL_SEED})
            env.close()
    return out


def headline(out_dir: Path) -> str:
    """What a full run shows, from its ``ci.csv`` and ``results.csv``: each reward's
    utilisation and queue over the seeds (mean ± 95 % CI half-width), beside NewReno."""
    ci = {(r["agent"], r["metric"]): r for r in read_csv(out_dir / "ci.csv")}

    def pm(agent: str, metric: str, scale: float) -> str:
        row = ci[(agent, metric)]
        half = (float(row["ci95_high"]) - float(row["ci95_low"])) / 2
        return f"{scale * float(row['mean']):.1f} ± {scale * half:.1f}"

    default, ns3ai = agent_label("default"), agent_label("ns3ai")
    newreno = next(r for r in read_csv(out_dir / "results.csv") if not r["seed"])
    n = ci[(default, "utilization")]["n_seeds"]
    return (
        f"Over {n} seeds a DQN with l4sim's reward holds one BDP: "
        f"{pm(default, 'utilization', 100)} % utilisation with "
        f"{pm(default, 'queue_mean_pkts', 1)} packets of queue (NewReno "
        f"{100 * float(newreno['utilization']):.1f} % behind "
        f"a {float(newreno['queue_mean_pkts']):.1f}-packet queue); with ns3-ai's own reward "
        f"it starves the flow ({pm(ns3ai, 'utilization', 100)} %)."
    )


def tensorboard_dir(out_dir: str | Path, **_: Any) -> Path | None:
    """Where the trainers write TensorBoard logs: ``REWARD/sSEED/tb`` under it, one run per
    training."""
    return Path(out_dir)


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    on_case: Callable[[Case, int, int], None] | None = None,
    executor: Executor | None = None,
    quick: bool = False,
    seeds: Iterable[int] | None = None,
    steps: int | None = None,
) -> list[Row]:
    """Train a DQN per reward and training seed (default :data:`SEEDS`, ``quick``:
    :data:`QUICK_SEEDS`; ``steps`` each, default :data:`STUDY_STEPS`, ``quick``
    :data:`QUICK_STEPS`) into ``out_dir/<reward>/s<seed>/`` (see :func:`train`), run NewReno
    on the same path, and write ``results.md`` (mean ± 95 % CI over the seeds),
    ``results.csv`` / ``per_seed.csv`` (one row per training), ``ci.csv`` / ``ci.md`` and
    ``timing.csv``; the cases run on ``executor`` (default: serial). Returns the rows."""
    if importlib.util.find_spec("torch") is None:
        raise L4simError("RL-TCP needs PyTorch: pip install 'l4sim[rl]' (torch, tensorboard)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    n_steps = steps if steps is not None else (QUICK_STEPS if quick else STUDY_STEPS)
    todo = _cases(only if only is not None else GROUPS, quick=quick, seeds=seeds)
    tasks = [(c, str(out / c.reward / f"s{c.seed}"), n_steps, figures) for c in todo]
    done = run_cases(_run_case, tasks, todo, executor, on_case)
    rows = [r for r, _, _ in done]
    write_table(rows, out, TABLE, markdown_table(rows))
    write_per_seed(out, rows)
    write_ci(out, rows, ("agent",), METRICS, select=lambda d: d["seed"] is not None)
    write_timing(out, [t for _, t, _ in done if t is not None])
    if figures:
        curves = [(r.agent, c) for r, _, c in done if c is not None]
        plot_curves(curves, out / "training_return.png")
    return rows


def _cell(xs: list[float], fmt: str, scale: float = 1.0) -> str:
    mean, _, high, n = mean_ci([scale * x for x in xs])
    if n == 0:
        return "-"
    return fmt.format(mean) if high is None else f"{fmt.format(mean)} ± {fmt.format(high - mean)}"


def markdown_table(rows: list[Row]) -> str:
    """The agents side by side, mean ± 95 % CI half-width over the training seeds: training
    steps, then the evaluation episode's utilisation, queue, sRTT, window, drops and return
    under both rewards."""
    head = (
        "| agent | seeds | train steps | util % | queue pkts | queue BDP "
        "| sRTT ms | cwnd pkts | drops | return (default) | return (ns3ai) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = []
    for agent in dict.fromkeys(r.agent for r in rows):
        rs = [r for r in rows if r.agent == agent]

        def col(key: str, fmt: str, scale: float = 1.0, rs: list[Row] = rs) -> str:
            xs = [getattr(r, key) for r in rs if getattr(r, key) is not None]
            return _cell(xs, fmt, scale)

        seeds = sum(r.seed is not None for r in rs)
        lines.append(
            f"| {agent} | {seeds or '-'} | {_fmt(rs[0].train_steps, '{}')} "
            f"| {col('utilization', '{:.1f}', 100.0)} | {col('queue_mean_pkts', '{:.1f}')} "
            f"| {col('queue_mean_bdp', '{:.2f}')} | {col('srtt_mean_ms', '{:.1f}')} "
            f"| {col('cwnd_mean_pkts', '{:.1f}')} | {col('drops', '{:.0f}')} "
            f"| {col('return_default', '{:.1f}')} | {col('return_ns3ai', '{:.3g}')} |"
        )
    return head + "\n".join(lines) + "\n"


EXPERIMENT = declare(
    __name__,
    name="rl-tcp",
    title="RL-TCP (ns3-ai's example): a DQN per reward sets a TCP window, beside NewReno "
    "(needs PyTorch)",
    paper="ns3-ai's RL-TCP example, as paper 000 (remote RL-TCP) runs it",
    groups=GROUPS,
    options=(
        quick_option(f"{len(QUICK_SEEDS)} seeds of {QUICK_STEPS} training steps"),
        seeds_option(f"Train with seeds 1..N (default {len(SEEDS)}; --quick: 2)."),
    ),
    tables=(TABLE, "results.csv", "per_seed.csv", "ci.md", "ci.csv"),
    figures=("training_return.png", "<reward>/s<seed>/eval_episode.png"),
)
