"""The remote RL-TCP paper's remote brain beyond stage 1: stage 2, the unified run, the
control-delay study and a fair-share remote CC. ``l4sim reproduce remote-rl-tcp-000`` runs
these after Table 2 (:mod:`l4sim.experiments.remote_brain`).

Every case trains a DQN (the RL-TCP hyper-parameters of :mod:`l4sim.experiments.rl_tcp`)
on :class:`~l4sim.envs.remote.RemoteTcpEnv` in 20 s episodes, then runs it greedily for
200 s (seed :data:`EVAL_SEED`, unseen in training) and measures the data bottleneck:

* **stage 2** (the paper's Fig. 4, 8, 9): RL-TCP against CUBIC on the tail-drop FIFO, each
  action landing a fixed 65 ms or 105 ms (Table 2) after the state it answers;
* **unified** (Fig. 2 / 5, N = M = L = 1): states and actions as packets over the control
  dumbbell through FIFO, FqCoDel (control packets ECT(1)) or DualPI2;
* **delay study**: the agents trained and run at each control RTT, made either by a fixed
  delay (0-300 ms) or by load (one CUBIC flow filling a control-path FIFO of 10-260
  packets);
* **fair share**: three agents x the FIFO and DualPI2 control paths x 5 training seeds
  (stage 2 and the unified run too; ``quick``: 2; the delay study: 3 per point).

Agents (:data:`AGENTS`): ``rl-tcp`` is ns3-ai's RL-TCP as the paper ran it (9 features,
``delta`` actions, l4sim's ``tcp`` reward: utilisation minus relative queueing delay);
``share`` the same with the ``share`` reward (goodput at the fair share, small delay
penalty); ``share-aware`` adds the state's age, the actions in flight and the commanded
window to the observation and uses multiplicative actions.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from l4sim.executors import Executor
from l4sim.experiments import reference
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import mean_ci, write_ci, write_csv, write_timing
from l4sim.experiments.remote_brain.nml import EVAL_SEED, nml_run, nml_table, rate_rule
from l4sim.metrics import jain

AGENTS: dict[str, dict[str, Any]] = {
    "rl-tcp": {"obs_mode": "plain", "action_set": "delta", "reward": "tcp"},
    "share": {"obs_mode": "plain", "action_set": "delta", "reward": "share"},
    "share-aware": {"obs_mode": "aware", "action_set": "mult", "reward": "share"},
    "rate-rule": {"obs_mode": "aware", "action_set": "mult", "reward": "share"},
}
RULES = ("rate-rule",)
"""Agents that are not trained (a hand-written policy on the same observation)."""

#: Table 2 of the paper (ms, ``l4sim/data/reference``): stage 2's fixed action delays.
PAPER_DELAYS_MS: dict[str, float] = {
    r["queue"]: float(r["rtt_ms"]) for r in reference.rows("paper000_table2.csv")
}
UNIFIED_QUEUES = ("fifo", "fq_codel", "dualpi2")
FAIR_QUEUES = ("fifo", "dualpi2")
FAIR_SEEDS = (1, 2, 3, 4, 5)
"""Training seeds of stage 2, the unified run and the fair share (``quick``: the first 2)."""
FIXED_DELAYS_MS = (0.0, 300.0)
"""Fixed control RTTs of the delay study; stage 2's 65 and 105 ms join them in its table."""
LOAD_LIMITS = (260,)
"""Control-path FIFO sizes (packets) for the delay made by load: about 290 ms; the
100-packet point (135 ms) is the ``fifo`` control path's case (the same run, not repeated)."""
DELAY_AGENTS = ("rl-tcp", "share-aware", "rate-rule")
DELAY_SEEDS: dict[str, tuple[int, ...]] = {"rl-tcp": (1, 2, 3), "share-aware": (1, 2, 3)}
"""Training seeds per delay point (the rule: seed 1 only)."""
QUICK_SEEDS = 2
"""``quick``: training seeds per case."""


def seeds_for(seeds: tuple[int, ...], quick: bool = False) -> tuple[int, ...]:
    """The training seeds of a case: ``seeds``, or their first :data:`QUICK_SEEDS`."""
    return seeds[:QUICK_SEEDS] if quick else seeds


TRAIN_EPISODE_S = 20.0
TRAIN_STEPS = 8_000
EVAL_S = 200.0
PARTS = ("stage2", "unified", "delay", "fairshare")
GOAL_JAIN = {"fifo": 0.9, "dualpi2": 0.95}
FAIR_TABLE = "fairshare.md"
DELAY_TABLE = "control_delay.md"
RUNS_TABLE = "stage2_unified.md"
NML_TABLE = "unified_nml.md"
#: Stage 2's tables (``--only`` selects :data:`PARTS`).
TABLES = (RUNS_TABLE, DELAY_TABLE, FAIR_TABLE, NML_TABLE, "results.json", "ci_stage2.md")
#: The metrics of a result, averaged over training seeds in ``ci_stage2.csv``.
METRICS = (
    "iot_mbps",
    "cubic_mbps",
    "jain",
    "iot_loss",
    "cwnd_cov",
    "iot_rtt_p99_ms",
    "control_rtt_ms",
    "control_rtt_p99_ms",
    "actions_lost",
)
_JOB_KEYS = ("part", "agent", "control", "delay_ms", "limit")
QUICK_STEPS = 200
QUICK_EVAL_S = 5.0


@dataclass(frozen=True)
class Job:
    """One trained agent and its evaluation.

    ``control`` is a control-path queue name, ``"fixed"`` (a fixed control RTT of
    ``delay_ms``, the paper's stage 2) or ``"load"`` (a FIFO of ``limit`` packets filled by
    one CUBIC flow)."""

    part: str
    agent: str
    control: str
    seed: int = 1
    delay_ms: float | None = None
    limit: int | None = None

    @property
    def name(self) -> str:
        if self.control == "fixed":
            tail = f"fixed{self.delay_ms or 0:g}ms"
        elif self.control == "load":
            tail = f"load{self.limit}p"
        else:
            tail = self.control
        return f"{self.agent}-{tail}-s{self.seed}"

    def env_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = dict(AGENTS[self.agent])
        if self.control == "fixed":
            kw.update(m=0, control_delay_s=(self.delay_ms or 0.0) / 1e3)
        elif self.control == "load":
            kw["control_queue"] = {"kind": "fifo", "limit": f"{self.limit}p"}
        else:
            kw["control_queue"] = self.control
        return kw


def jobs(parts: Iterable[str] = PARTS, quick: bool = False) -> list[Job]:
    """Every case of ``parts`` on each of its training seeds (``quick``: the first 2), each
    trained once (a case two parts share runs once)."""
    parts = set(parts)
    out: list[Job] = []
    seeds = seeds_for(FAIR_SEEDS, quick)
    if "stage2" in parts:
        out += [
            Job("stage2", "rl-tcp", "fixed", s, d) for d in PAPER_DELAYS_MS.values() for s in seeds
        ]
    if "unified" in parts:
        out += [Job("unified", "rl-tcp", q, s) for q in UNIFIED_QUEUES for s in seeds]
    if "fairshare" in parts:
        for a in AGENTS:
            a_seeds = seeds[:1] if a in RULES else seeds  # a rule is not trained
            out += [Job("fairshare", a, q, s) for q in FAIR_QUEUES for s in a_seeds]
    if "delay" in parts:
        for a in DELAY_AGENTS:
            for s in seeds_for(DELAY_SEEDS.get(a, (1,)), quick):
                out += [Job("delay", a, "fixed", s, d) for d in FIXED_DELAYS_MS]
                out += [Job("delay", a, "load", s, limit=b) for b in LOAD_LIMITS]
                out.append(Job("delay", a, "fifo", s))  # the load study's 100 packets
    seen: set[str] = set()
    unique = []
    for j in out:
        if j.name not in seen:
            seen.add(j.name)
            unique.append(j)
    return unique


@dataclass
class Result:
    job: Job
    train_steps: int
    train_s: float
    iot_mbps: float
    cubic_mbps: float
    jain: float
    iot_loss: float
    """The IoT flow's dropped packets / packets sent."""
    cwnd_cov: float
    """cwnd stability: std / mean of the IoT flow's window over the run's last 3/4."""
    iot_rtt_p99_ms: float
    control_rtt_ms: float
    """Mean control RTT of the landed actions (state's age + the action's one way)."""
    control_rtt_p99_ms: float
    actions_lost: int
    trace: dict[str, list[float]] = field(default_factory=dict, repr=False)


def make_env(job: Job, duration_s: float, **extra: Any) -> Any:
    from l4sim.envs.remote import RemoteTcpEnv
    from l4sim.experiments.rl_tcp import compress_observation

    return compress_observation(
        RemoteTcpEnv(duration_s=duration_s, **job.env_kwargs(), **extra)  # type: ignore[arg-type]
    )


def train_and_evaluate(
    job: Job, steps: int = TRAIN_STEPS, eval_s: float = EVAL_S, save_dir: str | None = None
) -> Result:
    """Train ``job``'s agent for ``steps`` decisions, then measure its greedy policy."""
    from l4sim.agents import dqn
    from l4sim.experiments.rl_tcp import config

    if job.agent in RULES:
        return evaluate(job, rate_rule, eval_s)
    cfg = config(steps, job.seed)
    log_dir = Path(save_dir).parent / "tb" / job.name if save_dir is not None else None
    net, stats = dqn.train(lambda: make_env(job, TRAIN_EPISODE_S), cfg, log_dir=log_dir)
    if save_dir is not None:
        dqn.save(Path(save_dir) / f"{job.name}.pt", net, cfg, {"job": job.name})
    return evaluate(job, dqn.greedy_policy(net), eval_s, stats.steps, stats.wall_time_s)


def evaluate(
    job: Job,
    policy: Callable[[Any], int],
    eval_s: float = EVAL_S,
    train_steps: int = 0,
    train_s: float = 0.0,
) -> Result:
    """Run ``policy`` greedily for ``eval_s`` and measure the data bottleneck (module doc)."""
    env = make_env(job, eval_s)
    base = env.unwrapped
    obs, _ = env.reset(seed=EVAL_SEED)
    ix = base.index
    ctrl_cubic = ix.control_cubic(0) if ix.m else None
    keys = ("time_s", "iot_cwnd", "cubic_cwnd", "ctrl_cwnd", "iot_rtt_ms", "cubic_rtt_ms")
    keys += ("ctrl_rtt_ms", "iot_qdelay_ms", "cubic_qdelay_ms", "ctrl_qdelay_ms")
    trace: dict[str, list[float]] = {k: [] for k in keys}
    truncated = False
    while not truncated:
        obs, _, _, truncated, info = env.step(policy(obs))
        f = base.sim.observe()["flows"]
        trace["time_s"].append(float(info["time_s"]))
        for tag, i in (("iot", 0), ("cubic", ix.data_cubic(0)), ("ctrl", ctrl_cubic)):
            if i is None:
                continue
            rtt, low = f["srtt_s"][i], f["min_rtt_s"][i]
            trace[f"{tag}_cwnd"].append(float(f["cwnd_pkts"][i]))
            trace[f"{tag}_rtt_ms"].append(1e3 * rtt if rtt == rtt else math.nan)
            q = 1e3 * (rtt - low) if rtt == rtt and low == low else math.nan
            trace[f"{tag}_qdelay_ms"].append(q)
    s = base.sim.summary()["flows"]
    iot, cubic = s[0], s[ix.data_cubic(0)]
    sent_pkts = max(iot["bytes_sent"] / base.mss, 1.0)
    cw = np.array(trace["iot_cwnd"][len(trace["iot_cwnd"]) // 4 :])
    rtts = [x for x in trace["iot_rtt_ms"] if x == x]
    ctrl = base.control_rtts_s or [math.nan]
    trace["control_rtt_ms"] = [1e3 * x for x in base.control_rtts_s]
    trace["control_rtt_t"] = list(base.control_rtt_at_s)
    env.close()
    g = [iot["goodput_bps"] / 1e6, cubic["goodput_bps"] / 1e6]
    return Result(
        job=job,
        train_steps=train_steps,
        train_s=train_s,
        iot_mbps=g[0],
        cubic_mbps=g[1],
        jain=jain(g, idle=0.0),
        iot_loss=iot["drops"] / sent_pkts,
        cwnd_cov=float(cw.std() / cw.mean()) if cw.size and cw.mean() > 0 else math.nan,
        iot_rtt_p99_ms=float(np.percentile(rtts, 99)) if rtts else math.nan,
        control_rtt_ms=1e3 * statistics.fmean(ctrl),
        control_rtt_p99_ms=1e3 * float(np.percentile(ctrl, 99)),
        actions_lost=int(s[ix.action_flow(0)]["drops"]) if job.control != "fixed" else 0,
        trace=trace,
    )


def _run(task: tuple[Job, int, float, str | None]) -> Result:
    return train_and_evaluate(*task)


def run_all(
    out: Path,
    todo: list[Job],
    *,
    steps: int,
    eval_s: float,
    executor: Executor | None = None,
    on_case: Callable[[Job, int, int], None] | None = None,
) -> list[Result]:
    models = out / "models"
    models.mkdir(parents=True, exist_ok=True)
    tasks = [(j, steps, eval_s, str(models)) for j in todo]
    return run_cases(_run, tasks, todo, executor, on_case)


def cases(groups: Iterable[str] = PARTS, quick: bool = False) -> list[Job]:
    """The trained cases of the parts in ``groups`` (other names are stage 1's)."""
    return jobs([g for g in groups if g in PARTS], quick)


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    on_case: Callable[[Job, int, int], None] | None = None,
    executor: Executor | None = None,
    quick: bool = False,
) -> list[Result]:
    """Stage 2 of ``l4sim reproduce remote-brain``: the parts in ``only`` (default all of
    :data:`PARTS`; ``quick``: 200 training steps, 5 s evaluations); writes :data:`TABLES`
    and, with ``figures``, the figures. Returns the results."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups = list(only) if only is not None else list(PARTS)
    todo = cases(groups, quick)
    eval_s = QUICK_EVAL_S if quick else EVAL_S
    results: list[Result] = []
    if todo:
        steps = QUICK_STEPS if quick else TRAIN_STEPS
        results = run_all(out, todo, steps=steps, eval_s=eval_s, executor=executor, on_case=on_case)
        write_results(results, out)
    if "unified" in groups:  # N, M, L > 1 with the rate rule (no training; seconds)
        nml = [nml_run(2, 2, 2, q, eval_s) for q in FAIR_QUEUES]
        (out / NML_TABLE).write_text(nml_table(nml))
        write_csv(  # the per-flow lists space-separated
            out / "unified_nml.csv",
            [
                {
                    **r,
                    "iot_mbps": " ".join(map(str, r["iot_mbps"])),
                    "cubic_mbps": " ".join(map(str, r["cubic_mbps"])),
                }
                for r in nml
            ],
        )
    return results


def markdown_table(results: list[Result]) -> str:
    """Stage 2's main table: every run's numbers (:func:`runs_table`)."""
    return runs_table(results)


# --------------------------------------------------------------------------------------------
# Tables.


def _mean_ci(xs: list[float]) -> tuple[float, float]:
    """Mean and the 95 % CI's half-width over the seeds (0 for one seed)."""
    mean, _, high, _ = mean_ci(xs)
    return mean, (0.0 if high is None else high - mean)


def _cell(xs: list[float], fmt: str) -> str:
    """``mean ± half-width of the 95 % CI`` (one seed: the mean)."""
    m, h = _mean_ci(xs)
    return f"{m:{fmt}}" if len(xs) < 2 else f"{m:{fmt}} ± {h:{fmt}}"


def _runs(results: list[Result]) -> list[tuple[tuple[str, str], list[Result]]]:
    """Stage 2's and the unified run's rows of :func:`runs_table`: (part, control path) ->
    the RL-TCP results of its training seeds, whichever part ran them."""
    out: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        j = r.job
        if j.agent != "rl-tcp":
            continue
        if j.control == "fixed" and j.delay_ms in PAPER_DELAYS_MS.values():
            out.setdefault(("stage 2", f"fixed {j.delay_ms:g} ms"), []).append(r)
        elif j.control in UNIFIED_QUEUES:
            out.setdefault(("unified", j.control), []).append(r)
    return list(out.items())


def runs_table(results: list[Result]) -> str:
    """Stage 2 and the unified run: RL-TCP over its training seeds, mean ± 95 % CI."""
    lines = [
        "| part | agent | control path | seeds | control RTT ms (mean / p99) | IoT Mbit/s "
        "| CUBIC Mbit/s | Jain | IoT loss % | IoT cwnd CoV | IoT p99 RTT ms | action-flow drops |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (part, path), rs in _runs(results):

        def v(key: str, scale: float = 1.0, rs: list[Result] = rs) -> list[float]:
            return [scale * getattr(r, key) for r in rs]

        rtt = statistics.fmean(v("control_rtt_ms"))
        p99 = statistics.fmean(v("control_rtt_p99_ms"))
        lines.append(
            f"| {part} | rl-tcp | {path} | {len(rs)} | {rtt:.0f} / {p99:.0f} "
            f"| {_cell(v('iot_mbps'), '.2f')} | {_cell(v('cubic_mbps'), '.2f')} "
            f"| {_cell(v('jain'), '.3f')} | {_cell(v('iot_loss', 100.0), '.2f')} "
            f"| {_cell(v('cwnd_cov'), '.2f')} | {_cell(v('iot_rtt_p99_ms'), '.0f')} "
            f"| {_cell(v('actions_lost'), '.0f')} |"
        )
    return "\n".join(lines) + "\n"


def fair_table(results: list[Result]) -> str:
    """Agent x control path over the training seeds (mean ± 95 % CI) and how many reach the goal
    (Jain >= 0.9 with the FIFO control path, >= 0.95 with DualPI2)."""
    lines = [
        "| agent | control path | control RTT ms | IoT Mbit/s | CUBIC Mbit/s | Jain "
        "| IoT p99 RTT ms | seeds at the goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for a in AGENTS:
        for q in FAIR_QUEUES:
            rs = [
                r
                for r in results
                if r.job.agent == a and r.job.control == q and r.job.seed in FAIR_SEEDS
            ]
            if not rs:
                continue
            cols = []
            for key in ("control_rtt_ms", "iot_mbps", "cubic_mbps", "jain", "iot_rtt_p99_ms"):
                fmt = ".3f" if key == "jain" else (".2f" if "mbps" in key else ".0f")
                cols.append(_cell([getattr(r, key) for r in rs], fmt))
            goal = GOAL_JAIN[q]
            hit = sum(r.jain >= goal for r in rs)
            lines.append(f"| {a} | {q} | " + " | ".join(cols) + f" | {hit}/{len(rs)} (>= {goal}) |")
    return "\n".join(lines) + "\n"


def delay_table(results: list[Result]) -> str:
    """One row per agent and control RTT setting: mean ± 95 % CI over its training seeds."""
    lines = [
        "| agent | control RTT made by | setting | seeds | control RTT ms | IoT Mbit/s "
        "| CUBIC Mbit/s | Jain | IoT loss % | IoT cwnd CoV |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (agent, control, setting), rs in _delay_groups(results):
        cols = []
        for key, fmt, scale in (
            ("control_rtt_ms", ".0f", 1.0),
            ("iot_mbps", ".2f", 1.0),
            ("cubic_mbps", ".2f", 1.0),
            ("jain", ".3f", 1.0),
            ("iot_loss", ".2f", 100.0),
            ("cwnd_cov", ".2f", 1.0),
        ):
            cols.append(_cell([scale * getattr(r, key) for r in rs], fmt))
        lines.append(f"| {agent} | {control} | {setting} | {len(rs)} | " + " | ".join(cols) + " |")
    return "\n".join(lines) + "\n"


def _delay_groups(results: list[Result]) -> list[tuple[tuple[str, str, str], list[Result]]]:
    """The delay study's results grouped by (agent, fixed / load, setting), seeds together,
    in order of agent, mode and mean control RTT. The points other parts ran (stage 2's 65
    and 105 ms, the FIFO control path's 100 packets) come with all their seeds."""
    groups: dict[tuple[str, str, str], list[Result]] = {}
    fixed = (*FIXED_DELAYS_MS, *PAPER_DELAYS_MS.values())
    for r in results:
        j = r.job
        if j.control == "fifo":  # the default control FIFO is the load study's 100 packets
            j = Job(j.part, j.agent, "load", j.seed, limit=100)
        if j.agent not in DELAY_AGENTS or j.control not in ("fixed", "load"):
            continue
        if j.control == "fixed" and j.delay_ms not in fixed:
            continue
        if j.part == "delay" and j.seed not in DELAY_SEEDS.get(j.agent, (1,)):
            continue
        setting = f"{j.delay_ms:g} ms" if j.control == "fixed" else f"FIFO {j.limit} p"
        groups.setdefault((j.agent, j.control, setting), []).append(r)
    return sorted(
        groups.items(),
        key=lambda kv: (kv[0][0], kv[0][1], statistics.fmean(r.control_rtt_ms for r in kv[1])),
    )


def load_results(path: Path) -> list[Result]:
    """The results a run wrote to ``results.json`` (without the traces)."""
    import json

    out = []
    for d in json.loads(Path(path).read_text()):
        keys = ("part", "agent", "control", "seed", "delay_ms", "limit")
        job = Job(**{k: d.pop(k) for k in keys})
        d.pop("case")
        d.setdefault("train_s", 0.0)  # wall times are in timing.csv
        out.append(Result(job=job, **d))
    return out


def result_rows(results: list[Result]) -> list[dict[str, Any]]:
    """Every case's numbers as flat dicts (no traces, no wall times)."""
    rows = []
    for r in results:
        d = {k: v for k, v in vars(r).items() if k not in ("trace", "job", "train_s")}
        rows.append({"case": r.job.name, **vars(r.job), **d})
    return rows


def write_results(results: list[Result], out: Path) -> None:
    """The three tables (Markdown; as CSV, the rows each one shows or aggregates), every
    case's numbers (``results.json``, no traces), the mean and 95 % CI over training seeds
    (``ci_stage2.csv`` / ``.md``) and the training wall times (``timing.csv``)."""
    import json

    (out / RUNS_TABLE).write_text(runs_table(results))
    (out / FAIR_TABLE).write_text(fair_table(results))
    (out / DELAY_TABLE).write_text(delay_table(results))
    rows = result_rows(results)
    by_case = {r["case"]: r for r in rows}
    runs = [r for _, rs in _runs(results) for r in rs]
    fair = [r for r in results if r.job.part == "fairshare"]
    delay = [r for _, rs in _delay_groups(results) for r in rs]
    for table, rs in ((RUNS_TABLE, runs), (FAIR_TABLE, fair), (DELAY_TABLE, delay)):
        write_csv(out / table.replace(".md", ".csv"), [by_case[r.job.name] for r in rs])
    (out / "results.json").write_text(json.dumps(rows, indent=1) + "\n")
    write_csv(out / "per_seed_stage2.csv", rows)
    write_ci(out, rows, _JOB_KEYS, METRICS, name="ci_stage2.md")
    write_timing(
        out,
        [
            {"case": r.job.name, "train_steps": r.train_steps, "train_wall_s": r.train_s}
            for r in results
        ],
    )
