"""The remote RL-TCP paper's remote brain, stage 1 (Fig. 3, Table 2): the control path's RTT.

The paper (§5) splits its system in two because ns-3 + ns3-ai could not simulate it whole.
Stage 1, measured here: on the left dumbbell of Fig. 2 (N = M = L = 1) the remote server's
flow RS_1 (a bulk TCP flow whose congestion control the paper drives from Python every
0.1 s) shares a 10 Mbit/s / 0.01 ms bottleneck with one CUBIC flow BC_1; access links
100 Mbit/s, 10 ms (link 1) and 9.5 ms (link 2, the competing hosts); 500 KB socket
buffers; 200 s. Table 2 is RS_1's mean RTT with a FIFO (105 ms) and with "L4S" (65 ms),
for which the authors used FqCoDel with RS_1 sending ECT(1), ns-3 having no DualQ. We add
the real DualPI2.

Choices the paper leaves open, stated: the FIFO holds 100 packets (ns-3's default device
queue; the paper gives no size, and its 105 ms fits it: 40 ms of path plus ~65 ms of
queue); RS_1 runs NewReno with ECN negotiated (sending ECT(1) in the L4S cases) as a
stand-in for the RL-TCP agent, whose own actions do not set the queue the CUBIC flow
builds; BC_1's path is 9 + 0.01 + 10 ms one way (the preset's receivers share one access
delay), the paper's 9.5 + 0.01 + 9.5; each seed starts BC_1 at a random time in the first
second, so that the five seeds are five samples.

The rest of the remote brain (stage 2, the unified run with states and actions as packets, the
control-delay study and a fair-share remote CC) is :mod:`l4sim.experiments.remote_brain.stage2`;
``reproduce`` runs both (``--only`` takes queue names for stage 1 and the parts
``stage2``, ``unified``, ``delay``, ``fairshare``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from l4sim.engine.run import run
from l4sim.engine.simulation import Simulation
from l4sim.executors import Executor
from l4sim.experiments._cases import run_cases
from l4sim.experiments._tables import md_rows, mean_ci, write_ci, write_per_seed, write_table
from l4sim.experiments._timeseries import plot_timeseries
from l4sim.experiments.base import declare, quick_option, tb_subdir
from l4sim.experiments.remote_brain import stage2 as brain
from l4sim.experiments.remote_brain.figures import draw_figures
from l4sim.scenario import Scenario

#: Table 2 of the paper: RS_1's mean RTT (ms), from ``l4sim/data/reference``.
PAPER_TABLE2 = brain.PAPER_DELAYS_MS

#: The control path's queue: FIFO, the paper's FqCoDel stand-in (flow isolation only), the
#: same in ns-3's "L4S mode" (Linux ``ce_threshold`` 1 ms on ECT(1) packets, as ns-3's
#: FqCoDelQueueDisc ``UseL4s`` with ``CeThreshold`` 1 ms), and DualPI2.
QUEUES: dict[str, dict[str, Any]] = {
    "fifo": {"kind": "fifo", "limit": "100p"},
    "fq_codel": {"kind": "fq_codel"},
    "fq_codel_l4s": {
        "kind": "fq_codel",
        "ce_threshold": "1ms",
        "ce_threshold_selector": "0x01/0x01",
    },
    "dualpi2": {"kind": "dualpi2"},
}
RS1_QUEUES = ("fifo", "fq_codel", "dualpi2")
"""The control-path queues on which the RL agent itself plays RS_1 (``--only rs1``)."""
GROUPS: tuple[str, ...] = (*QUEUES, "rs1", *brain.PARTS)
QUICK_STEPS = brain.QUICK_STEPS
QUICK_EVAL_S = brain.QUICK_EVAL_S
SEEDS: tuple[int, ...] = (1, 2, 3, 4, 5)
DURATION_S = 200
TABLE = "table2.md"


@dataclass(frozen=True)
class Case:
    queue: str
    seed: int

    @property
    def name(self) -> str:
        return f"{self.queue}-s{self.seed}"


@dataclass
class Row:
    queue: str
    seed: int
    rs_rtt_ms: float
    rs_mbps: float
    cubic_mbps: float
    rs1: str = "newreno"
    """Who plays RS_1: ``newreno`` (the stand-in; ``seed`` is the scenario's) or ``rl-tcp``
    (the DQN; ``seed`` its training seed, evaluated on :data:`brain.EVAL_SEED`)."""


def stage1_cases(queues: Iterable[str] = QUEUES, seeds: Iterable[int] = SEEDS) -> list[Case]:
    return [Case(q, s) for q in queues if q in QUEUES for s in seeds]


@dataclass(frozen=True)
class Rs1Job:
    """Table 2 with the RL agent itself as RS_1: a DQN (RL-TCP's agent, ``tcp`` reward)
    trained on training seed ``seed`` sets RS_1's window on the control path ``queue``."""

    queue: str
    seed: int

    @property
    def name(self) -> str:
        return f"rs1-rl-tcp-{self.queue}-s{self.seed}"


def rs1_jobs(groups: Iterable[str], quick: bool = False) -> list[Rs1Job]:
    seeds = brain.seeds_for(brain.FAIR_SEEDS, quick)
    return [Rs1Job(q, s) for q in RS1_QUEUES for s in seeds] if "rs1" in groups else []


def _cases(
    groups: Iterable[str] = GROUPS, *, quick: bool = False, **_: Any
) -> list[Case | Rs1Job | brain.Job]:
    """Stage 1's runs for the queues in ``groups``, the RL agent as RS_1 (``rs1``), then the
    trained cases of the other parts (``quick``: 2 training seeds each)."""
    groups = list(groups)
    parts = [g for g in groups if g in brain.PARTS]
    return [*stage1_cases(groups), *rs1_jobs(groups, quick), *brain.jobs(parts, quick)]


def cases(groups: Iterable[str] = GROUPS) -> list[Case | Rs1Job | brain.Job]:
    """The full run's cases (:func:`_cases`)."""
    return _cases(groups)


def scenario(case: Case, duration_s: float = DURATION_S) -> Scenario:
    """Fig. 3 with the case's bottleneck queue; RS_1 is flow 0, BC_1 flow 1."""
    bc_start = random.Random(case.seed).uniform(0.0, 1.0)
    l4s = case.queue != "fifo"
    rwnd = "500KB"  # Table 1: the senders' and receivers' buffers
    return Scenario.parse(
        {
            "name": f"remote-rl-tcp-000-stage1-{case.name}",
            "seed": case.seed,
            "duration": f"{duration_s}s",
            "topology": {
                "preset": "dumbbell",
                "access": {"rate": "100Mbps", "delay": "10ms"},
                "access_delays": ["10ms", "9ms"],
                "bottleneck": {
                    "rate": "10Mbps",
                    "delay": "0.01ms",
                    "qdisc": QUEUES[case.queue],
                },
            },
            "flows": [
                {"kind": "tcp", "cca": "newreno", "ecn": l4s, "ect1": l4s, "rwnd": rwnd},
                {
                    "kind": "tcp",
                    "cca": "cubic",
                    "ecn": l4s,
                    "rwnd": rwnd,
                    "start": f"{bc_start:.3f}s",
                },
            ],
        }
    )


def run_case(case: Case, duration_s: float = DURATION_S) -> Row:
    s = run(scenario(case, duration_s)).summary
    rs, bc = s["flows"]
    return Row(
        queue=case.queue,
        seed=case.seed,
        rs_rtt_ms=1e3 * rs["srtt_mean_s"],
        rs_mbps=rs["goodput_bps"] / 1e6,
        cubic_mbps=bc["goodput_bps"] / 1e6,
    )


def _run_any(task: tuple[Any, ...]) -> Row:
    """A stage-1 run (``(Case, duration)``) or an RS_1 training (``(Rs1Job, ...)``)."""
    return rs1_run(task) if isinstance(task[0], Rs1Job) else run_case(*task)


def rs1_env(job: Rs1Job, seed: int, duration_s: float) -> Any:
    """RL-TCP's env (:mod:`l4sim.experiments.rl_tcp`: ``delta`` actions every 100 ms, the 9
    features log-compressed, ``tcp`` reward) on stage 1's scenario, RS_1 (flow 0) switched
    to cca ``external`` (ECT(1) kept on the L4S paths: the agent sees the marks as a
    feature and answers them only as it learnt to)."""
    from l4sim.envs.tcp import TcpCwndEnv
    from l4sim.experiments.rl_tcp import compress_observation

    sc = scenario(Case(job.queue, seed), duration_s)
    return compress_observation(TcpCwndEnv(sc, flow=0, action_set="delta", reward="tcp"))


def rs1_run(task: tuple[Rs1Job, int, float, str | None]) -> Row:
    """Train ``job``'s DQN (``steps`` decisions, 20 s episodes, RL-TCP's hyper-parameters),
    then run it greedily for ``eval_s`` on the evaluation seed: RS_1's mean RTT and the
    goodputs, a row of Table 2 with the agent in RS_1's place."""
    from l4sim.agents import dqn
    from l4sim.experiments.rl_tcp import config

    job, steps, eval_s, save_dir = task
    cfg = config(steps, job.seed)
    log_dir = Path(save_dir).parent / "tb" / job.name if save_dir is not None else None
    env_fn = lambda: rs1_env(job, job.seed, brain.TRAIN_EPISODE_S)  # noqa: E731
    net, _ = dqn.train(env_fn, cfg, log_dir=log_dir)
    if save_dir is not None:
        dqn.save(Path(save_dir) / f"{job.name}.pt", net, cfg, {"job": job.name})
    env = rs1_env(job, brain.EVAL_SEED, eval_s)
    policy = dqn.greedy_policy(net)
    obs, _ = env.reset(seed=brain.EVAL_SEED)
    truncated = terminated = False
    while not (truncated or terminated):
        obs, _, terminated, truncated, _ = env.step(policy(obs))
    rs, bc = env.unwrapped.sim.summary()["flows"]
    env.close()
    return Row(
        rs1="rl-tcp",
        queue=job.queue,
        seed=job.seed,
        rs_rtt_ms=1e3 * rs["srtt_mean_s"],
        rs_mbps=rs["goodput_bps"] / 1e6,
        cubic_mbps=bc["goodput_bps"] / 1e6,
    )


def _ci(xs: list[float], fmt: str) -> str:
    mean, _, high, _ = mean_ci(xs)
    return fmt.format(mean) if high is None else f"{fmt.format(mean)} ± {fmt.format(high - mean)}"


def markdown_table(rows: list[Row]) -> str:
    """Table 2 (mean ± 95 % CI half-width over the seeds) with the paper's figure beside
    ours: RS_1 played by the NewReno stand-in (seeds: the scenario's), then by the RL agent
    (seeds: its training seeds)."""
    lines = [
        "| control-path queue | RS_1 | seeds | RS_1 mean RTT (ms), l4sim | paper "
        "| RS_1 Mbit/s | CUBIC Mbit/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for who, label in (("newreno", "NewReno (stand-in)"), ("rl-tcp", "RL agent (DQN)")):
        for q in QUEUES:
            rs = [r for r in rows if r.queue == q and r.rs1 == who]
            if not rs:
                continue
            paper = PAPER_TABLE2.get(q)
            lines.append(
                f"| {q} | {label} | {len(rs)} | {_ci([r.rs_rtt_ms for r in rs], '{:.1f}')} | "
                f"{'-' if paper is None else f'{paper:.0f}'} | "
                f"{_ci([r.rs_mbps for r in rs], '{:.2f}')} | "
                f"{_ci([r.cubic_mbps for r in rs], '{:.2f}')} |"
            )
    return "\n".join(lines) + "\n"


def stage1_trace(queue: str, duration_s: float = DURATION_S, seed: int = 1) -> dict[str, list]:
    """Fig. 6/7: RS_1's and BC_1's cwnd, sRTT and queueing delay (sRTT - min RTT) every
    0.1 s of a stage-1 run."""
    sim = Simulation(scenario(Case(queue, seed), duration_s))
    keys = ("time_s", "iot_cwnd", "cubic_cwnd", "iot_rtt_ms", "cubic_rtt_ms")
    trace: dict[str, list] = {k: [] for k in (*keys, "iot_qdelay_ms", "cubic_qdelay_ms")}
    for k in range(1, round(duration_s * 10) + 1):
        sim.run_until(k / 10)
        f = sim.observe()["flows"]
        trace["time_s"].append(k / 10)
        for tag, i in (("iot", 0), ("cubic", 1)):
            rtt, low = f["srtt_s"][i], f["min_rtt_s"][i]
            ok = rtt == rtt and low == low
            trace[f"{tag}_cwnd"].append(float(f["cwnd_pkts"][i]))
            trace[f"{tag}_rtt_ms"].append(1e3 * rtt if ok else math.nan)
            trace[f"{tag}_qdelay_ms"].append(1e3 * (rtt - low) if ok else math.nan)
    return trace


def scenarios(
    out_dir: str | Path, groups: Iterable[str], *, quick: bool = False, **_: Any
) -> dict[str, Any]:
    """Case name -> the scenario it ran: stage 1's runs, then each trained part's greedy
    evaluation (its environment's scenario with the evaluation seed)."""
    groups = list(groups)
    duration = 20.0 if quick else float(DURATION_S)
    out: dict[str, Any] = {c.name: scenario(c, duration) for c in stage1_cases(groups)}
    eval_s = QUICK_EVAL_S if quick else brain.EVAL_S
    for rj in rs1_jobs(groups, quick):
        env = rs1_env(rj, brain.EVAL_SEED, eval_s)
        out[rj.name] = env.unwrapped.scenario
        env.close()
    for job in brain.cases(groups, quick):
        env = brain.make_env(job, eval_s).unwrapped
        out[job.name] = env.scenario.model_copy(update={"seed": brain.EVAL_SEED})
        env.close()
    return out


def headline(out_dir: Path) -> str:
    """What a full run shows, from its tables: Table 2's FIFO row with the RL agent as
    RS_1 against the paper's, stage 2's two delays, and the fair-share rewards' seeds at
    their goals."""
    t2 = {(r["control-path queue"], r["RS_1"]): r for r in md_rows(out_dir / TABLE)}
    rl, nr = t2[("fifo", "RL agent (DQN)")], t2[("fifo", "NewReno (stand-in)")]
    s2 = {r["control path"]: r for r in md_rows(out_dir / "stage2_unified.md")}
    fair = {(r["agent"], r["control path"]): r for r in md_rows(out_dir / "fairshare.md")}
    fifo, dualpi2 = (
        fair[("share", q)]["seeds at the goal"].split()[0] for q in ("fifo", "dualpi2")
    )
    rtt = "RS_1 mean RTT (ms), l4sim"
    return (
        f"Table 2's FIFO control path with the RL agent as RS_1: {rl[rtt]} ms (paper "
        f"{rl['paper']}; the NewReno stand-in {nr[rtt]}). Stage 2: RL-TCP gets "
        f"{s2['fixed 65 ms']['IoT Mbit/s']} Mbit/s at 65 ms and "
        f"{s2['fixed 105 ms']['IoT Mbit/s']} at 105 ms beside CUBIC. A share-valuing reward "
        f"reaches its fair-share goal on {fifo} seeds with the FIFO control path, {dualpi2} "
        "with DualPI2."
    )


def facts(out_dir: Path) -> dict[str, str]:
    """The numbers the docs' prose quotes, from a full run's ``table2.md``: the FIFO
    control path's RS_1 RTT over FqCoDel's, for each RS_1 and for the paper."""
    t2 = {(r["control-path queue"], r["RS_1"]): r for r in md_rows(out_dir / TABLE)}

    def ratio(rs1: str, column: str = "RS_1 mean RTT (ms), l4sim") -> str:
        fifo, fq_codel = (float(t2[q, rs1][column].split()[0]) for q in ("fifo", "fq_codel"))
        return f"{fifo / fq_codel:.1f}"

    return {
        "fifo_over_fq_codel_standin": ratio("NewReno (stand-in)"),
        "fifo_over_fq_codel_agent": ratio("RL agent (DQN)"),
        "fifo_over_fq_codel_paper": ratio("RL agent (DQN)", "paper"),
    }


def reproduce(
    out_dir: str | Path,
    *,
    only: Iterable[str] | None = None,
    figures: bool = True,
    on_case: Callable[[Any, int, int], None] | None = None,
    executor: Executor | None = None,
    quick: bool = False,
) -> list[Row]:
    """Stage 1 for every queue x seed, then the trained parts (``quick``: 20 s stage-1 runs,
    200 training steps and 5 s evaluations); writes ``table2.md``, ``stage2_unified.md``,
    ``control_delay.md``, ``fairshare.md``, ``results.json`` and the figures. Returns
    Table 2's rows."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    groups = list(only) if only is not None else list(GROUPS)
    todo: list[Any] = stage1_cases(groups)
    duration = 20.0 if quick else float(DURATION_S)
    tasks: list[Any] = [(c, duration) for c in todo]
    rl = rs1_jobs(groups, quick)
    if rl:
        models = out / "models"
        models.mkdir(parents=True, exist_ok=True)
        steps = QUICK_STEPS if quick else brain.TRAIN_STEPS
        eval_s = QUICK_EVAL_S if quick else brain.EVAL_S
        todo += rl
        tasks += [(j, steps, eval_s, str(models)) for j in rl]
    rows = run_cases(_run_any, tasks, todo, executor, on_case)
    if rows:
        write_table(rows, out, TABLE, markdown_table(rows))
        write_per_seed(out, rows)
        write_ci(out, rows, ("queue", "rs1"), ("rs_rtt_ms", "rs_mbps", "cubic_mbps"))

    def shifted(case: Any, done: int, total: int) -> None:
        if on_case is not None:
            on_case(case, len(todo) + done, len(todo) + total)

    if figures:
        stage1 = {f"stage 1, {q}": stage1_trace(q, duration) for q in QUEUES if q in groups}
        if stage1:
            plot_timeseries(
                list(stage1.items()),
                "Stage 1 (Fig. 6/7): RS_1 (bulk, NewReno stand-in) vs CUBIC on the control path",
                out / "remote_rl_tcp_000_stage1.png",
                (("iot", "RS_1 (NewReno, stand-in)"), ("cubic", "BC_1 (CUBIC)")),
            )
    results = brain.reproduce(
        out, only=groups, figures=figures, on_case=shifted, executor=executor, quick=quick
    )
    if figures:
        draw_figures(results, out)
    return rows


EXPERIMENT = declare(
    __name__,
    name="remote-brain",
    aliases=("remote-rl-tcp-000",),
    title="Remote-brain RL-TCP: the control path's RTT (stage 1), then stage 2, the unified "
    "run, the control-delay study and a fair-share remote CC (stage 2 needs PyTorch)",
    paper="Paper 000 (remote RL-TCP), §5, Fig. 2-9 and Table 2",
    groups=GROUPS,
    options=(quick_option("20 s stage-1 runs, 2 training seeds of 200 steps, 5 s evaluations"),),
    tables=(TABLE, "table2.csv", "per_seed.csv", "ci.md", *brain.TABLES),
    figures=("remote_rl_tcp_000_*.png",),
    reference=("paper000_table2.csv",),
    tensorboard=tb_subdir,
)
